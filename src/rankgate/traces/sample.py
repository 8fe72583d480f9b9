"""Production queries worth labelling, written as gold-set candidates (docs/traces.md, "sample").

A request is worth labelling for one of these reasons (the first that applies, in this order):

``negative_feedback``  a user marked the answer bad (any negative feedback row)
``fallback``           the app fell back (``fallback`` logged true), or retrieval returned nothing
``low_confidence``     the top candidate score is under the abstention threshold (needs ``threshold``)

Requests that failed (``status`` error) or carry no query text (redacted) are not candidates; each
distinct query (``query_key``) is proposed once, from its earliest request. The candidates are then
**stratified**: a stratum is (reason, the source of the request's top item, and the ``by`` fields,
default the tenant); each stratum's members are shuffled with the seed. Draws go round the reasons
in the order above, and within a reason round its strata (sorted by name), one candidate at a time,
until ``n`` are taken: rare reasons, sources and tenants are not crowded out by the busiest one. Same tables, threshold, ``n``, ``by`` and seed ⇒ the same candidates in the same order.

Each candidate is a gold-set line with ``source_of_query: production_log``: the query, the retrieved
items pre-filled in ``relevant_chunks`` with ``"grade": null`` (with their rank, score, version,
status and source), and the request's facts (its ``conversation_id`` and ``turn`` too, the gold set's
fields of the same names: a gold set built from production keeps its conversations). A labeller sets each grade (0 = not relevant); until
then ``rankgate gold validate`` lists every unfilled grade.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

import numpy as np

from rankgate.traces.model import TraceTables

__all__ = ["REASONS", "add_corpus_texts", "sample_candidates"]

REASONS = ("negative_feedback", "fallback", "low_confidence")
REQUEST_BY = ("tenant", "surface", "adapter", "data_source", "conversation_id", "index_version", "corpus_version")


def sample_candidates(tables: TraceTables, *, threshold: float | None = None, n: int = 50, seed: int = 0,
                      by: Sequence[str] = ("tenant",), depth: int = 20) -> list[dict[str, Any]]:
    """The gold-set candidate records (see the module docs)."""
    from rankgate.errors import F, UsageError
    from rankgate.traces.model import current_field

    by = tuple(current_field(f, "sample by") for f in by)
    for f in by:
        if f not in REQUEST_BY:
            raise UsageError(f"{F.by}: cannot stratify by {f!r}; fields: {', '.join(REQUEST_BY)}")
    if n < 1:
        raise UsageError(f"{F.n} must be at least 1; got {n}")
    import pyarrow.compute as pc

    req = tables.requests.to_pydict()
    ids = req["request_id"]
    index = {rid: i for i, rid in enumerate(ids)}
    it = tables.items
    with_items = set(pc.unique(it["request_id"]).to_pylist())
    # the top candidate's score per request (the lowest rank of stage candidate)
    cand = it.filter(pc.equal(it["stage"], "candidate")).select(["request_id", "rank", "score"])
    cand = cand.sort_by([("request_id", "ascending"), ("rank", "ascending")])
    top_score: dict[str, float | None] = {}
    for rid, score in zip(cand["request_id"].to_pylist(), cand["score"].to_pylist()):
        top_score.setdefault(rid, score)
    neg = set(tables.feedback.filter(tables.feedback["negative"])["request_id"].to_pylist())

    chosen: dict[str, tuple[int, str]] = {}
    order = sorted(range(len(ids)), key=lambda i: (req["ts"][i], ids[i]))
    for i in order:
        if req["status"][i] == "error" or not req["query_text"][i]:
            continue
        rid = ids[i]
        reason = None
        if rid in neg:
            reason = "negative_feedback"
        elif req["fallback"][i] or rid not in with_items:
            reason = "fallback"
        elif threshold is not None and top_score.get(rid) is not None and top_score[rid] < threshold:  # type: ignore[operator]
            reason = "low_confidence"
        if reason is None:
            continue
        key = req["query_key"][i]
        if key not in chosen:
            chosen[key] = (i, reason)
    keep = [ids[i] for i, _ in chosen.values()]
    items: dict[int, list[dict[str, Any]]] = {i: [] for i, _ in chosen.values()}
    if keep:
        import pyarrow as pa

        for row in it.filter(pc.is_in(it["request_id"], pa.array(keep, pa.string()))).to_pylist():
            items[index[row["request_id"]]].append(row)

    def top(its: list[dict[str, Any]], stage: str) -> dict[str, Any] | None:
        got = [x for x in its if x["stage"] == stage]
        return min(got, key=lambda x: x["rank"]) if got else None

    strata: dict[tuple[str, ...], list[int]] = {}
    reasons: dict[int, str] = {}
    for i, reason in chosen.values():
        lead = top(items[i], "packed") or top(items[i], "reranked") or top(items[i], "candidate")
        stratum = (reason, (lead or {}).get("source") or "", *((req[f][i] or "") for f in by))
        strata.setdefault(stratum, []).append(i)
        reasons[i] = reason
    rng = np.random.default_rng(seed)
    by_reason: dict[str, list[list[int]]] = {r: [] for r in REASONS}
    for key in sorted(strata):
        members = sorted(strata[key], key=lambda i: ids[i])
        by_reason[key[0]].append([members[j] for j in rng.permutation(len(members)).tolist()])
    picked: list[int] = []
    turn = {r: 0 for r in REASONS}
    while len(picked) < n and any(q for qs in by_reason.values() for q in qs):
        for r in REASONS:  # one from each reason in turn, its strata in rotation
            qs = [q for q in by_reason[r] if q]
            if not qs or len(picked) >= n:
                continue
            q = qs[turn[r] % len(qs)]
            turn[r] += 1
            picked.append(q.pop(0))
    return [_record(i, reasons[i], req, items[i], depth) for i in picked]


def add_corpus_texts(records: list[dict[str, Any]], corpus: Any) -> list[str]:
    """Give each pre-filled chunk of ``records`` its ``text`` from ``corpus`` (a
    :class:`rankgate.corpus.CorpusManifest`) and, where the corpus says so, its current ``status`` in
    the corpus as ``corpus_status`` (a labeller should know that a chunk was retired). A chunk the
    corpus does not hold gets ``"in_corpus": false``; the ids are returned (each once, in order) so the
    command can list them. In place; the records keep their keys' order, new keys last."""
    chunks = [c for r in records for c in r["relevant_chunks"]]
    ids = [c["chunk_id"] for c in chunks]
    at = corpus.positions(ids).tolist() if ids else []
    found = [i for i in at if i >= 0]
    statuses = dict(zip(found, corpus.take("statuses", found))) if found else {}
    missing: list[str] = []
    for c, i in zip(chunks, at):
        if i < 0:
            c["in_corpus"] = False
            if c["chunk_id"] not in missing:
                missing.append(c["chunk_id"])
            continue
        text = corpus.text_at(i)
        if text is not None:
            c["text"] = text
        if statuses.get(i) is not None:
            c["corpus_status"] = statuses[i]
    return missing


def _record(i: int, reason: str, req: dict[str, list[Any]], its: list[dict[str, Any]], depth: int) -> dict[str, Any]:
    stage = "candidate" if any(x["stage"] == "candidate" for x in its) else (
        "reranked" if any(x["stage"] == "reranked" for x in its) else "packed")
    shown = sorted((x for x in its if x["stage"] == stage), key=lambda x: x["rank"])[:depth]
    packed = {x["item_id"] for x in its if x["stage"] == "packed"}
    ts: dt.datetime = req["ts"][i]
    chunks = []
    for x in shown:
        c: dict[str, Any] = {"chunk_id": x["item_id"], "grade": None, "rank": x["rank"]}
        for k in ("score", "doc_id", "doc_version", "status", "source"):
            if x[k] is not None:
                c[k] = x[k]
        if x["item_id"] in packed:
            c["packed"] = True
        chunks.append(c)
    rec: dict[str, Any] = {
        "query_id": f"prod-{req['request_id'][i]}",
        "query": req["query_text"][i],
        "relevant_chunks": chunks,
        "must_not_retrieve": [],
        "source_of_query": "production_log",
        "sample_reason": reason,
        "request_id": req["request_id"][i],
        "observed": ts.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
    }
    for k in ("trace_id", "corpus_version", "index_version", "conversation_id", "turn"):  # (the gold set's own
        if req[k][i] is not None:                                                          # conversation fields)
            rec[k] = req[k][i]
    tags = {k: req[k][i] for k in ("tenant", "surface", "data_source") if req[k][i] is not None}
    if tags:
        rec["tags"] = tags
    return rec
