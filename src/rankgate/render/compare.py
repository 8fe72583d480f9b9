"""Renderers of a comparison of runs (:class:`rankgate.stats.paired.PairedComparison`): terminal (rich),
markdown, JSON-able dict. One set for both forms: two runs (:class:`~rankgate.stats.paired.Comparison`, with
segments and most-changed queries) and several against a baseline
(:class:`~rankgate.stats.paired.MultiComparison`); the ``multi_comparison_*`` names are kept until 0.3.

Run it to see it: ``python -m rankgate.render.compare gold.jsonl base_run.jsonl cand_run.jsonl``.
"""

from __future__ import annotations

from typing import Any

from rankgate.stats.paired import Comparison, DeltaRow, MultiComparison, PairedComparison
from rankgate.stats.segments import display_field, shown_segments
from rankgate.stats.verdict import correction_line
from rankgate.render.lines import segment_lines
from rankgate.render.numbers import fmt_confidence, fmt_delta, fmt_delta_ci, fmt_p, fmt_rank, fmt_value, md_escape, shorten

__all__ = [
    "comparison_dict", "comparison_markdown", "comparison_renderable",
    "multi_comparison_dict", "multi_comparison_markdown", "multi_comparison_renderable",
]


def _scope(r: DeltaRow) -> str:
    return "all queries" if r.field is None else f"{display_field(r.field)} = {r.segment}"


def comparison_dict(cmp: PairedComparison) -> dict[str, Any]:
    """Plain JSON-able data (NaN as null): the comparison's ``to_dict``."""
    return cmp.to_dict()


def _queries(n: int) -> str:
    return f"{n} query" if n == 1 else f"{n} queries"


def _ids(qs: tuple[str, ...], limit: int = 5) -> str:
    """The first ``limit`` query ids, shortened, and `…` when there are more."""
    return ", ".join(shorten(q, 40) for q in qs[:limit]) + (" …" if len(qs) > limit else "")


def _method(cmp: PairedComparison) -> str:
    """How the numbers were made, in one sentence: the interval, the test and Holm's families (the headline rows;
    each ``by`` field's segment rows apart); the several-runs form counts its runs and metrics."""
    ci = f"{fmt_confidence(cmp.confidence)} CI of the change: paired bootstrap over queries ({cmp.resamples} resamples, seed {cmp.seed})"
    if cmp.resampling is not None:  # (the cluster bootstrap: stats/clusters.py)
        ci = (f"{fmt_confidence(cmp.confidence)} CI of the change: paired bootstrap over conversations "
              f"({cmp.resamples} resamples, seed {cmp.seed}); {cmp.resampling.line()}")
    families = cmp.holm_families
    headline = families[0][1]
    if cmp.detailed:
        corrected = correction_line(headline, [(display_field(str(f)), n) for f, n in families[1:]])
    else:
        corrected = correction_line(headline, [], what="row", detail=f" ({len(cmp.run_names)} runs × {len(cmp.metrics)} metrics)")
    p = f"p: paired sign-flip randomisation test ({cmp.n_permutations} flips), {corrected}"
    if cmp.resampling is not None:
        p = f"p: paired sign-flip randomisation test of each conversation's change ({cmp.n_permutations} flips), {corrected}"
    return f"{ci}; {p}."


def _changed(cmp: Comparison) -> str:
    """The footer's first line: queries paired, and how many changed on each metric."""
    counts = cmp.changed_by_metric or ((cmp.primary, cmp.changed),)
    if len(counts) == 1:
        return f"{_queries(cmp.paired)} paired by query id; {counts[0][1]} changed on {counts[0][0]}."
    return (f"{_queries(cmp.paired)} paired by query id; queries changed: "
            + ", ".join(f"{m} {n}" for m, n in counts) + ".")


def _shown(cmp: Comparison) -> tuple[list[DeltaRow], list[str]]:
    """The rows the table shows: under each metric all queries, then at most
    :data:`~rankgate.stats.segments.MAX_SHOWN_SEGMENTS` segments of each field (the largest: most queries where
    the metrics apply in both runs), and the sentences on what was left out (every row is in ``--json``)."""
    sizes: dict[str, dict[str, int]] = {}
    for r in cmp.rows:
        if r.field is not None:
            of = sizes.setdefault(r.field, {})
            of[str(r.segment)] = max(of.get(str(r.segment), 0), r.n)
    shown = {f: shown_segments(of, cmp.paired) for f, of in sizes.items()}
    lines = [line for f, sh in shown.items() for line in segment_lines(f, sh, "the --json output")]
    if all(not sh.left_out for sh in shown.values()):
        return list(cmp.rows), lines
    at = {(r.metric, r.field, r.segment): r for r in cmp.rows}
    rows = []
    for m in dict.fromkeys(r.metric for r in cmp.rows):
        rows += [r for r in [at.get((m, None, None))] if r is not None]
        for f, sh in shown.items():
            rows += [r for label in sh.labels for r in [at.get((m, f, label))] if r is not None]
    return rows, lines


def _coverage(cmp: Comparison, limit: int = 5, segments: list[str] | None = None) -> list[str]:
    def ids(qs: tuple[str, ...]) -> str:
        return _ids(qs, limit)

    lines = [_changed(cmp)]
    if cmp.missing_from_baseline_run:
        lines.append(f"{_queries(len(cmp.missing_from_baseline_run))} missing from the baseline run (scored 0 there): {ids(cmp.missing_from_baseline_run)}")
    if cmp.missing_from_candidate_run:
        lines.append(f"{_queries(len(cmp.missing_from_candidate_run))} missing from the candidate run (scored 0 there): {ids(cmp.missing_from_candidate_run)}")
    if cmp.only_in_baseline:
        lines.append(f"{_queries(len(cmp.only_in_baseline))} only in the baseline result, not compared: {ids(cmp.only_in_baseline)}")
    if cmp.only_in_candidate:
        lines.append(f"{_queries(len(cmp.only_in_candidate))} only in the candidate result, not compared: {ids(cmp.only_in_candidate)}")
    if cmp.not_compared:
        lines.append(f"metrics evaluated in one result only, not compared: {', '.join(cmp.not_compared)}")
    return lines + (_shown(cmp)[1] if segments is None else segments)


def comparison_renderable(cmp: PairedComparison):
    """A ``rich`` renderable. Two runs: the delta table, the most-changed queries, coverage notes; it fits the
    console's width: names stay whole, columns move closer together in a narrow terminal, and the
    verdict wraps at its space. Several runs: per metric, the baseline's mean and each run's change."""
    if isinstance(cmp, MultiComparison):
        return _multi_renderable(cmp)
    assert isinstance(cmp, Comparison)
    return _ComparisonView(cmp)


class _ComparisonView:
    def __init__(self, cmp: Comparison) -> None:
        self.cmp = cmp
        self.rows, self.lines = _shown(cmp)

    def __rich_console__(self, console: Any, options: Any):
        from rich.measure import Measurement

        table = _delta_table(self.cmp, pad=1, rows=self.rows)
        natural = Measurement.get(console, options.update_width(10_000), table).maximum
        if natural > options.max_width:
            table = _delta_table(self.cmp, pad=0, rows=self.rows)  # the box's own space still separates the columns
            natural = Measurement.get(console, options.update_width(10_000), table).maximum
            if natural > options.max_width:
                # Still too wide: the first column gives way (a long segment label wraps, metric names
                # stay whole), never a number column.
                widest = max((len(_label(r)) for r in self.rows), default=6)
                verdicts = [r.verdict(self.cmp.confidence) for r in self.rows]
                slack = max(map(len, verdicts), default=0) - max(len(w) for w in ["verdict", *" ".join(verdicts).split()])
                excess = max(0, natural - options.max_width - max(0, slack))  # what the verdict's wrap cannot take
                table = _delta_table(self.cmp, pad=0, label_width=widest - excess, rows=self.rows)
        yield from _parts(self.cmp, table, pad=0 if options.max_width < 100 else 1, lines=self.lines)

    def __rich_measure__(self, console: Any, options: Any):
        from rich.measure import Measurement

        return Measurement.get(console, options, _delta_table(self.cmp, pad=1, rows=self.rows))


def _label(r: Any) -> str:
    return r.metric if r.field is None else f"  {shorten(_scope(r), 40)}"


def _delta_table(cmp: Comparison, pad: int, label_width: int | None = None, rows: list[DeltaRow] | None = None):
    from rich import box
    from rich.table import Table
    from rich.text import Text

    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, pad, 0, 0))
    # In a narrow terminal the first column keeps its names whole (never "metri"/"c"); the verdict
    # wraps at its space instead ("within" / "noise"). With ``label_width`` (a terminal too narrow
    # even so) a segment label wraps within that width, but never below the longest metric name.
    rows = _shown(cmp)[0] if rows is None else rows
    labels = [_label(r) for r in rows]
    if label_width is None:
        table.add_column("metric", no_wrap=True, min_width=max(map(len, labels), default=6))
    else:
        names = max((len(r.metric) for r in rows), default=6)
        width = max(label_width, names, len("metric"))
        table.add_column("metric", overflow="fold", width=width)
    for name in ("n", "baseline", "candidate", "change", f"{fmt_confidence(cmp.confidence)} CI", "Holm p"):
        table.add_column(name, justify="right", no_wrap=True)
    words = [w for r in rows for w in r.verdict(cmp.confidence).split()]
    table.add_column("verdict", min_width=max(map(len, [*words, "verdict"])))
    current = None
    for r, label in zip(rows, labels):
        if current is not None and r.metric != current:
            table.add_section()
        current = r.metric
        verdict = r.verdict(cmp.confidence)
        style = {"worse": "red", "better": "green"}.get(verdict)
        table.add_row(
            label, str(r.n), fmt_value(r.metric, r.baseline), fmt_value(r.metric, r.candidate),
            fmt_delta(r.metric, r.delta), fmt_delta_ci(r.metric, r.ci_low, r.ci_high), fmt_p(r.p_holm),
            Text(verdict, style=style or ""),
        )
    return table


def _parts(cmp: Comparison, table: Any, pad: int, lines: list[str] | None = None) -> list[Any]:
    from rich import box
    from rich.table import Table
    from rich.text import Text

    parts: list[Any] = [Text(f"{cmp.candidate_label} (candidate) vs {cmp.baseline_label} (baseline)", style="bold"), table]
    for title, changes in (("Most regressed", cmp.regressions), ("Most improved", cmp.improvements)):
        if not changes:
            continue
        q = Table(title=f"{title} queries on {cmp.primary}", title_justify="left", box=box.SIMPLE_HEAD,
                  show_edge=False, pad_edge=False, padding=(0, pad, 0, 0))
        q.add_column("query_id", no_wrap=True, min_width=max((len(shorten(c.query_id, 40)) for c in changes), default=8))
        for name in ("baseline", "candidate", "change", "first relevant rank"):
            q.add_column(name, justify="right", no_wrap=True)
        q.add_column("note")
        for c in changes:
            q.add_row(shorten(c.query_id, 40), fmt_value(c.metric, c.baseline), fmt_value(c.metric, c.candidate),
                      fmt_delta(c.metric, c.delta), f"{fmt_rank(c.baseline_rank)} → {fmt_rank(c.candidate_rank)}", c.note)
        parts.extend([Text(""), q])
    parts.append(Text(""))
    parts.extend(Text(line) for line in _coverage(cmp, segments=lines))
    parts.append(Text(_method(cmp), style="dim"))
    return parts


def comparison_markdown(cmp: PairedComparison) -> str:
    """GitHub-flavoured markdown with the same content as the terminal table."""
    if isinstance(cmp, MultiComparison):
        return _multi_markdown(cmp)
    assert isinstance(cmp, Comparison)
    ci = f"{fmt_confidence(cmp.confidence)} CI"
    out = [f"**{md_escape(cmp.candidate_label)}** (candidate) vs **{md_escape(cmp.baseline_label)}** (baseline)", ""]
    out.append(f"| metric / segment | n | baseline | candidate | change | {ci} | Holm p | verdict |")
    out.append("|:--|--:|--:|--:|--:|--:|--:|:--|")
    rows, lines = _shown(cmp)
    for r in rows:
        label = md_escape(r.metric) if r.field is None else "↳ " + md_escape(_scope(r))
        out.append(
            f"| {label} | {r.n} | {fmt_value(r.metric, r.baseline)} | {fmt_value(r.metric, r.candidate)} | "
            f"{fmt_delta(r.metric, r.delta)} | {fmt_delta_ci(r.metric, r.ci_low, r.ci_high)} | {fmt_p(r.p_holm)} | "
            f"{r.verdict(cmp.confidence)} |"
        )
    for title, changes in (("Most regressed", cmp.regressions), ("Most improved", cmp.improvements)):
        if not changes:
            continue
        out += ["", f"**{title} queries on {md_escape(cmp.primary)}**", ""]
        out.append("| query_id | baseline | candidate | change | first relevant rank | note |")
        out.append("|:--|--:|--:|--:|--:|:--|")
        for c in changes:
            out.append(
                f"| {md_escape(c.query_id)} | {fmt_value(c.metric, c.baseline)} | {fmt_value(c.metric, c.candidate)} | "
                f"{fmt_delta(c.metric, c.delta)} | {fmt_rank(c.baseline_rank)} → {fmt_rank(c.candidate_rank)} | {md_escape(c.note)} |"
            )
    out.append("")
    out.extend(f"- {md_escape(line, 400)}" for line in _coverage(cmp, segments=lines))
    out += ["", f"<sub>{md_escape(_method(cmp), 400)}</sub>", ""]
    return "\n".join(out)


# -- several runs against one baseline ------------------------------------------------------------
# rankgate 0.1's names of the renderers of several runs: the same functions, kept until 0.3.
multi_comparison_dict = comparison_dict
multi_comparison_markdown = comparison_markdown
multi_comparison_renderable = comparison_renderable


def _multi_coverage(cmp: MultiComparison, limit: int = 5) -> list[str]:
    def ids(qs: tuple[str, ...]) -> str:
        return _ids(qs, limit)

    counts = sorted({p.paired for p in cmp.pairings})
    if len(counts) == 1:
        lines = [f"{_queries(counts[0])} paired by query id with the baseline, {cmp.baseline}."]
    else:
        lines = [f"Queries paired by query id with the baseline, {cmp.baseline}: "
                 + ", ".join(f"{p.system} {p.paired}" for p in cmp.pairings) + "."]
    if cmp.missing_from_baseline_run:
        lines.append(f"{_queries(len(cmp.missing_from_baseline_run))} missing from the baseline run (scored 0 there): {ids(cmp.missing_from_baseline_run)}")
    for p in cmp.pairings:
        if p.missing_from_run:
            lines.append(f"{_queries(len(p.missing_from_run))} missing from {p.system} (scored 0 there): {ids(p.missing_from_run)}")
        if p.only_in_baseline:
            lines.append(f"{_queries(len(p.only_in_baseline))} only in the baseline's result, not in {p.system}'s: {ids(p.only_in_baseline)}")
        if p.only_in_system:
            lines.append(f"{_queries(len(p.only_in_system))} only in {p.system}'s result, not compared: {ids(p.only_in_system)}")
    if cmp.not_compared:
        lines.append(f"metrics not evaluated in every result, not compared: {', '.join(cmp.not_compared)}")
    return lines


def _multi_renderable(cmp: MultiComparison):
    """A ``rich`` renderable: per metric, the baseline's mean and each run's change against it."""
    from rich import box
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    parts: list[Any] = [Text(f"{len(cmp.systems)} runs vs {cmp.baseline} (baseline)", style="bold")]
    # One space between columns (not the two-run table's two) keeps eight columns within 80.
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 0, 0, 0))
    table.add_column("metric / run", overflow="fold", min_width=12)
    for name in ("n", "baseline", "run", "change", f"{fmt_confidence(cmp.confidence)} CI", "Holm p"):
        table.add_column(name, justify="right", no_wrap=True)
    table.add_column("verdict", min_width=12)  # "not significant after correcting for N comparisons" wraps
    for i, metric in enumerate(cmp.metrics):
        if i:
            table.add_section()
        table.add_row(Text(metric, style="bold"), "", "", "", "", "", "", "")
        for r in (r for r in cmp.rows if r.metric == metric):
            verdict = r.verdict(cmp.confidence)
            style = {"worse": "red", "better": "green"}.get(verdict)
            table.add_row(
                f"  {shorten(r.system, 40)}", str(r.n), fmt_value(r.metric, r.baseline), fmt_value(r.metric, r.candidate),
                fmt_delta(r.metric, r.delta), fmt_delta_ci(r.metric, r.ci_low, r.ci_high), fmt_p(r.p_holm),
                Text(verdict, style=style or ""),
            )
    parts.extend([table, Text("")])
    parts.extend(Text(line) for line in _multi_coverage(cmp))
    parts.append(Text(_method(cmp), style="dim"))
    return Group(*parts)


def _multi_markdown(cmp: MultiComparison) -> str:
    """GitHub-flavoured markdown with the same content as the terminal table."""
    ci = f"{fmt_confidence(cmp.confidence)} CI"
    out = [f"**{len(cmp.systems)} runs** vs **{md_escape(cmp.baseline)}** (baseline)", ""]
    out.append(f"| metric / run | n | baseline | run | change | {ci} | Holm p | verdict |")
    out.append("|:--|--:|--:|--:|--:|--:|--:|:--|")
    for metric in cmp.metrics:
        out.append(f"| **{md_escape(metric)}** | | | | | | | |")
        for r in (r for r in cmp.rows if r.metric == metric):
            out.append(
                f"| ↳ {md_escape(r.system)} | {r.n} | {fmt_value(r.metric, r.baseline)} | {fmt_value(r.metric, r.candidate)} | "
                f"{fmt_delta(r.metric, r.delta)} | {fmt_delta_ci(r.metric, r.ci_low, r.ci_high)} | {fmt_p(r.p_holm)} | "
                f"{r.verdict(cmp.confidence)} |"
            )
    out.append("")
    out.extend(f"- {md_escape(line, 400)}" for line in _multi_coverage(cmp))
    out += ["", f"<sub>{md_escape(_method(cmp), 400)}</sub>", ""]
    return "\n".join(out)


if __name__ == "__main__":  # pragma: no cover
    import sys

    from rich.console import Console

    from rankgate.stats.paired import compare
    from rankgate.io import load_gold
    from rankgate.scoring.engine import evaluate

    gold = load_gold(sys.argv[1])
    specs = sys.argv[4] if len(sys.argv) > 4 else "recall@5,mrr,ndcg@10"
    Console().print(comparison_renderable(compare(evaluate(gold, sys.argv[2], specs), evaluate(gold, sys.argv[3], specs))))
