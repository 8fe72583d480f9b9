"""``rankgate evaluate``: score a run against a gold set."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from ..flows.evaluate import DEFAULT_METRICS, load_doc_map  # noqa: F401 - load_doc_map: where callers find it

HELP = "score a run against a gold set: terminal table, metrics.csv, summary.json"


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


def check_stats_args(args: argparse.Namespace) -> None:
    """--seed, --resamples and --confidence, checked as every flow checks them."""
    statistics(args)


def statistics(args: argparse.Namespace) -> Any:
    """The --seed, --resamples and --confidence options, as the flows take them."""
    from ..flows.evaluate import Statistics

    return Statistics(seed=args.seed, resamples=args.resamples, confidence=args.confidence)


def scoring(args: argparse.Namespace, **overrides: Any) -> Any:
    """The options of :func:`add_input_options`, as the flows take them (``overrides`` replace some)."""
    from ..flows.evaluate import Scoring

    options = {"metrics": args.metrics, "k": args.k, "trec": args.trec, "complete": args.complete, "level": args.level,
               "doc_sep": args.doc_sep, "doc_map": args.doc_map, "dedupe": args.dedupe, "gold_format": args.gold_format,
               "run_format": args.run_format, "ties": args.ties, "columns": args.columns}
    return Scoring(**{**options, **overrides})


def _import_reporting() -> None:
    """What the command needs after evaluating, imported while the inputs are parsed (pyarrow's
    readers release the GIL, so this thread runs alongside them)."""
    import rich.console  # noqa: F401

    from .. import stats  # noqa: F401
    from ..report import exports, terminal  # noqa: F401


OUT_FILES = ("metrics.csv", "summary.json")


def request(args: argparse.Namespace) -> Any:
    """The evaluation the options ask for."""
    from ..flows.evaluate import EvaluateRequest

    stats = statistics(args)
    metrics = args.metrics
    if args.layout == "v0":  # the v0 layout's columns need its metrics
        from ..metrics import parse_metrics
        from ..report.layout_v0 import v0_metrics

        wanted = [str(m) for m in parse_metrics(metrics)]
        metrics = ",".join(wanted + [m for m in v0_metrics(args.k or 5) if m not in wanted])
    return EvaluateRequest(args.gold, args.run, scoring(args, metrics=metrics), stats, by=tuple(args.by),
                           sweep=args.sweep, ks=args.ks, enforce_as_of=args.enforce_as_of, routing=args.routing,
                           entity_linking=args.entity_linking, judged=args.judged, calibration=args.calibration)


def say(command: str) -> Any:
    """A warning callback: ``rankgate COMMAND: line`` on stderr."""
    return lambda line: print(f"rankgate {command}: {line}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    req = request(args)
    v0 = args.layout == "v0"
    if args.out:
        from ..atomic import check_folder, check_not_input

        check_folder(args.out, OUT_FILES, option="--out")
        for name in OUT_FILES:
            check_not_input(os.path.join(args.out, name), (args.gold, args.run, args.doc_map), option="--out")
    import threading

    warm = threading.Thread(target=_import_reporting, daemon=True)
    warm.start()
    from ..flows.evaluate import run_evaluation

    csv: list[str] = []

    def write_csv(result: Any) -> None:  # while the intervals are drawn
        if args.out:
            warm.join()
            from ..report.exports import metrics_csv
            from ..report.layout_v0 import v0_metrics_csv

            csv.append(v0_metrics_csv(result) if v0 else metrics_csv(result))

    evaluation = run_evaluation(req, on_warning=say("evaluate"), meanwhile=write_csv)
    warm.join()
    from ..report.exports import summary_dict, summary_json
    from ..report.sections import summary_parts

    if v0:
        from ..report.layout_v0 import v0_summary

        summary = v0_summary(evaluation.result, cis=evaluation.cis, extra=summary_parts(evaluation))
    else:
        summary = summary_dict(evaluation.result, cis=evaluation.cis, extra=summary_parts(evaluation))
    if args.out:
        from ..atomic import write_files

        # Both files or neither: a summary.json beside another run's metrics.csv would mislead.
        write_files({os.path.join(args.out, "metrics.csv"): csv[0] if csv else "",
                     os.path.join(args.out, "summary.json"): summary_json(summary)})
    if args.json:
        sys.stdout.write(summary_json(summary))
    elif args.markdown:
        sys.stdout.write(_markdown(evaluation))
    else:
        _print(evaluation, args.out)
    return 0


def _markdown(ev: Any) -> str:
    from ..report.markdown import evaluation_markdown
    from ..report.sections import sections_markdown

    return "\n".join([evaluation_markdown(ev.result, ev.cis, ev.confidence), *sections_markdown(ev)])


def _print(ev: Any, out: str | None) -> None:
    from rich.console import Console

    from ..report.sections import sections_renderables
    from ..report.terminal import print_evaluation

    console = Console()
    print_evaluation(ev.result, ev.cis, ev.confidence, console=console)
    for part in sections_renderables(ev):
        console.print()
        console.print(part)
    if out:
        console.print(f"wrote {os.path.join(out, 'metrics.csv')} and {os.path.join(out, 'summary.json')}",
                      highlight=False, markup=False)
