"""Write what LlamaIndex and LangChain users hold after running a retriever, with the libraries' own calls.

Run once, by hand, in a virtual environment that has the producers (they are not test dependencies)::

    python -m venv /tmp/producers && /tmp/producers/bin/pip install llama-index-core==0.14.25 \
        llama-index-retrievers-bm25==0.8.0 langchain-core==1.8.1 langchain-community rank-bm25
    /tmp/producers/bin/python tests/data/producers/make_retriever_results.py

Nothing here calls a model or the network: LlamaIndex's ``BM25Retriever`` and LangChain's (rank-bm25)
retrieve from the help-centre corpus of ``make_rag_datasets.py`` (the same 12 chunks, 6 questions, their
relevant chunks). Running it again rewrites the same files. The files, each written as a user writes
the objects in hand:

* ``llamaindex_eval_results.json`` / ``.jsonl``: ``RetrieverEvaluator`` results, a JSON list of
  ``RetrievalEvalResult.model_dump()`` (indented) and JSON lines of ``model_dump_json()``;
* ``llamaindex_nodes.jsonl``: per query ``{"query_id", "query", "nodes": [NodeWithScore.model_dump()]}``;
* ``llamaindex_nodes_by_query.json``: ``{query_id: [NodeWithScore.to_dict()]}``;
* ``llamaindex_nodes_gold.jsonl``: per query ``{"query_id", "query", "relevant": [TextNode.to_dict()]}``,
  the relevant nodes themselves as a gold set;
* ``langchain_documents.jsonl``: per query ``{"query_id", "query", "documents": [Document.model_dump()]}``
  from documents that carry their ``id``;
* ``langchain_documents_metadata_id.jsonl``: the same from documents without an ``id``, whose id is
  ``metadata["doc_id"]`` (beside ``metadata["source"]``, a file name several chunks share);
* ``langchain_dumpd.json``: ``langchain_core.load.dumpd({query_id: documents})``;
* ``langchain_dumpd_gold.jsonl``: per query ``{"query_id", "query", "relevant": dumpd(relevant documents)}``;
* ``retriever_results.expected.json``: LlamaIndex's own numbers per query (``metric_dict`` of each
  result; for LangChain's rankings, LlamaIndex's metric classes computed on LangChain's retrieved ids)
  and the library versions.
"""

from __future__ import annotations

import importlib.metadata as md
import json
import os
import shutil
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from make_rag_datasets import CORPUS, QUERIES, TOP_K  # noqa: E402  (the corpus and questions of the other files)

METRIC_NAMES = ["hit_rate", "mrr", "precision", "recall", "ap", "ndcg"]
SOURCES = {cid: f"help/{'billing' if n in (1, 2, 9, 10) else 'api' if n in (3, 4, 5) else 'account'}.md"
           for n, cid in enumerate(CORPUS, start=1)}


def versions() -> dict[str, str]:
    out = {"python": sys.version.split()[0]}
    for name in ("llama-index-core", "llama-index-retrievers-bm25", "langchain-core", "langchain-community",
                 "rank-bm25", "pydantic"):
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            pass
    return out


def write_jsonl(name: str, lines: list[str]) -> None:
    with open(os.path.join(HERE, name), "w", encoding="utf-8") as fh:
        fh.writelines(line + "\n" for line in lines)


def write_json(name: str, value: object, indent: int | None = None) -> None:
    with open(os.path.join(HERE, name), "w", encoding="utf-8") as fh:
        json.dump(value, fh, indent=indent)
        fh.write("\n")


def scores_of(metric_dict: dict) -> dict[str, float]:
    return {name: float(result.score) for name, result in metric_dict.items()}


# -- LlamaIndex ----------------------------------------------------------------------------------
def llamaindex_files() -> dict:
    from llama_index.core.evaluation import RetrieverEvaluator
    from llama_index.core.schema import TextNode
    from llama_index.retrievers.bm25 import BM25Retriever

    nodes = [TextNode(id_=cid, text=text) for cid, text in CORPUS.items()]
    retriever = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=TOP_K)
    evaluator = RetrieverEvaluator.from_metric_names(METRIC_NAMES, retriever=retriever)
    results, node_lines, by_query, gold_lines = [], [], {}, []
    for qid, (query, relevant, _) in QUERIES.items():
        result = evaluator.evaluate(query=query, expected_ids=list(relevant))
        got = retriever.retrieve(query)
        assert result.retrieved_ids == [n.node.node_id for n in got], "the evaluator saw another order"
        results.append(result)
        node_lines.append(json.dumps({"query_id": qid, "query": query, "nodes": [n.model_dump() for n in got]}))
        by_query[qid] = [n.to_dict() for n in got]
        gold_lines.append(json.dumps({"query_id": qid, "query": query,
                                      "relevant": [nodes[list(CORPUS).index(d)].to_dict() for d in relevant]}))
    write_json("llamaindex_eval_results.json", [r.model_dump() for r in results], indent=2)
    write_jsonl("llamaindex_eval_results.jsonl", [r.model_dump_json() for r in results])
    write_jsonl("llamaindex_nodes.jsonl", node_lines)
    write_json("llamaindex_nodes_by_query.json", by_query)
    write_jsonl("llamaindex_nodes_gold.jsonl", gold_lines)
    return {
        "llamaindex_eval_results": {"queries": [r.query for r in results],
                                    "scores": [scores_of(r.metric_dict) for r in results]},
        "llamaindex_nodes": {"queries": list(QUERIES), "scores": [scores_of(r.metric_dict) for r in results]},
    }


# -- LangChain -----------------------------------------------------------------------------------
def llamaindex_scores(expected: list[str], retrieved: list[str]) -> dict[str, float]:
    """LlamaIndex's own metric classes (the ones RetrieverEvaluator runs) on a ranking from elsewhere."""
    from llama_index.core.evaluation.retrieval.metrics import resolve_metrics

    return {metric.metric_name: float(metric.compute(expected_ids=expected, retrieved_ids=retrieved).score)
            for metric in (cls() for cls in resolve_metrics(METRIC_NAMES))}


def langchain_files() -> dict:
    with warnings.catch_warnings():  # langchain-community says it is being sunset
        warnings.simplefilter("ignore", DeprecationWarning)
        from langchain_community.retrievers import BM25Retriever
    from langchain_core.documents import Document
    from langchain_core.load import dumpd

    with_ids = [Document(id=cid, page_content=text, metadata={"source": SOURCES[cid]}) for cid, text in CORPUS.items()]
    in_metadata = [Document(page_content=text, metadata={"doc_id": cid, "source": SOURCES[cid]})
                   for cid, text in CORPUS.items()]
    out = {}
    for name, docs, id_of in (("langchain_documents", with_ids, lambda d: d.id),
                              ("langchain_documents_metadata_id", in_metadata, lambda d: d.metadata["doc_id"])):
        retriever = BM25Retriever.from_documents(docs, k=TOP_K)
        lines, scores, ranked = [], [], {}
        for qid, (query, relevant, _) in QUERIES.items():
            got = retriever.invoke(query)
            ranked[qid] = got
            lines.append(json.dumps({"query_id": qid, "query": query, "documents": [d.model_dump() for d in got]}))
            scores.append(llamaindex_scores(list(relevant), [id_of(d) for d in got]))
        write_jsonl(f"{name}.jsonl", lines)
        out[name] = {"queries": list(QUERIES), "scores": scores}
        if name == "langchain_documents":
            write_json("langchain_dumpd.json", dumpd(ranked))
            out["langchain_dumpd"] = out[name]
            write_jsonl("langchain_dumpd_gold.jsonl", [
                json.dumps({"query_id": qid, "query": query,
                            "relevant": dumpd([with_ids[list(CORPUS).index(d)] for d in relevant])})
                for qid, (query, relevant, _) in QUERIES.items()])
    return out


def main() -> None:
    expected = {"versions": versions(), "top_k": TOP_K, "metrics": METRIC_NAMES}
    expected.update(llamaindex_files())
    expected.update(langchain_files())
    write_json("retriever_results.expected.json", expected, indent=1)
    shutil.rmtree(os.path.join(HERE, "__pycache__"), ignore_errors=True)


if __name__ == "__main__":
    main()
