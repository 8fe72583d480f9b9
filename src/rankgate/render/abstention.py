"""The abstention section of the HTML report (``rankgate report --abstention FILE``): the risk–coverage
curve of the calibration, the threshold chosen and its guarantee. The file is what
``rankgate calibrate-abstention`` writes (docs/traces.md); this module reads it and renders it.
"""

from __future__ import annotations

from html import escape
from typing import Any, cast

from rankgate.traces.abstention import AbstentionFile, read_abstention
from rankgate.render.numbers import fmt_count, fmt_share, fmt_sig, fmt_score

__all__ = ["Abstention", "abstention_html", "load_abstention"]


#: The file as read (:func:`rankgate.traces.abstention.read_abstention`).
Abstention = AbstentionFile


def load_abstention(path: str | None) -> Abstention | None:
    """The calibration file, checked enough to draw it; None when no path is given."""
    return None if path is None else read_abstention(path, curve=True)


def _chart(a: Abstention) -> str:
    import matplotlib

    from rankgate.render.charts import _RC, AMBER, BLUE, GREY, _figure, _pct_axis, _svg

    pts = [(s["coverage"], 1 - s["precision"]) for s in a.curve if isinstance(s.get("precision"), (int, float))]
    with matplotlib.rc_context(cast(Any, _RC)):
        fig = _figure(6.0, 3.2)
        ax = fig.subplots()
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], color=BLUE, linewidth=2, marker="o", markersize=2.8,
                    label="selective risk (1 − precision)")
        target = float(a.block["target_precision"])
        ax.axhline(1 - target, color=GREY, linestyle="--", linewidth=1.2, label=f"allowed risk ({fmt_share(1 - target, 0)})")
        if a.block.get("threshold") is not None and isinstance(a.block.get("coverage"), (int, float)):
            cov, prec = a.block["coverage"], a.block.get("precision")
            if isinstance(prec, (int, float)):
                ax.plot([cov], [1 - prec], marker="o", markersize=8, markerfacecolor="white", markeredgecolor=AMBER,
                        markeredgewidth=2, linestyle="none", label="chosen threshold")
        ax.set_xlim(0, 1.02)
        ax.set_ylim(0, max([0.05, 1 - target + 0.05] + [p[1] * 1.1 for p in pts]))
        ax.set_xlabel("coverage (share of gold queries answered)")
        _pct_axis(ax)
        ax.xaxis.set_major_formatter(matplotlib.ticker.PercentFormatter(1.0, decimals=0))
        ax.set_title("risk–coverage")
        ax.legend(loc="upper left")
        return _svg(fig, "risk–coverage curve of the abstention threshold")


def abstention_html(a: Abstention) -> str:
    """The report section."""
    b = a.block
    t = b.get("threshold")
    if t is None:
        verdict = (f"No threshold reaches precision {fmt_sig(b.get('target_precision'))} with confidence "
                   f"1 − {fmt_sig(b.get('delta'))}: the retriever cannot tell its confident answers apart yet.")
    else:
        verdict = (f"Abstain when the top score is below <b>{escape(fmt_sig(t, 6))}</b>: answers "
                   f"{escape(fmt_count(b.get('answered'), grouped=False))} of {escape(fmt_count(b.get('n'), grouped=False))} gold queries "
                   f"(coverage {escape(fmt_share(b.get('coverage')))}), {escape(str(b.get('metric', '')))} precision "
                   f"{escape(fmt_score(b.get('precision')))}, one-sided Clopper–Pearson lower bound "
                   f"{escape(fmt_score(b.get('lower_bound')))} ≥ {escape(fmt_sig(b.get('target_precision')))} "
                   f"(delta {escape(fmt_sig(b.get('delta')))}).")
    return ('<section id="abstention"><h2>Abstention</h2>'
            f"<p>{verdict}</p>{_chart(a)}"
            f'<p class="note">From {escape(a.path)}; thresholds walked strict to loose, stopping at the first whose '
            "bound falls under the target (see docs/traces.md).</p></section>")
