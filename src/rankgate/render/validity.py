"""Renderers of ``rankgate validity``: summary.json, validity.csv (one row per metric × outcome × segment),
the markdown page (validity.md) and the terminal text, and the demo's validity section. Text from the
inputs (segment values) passes :func:`.numbers.md_escape` in markdown."""

from __future__ import annotations

import csv
import io
import json
import math
from typing import TYPE_CHECKING, Any

from rankgate.render.numbers import (
    fmt_count,
    fmt_exact,
    fmt_p,
    fmt_score,
    fmt_share,
    fmt_share_change,
    fmt_times,
    md_escape,
)

if TYPE_CHECKING:  # pragma: no cover
    from rankgate.flows.validity import ValidityResult
    from rankgate.traces.validity import Matching, ValidityAnalysis, ValidityRow

__all__ = ["CSV_COLUMNS", "matching_lines", "validity_csv", "validity_json", "validity_markdown", "validity_text"]

CSV_COLUMNS = ("metric", "outcome", "field", "segment", "fail_queries", "fail_requests", "fail_bad", "fail_rate",
               "pass_queries", "pass_requests", "pass_bad", "pass_rate", "risk_difference", "rd_low", "rd_high",
               "relative_risk", "rr_low", "rr_high", "auc", "auc_low", "auc_high", "p_value", "p_holm", "power",
               "detectable", "verdict", "kind", "sentence")


def validity_json(result: ValidityResult) -> str:
    data = {"validity": result.analysis.to_dict(), "inputs": dict(result.inputs)}
    return json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def _x(x: float) -> str:
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return fmt_exact(x)


def validity_csv(analysis: ValidityAnalysis) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for r in analysis.rows:
        c = r.contrast
        w.writerow([r.metric, r.outcome, r.field or "", r.segment or "", c.fail_queries, c.fail_n, c.fail_k,
                    _x(c.fail_rate), c.pass_queries, c.pass_n, c.pass_k, _x(c.pass_rate), _x(c.rd), _x(c.rd_low),
                    _x(c.rd_high), _x(c.rr), _x(c.rr_low), _x(c.rr_high), _x(c.auc), _x(c.auc_low), _x(c.auc_high),
                    _x(c.p_value), _x(r.p_holm), _x(c.power), _x(c.detectable), r.verdict, r.kind, r.sentence])
    return buf.getvalue()


def matching_lines(m: Matching) -> list[str]:
    """How the gold set and the traces joined, and why the rest did not (one line each)."""
    key = "the normalised query text" if m.key == "text" else "query_key"
    lines = [f"{fmt_count(m.matched)} of {fmt_count(m.gold_queries)} gold queries matched "
             f"{fmt_count(m.requests_matched)} of {fmt_count(m.requests)} production requests (joined on {key})."]
    if m.gold_unmatched:
        lines.append("Gold queries not matched: " + "; ".join(f"{fmt_count(n)} {why}"
                                                              for why, n in m.gold_unmatched.items()) + ".")
    if m.requests_unmatched:
        lines.append("Requests not matched: " + "; ".join(f"{fmt_count(n)} {why}"
                                                          for why, n in m.requests_unmatched.items()) + ".")
    return lines


def _ci(low: float, high: float, fmt: Any) -> str:
    if math.isnan(low) or math.isnan(high):
        return "—"
    return f"{fmt(low)} to {fmt(high)}"


def _cells(r: ValidityRow) -> list[str]:
    c = r.contrast
    return [f"{fmt_share(c.fail_rate)} of {fmt_count(c.fail_n)} ({fmt_count(c.fail_queries)} q)",
            f"{fmt_share(c.pass_rate)} of {fmt_count(c.pass_n)} ({fmt_count(c.pass_queries)} q)",
            f"{fmt_share_change(c.rd)} [{_ci(c.rd_low, c.rd_high, fmt_share_change)}]",
            f"{fmt_times(c.rr)} [{_ci(c.rr_low, c.rr_high, fmt_times)}]",
            f"{fmt_score(c.auc, 2)} [{_ci(c.auc_low, c.auc_high, lambda x: fmt_score(x, 2))}]",
            fmt_p(r.p_holm), fmt_share(c.power, 0)]


HEAD = ("metric", "outcome", "bad when it misses", "bad when it passes", "difference", "ratio", "AUC", "p (Holm)",
        "power")


def validity_markdown(result: ValidityResult) -> str:
    """validity.md: the verdicts, the table of every row, how the join went."""
    a = result.analysis
    lines = ["## Offline ↔ online validity", ""]
    lines += matching_lines(a.matching)
    lines.append("")
    for r in a.headline():
        lines.append(f"- **{md_escape(r.metric)} × {md_escape(r.outcome)}**: {md_escape(r.sentence, 400)}")
    lines.append("")
    lines += _explain(a)
    lines.append("")
    groups: dict[tuple[str | None, str | None], list[ValidityRow]] = {}
    for r in a.rows:
        groups.setdefault((r.field, r.segment), []).append(r)
    for (fld, seg), rows in groups.items():
        title = "All matched queries" if fld is None else f"{md_escape(fld)} = {md_escape(seg or '')}"
        lines += [f"### {title}", "", "| " + " | ".join(HEAD) + " |", "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
        for r in rows:
            lines.append(f"| {md_escape(r.metric)} | {md_escape(r.outcome)} | " + " | ".join(_cells(r)) + " |")
        lines.append("")
    if a.absent:
        lines.append("Not measurable from these traces:")
        lines += [f"- {md_escape(o)}: {md_escape(note, 200)}" for o, note in a.absent.items()]
        lines.append("")
    return "\n".join(lines)


def _explain(a: ValidityAnalysis) -> list[str]:
    return [f"A query *misses* a metric when its value is below {fmt_exact(a.fail_below)}. Rates are shares of the "
            f"requests each outcome applies to; intervals at {fmt_share(a.confidence, 0)}, cluster-robust by query; "
            f"power is that of seeing a {fmt_share_change(a.effect).lstrip('+')} difference; p-values Holm-corrected "
            "within the headline rows and within each segment field's rows (docs/validity.md)."]


def validity_text(result: ValidityResult, *, width: int = 100) -> str:
    """The terminal text: the join, one verdict per headline row, then the headline table."""
    a = result.analysis
    out = ["Offline ↔ online validity", ""]
    out += matching_lines(a.matching)
    out.append("")
    for r in a.headline():
        out.append(f"  {r.metric} × {r.outcome}: {r.sentence}")
    out.append("")
    rows = [list(HEAD)] + [[r.metric, r.outcome, *_cells(r)] for r in a.headline()]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEAD))]
    for j, row in enumerate(rows):
        out.append("  ".join(cell.ljust(widths[i]) if i < 2 else cell.rjust(widths[i]) for i, cell in enumerate(row))
                   .rstrip())
        if j == 0:
            out.append("  ".join("-" * w for w in widths))
    if a.by:
        out.append("")
        out.append(f"Per segment ({', '.join(a.by)}): validity.md and validity.csv.")
    if a.absent:
        out.append("")
        out += [f"{o}: {note}" for o, note in a.absent.items()]
    return "\n".join(out) + "\n"
