"""The PR comment's table of a kind of ceiling gates (latency, cost: :mod:`rankgate.experiments.ceilings`).

The data is the kind's entries of a gate outcome's JSON; every number is written by the formatter the kind
gives (milliseconds, a cost key's unit). Nothing here computes a number.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rankgate.render.numbers import md_escape

__all__ = ["ceiling_gate_markdown"]

_ICON = {"pass": "✅", "fail": "❌", "warn": "⚠️", "skipped": "➖"}

Format = Callable[[Mapping[str, Any], Any], str]
"""Writes a number of a gate's checks (the gate's JSON entry, the number, which may be None)."""


def ceiling_gate_markdown(gates: Sequence[Mapping[str, Any]], conf: str, cap: int, *, heading: str, what: str,
                          columns: tuple[str, str], subject: str, fmt: Format, fmt_change: Format,
                          count: Callable[[int], str] = str) -> list[str]:
    """A heading, a sentence on how the gates decide, and a row per check (at most ``cap``).

    ``what``: what a ceiling bounds ("the percentile"); ``columns``: the names of the columns of the quantity and
    of the statistic; ``subject``: the checks' field naming the quantity (``stage``); ``fmt``/``fmt_change``: how
    a value and a change of the gate's quantity are written; ``count``: how a number of queries is."""
    out = [f"### {heading}", "",
           (f"A ceiling fails only when {what} is over budget beyond its noise (by default the lower end of its "
            f"{conf} is above the limit); a regression fails only when the growth is beyond its limit **and** its "
            f"paired {conf} excludes zero."), "",
           f"| | Gate | {columns[0]} | {columns[1]} | Queries | Candidate ({conf}) | Baseline | Change ({conf}) | "
           "Limit | Result |",
           "|:-:|:--|:--|:--|--:|--:|--:|--:|:--|:--|"]
    rows = 0
    for g in gates:
        for c in g["checks"]:
            if rows >= cap:
                out.append("| | … | | | | | | | | more rows in the JSON outcome |")
                return out
            rows += 1
            scope = "all queries" if c["segment"] is None else md_escape(c["segment"], 60)
            cand = (f"{fmt(g, c['estimate'])} ({fmt(g, c['ci_low'])}–{fmt(g, c['ci_high'])})" if c["kind"] == "max"
                    else fmt(g, c["estimate"]))
            change = (f"{fmt_change(g, c['value'])} ({fmt_change(g, c['ci_low'])} to {fmt_change(g, c['ci_high'])})"
                      if c["kind"] == "regression" and c["value"] is not None else "")
            limit = (f"≤ {fmt(g, c['limit'])} ({g['on'].replace('_', ' ')})" if c["kind"] == "max"
                     else f"growth ≤ {fmt(g, c['limit'])}")
            result = c["status"] + (f": {md_escape(c['note'], 160)}" if c.get("note") else "")
            if c["status"] == "fail" and g.get("owner"):
                result += f" (owner: {md_escape(g['owner'], 60)})"
            out.append(f"| {_ICON.get(c['status'], '')} | {md_escape(g['title'], 60)} | {md_escape(c[subject], 40)} | "
                       f"{c['stat']} | {scope} ({count(c['n'])}) | {cand} | {fmt(g, c['baseline'])} | {change} | "
                       f"{limit} | {result} |")
    return out
