"""``rankgate compare``: runs on the same gold set, paired by query: what changed, and is it real.

Two runs give the detailed two-run comparison (segments, most-changed queries); three or more give
one table of every run against a baseline. ``--fuse`` builds a fused run from the runs given, writes
it (``--fused-run``) and compares it with them.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
from typing import Any

from ..constraints import PERMUTATIONS
from .options import add_enforce_as_of, add_input_options, add_param, add_stats

HELP = "compare runs: paired change per metric (and segment) with CI and p-value, most-changed queries; fuse runs"


def add_parser(sub: Any) -> None:
    p = sub.add_parser("compare", help=HELP, description=HELP + ".")
    p.add_argument("runs", nargs="+", metavar="RUN",
                   help="runs to compare; the first is the baseline (e.g. main's retriever) unless --baseline names another")
    add_input_options(p, gold_required=False)
    p.add_argument("--baseline", metavar="NAME", help="the run to compare against: its file name or path as given")
    p.add_argument("--by", action="append", default=[], metavar="FIELD",
                   help="also compare per segment of a gold field or tag (intent, lang, intent+lang…); two runs only; repeatable")
    add_enforce_as_of(p)
    p.add_argument("--rewrite", action="store_true",
                   help="query rewriting: RUN is a rewrite log (records with 'original' and 'rewritten' results), or two "
                        "runs ORIGINAL REWRITTEN; adds recall@k and nDCG@k of each (k: --k, default 10), the paired "
                        "change per segment and the queries the rewrite broke")
    add_stats(p)
    add_param(p, PERMUTATIONS, metavar="N")
    p.add_argument("--top", type=int, default=10, metavar="N", help="most-regressed and most-improved queries to list (two runs; default 10)")
    p.add_argument("--fuse", metavar="METHOD",
                   help="fuse the runs into one and compare it too: rrf (k=60), rrf(k=N), combsum, combmnz")
    p.add_argument("--fused-run", metavar="PATH", help="with --fuse: write the fused run to PATH as JSONL (atomically)")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print the comparison as JSON instead of the table")
    fmt.add_argument("--markdown", action="store_true", help="print the comparison as markdown")
    p.add_argument("--output", "-o", metavar="PATH", help="write the output to PATH (atomically) instead of stdout")


def _labels(paths: list[str]) -> list[str]:
    """File names, or the paths as given where two runs share a file name."""
    names = [os.path.basename(p) or p for p in paths]
    return names if len(set(names)) == len(names) else list(paths)


def run(args: argparse.Namespace) -> int:
    from ..errors import UsageError
    from ..stats import MAX_RESAMPLES
    from .options import check_stats_args

    check_stats_args(args)
    if not 0 <= args.permutations <= MAX_RESAMPLES:
        raise UsageError(f"--permutations must be between 0 and {MAX_RESAMPLES:,}; got {args.permutations:,}")
    if args.top < 0:
        raise UsageError(f"--top must be >= 0; got {args.top}")
    for option, path in (("--output", args.output), ("--fused-run", args.fused_run)):
        if path:
            from ..atomic import check_file, check_not_input

            check_file(path, option=option)
            check_not_input(path, (args.gold, args.doc_map, *args.runs), option=option)
    if args.output and args.fused_run and os.path.abspath(args.output) == os.path.abspath(args.fused_run):
        raise UsageError(f"--output and --fused-run name the same file {args.output}; give each its own file")
    if args.fused_run and not args.fuse:
        raise UsageError("--fused-run needs --fuse METHOD (rrf, combsum or combmnz)")
    if getattr(args, "rewrite", False):
        return _rewrite(args)
    if args.fuse:
        return _fuse_and_compare(args)
    if args.gold is None:
        raise UsageError("the following arguments are required: --gold")
    if len(args.runs) < 2:
        raise UsageError(f"compare needs at least two runs; got {len(args.runs)}")
    if len(args.runs) == 2:
        return _two_runs(args)
    return _many_runs(args, list(args.runs), list(args.runs))


def _columns(args: argparse.Namespace) -> dict[str, str] | None:
    """The --columns map (for CSV/TSV tables), parsed."""
    from ..data.formats import parse_columns

    return parse_columns(args.columns)


def _baseline_index(args: argparse.Namespace, paths: list[str], labels: list[str]) -> int:
    from ..errors import UsageError

    if args.baseline is None:
        return 0
    for i, (path, label) in enumerate(zip(paths, labels)):
        if args.baseline in (path, label):
            return i
    raise UsageError(f"--baseline {args.baseline!r} names none of the runs: {', '.join(labels)}")


def _two_runs(args: argparse.Namespace) -> int:
    from ..compare import compare
    from ..data import load_gold
    from .evaluate import evaluate_from_args

    paths = list(args.runs)
    if _baseline_index(args, paths, _labels(paths)) == 1:
        paths.reverse()
    gold = load_gold(args.gold, format=args.gold_format, columns=_columns(args))
    freshness: list[Any] = []
    if getattr(args, "enforce_as_of", False):
        from ._whatif import freshness_for

        freshness = [freshness_for(args, gold, path) for path in paths]
        base, cand = freshness[0].enforced, freshness[1].enforced
    else:
        base = evaluate_from_args(args, paths[0], gold=gold)
        cand = evaluate_from_args(args, paths[1], gold=gold)
    _warn_gold_versions([base, cand], _labels(paths), 0)
    _warn_tie_rules([base, cand], _labels(paths), 0)
    result = compare(base, cand, by=args.by, seed=args.seed, n_resamples=args.resamples,
                     n_permutations=args.permutations, confidence=args.confidence, top=args.top)
    from ..report.compare import comparison_dict, comparison_markdown, comparison_renderable

    if freshness:
        from ..report.experiments import with_freshness

        return _emit(args, result, *with_freshness(comparison_dict, comparison_markdown, comparison_renderable,
                                                    dict(zip(_labels(paths), freshness)), args.confidence))
    return _emit(args, result, comparison_dict, comparison_markdown, comparison_renderable)


def _rewrite(args: argparse.Namespace) -> int:
    """Original against rewritten query results: the comparison, plus the rewrite's own section."""
    from ..compare import compare
    from ..data import load_gold
    from ..errors import UsageError
    from ..experiments.rewrite import rewrite_effect
    from .evaluate import evaluate_from_args

    for flag, given in (("--fuse", args.fuse), ("--enforce-as-of", getattr(args, "enforce_as_of", False)),
                        ("--baseline", args.baseline)):
        if given:
            raise UsageError(f"--rewrite cannot be combined with {flag}: the original query's results are the baseline")
    if args.gold is None:
        raise UsageError("the following arguments are required: --gold")
    if len(args.runs) > 2:
        raise UsageError(f"--rewrite takes one rewrite log or two runs (ORIGINAL REWRITTEN); got {len(args.runs)}")
    texts: dict[str, dict[str, str]] = {}
    if len(args.runs) == 1:
        from ..data.rewrite import read_rewrite_runs

        log = read_rewrite_runs(args.runs[0])
        original, rewritten, texts, labels = log.original, log.rewritten, log.texts, ("original", "rewritten")
    else:
        original, rewritten = args.runs
        labels = tuple(_labels(list(args.runs)))  # type: ignore[assignment]
    gold = load_gold(args.gold, format=args.gold_format, columns=_columns(args))
    k = args.k or 10

    def score(run: Any, metrics: Any) -> Any:
        return evaluate_from_args(argparse.Namespace(**{**vars(args), "metrics": ",".join(metrics)}), run, gold=gold)

    effect = rewrite_effect(original, rewritten, score, k=k, by=args.by, seed=args.seed, n_resamples=args.resamples,
                            confidence=args.confidence, texts=texts, labels=labels)
    base = evaluate_from_args(args, original, gold=gold)
    cand = evaluate_from_args(args, rewritten, gold=gold)
    result = compare(base, cand, by=args.by, seed=args.seed, n_resamples=args.resamples,
                     n_permutations=args.permutations, confidence=args.confidence, top=args.top,
                     baseline_label=labels[0], candidate_label=labels[1])
    from ..report.compare import comparison_dict, comparison_markdown, comparison_renderable
    from ..report.experiments import with_rewrite

    return _emit(args, result, *with_rewrite(comparison_dict, comparison_markdown, comparison_renderable, effect,
                                            args.confidence))


def _warn_gold_versions(results: list[Any], names: list[str], baseline: int) -> None:
    """Warn (stderr) when a run was scored on another version of the gold set than the baseline: runs
    that carry their own references (no --gold) may have been labelled against different gold files."""
    from ..baseline import gold_sha256_of

    base = gold_sha256_of(results[baseline])
    for i, (r, name) in enumerate(zip(results, names)):
        sha = gold_sha256_of(r)
        if i != baseline and base and sha and sha != base:
            print(f"rankgate compare: warning: {name} was scored on another version of the gold set than the "
                  f"baseline {names[baseline]} (gold sha256 {sha[:12]} vs {base[:12]}); changes may come from the "
                  "relabelling, not the retriever", file=sys.stderr)


def _warn_tie_rules(results: list[Any], names: list[str], baseline: int) -> None:
    """Warn (stderr) when a run was ranked by another rule than the baseline (a TREC file against a
    JSONL one, say: trec_eval's rule against the file's order); the difference is then partly the rule's."""
    from ..baseline import ties_of

    base = ties_of(results[baseline])
    for i, (r, name) in enumerate(zip(results, names)):
        rule = ties_of(r)
        if i != baseline and base and rule and rule != base:
            print(f"rankgate compare: warning: {name} was ranked by --ties {rule}, the baseline {names[baseline]} by "
                  f"--ties {base}; changes may come from the ranking rule, not the retriever (give --ties to rank "
                  "both the same way)", file=sys.stderr)


def _many_runs(args: argparse.Namespace, runs: list[Any], paths: list[str], labels: list[str] | None = None,
               extra_files: dict[str, str] | None = None) -> int:
    """Runs (paths or loaded runs) against a baseline; ``paths`` as given, for --baseline to match."""
    from ..compare import compare_systems
    from ..data import load_gold
    from ..errors import UsageError
    from .evaluate import evaluate_from_args

    if args.by:
        raise UsageError("--by compares segments of two runs; with more runs, compare two at a time for segments")
    if getattr(args, "enforce_as_of", False):
        raise UsageError("--enforce-as-of compares two runs; with more runs (or --fuse), compare two at a time")
    names = labels if labels is not None else _labels(paths)
    baseline = _baseline_index(args, paths, names)
    gold = load_gold(args.gold, format=args.gold_format, columns=_columns(args))
    results = [evaluate_from_args(args, r, gold=gold) for r in runs]
    _warn_gold_versions(results, names, baseline)
    _warn_tie_rules(results, names, baseline)
    result = compare_systems(results, labels=names, baseline=baseline, seed=args.seed, n_resamples=args.resamples,
                             n_permutations=args.permutations, confidence=args.confidence)
    from ..report.compare import multi_comparison_dict, multi_comparison_markdown, multi_comparison_renderable

    return _emit(args, result, multi_comparison_dict, multi_comparison_markdown, multi_comparison_renderable,
                 extra_files)


def _fuse_and_compare(args: argparse.Namespace) -> int:
    from ..atomic import write_text
    from ..data import load_run
    from ..errors import UsageError
    from ..fusion import fuse, parse_fusion, run_jsonl

    method = parse_fusion(args.fuse)
    if len(args.runs) < 2:
        raise UsageError(f"--fuse needs at least two runs; got {len(args.runs)}")
    if args.gold is None and not args.fused_run:
        raise UsageError("--fuse without --gold only builds the fused run: give --fused-run PATH (or --gold to compare)")
    labels = _labels(list(args.runs))
    loaded = [load_run(path, format=args.run_format, columns=_columns(args)) for path in args.runs]
    fused = fuse(loaded, method, labels=labels, ties=args.ties)
    if args.gold is None:
        write_text(args.fused_run, run_jsonl(fused))
        sys.stderr.write(f"wrote the {method} fusion of {len(loaded)} runs to {args.fused_run}\n")
        return 0
    name = str(method)
    if name in labels:
        raise UsageError(f"a run is already named {name!r}; rename it to compare it with the fused run")
    # The fused run is written with the comparison's output, as one unit, once everything is computed.
    extra = {args.fused_run: run_jsonl(fused)} if args.fused_run else {}
    return _many_runs(args, [*loaded, fused], [*args.runs, name], [*labels, name], extra_files=extra)


def _emit(args: argparse.Namespace, result: Any, as_dict: Any, as_markdown: Any, as_renderable: Any,
          extra_files: dict[str, str] | None = None) -> int:
    """Print or write the comparison; every file of the command (``extra_files`` too) as one unit."""
    from ..atomic import write_files

    if args.json:
        import json

        text = json.dumps(as_dict(result), indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"
    elif args.markdown:
        text = as_markdown(result)
    else:
        text = None
    files = dict(extra_files or {})
    if args.output:
        files[args.output] = text if text is not None else _plain_table(as_renderable(result))
    if files:
        write_files(files)
    if args.output:
        return 0
    if text is not None:
        sys.stdout.write(text)
        return 0
    from rich.console import Console

    tty = sys.stdout.isatty()
    # a terminal's width, or COLUMNS when set (rich reads it); 100 in a log or a pipe
    wide = tty or bool(os.environ.get("COLUMNS"))
    Console(width=None if wide else 100, color_system="auto" if tty else None, highlight=False).print(as_renderable(result))
    return 0


def _plain_table(renderable: Any) -> str:
    from rich.console import Console

    console = Console(width=100, color_system=None, force_terminal=False, record=True, file=io.StringIO())
    console.print(renderable)
    return console.export_text()
