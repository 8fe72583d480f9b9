"""``rankgate judge relevance|calibrate``: label a pooling queue 2/1/0, and measure a judge against humans.

``relevance QUEUE -o LABELS`` writes one ``{query_id, id, grade}`` line per queue item, in queue
order (a failed call: ``grade: null`` and ``judge_error``), and ``LABELS``' sidecar
``<name>.judge.json`` (the judge's identity, coverage, repeat variance, tokens); both as one unit.
``--dry-run`` prints calls, cache hits, approximate tokens and cost, calls nothing, writes nothing.
``calibrate --human H --judge-labels J [-o FILE]`` prints agreement, weighted κ, sensitivity,
specificity, Spearman and the largest disagreements, and writes the calibration JSON.
Judge options left out come from ``RANKGATE_JUDGE``, ``RANKGATE_JUDGE_URL``, ``RANKGATE_JUDGE_MODEL`` and
``RANKGATE_JUDGE_KEY_ENV`` when set (as for ``rankgate answers``).
Exit codes: 0 done (also with failed calls: they are rows, counted on stderr), 2 bad input or options.

:func:`open_judge_from_args` builds the client from the judge options (:func:`.options.add_judge`).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from dataclasses import replace
from typing import Any

from ..constraints import CONFIDENCE, RESAMPLES, SEED, check
from ..flows._common import budget_warning
from .options import add_judge, add_out, add_param, check_judge_counts

ENV = {"judge": "RANKGATE_JUDGE", "judge_url": "RANKGATE_JUDGE_URL", "judge_model": "RANKGATE_JUDGE_MODEL",
       "judge_key_env": "RANKGATE_JUDGE_KEY_ENV"}
HELP = "label a pooling queue with a judge (relevance), or measure a judge against human labels (calibrate)"


def open_judge_from_args(args: argparse.Namespace) -> Any:
    """The judge client the options describe (UsageError on a bad combination, before any call)."""
    import os

    from ..errors import UsageError
    from ..judges import open_judge

    given = args.judge_url or args.judge_model
    for name, env in ENV.items():  # options first, then the environment (as rankgate answers does)
        if getattr(args, name, None) is None:
            setattr(args, name, os.environ.get(env) or None)
    args.judge = args.judge or "lexical"
    if args.no_cache and args.refresh:
        raise UsageError("--no-cache and --refresh contradict each other: --refresh writes the cache")
    check_judge_counts(args)
    if args.judge == "lexical":
        if given:
            raise UsageError("--judge-url/--judge-model are for --judge openai (or your own judge); "
                             "the lexical judge calls no model")
        args.judge_url = args.judge_model = args.judge_key_env = None  # the environment's, not for this judge
    for name in ("price_in", "price_out"):
        value = getattr(args, name, None)
        if value is not None and not value >= 0:
            raise UsageError(f"--{name.replace('_', '-')} must be a price >= 0 per 1M tokens; got {value}")
    return open_judge(args.judge, url=args.judge_url, model=args.judge_model, key_env=args.judge_key_env,
                      cache_dir=args.cache, use_cache=not args.no_cache, refresh=args.refresh,
                      workers=args.workers, timeout_s=args.timeout, seed=args.seed, retries=args.retries,
                      progress=True, max_calls=getattr(args, "max_calls", None),
                      max_reply_bytes=args.max_reply_bytes)


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


def run(args: argparse.Namespace) -> int:
    return _relevance(args) if args.judge_command == "relevance" else _calibrate(args)


def _majority(labels: list[int]) -> int:
    counts = Counter(labels)
    top = max(counts.values())
    return min(g for g, c in counts.items() if c == top)  # ties: the lower grade


def _relevance(args: argparse.Namespace) -> int:
    from ..atomic import check_file, check_not_input, write_files
    from ..errors import UsageError
    from ..judges import BUDGET_REACHED, JudgeItem, coverage, repeat_variance
    from ..judges.files import read_queue, sidecar_path
    from ..report.judge import render_plan

    check_judge_counts(args)
    if not args.out and not args.dry_run:
        raise UsageError("give -o/--out FILE for the labels (or --dry-run to see what it would cost)")
    if args.out:
        check_file(args.out, option="--out")
        check_not_input(args.out, (args.queue,), option="--out")
        check_file(sidecar_path(args.out), option="--out")
    queue = read_queue(args.queue)
    items = [JudgeItem(f"{q.query_id}\x1f{q.id}", {"question": q.query, "passage": q.text}) for q in queue]
    with open_judge_from_args(args) as judge:
        if args.dry_run:
            plan = judge.plan("context_relevance", items, repeats=args.repeats)
            sys.stdout.write(render_plan([plan], judge.identity(), price_in=args.price_in, price_out=args.price_out,
                                         max_calls=judge.max_calls))
            return 0
        judge.check_reachable()
        out = judge.run("context_relevance", items, repeats=args.repeats)
        identity, stats = judge.identity(), dict(judge.stats)
        warning = budget_warning(judge, "rankgate judge relevance")
    rows = []
    for n, q in enumerate(queue):
        samples = out[n * args.repeats:(n + 1) * args.repeats]
        grades = [int(s.label) for s in samples if s.error is None and s.label is not None]
        row: dict[str, Any] = {"query_id": q.query_id, "id": q.id, "grade": _majority(grades) if grades else None}
        if not grades:
            row["judge_error"] = samples[0].error
        if args.repeats > 1:
            row["grades"] = [s.label for s in samples]
        rows.append(row)
    ok, total = coverage(out)
    labelled = sum(1 for r in rows if r["grade"] is not None)
    variance = repeat_variance(out)
    meta = {"judge": identity, "task": "context_relevance", "queue": args.queue, "items": len(rows),
            "labelled": labelled, "coverage": labelled / len(rows) if rows else None, "calls": total,
            "failed_calls": total - ok, "repeats": args.repeats,
            "repeat_variance": None if args.repeats == 1 else {"items": variance.items, "changed": variance.changed,
                                                               "share": None if variance.items == 0 else variance.share},
            "cache_hits": stats["cache_hits"], "tokens": {"prompt": stats["prompt_tokens"],
                                                          "completion": stats["completion_tokens"]}}
    if args.max_calls is not None:  # (only then: the sidecar of a run without it is unchanged)
        meta["call_budget"] = {"max_calls": args.max_calls, "not_called": stats["over_budget"]}
    if args.price_in is not None or args.price_out is not None:  # from the usage the server reported
        meta["cost"] = round((stats["prompt_tokens"] * (args.price_in or 0.0)
                              + stats["completion_tokens"] * (args.price_out or 0.0)) / 1e6, 6)
    write_files({args.out: "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                 sidecar_path(args.out): json.dumps(meta, indent=2, ensure_ascii=False) + "\n"})
    print(f"wrote {args.out}: {labelled} of {len(rows)} items labelled by {identity['model']}"
          f" ({stats['cache_hits']} from the cache)", file=sys.stderr)
    if "cost" in meta:
        print(f"cost: {meta['cost']:,.4f} for {stats['prompt_tokens']:,} prompt and {stats['completion_tokens']:,} "
              f"completion tokens the server reported", file=sys.stderr)
    if warning:
        print(f"rankgate judge relevance: {warning}", file=sys.stderr)
    failed = [r for r in rows if r["grade"] is None and r.get("judge_error") != BUDGET_REACHED]
    if failed:  # (items the budget left out were said in the warning above)
        print(f"judge failed on {len(failed)} items (rows with judge_error), e.g. {failed[0]['query_id']} / "
              f"{failed[0]['id']}: {failed[0]['judge_error']}", file=sys.stderr)
    if args.repeats > 1:
        share = "n/a" if variance.items == 0 else f"{variance.share:.1%}"
        print(f"repeat variance: {variance.changed} of {variance.items} items changed label across "
              f"{args.repeats} samples ({share})", file=sys.stderr)
    return 0


def _calibrate(args: argparse.Namespace) -> int:
    import os

    from ..agreement import calibrate
    from ..atomic import check_file, check_not_input, write_text
    from ..errors import InputError
    from ..judges.files import file_sha256, read_labels, sidecar_path
    from ..report.judge import render_calibration

    check(CONFIDENCE, args.confidence, option="--confidence")
    check(replace(RESAMPLES, minimum=1), args.resamples, option="--resamples")  # kappa's interval needs one
    check(SEED, args.seed, option="--seed")
    if args.out:
        check_file(args.out, option="--out")
        check_not_input(args.out, (args.human, args.judge_labels), option="--out")
    human, _ = read_labels(args.human)
    judged, errors = read_labels(args.judge_labels)
    keys = sorted(k for k in human if k in judged)
    if not keys:
        raise InputError(f"no item has both a human label and a judge label (human file has {len(human)}, "
                         f"judge file {len(judged)} labelled items)", path=args.judge_labels,
                         hint="label the same queue items: match query_id and id")
    identity = None
    side = sidecar_path(args.judge_labels)
    if os.path.isfile(side):
        try:
            with open(side, encoding="utf-8") as fh:
                identity = json.load(fh).get("judge")
        except (OSError, ValueError, AttributeError):
            raise InputError("is not the judge sidecar JSON rankgate judge relevance writes", path=side) from None
    cal = calibrate(keys, [human[k] for k in keys], [judged[k] for k in keys], task=args.task,
                    relevant_at=args.relevant_at, weights=None if args.weights == "none" else args.weights,
                    confidence=args.confidence, n_resamples=args.resamples, seed=args.seed)
    body = cal.to_dict()
    body.update({"judge": identity, "human": f"sha256:{file_sha256(args.human)}",
                 "judge_labels": f"sha256:{file_sha256(args.judge_labels)}",
                 "not_judged": sum(1 for k in human if k not in judged),
                 "judge_errors": sum(1 for k in human if k in errors)})
    sys.stdout.write(render_calibration(body, minimum=args.minimum))
    if body["not_judged"]:
        print(f"{body['not_judged']} human-labelled items have no judge label ({body['judge_errors']} judge errors); "
              f"they are left out", file=sys.stderr)
    if args.out:
        write_text(args.out, json.dumps({"calibration": body}, indent=2, ensure_ascii=False) + "\n")
        print(f"wrote {args.out}", file=sys.stderr)
    return 0
