"""The report's follow-up section: retrieval on first turns and on follow-ups, side by side, with intervals.

Follow-up turns lean on the conversation before them ("and on the team plan?"), so retrieval often does
worse on them than on first turns, and a mean over every turn hides it. When the gold set (or the run)
gives queries a ``turn``, the HTML report shows each panel metric over first turns and over follow-ups,
each with its interval (resampling conversations, :mod:`rankgate.stats.clusters`), how many follow-ups
name earlier turns their retrieval needs (``depends_on_turns``), and the resampling line.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rankgate.render.numbers import fmt_confidence, fmt_count, fmt_value, fmt_value_ci

__all__ = ["ANCHOR", "followup_markdown", "followup_section"]

ANCHOR = "follow-ups"
TITLE = "Follow-up turns"


def followup_markdown(result: Any, metrics: Sequence[str], statistics: Any) -> str | None:
    """The section as markdown (a ``###`` heading, a table of each metric over first turns and follow-ups,
    the resampling line); None when the queries carry no ``turn`` or none is a follow-up."""
    from rankgate.model.conversations import FIRST_TURN, FOLLOW_UP
    from rankgate.stats.clusters import resampling
    from rankgate.stats.segments import segment_summary

    turns = result.fields.get("turn") if hasattr(result, "fields") else None
    if not turns or FOLLOW_UP not in turns:
        return None
    names = [m for m in metrics if m in result.values] or list(result.metric_names)
    seg = segment_summary(result, "turn", metrics=names, statistics=statistics)
    conf = f"{fmt_confidence(seg.confidence)} CI"
    lines = [f"### {TITLE}", "",
             "Retrieval on the first turn of a conversation and on the turns that follow it (the segment turn: "
             "first, follow_up).", "",
             f"| metric | first turns | {conf} | n | follow-ups | {conf} | n |", "|:--|--:|--:|--:|--:|--:|--:|"]
    for m in names:
        cells = [m]
        for label in (FIRST_TURN, FOLLOW_UP):
            row = seg.get("turn", label, m)
            cells += (["—", "—", "0"] if row is None else
                      [fmt_value(m, row.mean), fmt_value_ci(m, row.ci_low, row.ci_high), fmt_count(row.n)])
        lines.append("| " + " | ".join(cells) + " |")
    units = resampling(result, names)
    if units is not None:
        lines += ["", units.line()]
        if units.depend_on_earlier:
            lines += ["", f"{fmt_count(units.depend_on_earlier)} follow-ups name earlier turns their retrieval needs "
                          "(depends_on_turns)."]
    return "\n".join(lines) + "\n"


def followup_section(result: Any, metrics: Sequence[str], statistics: Any) -> tuple[str, str, str] | None:
    """``(anchor, title, HTML section)`` of :func:`followup_markdown`, for the report; None without follow-ups."""
    from rankgate.render.experiments import section_html

    md = followup_markdown(result, metrics, statistics)
    return None if md is None else (ANCHOR, TITLE, section_html(md, ANCHOR))
