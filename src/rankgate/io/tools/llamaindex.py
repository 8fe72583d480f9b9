"""LlamaIndex's files (``--gold-format llamaindex``, ``--run-format llamaindex``).

* ``EmbeddingQAFinetuneDataset`` JSON, a gold set: the file ``save_json`` writes (or one written by
  hand): one object with ``queries`` (query id -> question), ``corpus`` (node id -> text) and
  ``relevant_docs`` (query id -> list of node ids, each relevant with grade 1). Queries keep the order
  of ``queries``. It holds no run: evaluate a retriever's output on these queries.
* ``RetrieverEvaluator`` results, a gold set and a run at once: a JSON list or JSON lines of
  ``RetrievalEvalResult.model_dump()`` (``query``, ``expected_ids``, ``expected_texts``,
  ``retrieved_ids``, ``retrieved_texts``, ``mode``, ``metric_dict``). ``expected_ids`` are relevant
  (grade 1); ``retrieved_ids`` are the run in the retriever's order (LlamaIndex keeps no scores), with
  ``retrieved_texts`` as their texts. A result carries no query id: a ``query_id`` field is used when
  present, else the query is known by a hash of its text, as in RAGAS files
  (:mod:`rankgate.io.tools.samples`); LlamaIndex's own ``metric_dict`` is not read.
"""

from __future__ import annotations

import json
from typing import Any

from rankgate.errors import InputError
from rankgate.io.jsonl import parse_gold_records
from rankgate.model.gold_run import Gold, Run
from rankgate.io.tools.records import Records
from rankgate.io.tools.samples import ToolShape, gold_from_samples, run_from_samples

__all__ = ["RETRIEVER_EVALUATOR", "read_llamaindex_gold", "read_results_gold", "read_results_run"]

RETRIEVER_EVALUATOR = ToolShape(
    name="llamaindex",
    label="LlamaIndex RetrieverEvaluator",
    query_keys=("query",),
    gold_ids="expected_ids",
    gold_texts=("expected_texts",),
    run_ids="retrieved_ids",
    run_texts=("retrieved_texts",),
    answer_keys=(),
    tool_keys=frozenset({"query", "expected_ids", "expected_texts", "retrieved_ids", "retrieved_texts", "mode",
                         "metric_dict"}),
    gold_hint="every RetrievalEvalResult lists its expected_ids",
)


def read_results_gold(records: Records) -> Gold:
    """The gold set of RetrieverEvaluator results: each result's ``expected_ids``."""
    return gold_from_samples(records, RETRIEVER_EVALUATOR)


def read_results_run(records: Records) -> Run:
    """The run of RetrieverEvaluator results: each result's ``retrieved_ids``, in order."""
    return run_from_samples(records, RETRIEVER_EVALUATOR)


def _mapping(top: dict[str, Any], key: str, path: str) -> dict[str, Any]:
    value = top.get(key)
    if not isinstance(value, dict):
        raise InputError(f"must be an object; got {json.dumps(value, default=str)[:60]}", path=path, field=key,
                         hint="an EmbeddingQAFinetuneDataset has queries, corpus and relevant_docs objects")
    return value


def read_llamaindex_gold(records: Records) -> Gold:
    path = records.path
    top = records.top
    if top is None:
        raise InputError("is not one JSON object with queries, corpus and relevant_docs", path=path,
                         hint="pass the file EmbeddingQAFinetuneDataset.save_json wrote")
    queries = _mapping(top, "queries", path)
    corpus = _mapping(top, "corpus", path)
    relevant = _mapping(top, "relevant_docs", path)
    for qid in relevant:
        if qid not in queries:
            raise InputError(f"names query {qid!r}, which is not in queries", path=path, field=f"relevant_docs.{qid}")
    out: list[tuple[int, dict[str, Any]]] = []
    for i, (qid, text) in enumerate(queries.items(), start=1):
        docs = relevant.get(qid)
        if not isinstance(docs, list) or not docs:
            got = "nothing" if docs is None else json.dumps(docs)[:60]
            raise InputError(f"must list at least one node id; got {got}", path=path, field=f"relevant_docs.{qid}",
                             hint="every query needs its relevant nodes")
        for d in docs:
            if not isinstance(d, str) or d not in corpus:
                raise InputError(f"names {d!r}, which is not in corpus", path=path, field=f"relevant_docs.{qid}",
                                 hint="relevant_docs lists ids of corpus nodes")
        if not isinstance(text, str):
            raise InputError(f"must be a string; got {json.dumps(text, default=str)[:60]}", path=path, field=f"queries.{qid}")
        out.append((i, {"query_id": qid, "query": text, "relevant": list(dict.fromkeys(docs))}))
    if not out:
        raise InputError("has no queries", path=path, field="queries")
    return parse_gold_records(out, path)
