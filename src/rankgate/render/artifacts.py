"""The run's recorded artifacts beside the numbers: index version, chunker settings, embedding model,
reranker, as the run records carry them (``result.info["run"]``, :func:`rankgate.scoring.facts.result_info`).

A reader of a report must know *what* was measured before the numbers mean anything: a recall drop
with a new index version is a different story from one with the same index. :func:`run_artifacts`
gives one compact block per run (the candidate, and the baseline when there is one), with the values
that differ between the two marked; the HTML report (:func:`artifacts_html`) and the markdown
summary (:func:`artifacts_markdown`) draw it. A field the runs do not log is left out; a run that
logs several values of one field (an index rebuilt mid-run) shows them all, joined by ``; ``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["ARTIFACT_FIELDS", "RunArtifacts", "artifacts_html", "artifacts_markdown", "comparison_artifacts_markdown",
           "run_artifacts"]

#: The run fields shown, in order, with their labels.
ARTIFACT_FIELDS: tuple[tuple[str, str], ...] = (
    ("index_version", "index version"), ("chunker", "chunker"), ("embedding_model", "embedding model"),
    ("reranker", "reranker"), ("corpus_version", "corpus version"), ("system", "system"),
    ("retriever", "retriever settings"))


@dataclass(frozen=True)
class RunArtifacts:
    """``rows``: (label, candidate value, baseline value, differ) per field either run logs; a value is
    ``None`` where that run does not log the field; ``differ`` only when there is a baseline."""

    run_label: str
    baseline_label: str | None
    rows: tuple[tuple[str, str | None, str | None, bool], ...]


def _text(value: Any) -> str | None:
    if value is None or value == [] or value == "":
        return None
    values = value if isinstance(value, list) else [value]
    return "; ".join(v if isinstance(v, str) else json.dumps(v, sort_keys=True, ensure_ascii=False) for v in values)


def run_artifacts(run_facts: Mapping[str, Any], baseline_facts: Mapping[str, Any] | None = None, *,
                  run_label: str = "run", baseline_label: str | None = None) -> RunArtifacts | None:
    """The block of the run's facts (``result.info["run"]``) and the baseline's; None when neither
    logs any artifact."""
    rows = []
    for key, label in ARTIFACT_FIELDS:
        cur = _text(run_facts.get(key))
        old = _text(baseline_facts.get(key)) if baseline_facts is not None else None
        if cur is None and old is None:
            continue
        rows.append((label, cur, old, baseline_facts is not None and cur != old))
    if not rows:
        return None
    return RunArtifacts(run_label, baseline_label if baseline_facts is not None else None, tuple(rows))


def artifacts_html(art: RunArtifacts | None, e: Callable[[Any], str]) -> str:
    """The "Run artifacts" block: one row per field, a column per run; a differing value is marked
    (``class="differs"``, with a title saying so). ``e`` is the report's HTML escaping function."""
    if art is None:
        return ""
    base = art.baseline_label is not None
    head = f"<th>artifact</th><th>{e(art.run_label)}</th>" + (f"<th>{e(art.baseline_label)}</th>" if base else "")
    out = ['<div class="artifacts" id="artifacts"><h3>Run artifacts</h3>',
           f'<table class="compact"><thead><tr>{head}</tr></thead><tbody>']
    for label, cur, old, differ in art.rows:
        mark = ' class="differs" title="differs between the runs"' if differ else ""
        cells = [f"<td{mark}>{e(v) if v is not None else '—'}</td>" for v in ((cur, old) if base else (cur,))]
        out.append(f"<tr><td>{e(label)}</td>{''.join(cells)}</tr>")
    out.append("</tbody></table>")
    if base and any(r[3] for r in art.rows):
        out.append('<p class="muted">Highlighted: recorded differently by the two runs; a change in the numbers '
                   "may come from these as much as from the retriever.</p>")
    out.append("</div>")
    return "".join(out)


def artifacts_markdown(art: RunArtifacts | None) -> str:
    """The block as a markdown table (values escaped for markdown), a differing value in bold."""
    if art is None:
        return ""
    from rankgate.render.numbers import md_escape

    base = art.baseline_label is not None
    out = ["### Run artifacts", "",
           f"| artifact | {md_escape(art.run_label, 80)} |" + (f" {md_escape(str(art.baseline_label), 80)} |" if base else ""),
           "|---|---|" + ("---|" if base else "")]
    for label, cur, old, differ in art.rows:
        cells = [md_escape(v, 200) if v is not None else "—" for v in ((cur, old) if base else (cur,))]
        if differ:
            cells = [f"**{c}**" for c in cells]
        out.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def comparison_artifacts_markdown(candidate: Any, baseline: Any, candidate_label: str, baseline_label: str) -> str:
    """The block of two compared results (:class:`~rankgate.model.results.EvaluationResult`), as markdown
    preceded by a blank line, for the end of ``rankgate compare --markdown`` (and the demo's compare.md);
    empty when neither run logs an artifact, so such comparisons read as before."""
    art = run_artifacts(candidate.info.get("run") or {}, baseline.info.get("run") or {}, run_label=candidate_label,
                        baseline_label=baseline_label)
    return "" if art is None else "\n" + artifacts_markdown(art)
