"""The HTML report: one self-contained file (styles, script and SVG charts inline; a Content-Security-Policy
forbids every network request), deterministic for the same inputs.

Python::

    from rankgate.render.html import write_report
    write_report("report.html", "gold.jsonl", "run.jsonl", baseline="base.jsonl", by=["intent"])

Run it to see it: ``python -m rankgate.render.html gold.jsonl run.jsonl report.html``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape
from typing import Any

from rankgate.stats.segments import display_field
from rankgate.render import charts
from rankgate.render.assets import CSP, CSS, JS
from rankgate.render.lines import segment_lines
from rankgate.render.model import Item, Miss, Offence, Report
from rankgate.render.numbers import fmt_confidence, fmt_delta, fmt_delta_ci, fmt_exact, fmt_ms, fmt_sig, fmt_value, fmt_value_ci

__all__ = ["render_html", "write_report"]


def e(x: Any) -> str:
    return escape("" if x is None else str(x), quote=True)


def _metric_cell(m: str, mean: float, lo: float, hi: float, conf: str) -> str:
    ci = fmt_value_ci(m, lo, hi)
    extra = f'<span class="ci">{conf} {e(ci)}</span>' if ci != "—" else ""
    return f'<td class="n" data-v="{fmt_exact(mean)}">{e(fmt_value(m, mean))}{extra}</td>'


def _header(rep: Report) -> str:
    out = ['<header class="top"><div class="inner">', f"<h1>{e(rep.title)}</h1>"]
    c = rep.counts
    bits = [f"{c['evaluated']} gold queries", f"cutoff k = {rep.k}", f"{rep.level}-level"]
    if c["no_answer"]:
        bits.append(f"{c['no_answer']} no-answer")
    if rep.gate is not None:
        cls, word = ("pass", "Gate passed") if rep.gate.passed else ("fail", "Gate failed")
        out.append(f'<p class="lead"><span class="verdict {cls}" id="verdict">{word}</span> &nbsp;{e(" · ".join(bits))}</p>')
    else:
        out.append(f'<p class="lead">{e(" · ".join(bits))}</p>')
    out.append('<dl class="facts">')
    for role, path, sha in rep.inputs:
        out.append(f"<dt>{e(role)}</dt><dd><code>{e(path)}</code>" + (f' <span class="muted">sha256 {e(sha[:16])}…</span>' if sha else "") + "</dd>")
    for what, value in rep.facts:
        out.append(f"<dt>{e(what)}</dt><dd>{e(value)}</dd>")
    out.append(f"<dt>rankgate</dt><dd>{e(rep.version)}" + (f" · generated {e(rep.generated_at)}" if rep.generated_at else "") + "</dd>")
    out.append("</dl></div></header>")
    return "\n".join(out)


def _nav(rep: Report) -> str:
    links = [("diagnosis", "Diagnosis"), ("panel", "Retrieval panel"), ("sweep", "k-sweep")]
    links += [(a, t) for a, t, on in (("answers", "Answers", rep.answers), ("bounds", "Bounds", rep.bounds)) if on]
    if rep.gate is not None:
        links.insert(0, ("gate", "Gate"))
    if rep.segments is not None:
        links.append(("segments", "Segments"))
    links += [("misses", "Top misses"), ("forbidden", "Forbidden & stale")]
    if rep.stages is not None or rep.sources:
        links.append(("stages", "Stages"))
    if rep.no_answer:
        links.append(("no-answer", "No-answer"))
    links += [(anchor, title) for anchor, title, _ in rep.experiments]
    if rep.incidents is not None:
        links.append(("incidents", "Incidents"))
    if rep.abstention is not None:
        links.append(("abstention", "Abstention"))
    links.append(("method", "Method"))
    return '<nav class="toc"><div class="inner">' + "".join(f'<a href="#{a}">{e(t)}</a>' for a, t in links) + "</div></nav>"


def _gate(rep: Report) -> str:
    from rankgate.render.comment import ICON, gate_sentences
    from rankgate.render.numbers import fmt_limit, fmt_pp

    o = rep.gate
    assert o is not None  # (the section is drawn only for a gate outcome)
    out = ['<section id="gate"><h2>Gate</h2>']
    from rankgate.gating.alike import pair_warnings

    # the sentences compare and the gate say (another gold version, another ranking rule)
    for title, sentence in pair_warnings(o.candidate_label, o.baseline_label, o.gold_versions, o.tie_rules,
                                         name=e, code=lambda text: f"<code>{e(text)}</code>"):
        out.append(f'<p><span class="tag warn">warning</span> {title}: {sentence}.</p>')
    sentences = gate_sentences(o, markdown=False)
    if sentences:
        # the comment's emoji become styled tags: an emoji font is not a given on every machine
        kinds = {ICON["fail"]: ("bad", "fail"), ICON["warn"]: ("warn", "warning"), ICON["note"]: ("", "note")}
        items = []
        for text in sentences:
            icon, _, rest = text.partition(" ")
            cls, word = kinds.get(icon, ("", ""))
            items.append(f'<li><span class="tag {cls}">{word}</span> {e(rest)}</li>' if word else f"<li>{e(text)}</li>")
        out.append('<ul class="sentences">' + "".join(items) + "</ul>")
    else:
        out.append('<p class="ok">Every gate passed.</p>')
    out.append('<table class="compact"><thead><tr><th>gate</th><th>limits</th><th class="n">checks</th><th>result</th></tr></thead><tbody>')
    for r in o.results:
        cls = {"pass": "better", "fail": "worse", "warn": "warnword"}[r.status]
        limits = []
        if r.gate.threshold is not None:
            limits.append(("CI low ≥ " if r.gate.on == "ci_lower" else "≥ ") + fmt_limit(r.gate.metric, r.gate.threshold))
        if r.gate.max is not None:
            limits.append("≤ " + fmt_limit(r.gate.metric, r.gate.max))
        if r.gate.regression_max is not None:
            limits.append("regression ≤ " + fmt_pp(r.gate.metric, r.gate.regression_max))
        out.append(f"<tr><td>{e(r.gate.name)}</td><td><code>{e(r.gate.metric)}</code> {e('; '.join(limits))}</td>"
                   f'<td class="n">{len(r.failures)} of {len(r.checks)} failed</td><td class="{cls}">{e(r.status)}</td></tr>')
    out.append("</tbody></table></section>")
    return "\n".join(out)


def _diagnosis(rep: Report) -> str:
    out = ['<section id="diagnosis"><h2>Diagnosis</h2>',
           ('<p class="lead">What the numbers below suggest fixing, most serious first. Each finding quotes the numbers '
            "that triggered it.</p>")]
    if not rep.findings:
        out.append('<p class="ok">No rule fired: nothing in these numbers points at a specific fix.</p>')
    out.append('<div class="cards">')
    for f in rep.findings:
        out.append(f'<div class="finding {e(f.severity)}" data-rule="{e(f.rule)}"><span class="t">{e(f.title)}</span>'
                   f'<span class="sev">{e(f.severity)}</span><p>{e(f.evidence)}</p><p class="try">{e(f.advice)}</p></div>')
    out.append("</div></section>")
    return "\n".join(out)


def _panel(rep: Report) -> str:
    conf = f"{fmt_confidence(rep.confidence)} CI"
    base = rep.baseline_label is not None
    out = ['<section id="panel"><h2>Retrieval panel</h2>',
           f'<p class="lead">Means over the queries each metric applies to, with {conf}s (bootstrap over queries).'
           + (f" Changes are against <code>{e(rep.baseline_label)}</code>, paired by query." if base else "") + "</p>",
           '<table class="panel"><thead><tr><th>metric</th><th class="n">mean</th><th class="n">' + conf + '</th><th class="n">n</th>']
    if base:
        out.append(f'<th class="n">baseline</th><th class="n">change</th><th class="n">change {conf}</th><th>verdict</th>')
    out.append("</tr></thead><tbody>")
    for r in rep.panel:
        m = r.metric
        row = (f'<tr><td class="metric" title="{e(r.definition)}"><code>{e(m)}</code></td>'
               f'<td class="n big">{e(fmt_value(m, r.mean))}</td><td class="n">{e(fmt_value_ci(m, r.ci_low, r.ci_high))}</td>'
               f'<td class="n">{r.n}</td>')
        if base:
            cls = {"better": "better", "worse": "worse"}.get(r.verdict, "muted")
            verdict = e(r.verdict)
            row += (f'<td class="n">{e(fmt_value(m, r.baseline))}</td><td class="n {cls}">{e(fmt_delta(m, r.delta))}</td>'
                    f'<td class="n">{e(fmt_delta_ci(m, r.delta_low, r.delta_high))}</td><td class="{cls}">{verdict}</td>')
        out.append(row + "</tr>")
    out.append("</tbody></table>")
    from rankgate.render.artifacts import artifacts_html

    out.append(artifacts_html(rep.artifacts, e))  # what each run was: beside the numbers it produced
    if base and rep.changes_tested and any(not math.isnan(r.p_value) for r in rep.panel):
        alpha = fmt_sig(1 - rep.confidence, 2)
        out.append(f'<p class="muted">Verdicts: paired sign-flip randomisation test, Holm-corrected across the '
                   f"{rep.changes_tested} metric rows compared with the baseline (segment rows are corrected apart and "
                   f"never change these); worse or better when the corrected p is below {alpha}, \"not significant "
                   f"after correcting\" when the change's CI excludes 0 but the corrected p does not, within noise when "
                   f"the CI includes 0.</p>")
    if rep.latency:
        out.append('<h3>Latency</h3><table class="compact"><thead><tr><th>stage</th><th class="n">median</th><th class="n">p90</th><th class="n">queries</th>'
                   + ('<th class="n">baseline median</th><th class="n">baseline p90</th>' if base else "") + "</tr></thead><tbody>")
        for lat in rep.latency:
            row = (f'<tr><td>{e(lat.stage)}</td><td class="n">{fmt_ms(lat.median, 1)}</td><td class="n">{fmt_ms(lat.p90, 1)}</td>'
                   f'<td class="n">{lat.n}</td>')
            if base:
                row += "".join(f'<td class="n">{fmt_ms(x, 1)}</td>' for x in (lat.baseline_median, lat.baseline_p90))
            out.append(row + "</tr>")
        out.append("</tbody></table>")
    if rep.lexical_panel:
        parts = ", ".join(f"{m} {fmt_value(m, v)}" for m, v in rep.lexical_panel)
        out.append(f'<p class="muted">Lexical baseline <code>{e(rep.lexical_label)}</code>: {e(parts)}.</p>')
    if rep.doc_level:
        m = f'recall@{int(rep.doc_level.get("k", 10))}'
        out.append(f'<p class="muted">{m} at chunk level {e(fmt_value(m, rep.doc_level["chunk"]))}, '
                   f'at document level {e(fmt_value(m, rep.doc_level["doc"]))}.</p>')
    out.append("</section>")
    return "\n".join(out)


def _sweep(rep: Report) -> str:
    label = rep.run_label
    out = ['<section id="sweep"><h2>k-sweep</h2>',
           ('<p class="lead">How recall and nDCG grow with the number of chunks k, up to the run\'s depth '
            f"({rep.depth}). The knee is where each extra chunk starts to add less than the average over "
            f"k = 1…{min(20, rep.depth) if rep.depth > 0 else 20}: past it, a larger k buys little.</p>"),
           charts.sweep_svg(rep.curves, rep.baseline_curves, run_label=label, baseline_label=rep.baseline_label or "baseline",
                            confidence=rep.confidence)]
    show = [k for k in (1, 3, 5, 10, 20, 50, rep.depth) if k in rep.curves[0].ks]
    show = list(dict.fromkeys(show))
    out.append('<table><thead><tr><th>metric</th>' + "".join(f'<th class="n">@{k}</th>' for k in show) + '<th class="n">knee</th></tr></thead><tbody>')
    for c in list(rep.curves) + [dataclass_label(b, rep.baseline_label) for b in rep.baseline_curves]:
        cells = "".join(f'<td class="n">{e(fmt_value(c.metric + "@1", c.means[c.ks.index(k)]))}</td>' for k in show)
        out.append(f"<tr><td>{e(c.metric)}</td>{cells}<td class=\"n\">{'—' if c.knee is None else c.knee}</td></tr>")
    out.append("</tbody></table>")
    if rep.segment_knees:
        out.append(_segment_knees(rep, show))
    out.append("<h3>Where the first relevant chunk lands</h3>")
    out.append(charts.rank_histogram_svg(rep.rank_histogram, rep.baseline_rank_histogram, run_label=label,
                                         baseline_label=rep.baseline_label or "baseline"))
    out.append("</section>")
    return "\n".join(out)


def _segment_knees(rep: Report, show: list[int]) -> str:
    """The knee of each segment value of the ``--by`` fields (the largest segments of a field, a line counting
    the rest): where recall and nDCG stop paying differs between, say, languages."""
    from rankgate.render.lines import segment_lines
    from rankgate.stats.segments import display_field, shown_segments

    out = ["<h3>Knee by segment</h3>",
           '<table><thead><tr><th>segment</th><th>metric</th><th class="n">n</th>'
           + "".join(f'<th class="n">@{k}</th>' for k in show) + '<th class="n">knee</th></tr></thead><tbody>']
    ks = list(rep.curves[0].ks)
    by_field: dict[str, dict[str, list[Any]]] = {}
    for s in rep.segment_knees:
        by_field.setdefault(s.field, {}).setdefault(s.label, []).append(s)
    notes: list[str] = []
    for key, labels in by_field.items():
        shown = shown_segments({label: max(s.n for s in of) for label, of in labels.items()})
        for label in shown.labels:
            for s in labels[label]:
                cells = "".join(f'<td class="n">{e(fmt_value(s.metric + "@1", s.means[ks.index(k)]))}</td>' for k in show)
                out.append(f"<tr><td>{e(display_field(key))} = {e(label)}</td><td>{e(s.metric)}</td>"
                           f"<td class=\"n\">{s.n}</td>{cells}<td class=\"n\">{'—' if s.knee is None else s.knee}</td></tr>")
        notes += segment_lines(key, shown, "summary.json of rankgate evaluate --sweep --by")
    out.append("</tbody></table>")
    out += [f'<p class="muted">{e(line)}</p>' for line in notes]
    return "\n".join(out)


def dataclass_label(curve: Any, label: str | None) -> Any:
    from dataclasses import replace

    return replace(curve, metric=f"{curve.metric} ({label or 'baseline'})")


def _gate_marks(rep: Report) -> tuple[dict[tuple[str, str, str], tuple[str, str]], set[tuple[str, str, str]]]:
    """The gate's verdicts on segments: ``{(field, segment, metric): ("fail" | "warn", what)}`` for its
    failing checks (a blocking gate's failure is "fail", a warning gate's "warn"), and every
    (field, segment, metric) it checked."""
    marks: dict[tuple[str, str, str], tuple[str, str]] = {}
    checked: set[tuple[str, str, str]] = set()
    if rep.gate is None:
        return marks, checked
    for res in rep.gate.results:
        level = "fail" if res.gate.severity == "error" else "warn"
        for c in res.checks:
            if c.field is None or c.status == "skipped":
                continue
            key = (c.field.removeprefix("tags."), str(c.segment), c.metric)
            checked.add(key)
            if c.status != "fail":
                continue
            what = (fmt_delta(c.metric, c.value) if c.kind == "regression"
                    else ("> " if c.kind == "max" else "< ") + fmt_value(c.metric, c.limit))
            word = "gate failed" if level == "fail" else "gate warning"
            if marks.get(key, ("warn", ""))[0] == "warn":
                marks[key] = (level, f"{c.metric} {what}: {word}")
    return marks, checked


def _segment_marks(rep: Report, key: str, lab: str, overall: dict[str, float], gate_marks: Any = None) -> dict[str, tuple[str, str]]:
    """metric -> ("fail" | "warn", short note) for one segment. Where the gate checked the segment, its
    verdict is the only colour (a pass is no colour). Elsewhere a warning says the segment may be weak:
    its whole CI lies below a gate floor that only all queries are checked against, or (without a floor)
    the whole CI of the primary metric lies below all queries. ``gate_marks``: :func:`_gate_marks` of
    ``rep``, when the caller has it (one pass over the gate's checks for every segment drawn)."""
    seg = rep.segments
    assert seg is not None  # (asked only for the segments drawn)
    marks, checked = gate_marks if gate_marks is not None else _gate_marks(rep)
    primary = f"recall@{rep.k}"
    out: dict[str, tuple[str, str]] = {}
    for m in seg.metrics:
        where = (key.removeprefix("tags."), lab, m)
        if where in marks:
            out[m] = marks[where]
            continue
        if where in checked:
            continue
        r = seg.row(key, lab, m)
        floor = rep.floors.get(m)
        if floor is not None and not math.isnan(r.ci_high) and r.ci_high < floor:
            out[m] = ("warn", f"{m} CI below {fmt_value(m, floor)}")
        elif floor is None and m == primary and m in overall and not math.isnan(r.ci_high) and r.ci_high < overall[m]:
            out[m] = ("warn", f"{m} below all queries")
    return out


def _segments(rep: Report) -> str:
    seg = rep.segments
    assert seg is not None  # (the section is drawn only with segments)
    conf = f"{fmt_confidence(seg.confidence)} CI"
    primary = f"recall@{rep.k}"
    floors = ", ".join(f"{m} {fmt_value(m, v)}" for m, v in rep.floors.items())
    out = ['<section id="segments"><h2>Segments</h2>',
           '<p class="lead">Click a column header to sort; each cell shows the mean and, below it, its ' + conf + ". "
           + ('<span class="tag bad">red</span> a gate failed for this segment; ' if rep.gate is not None else "")
           + '<span class="tag warn">amber</span> a warning: a non-blocking gate failed'
           + (f", or, where the gate does not check segments, the whole {conf} lies below its floor ({e(floors)})"
              if rep.floors else f", or the whole {conf} of {primary} lies below the mean over all queries")
           + ". " + ("Fields chosen automatically (pass <code>--by</code> to choose)." if rep.segments_auto else "") + "</p>"]
    overall = {r.metric: r.mean for r in rep.panel}
    gate_marks = _gate_marks(rep)
    for key in seg.by:
        shown = seg.shown(key)  # at most MAX_SHOWN_SEGMENTS, the largest
        labels = list(shown.labels)
        marks = {lab: _segment_marks(rep, key, lab, overall, gate_marks) for lab in labels}
        out.append(f'<h3>by {e(display_field(key))}</h3>')
        prim = [(lab, r.mean, r.ci_low, r.ci_high, r.n) for lab in labels for r in [seg.get(key, lab, primary)] if r is not None]
        if prim and primary in overall and len(prim) <= 40:
            status = {lab: marks[lab][primary][0] for lab in labels if primary in marks[lab]}
            out.append(charts.segment_svg(prim, metric=primary, overall=overall[primary], floor=rep.floors.get(primary),
                                          confidence=seg.confidence, status=status))
        delta = bool(rep.segment_deltas)
        head = "".join(f'<th class="n">{e(m)}</th>' for m in seg.metrics)
        out.append(f'<table class="sortable segments" data-field="{e(key)}"><thead><tr>'
                   f'<th>{e(display_field(key))}</th><th class="n">n</th>{head}'
                   + (f'<th class="n">Δ {e(primary)}</th>' if delta else "") + "<th>flags</th></tr></thead><tbody>")
        for lab in labels:
            cells = []
            pr = seg.get(key, lab, primary) or seg.row(key, lab, seg.metrics[0])
            queries = pr.n
            found = marks[lab]
            for m in seg.metrics:
                r = seg.row(key, lab, m)
                ci = fmt_value_ci(m, r.ci_low, r.ci_high)
                extra = f'<span class="ci">{e(ci)}</span>' if ci != "—" else ""
                cls = f" {found[m][0]}" if m in found else ""
                cells.append(f'<td class="n{cls}" data-v="{fmt_exact(r.mean)}">{e(fmt_value(m, r.mean))}{extra}</td>')
            d = rep.segment_deltas.get((key, lab, primary), math.nan)
            dcell = f'<td class="n" data-v="{fmt_exact(d)}">{e(fmt_delta(primary, d))}</td>' if delta else ""
            levels = {lvl for lvl, _ in found.values()}
            row_cls = ' class="fail"' if "fail" in levels else (' class="warn"' if levels else "")
            notes = [found[m] for m in seg.metrics if m in found]
            notes.sort(key=lambda x: x[0] != "fail")
            tags = "".join(f'<span class="tag {"bad" if lvl == "fail" else "warn"}">{e(text)}</span>' for lvl, text in notes)
            out.append(f'<tr{row_cls}><td data-v="{e(lab)}">{e(lab)}</td><td class="n" data-v="{queries}">{queries}</td>'
                       f'{"".join(cells)}{dcell}<td class="flags" data-v="{e("; ".join(t for _, t in notes))}">{tags}</td></tr>')
        out.append("</tbody></table>")
        where = f"summary.json of rankgate evaluate --by {display_field(key)} --out DIR"
        out += [f'<p class="muted">{e(line)}</p>' for line in segment_lines(key, shown, where)]
    out.append("</section>")
    return "\n".join(out)


def _short(text: str | None, words: int) -> str:
    parts = (text or "").split()
    return " ".join(parts[:words]) + (" …" if len(parts) > words else "")


def _items_table(items: Sequence[Item], title: str, *, show_flag: bool = False, compact: bool = False) -> str:
    """Retrieved items; ``compact`` (side by side) drops the version column and shortens the text."""
    if not items:
        return f'<p class="muted">{e(title)}: nothing retrieved.</p>' if title else '<p class="muted">Nothing retrieved.</p>'
    out = [f"<h4>{e(title)}</h4>" if title else "", '<table class="items"><thead><tr><th class="n">#</th><th>id</th>'
           '<th class="n">score</th>' + ("" if compact else "<th>version</th>") + "<th>text</th></tr></thead><tbody>"]
    for it in items:
        cls = ' class="rel"' if it.grade is not None and it.grade >= 1 else (' class="bad"' if show_flag and it.flag else "")
        score = "" if it.score is None else fmt_sig(it.score, 4)
        note = f' <span class="tag bad">{e(it.flag)}</span>' if it.flag else ""
        grade = f' <span class="tag good">grade {it.grade}</span>' if it.grade is not None and it.grade >= 1 else ""
        src = f' <span class="tag">{e(it.source)}</span>' if it.source else ""
        out.append(f'<tr{cls}><td class="n">{it.rank}</td><td class="id">{e(it.chunk_id)}{grade}{note}{src}</td>'
                   f'<td class="n">{score}</td>' + ("" if compact else f'<td class="ver">{e(it.version or "")}</td>')
                   + f'<td class="snip">{e(_short(it.snippet, 12) if compact else it.snippet or "")}</td></tr>')
    out.append("</tbody></table>")
    return "\n".join(out)


def _miss(m: Miss, rep: Report, open_: bool) -> str:
    where = ("missing from the run" if m.missing_from_run else
             f"first relevant at rank {m.first_relevant_rank}" if m.first_relevant_rank else
             f"no relevant chunk in all {m.depth} retrieved")
    tags = "".join(f'<span class="tag">{e(k)}={e(v)}</span>' for k, v in m.labels.items())
    out = [(f'<details class="miss" data-query-id="{e(m.query_id)}"{" open" if open_ else ""}><summary>'
            f'<code>{e(m.query_id)}</code> <span class="q">{e(m.query or "")}</span> {tags}'
            f'<span class="tag {"bad" if not m.first_relevant_rank else ""}">{e(where)}</span></summary><div class="body">')]
    out.append('<h4>Gold</h4><table class="compact"><thead><tr><th>chunk</th><th class="n">grade</th><th>note</th><th class="n">rank in run</th></tr></thead><tbody>')
    for j in m.gold:
        out.append(f'<tr><td class="id">{e(j.chunk_id)}</td><td class="n grade">{j.grade}</td><td>{e(j.note or "")}</td>'
                   f'<td class="n">{j.rank or "not retrieved"}</td></tr>')
    out.append("</tbody></table>")
    n = len(m.retrieved)  # a short run (top 5, as RAGAS logs) or a query with few hits: say how many
    title = "Retrieved instead (top 10)" if n >= 10 else f"Retrieved instead (all {n})"
    if m.lexical is not None:
        lex_where = "" if m.lexical_rank is None else (f": first relevant at rank {m.lexical_rank}" if m.lexical_rank else ": no relevant chunk")
        mine = _items_table(m.retrieved, title, compact=True)
        theirs = _items_table(m.lexical, f"{rep.lexical_label} (top 10){lex_where}", compact=True)
        out.append(f'<div class="cols"><div>{mine}</div><div class="lexical">{theirs}</div></div>')
    else:
        out.append(_items_table(m.retrieved, title))
    out.append("</div></details>")
    return "\n".join(out)


def _misses(rep: Report) -> str:
    out = ['<section id="misses"><h2>Top misses</h2>']
    if not rep.misses_total:
        out.append('<p class="ok">Every answerable query has a relevant chunk in its top 10.</p></section>')
        return "\n".join(out)
    shown = len(rep.misses)
    top = "top 10" if rep.depth >= 10 else f"list (the run keeps at most {rep.depth})"
    some = "answerable query has" if rep.misses_total == 1 else "answerable queries have"
    out.append(f'<p class="lead">{rep.misses_total} {some} no relevant chunk in the {top}'
               + (f"; the first {shown} in gold-set order are shown (raise <code>--top-misses</code> for more)" if shown < rep.misses_total else "")
               + ". Relevant chunks are highlighted green.</p>")
    out += [_miss(m, rep, i < 3) for i, m in enumerate(rep.misses)]
    out.append("</section>")
    return "\n".join(out)


def _offences(title: str, offences: Sequence[Offence], total: int, checked: int, what: str, among: str) -> str:
    out = [f"<h3>{e(title)}</h3>"]
    if not checked:
        out.append(f'<p class="muted">Not checked: {e(what)}.</p>')
        return "\n".join(out)
    if not total:
        out.append(f'<p class="ok">None, among the {checked} queries {e(among)}.</p>')
        return "\n".join(out)
    out.append(f'<p class="lead">{total} of the {checked} queries {e(among)}'
               + (f" (the first {len(offences)} are listed)" if len(offences) < total else "") + ".</p>")
    out.append('<table class="items offences"><thead><tr><th>query</th><th class="n">#</th><th>item</th><th class="n">score</th>'
               "<th>version</th><th>text</th></tr></thead><tbody>")
    for o in offences:
        for j, it in enumerate(o.items):
            q = (f'<td rowspan="{len(o.items)}" data-query-id="{e(o.query_id)}"><code>{e(o.query_id)}</code> {e(o.query or "")}'
                 f'<span class="ci">top {o.k}' + (f", as_of {e(o.as_of)}" if o.as_of else "") + "</span></td>") if j == 0 else ""
            score = "" if it.score is None else fmt_sig(it.score, 4)
            out.append(f'<tr class="bad">{q}<td class="n">{it.rank}</td><td class="id">{e(it.chunk_id)}</td><td class="n">{score}</td>'
                       f'<td class="ver">{e(it.version or "")}</td><td class="snip">{e(it.snippet or "")}</td></tr>')
    out.append("</tbody></table>")
    return "\n".join(out)


def _forbidden(rep: Report) -> str:
    return "\n".join([
        '<section id="forbidden"><h2>Forbidden and stale</h2>',
        ('<p class="lead">Items a query must not get (<code>must_not_retrieve</code>: retired versions, other tenants), '
         "and items newer than the date the query was labelled (<code>as_of</code>), within each query's top k.</p>"),
        _offences("Forbidden items retrieved", rep.offences_forbidden, rep.forbidden_total, rep.forbidden_checked,
                  "no query has a must_not_retrieve list", "with a must_not_retrieve list"),
        _offences("Items newer than as_of", rep.offences_stale, rep.stale_total, rep.stale_checked,
                  "needs as_of in the gold set and doc_version on retrieved items", "with an as_of date and versioned items"),
        "</section>"])


def _stages(rep: Report) -> str:
    out = ['<section id="stages"><h2>Stages</h2>']
    st = rep.stages
    if st is not None:
        out.append(f'<p class="lead">The raw candidate list (<code>raw_topk</code>, k_raw = {st.k_raw}) against the final list '
                   f"(<code>topk</code>) on the {st.queries} queries that have both: what retrieval finds, and what "
                   "reranking makes of it."
                   + (f" The change is final − raw, paired by query, with its {fmt_confidence(st.confidence)} CI "
                      "(bootstrap over the queries) and verdict (Holm-corrected across these rows)." if st.changes else "")
                   + "</p>")
        changes = {m: (low, high, word) for m, low, high, word in st.changes}
        conf = f"{fmt_confidence(st.confidence)} CI"
        out.append('<table class="compact"><thead><tr><th>metric</th><th class="n">raw candidates</th><th class="n">final list</th>'
                   '<th class="n">change</th>'
                   + (f'<th class="n">change {conf}</th><th>verdict</th>' if changes else "") + "</tr></thead><tbody>")
        for m, raw, fin in st.rows:
            row = (f'<tr><td><code>{e(m)}</code></td><td class="n">{e(fmt_value(m, raw))}</td><td class="n">{e(fmt_value(m, fin))}</td>'
                   f'<td class="n">{e(fmt_delta(m, fin - raw))}</td>')
            if changes:
                low, high, word = changes.get(m, (math.nan, math.nan, "n/a"))
                cls = {"better": "better", "worse": "worse"}.get(word, "muted")
                row += f'<td class="n">{e(fmt_delta_ci(m, low, high))}</td><td class="{cls}">{e(word)}</td>'
            out.append(row + "</tr>")
        out.append("</tbody></table>")
    if rep.sources:
        out.append(f"<h3>Per source</h3><p class=\"lead\">Where the items of <code>{e(rep.sources_from)}</code> come from "
                   "(the <code>source</code> of each item): a router's or a hybrid retriever's coverage.</p>")
        out.append('<table class="sortable"><thead><tr><th>source</th><th class="n">items</th><th class="n">share of slots</th>'
                   '<th class="n">relevant found</th><th class="n">share of found</th><th class="n">recall via source</th>'
                   '<th class="n">only source</th></tr></thead><tbody>')
        for s in rep.sources:
            out.append(f'<tr><td>{e(s.source)}</td><td class="n" data-v="{s.items}">{s.items}</td>'
                       f'<td class="n" data-v="{fmt_exact(s.share_of_slots)}">{fmt_value("recall@1", s.share_of_slots)}</td>'
                       f'<td class="n" data-v="{s.relevant}">{s.relevant}</td>'
                       f'<td class="n" data-v="{fmt_exact(s.share_of_found)}">{fmt_value("recall@1", s.share_of_found)}</td>'
                       f'<td class="n" data-v="{fmt_exact(s.recall)}">{fmt_value("recall@1", s.recall)}</td>'
                       f'<td class="n" data-v="{s.only_source}">{s.only_source}</td></tr>')
        out.append("</tbody></table>")
    out.append("</section>")
    return "\n".join(out)


def _no_answer(rep: Report) -> str:
    m = rep.false_evidence_metric
    flagged = sum(1 for x in rep.no_answer if x.flagged)
    out = ['<section id="no-answer"><h2>No-answer queries</h2>',
           f'<p class="lead">Queries with no relevant chunk. <code>{e(m)}</code> = {e(fmt_value(m, rep.false_evidence_rate))}: '
           "the share that still gets evidence" + ("" if "min_score" in m else " (no confidence line: pass --min-score to set one)")
           + f". {flagged} of the {len(rep.no_answer)} shown get evidence.</p>"]
    for x in rep.no_answer:
        tag = '<span class="tag bad">gets evidence</span>' if x.flagged else '<span class="tag good">no evidence</span>'
        out.append(f'<div data-query-id="{e(x.query_id)}"><p><code>{e(x.query_id)}</code> {e(x.query or "")} {tag}</p>'
                   + _items_table(x.top, "") + "</div>")
    out.append("</section>")
    return "\n".join(out)


def _method(rep: Report) -> str:
    rows = "".join(f"<tr><td><code>{e(r.metric)}</code></td><td>{e(r.definition)}</td></tr>" for r in rep.panel)
    c = rep.counts
    notes = [f"{c['evaluated']} gold queries evaluated; {c['no_answer']} no-answer queries are left out of ranking metrics."]
    if c["missing_from_run"]:
        notes.append(f"{c['missing_from_run']} gold queries missing from the run score 0.")
    if c["not_in_gold"]:
        notes.append(f"{c['not_in_gold']} run queries not in the gold set were ignored.")
    if c["duplicates_dropped"]:
        notes.append(f"{c['duplicates_dropped']} repeated ids dropped (each id kept at its best rank).")
    notes.extend(rep.input_notes)  # (escaped below, as every note)
    notes.append(f"{fmt_confidence(rep.confidence)} CIs: percentile bootstrap over {rep.resample_unit}, {rep.resamples} resamples, seed {rep.seed}; "
                 "changes use a paired bootstrap and a paired randomisation test (Holm-corrected).")
    notes.append("Shares read as percentages and their changes as percentage points (pp); scores keep three decimals.")
    return ('<section id="method"><h2>Method</h2><ul>' + "".join(f"<li>{e(n)}</li>" for n in notes) + "</ul>"
            f'<table><thead><tr><th>metric</th><th>definition</th></tr></thead><tbody>{rows}</tbody></table></section>')


def layer_two_section(rep: Report) -> str:
    from rankgate.render.answers import answers_section
    from rankgate.render.sections import SECTION

    row = SECTION["bounds"]  # (drawn with the answer layer's numbers)
    bounds = row.html(rep.bounds, rep.confidence) if rep.bounds and row.html is not None else ""
    return answers_section(rep.answers, confidence=rep.confidence) + bounds


def render_html(rep: Report) -> str:
    """The report as one HTML document (a string)."""
    body = [_header(rep), _nav(rep), "<main>"]
    if rep.gate is not None:
        body.append(_gate(rep))
    body += [_diagnosis(rep), _panel(rep), _sweep(rep)]
    body.append(layer_two_section(rep))  # answers and the diagnosis grid; bounds of an incomplete gold set
    if rep.segments is not None:
        body.append(_segments(rep))
    body += [_misses(rep), _forbidden(rep)]
    if rep.stages is not None or rep.sources:
        body.append(_stages(rep))
    if rep.no_answer:
        body.append(_no_answer(rep))
    body += [section for _, _, section in rep.experiments]  # component experiments (report/experiments.py)
    if rep.incidents is not None:
        from rankgate.render.incidents import incidents_html

        body.append(incidents_html(rep.incidents))
    if rep.abstention is not None:
        from rankgate.render.abstention import abstention_html

        body.append(abstention_html(rep.abstention))
    body.append(_method(rep))
    body.append(f'<footer>rankgate {e(rep.version)}</footer></main>')
    # Every table scrolls inside its own box when it is wider than the page, never the page itself.
    body = [b.replace("<table", '<div class="scroll"><table').replace("</table>", "</table></div>") for b in body]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{e(rep.title)}</title><style>{CSS}</style></head><body>\n" + "\n".join(body)
            + f"\n<script>{JS}</script></body></html>\n")


def write_report(path: str, gold: Any, run: Any, **options: Any) -> Any:
    """Build the report (:func:`rankgate.render.build.report`'s ``options``: ``scoring=``, ``statistics=``,
    ``baseline=``, ``by=`` …; for one release also the loose keywords of
    :func:`~rankgate.render.build.build_report`, such as ``resamples=``), write it to ``path`` atomically, and
    return the :class:`~rankgate.render.model.Report`."""
    from rankgate._util.atomic import write_text
    from rankgate.render.build import LOOSE, build_report, report

    rep = (build_report if LOOSE.intersection(options) else report)(gold, run, **options)
    write_text(path, render_html(rep))
    return rep


if __name__ == "__main__":  # pragma: no cover
    import sys

    write_report(sys.argv[3] if len(sys.argv) > 3 else "report.html", sys.argv[1], sys.argv[2])
