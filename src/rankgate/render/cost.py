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
    from rankgate.render.experiments import bounded_rows, interval_table, with_lines

    table = interval_table("Cost per query (", fmt_confidence_exact(summary.confidence), narrow)
    for name, justify in (("cost", "left"), ("scope", "left"), ("n", "right"), ("mean", "right"), ("p95", "right")):
        table.add_column(name, justify=justify, overflow="fold")  # type: ignore[arg-type]
    shown, lines = bounded_rows(summary.rows)
    for (key, seg), stats in _by_scope(shown).items():
        n = next(iter(stats.values())).n
        table.add_row(key, seg or "all queries", f"{n:,}", _cell(stats.get("mean"), "\n" if narrow else " "),
                      _cell(stats.get("p95"), "\n" if narrow else " "))
    return with_lines(table, lines)


def cost_html(summary: Any, confidence: float) -> str:
    """The report's section: the markdown table as HTML (escaped by the experiments' converter)."""
    from rankgate.render.experiments import section_html

    return section_html(cost_markdown(summary), "cost")


def cost_gate_markdown(gates: Sequence[Mapping[str, Any]], conf: str, cap: int = 200) -> list[str]:
    """The PR comment's cost table, from the ``cost`` entries of a gate outcome's JSON."""
    from rankgate.render.ceilings import ceiling_gate_markdown

    return ceiling_gate_markdown(gates, conf, cap, heading="Cost gates", what="the cost per query",
                                 columns=("Cost", "Statistic"), subject="key", fmt=lambda g, x: fmt_cost(g["key"], x),
                                 fmt_change=lambda g, x: fmt_cost_change(g["key"], x), count=lambda n: f"{n:,}")


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
