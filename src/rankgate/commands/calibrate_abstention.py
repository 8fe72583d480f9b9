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

from .options import add_formats, add_gold, add_out, add_run

HELP = "learn the top-score threshold under which retrieval should abstain, for a target precision (gold set + run)"


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


def run(args: argparse.Namespace) -> int:
    import yaml

    from ..atomic import check_file, check_not_input, write_text
    from ..data import load_gold, load_run
    from ..data.inputs import sha256_files
    from ..errors import UsageError
    from ..traces.abstention import calibrate, top_scores

    if not 1 <= args.k <= 1_000_000:
        raise UsageError(f"--k must be between 1 and 1000000; got {args.k}")
    check_file(args.out, option="-o")
    check_not_input(args.out, (args.gold, args.run), option="-o")
    gold = load_gold(args.gold, format=args.gold_format, label=args.gold)
    run_ = load_run(args.run, format=args.run_format, label=args.run)
    scores, correct, _ = top_scores(gold, run_, args.k)
    cal = calibrate(scores, correct, target_precision=args.target_precision, delta=args.delta, metric=f"hit@{args.k}")
    data = cal.to_yaml_data()
    from ..data.source import is_pipe

    # a pipe was read once already: it has no bytes left to hash
    data["abstention"]["gold"] = "" if is_pipe(args.gold) else sha256_files([args.gold])
    data["abstention"]["run"] = "" if is_pipe(args.run) else sha256_files([args.run])
    write_text(args.out, yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
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
