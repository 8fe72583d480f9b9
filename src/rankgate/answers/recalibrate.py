"""Items of an answers file that people can label to recalibrate the judge (``rankgate judge recalibrate --answers``).

Two kinds of item, one per judge task a gate can rest on:

``context_relevance``
    each (question, packed context chunk) pair, the first ``depth`` contexts of each answer, as the pooling
    queue's line ``{query_id, query, id, text}`` (``rankgate pool``'s shape, which ``rankgate judge relevance``
    reads and people grade 2/1/0 by adding ``grade``);
``faithfulness``
    each answer, as ``{query_id, query, answer, contexts: [{id, text}], reference?}``, to which people add
    ``faithful`` (true/false, null for a refusal) and ``correct`` (true/false, null without a reference): the
    human verdicts ``rankgate answers --human`` reads.

Each item also says where it came from (``source``: the answers file's name; ``sample_reason``:
``judge_recalibration``) and, once sampled, its ``segment`` (the stratify fields' values). A question is
the answer's own, else the gold set's text of the query; items with neither are left out and counted (nobody can
judge relevance to a question they cannot read).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["answer_units"]


def answer_units(answers: Any, *, task: str, depth: int, questions: Mapping[str, str | None],
                 segments: Mapping[str, Mapping[str, Any]]) -> tuple[list[dict[str, Any]], list[tuple[Any, ...]], int]:
    """``(records, strata, left_out)``: every item of ``answers`` (see the module docs), each one's stratum (the
    values of its query's ``segments``, in the order of the fields) and how many were left out for want of a
    question."""
    source = os.path.basename(answers.source)
    records: list[dict[str, Any]] = []
    strata: list[tuple[Any, ...]] = []
    left_out = 0
    for a in answers.records:
        query = a.question or questions.get(a.query_id)
        segment = dict(segments.get(a.query_id, {}))
        stratum = tuple(segment.values())
        if not query:
            left_out += 1
            continue
        if task == "faithfulness":
            rec: dict[str, Any] = {"query_id": a.query_id, "query": query, "answer": a.answer,
                                   "contexts": [{"id": c.id, "text": c.text} for c in a.contexts]}
            if a.reference is not None:
                rec["reference"] = a.reference
            records.append(_provenance(rec, source, segment))
            strata.append(stratum)
            continue
        seen: set[str] = set()
        for rank, c in enumerate(_first(a.contexts, depth), start=1):
            if c.id in seen:
                continue
            seen.add(c.id)
            records.append(_provenance({"query_id": a.query_id, "query": query, "id": c.id, "text": c.text,
                                        "rank": rank}, source, segment))
            strata.append(stratum)
    return records, strata, left_out


def _first(contexts: Sequence[Any], depth: int) -> Sequence[Any]:
    return contexts[:depth]


def _provenance(rec: dict[str, Any], source: str, segment: Mapping[str, Any]) -> dict[str, Any]:
    rec["source"] = source
    rec["sample_reason"] = "judge_recalibration"
    if segment:
        rec["segment"] = dict(segment)
    return rec
