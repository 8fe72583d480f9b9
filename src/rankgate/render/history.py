"""``rankgate history``'s outputs: the lines ``add`` prints, the terminal table and JSON of ``show``, and the
dashboard ``report`` writes (one offline page, the evaluation report's style sheet, inline SVG charts).

Text from the store (metric and segment names, owners, gate names, branches) is escaped with the report's one
HTML escaping function (:func:`rankgate.render.html.e`); every number is written by
:mod:`rankgate.metrics.display`. Chart coordinates are whole numbers of the SVG's own units, not numbers to read.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rankgate.history.series import RECOVER_HOURS as RULE
from rankgate.metrics.display import DASH, fmt_count, fmt_delta, fmt_limit, fmt_ms, fmt_value, fmt_value_ci

if TYPE_CHECKING:  # pragma: no cover
    from rankgate.flows.history import HistoryAdded, HistoryReport, HistoryShow
    from rankgate.history.series import Breach, EntryInfo, Owner, Point, Series

__all__ = ["added_lines", "dashboard_html", "show_dict", "show_renderable", "sparkline"]

BARS = "▁▂▃▄▅▆▇█"
CHANGE_MARK = "¦"  # in a trend: the gold set or the corpus changed before the next point
MAX_POINTS = 700   # points drawn per chart; a longer series is drawn as one point per column of the chart


def day(us: int) -> str:
    return dt.datetime.fromtimestamp(us / 1_000_000, dt.timezone.utc).strftime("%Y-%m-%d")


def stamp(us: int) -> str:
    return dt.datetime.fromtimestamp(us / 1_000_000, dt.timezone.utc).strftime("%Y-%m-%d %H:%M")


def hours_text(hours: int) -> str:
    """Whole hours as people read a duration: ``31 h``, ``3 d 2 h``."""
    return f"{hours} h" if hours < 48 else f"{hours // 24} d {hours % 24} h"


def number(metric: str, x: float | None) -> str:
    """A value of a metric or a trace signal, as its unit reads."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return DASH
    if metric.startswith("latency."):
        return fmt_ms(x)
    from rankgate.traces.signals import SIGNAL_INFO

    if metric in SIGNAL_INFO:
        from rankgate.render.traces import fmt_signal

        return fmt_signal(metric, x)
    return fmt_value(metric, x)


def limit_text(s: Series) -> str:
    if math.isnan(s.limit):
        return ""
    return ("≥ " if s.check == "threshold" else "≤ ") + fmt_limit(s.metric, s.limit)


# -- add --------------------------------------------------------------------------------------------------
def added_lines(done: HistoryAdded) -> list[str]:
    """One line per file: what became of it (``added``, ``replaced``, ``unchanged``), its entry and commit."""
    return [f"{a.status} {a.entry} ({a.kind}, commit {a.commit[:12] or 'none'}) from {a.source}" for a in done.added]


# -- show -------------------------------------------------------------------------------------------------
def sparkline(points: Sequence[Point]) -> str:
    """The means as bars from lowest to highest of those shown; ``¦`` before a point where the gold set or the
    corpus changed; a blank for a point with no value."""
    vals = [p.mean for p in points if not math.isnan(p.mean)]
    lo, hi = (min(vals), max(vals)) if vals else (0.0, 0.0)
    out: list[str] = []
    for p in points:
        if p.changed and out:
            out.append(CHANGE_MARK)
        if math.isnan(p.mean):
            out.append(" ")
        elif hi == lo:
            out.append(BARS[3])
        else:
            out.append(BARS[min(len(BARS) - 1, int((p.mean - lo) / (hi - lo) * len(BARS)))])
    return "".join(out)


def _change(s: Series) -> tuple[float, str]:
    pts = [p for p in s.points if not math.isnan(p.mean)]
    if len(pts) < 2:
        return math.nan, ""
    return pts[-1].mean - pts[-2].mean, pts[-1].changed


def show_renderable(show: HistoryShow) -> Any:
    """The terminal table: one row per series, with its newest value, its interval, the change from the point
    before, the trend over the last points, and the gate's limit and newest outcome."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    if not show.entries:
        return Text(f"{show.store}: no entry yet (rankgate history add FILE --store {show.store})")
    first, last = show.entries[0].when_us, show.entries[-1].when_us
    kinds: dict[str, int] = {}
    for i in show.entries:
        kinds[i.kind] = kinds.get(i.kind, 0) + 1
    title = (f"History of {show.store}: {fmt_count(len(show.entries))} entries "
             f"({', '.join(f'{k} {fmt_count(n)}' for k, n in kinds.items())}), {day(first)} to {day(last)}")
    t = Table(title=title, title_justify="left")
    for col, kw in (("metric", {}), ("scope", {}), ("latest", {"justify": "right"}), ("CI", {"justify": "right"}),
                    ("change", {"justify": "right"}), (f"trend (last {show.last})", {}), ("points", {"justify": "right"}),
                    ("gate", {})):
        t.add_column(col, **kw)  # type: ignore[arg-type]
    changed_any = False
    for s in show.series:
        p = s.points[-1]
        delta, changed = _change(s)
        changed_any = changed_any or any(q.changed for q in s.points)
        change = number(s.metric, None) if math.isnan(delta) else fmt_delta(s.metric, delta)
        if changed:
            change += f" ({changed} changed)"
        gate = " ".join(x for x in (p.outcome, limit_text(s)) if x)
        style = "red" if p.outcome == "fail" else "yellow" if p.outcome == "warn" else None
        t.add_row(s.metric, s.scope, number(s.metric, p.mean), fmt_value_ci(s.metric, p.ci_low, p.ci_high), change,
                  sparkline(s.points), fmt_count(len(s.points)), gate, style=style)
    notes = [Text(f"Latest entry: {show.entries[-1].entry} ({show.entries[-1].kind}, commit "
                  f"{show.entries[-1].commit[:12] or 'none'}, {stamp(last)} UTC)", style="dim")]
    if changed_any:
        notes.append(Text(f"{CHANGE_MARK} in a trend: the gold set or the corpus changed there; a number is not "
                          "comparable across it.", style="dim"))
    if not show.series:
        notes.insert(0, Text("no metric to show"))
    return Group(t, *notes)


def _point_dict(p: Point) -> dict[str, Any]:
    from rankgate._util.jsonable import nan_to_none

    return {"entry": p.entry.entry, "kind": p.entry.kind, "commit": p.entry.commit, "branch": p.entry.branch,
            "when": stamp(p.entry.when_us).replace(" ", "T") + "Z", "mean": nan_to_none(p.mean),
            "ci_low": nan_to_none(p.ci_low), "ci_high": nan_to_none(p.ci_high), "n": None if p.n < 0 else p.n,
            "gold_sha256": p.entry.gold_sha256 or None, "corpus_version": p.entry.corpus_version or None,
            "changed": p.changed or None, "gate": p.outcome or None}


def entry_dict(i: EntryInfo) -> dict[str, Any]:
    return {"entry": i.entry, "kind": i.kind, "commit": i.commit, "branch": i.branch,
            "when": stamp(i.when_us).replace(" ", "T") + "Z", "gold_sha256": i.gold_sha256 or None,
            "corpus_version": i.corpus_version or None, "label": i.label or None, "source": i.source,
            "per_query": i.per_query}


def show_dict(show: HistoryShow) -> dict[str, Any]:
    """``show --json``: the entries and each series' last points."""
    from rankgate._util.jsonable import nan_to_none

    return {"store": show.store, "entries": [entry_dict(i) for i in show.entries], "last": show.last,
            "series": [{"metric": s.metric, "field": s.field or None, "segment": s.segment or None,
                        "limit": nan_to_none(s.limit), "check": s.check or None, "gates": list(s.gates),
                        "points": [_point_dict(p) for p in s.points]} for s in show.series]}


# -- the dashboard ---------------------------------------------------------------------------------------
EXTRA_CSS = """
.grid2 { display: grid; grid-template-columns: repeat(auto-fill, minmax(520px, 1fr)); gap: 18px; }
figure.trend { margin: 0; border: 1px solid var(--line); border-radius: 8px; padding: 10px 12px; }
figure.trend.breach { border-color: #fecaca; }
figure.trend figcaption { font-weight: 600; font-size: 13px; }
figure.trend figcaption .sub { color: var(--muted); font-weight: 400; }
svg.trend { width: 100%; height: auto; display: block; }
.owner { border: 1px solid var(--line); border-radius: 8px; padding: 4px 16px 12px; margin: 14px 0; }
.owner h3 { margin-top: 12px; }
.owner h4 { font-size: 13px; margin: 14px 0 4px; color: var(--muted); }
td.late, span.late { color: var(--red); font-weight: 600; }
p.legend { font-size: 12px; color: var(--muted); }
"""


def dashboard_html(rep: HistoryReport) -> str:
    """The dashboard as one HTML document (a string): offline, no script, the report's style sheet."""
    from rankgate.render.assets import CSP, CSS
    from rankgate.render.html import e

    kinds: dict[str, int] = {}
    for i in rep.entries:
        kinds[i.kind] = kinds.get(i.kind, 0) + 1
    span = f"{stamp(rep.entries[0].when_us)} to {stamp(rep.entries[-1].when_us)} UTC" if rep.entries else DASH
    facts = [("store", rep.store), ("entries", f"{fmt_count(len(rep.entries))} ("
                                              + (", ".join(f"{k} {fmt_count(n)}" for k, n in kinds.items()) or "none") + ")"),
             ("period", span), ("as of", f"{stamp(rep.now_us)} UTC (the newest entry)" if rep.entries else DASH),
             ("recovery rule", f"a breach is resolved within {RULE} hours")]
    head = ('<header class="top"><div class="inner"><h1>' + e(rep.title) + '</h1><dl class="facts">'
            + "".join(f"<dt>{e(k)}</dt><dd>{e(v)}</dd>" for k, v in facts) + "</dl></div></header>")
    nav = ('<nav class="toc"><div class="inner"><a href="#owners">Owners</a><a href="#trends">Trends</a>'
           '<a href="#entries">Entries</a></div></nav>')
    body = "<main>" + _owners(rep) + _trends(rep) + _entries(rep) + "</main>"
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{e(rep.title)}</title><style>{CSS}{EXTRA_CSS}</style></head><body>\n{head}\n{nav}\n{body}\n"
            "</body></html>\n")



def _table(head: Sequence[str], rows: Sequence[Sequence[str]], *, num: Sequence[int] = (),
           classes: Sequence[str] = ()) -> str:
    from rankgate.render.html import e

    h = "".join(f'<th class="n">{e(c)}</th>' if i in num else f"<th>{e(c)}</th>" for i, c in enumerate(head))
    body = []
    for k, r in enumerate(rows):
        cls = f' class="{classes[k]}"' if k < len(classes) and classes[k] else ""
        body.append(f"<tr{cls}>" + "".join(f'<td class="n">{e(c)}</td>' if i in num else f"<td>{e(c)}</td>"
                                           for i, c in enumerate(r)) + "</tr>")
    return f'<div class="scroll"><table><thead><tr>{h}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'


def _owners(rep: HistoryReport) -> str:
    from rankgate.render.html import e

    if not rep.owners:
        return ('<section id="owners"><h2>Owners</h2><p class="muted">No gate outcome is recorded yet: record the '
                "outcome of rankgate gate --json-out to see each gate's owner, its breaches and its weekly review.</p></section>")
    parts = ['<section id="owners"><h2>Owners</h2><p class="lead">Per owner (a gate\'s <code>owner:</code> in the ship '
             f"criteria): the gates in breach now, how long the last breaches took to recover against the {RULE}-hour "
             "rule, and the week's review list.</p>"]
    for o in rep.owners:
        parts.append(f'<div class="owner" data-owner="{e(o.owner)}"><h3>{e(o.owner)}</h3>')
        parts.append(_open(o, rep.now_us))
        parts.append(_recovered(o, rep.now_us))
        parts.append(_review(o))
        parts.append("</div>")
    return "".join(parts) + "</section>"


def _open(o: Owner, now_us: int) -> str:
    if not o.open:
        return '<h4>In breach now</h4><p class="ok">No gate of this owner is in breach.</p>'
    rows = [[b.gate, b.metric, ", ".join(b.scopes) or DASH, b.severity or DASH, stamp(b.start_us),
             hours_text(b.hours(now_us)), f"over {RULE} h" if b.late(now_us) else f"within {RULE} h"] for b in o.open]
    return ("<h4>In breach now</h4>" + _table(("gate", "metric", "failing", "severity", "since", "open for", "rule"), rows,
                                              num=(5,), classes=["fail breach" if b.late(now_us) else "warn breach"
                                                                 for b in o.open]))


def _recovered(o: Owner, now_us: int) -> str:
    if not o.recovered:
        return "<h4>Last recoveries</h4><p class=\"muted\">No breach has recovered yet.</p>"
    rows = [[b.gate, b.metric, stamp(b.start_us), stamp(b.end_us or 0), hours_text(b.hours(now_us)),
             f"over {RULE} h" if b.late(now_us) else f"within {RULE} h"] for b in o.recovered]
    return "<h4>Last recoveries</h4>" + _table(("gate", "metric", "from", "recovered", "took", "rule"), rows, num=(4,),
                                               classes=["fail" if b.late(now_us) else "" for b in o.recovered])


def _review(o: Owner) -> str:
    rows = []
    for r in o.review:
        delta = r.now - r.week_ago if not (math.isnan(r.now) or math.isnan(r.week_ago)) else math.nan
        rows.append([r.gate, r.metric, r.status or DASH, number(r.metric, r.now), number(r.metric, r.week_ago),
                     fmt_delta(r.metric, delta), fmt_count(r.breaches), r.reason])
    return ("<h4>Weekly review</h4>"
            + _table(("gate", "metric", "status", "now", "a week ago", "change", "breaches", "to review"), rows,
                     num=(3, 4, 5, 6), classes=["fail" if r.reason.startswith("in breach") else
                                                "warn" if r.reason != "ok" else "" for r in o.review]))


def _trends(rep: HistoryReport) -> str:
    from rankgate.render.html import e

    if not rep.series:
        return '<section id="trends"><h2>Trends</h2><p class="muted">No metric is recorded yet.</p></section>'
    gated = any(not math.isnan(s.limit) or s.gates for s in rep.series)
    lead = ("Each gated metric over all queries and per gated segment: the mean (line), its interval (band), "
            "the gate's limit (dashed), failing gate outcomes (red dots, amber for a warning) and where the gold set "
            "or the corpus changed (vertical dashed line): a number is not comparable across such a change."
            if gated else "Each metric over all queries (no gate outcome is recorded: record gate.json to see the "
                          "gated metrics, their limits and outcomes).")
    parts = [f'<section id="trends"><h2>Trends</h2><p class="lead">{e(lead)}</p>']
    metric = None
    for s in rep.series:
        if s.metric != metric:
            if metric is not None:
                parts.append("</div>")
            metric = s.metric
            parts.append(f"<h3>{e(metric)}</h3><div class=\"grid2\">")
        p = s.points[-1]
        breach = " breach" if p.outcome in ("fail", "warn") else ""
        sub = " · ".join(x for x in (f"now {number(s.metric, p.mean)}", limit_text(s) and f"limit {limit_text(s)}",
                                     p.outcome and f"gate {p.outcome}", f"{fmt_count(len(s.points))} points") if x)
        parts.append(f'<figure class="trend{breach}" data-metric="{e(s.metric)}" data-scope="{e(s.scope)}">'
                     f'<figcaption>{e(s.scope)} <span class="sub">{e(sub)}</span></figcaption>{trend_svg(s)}</figure>')
    parts.append("</div></section>")
    return "".join(parts)


def trend_svg(s: Series, *, width: int = 560, height: int = 180) -> str:
    """One series as an inline SVG: the interval as a band, the mean as a line, the limit dashed, version changes
    as vertical dashed lines, failing outcomes as dots. Long series are drawn one point per column."""
    from rankgate.render.html import e

    left, right, top, bottom = 64, 12, 14, 26
    pts = [p for p in s.points if not math.isnan(p.mean)]
    if not pts:
        return '<p class="muted">no value</p>'
    vals = [p.mean for p in pts] + [x for p in pts for x in (p.ci_low, p.ci_high) if not math.isnan(x)]
    if not math.isnan(s.limit):
        vals.append(s.limit)
    lo, hi = min(vals), max(vals)
    if hi == lo:
        hi, lo = hi + (abs(hi) * 0.05 or 0.05), lo - (abs(lo) * 0.05 or 0.05)
    t0, t1 = pts[0].entry.when_us, pts[-1].entry.when_us
    span = (t1 - t0) or 1
    plot_w, plot_h = width - left - right, height - top - bottom

    def x(us: int) -> int:
        return left + (round(plot_w * (us - t0) / span) if t1 > t0 else plot_w // 2)

    def y(v: float) -> int:
        return top + round(plot_h * (1 - (v - lo) / (hi - lo)))

    columns = _columns(pts, x) if len(pts) > MAX_POINTS else [(x(p.entry.when_us), p.mean, p.ci_low, p.ci_high)
                                                              for p in pts]
    out = [f'<svg class="trend" viewBox="0 0 {width} {height}" role="img" '
           f'aria-label="{e(s.metric)}, {e(s.scope)}, over time">',
           f'<line x1="{left}" y1="{height - bottom}" x2="{width - right}" y2="{height - bottom}" stroke="#d1d5db"/>']
    for v in (lo, hi):
        out.append(f'<text x="{left - 6}" y="{y(v) + 4}" font-size="10" text-anchor="end" fill="#6b7280">'
                   f'{e(number(s.metric, v))}</text>')
    out.append(f'<text x="{left}" y="{height - 8}" font-size="10" fill="#6b7280">{e(day(t0))}</text>')
    out.append(f'<text x="{width - right}" y="{height - 8}" font-size="10" text-anchor="end" fill="#6b7280">'
               f'{e(day(t1))}</text>')
    band = [(cx, lo_, hi_) for cx, _, lo_, hi_ in columns if not (math.isnan(lo_) or math.isnan(hi_))]
    if len(band) > 1:
        ring = [f"{cx},{y(h)}" for cx, _, h in band] + [f"{cx},{y(lw)}" for cx, lw, _ in reversed(band)]
        out.append(f'<polygon class="ci" points="{" ".join(ring)}" fill="#bfdbfe" fill-opacity="0.55" stroke="none"/>')
    if not math.isnan(s.limit):
        out.append(f'<line class="limit" x1="{left}" x2="{width - right}" y1="{y(s.limit)}" y2="{y(s.limit)}" '
                   f'stroke="#d97706" stroke-dasharray="5 3"><title>gate limit {e(limit_text(s))}</title></line>')
    for p in pts:
        if p.changed:
            cx = x(p.entry.when_us)
            out.append(f'<line class="version-marker" x1="{cx}" x2="{cx}" y1="{top}" y2="{height - bottom}" '
                       f'stroke="#7c3aed" stroke-dasharray="3 3"><title>{e(p.changed)} changed at commit '
                       f'{e(p.entry.commit[:12] or p.entry.entry)} ({e(day(p.entry.when_us))}): not comparable across'
                       f'</title></line><text x="{cx + 3}" y="{top + 8}" font-size="9" fill="#7c3aed">'
                       f'{e(p.changed)}</text>')
    if len(columns) > 1:
        line = " ".join(f"{cx},{y(m)}" for cx, m, _, _ in columns)
        out.append(f'<polyline class="mean" fill="none" stroke="#2563eb" stroke-width="1.6" points="{line}"/>')
    for p in pts:
        if p.outcome in ("fail", "warn"):
            colour = "#dc2626" if p.outcome == "fail" else "#d97706"
            out.append(f'<circle class="outcome-{p.outcome}" cx="{x(p.entry.when_us)}" cy="{y(p.mean)}" r="3.5" '
                       f'fill="{colour}"><title>gate {e(p.outcome)} at {e(p.entry.commit[:12] or p.entry.entry)} '
                       f'({e(day(p.entry.when_us))}): {e(number(s.metric, p.mean))}</title></circle>')
    last = pts[-1]
    out.append(f'<circle class="latest" cx="{x(last.entry.when_us)}" cy="{y(last.mean)}" r="3" fill="#2563eb">'
               f'<title>{e(day(last.entry.when_us))}: {e(number(s.metric, last.mean))} '
               f'({e(fmt_value_ci(s.metric, last.ci_low, last.ci_high))})</title></circle>')
    out.append("</svg>")
    return "".join(out)


def _columns(pts: Sequence[Point], x: Any) -> list[tuple[int, float, float, float]]:
    """A long series as one point per column of the chart: the mean of the means there, the lowest low and the
    highest high."""
    out: list[tuple[int, float, float, float]] = []
    acc: list[Point] = []
    for p in [*pts, None]:
        cx = None if p is None else x(p.entry.when_us)
        if acc and (p is None or cx != x(acc[0].entry.when_us)):
            lows = [q.ci_low for q in acc if not math.isnan(q.ci_low)]
            highs = [q.ci_high for q in acc if not math.isnan(q.ci_high)]
            out.append((x(acc[0].entry.when_us), math.fsum(q.mean for q in acc) / len(acc),
                        min(lows) if lows else math.nan, max(highs) if highs else math.nan))
            acc = []
        if p is not None:
            acc.append(p)
    return out


def _entries(rep: HistoryReport) -> str:
    from rankgate.render.html import e

    recent = list(reversed(rep.entries[-rep.recent:]))
    rows = [[stamp(i.when_us), i.commit[:12] or DASH, i.branch or DASH, i.kind, i.entry,
             i.gold_sha256[:12] or DASH, i.corpus_version or DASH, i.label or DASH] for i in recent]
    more = len(rep.entries) - len(recent)
    note = f'<p class="muted">and {fmt_count(more)} older entries (rankgate history show --json lists them all).</p>' \
        if more > 0 else ""
    return (f'<section id="entries"><h2>Entries</h2><p class="lead">{e("The newest entries first.")}</p>'
            + _table(("when (UTC)", "commit", "branch", "kind", "entry", "gold sha256", "corpus", "run"), rows) + note
            + "</section>")


def breach_lines(found: Sequence[Breach], now_us: int) -> list[str]:
    """Plain lines for the breaches open now (``report`` prints them on stderr)."""
    return [f"{b.owner}: {b.gate} ({b.metric}) in breach since {stamp(b.start_us)} UTC, {hours_text(b.hours(now_us))}"
            + (f", over the {RULE}-hour rule" if b.late(now_us) else "") for b in found if b.end_us is None]
