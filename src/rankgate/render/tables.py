"""Renderers of per-segment summaries and k-sweeps: a ``rich`` table for the terminal and a markdown table.

Run it to see it: ``python -m rankgate.render.tables gold.jsonl run.jsonl intent``.
"""

from __future__ import annotations

import sys

from rankgate.stats.segments import SegmentRow, SegmentSummary, display_field
from rankgate.stats.sweep import KSweep
from rankgate.render.lines import segment_lines
from rankgate.render.numbers import fmt_confidence, fmt_score, fmt_value, fmt_value_ci, md_escape

__all__ = ["FitToWidth", "segment_markdown", "segment_table", "shown_rows", "sweep_markdown", "sweep_table"]


class FitToWidth:
    """A table drawn as ``build(False)`` when it fits the console, else as ``build(True)``: the
    builder's narrow form (a value and its interval stacked in one cell, lighter borders, labels that
    wrap), so a narrow terminal (a CI log at 80 columns) never cuts a number."""

    def __init__(self, build) -> None:  # build: (narrow: bool) -> a rich renderable
        self.build = build

    def _pick(self, console, options):
        from rich.measure import Measurement

        wide = self.build(False)
        natural = Measurement.get(console, options.update_width(10_000), wide).maximum
        return wide if natural <= options.max_width else self.build(True)

    def __rich_console__(self, console, options):
        yield self._pick(console, options)

    def __rich_measure__(self, console, options):
        from rich.measure import Measurement

        return Measurement.get(console, options, self._pick(console, options))


SEGMENTS_WHERE = "summary.json (--out) and --json"
"""Where the segments a table leaves out are (``rankgate evaluate``, ``rankgate answers``)."""


def shown_rows(summary: SegmentSummary) -> tuple[list[SegmentRow], list[str]]:
    """The rows a table shows, field by field (at most :data:`~rankgate.stats.segments.MAX_SHOWN_SEGMENTS`
    segments of a field: the largest), and the sentences saying what was left out and which field hardly
    groups its queries (:func:`rankgate.render.lines.segment_lines`)."""
    rows: list[SegmentRow] = []
    lines: list[str] = []
    for key in summary.by:
        shown = summary.shown(key)
        for label in shown.labels:
            rows += [r for m in summary.metrics for r in [summary.get(key, label, m)] if r is not None]
        lines += segment_lines(key, shown, SEGMENTS_WHERE)
    return rows, lines


def segment_table(summary: SegmentSummary, title: str | None = None):
    """A ``rich`` table: one row per segment and metric (values as the panel shows them: 85.7% for a
    share, 0.726 for a score, so both tables agree), then a line per field that had more segments than
    a table shows, and a note on a field that hardly groups its queries.

    On a narrow terminal only the segment column gives way: its label wraps (at spaces, else inside
    the word), while the metric, ``n``, mean and CI columns keep their full width."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    with_ci = summary.resamples > 0
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    table.add_column("segment", overflow="fold")
    table.add_column("metric", no_wrap=True)
    table.add_column("n", justify="right", no_wrap=True)
    table.add_column("mean", justify="right", no_wrap=True)
    if with_ci:
        table.add_column(f"{fmt_confidence(summary.confidence)} CI", justify="right", no_wrap=True)
    previous = None
    rows, lines = shown_rows(summary)
    for r in rows:
        name = f"{display_field(r.field)} = {r.label}"
        cells = [name if name != previous else "", r.metric, str(r.n), fmt_value(r.metric, r.mean)]
        if with_ci:
            cells.append(fmt_value_ci(r.metric, r.ci_low, r.ci_high))
        if previous is not None and name != previous:
            table.add_section()
        previous = name
        table.add_row(*cells)
    if not lines:
        return table
    return Group(table, *(Text(line) for line in lines))


def segment_markdown(summary: SegmentSummary) -> str:
    """The same rows as a GitHub-flavoured markdown table, and the same lines after it."""
    with_ci = summary.resamples > 0
    head = ["segment", "metric", "n", "mean"] + ([f"{fmt_confidence(summary.confidence)} CI"] if with_ci else [])
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join([":--", ":--", "--:", "--:"] + (["--:"] if with_ci else [])) + "|"]
    rows, notes = shown_rows(summary)
    for r in rows:
        cells = [md_escape(f"{display_field(r.field)} = {r.label}"), md_escape(r.metric), str(r.n), fmt_value(r.metric, r.mean)]
        if with_ci:
            cells.append(fmt_value_ci(r.metric, r.ci_low, r.ci_high))
        lines.append("| " + " | ".join(cells) + " |")
    if notes:
        lines += [""] + [md_escape(line, 400) for line in notes]
    return "\n".join(lines) + "\n"


def sweep_table(sweep: KSweep, title: str | None = None):
    """A ``rich`` table: one row per metric, one column per k, and the area under the curve."""
    from rich.table import Table

    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    table.add_column("metric", no_wrap=True)
    for k in sweep.ks:
        table.add_column(f"@{k}", justify="right")
    table.add_column("AUC", justify="right")
    for c in sweep.curves:
        table.add_row(c.metric, *(fmt_score(v, 4) for v in c.means), fmt_score(c.auc, 4))
    if not sweep.segments:
        return table
    from rich.console import Group
    from rich.text import Text

    knees = Table(title="knee by segment", title_justify="left", show_edge=False, pad_edge=False)
    knees.add_column("segment", overflow="fold")
    knees.add_column("metric", no_wrap=True)
    knees.add_column("n", justify="right", no_wrap=True)
    for k in sweep.ks:
        knees.add_column(f"@{k}", justify="right")
    knees.add_column("knee", justify="right", no_wrap=True)
    rows, lines = _knee_rows(sweep)
    for name, metric, n, means, at in rows:
        knees.add_row(name, metric, n, *(fmt_score(v, 4) for v in means), at)
    return Group(table, Text(""), knees, *(Text(line) for line in lines))


def _knee_rows(sweep: KSweep) -> tuple[list[tuple[str, str, str, tuple[float, ...], str]], list[str]]:
    """The knee table's rows (all queries first, then each shown segment of each field) and the lines saying
    which segments were left out (:func:`rankgate.render.lines.segment_lines`)."""
    from rankgate.stats.segments import shown_segments

    overall = sweep.knees()
    rows = [("all queries", c.metric, str(max(c.n, default=0)), c.means, _knee_cell(overall[c.metric]))
            for c in sweep.curves]
    lines: list[str] = []
    by_field: dict[str, dict[str, list]] = {}
    for s in sweep.segments:
        by_field.setdefault(s.field, {}).setdefault(s.label, []).append(s)
    for key, labels in by_field.items():
        shown = shown_segments({label: max(s.n for s in of) for label, of in labels.items()})
        for label in shown.labels:
            rows += [(f"{display_field(key)} = {label}", s.metric, str(s.n), s.means, _knee_cell(s.knee))
                     for s in labels[label]]
        lines += segment_lines(key, shown, SEGMENTS_WHERE)
    return rows, lines


def _knee_cell(k: int | None) -> str:
    return "—" if k is None else str(k)


def sweep_markdown(sweep: KSweep) -> str:
    """The same rows as a GitHub-flavoured markdown table."""
    head = ["metric", *(f"@{k}" for k in sweep.ks), "AUC"]
    lines = ["| " + " | ".join(head) + " |", "|:--|" + "--:|" * (len(head) - 1)]
    for c in sweep.curves:
        lines.append("| " + " | ".join([md_escape(c.metric, 60), *(fmt_score(v, 4) for v in c.means), fmt_score(c.auc, 4)]) + " |")
    if sweep.segments:
        rows, notes = _knee_rows(sweep)
        head = ["segment", "metric", "n", *(f"@{k}" for k in sweep.ks), "knee"]
        lines += ["", "Knee by segment:", "", "| " + " | ".join(head) + " |", "|:--|:--|" + "--:|" * (len(head) - 2)]
        lines += ["| " + " | ".join([md_escape(name, 60), md_escape(metric, 60), n, *(fmt_score(v, 4) for v in means), at])
                  + " |" for name, metric, n, means, at in rows]
        if notes:
            lines += [""] + [md_escape(line, 400) for line in notes]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # pragma: no cover - a demonstration
    from rich.console import Console

    from rankgate.scoring.engine import evaluate
    from rankgate.stats.segments import segment_summary

    if len(sys.argv) != 4:
        sys.exit("usage: python -m rankgate.render.tables GOLD RUN FIELD")
    result = evaluate(sys.argv[1], sys.argv[2], ["recall@10", "ndcg@10"])
    Console().print(segment_table(segment_summary(result, sys.argv[3])))
    print(segment_markdown(segment_summary(result, sys.argv[3])))
