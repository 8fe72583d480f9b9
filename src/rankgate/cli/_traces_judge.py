"""``rankgate traces judge``: a stratified sample of production requests judged within a call budget, estimated per
stratum, window and segment with design-weighted intervals (prediction-powered with human labels), written as the
trace signals ``traces check --judge-dir`` monitors (see :mod:`rankgate.traces.judge` and docs/traces.md, "judge").
Exit 0; 2 bad input or options (a first round of calls over ``--max-calls`` included: nothing is sent).

``rankgate traces`` wires the action with :func:`add_parser`; :func:`run` is its command.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from rankgate._util.constraints import CONFIDENCE, SEED
from rankgate.cli.options import add_judge, add_out, add_param, add_trace_field, trace_fields
from rankgate.cli.outputs import Output

HELP = "judge a stratified sample of production requests (context relevance, faithfulness) within a call budget"
OUT_FILES = ("summary.json", "signals.csv", "judged.jsonl", "queue.jsonl", "answers_queue.jsonl")
#: What the action writes (:mod:`rankgate.cli.outputs`): every file into ``--out``, or none (the dry run).
OUTPUTS = {"out": Output("--out", files=OUT_FILES)}


def add_parser(verbs: Any) -> None:
    from rankgate.traces.formats.table import FORMAT_NAMES  # (the parser imports no pyarrow: the names are said here)

    p = verbs.add_parser("judge", help=HELP, description=HELP + ": estimates per stratum, window and segment with "
                         "design-weighted intervals, written as the trace signals judge.context_relevance and "
                         "judge.faithfulness for 'traces check --judge-dir'. Exit 0; 2 bad input (also a sample whose "
                         "first calls pass --max-calls: nothing is sent). See docs/traces.md.")
    p.add_argument("--traces", required=True, nargs="+", metavar="PATH", help="trace exports: files or folders")
    p.add_argument("--traces-format", dest="format", choices=FORMAT_NAMES, metavar="FORMAT",
                   help="override format detection: %(choices)s")
    p.add_argument("--on-error", choices=("error", "skip"), default="error",
                   help="a trace row that cannot be used: stop (default) or skip it and count it")
    p.add_argument("--field-map", metavar="YAML", help="where the export keeps each field, as a file (docs/traces.md)")
    add_trace_field(p)
    p.add_argument("--sample", type=int, required=True, metavar="N",
                   help="how many requests to judge, over every stratum (two per stratum at least, the rest in "
                        "proportion to the strata's traffic)")
    p.add_argument("--stratify", default="source", metavar="FIELDS",
                   help="fields whose values cut each window's requests into strata, comma-separated: tenant, "
                        "surface, data_source, conversation_id, index_version, corpus_version, source (the source of the "
                        "first context item; the default); '' for the window alone")
    p.add_argument("--tasks", default="context_relevance,faithfulness", metavar="TASKS",
                   help="what the judge measures, comma-separated: context_relevance (each context item against the "
                        "query), faithfulness (the logged answer against its context) (default both)")
    p.add_argument("--window", default="1d", metavar="SPAN",
                   help="window width of the strata and the signals: 15m, 1h, 1d (default), 1w (as traces check's)")
    add_param(p, SEED, help="the sampling seed (default 0): requests are taken in the order of md5(seed:request_id)")
    p.add_argument("--depth", type=int, default=5, metavar="N",
                   help="context items judged per request: its first N by rank (default 5)")
    p.add_argument("--human", nargs="+", metavar="JSONL",
                   help="human labels of some sampled requests (rankgate label export of queue.jsonl or "
                        "answers_queue.jsonl): the estimates are prediction-powered where they cover a stratum")
    p.add_argument("--corpus", metavar="MANIFEST",
                   help="corpus manifest: the texts of context items the traces log as ids only")
    p.add_argument("--faithful-min", type=float, default=0.8,
                   help="an answer is faithful when this share of its statements is supported (default 0.8)")
    add_param(p, CONFIDENCE, help="the intervals' confidence level (default 0.95)")
    p.add_argument("--engine", choices=("duckdb", "spark"), default="duckdb",
                   help="where the sample is drawn (default duckdb)")
    p.add_argument("--spark-master", metavar="URL", help="with --engine spark: local[2] (default), spark://…, yarn")
    add_judge(p, seed="--judge-seed")
    add_out(p, "the folder to write summary.json, signals.csv, judged.jsonl and the labelling queues into; "
               "required unless --dry-run")


def _names(text: str | None) -> tuple[str, ...]:
    return tuple(x.strip() for x in (text or "").split(",") if x.strip())


def request(args: argparse.Namespace) -> Any:
    from rankgate.flows._common import JudgeSpec
    from rankgate.flows.traces_judge import TracesJudgeRequest

    spec = JudgeSpec(backend=args.judge, url=args.judge_url, model=args.judge_model, key_env=args.judge_key_env,
                     cache=args.cache, use_cache=not args.no_cache, refresh=args.refresh, workers=args.workers,
                     timeout=args.timeout, seed=args.judge_seed, retries=args.retries, max_calls=args.max_calls,
                     max_reply_bytes=args.max_reply_bytes, progress=True)
    return TracesJudgeRequest(tuple(args.traces), args.sample, judge=spec, stratify=_names(args.stratify),
                              tasks=_names(args.tasks), window=args.window, seed=args.seed, depth=args.depth,
                              human=tuple(args.human or ()), corpus=args.corpus, confidence=args.confidence,
                              faithful_min=args.faithful_min, engine=args.engine, spark_master=args.spark_master,
                              format=args.format, on_error=args.on_error, field_map=args.field_map,
                              fields=trace_fields(args), price_in=args.price_in, price_out=args.price_out)


def run(args: argparse.Namespace) -> int:
    from rankgate.cli.options import check_judge_counts
    from rankgate.cli.outputs import check_outputs
    from rankgate.errors import UsageError

    check_judge_counts(args)
    if not args.out and not args.dry_run:
        raise UsageError("give -o/--out DIR for the estimates (or --dry-run to see what the sample would cost)")
    req = request(args)
    planned = check_outputs(args, OUTPUTS, req)
    if args.dry_run:
        from rankgate.flows.traces_judge import plan_traces_judge
        from rankgate.render.traces_judge import judge_dry_run

        sys.stdout.write(judge_dry_run(plan_traces_judge(req), price_in=req.price_in, price_out=req.price_out))
        return 0
    from rankgate.flows.traces_judge import run_traces_judge
    from rankgate.render import traces_judge as render

    done = run_traces_judge(req)
    from rankgate._util import progress

    with progress.stage(f"writing {args.out}"):
        planned.write({os.path.join(args.out, "summary.json"): render.judge_summary_json(done, req.confidence),
                       os.path.join(args.out, "signals.csv"): render.judge_signals_csv(done),
                       os.path.join(args.out, "judged.jsonl"): render.judged_jsonl(done),
                       os.path.join(args.out, "queue.jsonl"): render.relevance_queue_jsonl(done),
                       os.path.join(args.out, "answers_queue.jsonl"): render.answers_queue_jsonl(done)})
    sys.stdout.write(render.judge_lines(done, req.confidence, args.out))
    return 0
