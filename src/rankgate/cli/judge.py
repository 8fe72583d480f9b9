"""``rankgate judge relevance|calibrate|recalibrate|drift``: label a pooling queue 2/1/0, measure a judge against
humans, sample fresh items to measure it again, and say whether its agreement changed.

``relevance QUEUE -o LABELS`` writes one ``{query_id, id, grade}`` line per queue item, in queue
order (a failed call: ``grade: null`` and ``judge_error``), and ``LABELS``' sidecar
``<name>.judge.json`` (the judge's identity, coverage, repeat variance, tokens); both as one unit.
``--dry-run`` prints calls, cache hits, approximate tokens and cost, calls nothing, writes nothing.
``calibrate --human H --judge-labels J [-o FILE]`` prints agreement, weighted κ, sensitivity,
specificity, Spearman and the largest disagreements, and writes the calibration JSON, bound to the judge's
identity, the human labels' hash and a date (``--when``; else the newest label's time; else now).
``recalibrate --answers A | --traces T --corpus C [--n 100] [--stratify F,G] [--seed S] -o QUEUE`` samples
fresh items, stratified, for people to label (docs/judges.md, "Recalibrating"). ``drift OLD NEW [--json]``
prints the change of agreement and κ between two calibrations with intervals and verdicts (exit 0: it reports).
Judge options left out come from ``RANKGATE_JUDGE``, ``RANKGATE_JUDGE_URL``, ``RANKGATE_JUDGE_MODEL`` and
``RANKGATE_JUDGE_KEY_ENV`` when set (as for ``rankgate answers``).
Exit codes: 0 done (also with failed calls: they are rows, counted on stderr), 2 bad input or options.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from rankgate._util.constraints import CONFIDENCE, RESAMPLES, SEED
from rankgate.cli.options import add_gold, add_judge, add_json, add_out, add_param, add_stats, add_when
from rankgate.cli.outputs import Output

HELP = ("label a pooling queue with a judge (relevance), measure a judge against human labels (calibrate), sample "
        "fresh items to measure it again (recalibrate), compare two calibrations (drift)")


def _sidecar(labels: str) -> str:
    from rankgate.judges.files import sidecar_path

    return sidecar_path(labels)


#: What each action writes (:mod:`rankgate.cli.outputs`): ``relevance`` the labels and their sidecar beside them,
#: both or neither; ``calibrate`` the calibration file.
OUTPUTS = {"relevance": {"out": Output("--out", beside=_sidecar)}, "calibrate": {"out": Output("--out")},
           "recalibrate": {"out": Output("--out", required=True)}, "drift": {}}


def add_parser(sub: Any) -> None:
    p = sub.add_parser("judge", help=HELP, description=HELP + ". See docs/judges.md.")
    verbs = p.add_subparsers(dest="judge_command", metavar="ACTION", required=True, parser_class=type(p))
    r = verbs.add_parser("relevance", help="label each item of a pooling queue 2/1/0",
                         description="Label a pooling queue (rankgate pool) 2/1/0 with a judge. Exit 0; 2 bad input.")
    r.add_argument("queue", metavar="QUEUE", help="JSONL of {query_id, query, id, text}, as rankgate pool writes")
    add_out(r, "labels JSONL ({query_id, id, grade}); required unless --dry-run", metavar="FILE")
    add_judge(r, repeats="to measure the judge's variance")
    c = verbs.add_parser("calibrate", help="agreement, weighted kappa, sensitivity/specificity against human labels",
                         description="Compare judge labels with human labels on the same items. Exit 0; 2 bad input.")
    c.add_argument("--human", required=True, metavar="JSONL", help="human labels {query_id, id, grade}")
    c.add_argument("--judge-labels", required=True, metavar="JSONL", help="the judge's labels (rankgate judge relevance -o)")
    add_out(c, "write the calibration JSON here", metavar="FILE")
    c.add_argument("--task", default="context_relevance", help="the task the labels are for (default context_relevance)")
    c.add_argument("--relevant-at", type=int, default=1, choices=(1, 2),
                   help="grade from which an item counts as relevant for sensitivity/specificity (default 1)")
    c.add_argument("--weights", choices=("linear", "quadratic", "none"), default="linear",
                   help="kappa weights for graded labels (default linear)")
    add_param(c, CONFIDENCE, help="interval level (default 0.95)")
    add_param(c, RESAMPLES, help="bootstrap resamples for kappa's interval (default 2000)")
    add_param(c, SEED, help="bootstrap seed (default 0)")
    c.add_argument("--minimum", type=int, default=100, help="items below which a note says the sample is small (default 100)")
    add_when(c)
    _add_recalibrate(verbs)
    d = verbs.add_parser("drift", help="did the judge's agreement with people change between two calibrations?",
                         description="The change of agreement and kappa from OLD to NEW (two calibration files of one "
                                     "task), with intervals and a verdict in words. It reports: exit 0; 2 bad input.")
    d.add_argument("old", metavar="OLD", help="the earlier calibration file (rankgate judge calibrate -o)")
    d.add_argument("new", metavar="NEW", help="the later calibration file")
    add_stats(d, seed_help="bootstrap seed (default 0)")
    add_json(d, "print the drift as JSON on stdout instead of the text")


def _add_recalibrate(verbs: Any) -> None:
    from rankgate.flows.judge import RECALIBRATE_TASKS
    from rankgate.traces.formats.table import FORMAT_NAMES

    r = verbs.add_parser("recalibrate", help="sample fresh items (answers or recent production) for people to label",
                         description="Sample fresh items, stratified, into a queue for people to label, to calibrate the "
                                     "judge again (docs/judges.md). Exit 0; 2 bad input.")
    src = r.add_mutually_exclusive_group(required=True)
    src.add_argument("--answers", metavar="PATH", help="answers with their packed contexts (as rankgate answers reads)")
    src.add_argument("--traces", nargs="+", metavar="PATH", help="trace exports: recent production requests")
    r.add_argument("--task", choices=RECALIBRATE_TASKS, default="context_relevance",
                   help="what people will label: each (question, chunk) 2/1/0 (context_relevance, the default) or "
                        "each answer faithful/correct (faithfulness; with --answers)")
    r.add_argument("--n", type=int, default=100, help="how many items (default 100)")
    r.add_argument("--stratify", metavar="FIELDS", default=None,
                   help="comma-separated fields whose values split the items into strata, each sampled in proportion "
                        "(at least one item each): gold fields with --answers (needs --gold); request fields "
                        "(tenant, surface, data_source, conversation_id, index_version, corpus_version) or source with "
                        "--traces (default there: tenant)")
    add_param(r, SEED, help="the sampling seed (default 0)")
    add_gold(r, required=False, help="with --answers: the gold set, for its fields (--stratify) and question texts")
    r.add_argument("--corpus", metavar="PATH", help="the corpus manifest holding the texts of items logged as ids "
                                                    "(required with --traces)")
    r.add_argument("--days", type=int, default=30,
                   help="with --traces: requests within this many days of the newest request (default 30)")
    r.add_argument("--depth", type=int, default=5,
                   help="relevance items taken per answer or request: its first contexts (default 5)")
    r.add_argument("--traces-format", choices=FORMAT_NAMES, metavar="FORMAT",
                   help="override the traces' format detection: %(choices)s")
    add_out(r, "the queue to write (JSONL)", required=True, metavar="JSONL")


def request(args: argparse.Namespace) -> Any:
    """The flow's request the options describe: a RelevanceRequest or a CalibrationRequest."""
    from rankgate.flows.judge import JudgeSpec
    from rankgate.flows.judge import CalibrationRequest, RelevanceRequest

    if args.judge_command == "recalibrate":
        from rankgate.flows.judge import RecalibrateRequest

        return RecalibrateRequest(answers=args.answers, traces=tuple(args.traces or ()), n=args.n,
                                  stratify=tuple(f.strip() for f in (args.stratify or "").split(",") if f.strip()),
                                  seed=args.seed, task=args.task, gold=args.gold, corpus=args.corpus, days=args.days,
                                  depth=args.depth, traces_format=args.traces_format)
    if args.judge_command == "drift":
        from rankgate.flows.judge import DriftRequest

        return DriftRequest(args.old, args.new, confidence=args.confidence, resamples=args.resamples, seed=args.seed)
    if args.judge_command == "relevance":
        spec = JudgeSpec(backend=args.judge, url=args.judge_url, model=args.judge_model, key_env=args.judge_key_env,
                         cache=args.cache, use_cache=not args.no_cache, refresh=args.refresh, workers=args.workers,
                         timeout=args.timeout, seed=args.seed, retries=args.retries, max_calls=args.max_calls,
                         max_reply_bytes=args.max_reply_bytes, progress=True)
        return RelevanceRequest(args.queue, judge=spec, repeats=args.repeats, price_in=args.price_in,
                                price_out=args.price_out)
    return CalibrationRequest(args.human, args.judge_labels, task=args.task, relevant_at=args.relevant_at,
                              weights=args.weights, confidence=args.confidence, resamples=args.resamples,
                              seed=args.seed, when=args.when)


def run(args: argparse.Namespace) -> int:
    req = request(args)
    action = {"relevance": _relevance, "calibrate": _calibrate, "recalibrate": _recalibrate, "drift": _drift}
    return action[args.judge_command](args, req)


def _recalibrate(args: argparse.Namespace, req: Any) -> int:
    from rankgate.cli.outputs import check_outputs
    from rankgate.flows.judge import run_recalibrate
    from rankgate.render.judge import render_recalibrate

    planned = check_outputs(args, OUTPUTS["recalibrate"], req)
    done = run_recalibrate(req)
    planned.write({args.out: "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in done.records)})
    sys.stdout.write(render_recalibrate(done, out=args.out, task=req.task))
    return 0


def _drift(args: argparse.Namespace, req: Any) -> int:
    from rankgate.flows.judge import run_drift
    from rankgate.render.judge import render_drift

    found = run_drift(req)
    if args.json:
        sys.stdout.write(json.dumps(found.to_dict(), indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(render_drift(found.to_dict()))
    return 0


def _relevance(args: argparse.Namespace, req: Any) -> int:
    from rankgate.cli.outputs import check_outputs
    from rankgate.errors import UsageError
    from rankgate.flows.judge import plan_relevance, run_relevance
    from rankgate.judges import BUDGET_REACHED
    from rankgate.render.judge import render_plan

    if not args.out and not args.dry_run:
        raise UsageError("give -o/--out FILE for the labels (or --dry-run to see what it would cost)")
    outputs = check_outputs(args, OUTPUTS["relevance"], req)
    if args.dry_run:
        planned = plan_relevance(req)
        sys.stdout.write(render_plan([planned.plan], planned.identity, price_in=req.price_in, price_out=req.price_out,
                                     max_calls=planned.max_calls))
        return 0
    done = run_relevance(req)
    rows, meta = done.rows, done.meta
    outputs.write({args.out: "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                   _sidecar(args.out): json.dumps(meta, indent=2, ensure_ascii=False) + "\n"})
    print(f"wrote {args.out}: {meta['labelled']} of {len(rows)} items labelled by {meta['judge']['model']}"
          f" ({meta['cache_hits']} from the cache)", file=sys.stderr)
    if "cost" in meta:
        print(f"cost: {meta['cost']:,.4f} for {meta['tokens']['prompt']:,} prompt and "
              f"{meta['tokens']['completion']:,} completion tokens the server reported", file=sys.stderr)
    if "spend" in meta:
        from rankgate.render.judge import spend_line

        print(spend_line(meta["spend"]), file=sys.stderr)
    for warning in done.warnings:
        print(f"rankgate judge relevance: {warning}", file=sys.stderr)
    failed = [r for r in rows if r["grade"] is None and r.get("judge_error") != BUDGET_REACHED]
    if failed:  # (items the budget left out were said in the warning above)
        print(f"judge failed on {len(failed)} items (rows with judge_error), e.g. {failed[0]['query_id']} / "
              f"{failed[0]['id']}: {failed[0]['judge_error']}", file=sys.stderr)
    if req.repeats > 1:
        variance = done.variance
        share = "n/a" if variance.items == 0 else f"{variance.share:.1%}"
        print(f"repeat variance: {variance.changed} of {variance.items} items changed label across "
              f"{req.repeats} samples ({share})", file=sys.stderr)
    return 0


def _calibrate(args: argparse.Namespace, req: Any) -> int:
    from rankgate.cli.outputs import check_outputs
    from rankgate.flows.judge import run_calibration
    from rankgate.render.judge import render_calibration

    planned = check_outputs(args, OUTPUTS["calibrate"], req)
    body = run_calibration(req)
    sys.stdout.write(render_calibration(body, minimum=args.minimum))
    if body["not_judged"]:
        print(f"{body['not_judged']} human-labelled items have no judge label ({body['judge_errors']} judge errors); "
              f"they are left out", file=sys.stderr)
    if args.out:
        planned.write({args.out: json.dumps({"calibration": body}, indent=2, ensure_ascii=False) + "\n"})
        print(f"wrote {args.out}", file=sys.stderr)
    return 0
