"""Command-line plumbing shared by the commands that run an experiment's what-if (evaluate, compare)."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["components_for", "freshness_for"]


def freshness_for(args: argparse.Namespace, gold: Any, run: Any) -> Any:
    """The freshness what-if of ``run`` (a path or a loaded run) on ``gold`` with the command's options."""
    from ..data.formats import parse_columns
    from ..data.load import load_gold, load_run
    from ..data.models import Gold, Run
    from ..experiments.freshness import freshness_what_if
    from .evaluate import evaluate_from_args

    columns = parse_columns(getattr(args, "columns", None))
    g = gold if isinstance(gold, Gold) else load_gold(gold, format=args.gold_format, columns=columns)
    r = run if isinstance(run, Run) else load_run(run, format=args.run_format, columns=columns)
    return freshness_what_if(g, r, lambda g_, r_: evaluate_from_args(args, r_, g_, warn=False),
                             by=list(getattr(args, "by", None) or []), seed=args.seed,
                             n_resamples=args.resamples, confidence=args.confidence)


def components_for(args: argparse.Namespace, gold: Any, run: Any) -> dict[str, Any]:
    """The routing and entity-linking analyses the options ask for: name -> result."""
    if not (getattr(args, "routing", False) or getattr(args, "entity_linking", False)):
        return {}
    from ..data.formats import parse_columns
    from ..data.load import load_gold, load_run
    from ..data.models import Gold, Run
    from .evaluate import evaluate_from_args

    columns = parse_columns(getattr(args, "columns", None))
    g = gold if isinstance(gold, Gold) else load_gold(gold, format=args.gold_format, columns=columns)
    r = run if isinstance(run, Run) else load_run(run, format=args.run_format, columns=columns)
    k = args.k or 5
    recall = evaluate_from_args(argparse.Namespace(**{**vars(args), "metrics": f"recall@{k}"}), r, g, warn=False)
    stats = {"seed": args.seed, "n_resamples": args.resamples, "confidence": args.confidence}
    out: dict[str, Any] = {}
    if getattr(args, "routing", False):
        from ..experiments.routing import routing_analysis

        out["routing"] = routing_analysis(g, r, recall, k=k, **stats)
    if getattr(args, "entity_linking", False):
        from ..experiments.linking import linking_analysis

        out["entity_linking"] = linking_analysis(g, r, recall, k=k, by=list(getattr(args, "by", None) or []), **stats)
    return out
