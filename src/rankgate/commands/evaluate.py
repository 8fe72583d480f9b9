"""``rankgate evaluate``: score a run against a gold set."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from .options import (
    add_component_options,
    add_enforce_as_of,
    add_input_options,
    add_out,
    add_run,
    add_stats,
    check_stats_args,
)

HELP = "score a run against a gold set: terminal table, metrics.csv, summary.json"
def add_parser(sub: Any) -> None:
    p = sub.add_parser("evaluate", help=HELP, description=HELP + ".")
    add_input_options(p)
    add_run(p)
    add_out(p, "write metrics.csv and summary.json into DIR")
    p.add_argument("--layout", choices=("default", "v0"), default="default",
                   help="layout of metrics.csv and summary.json: default, or v0 (the metrics spec's columns and "
                        "quality/operational/privacy summary; see docs/outputs.md)")
    p.add_argument("--by", action="append", default=[], metavar="FIELD",
                   help="also break means down by a gold field or tag (intent, lang, tags.tier…); repeatable")
    p.add_argument("--sweep", metavar="METRICS", help="k-sweep of these metrics (e.g. recall,ndcg) over --ks")
    p.add_argument("--ks", default="1,3,5,10,20", metavar="KS", help="cutoffs for --sweep (default 1,3,5,10,20)")
    add_enforce_as_of(p)
    add_component_options(p)
    p.add_argument("--judged", metavar="LABELS",
                   help="judge (or human) labels of items the gold set lacks, JSONL {query_id, id, grade} (from "
                        "`rankgate pool` + `rankgate judge relevance`): also report precision@k and ndcg@k as gold only "
                        "(lower bound) and gold + judge (upper bound), k = --k (default 10)")
    p.add_argument("--calibration", metavar="JSON",
                   help="with --judged: the judge's calibration file (rankgate judge calibrate) for the Rogan-Gladen "
                        "corrected estimate between the bounds")
    add_stats(p)
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
