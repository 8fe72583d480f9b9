"""Command-line plumbing shared by the commands that run an experiment's what-if (evaluate, compare)."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_enforce_as_of", "freshness_for"]


def add_enforce_as_of(p: argparse.ArgumentParser) -> None:
    p.add_argument("--enforce-as-of", action="store_true",
                   help="freshness what-if: drop retrieved items whose doc_version is newer than the query's as_of "
                        "(gold field), score what is left, and show the change from the run as logged")


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
