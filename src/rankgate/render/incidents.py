"""The report's "Incidents" view: the gold set's regression cases (queries with ``source_of_query:
incident``, as ``rankgate incident add`` writes them), by failure-chain link and lifecycle stage,
over time (by the month of ``created``), and whether each still passes in the run being reported.

A regression case *passes* when every relevant chunk is in the top k (``recall@k`` = 1) and, when
it has a ``must_not_retrieve`` list, none of those is (``forbidden@k`` = 0). A case the run does
not answer at all fails (recall 0). :func:`incident_view` gathers the numbers (no I/O);
:func:`incidents_html` draws the section. Run ``python -m rankgate.render.incidents GOLD RUN`` to
print the view as text.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from rankgate.goldset.incident import FAILURE_LINKS, LIFECYCLE_STAGES
from rankgate.render.numbers import fmt_score

__all__ = ["IncidentCase", "IncidentView", "incident_view", "incidents_html"]

UNSET = "(not set)"


@dataclass(frozen=True)
class IncidentCase:
    query_id: str
    incident_id: str
    failure_link: str
    lifecycle_stage: str
    created: str | None  # YYYY-MM-DD
    query: str | None
    recall: float
    forbidden: float | None  # None: the case has no must_not_retrieve list
    passes: bool


@dataclass(frozen=True)
class IncidentView:
    k: int
    cases: tuple[IncidentCase, ...]  # newest first, then by incident id
    forbidden_metric: str = "forbidden"

    @property
    def failing(self) -> tuple[IncidentCase, ...]:
        return tuple(c for c in self.cases if not c.passes)

    def by(self, attr: str) -> list[tuple[str, int, int]]:
        """(value, cases, failing now) per failure link or lifecycle stage, in the template's order."""
        order = {"failure_link": FAILURE_LINKS, "lifecycle_stage": LIFECYCLE_STAGES}[attr]
        total = Counter(getattr(c, attr) for c in self.cases)
        bad = Counter(getattr(c, attr) for c in self.failing)
        names = [n for n in order if n in total] + sorted(n for n in total if n not in order)
        return [(n, total[n], bad[n]) for n in names]

    def by_month(self) -> list[tuple[str, Counter[str], int]]:
        """(month, cases added by failure link, failing now) per month of ``created``, oldest first."""
        months: dict[str, Counter[str]] = {}
        bad: Counter[str] = Counter()
        for c in self.cases:
            m = c.created[:7] if c.created else "undated"
            months.setdefault(m, Counter())[c.failure_link] += 1
            bad[m] += not c.passes
        keys = sorted(m for m in months if m != "undated") + (["undated"] if "undated" in months else [])
        return [(m, months[m], bad[m]) for m in keys]


def _text(v: Any) -> str | None:
    return v if isinstance(v, str) and v.strip() else None


def incident_view(gold: Any, result: Any, k: int) -> IncidentView | None:
    """The regression cases of ``gold`` (a loaded gold set) scored in ``result``; None when the gold
    set has none. ``result`` must hold ``recall@k`` (and ``forbidden@k`` when a case has a
    must_not_retrieve list; without it such cases are judged on recall alone)."""
    sources = gold.field("source_of_query")
    picked = [i for i, s in enumerate(sources) if s == "incident"]
    if not picked:
        return None
    index = result.query_index()
    recall = result.values.get(f"recall@{k}")
    names = [str(m) for m in result.metric_names]
    forbidden_name = (f"forbidden@{k}" if f"forbidden@{k}" in names
                      else next((m for m in names if m.startswith("forbidden")), None))
    forbidden = result.values.get(forbidden_name) if forbidden_name else None
    fields = {name: gold.field(name) for name in ("incident_id", "failure_link", "lifecycle_stage", "created", "query",
                                                   "must_not_retrieve")}
    cases = []
    for i in picked:
        qid = gold.query_ids[i]
        j = index.get(qid)
        rec = float(recall[j]) if recall is not None and j is not None else math.nan
        rec = 0.0 if math.isnan(rec) else rec
        has_mn = bool(fields["must_not_retrieve"][i])
        fb = None
        if has_mn and forbidden is not None and j is not None and not math.isnan(float(forbidden[j])):
            fb = float(forbidden[j])
        passes = rec >= 1.0 - 1e-9 and (fb is None or fb <= 1e-9)
        created = _text(fields["created"][i])
        cases.append(IncidentCase(qid, _text(fields["incident_id"][i]) or qid,
                                  _text(fields["failure_link"][i]) or UNSET, _text(fields["lifecycle_stage"][i]) or UNSET,
                                  created[:10] if created else None, _text(fields["query"][i]), rec, fb, passes))
    cases.sort(key=lambda c: (c.created or "", c.incident_id), reverse=True)
    return IncidentView(k, tuple(cases), forbidden_name or f"forbidden@{k}")


# -- HTML ------------------------------------------------------------------------------------------
def _e(x: Any) -> str:
    return escape(str(x), quote=True)


def _counts_table(rows: Sequence[tuple[str, int, int]], what: str) -> str:
    out = [f'<table class="incidents-by"><thead><tr><th>{_e(what)}</th><th class="n">cases</th>'
           '<th class="n">failing now</th></tr></thead><tbody>']
    for name, n, bad in rows:
        cls = ' class="fail"' if bad else ""
        cell = "n fail" if bad else "n"
        out.append(f'<tr{cls}><td>{_e(name)}</td><td class="n">{n}</td><td class="{cell}">{bad}</td></tr>')
    return "".join(out) + "</tbody></table>"


def _timeline(view: IncidentView) -> str:
    months = view.by_month()
    most = max(sum(c.values()) for _, c, _ in months) or 1
    out = ['<table class="incidents-time"><thead><tr><th>month (created)</th><th class="n">cases added</th>'
           '<th>by failure link</th><th class="n">failing now</th></tr></thead><tbody>']
    for month, links, bad in months:
        n = sum(links.values())
        bar = f'<span class="bar" style="display:inline-block;height:.7em;background:#94a3b8;width:{round(100 * n / most)}px"></span>'
        parts = ", ".join(f"{_e(link)} {c}" for link, c in sorted(links.items(), key=lambda kv: (-kv[1], kv[0])))
        row = ' class="fail"' if bad else ""
        cell = "n fail" if bad else "n"
        out.append(f'<tr{row}><td>{_e(month)}</td><td class="n">{n} {bar}</td>'
                   f'<td>{parts}</td><td class="{cell}">{bad}</td></tr>')
    return "".join(out) + "</tbody></table>"


def _case_rows(view: IncidentView) -> str:
    out = ['<table class="incidents"><thead><tr><th>incident</th><th>created</th><th>failure link</th><th>stage</th>'
           f'<th>query</th><th class="n">recall@{view.k}</th><th class="n">{_e(view.forbidden_metric)}</th>'
           "<th>in this run</th></tr></thead><tbody>"]
    for c in view.cases:
        status = '<span class="tag good">passes</span>' if c.passes else '<span class="tag bad">fails</span>'
        fb = fmt_score(c.forbidden, 2)
        row = "" if c.passes else ' class="bad"'
        out.append(f'<tr data-query-id="{_e(c.query_id)}"{row}>'
                   f'<td class="ver"><code>{_e(c.incident_id)}</code></td><td class="ver">{_e(c.created or "—")}</td>'
                   f"<td>{_e(c.failure_link)}</td><td>{_e(c.lifecycle_stage)}</td><td>{_e(c.query or '')}</td>"
                   f'<td class="n">{fmt_score(c.recall, 2)}</td><td class="n">{fb}</td><td>{status}</td></tr>')
    return "".join(out) + "</tbody></table>"


def incidents_html(view: IncidentView) -> str:
    """The report's "Incidents" section."""
    bad = len(view.failing)
    lead = (f"{len(view.cases)} regression case{'s' * (len(view.cases) != 1)} from incidents "
            f"(<code>source_of_query: incident</code>); "
            + (f'<strong class="fail">{bad} fail{"s" * (bad == 1)} in this run</strong>' if bad
               else "every one passes in this run")
            + f". A case passes when all its relevant chunks are in the top {view.k} and none of its "
              "<code>must_not_retrieve</code> chunks is.")
    return "\n".join([
        '<section id="incidents"><h2>Incidents</h2>', f'<p class="lead">{lead}</p>',
        '<div class="incidents-grid">', _counts_table(view.by("failure_link"), "failure link"),
        _counts_table(view.by("lifecycle_stage"), "lifecycle stage"), "</div>",
        "<h3>Over time</h3>", _timeline(view), "<h3>Cases</h3>", _case_rows(view), "</section>"])


if __name__ == "__main__":  # pragma: no cover - a way to look at the view
    import sys

    from rankgate.io import load_gold
    from rankgate.scoring.engine import evaluate

    g = load_gold(sys.argv[1])
    v = incident_view(g, evaluate(g, sys.argv[2], ["recall@5", "forbidden@5"]), 5)
    if v is None:
        print("no regression cases (source_of_query: incident) in the gold set")
    else:
        for c in v.cases:
            print(c.incident_id, c.created, c.failure_link, c.lifecycle_stage, "passes" if c.passes else "FAILS")
