"""The postmortem template of ``rankgate incident new``, prefilled from a retrieval trace
(:class:`rankgate.goldset.incident.Trace`). ``rankgate incident add`` reads it back
(:func:`rankgate.goldset.incident.parse_postmortem`), so the headings and ``- key: value`` lines are
the contract: keep them, replace every TODO.

Nothing taken from the trace can become structure: values read back (the header fields, the
query, chunk ids) pass :func:`rankgate.goldset.incident.pm_value`; what is only shown to people (the
table, citations, feedback, the title) passes :func:`.numbers.md_escape`; the request id and query
are also kept verbatim in the fenced trace data block at the end."""

from __future__ import annotations

from collections.abc import Collection

from rankgate.goldset.incident import FAILURE_LINKS, LIFECYCLE_STAGES, STAGES, Trace, data_block, pm_value
from rankgate.render.numbers import fmt_sig, md_escape

__all__ = ["postmortem_markdown"]


def _cell(value: object) -> str:
    return "" if value is None else md_escape(str(value), width=200)


def _trace_table(t: Trace, stale: Collection[str]) -> list[str]:
    cited = {cid for cid, _ in t.citations}
    rows = ["| stage | rank | chunk | document | version | score | status | cited |", "|---|--:|---|---|---|--:|---|---|"]
    order = {s: i for i, s in enumerate(STAGES)}
    for it in sorted(t.items, key=lambda it: (order[it.stage], it.rank or 0)):
        status = it.status or ("stale" if it.id in stale else "")
        rows.append(f"| {it.stage} | {'' if it.rank is None else it.rank} | {md_escape(it.id, width=200)} | "
                    f"{_cell(it.doc_id)} | {_cell(it.doc_version)} | {'' if it.score is None else fmt_sig(it.score, 4)} | "
                    f"{_cell(status)} | {'yes' if it.id in cited else ''} |")
    return rows


def postmortem_markdown(t: Trace, *, incident_id: str, date: str) -> str:
    """The template (see module docs); items whose status is not active are suggested as
    must-not-retrieve entries."""
    inactive = [it.id for it in t.items if it.status and it.status.lower() not in ("active", "current")]
    suggestions = list(dict.fromkeys(inactive))
    packed = [it.id for it in t.items if it.stage == "packed"]
    version = t.fields.get("corpus_version") or t.fields.get("index_version")
    out = [
        f"# Incident {md_escape(incident_id, width=200)}: TODO one-line title",
        "",
        "<!-- rankgate incident: fill every TODO and tick the boxes, then run",
        "     rankgate incident add THIS_FILE --gold GOLD   (it refuses the file while anything is unfilled) -->",
        "",
        f"- incident_id: {pm_value(incident_id)}",
        f"- request_id: {pm_value(t.request_id)}",
        f"- date: {pm_value(date)}",
        f"- corpus_version: {pm_value(version) if version else 'TODO'}",
        f"- tenant: {pm_value(t.fields['tenant']) if t.fields.get('tenant') else ''}",
        "",
        "## Summary",
        "",
        "TODO: what the user saw, who was affected, for how long.",
        "",
        "## Trace",
        "",
        f"Query: {md_escape(t.query, width=400)}",
    ]
    if "rewritten_query" in t.fields:
        out.append(f"Rewritten: {md_escape(t.fields['rewritten_query'], width=400)}")
    if "timestamp" in t.fields:
        out.append(f"At: {md_escape(t.fields['timestamp'], width=60)}")
    out += ["", *_trace_table(t, inactive), ""]
    if t.citations:
        out.append("Cited: " + ", ".join(md_escape(c, width=200) + (f" ({md_escape(v, width=80)})" if v else "")
                                         for c, v in t.citations))
    if t.feedback:
        out.append("Feedback: " + "; ".join(md_escape(v, width=40) + (f" ({md_escape(r, width=200)})" if r else "")
                                            for v, r in t.feedback))
    out += [
        "",
        "## Failure-chain link that broke",
        "",
        "Tick exactly one:",
        "",
        *(f"- [ ] {link}" for link in FAILURE_LINKS),
        "",
        "## Root cause",
        "",
        "TODO",
        "",
        "## Was it detectable",
        "",
        "- detectable: TODO (yes or no)",
        "- signal: TODO (which signal or gate should have caught it)",
        "",
        "## Fix",
        "",
        "TODO",
        "",
        "## Regression test",
        "",
        "The query and the chunks the gold set should hold for it (`rankgate incident add` appends it).",
        "",
        f"- query: {pm_value(t.query)}",
        "",
        "relevant:",
        "- TODO chunk_id | grade 3 | why it answers the query",
        "",
        "must_not_retrieve:",
    ]
    out += [f"- {pm_value(cid, item=True)}" for cid in suggestions] or ["- (none)"]
    if packed:
        out += ["", f"<!-- packed into the context: {', '.join(pm_value(c, item=True) for c in packed)} -->"]
    out += [
        "",
        "## Lifecycle gap",
        "",
        "Tick the one stage whose gap let it through:",
        "",
        *(f"- [ ] {stage}" for stage in LIFECYCLE_STAGES),
        "",
        "## Trace data",
        "",
        "The trace's request id and query, read by `rankgate incident add`: leave this block as it is.",
        "",
        *data_block(t.request_id, t.query),
        "",
    ]
    return "\n".join(out)
