"""``rankgate calibrate-abstention``: learn the top-score threshold under which retrieval should abstain,
from the gold set, with a one-sided Clopper–Pearson guarantee on precision (hit@k among answered
queries). Writes the abstention YAML that ``rankgate traces`` reads for its low-confidence signal
and ``rankgate report --abstention`` charts. Exit 0: a threshold was found; 1: no threshold reaches
the target (the file is written with ``threshold: null`` and the curve); 2: bad input or options.
See docs/traces.md, "calibrate-abstention".
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rankgate.cli.options import add_formats, add_gold, add_out, add_run
from rankgate.cli.outputs import Output

HELP = "learn the top-score threshold under which retrieval should abstain, for a target precision (gold set + run)"


#: What the command writes (:mod:`rankgate.cli.outputs`).
OUTPUTS = {"out": Output("-o", required=True)}


def add_parser(sub: Any) -> None:
    p = sub.add_parser("calibrate-abstention", help=HELP,
                       description=HELP + ". Exit 0 found; 1 no threshold reaches the target; 2 bad input.")
    add_gold(p)
    add_run(p, help="a run with scores, on the gold queries")
    add_formats(p)
    p.add_argument("--target-precision", type=float, default=0.9, metavar="P",
                   help="the precision (hit@k among answered queries) to guarantee (default 0.9)")
    p.add_argument("--k", type=int, default=5, help="a query is answered correctly when a relevant item is in the top k "
                                                    "(default 5)")
    p.add_argument("--delta", type=float, default=0.05,
                   help="allowed chance that the true precision is below the target (default 0.05)")
    add_out(p, "the abstention file to write", required=True, metavar="YAML")


def request(args: argparse.Namespace) -> Any:
    from rankgate.flows.calibrate_abstention import AbstentionRequest

    return AbstentionRequest(args.gold, args.run, gold_format=args.gold_format, run_format=args.run_format,
                             target_precision=args.target_precision, k=args.k, delta=args.delta)


def run(args: argparse.Namespace) -> int:
    import yaml

    from rankgate.cli.outputs import check_outputs
    from rankgate.flows.calibrate_abstention import run_calibrate_abstention

    req = request(args)
    planned = check_outputs(args, OUTPUTS, req)
    found = run_calibrate_abstention(req)
    cal, data = found.calibration, found.data
    planned.write({args.out: yaml.safe_dump(data, sort_keys=False, allow_unicode=True)})
    a = data["abstention"]
    if cal.threshold is None:
        tested = [s for s in cal.curve if s.lower_bound is not None]
        why = ("no threshold leaves 30 answered queries" if not tested else
               f"even the strictest tested threshold's lower bound is {tested[0].lower_bound:.3f}")
        sys.stdout.write(f"no abstention threshold reaches precision {args.target_precision} at delta {args.delta} "
                         f"({why}; n={cal.n}); wrote {args.out}\n")
        return 1
    sys.stdout.write(
        f"abstain when the top score is below {a['threshold']:.6g}: answers {a['answered']} of {a['n']} gold queries "
        f"(coverage {a['coverage']:.1%}), {a['metric']} precision {a['precision']:.3f}, "
        f"lower bound {a['lower_bound']:.3f} >= {a['target_precision']} (delta {a['delta']}); wrote {args.out}\n")
    return 0
