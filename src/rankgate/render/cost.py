"""Cost per query and cost gates, for people: markdown, the terminal, the HTML report and the PR comment.

The data is :class:`~rankgate.experiments.cost.CostSummary` (an evaluation's ``cost`` section) and the
``cost`` entries of a gate outcome's JSON; every number is written by :mod:`rankgate.metrics.display`
(:func:`~rankgate.metrics.display.fmt_cost`: dollars for ``usd``, milliseconds for ``*_ms``, tokens
otherwise). Nothing here computes a number.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rankgate.render.numbers import fmt_confidence_exact, fmt_cost, fmt_cost_change, md_escape

__all__ = ["cost_gate_markdown", "cost_gate_sentences", "cost_html", "cost_markdown", "cost_renderable"]

_ICON = {"pass": "✅", "fail": "❌", "warn": "⚠️", "skipped": "➖"}


def _by_scope(rows: Sequence[Any]) -> dict[tuple[str, str | None], dict[str, Any]]:
    out: dict[tuple[str, str | None], dict[str, Any]] = {}
    for r in rows:
        out.setdefault((r.key, r.segment), {})[r.stat] = r
    return out


def _cell(row: Any, sep: str = " ") -> str:
    if row is None or math.isnan(row.value):
        return "—"
    return f"{fmt_cost(row.key, row.value)}{sep}({fmt_cost(row.key, row.ci[0])}–{fmt_cost(row.key, row.ci[1])})"


def cost_markdown(summary: Any) -> str:
    """The mean and p95 of each cost key per query with their intervals, over all queries and each segment."""
    from rankgate.render.experiments import bounded_rows

    conf = fmt_confidence_exact(summary.confidence)
    out = ["### Cost per query", "", f"| cost | scope | queries | mean ({conf} CI) | p95 ({conf} CI) |",
           "|---|---|---:|---:|---:|"]
    shown, lines = bounded_rows(summary.rows)
    for (key, seg), stats in _by_scope(shown).items():
        n = next(iter(stats.values())).n
        out.append(f"| {md_escape(key, 40)} | {md_escape(seg or 'all queries', 60)} | {n:,} | "
                   f"{_cell(stats.get('mean'))} | {_cell(stats.get('p95'))} |")
    out += [""] + [md_escape(line, 400) for line in lines] if lines else []
    return "\n".join(out) + "\n"


def cost_renderable(summary: Any) -> Any:
    """The same table for the terminal; in a narrow terminal each interval goes under its value."""
    from rankgate.render.tables import FitToWidth

    return FitToWidth(lambda narrow: _cost_table(summary, narrow))


def _cost_table(summary: Any, narrow: bool) -> Any:
    from rich import box
    from rich.table import Table

    from rankgate.render.experiments import bounded_rows

    conf = fmt_confidence_exact(summary.confidence)
    if narrow:
        table = Table(title=f"Cost per query ({conf} CI under each value)", title_justify="left", box=box.SIMPLE_HEAD,
                      show_edge=False, pad_edge=False, padding=(0, 1, 0, 0))
    else:
        table = Table(title=f"Cost per query ({conf} CI)", title_justify="left")
    for name, justify in (("cost", "left"), ("scope", "left"), ("n", "right"), ("mean", "right"), ("p95", "right")):
        table.add_column(name, justify=justify, overflow="fold")  # type: ignore[arg-type]
    shown, lines = bounded_rows(summary.rows)
    for (key, seg), stats in _by_scope(shown).items():
        n = next(iter(stats.values())).n
        table.add_row(key, seg or "all queries", f"{n:,}", _cell(stats.get("mean"), "\n" if narrow else " "),
                      _cell(stats.get("p95"), "\n" if narrow else " "))
    if not lines:
        return table
    from rich.console import Group
    from rich.text import Text

    return Group(table, *(Text(line) for line in lines))


def cost_html(summary: Any, confidence: float) -> str:
    """The report's section: the markdown table as HTML (escaped by the experiments' converter)."""
    from rankgate.render.experiments import section_html

    return section_html(cost_markdown(summary), "cost")


def cost_gate_markdown(gates: Sequence[Mapping[str, Any]], conf: str, cap: int = 200) -> list[str]:
    """The PR comment's cost table, from the ``cost`` entries of a gate outcome's JSON."""
    out = ["### Cost gates", "",
           ("A ceiling fails only when the cost per query is over budget beyond its noise (by default the lower end "
            f"of its {conf} is above the limit); a regression fails only when the growth is beyond its limit **and** "
            f"its paired {conf} excludes zero."), "",
           f"| | Gate | Cost | Statistic | Queries | Candidate ({conf}) | Baseline | Change ({conf}) | Limit | Result |",
           "|:-:|:--|:--|:--|--:|--:|--:|--:|:--|:--|"]
    rows = 0
    for g in gates:
        key = g["key"]
        for c in g["checks"]:
            if rows >= cap:
                out.append("| | … | | | | | | | | more rows in the JSON outcome |")
                return out
            rows += 1
            scope = "all queries" if c["segment"] is None else md_escape(c["segment"], 60)
            cand = (f"{fmt_cost(key, c['estimate'])} ({fmt_cost(key, c['ci_low'])}–{fmt_cost(key, c['ci_high'])})"
                    if c["kind"] == "max" else fmt_cost(key, c["estimate"]))
            change = (f"{fmt_cost_change(key, c['value'])} ({fmt_cost_change(key, c['ci_low'])} to "
                      f"{fmt_cost_change(key, c['ci_high'])})" if c["kind"] == "regression" and c["value"] is not None else "")
            limit = (f"≤ {fmt_cost(key, c['limit'])} ({g['on'].replace('_', ' ')})" if c["kind"] == "max"
                     else f"growth ≤ {fmt_cost(key, c['limit'])}")
            result = c["status"] + (f": {md_escape(c['note'], 160)}" if c.get("note") else "")
            if c["status"] == "fail" and g.get("owner"):
                result += f" (owner: {md_escape(g['owner'], 60)})"
            out.append(f"| {_ICON.get(c['status'], '')} | {md_escape(g['title'], 60)} | {md_escape(key, 40)} | "
                       f"{c['stat']} | {scope} ({c['n']:,}) | {cand} | {fmt_cost(key, c['baseline'])} | {change} | "
                       f"{limit} | {result} |")
    return out


def cost_gate_sentences(o: Mapping[str, Any], esc: Callable[..., str]) -> list[str]:
    """One sentence per cost gate that failed or warned, naming its owner (``esc``: the medium's escaping)."""
    out = []
    for g in o.get("cost") or []:
        if g["status"] not in ("fail", "warn"):
            continue
        key = g["key"]
        bad = [c for c in g["checks"] if c["status"] == ("fail" if g["status"] == "fail" else "warn")] or \
              [c for c in g["checks"] if c["status"] in ("fail", "warn")]
        parts = []
        for c in bad[:3]:
            scope = "" if c["segment"] is None else f" in {esc(c['segment'], 60)}"
            if c["kind"] == "max":
                parts.append(f"{c['stat']} {esc(key, 40)} per query{scope} is {fmt_cost(key, c['estimate'])} "
                             f"({fmt_cost(key, c['ci_low'])}–{fmt_cost(key, c['ci_high'])}), over "
                             f"{fmt_cost(key, c['limit'])}" if c["status"] == "fail" else
                             f"{c['stat']} {esc(key, 40)}{scope}: {esc(c.get('note') or c['status'], 160)}")
            else:
                parts.append(f"{c['stat']} {esc(key, 40)} per query{scope} grew by {fmt_cost_change(key, c['value'])} "
                             f"({fmt_cost_change(key, c['ci_low'])} to {fmt_cost_change(key, c['ci_high'])}), beyond "
                             f"{fmt_cost(key, c['limit'])}" if c["status"] == "fail" else
                             f"{c['stat']} {esc(key, 40)}{scope}: {esc(c.get('note') or c['status'], 160)}")
        more = f" (and {len(bad) - 3} more checks)" if len(bad) > 3 else ""
        owner = f" Owner: {esc(g['owner'], 60)}." if g.get("owner") and g["status"] == "fail" else ""
        word = "failed" if g["status"] == "fail" else "warns"
        out.append(f"Cost gate {esc(g['title'], 120)} {word}: {'; '.join(parts)}{more}.{owner}")
    return out
