"""What the commands that run the evaluate, compare and report flows share: the options of
:mod:`rankgate.cli.options` as the flows' :class:`~rankgate.flows.evaluate.Scoring` and
:class:`~rankgate.flows.evaluate.Statistics`, and the warning callback that says a flow's lines on stderr."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["say", "scoring", "statistics"]


def statistics(args: argparse.Namespace) -> Any:
    """``--seed``, ``--resamples`` and ``--confidence`` as the flows take them (checked when built)."""
    from rankgate.flows.evaluate import Statistics

    return Statistics(seed=args.seed, resamples=args.resamples, confidence=args.confidence)


def scoring(args: argparse.Namespace, **overrides: Any) -> Any:
    """The options of :func:`~rankgate.cli.options.add_input_options` as the flows take them
    (``overrides`` replace some)."""
    from rankgate.cli.options import record_fields
    from rankgate.flows.evaluate import Scoring

    options = {"metrics": args.metrics, "k": args.k, "trec": args.trec, "complete": args.complete, "level": args.level,
               "doc_sep": args.doc_sep, "doc_map": args.doc_map, "dedupe": args.dedupe, "gold_format": args.gold_format,
               "run_format": args.run_format, "ties": args.ties, "columns": args.columns,
               "fields": record_fields(args, args.command)}
    return Scoring(**{**options, **overrides})


def say(command: str) -> Callable[[str], None]:
    """A flow's warning callback: ``rankgate COMMAND: line`` on stderr."""
    return lambda line: print(f"rankgate {command}: {line}", file=sys.stderr)
