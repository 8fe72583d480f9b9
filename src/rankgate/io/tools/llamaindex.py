"""LlamaIndex ``EmbeddingQAFinetuneDataset`` JSON as a gold set (``--gold-format llamaindex``).

The file ``save_json`` writes: one object with ``queries`` (query id -> question), ``corpus`` (node
id -> text) and ``relevant_docs`` (query id -> list of node ids, each relevant with grade 1). Queries
keep the order of ``queries``. It holds no run: evaluate a retriever's output on these queries.
"""

from __future__ import annotations

import json
from typing import Any

from rankgate.errors import InputError
from rankgate.io.jsonl import parse_gold_records
from rankgate.model.gold_run import Gold
from rankgate.io.tools.records import Records

__all__ = ["read_llamaindex_gold"]


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
