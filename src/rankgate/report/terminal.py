"""The terminal table for an evaluation: metric, mean, 95% CI, n; then what was (not) evaluated.

Run it to see it: ``python -m rankgate.report.terminal gold.jsonl run.jsonl``.
"""

from __future__ import annotations

import math
from typing import Mapping

from ..results import EvaluationResult


def fmt(x: float | None, digits: int = 4) -> str:
    return "—" if x is None or math.isnan(x) else f"{x:.{digits}f}"


def evaluation_table(
    result: EvaluationResult,
    cis: Mapping[str, tuple[float, float]] | None = None,
    confidence: float = 0.95,
    title: str | None = None,
):
    from rich.table import Table

    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    table.add_column("metric", no_wrap=True)
    table.add_column("mean", justify="right")
    if cis:
        table.add_column(f"{confidence:.0%} CI", justify="right", no_wrap=True)
    table.add_column("n", justify="right")
    for name in result.metric_names:
        s = result.summary(name)
        row = [name, fmt(s.mean)]
        if cis:
            low, high = cis.get(name, (math.nan, math.nan))
            row.append("—" if math.isnan(low) else f"{fmt(low)} – {fmt(high)}")
        row.append(str(s.n))
        table.add_row(*row)
    return table


def coverage_lines(result: EvaluationResult) -> list[str]:
    """Plain sentences about the query set, so nothing is silently dropped."""
    lines = [f"{len(result.query_ids)} gold queries evaluated"]
    if result.no_answer:
        lines.append(
            f"{len(result.no_answer)} no-answer queries (no relevant item): ranking metrics skip them"
        )
    if result.missing_from_run:
        shown = ", ".join(result.missing_from_run[:5]) + (" …" if len(result.missing_from_run) > 5 else "")
        lines.append(f"{len(result.missing_from_run)} gold queries missing from the run (counted as retrieving nothing): {shown}")
    if result.not_in_gold:
        shown = ", ".join(result.not_in_gold[:5]) + (" …" if len(result.not_in_gold) > 5 else "")
        lines.append(f"{len(result.not_in_gold)} run queries not in the gold set were ignored: {shown}")
    dropped = result.info.get("duplicates_dropped")
    if dropped:
        lines.append(f"{dropped} repeated ids dropped (kept each id's best rank)")
    return lines


def print_evaluation(result: EvaluationResult, cis=None, confidence: float = 0.95, console=None) -> None:
    from rich.console import Console

    console = console or Console()
    console.print(evaluation_table(result, cis, confidence))
    console.print()
    for line in coverage_lines(result):
        console.print(line, highlight=False, markup=False)


if __name__ == "__main__":  # pragma: no cover
    import sys

    from ..engine import evaluate

    print_evaluation(evaluate(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "recall@5,mrr,ndcg@10"))
