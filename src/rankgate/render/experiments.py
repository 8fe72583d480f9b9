"""Renderers for the component experiments (:mod:`rankgate.experiments`): markdown and terminal.

Each experiment's result is data with ``to_dict()``; here it becomes a markdown section (for the
report, ``--markdown`` and the PR comment) or a rich renderable (for the terminal). Nothing here
computes a number.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from rankgate.render.numbers import (
    fmt_confidence_exact,
    fmt_delta,
    fmt_delta_ci,
    fmt_ms,
    fmt_ms_change,
    fmt_score,
    fmt_share,
    fmt_share_range,
    fmt_sig,
    fmt_value,
    md_escape,
)

if TYPE_CHECKING:  # pragma: no cover
    from rich.table import Table

    from rankgate.experiments.freshness import FreshnessWhatIf
    from rankgate.experiments.paired import PairedRow

EXPERIMENT_WHERE = "the --json output (and summary.json)"
"""Where the segments an experiment's table leaves out are."""


def bounded_rows(rows: Sequence[Any]) -> tuple[list[Any], list[str]]:
    """An experiment's rows (each with ``segment``: ``"lang=de"``, or None for all queries, and ``n``) with at most
    :data:`~rankgate.stats.segments.MAX_SHOWN_SEGMENTS` segments of each field, the largest (most ``n``), in their
    order; and a line per field saying how many were left out."""
    from rankgate.stats.segments import shown_segments
    from rankgate.render.lines import left_out_line

    sizes: dict[str, dict[str, int]] = {}
    for r in rows:
        if r.segment is not None:
            of = sizes.setdefault(r.segment.partition("=")[0], {})
            of[r.segment] = max(of.get(r.segment, 0), int(r.n))
    shown = {f: shown_segments(of) for f, of in sizes.items()}
    if not any(sh.left_out for sh in shown.values()):
        return list(rows), []
    keep = {segment for sh in shown.values() for segment in sh.labels}
    return ([r for r in rows if r.segment is None or r.segment in keep],
            [left_out_line(f, sh, EXPERIMENT_WHERE) for f, sh in shown.items() if sh.left_out])

__all__ = ["bounded_rows", "interval_table", "freshness_lines", "freshness_markdown", "freshness_renderable", "latency_gate_markdown", "latency_markdown", "latency_renderable", "linking_markdown", "linking_renderable", "paired_markdown", "paired_renderable", "resources_html", "resources_markdown", "resources_renderable", "rewrite_markdown", "rewrite_renderable", "routing_markdown", "routing_renderable", "section_html", "stress_markdown", "stress_renderable", "with_freshness", "with_lines"]


def _scope(row: PairedRow) -> str:
    return row.segment or "all queries"


def paired_markdown(rows: Sequence[PairedRow], *, before: str, after: str, confidence: float) -> str:
    """A markdown table: metric, queries, before, after, change and its paired interval."""
    out = [f"| metric | scope | n | {before} | {after} | change | {fmt_confidence_exact(confidence)} CI |",
           "|---|---|---:|---:|---:|---:|---|"]
    shown, lines = bounded_rows(rows)
    for r in shown:
        out.append(f"| {r.metric} | {md_escape(_scope(r))} | {r.n} | {fmt_value(r.metric, r.before)} | "
                   f"{fmt_value(r.metric, r.after)} | {fmt_delta(r.metric, r.delta)} | "
                   f"{fmt_delta_ci(r.metric, *r.ci)} |")
    out += [""] + [md_escape(line, 400) for line in lines] if lines else []
    return "\n".join(out) + "\n"


def paired_renderable(rows: Sequence[PairedRow], *, title: str, before: str, after: str, confidence: float) -> Any:
    """The same table for the terminal (rich)."""
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for name, justify in (("metric", "left"), ("scope", "left"), ("n", "right"), (before, "right"),
                          (after, "right"), ("change", "right"), (f"{fmt_confidence_exact(confidence)} CI", "left")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    shown, lines = bounded_rows(rows)
    for r in shown:
        table.add_row(r.metric, _scope(r), str(r.n), fmt_value(r.metric, r.before), fmt_value(r.metric, r.after),
                      fmt_delta(r.metric, r.delta), fmt_delta_ci(r.metric, *r.ci))
    return with_lines(table, lines)


def interval_table(title: str, conf: str, narrow: bool) -> Table:
    """An empty rich table of values with intervals, its title ``title`` (ending with an opening parenthesis:
    ``"Latency (ms; "``) and the intervals' confidence; narrow (each interval under its value): lean, and saying so."""
    from rich import box
    from rich.table import Table

    if narrow:
        return Table(title=f"{title}{conf} CI under each value)", title_justify="left", box=box.SIMPLE_HEAD,
                     show_edge=False, pad_edge=False, padding=(0, 1, 0, 0))
    return Table(title=f"{title}{conf} CI)", title_justify="left")


def with_lines(table: Any, lines: list[str]) -> Any:
    """A table, and under it the lines saying which segments it left out (none: the table alone)."""
    if not lines:
        return table
    from rich.console import Group
    from rich.text import Text

    return Group(table, *(Text(line) for line in lines))


def freshness_lines(w: FreshnessWhatIf) -> list[str]:
    """One sentence saying what --enforce-as-of removed."""
    f = w.filter
    text = (f"--enforce-as-of removed {f.dropped:,} of {f.rows:,} retrieved items (newer than their query's as_of) "
            f"from {len(f.queries_affected):,} queries; {f.queries_with_as_of:,} queries have an as_of")
    if f.unversioned:
        text += f"; {f.unversioned:,} items without a dated doc_version were kept"
    return [text + "."]


def freshness_markdown(w: FreshnessWhatIf, confidence: float, *, heading: str = "### Freshness what-if") -> str:
    """How much the run relied on documents newer than the label: the sentence and the paired table."""
    parts = [heading, "", *freshness_lines(w), "",
             paired_markdown(w.rows, before="logged", after="enforced", confidence=confidence)]
    return "\n".join(parts)


def freshness_renderable(w: FreshnessWhatIf, confidence: float, *, title: str = "Freshness what-if") -> Any:
    from rich.console import Group
    from rich.text import Text

    return Group(Text(" ".join(freshness_lines(w))),
                 paired_renderable(w.rows, title=title, before="logged", after="enforced",
                                   confidence=confidence))


def with_freshness(as_dict: Any, as_markdown: Any, as_renderable: Any, runs: dict[str, FreshnessWhatIf],
                   confidence: float) -> tuple[Any, Any, Any]:
    """Wrap a comparison's three renderers so each also shows every run's freshness what-if."""

    def to_dict(cmp: Any) -> dict[str, Any]:
        return {**as_dict(cmp), "freshness": {name: w.to_dict() for name, w in runs.items()}}

    def to_markdown(cmp: Any) -> str:
        parts = [as_markdown(cmp)]
        for name, w in runs.items():
            parts.append(freshness_markdown(w, confidence, heading=f"### Freshness what-if: {md_escape(name)}"))
        return "\n".join(parts)

    def to_renderable(cmp: Any) -> Any:
        from rich.console import Group
        from rich.text import Text

        items = [as_renderable(cmp)]
        for name, w in runs.items():
            items += [Text(""), freshness_renderable(w, confidence, title=f"Freshness what-if: {name}")]
        return Group(*items)

    return to_dict, to_markdown, to_renderable


def latency_gate_markdown(gates: Sequence[dict[str, Any]], conf: str, cap: int = 200) -> list[str]:
    """The PR comment's latency table, from the ``latency`` entries of a gate outcome's JSON."""
    from rankgate.render.ceilings import ceiling_gate_markdown

    return ceiling_gate_markdown(gates, conf, cap, heading="Latency gates", what="the percentile",
                                 columns=("Stage", "Percentile"), subject="stage", fmt=lambda g, x: fmt_ms(x),
                                 fmt_change=lambda g, x: fmt_ms_change(x))


def latency_markdown(summary: Any) -> str:
    """Percentiles of each stage with their intervals (a :class:`~rankgate.experiments.latency.LatencySummary`)."""
    return _percentile_markdown(summary, "Latency", ("stage", "timed queries"), str, fmt_ms)


def resources_markdown(summary: Any) -> str:
    """Percentiles of each process sample with their intervals (a
    :class:`~rankgate.experiments.resources.ResourceSummary`), the unit in the sample's label."""
    return _percentile_markdown(summary, "Process resources per query", ("sample", "sampled queries"), _resource_label,
                                _resource_value)


def resources_html(summary: Any) -> str:
    """The report's section of the process samples: the markdown table as HTML."""
    return section_html(resources_markdown(summary), "resources")


def _resource_label(name: str) -> str:
    from rankgate.render.traces import RESOURCE_LABELS  # (the traces' labels: one wording for one sample)

    return dict(RESOURCE_LABELS).get(name, name)


def _resource_value(x: float) -> str:
    return fmt_score(x, 1)


def _percentile_markdown(summary: Any, heading: str, columns: tuple[str, str], label: Callable[[str], str],
                         value: Callable[[float], str]) -> str:
    """A table of percentiles with intervals (rows of :func:`rankgate.experiments.latency.percentile_rows`):
    ``columns`` names the first column (what was measured) and the count; ``label`` writes a row's name,
    ``value`` a number."""
    conf = fmt_confidence_exact(summary.confidence)
    first, counted = columns
    out = [f"### {heading}", "", f"| {first} | scope | {counted} | median ({conf} CI) | p90 | p95 | p99 |",
           "|---|---|---:|---:|---:|---:|---:|"]
    shown, lines = bounded_rows(summary.rows)
    for (stage, seg), rows in _by_scope(shown).items():
        cells = [f"{value(r.value)} ({value(r.ci[0])}–{value(r.ci[1])})" if not math.isnan(r.value) else "—" for r in rows]
        out.append(f"| {md_escape(label(stage), 40)} | {md_escape(seg or 'all queries', 60)} | {rows[0].n} | "
                   + " | ".join(cells) + " |")
    out += [""] + [md_escape(line, 400) for line in lines] if lines else []
    return "\n".join(out) + "\n"


def _by_scope(rows: Sequence[Any]) -> dict[tuple[str, str | None], list[Any]]:
    out: dict[tuple[str, str | None], list[Any]] = {}
    for r in rows:
        out.setdefault((r.stage, r.segment), []).append(r)
    return out


def latency_renderable(summary: Any) -> Any:
    """The latency table; in a terminal too narrow for it, each interval goes under its value and the
    scope label wraps, so no number is cut."""
    from rankgate.render.tables import FitToWidth

    return FitToWidth(lambda narrow: _percentile_table(summary, narrow, "Latency (ms; ", "stage", str,
                                                       lambda x: fmt_ms(x)[:-3]))


def resources_renderable(summary: Any) -> Any:
    """The process samples' table, as the latency's (:func:`latency_renderable`)."""
    from rankgate.render.tables import FitToWidth

    return FitToWidth(lambda narrow: _percentile_table(summary, narrow, "Process resources per query (", "sample",
                                                       _resource_label, _resource_value))


def _percentile_table(summary: Any, narrow: bool, title: str, first: str, label: Callable[[str], str],
                      value: Callable[[float], str]) -> Any:
    table = interval_table(title, fmt_confidence_exact(summary.confidence), narrow)
    for name, justify in ((first, "left"), ("scope", "left"), ("n", "right"), ("median", "right"),
                          ("p90", "right"), ("p95", "right"), ("p99", "right")):
        if narrow:
            table.add_column(name, justify=justify, overflow="fold", no_wrap=name not in (first, "scope"))  # type: ignore[arg-type]
        else:
            table.add_column(name, justify=justify)  # type: ignore[arg-type]
    sep = "\n" if narrow else " "
    shown, lines = bounded_rows(summary.rows)
    for (stage, seg), rows in _by_scope(shown).items():
        table.add_row(label(stage), seg or "all queries", str(rows[0].n),
                      *(f"{value(r.value)}{sep}({value(r.ci[0])}–{value(r.ci[1])})" if not math.isnan(r.value) else "—"
                        for r in rows))
    return with_lines(table, lines)


def _stress_lines(res: Any) -> list[str]:
    ranks = ",".join(str(r) for r in res.ranks)
    skipped = ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in res.skipped.items() if v)
    n_breach = len({b.query_id for b in res.breaches})
    share = res.breach_share
    rule = (f"fails when nDCG@5 drops by more than {fmt_sig(res.max_drop)} and the paired interval of the change is "
            "below zero")
    if not res.passed:
        verdict = f"FAILED ({rule})"
    elif n_breach:  # nDCG@5 held, but negatives got through: never call that "held up"
        verdict = (f"passed on nDCG@5 only ({rule}), though a negative reached the top 3 in {n_breach} of "
                   f"{len(res.queries)} queries")
    else:
        verdict = f"held up: no negative reached the top 3 ({rule})"
    return [f"Reranker {res.reranker}: {len(res.queries)} queries, negatives ({res.negatives}) put at input ranks {ranks}"
            + (f"; left out: {skipped}" if skipped else "") + ".",
            f"A negative reached the top {3} in {n_breach} of {len(res.queries)} queries"
            + ("" if math.isnan(share) else f" ({fmt_share(share)})") + ".",
            f"Verdict: {verdict}."]


def stress_markdown(res: Any, confidence: float) -> str:
    """The stress test as markdown: what was done, the paired table, the queries where negatives got through."""
    out = ["### Reranker stress test", "", *[line + "  " for line in _stress_lines(res)], "",
           paired_markdown(res.rows, before="clean input", after="with negatives", confidence=confidence)]
    if res.breaches:
        out += ["", "| query | negative | put at | reranked to | rank on the clean input |", "|---|---|---:|---:|---:|"]
        out += [f"| {md_escape(b.query_id, 60)} | {md_escape(b.chunk_id, 60)} | {b.inserted_at} | {b.rank} | "
                f"{'—' if b.clean_rank is None else b.clean_rank} |"
                for b in res.breaches[:50]]
        if len(res.breaches) > 50:
            out.append(f"\n… and {len(res.breaches) - 50} more in stress.json")
    return "\n".join(out) + "\n"


def stress_renderable(res: Any, confidence: float) -> Any:
    from rich.console import Group
    from rich.text import Text

    return Group(*[Text(line) for line in _stress_lines(res)],
                 paired_renderable(res.rows, title="Reranked: clean input vs with hard negatives",
                                   before="clean", after="negatives", confidence=confidence))


def _rewrite_lines(eff: Any) -> list[str]:
    n = len(eff.original.query_ids)
    return [f"The rewrite lowered recall@{eff.k} on {len(eff.broken)} of {n} queries and raised it on {eff.fixed}."]


def rewrite_markdown(eff: Any, confidence: float, *, limit: int = 20) -> str:
    """Query rewriting: recall@k and nDCG@k of each side, the paired change, and the queries it broke."""
    a, b = eff.labels
    out = ["### Query rewriting", "", *_rewrite_lines(eff), "",
           paired_markdown(eff.rows, before=md_escape(a, 40), after=md_escape(b, 40), confidence=confidence)]
    if eff.broken:
        out += ["", f"Queries the rewrite broke (recall@{eff.k} lower), worst first:", "",
                f"| query | recall@{eff.k} | nDCG@{eff.k} | original query | rewritten query |", "|---|---|---|---|---|"]
        for q in eff.broken[:limit]:
            out.append(f"| {md_escape(q.query_id, 60)} | {fmt_value('recall', q.recall_original)} → "
                       f"{fmt_value('recall', q.recall_rewritten)} | {fmt_value('ndcg', q.ndcg_original)} → "
                       f"{fmt_value('ndcg', q.ndcg_rewritten)} | {md_escape(q.original or '', 80)} | "
                       f"{md_escape(q.rewritten or '', 80)} |")
        if len(eff.broken) > limit:
            out.append(f"\n… and {len(eff.broken) - limit} more (every one in the JSON output)")
    return "\n".join(out) + "\n"


def rewrite_renderable(eff: Any, confidence: float, *, limit: int = 10) -> Any:
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    a, b = eff.labels
    parts: list[Any] = [Text(" ".join(_rewrite_lines(eff))),
                        paired_renderable(eff.rows, title="Query rewriting", before=a, after=b, confidence=confidence)]
    if eff.broken:
        t = Table(title=f"Queries the rewrite broke (recall@{eff.k} lower)", title_justify="left")
        for name in ("query", f"recall@{eff.k}", "original query", "rewritten query"):
            t.add_column(name)
        for q in eff.broken[:limit]:
            t.add_row(q.query_id, f"{fmt_value('recall', q.recall_original)} → {fmt_value('recall', q.recall_rewritten)}",
                      q.original or "", q.rewritten or "")
        parts.append(t)
    return Group(*parts)


def _matrix(rt: Any) -> tuple[list[str], list[str], dict[tuple[str, str], int]]:
    expected = sorted({e for e, _, _ in rt.matrix})
    chosen = sorted({c for _, c, _ in rt.matrix}, key=lambda c: (c == "(none)", c))
    return expected, chosen, {(e, c): n for e, c, n in rt.matrix}


def routing_markdown(rt: Any, confidence: float, *, limit: int = 20) -> str:
    """Routing: coverage, the misroute matrix, per-source coverage and recall, slots, router_skew findings."""
    conf = fmt_confidence_exact(confidence)
    out = ["### Routing", "",
           (f"{rt.routed} of {rt.queries} queries were routed to their expected source: coverage "
           f"{fmt_share(rt.coverage)} ({conf} CI {fmt_share_range(*rt.coverage_ci)}); on average {fmt_share(rt.expected_share)} "
           f"of a query's top {rt.k} came from its expected source ({fmt_share_range(*rt.expected_share_ci)})."), "",
           "Misroute matrix (queries; rows: expected source, columns: chosen source):", ""]
    expected, chosen, cells = _matrix(rt)
    out.append("| expected ↓ / chosen → | " + " | ".join(md_escape(c, 30) for c in chosen) + " |")
    out.append("|---|" + "---:|" * len(chosen))
    for e in expected:
        out.append(f"| {md_escape(e, 30)} | " + " | ".join(
            (f"**{cells.get((e, c), 0)}**" if e == c else str(cells.get((e, c), 0))) for c in chosen) + " |")
    out += ["", "Per expected source:", "",
            f"| expected source | queries | routed there | coverage ({conf} CI) | recall@{rt.k} ({conf} CI) |",
            "|---|---:|---:|---:|---:|"]
    for r in rt.per_source:
        out.append(f"| {md_escape(r.source, 30)} | {r.queries} | {r.routed} | {fmt_share(r.coverage)} ({fmt_share_range(*r.coverage_ci)}) | "
                   f"{fmt_share(r.recall)} ({fmt_share_range(*r.recall_ci)}) |")
    out += ["", f"Where the top-{rt.k} slots went (the numbers the router_skew rule reads):", "",
            f"| source | share of top-{rt.k} slots | share of relevant items found |", "|---|---:|---:|"]
    out += [f"| {md_escape(s.source, 30)} | {fmt_share(s.share_of_slots)} | {fmt_share(s.share_of_found)} |" for s in rt.slots]
    for f in rt.findings:
        out += ["", f"**{f.title}** ({f.rule}): {f.evidence} {f.advice}"]
    if rt.misrouted:
        out += ["", "Misrouted queries: " + ", ".join(f"{md_escape(q, 40)} ({md_escape(e, 20)} → {md_escape(c, 20)})"
                                                      for q, e, c in rt.misrouted[:limit])
                + (f" … and {len(rt.misrouted) - limit} more" if len(rt.misrouted) > limit else "")]
    return "\n".join(out) + "\n"


def routing_renderable(rt: Any, confidence: float) -> Any:
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    conf = fmt_confidence_exact(confidence)
    expected, chosen, cells = _matrix(rt)
    matrix = Table(title="Misroute matrix (rows: expected source, columns: chosen)", title_justify="left")
    matrix.add_column("expected")
    for c in chosen:
        matrix.add_column(c, justify="right")
    for e in expected:
        matrix.add_row(e, *(str(cells.get((e, c), 0)) for c in chosen))
    per = Table(title=f"Per expected source ({conf} CI)", title_justify="left")
    for name in ("source", "queries", "routed", "coverage", f"recall@{rt.k}"):
        per.add_column(name)
    for r in rt.per_source:
        per.add_row(r.source, str(r.queries), str(r.routed), f"{fmt_share(r.coverage)} ({fmt_share_range(*r.coverage_ci)})",
                    f"{fmt_share(r.recall)} ({fmt_share_range(*r.recall_ci)})")
    lines: list[Any] = [Text(f"Routing: {rt.routed} of {rt.queries} queries sent to their expected source, coverage "
                  f"{fmt_share(rt.coverage)} ({conf} CI {fmt_share_range(*rt.coverage_ci)})."), matrix, per]
    lines += [Text(f"{f.title}: {f.evidence}") for f in rt.findings]
    return Group(*lines)


def linking_markdown(el: Any, confidence: float, *, limit: int = 20) -> str:
    """Entity linking: precision, recall, F1 with intervals beside chunk recall@k; the queries with misses."""
    conf = fmt_confidence_exact(confidence)
    out = ["### Entity linking", "",
           f"{el.queries} queries have gold entities" + (f"; {el.unlinked} records logged no linked_entities (nothing "
                                                         "linked)" if el.unlinked else "") + ".", "",
           f"| metric | scope | n | mean | {conf} CI |", "|---|---|---:|---:|---|"]
    shown, lines = bounded_rows(el.rows)
    for r in shown:
        out.append(f"| {r.metric} | {md_escape(r.segment or 'all queries', 60)} | {r.n} | {fmt_share(r.mean)} | "
                   f"{fmt_share_range(*r.ci)} |")
    out += [""] + [md_escape(line, 400) for line in lines] if lines else []
    if el.missed:
        out += ["", f"Queries whose linking missed a gold entity, with their chunk recall@{el.k} (a miss in both "
                    "points at the query, in linking only at the linker):", "",
                f"| query | gold entities not linked | chunk recall@{el.k} |", "|---|---|---:|"]
        out += [f"| {md_escape(q, 40)} | {md_escape(', '.join(m), 100)} | {fmt_share(rc)} |" for q, m, rc in el.missed[:limit]]
        if len(el.missed) > limit:
            out.append(f"\n… and {len(el.missed) - limit} more (every one in the JSON summary)")
    return "\n".join(out) + "\n"


def linking_renderable(el: Any, confidence: float) -> Any:
    from rich.table import Table

    t = Table(title=f"Entity linking ({el.queries} queries with gold entities; {fmt_confidence_exact(confidence)} CI)",
              title_justify="left")
    for name in ("metric", "scope", "n", "mean", "CI"):
        t.add_column(name)
    shown, lines = bounded_rows(el.rows)
    for r in shown:
        t.add_row(r.metric, r.segment or "all queries", str(r.n), fmt_share(r.mean), fmt_share_range(*r.ci))
    return with_lines(t, lines)


def _inline_html(text: str) -> str:
    """One line of the markdown written here as HTML: escapes undone, then HTML-escaped, **bold** kept."""
    import re
    from html import escape

    plain = re.sub(r"\\(.)", r"\1", text).replace("&lt;", "<").replace("&gt;", ">")
    parts = plain.split("**")
    return "".join(f"<strong>{escape(p)}</strong>" if i % 2 else escape(p) for i, p in enumerate(parts))


def _cells(line: str) -> list[str]:
    import re

    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]


def section_html(markdown: str, anchor: str) -> str:
    """An experiment's markdown section (headings, paragraphs, pipe tables, as written by this module)
    as an HTML ``<section>`` for the report."""
    out = [f'<section id="{anchor}">']
    lines = markdown.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].rstrip()
        if not line.strip():
            i += 1
            continue
        if line.startswith("### "):
            out.append(f"<h2>{_inline_html(line[4:])}</h2>")
            i += 1
        elif line.startswith("|"):
            rows = []
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(_cells(lines[i]))
                i += 1
            head, body = rows[0], [r for r in rows[2:]]
            out.append("<table><thead><tr>" + "".join(f"<th>{_inline_html(c)}</th>" for c in head) + "</tr></thead><tbody>"
                       + "".join("<tr>" + "".join(f"<td>{_inline_html(c)}</td>" for c in r) + "</tr>" for r in body)
                       + "</tbody></table>")
        else:
            out.append(f"<p>{_inline_html(line.strip())}</p>")
            i += 1
    out.append("</section>")
    return "".join(out)
