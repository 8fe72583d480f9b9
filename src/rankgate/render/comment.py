"""The PR comment: GitHub-flavoured markdown a reviewer who is not an ML engineer can act on.

Layout: a hidden marker (so a bot can find and update its one sticky comment), a headline, one plain
sentence per failing or warning gate ("❌ retrieval recall@5 dropped from 87.0% to 81.0% (−6.0 pp,
95% CI −8.1 to −3.9 pp; limit −3 pp)"), the rule used, a table of every gate, the segments that moved
most, the most-regressed queries, and how the numbers were computed. The comment stays under
:data:`MAX_BYTES` whatever the input: long lists are cut with a note saying how much was left out.

Input is a :class:`~rankgate.gating.decide.GateOutcome` or its ``to_dict()`` (the ``--json`` file), so it
can be re-rendered later: ``python -m rankgate.render.comment outcome.json``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from rankgate.metrics.info import higher_is_better
from rankgate.stats.segments import display_field, looks_like_id, shown_segments
from rankgate.stats.verdict import correction_line
from rankgate.render import critical
from rankgate.render.lines import id_like_line, left_out_line
from rankgate.render.numbers import (
    fmt_apart,
    fmt_confidence,
    fmt_delta,
    fmt_delta_ci_apart,
    fmt_limit,
    fmt_pp,
    fmt_rank,
    fmt_share,
    fmt_value,
    fmt_value_ci,
    md_escape,
    neutral,
    shorten,
)

__all__ = ["MARKER", "MAX_BYTES", "SHOWN_SENTENCES", "comment_markdown", "gate_counts", "gate_sentences"]

MARKER = "<!-- rankgate:gate -->"
MAX_BYTES = 60_000
SHOWN_SENTENCES = 20
"""Sentences about failing and noisy checks shown at most (the comment and the terminal): a field of 50,000
segments can fail thousands of checks; a line counts the rest, which the JSON outcome holds."""
ICON = {"fail": "❌", "warn": "⚠️", "pass": "✅", "skipped": "➖", "note": "ℹ️"}


def _units_line(resampling: Mapping[str, Any]) -> str:
    """``intervals resample 8 conversations (20 turns)`` from a gate outcome's ``statistics.resampling``."""
    from rankgate.stats.clusters import line_of

    return line_of(resampling) or ""


def _n(x: Any) -> float:
    return math.nan if x is None else float(x)


def _plain(text: str, width: int = 80) -> str:
    return " ".join(neutral(text).split())


def _where(c: Mapping[str, Any], esc=md_escape) -> str:
    if c.get("field") is None:
        return ""
    return f" for {esc(display_field(c['field']))} = {esc(c['segment'])}"


def _moved(metric: str, delta: float) -> str:
    if math.isnan(delta) or delta == 0:
        return "stayed at"
    return "rose" if delta > 0 else "dropped"


def _check_sentence(g: Mapping[str, Any], c: Mapping[str, Any], conf: str, title: str, esc=md_escape) -> str:
    """One plain sentence about one check (without the leading icon)."""
    m = c["metric"]
    who = title + _where(c, esc)
    value, limit, mean = _n(c["value"]), _n(c["limit"]), _n(c["mean"])
    if c["kind"] == "regression":
        hib = higher_is_better(m)
        sign_limit = ("−" if hib else "+") + fmt_pp(m, limit)
        base, delta = _n(c["baseline"]), value
        moved = _moved(m, delta)
        shown = fmt_apart(m, delta, limit, delta=True)
        if math.isnan(_n(c["ci_low"])):
            detail = f"{shown}; limit {sign_limit}"
            if "summary" in c.get("note", ""):
                detail += "; compared with the baseline's mean"
        else:
            detail = f"{shown}, {conf} {fmt_delta_ci_apart(m, c['ci_low'], c['ci_high'])}; limit {sign_limit}"
        return f"{who} {moved} from {fmt_value(m, base)} to {fmt_value(m, mean)} ({detail})"
    if math.isnan(value):
        return f"{who} could not be checked: {esc(c.get('note') or 'no value', 200)}"
    floor = c["kind"] == "threshold"
    side = f"below the {fmt_limit(m, limit)} floor" if floor else f"above the {fmt_limit(m, limit)} ceiling"
    ci = fmt_value_ci(m, c["ci_low"], c["ci_high"])
    if g["on"] == "mean":
        extra = f" ({conf} {ci})" if ci != "—" else ""
        return f"{who} is {fmt_apart(m, mean, limit)}{extra}, {side}"
    end = "lower" if g["on"] == "ci_lower" else "upper"
    return (f"{who}: the {end} end of its {conf} is {fmt_apart(m, value, limit)}, {side} "
            f"(mean {fmt_value(m, mean)}, {conf} {ci})")


def _gate_sentence(g: Mapping[str, Any], conf: str, who: str, esc=md_escape) -> str:
    own = [c for c in g["checks"] if not c.get("critical")]  # chosen values speak for themselves (render/critical.py)
    failing = [c for c in own if c["status"] == "fail"] or [c for c in own if c["status"] == "warn"]
    failing.sort(key=lambda c: (c.get("field") is not None, c["kind"] != "regression"))
    icon = ICON["fail"] if g["status"] == "fail" else ICON["warn"]
    text = f"{icon} {_check_sentence(g, failing[0], conf, who, esc)}."
    m = g["metric"]
    overall = [{"regression": "the regression limit", "threshold": f"the {fmt_limit(m, _n(c['limit']))} floor",
                "max": f"the {fmt_limit(m, _n(c['limit']))} ceiling"}[c["kind"]]
               for c in failing[1:] if c.get("field") is None]
    segments = list(dict.fromkeys(_where(c, esc).removeprefix(" for ") for c in failing if c.get("field") is not None))
    if failing[0].get("field") is not None:
        segments = segments[1:]
    if len(segments) > 6:
        segments = segments[:6] + [f"{len(segments) - 6} more segments"]
    others = "; ".join(x for x in (", ".join(overall), ", ".join(segments)) if x)
    if others:
        text += f" Also failing: {others}."
    if g["status"] == "warn" and all(c["status"] != "fail" for c in g["checks"]):
        text += " (warning: does not block; `not_applicable: error` in the gate makes it block)"
    elif g["severity"] == "warning":
        text += " (warning: does not block)"
    if g["status"] == "fail" and g.get("owner"):
        text += f" Owner: {esc(g['owner'])}."
    return text


def alike_sentences(o: Mapping[str, Any], esc=md_escape) -> list[str]:
    """The warnings when baseline and candidate were scored on different versions of the gold set, or ranked
    by different rules (``--ties``): the sentences ``rankgate compare`` and the gate say on stderr
    (:mod:`rankgate.gating.alike`), each after its title."""
    from rankgate.gating.alike import pair_warnings

    def pair(key: str) -> tuple[Any, Any]:
        v = o.get(key) or {}
        return v.get("baseline"), v.get("candidate")

    return [f"{ICON['warn']} **{title}:** {sentence}."
            for title, sentence in pair_warnings(o["candidate"], o["baseline"]["label"], pair("gold_versions"),
                                                 pair("tie_rules"), name=lambda text: esc(text, 100),
                                                 code=lambda text: f"`{esc(text)}`")]


def _noise_sentences(g: Mapping[str, Any], conf: str, who: str, esc=md_escape) -> list[str]:
    out = []
    for c in g["checks"]:
        if c["status"] == "pass" and "within noise" in (c.get("note") or ""):
            out.append(f"{ICON['note']} {_check_sentence(g, c, conf, who, esc)}: beyond the limit, but the {conf} of the "
                       "change includes 0, so it is within noise and does not fail.")
    return out


def _one_line(text: str) -> str:
    """``text`` with no-break spaces, so a table cell keeps it on one line however narrow the page."""
    return text.replace(" ", "\u00a0")


def _limits(g: Mapping[str, Any]) -> str:
    m, parts = g["metric"], []
    if g["threshold"] is not None:
        parts.append(("CI low ≥ " if g["on"] == "ci_lower" else "≥ ") + fmt_limit(m, g["threshold"]))
    if g["max"] is not None:
        parts.append(("CI high ≤ " if g["on"] == "ci_upper" else "≤ ") + fmt_limit(m, g["max"]))
    if g["regression_max"] is not None:
        parts.append(("drop" if higher_is_better(m) else "rise") + f" ≤ {fmt_pp(m, g['regression_max'])}")
    return "; ".join(parts)


def _stat(o: Mapping[str, Any], metric: str, f: str | None, seg: str | None) -> Mapping[str, Any]:
    if f is None:
        return (o.get("metrics") or {}).get(metric) or {}
    return ((o.get("segments") or {}).get(f) or {}).get(seg, {}).get(metric) or {}


def _row_scopes(g: Mapping[str, Any]):
    """The table rows of a gate: all queries, then each failing segment, with their checks."""
    scopes: dict[tuple, list[Mapping[str, Any]]] = {}
    for c in g["checks"]:
        if not c.get("critical"):  # chosen values have their own table (render/critical.py)
            scopes.setdefault((c.get("field"), c.get("segment")), []).append(c)
    for (f, seg), checks in scopes.items():
        # segments are listed only when they fail; "segments that moved most" shows the rest
        if f is None or any(c["status"] == "fail" for c in checks):
            yield f, seg, checks


def _bounded_scopes(g: Mapping[str, Any]):
    """:func:`_row_scopes` with at most :data:`~rankgate.stats.segments.MAX_SHOWN_SEGMENTS` failing segments of each
    field (the largest), each field's followed by ``(field, ShownSegments)`` when some were left out."""
    scopes = list(_row_scopes(g))
    sizes: dict[str, dict[str, int]] = {}
    for f, seg, checks in scopes:
        if f is not None:
            sizes.setdefault(f, {})[seg] = max(int(c.get("n") or 0) for c in checks)
    shown = {f: shown_segments(of) for f, of in sizes.items()}
    if not any(sh.left_out for sh in shown.values()):
        yield from scopes
        return
    at = {(f, seg): checks for f, seg, checks in scopes}
    yield from (scope for scope in scopes if scope[0] is None)
    for f, sh in shown.items():
        yield from ((f, seg, at[(f, seg)]) for seg in sh.labels)
        if sh.left_out:
            yield f, sh, None


def _gate_rows(o: Mapping[str, Any], gates: list[Mapping[str, Any]], cap: int) -> list[str]:
    rows: list[str] = []
    total = 0
    for g in gates:
        for f, seg, checks in _bounded_scopes(g):
            total += 1
            if len(rows) < cap:
                rows.append(_gate_row(o, g, f, seg, checks) if checks is not None else
                            f"| | … {md_escape(left_out_line(f, seg, 'the JSON outcome', 'failing segments'), 300)} |" + " |" * 3)
    if total > cap:
        rows.append(f"| | … {total - cap} more rows not shown (see the JSON outcome) |" + " |" * 3)
    return rows


def _id_like_notes(o: Mapping[str, Any]) -> list[str]:
    """A note on each gated segment field with more distinct values than half the queries."""
    queries = (o.get("counts") or {}).get("evaluated")
    fields = dict.fromkeys(c["field"] for g in o["gates"] for c in g["checks"] if c.get("field") is not None)
    if not isinstance(queries, int):
        return []
    return [f"{ICON['note']} {md_escape(id_like_line(f, len(labels), queries), 300)}"
            for f in fields for labels in [(o.get("segments") or {}).get(f) or {}] if looks_like_id(len(labels), queries)]


def _gate_row(o: Mapping[str, Any], g: Mapping[str, Any], f: str | None, seg: str | None, checks) -> str:
    statuses = {c["status"] for c in checks}
    m = g["metric"]
    cur = next((c for c in checks if c["kind"] != "regression"), checks[0])
    reg = next((c for c in checks if c["kind"] == "regression"), None)
    status = "fail" if "fail" in statuses else ("warn" if "warn" in statuses else
                                                ("pass" if "pass" in statuses else "skipped"))
    if status == "fail" and g["severity"] == "warning":
        status = "warn"
    st = _stat(o, m, f, seg)
    ci = fmt_value_ci(m, st.get("ci_low"), st.get("ci_high"))
    floor = g["threshold"] if g["threshold"] is not None else g["max"]
    mean = _n(st.get("mean", cur["mean"]))
    # Five columns fit GitHub's 800 px: the icon is the result, the metric goes under the gate's name, the
    # baseline before the candidate; the change and the limit never wrap (no-break spaces), a verdict may.
    candidate = fmt_apart(m, mean, floor if g["on"] == "mean" else None)
    change = "—"
    if reg is not None and reg["status"] != "skipped":
        candidate = f"{fmt_value(m, _n(reg['baseline']))} → {candidate}"
        change = fmt_apart(m, _n(reg["value"]), g["regression_max"], delta=True)
        dci = fmt_delta_ci_apart(m, reg["ci_low"], reg["ci_high"])
        change = _one_line(change + (f" ({dci})" if dci != "—" else ""))
        if reg.get("verdict"):
            change += f"<br>{md_escape(reg['verdict'])}"
    candidate = _one_line(candidate) + (f"<br>({_one_line(ci)})" if ci != "—" else "")
    if f is None:
        name = md_escape(g["name"], 60) + (f"<br><sub>{md_escape(m)}</sub>" if g["name"] != m else "")
    else:
        name = "↳ " + md_escape(f"{display_field(f)} = {seg}", 60)
    # a segment is held to the same limits as all queries: the column says so on every row
    return f"| {ICON[status]} | {name} | {candidate} | {change} | {_one_line(_limits(g))} |"


def _mover_rows(moves: list[Mapping[str, Any]], verdicts: bool = True) -> list[str]:
    rows = []
    for mv in moves:
        m = mv["metric"]
        dci = fmt_delta_ci_apart(m, mv["ci_low"], mv["ci_high"])
        change = fmt_delta(m, _n(mv["delta"])) + (f" ({dci})" if dci != "—" else "")
        rows.append(f"| {md_escape(display_field(mv['field']) + ' = ' + mv['segment'], 60)} | {md_escape(m)} | {mv['n']} | "
                    f"{fmt_value(m, _n(mv['baseline']))} | {fmt_value(m, _n(mv['current']))} | {change} |"
                    + (f" {md_escape(mv.get('verdict') or '')} |" if verdicts else ""))
    return rows


def _query_cell(q: Mapping[str, Any]) -> str:
    text = q.get("query")
    cell = md_escape(q["query_id"], 40)
    if isinstance(text, str) and text.strip():
        cell += ": " + md_escape(shorten(" ".join(text.split()), 60), 60)
    return cell


def _query_rows(items: list[Mapping[str, Any]], kind: str, notes: bool) -> list[str]:
    rows = []
    for q in items:
        m = q["metric"]
        note = f" {md_escape(q.get('note') or '')} |" if notes else ""
        if kind == "regressed":
            rows.append(f"| {_query_cell(q)} | {fmt_value(m, _n(q['baseline']))} | {fmt_value(m, _n(q['candidate']))} | "
                        f"{fmt_rank(q['baseline_rank'])} → {fmt_rank(q['candidate_rank'])} |{note}")
        else:
            rows.append(f"| {_query_cell(q)} | {fmt_value(m, _n(q['candidate']))} | "
                        f"{fmt_rank(q['candidate_rank'])} |{note}")
    return rows


def _cut(rows: list[str], cap: int, columns: int, what: str) -> list[str]:
    if len(rows) <= cap:
        return rows
    return rows[:cap] + [f"| … {len(rows) - cap} more {what} not shown (see the JSON outcome) |" + " |" * (columns - 1)]


def stale_sentence(o: Mapping[str, Any], esc=md_escape) -> str | None:
    """The stale-label limit of the ship criteria (``max_stale_labels``): over it, or not checked."""
    st = o.get("stale_labels")
    if not st or st["status"] == "pass":
        return None
    if st["status"] == "not_checked":
        return (f"{ICON['warn']} Stale labels were not checked: the ship criteria set max_stale_labels "
                f"({esc(st['limit'])}), but the gate was not given the corpus (`--corpus`).")
    reasons = ", ".join(f"{n} {esc(k.replace('_', ' '))}" for k, n in st["by_reason"].items())
    text = (f"{ICON[st['status']]} Stale labels: {st['stale']} of {st['labels']} gold ids "
            f"({fmt_share(st['share'])}; graded labels and must-not-retrieve ids) point at chunks the corpus {esc(st['corpus'] or '')} has retired, replaced "
            f"or changed ({reasons}); the limit is {esc(st['limit'])}. `rankgate gold stale` lists them.")
    if st["severity"] == "warning":
        text += " (warning: does not block)"
    if st.get("owner"):
        text += f" Owner: {esc(st['owner'])}."
    return text


def _stale_row(o: Mapping[str, Any]) -> str | None:
    st = o.get("stale_labels")
    if not st:
        return None
    status = {"pass": "pass", "fail": "fail", "warn": "warn", "not_checked": "skipped"}[st["status"]]
    result = {"fail": "fail", "warn": "warning", "pass": "pass", "skipped": "not checked (no `--corpus`)"}[status]
    value = "—" if st["share"] is None else f"{fmt_share(st['share'])} ({st['stale']} of {st['labels']} gold ids)"
    if status == "skipped":
        value = result
    return f"| {ICON[status]} | stale labels | {value} | — | {_one_line('≤ ' + md_escape(st['limit']))} |"


def _sentences(o: Mapping[str, Any], esc) -> list[str]:
    conf = f"{fmt_confidence(o['statistics']['confidence'])} CI"
    gates = o["gates"]
    bad = [g for g in gates if g["status"] == "fail"] + [g for g in gates if g["status"] == "warn"]
    noisy = [g for g in gates if _noise_sentences(g, conf, "", esc)]
    # name the gate too when two sentences would otherwise start the same way
    titles = [g["title"] for g in bad + [g for g in noisy if g not in bad]]
    who = {id(g): esc(g["title"], 120) + (f" (gate {esc(g['name'], 60)})" if titles.count(g["title"]) > 1 else "")
           for g in gates}
    out = [_gate_sentence(g, conf, who[id(g)], esc) for g in bad
           if any(c["status"] in ("fail", "warn") and not c.get("critical") for c in g["checks"])]
    out += critical.critical_sentences(o, conf, lambda g: who[id(g)], esc)
    stale = stale_sentence(o, esc)
    if stale:
        out.append(stale)
    if o.get("cost"):
        from rankgate.render.cost import cost_gate_sentences

        out += cost_gate_sentences(o, esc)
    return out + [s for g in gates for s in _noise_sentences(g, conf, who[id(g)], esc)]


def _read_from_name(gates: list[Mapping[str, Any]]) -> list[str]:
    """One line per gate whose metric was read from its name (ship criteria without ``metric:``)."""
    read = [g for g in gates if g.get("metric_from_name")]
    if not read:
        return []
    shown = "; ".join(f"{md_escape(g['name'], 80)} as **{md_escape(g['metric'], 80)}**" for g in read[:20])
    more = f" and {len(read) - 20} more" if len(read) > 20 else ""
    return ["", f"Metrics read from gate names (no `metric:` given): {shown}{more}."]


def gate_sentences(outcome: Any, *, markdown: bool = True) -> list[str]:
    """One plain sentence per failing or warning gate, then one per regression within noise."""
    data = outcome.to_dict() if hasattr(outcome, "to_dict") else outcome
    return _sentences(data, md_escape if markdown else _plain)


def gate_counts(o: Mapping[str, Any]) -> tuple[int, int, list[Mapping[str, Any]]]:
    """(failed, blocking, warned) of a gate outcome's JSON: quality, latency and cost gates and the stale-label
    limit count alike. The one count every output gives (the comment's heading, the demo's story)."""
    every = [*o["gates"], *(o.get("latency") or []), *(o.get("cost") or [])]
    warned = [g for g in every if g["status"] == "warn"]
    st = o.get("stale_labels") or {}
    n_failed = sum(g["status"] == "fail" for g in every) + (st.get("status") == "fail")
    n_blocking = sum(g["severity"] == "error" for g in every) + (st.get("severity") == "error"
                                                                 and st.get("status") != "not_checked")
    if st.get("status") in ("warn", "not_checked"):
        warned = warned + [st]
    return int(n_failed), int(n_blocking), warned


def _render(o: Mapping[str, Any], caps: Mapping[str, int]) -> str:
    conf = f"{fmt_confidence(o['statistics']['confidence'])} CI"
    gates = o["gates"]
    n_failed, n_blocking, warned = gate_counts(o)
    if n_failed:
        head = f"## ❌ Retrieval gate failed: {n_failed} of {n_blocking} blocking gates"
    else:
        head = f"## ✅ Retrieval gate passed: all {n_blocking} blocking gates"
    if warned:
        head += f" ({len(warned)} warning{'s' if len(warned) != 1 else ''})"
    out = [MARKER, head, ""]
    cand, base = md_escape(o["candidate"], 100), md_escape(o["baseline"]["label"], 100)
    kind = o["baseline"]["kind"]
    rule = o["baseline"].get("rule") or {"run": "paired", "summary": "means"}.get(kind, "none")
    if kind == "run":
        out.append(f"Candidate **{cand}** against baseline **{base}**, paired by query.")
    elif kind == "summary" and rule == "paired":
        out.append(f"Candidate **{cand}** against the baseline summary **{base}**, paired by query "
                   "(the summary keeps each query's values).")
    elif kind == "summary":
        out.append(f"Candidate **{cand}** against the baseline summary **{base}** (means only).")
    else:
        out.append(f"Candidate **{cand}**; no baseline given.")
    out.append("")
    for sentence in alike_sentences(o):
        out += [sentence, ""]
    sentences = _sentences(o, md_escape)
    if sentences:
        shown = sentences[: caps["sentences"]]
        out += [s + "  " for s in shown]
        if len(sentences) > len(shown):
            out.append(f"… and {len(sentences) - len(shown)} more (see the table and the JSON outcome).")
        out.append("")
    if rule == "paired":
        out.append(f"**Rule: paired test.** A regression fails a gate only when the drop is larger than its limit "
                   f"**and** the {conf} of the change (paired by query) excludes zero; smaller or uncertain changes "
                   "are noted, not failed.")
        apart = [c for g in o.get("gates", []) for c in g.get("checks", [])
                 if c.get("status") == "fail" and str(c.get("verdict") or "").startswith("not significant")]
        if apart:  # the gate's rule is each row's own interval; the verdict words are corrected for their family
            out[-1] += (" The verdict words are Holm-corrected across the rows of their family, the gate's rule "
                        "is not: a row can fail its gate while its verdict says it is not significant after the "
                        "correction (a segment among many: look closer before you trust or dismiss it).")
    elif rule == "means":
        out.append("**Rule: means only.** The baseline is a summary of means, so a regression fails a gate when the "
                   "mean dropped by more than its limit; there is no paired confidence interval.")
    for note in o.get("notes", []):
        if rule == "means" and note.startswith("The baseline is a summary"):
            why = note[note.find("(") + 1: note.rfind("): ")] if "): " in note else ""
            if why:
                hint = ("; a summary written by this version of rankgate (`gate --json-out` or `evaluate --out`) keeps "
                        "the paired test" if "per-query values" in why else "")
                out.append(f"It is means only because {md_escape(why, 200)}{hint}.")
            continue
        out.append(f"{md_escape(note, 500)}")
    out += _read_from_name(gates)
    out += ["", "### Gates", "", f"| | Gate | Baseline → candidate ({conf}) | Change ({conf}) | Limit |",
            "|:-:|:--|--:|--:|:--|"]
    out += _gate_rows(o, gates, caps["table"])
    stale_row = _stale_row(o)
    if stale_row:
        out.append(stale_row)
    chosen = critical.critical_markdown(o, conf, caps["table"])
    if chosen:
        out += ["", *chosen]
    id_notes = _id_like_notes(o)
    if id_notes:
        out += ["", *id_notes]
    if o.get("latency"):
        from rankgate.render.experiments import latency_gate_markdown

        out += ["", *latency_gate_markdown(o["latency"], conf, caps["table"])]
    if o.get("cost"):
        from rankgate.render.cost import cost_gate_markdown

        out += ["", *cost_gate_markdown(o["cost"], conf, caps["table"])]
    moves = o.get("segments_moved") or []
    if moves:
        title = "Segments that moved most" if kind != "none" else "Weakest segments (compared with all queries)"
        before, change = ("Baseline", "Change") if kind != "none" else ("All queries", "Difference")
        verdicts = any(mv.get("verdict") for mv in moves)
        out += ["", f"### {title}", "", f"| Segment | Metric | n | {before} | Candidate | {change} |"
                + (" Verdict |" if verdicts else ""), "|:--|:--|--:|--:|--:|--:|" + (":--|" if verdicts else "")]
        out += _cut(_mover_rows(moves, verdicts), caps["movers"], 7 if verdicts else 6, "segments")
        families = o.get("holm_families") or []
        if verdicts and families:
            segments = [(display_field(fam["rows"]), fam["size"]) for fam in families if fam["rows"] != "headline"]
            out += ["", f"<sub>Verdicts: paired sign-flip randomisation test, "
                        f"{md_escape(correction_line(families[0]['size'], segments), 400)}.</sub>"]
    queries = o.get("queries", {})
    items = queries.get("items") or []
    if items:
        m = md_escape(items[0]["metric"])
        shown_items = items[: caps["queries"]]
        notes = any(q.get("note") for q in shown_items)
        note_head, note_align = (" Note |", ":--|") if notes else ("", "")
        if queries.get("kind") == "regressed":
            out += ["", f"### Most-regressed queries on {m}", "",
                    f"| Query | Baseline | Candidate | First relevant rank (before → after) |{note_head}",
                    f"|:--|--:|--:|--:|{note_align}"]
        else:
            out += ["", f"### Lowest-scoring queries on {m}", "", f"| Query | Candidate | First relevant rank |{note_head}",
                    f"|:--|--:|--:|{note_align}"]
        out += _query_rows(shown_items, queries.get("kind", "regressed"), notes)
    counts = o.get("counts") or {}
    missing = counts.get("missing_from_run") or []
    if missing:
        listed = ", ".join(md_escape(q, 40) for q in missing[:5]) + (" …" if len(missing) > 5 else "")
        many = f"{len(missing)} gold queries are" if len(missing) != 1 else "1 gold query is"
        out += ["", f"{many} missing from the candidate run and scored 0 there: {listed}"]
    if o.get("answers"):  # layer two (rankgate answers): its metrics and the diagnosis grid
        from rankgate.render.answers import answers_markdown

        out += ["", answers_markdown(o["answers"], confidence=o["statistics"]["confidence"]).rstrip("\n")]
    st = o["statistics"]
    out += ["", "<details><summary>How these numbers are computed</summary>", "",
            (f"- Means are over the queries where each metric applies ({counts.get('evaluated', '?')} gold queries"
             + (f"; {counts['no_answer']} no-answer queries are left out of ranking metrics" if counts.get("no_answer") else "")
             + ")."),
            (f"- {conf}: percentile bootstrap over queries, {st['resamples']} resamples, seed {st['seed']}; "
             "the change's interval resamples queries in pairs (same query, both runs)."
             if not st.get("resampling") else
             f"- {conf}: percentile bootstrap over conversations, {_units_line(st['resampling'])}, "
             f"{st['resamples']} resamples, seed {st['seed']}; the change's interval resamples conversations in "
             "pairs (same conversation, both runs)."),
            "- pp = percentage points.",
            "", "</details>", ""]
    return "\n".join(out)


def comment_markdown(outcome: Any, *, max_bytes: int = MAX_BYTES, answers: Mapping[str, Any] | None = None) -> str:
    """The comment for a :class:`GateOutcome` (or its ``to_dict()``), at most ``max_bytes`` of UTF-8;
    ``answers`` (the ``answers`` part of a ``rankgate answers`` summary) adds layer two and the grid."""
    data = outcome.to_dict() if hasattr(outcome, "to_dict") else outcome
    if answers:
        data = {**data, "answers": answers}
    caps = {"sentences": SHOWN_SENTENCES, "table": 200, "movers": 5, "queries": 5}
    text = _render(data, caps)
    while len(text.encode("utf-8")) > max_bytes and any(v > 1 for v in caps.values()):
        for key, cap in caps.items():
            caps[key] = max(1, cap // 2)
        text = _render(data, caps)
    if len(text.encode("utf-8")) > max_bytes:  # pathological: even one row each is too long
        note = "\n\n… comment cut to stay under GitHub's size limit; see the JSON outcome.\n"
        budget = max_bytes - len(note.encode("utf-8"))
        text = text.encode("utf-8")[:budget].decode("utf-8", errors="ignore") + note
    return text


if __name__ == "__main__":  # pragma: no cover
    import json
    import sys

    with open(sys.argv[1], encoding="utf-8") as fh:
        sys.stdout.write(comment_markdown(json.load(fh)))
