"""Write small OTLP trace files with the real producer libraries (run once; the outputs are committed).

    python tests/data/producers/make_otel_traces.py   # in a venv with the packages listed in README.md

LangChain (a tiny keyword retriever over four in-memory documents, inside a runnable chain) and
LlamaIndex (a keyword retriever over four nodes, inside a query engine with a fixed synthesizer) are
instrumented with OpenInference; the spans go to an in-memory exporter and are written as
- ``<name>.otlp.json``: one ExportTraceServiceRequest per line, protobuf's JSON mapping;
- ``<name>.otlp.pb``: the same request, serialized (an OTLP/HTTP body);
- ``<name>.otlp.bin``: the collector file exporter's ``format: proto`` framing (a 4-byte big-endian
  length before each message), one message per trace;
- ``<name>.expected.json``: what a reader must find, computed here from the exported spans
  (each trace's root latency in ms from its own timestamps, its status, its documents' texts).
No model, no network.
"""

from __future__ import annotations

import json
import struct
import sys
from importlib.metadata import version
from pathlib import Path

from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

OUT = Path(__file__).resolve().parent
TEXTS = [
    "Refunds are accepted within 30 days of purchase with a receipt.",
    "Shipping takes 3 to 5 business days inside the EU.",
    "Gift cards cannot be refunded or exchanged for cash.",
    "Support is open Monday to Friday, 9:00 to 17:00 CET.",
]
QUERIES = ["refund window for purchases", "how long does shipping take", "gift cards refunded", "zebra migration"]
FAIL = "trigger a retriever failure"


def _words(s: str) -> set[str]:
    """Words of more than three letters, cut to five (a crude stem: refund/refunds/refunded)."""
    return {w.strip(".,:?").lower()[:5] for w in s.split() if len(w.strip(".,:?")) > 3}


def _rank(query: str) -> list[int]:
    """Indices of the texts sharing a word with the query, most shared words first (ties: text order)."""
    q = _words(query)
    hits = [(-len(q & _words(t)), i) for i, t in enumerate(TEXTS) if q & _words(t)]
    return [i for _, i in sorted(hits)][:2]


def langchain_traces(provider: TracerProvider) -> None:
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.runnables import RunnableLambda
    from openinference.instrumentation.langchain import LangChainInstrumentor

    class KeywordRetriever(BaseRetriever):
        def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
            if query == FAIL:
                raise RuntimeError("index unavailable")
            return [Document(page_content=TEXTS[i], metadata={"source": f"faq-{i}.md"}) for i in _rank(query)]

    LangChainInstrumentor().instrument(tracer_provider=provider)
    chain = KeywordRetriever() | RunnableLambda(lambda docs: "\n\n".join(d.page_content for d in docs))
    for q in QUERIES + [FAIL]:
        try:
            chain.invoke(q)
        except RuntimeError:
            pass
    LangChainInstrumentor().uninstrument()


def llamaindex_traces(provider: TracerProvider) -> None:
    from llama_index.core import Settings
    from llama_index.core.llms import MockLLM
    from llama_index.core.query_engine import RetrieverQueryEngine
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
    from openinference.instrumentation.llama_index import LlamaIndexInstrumentor

    nodes = [TextNode(text=t, id_=f"node-{i}") for i, t in enumerate(TEXTS)]

    class KeywordRetriever(BaseRetriever):
        def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
            q = _words(query_bundle.query_str)
            return [NodeWithScore(node=nodes[i], score=float(len(q & _words(TEXTS[i])))) for i in _rank(query_bundle.query_str)]

    Settings.llm = MockLLM(max_tokens=8)
    LlamaIndexInstrumentor().instrument(tracer_provider=provider)
    engine = RetrieverQueryEngine.from_args(KeywordRetriever(), llm=Settings.llm)
    for q in QUERIES:
        engine.query(q)
    LlamaIndexInstrumentor().uninstrument()


def _local_paths_out(request) -> None:
    """Exception messages carry a traceback with this machine's paths: keep the file names only."""
    import os
    import re

    for rs in request.resource_spans:
        for ss in rs.scope_spans:
            for sp in ss.spans:
                if sp.status.message:
                    sp.status.message = re.sub(r'File "[^"]*[/\\]([^"/\\]+)"', r'File "\1"', sp.status.message)
                for ev in sp.events:
                    for kv in ev.attributes:
                        if kv.value.HasField("string_value") and os.sep in kv.value.string_value:
                            kv.value.string_value = re.sub(r'File "[^"]*[/\\]([^"/\\]+)"', r'File "\1"',
                                                           kv.value.string_value)


def _encode(spans: list):
    request = encode_spans(spans)
    _local_paths_out(request)
    return request


def write(name: str, spans: list) -> None:
    by_trace: dict[int, list] = {}
    for s in spans:
        by_trace.setdefault(s.context.trace_id, []).append(s)
    whole = _encode(spans)
    (OUT / f"{name}.otlp.json").write_text(json.dumps(MessageToDict(whole), sort_keys=True) + "\n")
    (OUT / f"{name}.otlp.pb").write_bytes(whole.SerializeToString())
    framed = b""
    for trace in by_trace.values():
        body = _encode(trace).SerializeToString()
        framed += struct.pack(">I", len(body)) + body
    (OUT / f"{name}.otlp.bin").write_bytes(framed)
    expected = []
    for tid, trace in by_trace.items():
        ids = {s.context.span_id for s in trace}
        root = min((s for s in trace if s.parent is None or s.parent.span_id not in ids), key=lambda s: s.start_time)
        texts = []
        for s in sorted(trace, key=lambda s: s.start_time):
            if s.attributes.get("openinference.span.kind") == "RETRIEVER":
                n = 0
                while f"retrieval.documents.{n}.document.content" in s.attributes:
                    texts.append({"text": s.attributes[f"retrieval.documents.{n}.document.content"],
                                  "id": s.attributes.get(f"retrieval.documents.{n}.document.id")})
                    n += 1
        expected.append({
            "trace_id": f"{tid:032x}",
            "total_ms": (root.end_time - root.start_time) / 1e6,
            "status": "error" if any(s.status.status_code.name == "ERROR" for s in trace) else "ok",
            "documents": texts,
        })
    (OUT / f"{name}.expected.json").write_text(json.dumps(
        {"versions": {p: version(p) for p in PACKAGES[name]}, "traces": expected}, indent=1, sort_keys=True) + "\n")


PACKAGES = {
    "langchain": ["langchain-core", "openinference-instrumentation-langchain", "opentelemetry-sdk",
                  "opentelemetry-proto", "opentelemetry-exporter-otlp-proto-common"],
    "llamaindex": ["llama-index-core", "openinference-instrumentation-llama-index", "opentelemetry-sdk",
                   "opentelemetry-proto", "opentelemetry-exporter-otlp-proto-common"],
}


def main() -> None:
    for name, make in (("langchain", langchain_traces), ("llamaindex", llamaindex_traces)):
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        make(provider)
        write(name, list(exporter.get_finished_spans()))
        print(name, len(exporter.get_finished_spans()), "spans", file=sys.stderr)


if __name__ == "__main__":
    main()
