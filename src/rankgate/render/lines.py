"""Plain sentences about an evaluation that every medium shows the same way (the terminal, markdown
and the panel): what was (not) evaluated, the latency of each stage, and the segments a table left out.
Each medium escapes them for itself."""

from __future__ import annotations

from rankgate.model.results import EvaluationResult
from rankgate.stats.segments import ShownSegments, display_field
from rankgate.render.numbers import fmt_count, fmt_ms

__all__ = ["coverage_lines", "id_like_line", "latency_lines", "left_out_line", "segment_lines"]


def _short(query_id: str, limit: int = 80) -> str:
    """A query id named in a sentence, cut to ``limit`` characters (wrapping a 30 MB id took a minute)."""
    return query_id if len(query_id) <= limit else query_id[: limit - 1] + "…"


def coverage_lines(result: EvaluationResult) -> list[str]:
    """Plain sentences about the query set, so nothing is silently dropped."""
    from rankgate.scoring.engine import id_mismatch_line

    n = len(result.query_ids)
    lines = [f"{n} gold {'query' if n == 1 else 'queries'} evaluated"]
    from rankgate.stats.clusters import resampling_line

    units = resampling_line(result)
    if units:
        lines.append(units)
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
    from rankgate.io.nearmiss import near_miss_line

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


def segment_lines(field: str, shown: ShownSegments, where: str) -> list[str]:
    """What a table of ``field``'s segments left out (:func:`left_out_line`) and, when the field hardly groups
    its queries, a note saying so (:func:`id_like_line`): at most two sentences."""
    lines = [left_out_line(field, shown, where)] if shown.left_out else []
    if shown.id_like:
        lines.append(id_like_line(field, shown.values, shown.queries))
    return lines


def left_out_line(field: str, shown: ShownSegments, where: str, what: str = "segments") -> str:
    """``lang: 9,762 more segments (9,800 queries) not shown, only the 50 largest; every one is in WHERE.``
    ``where``: where every segment is (``summary.json (--out) and --json``); ``what``: what the rows are."""
    queries = "query" if shown.left_out_queries == 1 else "queries"
    return (f"{display_field(field)}: {fmt_count(shown.left_out)} more {what} ({fmt_count(shown.left_out_queries)} "
            f"{queries}) not shown, only the {fmt_count(len(shown.labels))} largest; every one is in {where}.")


def id_like_line(field: str, values: int, queries: int) -> str:
    """The note on a field with more distinct values than half its queries (:func:`rankgate.stats.segments.looks_like_id`)."""
    return (f"{display_field(field)} has {fmt_count(values)} values for {fmt_count(queries)} queries: a segment field "
            "should group queries; is it an id?")
