"""The retrieval panel for the terminal (rich): each metric's mean with its interval and a bar, latency
median/p90, and — given a comparison — the baseline, the change, its paired interval and a verdict.

::

    from rankgate.render.panel import print_panel, retrieval_panel
    print_panel(result, cis)                            # after rankgate.evaluate + stats.metric_cis
    print_panel(cand, cis, comparison=compare(base, cand))
    console.print(retrieval_panel(result, cis))         # or place the renderable yourself

Run it to see it: ``python -m rankgate.render.panel gold.jsonl run.jsonl [baseline_run.jsonl]``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rankgate.model.results import EvaluationResult
from rankgate.render.lines import latency_lines
from rankgate.render.numbers import fmt_confidence, fmt_delta, fmt_delta_ci, fmt_sig, fmt_value, fmt_value_ci
from rankgate.stats.segments import display_field
from rankgate.stats.verdict import correction_line

if TYPE_CHECKING:  # pragma: no cover
    from rankgate.stats.paired import Comparison

__all__ = ["PANEL_METRICS", "print_panel", "retrieval_panel"]

# The panel's metric set; retrieval_panel shows whichever of them the result holds (else every metric).
PANEL_METRICS = ("recall@1", "recall@3", "recall@5", "ndcg@5", "precision@5", "distinct_docs@5", "mrr")
BAR_WIDTH = 20
VERDICT_STYLE = {"better": "green", "worse": "red"}  # every other verdict (rankgate.stats.verdict) is dim


def _bar(metric: str, x: float, low: float, high: float) -> Any:
    """A bar for a value in [0, 1]: filled to the mean, shaded to the interval's top, the rest dotted."""
    from rich.text import Text

    from rankgate.metrics import metric_info

    if math.isnan(x) or metric_info(metric).bounds != (0.0, 1.0) or not 0.0 <= x <= 1.0:
        return Text("")
    cells = []
    for i in range(BAR_WIDTH):
        mid = (i + 0.5) / BAR_WIDTH
        if mid <= x:
            cells.append(("█", "cyan"))
        elif not math.isnan(high) and mid <= high:
            cells.append(("▒", "cyan dim"))
        else:
            cells.append(("·", "dim"))
    return Text.assemble(*cells)


def retrieval_panel(
    result: EvaluationResult,
    cis: Mapping[str, tuple[float, float]] | None = None,
    confidence: float = 0.95,
    *,
    comparison: Comparison | None = None,
    metrics: Sequence[str] | None = None,
    title: str | None = "Retrieval",
    bars: bool = True,
):
    """A rich Table: the panel metrics that ``result`` holds (or ``metrics``), with intervals and bars;
    latency as the caption; with ``comparison`` (from :func:`rankgate.stats.paired.compare`, the result as its
    candidate), the baseline, change, change interval and verdict."""
    from rich.table import Table

    if metrics is None:
        names = [m for m in PANEL_METRICS if m in result.values] or list(result.metric_names)
    else:
        names = [result.resolve_metric(m) for m in metrics]
    conf = f"{fmt_confidence(confidence)} CI"
    table = Table(title=title, title_justify="left", title_style="bold", show_edge=False, pad_edge=False)
    table.add_column("metric", no_wrap=True)
    table.add_column("mean", justify="right", style="bold", no_wrap=True)
    if cis:
        table.add_column(conf, justify="right", no_wrap=True)
    table.add_column("n", justify="right", no_wrap=True)
    if bars:
        table.add_column("", no_wrap=True)
    if comparison is not None:
        for name in ("baseline", "change", f"change {conf}"):
            table.add_column(name, justify="right", no_wrap=True)
        table.add_column("verdict", min_width=7)  # wraps at its space in a narrow terminal
    for m in names:
        s = result.summary(m)
        low, high = (cis or {}).get(m, (math.nan, math.nan))
        row: list[Any] = [m, fmt_value(m, s.mean)]
        if cis:
            row.append(fmt_value_ci(m, low, high))
        row += [str(s.n), *([_bar(m, s.mean, low, high)] if bars else [])]
        if comparison is not None:
            d = comparison.row(m)
            if d is None:
                row += ["—", "—", "—", ""]
            else:
                verdict = d.verdict(comparison.confidence)
                style = VERDICT_STYLE.get(verdict, "dim")
                row += [fmt_value(m, d.baseline), f"[{style}]{fmt_delta(m, d.delta)}[/]",
                        fmt_delta_ci(m, d.ci_low, d.ci_high), f"[{style}]{verdict}[/]"]
        table.add_row(*row)
    captions = []
    lat = latency_lines(result)
    if lat:
        captions.append("latency " + "; ".join(lat))
    if comparison is not None and any(not math.isnan(r.p_holm) for r in comparison.rows):
        families = comparison.holm_families
        captions.append(f"verdicts: {correction_line(families[0][1], [(display_field(str(f)), n) for f, n in families[1:]])}"
                        f"; α = {fmt_sig(1 - comparison.confidence, 2)}")
    if captions:
        table.caption = "\n".join(captions)
        table.caption_justify = "left"
    return table


def print_panel(result: EvaluationResult, cis: Mapping[str, tuple[float, float]] | None = None,
                confidence: float = 0.95, *, comparison: Comparison | None = None, console: Any = None,
                metrics: Sequence[str] | None = None) -> None:
    """Print :func:`retrieval_panel` to ``console`` (default: a new rich Console on stdout)."""
    from rich.console import Console

    console = console or Console()
    # with a comparison the row is wide: the bars go first when the terminal is narrow
    bars = comparison is None or console.width >= 150
    console.print(retrieval_panel(result, cis, confidence, comparison=comparison, metrics=metrics, bars=bars))


if __name__ == "__main__":  # pragma: no cover
    import sys

    from rankgate.scoring.engine import evaluate
    from rankgate.stats.bootstrap import metric_cis

    cand = evaluate(sys.argv[1], sys.argv[2], list(PANEL_METRICS))
    cmp = None
    if len(sys.argv) > 3:
        from rankgate.stats.paired import compare

        cmp = compare(evaluate(sys.argv[1], sys.argv[3], list(PANEL_METRICS)), cand)
    print_panel(cand, metric_cis(cand), comparison=cmp)
