"""The HTML trace report: one self-contained page (no network, no fonts to fetch), with the same style
sheet as the evaluation report (:mod:`.assets`).

Sections: monitor flags; a time series per signal with its thresholds and flagged windows; latency
per stage; the most unstable queries with their two result lists; sources with the worst feedback;
low-confidence queries; stale citations; what could not be measured; skipped input rows.

The charts are small inline SVGs written here (a line per signal, dashed thresholds, flagged windows
in red), so a report over months of hourly windows stays fast and byte-identical for the same input.
"""

from __future__ import annotations

from collections.abc import Sequence, Set as AbstractSet
from html import escape
from typing import TYPE_CHECKING, Any

from rankgate.traces.signals import SIGNAL_INFO, SignalValue, TraceSummary, iso
from rankgate.render.assets import CSP, CSS
from rankgate.render.numbers import fmt_score, fmt_share
from rankgate.render.traces import fmt_signal

if TYPE_CHECKING:  # pragma: no cover
    from rankgate.traces.monitors import MonitorConfig, MonitorOutcome

__all__ = ["series_svg", "trace_report_html"]

SERIES = ("error_rate_per_1k", "latency.retrieval.p95", "latency.rerank.p95", "latency.synthesis.p95",
          "latency.total.p95", "low_confidence_rate", "no_result_rate", "fallback_rate", "deprecated_context_rate",
          "stale_citation_rate", "instability.rbo", "corpus_changed.changed_rate", "negative_feedback_rate",
          "timeout_rate", "retry_rate", "redaction_efficacy", "block_efficacy", "secure_field_bypass_rate")
EXTRA_CSS = """
.grid2 { display: grid; grid-template-columns: repeat(auto-fill, minmax(520px, 1fr)); gap: 18px; }
figure.series { margin: 0; border: 1px solid var(--line); border-radius: 8px; padding: 10px 12px; }
figure.series figcaption { font-weight: 600; font-size: 13px; }
figure.series .sub { color: var(--muted); font-weight: 400; }
svg.ts { width: 100%; height: auto; display: block; }
p.single { margin: 18px 4px; }
p.single .big { font-size: 22px; font-weight: 600; font-variant-numeric: tabular-nums; }
p.single.flagged .big { color: var(--red); }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.flag td { background: var(--red-bg); }
ol.ids { margin: 0; padding-left: 22px; font: 12px/1.45 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
ol.ids li.new { color: var(--red); }
table.t { border-collapse: collapse; font-size: 13px; }
table.t th, table.t td { border-bottom: 1px solid var(--line); padding: 4px 10px; text-align: left; vertical-align: top; }
"""


def e(x: Any) -> str:
    return escape("" if x is None else str(x), quote=True)


def series_svg(signal: str, points: Sequence[SignalValue], *, flagged: AbstractSet[int] = frozenset(),
               lines: Sequence[tuple[str, float]] = (), width: int = 560, height: int = 170) -> str:
    """A line of the signal's values over the windows; dashed lines at ``lines`` (label, value); red
    dots on ``flagged`` windows. Windows without a value leave a gap.

    The y axis starts at zero for a signal that cannot go below it, so that noise of a few tenths of a
    millisecond does not fill the box the way a real spike does; a signal that can (a score change)
    keeps its own range, and when that range is under 5% of the value the chart says so. One window
    with a value is a number, not a chart."""
    pts = [p for p in points if p.window is not None]
    measured = [p for p in pts if p.value is not None]
    vals: list[float] = [p.value for p in measured if p.value is not None] + [v for _, v in lines]
    left, right, top, bottom = 64, 10, 10, 26
    if not measured:
        return '<p class="muted">no value in any window</p>'
    if len(measured) == 1:
        one = measured[0]
        cls = "single flagged" if one.window in flagged else "single"
        return (f'<p class="{cls}"><span class="big">{e(fmt_signal(signal, one.value))}</span> '
                f'<span class="muted">in the one window with a value ({e(iso(one.window or 0)[:16])}, '
                f'n={one.n:,})</span></p>')
    lo, hi = min(vals), max(vals)
    narrow = ""
    if lo >= 0 and SIGNAL_INFO[signal].unit in ("share", "per_1k", "ms", "count"):
        lo = 0.0
    elif hi != lo and (hi - lo) < 0.05 * max(abs(hi), abs(lo)):
        narrow = (f"axis spans only {fmt_signal(signal, hi - lo)} "
                  f"({(hi - lo) / max(abs(hi), abs(lo)):.1%} of the value)")
    if hi == lo:
        hi = lo + (abs(lo) * 0.1 or 1.0)
    w0, w1 = pts[0].window or 0, pts[-1].window or 0
    span = (w1 - w0) or 1

    def x(w: int) -> float:
        return left + (width - left - right) * ((w - w0) / span if len(pts) > 1 else 0.5)

    def y(v: float) -> float:
        return top + (height - top - bottom) * (1 - (v - lo) / (hi - lo))

    out = [f'<svg class="ts" viewBox="0 0 {width} {height}" role="img" aria-label="{e(signal)} per window">',
           f'<line x1="{left}" y1="{height - bottom}" x2="{width - right}" y2="{height - bottom}" stroke="#d1d5db"/>']
    for v in (lo, hi):
        out.append(f'<text x="{left - 6}" y="{y(v) + 4:.1f}" font-size="10" text-anchor="end" fill="#6b7280">'
                   f'{e(fmt_signal(signal, v))}</text>')
    if narrow:
        out.append(f'<text x="{width - right}" y="{top + 8}" font-size="10" text-anchor="end" fill="#b45309" '
                   f'class="narrow">{e(narrow)}</text>')
    out.append(f'<text x="{left}" y="{height - 8}" font-size="10" fill="#6b7280">{e(iso(w0)[:16])}</text>')
    if len(pts) > 1:
        out.append(f'<text x="{width - right}" y="{height - 8}" font-size="10" text-anchor="end" fill="#6b7280">'
                   f'{e(iso(w1)[:16])}</text>')
    for label, v in lines:
        out.append(f'<line x1="{left}" x2="{width - right}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#d97706" '
                   f'stroke-dasharray="4 3"><title>{e(label)}</title></line>')
    seg: list[str] = []
    for p in pts + [SignalValue(None, "", signal, None, 0)]:
        if p.value is None or p.window is None:
            if len(seg) > 1:
                out.append(f'<polyline fill="none" stroke="#2563eb" stroke-width="1.6" points="{" ".join(seg)}"/>')
            elif seg:
                cx, cy = seg[0].split(",")
                out.append(f'<circle cx="{cx}" cy="{cy}" r="2" fill="#2563eb"/>')
            seg = []
            continue
        seg.append(f"{x(p.window):.1f},{y(p.value):.1f}")
    for p in pts:
        if p.window is not None and p.window in flagged and p.value is not None:
            out.append(f'<circle cx="{x(p.window):.1f}" cy="{y(p.value):.1f}" r="4" fill="#dc2626" class="flagged">'
                       f'<title>{e(iso(p.window))}: {e(fmt_signal(signal, p.value))} (n={p.n:,})</title></circle>')
    out.append("</svg>")
    return "".join(out)


def _table(head: Sequence[str], rows: Sequence[Sequence[Any]], *, num: Sequence[int] = (), flag: Sequence[bool] = ()) -> str:
    h = "".join(f'<th class="num">{e(c)}</th>' if i in num else f"<th>{e(c)}</th>" for i, c in enumerate(head))
    body = []
    for r_i, r in enumerate(rows):
        cls = ' class="flag"' if flag and flag[r_i] else ""
        cells = "".join(f'<td class="num">{c}</td>' if i in num else f"<td>{c}</td>" for i, c in enumerate(r))
        body.append(f"<tr{cls}>{cells}</tr>")
    return f'<div class="scroll"><table class="t"><thead><tr>{h}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'


def _flags(outcome: MonitorOutcome | None) -> str:
    if outcome is None:
        return ""
    if not outcome.flags:
        return '<section id="flags"><h2>Monitor flags</h2><p><span class="verdict pass">no window flagged</span></p></section>'
    rows = [(e(f.severity), e(f.window_iso), e(f.segment), e(f.signal), e(fmt_signal(f.signal, f.value)), f"{f.n:,}",
             e(f.rule), e(f.detail), e(f.owner or "")) for f in outcome.flags]
    verdict = "fail" if outcome.exit_code else "pass"
    return ('<section id="flags"><h2>Monitor flags</h2>'
            f'<p><span class="verdict {verdict}">{len(outcome.flags)} flag(s)</span></p>'
            + _table(("severity", "window", "segment", "signal", "value", "n", "rule", "detail", "owner"), rows,
                     num=(4, 5)) + "</section>")


def _series(summary: TraceSummary, outcome: MonitorOutcome | None, config: MonitorConfig | None) -> str:
    flagged: dict[tuple[str, str], set[int]] = {}
    for f in outcome.flags if outcome else ():
        flagged.setdefault((f.signal, f.segment), set()).add(f.window)
    figs = []
    shown = list(SERIES) + [s for s in dict.fromkeys(m.signal for m in (config.monitors if config else ()))
                            if s not in SERIES]
    for signal in shown:
        segments = ["all"] + sorted({seg for (sig, seg) in flagged if sig == signal and seg != "all"})
        for seg in segments:
            pts = [v for v in summary.values if v.signal == signal and v.segment == seg]
            if not pts or all(v.value is None for v in pts):
                continue
            lines = []
            for m in config.monitors if config else ():
                if m.signal == signal:
                    if m.max is not None:
                        lines.append((f"{m.name}: max", m.max))
                    if m.min is not None:
                        lines.append((f"{m.name}: min", m.min))
            svg = series_svg(signal, pts, flagged=flagged.get((signal, seg), set()), lines=lines)
            label = SIGNAL_INFO[signal].label
            figs.append(f'<figure class="series" data-signal="{e(signal)}" data-segment="{e(seg)}"><figcaption>{e(signal)}'
                        f'{"" if seg == "all" else " · " + e(seg)} <span class="sub">{e(label)}</span></figcaption>'
                        f"{svg}</figure>")
    return (f'<section id="series"><h2>Signals per {e(summary.window)} window</h2>'
            '<p class="lead">Flagged windows in red; dashed lines are monitor thresholds.</p>'
            f'<div class="grid2">{"".join(figs)}</div></section>')


def _latency(summary: TraceSummary) -> str:
    rows = []
    for stage in ("parse", "retrieval", "rerank", "synthesis", "total"):
        vals = [summary.value(f"latency.{stage}.{q}") for q in ("p50", "p95", "p99")]
        if vals[0] is None or vals[0].value is None:
            continue
        rows.append((e(stage), *[fmt_score(v.value if v else None, 1) for v in vals], f"{vals[0].n:,}"))
    if not rows:
        return ""
    return ('<section id="latency"><h2>Latency per stage</h2><p class="lead">Milliseconds, whole period; exact '
            'quantiles with linear interpolation.</p>' + _table(("stage", "p50", "p95", "p99", "n"), rows,
                                                                num=(1, 2, 3, 4)) + "</section>")


def _cost(summary: TraceSummary) -> str:
    """What the requests cost (mean and p95 per key), all traffic then each segment; nothing without costs."""
    from rankgate.render.traces import cost_rows

    segments = ["all"] + sorted({v.segment for v in summary.period if v.segment != "all" and v.signal.startswith("cost.")})
    rows = [(e(seg), e(label), *rest) for seg in segments for label, *rest in cost_rows(summary, seg)]
    if not rows:
        return ""
    return ('<section id="cost"><h2>Cost per request</h2><p class="lead">Whole period; the mean and the exact p95 '
            'with linear interpolation, per segment.</p>' + _table(("segment", "cost", "mean", "p95", "n"), rows,
                                                                   num=(2, 3, 4)) + "</section>")


def _resources(summary: TraceSummary) -> str:
    from rankgate.render.traces import resources_rows

    rows = [(e(label), *rest) for label, *rest in resources_rows(summary)]
    if not rows:
        return ""
    return ('<section id="resources"><h2>Process resources per request</h2><p class="lead">Whole period; exact '
            'quantiles with linear interpolation.</p>' + _table(("sample", "p50", "p95", "p99", "n"), rows,
                                                                num=(1, 2, 3, 4)) + "</section>")


def _unstable(summary: TraceSummary) -> str:
    if not summary.unstable:
        return ""
    blocks = []
    for u in summary.unstable:
        ref = set(u["reference_list"])
        now = "".join(f'<li class="{"" if i in ref else "new"}">{e(i)}</li>' for i in u["list"])
        before = "".join(f"<li>{e(i)}</li>" for i in u["reference_list"])
        blocks.append((e(u["query_text"] or u["query_key"][:16]), e(u["window"][:16]), fmt_score(u['rbo']),
                       fmt_score(u['jaccard']), f'<ol class="ids">{before}</ol>', f'<ol class="ids">{now}</ol>'))
    return ('<section id="unstable"><h2>Most unstable queries</h2><p class="lead">Same query key and index version as '
            'the previous window, different results; items not in the previous list in red.</p>'
            + _table(("query", "window", "RBO", "Jaccard", "previous window", "this request"), blocks, num=(2, 3))
            + "</section>")


def _sources(summary: TraceSummary) -> str:
    rows = sorted((f for f in summary.feedback_by_source if f.window is None), key=lambda f: (-f.low, f.source))
    if not rows:
        return ""
    body = [(e(f.source), fmt_share(f.rate), f"[{fmt_share(f.low)}, {fmt_share(f.high)}]", f"{f.negative:,}",
             f"{f.n:,}", "above overall" if f.flagged else "") for f in rows[:20]]
    overall = rows[0].overall
    return (f'<section id="sources"><h2>Sources by negative feedback</h2><p class="lead">Overall {fmt_share(overall)}; '
            '95% Wilson intervals; a source is flagged when its whole interval lies above the overall rate.</p>'
            + _table(("source", "negative", "interval", "negative n", "feedback n", ""), body, num=(1, 3, 4),
                     flag=[f.flagged for f in rows[:20]]) + "</section>")


def _low(summary: TraceSummary) -> str:
    if not summary.low_confidence:
        return ""
    rows = [(e(q["query_text"] or q["query_key"][:16]), f"{q['n']:,}", fmt_score(q['min_top1']), fmt_score(q['max_top1']))
            for q in summary.low_confidence]
    thr = summary.meta.get("abstention_threshold")
    return (f'<section id="low"><h2>Low-confidence queries</h2><p class="lead">Top score under the abstention threshold '
            f'{e(thr)}; the most frequent first.</p>' + _table(("query", "requests", "lowest top-1", "highest top-1"),
                                                                 rows, num=(1, 2, 3)) + "</section>")


def _stale(summary: TraceSummary) -> str:
    if not summary.stale_citations:
        return ""
    rows = [(e(c["doc_id"]), e(c["version"]), e(c["current_version"]), f"{c['n']:,}") for c in summary.stale_citations]
    return ('<section id="stale"><h2>Stale citations</h2><p class="lead">Cited versions older than the document\'s '
            'current version in the corpus manifest.</p>' + _table(("document", "cited", "current", "citations"), rows,
                                                                  num=(3,)) + "</section>")


def _notes(summary: TraceSummary) -> str:
    notes = [v for v in summary.period if v.segment == "all" and v.note and v.note.startswith("not measurable")]
    skipped = summary.skipped or {}
    parts = []
    if notes:
        parts.append("<h3>Not measurable from these traces</h3><ul>"
                     + "".join(f"<li><code>{e(v.signal)}</code>: {e(v.note)}</li>" for v in notes) + "</ul>")
    if skipped.get("total"):
        rows = [(e(r), f"{n:,}") for r, n in skipped.get("by_reason", {}).items()]
        first = [(e(x["file"]), e(x["line"]), e(x["reason"])) for x in skipped.get("first", [])]
        parts.append(f"<h3>{skipped['total']:,} input rows skipped</h3>" + _table(("reason", "rows"), rows, num=(1,))
                     + _table(("file", "line", "reason"), first))
    if not parts:
        return ""
    return '<section id="notes"><h2>What this report could not use</h2>' + "".join(parts) + "</section>"


def trace_report_html(summary: TraceSummary, outcome: MonitorOutcome | None = None,
                      config: MonitorConfig | None = None, *, title: str = "rankgate trace report") -> str:
    """The report as one HTML document (a string)."""
    m = summary.meta
    span = (f"{iso(summary.windows[0])} – {iso(summary.windows[-1] + summary.window_us)}" if summary.windows else "—")
    facts = [("requests", f"{m.get('requests', 0):,}"), ("retrieved items", f"{m.get('items', 0):,}"),
             ("period", span), ("windows", f"{len(summary.windows)} × {summary.window}"),
             ("segments", ", ".join(summary.by) or "all traffic"), ("engine", m.get("engine")),
             ("abstention threshold", "none" if m.get("abstention_threshold") is None else m["abstention_threshold"]),
             ("instability", f"top {m.get('instability_k')} of the {m.get('list_stage')} list, RBO p={m.get('rbo_p')}")]
    head = ('<header class="top"><div class="inner"><h1>' + e(title) + '</h1><dl class="facts">'
            + "".join(f"<dt>{e(k)}</dt><dd>{e(v)}</dd>" for k, v in facts) + "</dl></div></header>")
    sections = [_flags(outcome), _series(summary, outcome, config), _latency(summary), _resources(summary),
                _cost(summary), _unstable(summary),
                _sources(summary), _low(summary), _stale(summary), _notes(summary)]
    body = "<main>" + "\n".join(s for s in sections if s) + "</main>"
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{e(title)}</title><style>{CSS}{EXTRA_CSS}</style></head><body>\n{head}\n{body}\n</body></html>\n")

