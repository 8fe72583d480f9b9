"""Plain sentences about an evaluation that every medium shows the same way (the terminal, markdown
and the panel): what was (not) evaluated, and the latency of each stage. Each medium escapes them
for itself."""

from __future__ import annotations

from ..results import EvaluationResult
from .numbers import fmt_ms

__all__ = ["coverage_lines", "latency_lines"]


def _short(query_id: str, limit: int = 80) -> str:
    """A query id named in a sentence, cut to ``limit`` characters (wrapping a 30 MB id took a minute)."""
    return query_id if len(query_id) <= limit else query_id[: limit - 1] + "…"


def coverage_lines(result: EvaluationResult) -> list[str]:
    """Plain sentences about the query set, so nothing is silently dropped."""
    from ..engine import id_mismatch_line

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


def latency_lines(result: EvaluationResult) -> list[str]:
    """``stage: median X ms, p90 Y ms (n queries)`` for each latency stage the run reports."""
    import numpy as np

    out = []
    for stage, values in (result.info.get("latency_ms") or {}).items():
        x = np.asarray([v for v in values if v is not None], dtype=np.float64)
        if x.size:
            out.append(f"{stage}: median {fmt_ms(np.percentile(x, 50), 1)}, p90 {fmt_ms(np.percentile(x, 90), 1)} ({x.size} queries)")
    return out
