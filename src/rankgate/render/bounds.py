"""Precision and nDCG with bounds (``rankgate evaluate --judged``): a table, side by side.

Run it to see it: ``python -m rankgate.render.bounds summary.json`` (a summary with ``bounds``).
"""

from __future__ import annotations

from typing import Any

from rankgate.render.numbers import fmt_confidence, fmt_score, fmt_share, fmt_value, md_escape


def bounds_rows(b: Any) -> list[tuple[str, str, str, str]]:
    """(metric, lower, corrected [CI], upper) as text; ``b`` is a :class:`~rankgate.stats.pooling.Bounds` or its dict."""
    d = b if isinstance(b, dict) else b.to_dict()
    rows = []
    for metric, low in d["lower"].items():
        corr = "— (no --calibration)"
        if d.get("corrected") is not None:
            ci = (d.get("corrected_ci") or {}).get(metric) or [None, None]
            corr = fmt_value(metric, d["corrected"][metric])
            if ci[0] is not None:
                corr += f" [{fmt_value(metric, ci[0])}, {fmt_value(metric, ci[1])}]"
        rows.append((metric, fmt_value(metric, low), corr, fmt_value(metric, d["upper"][metric])))
    return rows


def bounds_notes(b: Any) -> list[str]:
    d = b if isinstance(b, dict) else b.to_dict()
    notes = [(f"{d['queries']} queries with a relevant gold item; {d['judged_items']} judge labels of items the gold "
              "set lacks; hit and recall stay on the gold set alone")]
    if d.get("judge_failed"):
        notes.append(f"{d['judge_failed']} items the judge failed on stay unjudged")
    if d.get("unlabelled_in_topk"):
        notes.append(f"{d['unlabelled_in_topk']} top-{d['k']} items have neither a gold nor a judge label "
                     f"(pool deeper to narrow the bounds)")
    prev = d.get("prevalence")
    if prev:
        notes.append(f"judge calls {fmt_share(prev['apparent'])} of the pooled items relevant; corrected for its "
                     f"sensitivity {fmt_score(prev['sensitivity'], 2)} and specificity {fmt_score(prev['specificity'], 2)}: "
                     f"{fmt_share(prev['corrected'])} (Rogan–Gladen)")
    if d.get("above_upper"):
        notes.append(f"corrected above gold + judge for {', '.join(d['above_upper'])}: the judge misses relevant "
                     "items, so gold + judge is no upper bound here")
    return notes


def bounds_table(b: Any, confidence: float = 0.95) -> Any:
    from rich.table import Table

    table = Table(title="Incomplete gold set: bounds", title_justify="left")
    table.add_column("metric", no_wrap=True)
    table.add_column("lower: gold only", justify="right", no_wrap=True)
    table.add_column(f"corrected [{fmt_confidence(confidence)} CI]", justify="right", no_wrap=True)
    table.add_column("upper: gold + judge", justify="right", no_wrap=True)
    for row in bounds_rows(b):
        table.add_row(*row)
    table.caption = "\n".join(bounds_notes(b))
    table.caption_justify = "left"
    return table


def bounds_markdown(b: Any, confidence: float = 0.95) -> str:
    lines = [f"| metric | lower: gold only | corrected [{fmt_confidence(confidence)} CI] | upper: gold + judge |",
             "|---|---:|---:|---:|"]
    lines += [f"| {md_escape(m, 60)} | {lo} | {c} | {up} |" for m, lo, c, up in bounds_rows(b)]
    lines += [""] + [f"- {md_escape(n, 400)}" for n in bounds_notes(b)]
    return "\n".join(lines) + "\n"


def bounds_section(b: Any, confidence: float = 0.95) -> str:
    """The report's section on an incomplete gold set, or "" without bounds."""
    if not b:
        return ""
    import html

    e = html.escape
    pct = round(confidence * 100)
    out = ['<section id="bounds"><h2>Incomplete gold set: bounds</h2>',
           ("<p>Unjudged items count as not relevant in every other number (a lower bound). With the judge's labels "
            "the same metrics read higher; corrected for the judge's errors they lie in between.</p>"),
           (f"<table><thead><tr><th>metric</th><th>lower: gold only</th><th>corrected [{pct}% CI]</th>"
            "<th>upper: gold + judge</th></tr></thead><tbody>")]
    for row in bounds_rows(b):
        out.append("<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>")
    out.append("</tbody></table><ul>" + "".join(f"<li>{e(n)}</li>" for n in bounds_notes(b)) + "</ul></section>")
    return "\n".join(out) + "\n"


if __name__ == "__main__":  # pragma: no cover
    import json
    import sys

    with open(sys.argv[1], encoding="utf-8") as fh:
        sys.stdout.write(bounds_markdown(json.load(fh)["bounds"]))
