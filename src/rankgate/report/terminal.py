"""The terminal view of an evaluation: the retrieval panel, then what was (not) evaluated.

Run it to see it: ``python -m rankgate.report.terminal gold.jsonl run.jsonl``.
"""

from __future__ import annotations

from ..engine import id_mismatch_line
from ..results import EvaluationResult


def _short(query_id: str, limit: int = 80) -> str:
    """A query id named in a sentence, cut to ``limit`` characters (wrapping a 30 MB id took a minute)."""
    return query_id if len(query_id) <= limit else query_id[: limit - 1] + "…"


def coverage_lines(result: EvaluationResult) -> list[str]:
    """Plain sentences about the query set, so nothing is silently dropped."""
    n = len(result.query_ids)
    lines = [f"{n} gold {'query' if n == 1 else 'queries'} evaluated"]
    if result.no_answer:
        lines.append(
            f"{len(result.no_answer)} no-answer queries (no relevant item): ranking metrics skip them"
        )
    if result.missing_from_run:
        shown = ", ".join(map(_short, result.missing_from_run[:5])) + (" …" if len(result.missing_from_run) > 5 else "")
        lines.append(f"{len(result.missing_from_run)} gold queries missing from the run (counted as retrieving nothing): {shown}")
    if result.not_in_gold:
        shown = ", ".join(map(_short, result.not_in_gold[:5])) + (" …" if len(result.not_in_gold) > 5 else "")
        lines.append(f"{len(result.not_in_gold)} run queries not in the gold set were ignored: {shown}")
    mismatch = id_mismatch_line(result)
    if mismatch:
        lines.append(mismatch)
    dropped = result.info.get("duplicates_dropped")
    if dropped:
        lines.append(f"{dropped} repeated ids dropped (kept each id's best rank)")
    lines.extend(result.info.get("notices") or ())
    from ..data.nearmiss import near_miss_line

    near = near_miss_line(result.info.get("near_misses"))
    if near:
        lines.append(near)
    return lines


def print_evaluation(result: EvaluationResult, cis=None, confidence: float = 0.95, console=None) -> None:
    """The retrieval panel with every requested metric, then what was (not) evaluated."""
    from rich.console import Console

    from .panel import retrieval_panel

    console = console or Console()
    console.print(retrieval_panel(result, cis, confidence, metrics=list(result.metric_names), title=None))
    console.print()
    for line in coverage_lines(result):
        console.print(line, highlight=False, markup=False)


if __name__ == "__main__":  # pragma: no cover
    import sys

    from ..engine import evaluate

    print_evaluation(evaluate(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "recall@5,mrr,ndcg@10"))
