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

from rankgate.cli.options import TIES_HELP, add_field, add_formats, add_gold, add_judge, add_out, add_stats, add_ties, add_when
from rankgate.cli.outputs import Output

HELP = "score generated answers with a judge (faithfulness, relevance, correctness) and diagnose each query"
OUT_FILES = ("answers.csv", "summary.json")
#: What the command writes (:mod:`rankgate.cli.outputs`), all of it or none. --out may replace the --baseline
#: summary it compares against (an earlier run's summary.json, rolled forward).
OUTPUTS = {"out": Output("--out", files=OUT_FILES, replaces=("baseline",)),
           "calibration_out": Output("--calibration-out"),
           "comment": Output("--comment")}


def add_parser(sub: Any) -> None:
    from rankgate.io.formats import ANSWER_FIELDS, ANSWER_FORMATS

    p = sub.add_parser("answers", help=HELP, description=HELP + ". See docs/answers.md.")
    p.add_argument("--answers", required=True, metavar="PATH",
                   help="answers with their packed contexts: rankgate JSONL, a RAGAS or DeepEval dataset, CSV, Parquet")
    p.add_argument("--answers-format", choices=ANSWER_FORMATS, default="auto", help="preset (default: detected)")
    add_field(p, names=f"{', '.join(ANSWER_FIELDS)}; list_sep=SEP, the delimiter of lists joined in one cell",
              example="question=inputs.question, contexts=outputs.docs[*].text")
    p.add_argument("--columns", metavar="MAP", help=argparse.SUPPRESS)  # --field's old spelling, for one release
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
    add_when(p, help="with --calibration-out: the calibration's date, UTC ISO 8601 (2025-05-01); default: the newest "
                     "human verdict's own time when the verdicts carry one, else now")
    p.add_argument("--by", action="append", default=[], metavar="FIELD",
                   help="also break the metrics down by a gold field or tag (intent, lang, tags.tier…); repeatable")
    p.add_argument("--examples", type=int, default=3, help="example queries listed per grid cell (default 3)")
    add_judge(p, seed="--judge-seed", retries=False, statements=True, price="run",
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


def request(args: argparse.Namespace) -> Any:
    """The :class:`~rankgate.flows.answers.AnswersRequest` the options describe (UsageError on a bad one)."""
    from rankgate.errors import UsageError
    from rankgate.flows.answers import JudgeSpec
    from rankgate.flows.answers import AnswersRequest

    if (args.comment or args.baseline) and not args.config:  # (--comment is the command's own)
        raise UsageError("--baseline and --comment go with --config (the ship criteria they report on)")
    if args.columns is not None:
        print("rankgate answers: note: --columns is deprecated; use --field (the same NAME=PATH pairs)", file=sys.stderr)
    judge = JudgeSpec(backend=args.judge, url=args.judge_url, model=args.judge_model, key_env=args.judge_key_env,
                      cache=args.cache, use_cache=not args.no_cache, refresh=args.refresh, workers=args.workers,
                      timeout=args.timeout, seed=args.judge_seed, max_statements=args.max_statements,
                      max_calls=args.max_calls, max_reply_bytes=args.max_reply_bytes, progress=sys.stderr.isatty())
    return AnswersRequest(
        answers=args.answers, gold=args.gold, answers_format=args.answers_format, columns=args.columns,
        fields=_fields(args.field),
        gold_format=args.gold_format, corpus=args.corpus, human=args.human, metrics=args.metrics,
        faithful_min=args.faithful_min, contradiction_max=args.contradiction_max, correct_min=args.correct_min,
        by=tuple(args.by), examples=args.examples, seed=args.seed, resamples=args.resamples,
        confidence=args.confidence, ties=args.ties, judge=judge, repeats=args.repeats,
        calibration=bool(args.calibration_out), when=args.when, config=args.config, baseline=args.baseline,
        price_in=args.price_in, price_out=args.price_out)


def _fields(given: list[str] | None) -> dict[str, str] | None:
    """``--field`` as the request's mapping, read with the one field syntax (a UsageError naming the flaw)."""
    from rankgate.io.answers import answer_fields

    return answer_fields(given) if given else None


def run(args: argparse.Namespace) -> int:
    from rankgate.cli.outputs import check_outputs
    from rankgate.flows.answers import plan_answers, run_answers

    req = request(args)
    planned = check_outputs(args, OUTPUTS, req)
    if args.dry_run:
        _print_plan(plan_answers(req), price_in=args.price_in, price_out=args.price_out)
        return 0
    scored = run_answers(req)
    import json

    from rankgate.render.exports import answers_csv, answers_summary, summary_json

    summary = answers_summary(scored)
    files: dict[str, str] = {}
    if scored.outcome is not None and args.comment:
        from rankgate.render.comment import comment_markdown

        files[args.comment] = comment_markdown(scored.outcome, answers=summary["answers"])
    if scored.calibration is not None:
        files[args.calibration_out] = json.dumps({"calibration": scored.calibration}, indent=2, ensure_ascii=False) + "\n"
    if args.out:
        files[os.path.join(args.out, "answers.csv")] = answers_csv(scored.result, scored.rows)
        files[os.path.join(args.out, "summary.json")] = summary_json(summary)
    if files:
        planned.write(files)  # all or none
    for warning in scored.warnings:
        print(f"rankgate answers: {warning}", file=sys.stderr)
    code = 0 if scored.outcome is None else scored.outcome.exit_code
    if args.json:
        sys.stdout.write(summary_json(summary))
        return code
    from rich.console import Console

    from rankgate.render.answers import print_answers

    console = Console()
    print_answers(summary["answers"], confidence=args.confidence, console=console)
    from rankgate.render.sections import sections_of

    for row, part in sections_of({"segments": scored.segments}):
        console.print()
        console.print(row.renderable(part, args.confidence))
    hits, calls = scored.cache_hits
    console.print(f"{hits} of {calls} judge labels came from the cache", highlight=False, markup=False)
    spend = (summary["answers"].get("judge") or {}).get("spend")
    if spend:
        from rankgate.render.judge import spend_line

        console.print(spend_line(spend), highlight=False, markup=False)
    if args.out:
        console.print(f"wrote {os.path.join(args.out, 'answers.csv')} and {os.path.join(args.out, 'summary.json')}",
                      highlight=False, markup=False)
    if scored.outcome is not None:
        from rankgate.cli._outcome import print_outcome as _print

        console.print()
        _print(scored.outcome)
    return code


def _print_plan(plan: Any, *, price_in: float | None, price_out: float | None) -> None:
    from rankgate.render.answers import judge_line

    print(f"dry run: {judge_line({'judge': {'identity': plan.identity}})}; {plan.answers} answers; "
          "nothing was called")
    total_calls = total_hits = total_tokens = tokens_in = tokens_out = 0
    for task, row in plan.tasks.items():
        tokens_in += row["tokens_in"]
        tokens_out += row["tokens_out"]
        note = f"  ({row['estimated']}: estimated)" if row.get("estimated") else ""
        print(f"  {task:<18} {row['calls']:>7} calls  {row['cache_hits']:>7} cached  ~{row['approx_tokens']:,} tokens{note}")
        total_calls += row["calls"]
        total_hits += row["cache_hits"]
        total_tokens += row["approx_tokens"]
    print(f"  {'total':<18} {total_calls:>7} calls  {total_hits:>7} cached  ~{total_tokens:,} tokens "
          "(approximate: characters / 4)")
    at_most = sum(row["at_most"] for row in plan.tasks.values())
    second = any(row.get("estimated") for row in plan.tasks.values())
    bound = (f"at most {at_most:,} calls to send" + (f" (support/correctness: at most {plan.max_statements:,} "
                                                     "statements per answer, --max-statements)" if second else ""))
    if plan.max_calls is not None:
        bound += f"; --max-calls stops the run after {plan.max_calls:,}"
    print(f"  {bound}")
    if price_in is not None or price_out is not None:
        cost = (tokens_in * (price_in or 0.0) + tokens_out * (price_out or 0.0)) / 1e6
        print(f"  approximate cost: {cost:.4f} (~{tokens_in:,} input tokens at {price_in or 0:g}, "
              f"~{tokens_out:,} output tokens at {price_out or 0:g} per 1M)")
