"""``rankgate demo``: the whole loop on a built-in corpus with built-in retrievers, in one command.

Indexes the built-in corpus with two retriever configurations (a baseline and a "pull request"),
runs the built-in gold queries, evaluates, compares, runs the gate and writes every output into
``--out``; then prints what it did and what the numbers say. No network, no data of the user's.

Exit codes: 0 when the demo ran, whatever the gate decided (the demo's gate fails by design, and the
text says so); with ``--strict``, the gate's own code (0 pass, 1 fail), as ``rankgate gate`` gives in
CI. 2 for usage errors (e.g. ``--out`` names a folder holding other files).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rankgate._util.constraints import SEED
from rankgate.cli.options import add_param

HELP = "try rankgate: index a built-in corpus, run two retrievers, evaluate, compare and gate them"
DEFAULT_OUT = "rankgate-demo"


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "demo",
        help=HELP,
        description=HELP + ". Needs no network and no data of yours; writes every output into --out "
        "and prints where each one is and what it says.",
    )
    p.add_argument("--out", "-o", default=DEFAULT_OUT, metavar="DIR",
                   help=f"folder for the demo's files (default: {DEFAULT_OUT}); must be new, empty, or an earlier demo's")
    add_param(p, SEED, help="seed of the bootstrap intervals and randomisation tests (default 0); same seed, same files")
    p.add_argument("--strict", action="store_true",
                   help="exit with the gate's code (1: a blocking gate failed, as it does in the demo) instead of 0")


def run(args: argparse.Namespace) -> int:
    import time

    from rankgate.demo import run_demo
    from rankgate.demo.story import render, terminal_width
    from rankgate.errors import UsageError

    if args.seed < 0:
        raise UsageError(f"--seed must be a non-negative integer; got {args.seed}")
    start = time.perf_counter()
    result = run_demo(args.out, seed=args.seed)
    text = render(result, elapsed=time.perf_counter() - start, strict=args.strict, width=terminal_width())
    _write(text)
    return result.gate.exit_code if args.strict else 0


def _write(text: str) -> None:
    try:
        sys.stdout.write(text)
    except UnicodeEncodeError:  # a terminal that cannot show the icons or the minus sign
        encoding = sys.stdout.encoding or "ascii"
        sys.stdout.write(text.encode(encoding, errors="replace").decode(encoding))
    sys.stdout.flush()
