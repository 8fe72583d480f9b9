"""Writers of the tools' export shapes for :mod:`trace_gen` (request by request; for test sizes).

Each writer takes the rankgate records (dicts, ISO timestamps) and a folder, writes its files and
returns their paths relative to the folder's parent. The shapes are those of docs/traces.md.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

__all__ = ["WRITERS"]


def _us(iso: str) -> int:
    t = dt.datetime.fromisoformat(iso.replace("Z", "+00:00"))
    return int(t.timestamp()) * 1_000_000 + t.microsecond


def _iso_us(us: int) -> str:
    return (dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=us)).strftime(
        "%Y-%m-%dT%H:%M:%S.%fZ")


def _sid(rid: str, n: int) -> str:
    return hashlib.sha256(f"{rid}/{n}".encode()).hexdigest()[:16]


def _docs(rec: dict[str, Any], stage: str) -> list[dict[str, Any]]:
    out = []
    for it in rec["retrieved"] or []:
        if it["stage"] == stage:
            d = {"id": it["id"], "score": it["score"], "doc_id": it["doc_id"], "version": it["doc_version"],
                 "status": it["status"], "source": it["source"], "tenant": it["tenant"]}
            out.append({k: v for k, v in d.items() if v is not None})
    return out


def _ms_us(ms: float) -> int:
    return round(ms * 1000)


def _stage_times(rec: dict[str, Any]) -> dict[str, tuple[int, int]]:
    t = rec["timings_ms"]
    start = _us(rec["timestamp"])
    out = {"root": (start, start + _ms_us(t["total"]))}
    cur = start
    for stage in ("parse", "retrieval", "rerank", "synthesis"):
        out[stage] = (cur, cur + _ms_us(t[stage]))
        cur = out[stage][1]
    return out


def _request_attrs(rec: dict[str, Any]) -> dict[str, Any]:
    """The request-level rankgate.* attributes (flat, Python values)."""
    a: dict[str, Any] = {"rankgate.request_id": rec["request_id"], "rankgate.tenant": rec["tenant"],
                         "rankgate.surface": rec["surface"], "session.id": rec["session"],
                         "rankgate.index_version": rec["index_version"], "rankgate.corpus_version": rec["corpus_version"],
                         "rankgate.fallback": rec["fallback"], "rankgate.soft_deadline_ms": rec["soft_deadline_ms"],
                         "rankgate.retry.attempts": rec["retry"]["attempts"],
                         "rankgate.retry.reason": rec["retry"]["reason"],
                         "http.response.status_code": rec["http_status"], "error.type": rec["error_type"]}
    for k, v in rec["privacy"].items():
        a["rankgate.privacy." + k] = v
    if rec["citations"]:
        a["rankgate.citations"] = json.dumps(rec["citations"])
    packed = _docs(rec, "packed")
    if packed:
        a["rankgate.packed.documents"] = json.dumps(packed)
    return {k: v for k, v in a.items() if v is not None}


# -- OTLP/JSON ---------------------------------------------------------------------------------------------
def _anyvalue(v: Any) -> dict[str, Any]:
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, list):
        return {"arrayValue": {"values": [_anyvalue(x) for x in v]}}
    if isinstance(v, dict):
        return {"kvlistValue": {"values": [{"key": k, "value": _anyvalue(x)} for k, x in v.items()]}}
    return {"stringValue": str(v)}


def _kv(attrs: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": _anyvalue(v)} for k, v in attrs.items() if v is not None]


def _oi_docs(prefix: str, docs: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for i, d in enumerate(docs):
        out[f"{prefix}.{i}.document.id"] = d["id"]
        if "score" in d:
            out[f"{prefix}.{i}.document.score"] = d["score"]
        meta = {k: v for k, v in d.items() if k not in ("id", "score")}
        out[f"{prefix}.{i}.document.metadata"] = json.dumps(meta)
    return out


def _spans(rec: dict[str, Any], documents: str) -> list[dict[str, Any]]:
    """Spans as flat dicts: name, kind, span_id, parent_id, start_us, end_us, status, attrs, events."""
    rid = rec["request_id"]
    times = _stage_times(rec)
    root = _sid(rid, 0)
    err = rec["status"] == "error"
    cands = _docs(rec, "candidate")
    spans = [
        {"name": "POST /ask", "kind": 2, "span_id": root, "parent_id": None, "times": times["root"],
         "status": 2 if err else 0, "message": rec["error_type"] if err else None, "attrs": _request_attrs(rec),
         "events": [{"name": "feedback", "attributes": {k: v for k, v in f.items() if v is not None}}
                    for f in rec["feedback"] or []], "oi": "CHAIN"},
        {"name": "parse", "kind": 1, "span_id": _sid(rid, 1), "parent_id": root, "times": times["parse"],
         "status": 0, "attrs": {"rankgate.stage": "parse"}, "oi": "CHAIN"},
        {"name": f"retrieval {rec['data_source']}", "kind": 3, "span_id": _sid(rid, 2), "parent_id": root,
         "times": times["retrieval"], "status": 0, "oi": "RETRIEVER",
         "attrs": {"gen_ai.operation.name": "retrieval", "gen_ai.data_source.id": rec["data_source"],
                   "gen_ai.retrieval.top_k": rec["top_k"], "gen_ai.retrieval.query.text": rec["query"],
                   "gen_ai.retrieval.documents": cands if documents == "array" else json.dumps(cands)}},
        {"name": "rerank", "kind": 1, "span_id": _sid(rid, 3), "parent_id": root, "times": times["rerank"],
         "status": 0, "oi": "RERANKER",
         "attrs": {"openinference.span.kind": "RERANKER", **_oi_docs("reranker.output_documents",
                                                                    _docs(rec, "reranked"))}},
        {"name": "chat", "kind": 3, "span_id": _sid(rid, 4), "parent_id": root, "times": times["synthesis"],
         "status": 0, "attrs": {"gen_ai.operation.name": "chat"}, "oi": "LLM"},
    ]
    return spans


def write_otlp(recs: list[dict[str, Any]], folder: Path, spec: Any) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "traces.otlp.jsonl", "w", encoding="utf-8") as fh:
        for rec in recs:
            out = []
            for s in _spans(rec, spec.documents):
                span = {"traceId": rec["trace_id"].upper() if rec["request_id"].endswith("7") else rec["trace_id"],
                        "spanId": s["span_id"], "name": s["name"], "kind": s["kind"],
                        "startTimeUnixNano": str(s["times"][0] * 1000), "endTimeUnixNano": s["times"][1] * 1000,
                        "attributes": _kv(s["attrs"]), "status": {"code": s["status"]}}
                if s["parent_id"]:
                    span["parentSpanId"] = s["parent_id"]
                if s.get("message"):
                    span["status"]["message"] = s["message"]
                if s.get("events"):
                    span["events"] = [{"name": e["name"], "timeUnixNano": str(s["times"][1] * 1000),
                                       "attributes": _kv(e["attributes"])} for e in s["events"]]
                out.append(span)
            req = {"resourceSpans": [{"resource": {"attributes": _kv({"service.name": "rag-api"})},
                                      "scopeSpans": [{"scope": {"name": "rag"}, "spans": out}]}]}
            fh.write(json.dumps(req) + "\n")
    return [f"{folder.name}/traces.otlp.jsonl"]


# -- Phoenix spans dataframe (Parquet) ----------------------------------------------------------------------
def write_phoenix(recs: list[dict[str, Any]], folder: Path, spec: Any) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for rec in recs:
        for s in _spans(rec, "array"):
            attrs = dict(s["attrs"])
            row: dict[str, Any] = {
                "name": s["name"], "span_kind": s["oi"], "parent_id": s["parent_id"],
                "start_time": _iso_us(s["times"][0]), "end_time": _iso_us(s["times"][1]),
                "status_code": {0: "UNSET", 1: "OK", 2: "ERROR"}[s["status"]], "status_message": s.get("message") or "",
                "events": json.dumps([{"name": e["name"], "attributes": e["attributes"]} for e in s.get("events", [])]),
                "context.span_id": s["span_id"], "context.trace_id": rec["trace_id"],
            }
            docs = attrs.pop("gen_ai.retrieval.documents", None)
            if docs is not None:
                row["attributes.retrieval.documents"] = [
                    {"document.id": d["id"], "document.score": d.get("score"),
                     "document.metadata": json.dumps({k: v for k, v in d.items() if k not in ("id", "score")})}
                    for d in docs]
                row["attributes.input.value"] = attrs.pop("gen_ai.retrieval.query.text")
            rr = {k: attrs.pop(k) for k in [k for k in attrs if k.startswith("reranker.output_documents.")]}
            if rr:
                n = len([k for k in rr if k.endswith(".document.id")])
                row["attributes.reranker.output_documents"] = [
                    {"document.id": rr[f"reranker.output_documents.{i}.document.id"],
                     "document.score": rr.get(f"reranker.output_documents.{i}.document.score"),
                     "document.metadata": rr[f"reranker.output_documents.{i}.document.metadata"]} for i in range(n)]
            for k, v in attrs.items():
                row["attributes." + k] = json.dumps(v) if isinstance(v, (list, dict)) else v
            rows.append(row)
    cols = sorted({k for r in rows for k in r})
    table = pa.Table.from_pylist([{c: r.get(c) for c in cols} for r in rows])
    table = table.set_column(table.schema.get_field_index("start_time"), "start_time",
                             pa.array([_us(r["start_time"]) for r in rows]).cast(pa.timestamp("us", tz="UTC")))
    table = table.set_column(table.schema.get_field_index("end_time"), "end_time",
                             pa.array([_us(r["end_time"]) for r in rows]).cast(pa.timestamp("us", tz="UTC")))
    pq.write_table(table, folder / "spans.parquet", write_page_checksum=True)
    return [f"{folder.name}/spans.parquet"]


# -- Langfuse blob-storage export ---------------------------------------------------------------------------
def _meta(rec: dict[str, Any]) -> dict[str, Any]:
    m = {"request_id": rec["request_id"], "tenant": rec["tenant"], "surface": rec["surface"],
         "data_source": rec["data_source"], "top_k": rec["top_k"], "index_version": rec["index_version"],
         "corpus_version": rec["corpus_version"], "fallback": rec["fallback"],
         "soft_deadline_ms": rec["soft_deadline_ms"], "retry_attempts": rec["retry"]["attempts"],
         "retry_reason": rec["retry"]["reason"], "http_status": rec["http_status"], "error_type": rec["error_type"],
         "privacy_mode": rec["privacy"]["mode"], "citations": rec["citations"] or None}
    for k in ("sensitive_tokens", "leaked_tokens", "blocked", "secure_fields", "bypassed"):
        m[k] = rec["privacy"][k]
    return {k: v for k, v in m.items() if v is not None}


def _naive(us: int) -> str:
    return _iso_us(us).replace("T", " ").rstrip("Z")


def write_langfuse(recs: list[dict[str, Any]], folder: Path, spec: Any) -> list[str]:
    (folder / "observations_v2").mkdir(parents=True, exist_ok=True)
    (folder / "scores").mkdir(parents=True, exist_ok=True)
    obs, scores = [], []
    for rec in recs:
        rid, tid = rec["request_id"], rec["trace_id"]
        t = _stage_times(rec)
        root = f"{rid}-root"
        err = rec["status"] == "error"

        def row(suffix: str, typ: str, name: str, span: tuple[int, int], parent: str | None = root,
                **extra: Any) -> dict[str, Any]:
            return {"id": f"{rid}-{suffix}" if suffix != "root" else root, "trace_id": tid, "type": typ, "name": name,  # noqa: B023  (called in this iteration)
                    "parent_observation_id": parent, "start_time": _naive(span[0]), "end_time": _naive(span[1]),
                    "latency": (span[1] - span[0]) / 1e6, "level": "DEFAULT", "status_message": None,
                    "session_id": rec["session"], "user_id": None, "metadata": None, "input": None, "output": None,  # noqa: B023
                    **extra}

        obs.append(row("root", "SPAN", "request", t["root"], None, metadata=json.dumps(_meta(rec)),
                       level="ERROR" if err else "DEFAULT", status_message=rec["error_type"] if err else None))
        obs.append(row("parse", "SPAN", "parse", t["parse"]))
        obs.append(row("ret", "RETRIEVER", "vector-search", t["retrieval"], input=json.dumps({"query": rec["query"]}),
                       output=json.dumps({"documents": _docs(rec, "candidate")})))
        obs.append(row("rr", "SPAN", "rerank", t["rerank"], output=json.dumps({"documents": _docs(rec, "reranked")})))
        packed = _docs(rec, "packed")
        obs.append(row("ctx", "SPAN", "context", (t["rerank"][1], t["rerank"][1]),
                       output=json.dumps({"documents": packed})))
        obs.append(row("gen", "GENERATION", "answer", t["synthesis"]))
        for i, f in enumerate(rec["feedback"] or []):
            scores.append({"id": f"{rid}-fb{i}", "trace_id": tid, "observation_id": None, "name": "user-feedback",
                           "value": f["value"], "string_value": None, "data_type": "NUMERIC", "source": "API",
                           "comment": f["reason"]})
    with open(folder / "observations_v2" / "part-0.jsonl", "w", encoding="utf-8") as fh:
        for o in obs:
            fh.write(json.dumps(o) + "\n")
    schema = pa.schema([("id", pa.string()), ("trace_id", pa.string()), ("observation_id", pa.string()),
                        ("name", pa.string()), ("value", pa.float64()), ("string_value", pa.string()),
                        ("data_type", pa.string()), ("source", pa.string()), ("comment", pa.string())])
    pq.write_table(pa.Table.from_pylist(scores, schema=schema), folder / "scores" / "part-0.parquet",
                   write_page_checksum=True)
    return [f"{folder.name}/observations_v2/part-0.jsonl", f"{folder.name}/scores/part-0.parquet"]


# -- LangSmith runs ------------------------------------------------------------------------------------------
def write_langsmith(recs: list[dict[str, Any]], folder: Path, spec: Any) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    runs, fbs = [], []
    for rec in recs:
        rid, tid = rec["request_id"], rec["trace_id"]
        t = _stage_times(rec)
        root = f"{rid}-root"
        err = rec["status"] == "error"

        def run(suffix: str, rt: str, name: str, span: tuple[int, int], **extra: Any) -> dict[str, Any]:
            return {"id": f"{rid}-{suffix}", "trace_id": tid, "parent_run_id": root, "run_type": rt, "name": name,  # noqa: B023  (called in this iteration)
                    "start_time": _iso_us(span[0]), "end_time": _iso_us(span[1]), "inputs": {}, "outputs": {},
                    "error": None, "extra": {}, **extra}

        def lc(docs: list[dict[str, Any]]) -> dict[str, Any]:
            return {"documents": [{"page_content": f"text of {d['id']}", "type": "Document", "metadata": d}
                                  for d in docs]}

        meta = dict(_meta(rec), session_id=rec["session"])
        r0 = run("root", "chain", "RAG", t["root"], inputs={"question": rec["query"]},
                 error=rec["error_type"] if err else None, extra={"metadata": meta})
        r0["parent_run_id"] = None
        runs += [r0, run("parse", "parser", "parse", t["parse"]),
                 run("ret", "retriever", "Retriever", t["retrieval"], inputs={"query": rec["query"]},
                     outputs=lc(_docs(rec, "candidate"))),
                 run("rr", "chain", "rerank", t["rerank"], outputs=lc(_docs(rec, "reranked"))),
                 run("ctx", "chain", "context", (t["rerank"][1], t["rerank"][1]), outputs=lc(_docs(rec, "packed"))),
                 run("llm", "llm", "ChatOpenAI", t["synthesis"])]
        for i, f in enumerate(rec["feedback"] or []):
            fbs.append({"id": f"{rid}-fb{i}", "run_id": root, "key": "user_score", "score": f["value"],
                        "comment": f["reason"]})
    with open(folder / "runs.jsonl", "w", encoding="utf-8") as fh:
        for r in runs:
            fh.write(json.dumps(r) + "\n")
    with open(folder / "feedback.jsonl", "w", encoding="utf-8") as fh:
        for f in fbs:
            fh.write(json.dumps(f) + "\n")
    return [f"{folder.name}/runs.jsonl", f"{folder.name}/feedback.jsonl"]


WRITERS = {"otlp": write_otlp, "phoenix": write_phoenix, "langfuse": write_langfuse, "langsmith": write_langsmith}
