"""``rankgate answers``: score generated answers (layer two) and join them with retrieval per query.

Reads the answers (with their packed context) and the gold set, asks the judge for labels, and writes
``answers.csv`` (one row per query: grid cell, retrieval verdict, every answer metric with its status,
judge errors) and ``summary.json`` (the usual evaluation summary — metrics with intervals, per-query
values a gate can read — plus ``answers``: coverage per metric, the grid, the judge's identity) as one
unit. ``--dry-run`` prints what the judge would be asked (calls, cache hits, approximate tokens, cost)
and calls nothing. Exit 0; 2 for bad input or options, before anything is written.

The judge defaults come from the environment when set: ``RANKGATE_JUDGE`` (backend),
``RANKGATE_JUDGE_URL``, ``RANKGATE_JUDGE_MODEL``, ``RANKGATE_JUDGE_KEY_ENV`` (the name of the variable
holding the API key); options override them.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from .options import TIES_HELP, add_formats, add_gold, add_judge, add_out, add_stats, add_ties

HELP = "score generated answers with a judge (faithfulness, relevance, correctness) and diagnose each query"
OUT_FILES = ("answers.csv", "summary.json")
ENV = {"judge": "RANKGATE_JUDGE", "judge_url": "RANKGATE_JUDGE_URL", "judge_model": "RANKGATE_JUDGE_MODEL",
       "judge_key_env": "RANKGATE_JUDGE_KEY_ENV"}


def add_parser(sub: Any) -> None:
    from ..data.formats import ANSWER_FIELDS, ANSWER_FORMATS

    p = sub.add_parser("answers", help=HELP, description=HELP + ". See docs/answers.md.")
    p.add_argument("--answers", required=True, metavar="PATH",
                   help="answers with their packed contexts: rankgate JSONL, a RAGAS or DeepEval dataset, CSV, Parquet")
    p.add_argument("--answers-format", choices=ANSWER_FORMATS, default="auto", help="preset (default: detected)")
    p.add_argument("--columns", metavar="MAP",
                   help="where the file keeps each field, as dotted paths: e.g. question=inputs.question,"
                        f"answer=outputs.answer,contexts=outputs.docs[*].text (fields: {', '.join(ANSWER_FIELDS)})")
    add_gold(p)
    add_formats(p, run=False)
    p.add_argument("--corpus", metavar="PATH", help="corpus manifest: texts of contexts logged as ids only")
    p.add_argument("--metrics", "-m", default="faithfulness,contradiction_rate,answer_relevance,context_relevance,"
                                              "answer_correctness", metavar="SPECS", help="answer metrics (default: all)")
    p.add_argument("--faithful-min", type=float, default=0.8, help="grid: faithfulness at or above is faithful (0.8)")
    p.add_argument("--contradiction-max", type=float, default=0.0,
                   help="grid: … and contradiction_rate at or below (0)")
    p.add_argument("--correct-min", type=float, default=0.8, help="grid: answer_correctness at or above is correct (0.8)")
    p.add_argument("--human", metavar="JSONL",
                   help="human verdicts of the same answers {query_id, faithful, correct}: report how often the judge "
                        "agrees (verdicts and grid cells, with intervals) and where it does not")
    p.add_argument("--calibration-out", metavar="FILE",
                   help="with --human: write the judge's faithful verdicts against the human ones as a calibration "
                        "file (task faithfulness), which a gate on faithfulness or contradiction_rate can cite")
    p.add_argument("--by", action="append", default=[], metavar="FIELD",
                   help="also break the metrics down by a gold field or tag (intent, lang, tags.tier…); repeatable")
    p.add_argument("--examples", type=int, default=3, help="example queries listed per grid cell (default 3)")
    add_judge(p, seed="--judge-seed", retries=False, statements=True, price="dry-run",
              repeats="and report how often labels change; metrics use the first sample")
    add_stats(p)
    add_ties(p, TIES_HELP + "; packed contexts carry no scores, so both keep the packed order")
    p.add_argument("--config", metavar="YAML",
                   help="ship criteria to check on the answers (a judge metric's gate needs a calibration file); "
                        "exit 1 when a blocking gate fails")
    p.add_argument("--baseline", metavar="SUMMARY", help="with --config: the summary.json of an earlier answers run")
    p.add_argument("--comment", metavar="PATH", help="with --config: write the PR comment (gates and the answers "
                                                     "section) to PATH")
    add_out(p, "write answers.csv and summary.json into DIR")
    p.add_argument("--json", action="store_true", help="print summary.json to stdout instead of the tables")


def judge_settings(args: argparse.Namespace) -> dict[str, Any]:
    """Backend, url, model and key variable: options first, then the RANKGATE_JUDGE* environment."""
    out = {}
    for name, env in ENV.items():
        value = getattr(args, name, None)
        out[name] = value if value is not None else (os.environ.get(env) or None)
    out["judge"] = out["judge"] or "lexical"
    return out


def open_from_args(args: argparse.Namespace) -> Any:
    from ..errors import UsageError
    from ..judges import DEFAULT_MAX_STATEMENTS, open_judge

    if args.no_cache and args.refresh:
        raise UsageError("--no-cache and --refresh contradict each other: --refresh writes the cache")
    from .options import check_judge_counts

    check_judge_counts(args)
    s = judge_settings(args)
    return open_judge(s["judge"], url=s["judge_url"], model=s["judge_model"], key_env=s["judge_key_env"],
                      cache_dir=args.cache, use_cache=not args.no_cache, refresh=args.refresh, workers=args.workers,
                      timeout_s=args.timeout, seed=args.judge_seed, progress=sys.stderr.isatty(),
                      max_statements=getattr(args, "max_statements", DEFAULT_MAX_STATEMENTS),
                      max_calls=getattr(args, "max_calls", None),
                      max_reply_bytes=getattr(args, "max_reply_bytes", None))


def run(args: argparse.Namespace) -> int:
    from ..answers import GridThresholds
    from ..errors import UsageError
    from .options import check_stats_args

    check_stats_args(args)
    if args.out:
        from ..atomic import check_folder, check_not_input

        check_folder(args.out, OUT_FILES, option="--out")
        for name in OUT_FILES:
            check_not_input(os.path.join(args.out, name), (args.gold, args.answers, args.corpus, args.human),
                            option="--out")
    if args.examples < 0:
        raise UsageError(f"--examples must be >= 0; got {args.examples}")
    thresholds = GridThresholds(args.faithful_min, args.contradiction_max, args.correct_min)
    config = None
    if getattr(args, "calibration_out", None):
        if not args.human:
            raise UsageError("--calibration-out needs --human (the human verdicts the judge is measured against)")
        from ..atomic import check_file, check_not_input

        check_file(args.calibration_out, option="--calibration-out")
        check_not_input(args.calibration_out, (args.gold, args.answers, args.corpus, args.human), option="--calibration-out")
    if (args.baseline or args.comment) and not args.config:
        raise UsageError("--baseline and --comment go with --config (the ship criteria they report on)")
    if args.comment:
        from ..atomic import check_file, check_not_input

        check_file(args.comment, option="--comment")
        check_not_input(args.comment, (args.gold, args.answers, args.corpus, args.config, args.baseline),
                        option="--comment")
    if args.config:
        from ..gates import load_config

        config = load_config(args.config)  # a judge metric without calibration is refused here, before any call
        wanted = [m.strip() for m in args.metrics.split(",") if m.strip()]
        from ..metrics import parse_metric

        for m in config.metrics:
            if hasattr(parse_metric(m).definition, "judge_task") and m not in wanted:
                wanted.append(m)
        args.metrics = ",".join(wanted)
    gold, answers = load_inputs(args)
    client = open_from_args(args)
    try:
        if args.dry_run:
            return _dry_run(args, client, gold, answers)
        summary, csv_text, result = score(args, client, gold, answers, thresholds)
    finally:
        client.close()
    from ..report.exports import summary_json

    outcome = None
    files: dict[str, str] = {}
    if config is not None:
        from ..gates import gate
        from ..report.comment import comment_markdown

        outcome = gate(config, gold, result, args.baseline, candidate_label=os.path.basename(args.answers))
        if args.comment:
            files[args.comment] = comment_markdown(outcome, answers=summary["answers"])
    if getattr(args, "calibration_text", None):
        files[args.calibration_out] = args.calibration_text
    if args.out:
        files[os.path.join(args.out, "answers.csv")] = csv_text
        files[os.path.join(args.out, "summary.json")] = summary_json(summary)
    if files:
        from ..atomic import write_files

        write_files(files)  # all or none
    for warning in summary["answers"].get("warnings") or []:
        print(f"rankgate answers: {warning}", file=sys.stderr)
    code = 0 if outcome is None else outcome.exit_code
    if args.json:
        sys.stdout.write(summary_json(summary))
        return code
    from rich.console import Console

    from ..report.answers import print_answers

    console = Console()
    print_answers(summary["answers"], confidence=args.confidence, console=console)
    if getattr(args, "segments", None) is not None:
        from ..report.tables import segment_table

        console.print()
        console.print(segment_table(args.segments))
    hits, calls = getattr(args, "cache_hits", (0, 0))
    console.print(f"{hits} of {calls} judge labels came from the cache", highlight=False, markup=False)
    if args.out:
        console.print(f"wrote {os.path.join(args.out, 'answers.csv')} and {os.path.join(args.out, 'summary.json')}",
                      highlight=False, markup=False)
    if outcome is not None:
        from ._outcome import print_outcome as _print

        console.print()
        _print(outcome)
    return code


def load_inputs(args: argparse.Namespace) -> tuple[Any, Any]:
    from ..answers import check_answers_join
    from ..data import load_gold
    from ..data.answers import ANSWER_FIELDS, read_answers
    from ..data.formats import parse_columns
    from ..data.source import check_file

    gold = load_gold(args.gold, format=args.gold_format)
    corpus = None
    if args.corpus:
        from ..corpus import load_manifest

        corpus = load_manifest(args.corpus)
    check_file(args.answers, "answers")
    answers = read_answers(args.answers, format=args.answers_format, columns=parse_columns(args.columns, ANSWER_FIELDS),
                           corpus=corpus, gold_ids=frozenset(gold.j_doc.to_pylist()))
    check_answers_join(gold, answers)
    if getattr(args, "human", None):
        from ..answers import read_human_verdicts

        args.human_labels = read_human_verdicts(args.human, answers.query_ids)
    return gold, answers


def _questions(gold: Any) -> dict[str, str | None]:
    return dict(zip(gold.query_ids, gold.field("query")))


def score(args: argparse.Namespace, client: Any, gold: Any, answers: Any, thresholds: Any,
          shown: Any = None) -> tuple[dict[str, Any], str, Any]:
    """summary.json (as a dict), answers.csv (text) and the evaluation result. ``shown`` maps an input's
    path to the name summary.json gives it (the demo names its files relative to its folder)."""
    from ..answers import answers_summary, diagnosis_grid, evaluate_answers, judge_answers
    from ..metrics import parse_metrics
    from ..report.exports import summary_dict
    from ..stats import metric_cis

    metrics = [str(m) for m in parse_metrics(args.metrics)]
    judged = judge_answers(client, answers, _questions(gold), metrics=metrics, repeats=args.repeats)
    result = evaluate_answers(gold, answers, metrics, judgements=judged.labels, ties=getattr(args, "ties", None))
    cis = metric_cis(result, seed=args.seed, n_resamples=args.resamples, confidence=args.confidence)
    rows = diagnosis_grid(result, thresholds)
    # (cache hits are not written: a second run must give the same bytes; the terminal says them)
    args.cache_hits = (sum(judged.cached.values()), sum(judged.calls.values()))
    judge = {"identity": client.identity(), "calls": dict(judged.calls), "repeats": args.repeats, "variance": {t: list(v) for t, v in judged.variance.items()}}
    if getattr(args, "max_calls", None) is not None:  # (only then: the summary of a run without it is unchanged)
        judge["call_budget"] = {"max_calls": args.max_calls, "not_called": client.stats.get("over_budget", 0)}
    from ..data.inputs import sha256_files

    layer = answers_summary(result, rows, cis=cis, thresholds=thresholds, judge=judge, examples=args.examples,
                            confidence=args.confidence)
    from .options import budget_warning

    warning = budget_warning(client, "rankgate answers")
    if warning:
        layer["warnings"].append(warning)
    if getattr(args, "human", None):
        from ..answers import agreement_with_human

        layer["human"] = agreement_with_human(rows, args.human_labels, confidence=args.confidence)
        if getattr(args, "calibration_out", None):
            import json

            from ..answers import faithfulness_calibration

            body = faithfulness_calibration(rows, args.human_labels, seed=args.seed, n_resamples=args.resamples,
                                            confidence=args.confidence).to_dict()
            body.update({"judge": client.identity(), "human": f"sha256:{sha256_files([args.human])}"})
            args.calibration_text = json.dumps({"calibration": body}, indent=2, ensure_ascii=False) + "\n"
    def name(path: str) -> str:
        return (shown or {}).get(path, path)

    inputs = {"answers": {"path": name(answers.source), "sha256": sha256_files([answers.source]), "format": answers.format},
              "gold": {"path": name(gold.source),
                       "sha256": sha256_files([gold.source]) if os.path.isfile(gold.source) else None}}
    if args.corpus:
        inputs["corpus"] = {"path": name(args.corpus)}
    if getattr(args, "human", None):
        inputs["human"] = {"path": name(args.human), "sha256": sha256_files([args.human])}
    extra: dict[str, Any] = {"answers": layer, "statistics": {"seed": args.seed, "resamples": args.resamples,
                                                              "confidence": args.confidence}}
    if getattr(args, "by", None):
        from ..segments import segment_summary

        args.segments = segment_summary(result, args.by, seed=args.seed, n_resamples=args.resamples,
                                        confidence=args.confidence)
        extra["segments"] = args.segments.to_dict()
    summary = summary_dict(result, cis=cis, extra=extra)
    summary["inputs"] = inputs
    return summary, answers_csv(result, rows), result


def answers_csv(result: Any, rows: Any) -> str:
    """One row per query: cell, verdicts, every metric with its status, statement count, judge errors."""
    from ..report.exports import _float_column, _text_column

    a = result.info["answers"]
    answer_names = [m for m in result.metric_names if m not in a["retrieval_metrics"]]
    header = ["query_id", "cell", "retrieval", "answer", *a["retrieval_metrics"]]
    columns = [_text_column(result.query_ids), _text_column([r.cell for r in rows]),
               _text_column([r.retrieval for r in rows]), _text_column([r.answer for r in rows])]
    columns += [_float_column(result.values[m]) for m in a["retrieval_metrics"]]
    for m in answer_names:
        header += [m, f"{m}.status"]
        columns += [_float_column(result.values[m]), _text_column(a["status"][m])]
    header += ["statements", "judge_errors"]
    columns.append(["" if n is None else str(n) for n in a["statements"]])
    columns.append(_text_column(["; ".join(e) for e in a["judge_errors"]]))
    lines = [",".join(header)] + [",".join(row) for row in zip(*columns)]
    return "\n".join(lines) + "\n"


def _dry_run(args: argparse.Namespace, client: Any, gold: Any, answers: Any) -> int:
    from ..answers import plan_answers
    from ..metrics import parse_metrics

    metrics = [str(m) for m in parse_metrics(args.metrics)]
    plan = plan_answers(client, answers, _questions(gold), metrics=metrics, repeats=args.repeats)
    from ..report.answers import judge_line

    print(f"dry run: {judge_line({'judge': {'identity': client.identity()}})}; {len(answers)} answers; "
          "nothing was called")
    total_calls = total_hits = total_tokens = tokens_in = tokens_out = 0
    for task, row in plan.items():
        tokens_in += row["tokens_in"]
        tokens_out += row["tokens_out"]
        note = f"  ({row['estimated']}: estimated)" if row.get("estimated") else ""
        print(f"  {task:<18} {row['calls']:>7} calls  {row['cache_hits']:>7} cached  ~{row['approx_tokens']:,} tokens{note}")
        total_calls += row["calls"]
        total_hits += row["cache_hits"]
        total_tokens += row["approx_tokens"]
    print(f"  {'total':<18} {total_calls:>7} calls  {total_hits:>7} cached  ~{total_tokens:,} tokens "
          "(approximate: characters / 4)")
    at_most = sum(row["at_most"] for row in plan.values())
    second = any(row.get("estimated") for row in plan.values())
    bound = (f"at most {at_most:,} calls to send" + (f" (support/correctness: at most {client.max_statements:,} "
                                                     "statements per answer, --max-statements)" if second else ""))
    if client.max_calls is not None:
        bound += f"; --max-calls stops the run after {client.max_calls:,}"
    print(f"  {bound}")
    if args.price_in is not None or args.price_out is not None:
        cost = (tokens_in * (args.price_in or 0.0) + tokens_out * (args.price_out or 0.0)) / 1e6
        print(f"  approximate cost: {cost:.4f} (~{tokens_in:,} input tokens at {args.price_in or 0:g}, "
              f"~{tokens_out:,} output tokens at {args.price_out or 0:g} per 1M)")
    return 0
