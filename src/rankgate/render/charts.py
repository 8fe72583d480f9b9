"""Charts for the HTML report, drawn by matplotlib as inline SVG (no script, no network, no fonts to fetch).

matplotlib is imported here only, when a chart is drawn, so ``import rankgate`` and the CLI's start stay
fast. Output is deterministic: a fixed hash salt for SVG ids and no date in the metadata, so the same
numbers give byte-identical SVG.

Every label is plain text: math text is off (a segment value or a file name holding ``$`` would
otherwise be parsed as TeX, and fail to parse), line breaks and other control characters become spaces,
and the SVG writer escapes ``<`` and ``&``.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, cast

from rankgate.render.model import Curve
from rankgate.render.numbers import fmt_confidence, fmt_value

__all__ = ["rank_histogram_svg", "segment_svg", "sweep_svg"]

BLUE = "#2563eb"
GREY = "#9ca3af"
RED = "#dc2626"
AMBER = "#d97706"
INK = "#1f2937"
MUTED = "#6b7280"

_RC = {
    "svg.hashsalt": "rankgate",
    "svg.fonttype": "none",  # text stays text: smaller, selectable, drawn in the page's font
    "font.family": "sans-serif",
    "font.sans-serif": ["system-ui", "Segoe UI", "Helvetica", "Arial", "DejaVu Sans"],
    "font.size": 10,
    "axes.edgecolor": "#d1d5db",
    "axes.labelcolor": INK,
    "axes.titlesize": 11,
    "axes.titleweight": "bold",
    "axes.titlelocation": "left",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#eef0f3",
    "grid.linewidth": 0.8,
    "xtick.color": MUTED,
    "ytick.color": MUTED,
    "legend.frameon": False,
    "legend.fontsize": 9,
    "axes.axisbelow": True,
    "text.parse_math": False,  # user text ($, \\, ^, _) is shown as typed, never parsed as TeX
    "text.usetex": False,
}
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")


def plain(label: object) -> str:
    """A label as one line of plain text: control characters and line breaks become a space."""
    return _CONTROL.sub(" ", str(label))


def _legend(label: object) -> str:
    """A legend entry: matplotlib hides labels that start with ``_``, so those get a zero-width space first."""
    text = plain(label)
    return "\u200b" + text if text.startswith("_") else text


def _figure(width: float, height: float):
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def _svg(fig: Any, label: str) -> str:
    from matplotlib.backends.backend_svg import FigureCanvasSVG

    FigureCanvasSVG(fig)
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    text = buf.getvalue()
    text = text[text.index("<svg"):]  # drop the XML declaration and doctype: the SVG sits inside HTML
    # Scale with the page: keep the viewBox, let CSS set the size.
    text = re.sub(r'<svg([^>]*?) width="[^"]*" height="[^"]*"', r'<svg\1', text, count=1)
    from html import escape

    return text.replace("<svg", f'<svg role="img" aria-label="{escape(plain(label), quote=True)}" class="chart"', 1)


def _pct_axis(ax: Any) -> None:
    from matplotlib.ticker import PercentFormatter

    ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))


def sweep_svg(curves: Sequence[Curve], baseline: Sequence[Curve] = (), *, run_label: str = "run",
              baseline_label: str = "baseline", confidence: float = 0.95) -> str:
    """recall@k and ndcg@k over k, side by side; CI band, knee marked, baseline dashed."""
    import matplotlib
    from matplotlib.ticker import FixedLocator, NullLocator, ScalarFormatter

    base = {c.metric: c for c in baseline}
    with matplotlib.rc_context(cast(Any, _RC)):
        fig = _figure(10.5, 3.4)
        axes = fig.subplots(1, len(curves), sharey=False, squeeze=False)[0]
        for ax, c in zip(axes, curves):
            ks = list(c.ks)
            ax.set_xscale("log")
            if c.ci_low and not all(math.isnan(x) for x in c.ci_low):
                ax.fill_between(ks, c.ci_low, c.ci_high, color=BLUE, alpha=0.13, linewidth=0,
                                label=f"{fmt_confidence(confidence)} CI")
            b = base.get(c.metric)
            if b is not None:
                ax.plot(list(b.ks), b.means, color=GREY, linestyle="--", linewidth=1.6, label=_legend(baseline_label))
            ax.plot(ks, c.means, color=BLUE, linewidth=2, marker="o", markersize=2.8, label=_legend(run_label))
            if c.knee is not None:
                y = c.means[ks.index(c.knee)]
                ax.axvline(c.knee, color=AMBER, linestyle=":", linewidth=1.2)
                ax.plot([c.knee], [y], marker="o", markersize=7, markerfacecolor="white", markeredgecolor=AMBER,
                        markeredgewidth=2, linestyle="none", label=f"knee: k = {c.knee}")
            ticks = [t for t in (1, 2, 3, 5, 10, 20, 50, 100, 200, 500, 1000) if t <= ks[-1]]
            if ks[-1] not in ticks:
                ticks.append(ks[-1])
            ax.xaxis.set_major_locator(FixedLocator(ticks))
            ax.xaxis.set_minor_locator(NullLocator())
            ax.xaxis.set_major_formatter(ScalarFormatter())
            ax.set_xlim(0.9, ks[-1] * 1.1)
            ax.set_ylim(0, 1.02)
            if c.metric.startswith("recall"):
                _pct_axis(ax)
            ax.set_xlabel("k (log scale)")
            ax.set_title(plain(f"{c.metric}@k"))
            ax.legend(loc="lower right")
        return _svg(fig, "k-sweep of " + " and ".join(f"{c.metric}@k" for c in curves))


def rank_histogram_svg(hist: Sequence[tuple[str, int]], baseline: Sequence[tuple[str, int]] = (), *,
                       run_label: str = "run", baseline_label: str = "baseline") -> str:
    """Where the first relevant chunk lands: queries per rank bucket."""
    import matplotlib

    with matplotlib.rc_context(cast(Any, _RC)):
        fig = _figure(10.5, 2.6)
        ax = fig.subplots()
        labels = [h[0] for h in hist]
        x = list(range(len(labels)))
        colors = [RED if lab == "not found" else BLUE for lab in labels]
        width = 0.4 if baseline else 0.7
        shift = width / 2 if baseline else 0.0
        bars = ax.bar([i + shift for i in x], [h[1] for h in hist], width=width, color=colors, label=_legend(run_label))
        if baseline:
            ax.bar([i - shift for i in x], [h[1] for h in baseline], width=width, color=GREY, label=_legend(baseline_label))
            ax.legend(loc="upper right")
        ax.bar_label(bars, fontsize=8, color=MUTED, padding=2)
        ax.set_xticks(x, labels)
        ax.set_ylabel("queries")
        ax.set_xlabel("rank of the first relevant chunk")
        ax.grid(axis="x", visible=False)
        ax.margins(y=0.15)
        return _svg(fig, "queries by rank of the first relevant chunk")


def segment_svg(rows: Sequence[tuple[str, float, float, float, int]], *, metric: str, overall: float,
                floor: float | None = None, confidence: float = 0.95, status: Mapping[str, str] | None = None) -> str:
    """Forest plot of one metric over segments: mean with its interval, the overall mean and a gate floor.

    ``status`` (segment -> "fail" | "warn") colours a segment red or amber as the report's table does;
    without it a segment whose CI lies below all queries, or reaches below the floor, is amber."""
    import matplotlib

    with matplotlib.rc_context(cast(Any, _RC)):
        fig = _figure(10.5, 0.9 + 0.28 * len(rows))
        ax = fig.subplots()
        y = list(range(len(rows)))[::-1]
        for yi, (label, mean, lo, hi, _n) in zip(y, rows):
            if status is not None:
                color = {"fail": RED, "warn": AMBER}.get(status.get(label, ""), BLUE)
            else:
                flagged = (not math.isnan(hi) and hi < overall) or (floor is not None and not math.isnan(lo) and lo < floor)
                color = AMBER if flagged else BLUE
            if not math.isnan(lo):
                ax.plot([lo, hi], [yi, yi], color=color, linewidth=2.2, alpha=0.45, solid_capstyle="round")
            ax.plot([mean], [yi], marker="o", color=color, markersize=5)
        ax.axvline(overall, color=INK, linestyle="--", linewidth=1)
        if floor is not None:
            ax.axvline(floor, color=RED, linestyle=":", linewidth=1.2)
        ax.set_yticks(y, [plain(f"{r[0]}  (n={r[4]})") for r in rows])
        ax.set_ylim(-0.7, len(rows) - 0.3)
        lows = [v for r in rows for v in (r[1], r[2]) if not math.isnan(v)] + [overall] + ([floor] if floor is not None else [])
        top = 1.0 if _is_share(metric) else max(max(v for r in rows for v in (r[1], r[3]) if not math.isnan(v)), overall) * 1.05
        ax.set_xlim(max(0.0, math.floor(min(lows) * 10) / 10 - 0.05), top)
        if _is_share(metric):
            from matplotlib.ticker import PercentFormatter

            ax.xaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
        ax.grid(axis="y", visible=False)
        shown = fmt_value(metric, overall)
        ax.set_title(plain(f"{metric} by segment: dot = mean, bar = {fmt_confidence(confidence)} CI, dashed = all queries ({shown})"
                     + (", dotted red = gate floor" if floor is not None else "")), fontsize=10, fontweight="normal")
        return _svg(fig, f"{metric} by segment with confidence intervals")


def _is_share(metric: str) -> bool:
    from rankgate.metrics.info import is_share

    return is_share(metric)
