"""Write the producer test data with the real libraries, and their own numbers beside it.

Run once, by hand, in a virtual environment that has the producers (they are not test
dependencies)::

    python -m venv /tmp/producers && /tmp/producers/bin/pip install ragas==0.4.3 deepeval==4.3.1 \
        llama-index-core llama-index-retrievers-bm25 rapidfuzz 'langchain-community<0.4'
    /tmp/producers/bin/pip install --no-deps llama-index-finetuning   # EmbeddingQAFinetuneDataset only

(rapidfuzz: RAGAS's non-LLM string metrics; langchain-community < 0.4: RAGAS 0.4.3 imports a module
that 0.4 removed.) Running it again rewrites the same files.
    DEEPEVAL_TELEMETRY_OPT_OUT=YES /tmp/producers/bin/python tests/data/producers/make_rag_datasets.py

Nothing here calls an LLM or the network: BM25 and MockEmbedding retrieve, and only the producers'
non-LLM metrics are computed. Every file is written by the library's own save/export call; the
libraries' own numbers (and what DeepEval reads back from its files) go to ``rag_datasets.expected.json`` with
the library versions. The tests read these files through rankgate and compare, per query.
"""

from __future__ import annotations

import asyncio
import csv
import importlib.metadata as md
import importlib.util
import json
import os
import shutil
import sys

os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "YES")
HERE = os.path.dirname(os.path.abspath(__file__))

# A small help-centre corpus. c7 holds " | " (a plan table flattened to text): DeepEval's CSV and
# JSONL join lists with "|", so that context comes back from them cut in two.
CORPUS = {
    "c1": "To export invoices as CSV, open Billing, choose Invoices and press Export.",
    "c2": "The billing date is the day your subscription started; it moves when you change plan.",
    "c3": "The public API allows 600 requests per minute for each workspace.",
    "c4": "A request over the rate limit gets status 429 with a Retry-After header.",
    "c5": "Rotate an API key from Settings, API keys: create a new key, then revoke the old one.",
    "c6": "Workspaces can invite guests who see only the projects shared with them.",
    "c7": "Plans at a glance: Free | Pro | Enterprise. Single sign-on (SSO) comes with Enterprise.",
    "c8": "SSO supports SAML 2.0 and OpenID Connect identity providers.",
    "c9": "Refunds are issued to the original card within ten business days of the request.",
    "c10": "To change the billing date, contact support; the next invoice is prorated.",
    "c11": "Dark mode follows the system setting unless chosen under Appearance.",
    "c12": "Deleted projects stay in the trash for thirty days before they are removed.",
}
QUERIES = {
    "q1": ("How do I export invoices as CSV?", ["c1"], "Billing, Invoices, Export."),
    "q2": ("What is the API rate limit and what happens over it?", ["c3", "c4"], "600 per minute; then 429."),
    "q3": ("How do I rotate an API key?", ["c5"], "Create a new key and revoke the old one."),
    "q4": ("Which plans include single sign-on (SSO)?", ["c7", "c8"], "Enterprise."),
    "q5": ("How long do refunds take?", ["c9"], "Up to ten business days."),
    "q6": ("Can I change my billing date?", ["c10", "c2"], "Yes, through support."),
}
TOP_K = 3


def versions() -> dict[str, str]:
    out = {"python": sys.version.split()[0]}
    for name in ("ragas", "deepeval", "llama-index-core", "llama-index-retrievers-bm25", "llama-index-finetuning",
                 "pandas", "rapidfuzz"):
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            pass
    return out


def nodes():
    from llama_index.core.schema import TextNode

    return [TextNode(id_=cid, text=text) for cid, text in CORPUS.items()]


def bm25_runs() -> dict[str, list[tuple[str, float]]]:
    """BM25's top 3 for every query: (node id, score) in the retriever's order."""
    from llama_index.retrievers.bm25 import BM25Retriever

    retriever = BM25Retriever.from_defaults(nodes=nodes(), similarity_top_k=TOP_K)
    return {qid: [(n.node.node_id, float(n.score or 0.0)) for n in retriever.retrieve(q)]
            for qid, (q, _, _) in QUERIES.items()}


# -- RAGAS ---------------------------------------------------------------------------------------
def ragas_files(runs: dict[str, list[tuple[str, float]]]) -> dict:
    from ragas import EvaluationDataset, SingleTurnSample
    from ragas.metrics import (IDBasedContextPrecision, IDBasedContextRecall, NonLLMContextPrecisionWithReference,
                               NonLLMContextRecall)

    def sample(qid, with_ids, reference_override=None):
        q, rel, answer = QUERIES[qid]
        got = [d for d, _ in runs[qid]]
        fields = dict(user_input=q, retrieved_contexts=[CORPUS[d] for d in got],
                      reference_contexts=reference_override or [CORPUS[d] for d in rel], reference=answer)
        if with_ids:
            fields.update(retrieved_context_ids=got, reference_context_ids=list(rel))
        return SingleTurnSample(**fields)

    with_ids = EvaluationDataset(samples=[sample(q, True) for q in QUERIES])
    texts = EvaluationDataset(samples=[sample(q, False) for q in QUERIES])
    with_ids.to_jsonl(os.path.join(HERE, "ragas_ids.jsonl"))
    with_ids.to_csv(os.path.join(HERE, "ragas_ids.csv"))
    texts.to_jsonl(os.path.join(HERE, "ragas_texts.jsonl"))
    texts.to_csv(os.path.join(HERE, "ragas_texts.csv"))
    # The same chunk, re-punctuated: the reference of q1 lost its final period (as a re-chunked
    # corpus gives). RAGAS's fuzzy match still counts it; an exact match does not.
    near = EvaluationDataset(samples=[sample("q1", False, [CORPUS["c1"].rstrip(".")]), sample("q3", False)])
    near.to_jsonl(os.path.join(HERE, "ragas_near_miss.jsonl"))
    # pandas' default to_json (one object per column), as a user saving to_pandas() gets it
    texts.to_pandas().to_json(os.path.join(HERE, "ragas_pandas_columns.json"))

    metrics = {
        "IDBasedContextPrecision": IDBasedContextPrecision(),
        "IDBasedContextRecall": IDBasedContextRecall(),
        "NonLLMContextPrecisionWithReference": NonLLMContextPrecisionWithReference(),
        "NonLLMContextRecall": NonLLMContextRecall(),
    }

    async def score(ds, names):
        out = []
        for s in ds.samples:
            out.append({n: float(await metrics[n].single_turn_ascore(s)) for n in names})
        return out

    text_metrics = ["NonLLMContextPrecisionWithReference", "NonLLMContextRecall"]
    return {
        "ragas_ids": {"queries": list(QUERIES), "scores": asyncio.run(score(with_ids, list(metrics)))},
        "ragas_texts": {"queries": list(QUERIES), "scores": asyncio.run(score(texts, text_metrics))},
        "ragas_near_miss": {"queries": ["q1", "q3"], "scores": asyncio.run(score(near, text_metrics))},
    }


# -- DeepEval ------------------------------------------------------------------------------------
def deepeval_files(runs: dict[str, list[tuple[str, float]]]) -> dict:
    from deepeval.dataset import EvaluationDataset, Golden
    from deepeval.test_case import LLMTestCase

    goldens = []
    for qid, (q, rel, answer) in QUERIES.items():
        goldens.append(Golden(input=q, expected_output=answer, context=[CORPUS[d] for d in rel],
                              retrieval_context=[CORPUS[d] for d, _ in runs[qid]]))
    ds = EvaluationDataset(goldens=goldens)
    for ext in ("json", "csv", "jsonl"):
        ds.save_as(ext, HERE, file_name="deepeval_goldens")
    cases = EvaluationDataset()
    for qid, (q, rel, answer) in QUERIES.items():
        cases.add_test_case(LLMTestCase(input=q, actual_output=answer, expected_output=answer,
                                        context=[CORPUS[d] for d in rel],
                                        retrieval_context=[CORPUS[d] for d, _ in runs[qid]]))
    cases.save_as("json", HERE, file_name="deepeval_test_cases", include_test_cases=True)
    # Retrieved items with their source (RetrievedContextData): save_as writes a marker DeepEval parses back.
    from deepeval.test_case import RetrievedContextData

    sourced = EvaluationDataset(goldens=[
        Golden(input=q, expected_output=answer, context=[CORPUS[d] for d in rel],
               retrieval_context=[RetrievedContextData(source=d, context=CORPUS[d]) for d, _ in runs[qid]])
        for qid, (q, rel, answer) in QUERIES.items()])
    for ext in ("json", "csv"):
        sourced.save_as(ext, HERE, file_name="deepeval_sourced")
    # A CSV written by hand for add_goldens_from_csv_file (no custom_column_key_values column),
    # lists joined with DeepEval's delimiter as its loaders expect.
    from deepeval.dataset.utils import DELIMITER

    with open(os.path.join(HERE, "deepeval_hand.csv"), "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["input", "expected_output", "context", "retrieval_context"])
        for qid, (q, rel, answer) in QUERIES.items():
            w.writerow([q, answer, DELIMITER.join(CORPUS[d] for d in rel),
                        DELIMITER.join(CORPUS[d] for d, _ in runs[qid])])

    def read_back(kind: str, name: str) -> list[dict]:
        back = EvaluationDataset()
        path = os.path.join(HERE, name)
        if kind == "csv":
            back.add_goldens_from_csv_file(path, input_col_name="input", context_col_name="context",
                                           retrieval_context_col_name="retrieval_context",
                                           expected_output_col_name="expected_output")
        elif kind == "jsonl":
            back.add_goldens_from_jsonl_file(path)
        else:
            back.add_goldens_from_json_file(path)
        return [{"input": g.input, "context": list(g.context or []),
                 "retrieval_context": [getattr(c, "context", c) for c in (g.retrieval_context or [])]}
                for g in back.goldens]

    return {name: {"delimiter": DELIMITER, "read_back": read_back(kind, name)} for kind, name in (
        ("json", "deepeval_goldens.json"), ("csv", "deepeval_goldens.csv"), ("jsonl", "deepeval_goldens.jsonl"),
        ("json", "deepeval_test_cases.json"), ("csv", "deepeval_hand.csv"), ("json", "deepeval_sourced.json"),
        ("csv", "deepeval_sourced.csv"))}


# -- LlamaIndex ----------------------------------------------------------------------------------
def finetune_dataset_class():
    """EmbeddingQAFinetuneDataset from llama-index-finetuning, loaded from its file: the package's
    __init__ imports sentence-transformers and torch, which the class itself does not need."""
    spec = importlib.util.find_spec("llama_index")
    for root in spec.submodule_search_locations:
        path = os.path.join(root, "finetuning", "embeddings", "common.py")
        if os.path.exists(path):
            mod_spec = importlib.util.spec_from_file_location("_li_finetuning_common", path)
            mod = importlib.util.module_from_spec(mod_spec)
            mod_spec.loader.exec_module(mod)
            return mod.EmbeddingQAFinetuneDataset
    raise SystemExit("install llama-index-finetuning (pip install --no-deps llama-index-finetuning)")


METRIC_NAMES = ["hit_rate", "mrr", "precision", "recall", "ap", "ndcg"]


def llamaindex_files() -> dict:
    from llama_index.core import Settings, VectorStoreIndex
    from llama_index.core.embeddings import MockEmbedding
    from llama_index.core.evaluation import RetrieverEvaluator
    from llama_index.retrievers.bm25 import BM25Retriever

    Dataset = finetune_dataset_class()
    qa = Dataset(queries={q: v[0] for q, v in QUERIES.items()}, corpus=dict(CORPUS),
                 relevant_docs={q: list(v[1]) for q, v in QUERIES.items()})
    qa.save_json(os.path.join(HERE, "llamaindex_qa.json"))
    qa = Dataset.from_json(os.path.join(HERE, "llamaindex_qa.json"))

    def run_and_score(retriever, name: str) -> dict:
        evaluator = RetrieverEvaluator.from_metric_names(METRIC_NAMES, retriever=retriever)
        lines, scores = [], []
        for qid, query in qa.queries.items():
            got = retriever.retrieve(query)
            res = evaluator.evaluate(query=query, expected_ids=qa.relevant_docs[qid])
            assert res.retrieved_ids == [n.node.node_id for n in got], "the evaluator saw another order"
            lines.append({"query_id": qid, "topk": [{"chunk_id": n.node.node_id, "score": float(n.score or 0.0),
                                                     "rank": i} for i, n in enumerate(got, 1)]})
            scores.append({m: float(v) for m, v in res.metric_vals_dict.items()})
        with open(os.path.join(HERE, name), "w", encoding="utf-8") as fh:
            for line in lines:
                fh.write(json.dumps(line) + "\n")
        return {"queries": list(qa.queries), "scores": scores}

    bm25 = run_and_score(BM25Retriever.from_defaults(nodes=nodes(), similarity_top_k=TOP_K), "llamaindex_bm25_run.jsonl")
    # Every embedding equal: every score ties, and the retriever's own order is the only order.
    Settings.embed_model = MockEmbedding(embed_dim=8)
    index = VectorStoreIndex(nodes(), embed_model=Settings.embed_model)
    mock = run_and_score(index.as_retriever(similarity_top_k=4), "llamaindex_mock_ties_run.jsonl")
    mock["ties"] = "every score is equal: only the producer's order (the rank field) ranks the items"
    return {"llamaindex_bm25_run": bm25, "llamaindex_mock_ties_run": mock}


def main() -> None:
    runs = bm25_runs()
    expected = {"versions": versions(), "top_k": TOP_K}
    expected.update(ragas_files(runs))
    expected.update(deepeval_files(runs))
    expected.update(llamaindex_files())
    with open(os.path.join(HERE, "rag_datasets.expected.json"), "w", encoding="utf-8") as fh:
        json.dump(expected, fh, indent=1, ensure_ascii=False, sort_keys=True)
        fh.write("\n")
    shutil.rmtree(os.path.join(HERE, "__pycache__"), ignore_errors=True)


if __name__ == "__main__":
    main()
