"""``rankgate evaluate``: score a run against a gold set."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

HELP = "score a run against a gold set: terminal table, metrics.csv, summary.json"
DEFAULT_METRICS = "hit@5,recall@5,precision@5,mrr,ndcg@10"


def add_input_options(p: argparse.ArgumentParser, *, run: bool = True, gold_required: bool = True) -> None:
    """Options shared by every command that reads a gold set (and runs)."""
    from ..data.formats import GOLD_FORMATS, RUN_FORMATS

    p.add_argument("--gold", required=gold_required, metavar="PATH",
                   help="gold set: JSONL, TREC qrels, BEIR qrels .tsv or folder, Parquet, CSV/TSV with a header, "
                        "a RAGAS/DeepEval dataset, a LlamaIndex EmbeddingQAFinetuneDataset JSON, a Hugging Face save_to_disk folder")
    p.add_argument("--gold-format", choices=GOLD_FORMATS, metavar="FORMAT", help="override format detection: %(choices)s")
    if run:
        p.add_argument("--run-format", choices=RUN_FORMATS, metavar="FORMAT", help="override format detection: %(choices)s")
    p.add_argument("--columns", metavar="MAP",
                   help="CSV/TSV columns holding each field, e.g. query_id=qid,chunk_id=doc,score=s "
                        "(fields: query_id, chunk_id, grade, score, rank, query, doc_version, text, note)")
    add_ties_option(p)
    p.add_argument("--metrics", "-m", default=DEFAULT_METRICS, metavar="SPECS",
                   help=f"comma-separated metric specs (default: {DEFAULT_METRICS}); see 'rankgate metrics'")
    p.add_argument("--k", type=int, default=None, metavar="K",
                   help="cutoff for metrics written without @k that need one, unless the gold query sets its own k (default 5)")
    p.add_argument("--level", choices=("chunk", "doc"), default="chunk",
                   help="evaluate chunk ids as given, or map them to parent documents (a document counts once, at its best rank)")
    p.add_argument("--doc-sep", default="#", metavar="SEP", help="separator between document id and chunk part (default '#')")
    p.add_argument("--doc-map", metavar="PATH", help="chunk→document mapping file (TSV 'chunk_id<TAB>doc_id' or JSON object); overrides --doc-sep")
    p.add_argument("--dedupe", choices=("error", "first"), default="error",
                   help="a repeated id in one query's ranking: error (default), or keep its best rank and report the count")
    p.add_argument("--trec", action="store_true", help="trec_eval v10 semantics: queries in both files; all-non-relevant queries score 0")
    p.add_argument("-c", "--complete", action="store_true", help="with --trec: average over all gold queries (trec_eval -c)")


TIES_HELP = ("the ranking rule: input (the file's order: ranks when every item has one, else score with equal "
             "scores in list/row order; the default, except for TREC runs and --trec) or id (trec_eval's: score, "
             "then id descending)")


def add_ties_option(p: argparse.ArgumentParser, help: str = TIES_HELP) -> None:
    """``--ties id|input``: every command that ranks a run takes it."""
    p.add_argument("--ties", choices=("id", "input"), default=None, help=help)
    # The lines already said on stderr: a command that scores one run several times (report: the
    # sweep, the baseline, the stages) says each once. (A new parser, so a new set, per command run.)
    p.set_defaults(lines_said=set())


def add_stats_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap (default 0)")
    p.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples (default 2000; 0 turns CIs off)")
    p.add_argument("--confidence", type=float, default=0.95, help="confidence level of intervals (default 0.95)")


def add_parser(sub: Any) -> None:
    p = sub.add_parser("evaluate", help=HELP, description=HELP + ".")
    add_input_options(p)
    p.add_argument("--run", required=True, metavar="PATH",
                   help="run: JSONL, TREC run file, Parquet, CSV/TSV with a header, a RAGAS/DeepEval dataset "
                        "(the same file as --gold works), a Hugging Face save_to_disk folder")
    p.add_argument("--out", "-o", metavar="DIR", help="write metrics.csv and summary.json into DIR")
    p.add_argument("--layout", choices=("default", "v0"), default="default",
                   help="layout of metrics.csv and summary.json: default, or v0 (the metrics spec's columns and "
                        "quality/operational/privacy summary; see docs/outputs.md)")
    p.add_argument("--by", action="append", default=[], metavar="FIELD",
                   help="also break means down by a gold field or tag (intent, lang, tags.tier…); repeatable")
    p.add_argument("--sweep", metavar="METRICS", help="k-sweep of these metrics (e.g. recall,ndcg) over --ks")
    p.add_argument("--ks", default="1,3,5,10,20", metavar="KS", help="cutoffs for --sweep (default 1,3,5,10,20)")
    from ._whatif import add_component_options, add_enforce_as_of

    add_enforce_as_of(p)
    add_component_options(p)
    p.add_argument("--judged", metavar="LABELS",
                   help="judge (or human) labels of items the gold set lacks, JSONL {query_id, id, grade} (from "
                        "`rankgate pool` + `rankgate judge relevance`): also report precision@k and ndcg@k as gold only "
                        "(lower bound) and gold + judge (upper bound), k = --k (default 10)")
    p.add_argument("--calibration", metavar="JSON",
                   help="with --judged: the judge's calibration file (rankgate judge calibrate) for the Rogan-Gladen "
                        "corrected estimate between the bounds")
    add_stats_options(p)
    p.add_argument("--json", action="store_true", help="print summary.json to stdout instead of the table")
    p.add_argument("--markdown", action="store_true", help="print the table as markdown")


def load_doc_map(path: str | None) -> dict[str, str] | None:
    if path is None:
        return None
    import json

    from ..data.source import check_file, text_lines
    from ..errors import InputError

    check_file(path, "doc map")
    lines = list(text_lines(path))  # a byte that is not UTF-8 is an error naming its line
    text = "".join(line for _, line in lines)
    if not text.strip():  # (a pipe, which check_file cannot size)
        raise InputError("is empty", path=path, hint="the doc map file has no content")
    if text.lstrip().startswith("{"):
        from ..data.jsonl import check_surrogates

        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"is not valid JSON: {exc.msg}", path=path, line=exc.lineno) from None
        except (RecursionError, ValueError):  # nesting past the stack, an integer of thousands of digits
            raise InputError("is not a JSON object that can be read (nesting too deep or a number too long)",
                             path=path) from None
        if not isinstance(data, dict):
            raise InputError("must be one JSON object {chunk_id: doc_id}", path=path)
        check_surrogates(text, data, path, None)
        for key, value in data.items():
            if not isinstance(value, str) or not value.strip() or not key.strip():
                raise InputError(f"maps {key!r} to {value!r}; expected a non-empty document id string"[:160],
                                 path=path, field=key[:80])
        return dict(data)
    out: dict[str, str] = {}
    first: dict[str, int] = {}
    for lineno, line in lines:
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.rstrip("\r\n").split("\t")
        if len(parts) != 2:
            raise InputError(f"has {len(parts)} tab-separated columns; expected 2 (chunk_id, doc_id)", path=path, line=lineno)
        if not parts[0].strip() or not parts[1].strip():
            raise InputError(f"has an empty {'chunk' if not parts[0].strip() else 'document'} id", path=path,
                             line=lineno, hint="each line is 'chunk_id<TAB>doc_id', both non-empty")
        if parts[0] in out and out[parts[0]] != parts[1]:
            raise InputError(f"maps {parts[0]!r} to {parts[1]!r}, but line {first[parts[0]]} maps it to "
                             f"{out[parts[0]]!r}"[:200], path=path, line=lineno, hint="a chunk belongs to one document")
        out[parts[0]] = parts[1]
        first.setdefault(parts[0], lineno)
    return out


def _doc_map_of(args: argparse.Namespace) -> dict[str, str] | None:
    """The --doc-map file, read once per command (a pipe delivers its content once)."""
    if getattr(args, "doc_map_data", None) is None and args.doc_map is not None:
        args.doc_map_data = load_doc_map(args.doc_map)
    return getattr(args, "doc_map_data", None)


def evaluate_from_args(args: argparse.Namespace, run: Any, gold: Any = None, *, warn: bool = True):
    """The evaluation the options ask for; ``warn``: say on stderr when no run id meets a gold id."""
    from ..data.formats import parse_columns
    from ..engine import evaluate, id_mismatch_line, ties_lines
    from ..metrics.spec import MAX_K

    if args.k is not None and not 1 <= args.k <= MAX_K:
        from ..errors import UsageError

        raise UsageError(f"--k must be a positive integer up to {MAX_K:,}; got {args.k}")
    result = evaluate(
        gold if gold is not None else args.gold,
        run,
        args.metrics,
        k=args.k,
        trec=args.trec,
        complete=args.complete,
        level=args.level,
        doc_sep=args.doc_sep,
        doc_map=_doc_map_of(args),
        dedupe=args.dedupe,
        gold_format=args.gold_format,
        run_format=args.run_format,
        ties=getattr(args, "ties", None),
        columns=parse_columns(getattr(args, "columns", None)),
    )
    from ..data.nearmiss import near_miss_line

    read = [*(result.info.get("notices") or ()), near_miss_line(result.info.get("near_misses"))]  # how inputs were read
    lines = ([id_mismatch_line(result), *read] if warn else []) + ties_lines(result)
    name = os.fspath(run) if isinstance(run, (str, os.PathLike)) else getattr(run, "source", "run")
    said = getattr(args, "lines_said", None)
    for line in lines:
        text = f"rankgate {getattr(args, 'command', None) or 'evaluate'}: {name}: {line}"
        if line and (said is None or text not in said):
            print(text, file=sys.stderr)
            if said is not None:
                said.add(text)
    return result


def check_stats_args(args: argparse.Namespace) -> None:
    from ..constraints import CONFIDENCE, RESAMPLES, SEED, check

    note = ""
    if isinstance(args.resamples, int) and args.resamples > RESAMPLES.maximum:  # type: ignore[operator]
        note = f"the intervals would need about {_memory(args.resamples)} per metric; 2,000 to 10,000 resamples are plenty"
    check(RESAMPLES, args.resamples, option="--resamples", note=note)
    check(CONFIDENCE, args.confidence, option="--confidence")
    check(SEED, args.seed, option="--seed")


def _memory(resamples: int) -> str:
    """Memory the bootstrap needs per metric for ``resamples`` means (8 bytes each, kept twice)."""
    size = resamples * 16
    return f"{size / 2**30:,.0f} GiB" if size >= 2**30 else f"{size / 2**20:,.0f} MiB"


def _import_reporting() -> None:
    """What the command needs after evaluating, imported while the inputs are parsed (pyarrow's
    readers release the GIL, so this thread runs alongside them)."""
    import rich.console  # noqa: F401

    from .. import stats  # noqa: F401
    from ..report import exports, terminal  # noqa: F401


def _read_pipes_once(args: argparse.Namespace) -> tuple[Any, Any]:
    """(gold, run) to evaluate: the paths, or the loaded data for a pipe when --sweep evaluates a
    second time (a pipe delivers its content once)."""
    gold, run = args.gold, args.run
    once = ("sweep", "enforce_as_of", "routing", "entity_linking", "judged")  # each reads the inputs a second time
    if any(getattr(args, name, None) for name in once):
        from ..data.formats import parse_columns
        from ..data.load import load_gold, load_run
        from ..data.source import is_pipe

        columns = parse_columns(getattr(args, "columns", None))
        if is_pipe(gold):
            gold = load_gold(gold, format=args.gold_format, columns=columns)
        if is_pipe(run):
            run = load_run(run, format=args.run_format, columns=columns)
    return gold, run


OUT_FILES = ("metrics.csv", "summary.json")


def run(args: argparse.Namespace) -> int:
    check_stats_args(args)
    if getattr(args, "calibration", None) and not getattr(args, "judged", None):
        from ..errors import UsageError

        raise UsageError("--calibration needs --judged (the labels it corrects)")
    if args.out:
        from ..atomic import check_folder, check_not_input

        check_folder(args.out, OUT_FILES, option="--out")
        for name in OUT_FILES:
            check_not_input(os.path.join(args.out, name), (args.gold, args.run, args.doc_map), option="--out")
    import threading

    warm = threading.Thread(target=_import_reporting, daemon=True)
    warm.start()
    v0 = getattr(args, "layout", "default") == "v0"
    if v0:
        from ..metrics import parse_metrics
        from ..report.layout_v0 import v0_metrics

        wanted = [str(m) for m in parse_metrics(args.metrics)]
        wanted += [m for m in v0_metrics(args.k or 5) if m not in wanted]
        args = argparse.Namespace(**{**vars(args), "metrics": ",".join(wanted)})
    gold_src, run_src = _read_pipes_once(args)
    freshness = None
    if getattr(args, "enforce_as_of", False):
        from ._whatif import freshness_for

        freshness = freshness_for(args, gold_src, run_src)
        result = freshness.enforced
    else:
        result = evaluate_from_args(args, run_src, gold_src, warn=False)  # the terminal lines say it
    warm.join()
    from concurrent.futures import ThreadPoolExecutor

    from ..report.exports import metrics_csv, summary_dict, summary_json

    # The intervals are computed on another thread (the compiled bootstrap releases the GIL) while
    # this one writes out the per-query table.
    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = None
        if args.resamples:
            from ..stats import metric_cis

            pending = pool.submit(metric_cis, result, seed=args.seed, n_resamples=args.resamples,
                                  confidence=args.confidence)
        if v0:
            from ..report.layout_v0 import v0_metrics_csv

            csv_text = v0_metrics_csv(result) if args.out else None
        else:
            csv_text = metrics_csv(result) if args.out else None
        cis = pending.result() if pending is not None else None

    extra: dict[str, Any] = {"statistics": {"seed": args.seed, "resamples": args.resamples, "confidence": args.confidence}}
    segments = sweep = None
    if args.by:
        from ..segments import segment_summary

        segments = segment_summary(result, args.by, seed=args.seed, n_resamples=args.resamples, confidence=args.confidence)
        extra["segments"] = segments.to_dict()
    if freshness is not None:
        extra["freshness"] = freshness.to_dict()
    from ._whatif import components_for

    components = components_for(args, gold_src, run_src)
    for name, part in components.items():
        extra[name] = part.to_dict()
    latency = None
    if result.info.get("latency_ms"):
        from ..experiments.latency import latency_summary

        latency = latency_summary(result, by=args.by, seed=args.seed, n_resamples=args.resamples,
                                  confidence=args.confidence)
        extra["latency"] = latency.to_dict()
    if args.sweep:
        from ..sweep import k_sweep

        sweep = k_sweep(gold_src, run_src, args.sweep, args.ks, evaluate_kwargs=_sweep_kwargs(args))
        extra["sweep"] = sweep.to_dict()
    judged = _judged_bounds(args, gold_src, run_src) if getattr(args, "judged", None) else None
    if judged is not None:
        extra["bounds"] = judged.to_dict()
    if v0:
        from ..report.layout_v0 import v0_summary

        summary = v0_summary(result, cis=cis, extra=extra)
    else:
        summary = summary_dict(result, cis=cis, extra=extra)

    if args.out:
        from ..atomic import write_files

        # Both files or neither: a summary.json beside another run's metrics.csv would mislead.
        write_files({os.path.join(args.out, "metrics.csv"): csv_text or "",
                     os.path.join(args.out, "summary.json"): summary_json(summary)})

    if args.json:
        sys.stdout.write(summary_json(summary))
        return 0
    if args.markdown:
        from ..report.markdown import evaluation_markdown

        sys.stdout.write(evaluation_markdown(result, cis, args.confidence, segments=segments, sweep=sweep))
        from ..report import experiments as rx

        for name, part in components.items():
            render = rx.routing_markdown if name == "routing" else rx.linking_markdown
            sys.stdout.write("\n" + render(part, args.confidence))
        if latency is not None:
            from ..report.experiments import latency_markdown

            sys.stdout.write("\n" + latency_markdown(latency))
        if freshness is not None:
            from ..report.experiments import freshness_markdown

            sys.stdout.write("\n" + freshness_markdown(freshness, args.confidence))
        return 0
    from rich.console import Console

    from ..report.tables import segment_table, sweep_table
    from ..report.terminal import print_evaluation

    console = Console()
    print_evaluation(result, cis, args.confidence, console=console)
    if segments is not None:
        console.print()
        console.print(segment_table(segments))
    if sweep is not None:
        console.print()
        console.print(sweep_table(sweep))
    if components:
        from ..report import experiments as rx

        for name, part in components.items():
            console.print()
            console.print((rx.routing_renderable if name == "routing" else rx.linking_renderable)(part, args.confidence))
    if latency is not None:
        from ..report.experiments import latency_renderable

        console.print()
        console.print(latency_renderable(latency))
    if freshness is not None:
        from ..report.experiments import freshness_renderable

        console.print()
        console.print(freshness_renderable(freshness, args.confidence))
    if judged is not None:
        from ..report.bounds import bounds_table

        console.print()
        console.print(bounds_table(judged, args.confidence))
    if args.out:
        console.print(f"wrote {os.path.join(args.out, 'metrics.csv')} and {os.path.join(args.out, 'summary.json')}",
                      highlight=False, markup=False)
    return 0


def _judged_bounds(args: argparse.Namespace, gold: Any, run: Any) -> Any:
    """precision@k and ndcg@k with lower/upper bounds and the corrected estimate (--judged)."""
    from ..data.formats import parse_columns
    from ..data.load import load_gold, load_run
    from ..pooling import bounds, read_calibration, read_judged

    columns = parse_columns(getattr(args, "columns", None))
    g = load_gold(gold, format=args.gold_format, columns=columns)
    r = load_run(run, format=args.run_format, columns=columns)
    labels, failed = read_judged(args.judged, g)
    cal = read_calibration(args.calibration) if args.calibration else None
    return bounds(g, r, labels, k=args.k or 10, calibration=cal, judge_failed=failed, seed=args.seed,
                  n_resamples=args.resamples, confidence=args.confidence, ties=args.ties)


def _sweep_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    from ..data.formats import parse_columns

    return {
        "trec": args.trec,
        "complete": args.complete,
        "level": args.level,
        "doc_sep": args.doc_sep,
        "doc_map": _doc_map_of(args),
        "dedupe": args.dedupe,
        "gold_format": args.gold_format,
        "run_format": args.run_format,
        "ties": args.ties,
        "columns": parse_columns(args.columns),
    }
