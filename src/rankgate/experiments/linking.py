"""Entity linking: are the right entities linked to each query?

Inputs: the gold field ``entities`` (the entities a query is about: a list of names or ids) and the
run record field ``linked_entities`` (what the system's entity linker found for the query). Per query
with gold entities, compared as sets after trimming and case-folding:

``precision``  |linked ∩ gold| / |linked|   (NaN when nothing was linked: no claim to judge)
``recall``     |linked ∩ gold| / |gold|
``f1``         2·P·R / (P + R)              (0 when nothing was linked or nothing was right)

Means over queries with bootstrap intervals, per segment too, beside the chunk recall@k of the same
queries, so a retrieval miss can be told apart from a linking miss: the queries listed are those whose
linking missed a gold entity, with their recall@k.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rankgate.model.gold_run import Gold, Run
from rankgate.errors import InputError
from rankgate.model.results import EvaluationResult
from rankgate.stats.segments import display_field, members_of, ordered_labels, segment_labels
from rankgate.stats.bootstrap import bootstrap_ci
from rankgate.experiments.paired import nan_to_none
from rankgate.stats.options import Statistics, taken

__all__ = ["Linking", "LinkingRow", "linking_analysis"]


def _norm(values: Any, path: str, field: str, qid: str) -> set[str] | None:
    if values is None:
        return None
    if isinstance(values, str):
        values = [values]
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise InputError(f"query {qid!r} has {field} {str(values)[:60]}; expected a list of entity names"[:200],
                         path=path, field=field)
    return {" ".join(v.split()).casefold() for v in values if v.strip()}


@dataclass(frozen=True)
class LinkingRow:
    metric: str  # el_precision | el_recall | el_f1 | recall@k
    segment: str | None
    n: int
    mean: float
    ci: tuple[float, float]

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "segment": self.segment, "n": self.n, "mean": nan_to_none(self.mean),
                "ci": [nan_to_none(self.ci[0]), nan_to_none(self.ci[1])]}


@dataclass(frozen=True)
class Linking:
    k: int
    queries: int  # queries with gold entities
    unlinked: int  # of which the run logged no linked_entities field (scored as nothing linked)
    rows: tuple[LinkingRow, ...]
    per_query: tuple[tuple[str, float, float, float, float], ...]  # qid, P, R, F1, recall@k
    missed: tuple[tuple[str, tuple[str, ...], float], ...]  # qid, gold entities not linked, recall@k

    def to_dict(self) -> dict[str, Any]:
        return {"k": self.k, "queries": self.queries, "without_linked_entities": self.unlinked,
                "metrics": [r.to_dict() for r in self.rows],
                "missed": [{"query_id": q, "not_linked": list(m), f"recall@{self.k}": nan_to_none(r)}
                           for q, m, r in self.missed],
                "definition": "per query, sets compared after trimming and case-folding: precision = |linked ∩ gold| "
                              "/ |linked| (NaN if nothing linked), recall = |linked ∩ gold| / |gold|, F1 their "
                              "harmonic mean (0 if nothing right)"}


def linking_analysis(gold: Gold, run: Run, recall: EvaluationResult, *, k: int, by: Sequence[str] = (),
                     statistics: Statistics | None = None,
                     seed: int = 0, resamples: int = 2000, confidence: float = 0.95) -> Linking:
    """Entity-linking precision, recall and F1 per query and their means (see the module docs)."""
    seed, resamples, confidence = taken(statistics, seed, resamples, confidence, caller="linking_analysis",
                                         defaults=(0, 2000, 0.95))
    if "linked_entities" not in run.fields:
        raise InputError("has no 'linked_entities' on any record, so entity linking cannot be measured",
                         path=run.source, field="linked_entities",
                         hint="log the entities your linker found for each query as 'linked_entities': [...]")
    linked_of = dict(zip(run.query_ids, run.fields["linked_entities"]))
    rec = recall[f"recall@{k}"]
    rec_index = recall.query_index()
    ids, p, r, f, rc = [], [], [], [], []
    missed, unlinked = [], 0
    for qid, ents in zip(gold.query_ids, gold.field("entities")):
        g = _norm(ents, gold.source, "entities", qid)
        if not g:
            continue
        raw = linked_of.get(qid)
        unlinked += raw is None
        got = _norm(raw, run.source, "linked_entities", qid) or set()
        hit = len(got & g)
        prec = hit / len(got) if got else math.nan
        reca = hit / len(g)
        f1 = 2 * prec * reca / (prec + reca) if got and hit else 0.0
        rq = float(rec[rec_index[qid]]) if qid in rec_index else math.nan
        ids.append(qid)
        p.append(prec)
        r.append(reca)
        f.append(f1)
        rc.append(rq)
        if g - got:
            missed.append((qid, tuple(sorted(g - got)), rq))
    if not ids:
        raise InputError("has no 'entities' on any query, so entity linking cannot be measured", path=gold.source,
                         field="entities", hint="list the entities each query is about as 'entities': [...]")
    cols = {"el_precision": np.asarray(p), "el_recall": np.asarray(r), "el_f1": np.asarray(f),
            f"recall@{k}": np.asarray(rc)}
    groups: list[tuple[str | None, np.ndarray]] = [(None, np.ones(len(ids), dtype=bool))]
    pos = recall.query_index()
    for name in by:
        key, labels = segment_labels(recall, name)
        mine = [labels[pos[q]] if q in pos else None for q in ids]
        values = ordered_labels(labels)
        groups += [(f"{display_field(key)}={lab}", idx) for lab, idx in zip(values, members_of(mine, values))]
    rows = []
    for metric, x in cols.items():
        for label, mask in groups:
            xs = x[mask]
            ok = xs[~np.isnan(xs)]
            rows.append(LinkingRow(metric, label, int(ok.size), math.fsum(ok.tolist()) / ok.size if ok.size else math.nan,
                                   bootstrap_ci(xs, rng=seed, resamples=resamples, confidence=confidence)))
    return Linking(k, len(ids), unlinked, tuple(rows), tuple(zip(ids, p, r, f, rc)), tuple(missed))
