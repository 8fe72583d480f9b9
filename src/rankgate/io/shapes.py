"""What a file of records is, and the one rule for matching retrieved texts to reference texts.

Shapes, recognised from the field names of the records (or the columns of a table):

==============  ==============================================================================
``ragas``       ``user_input`` with ``retrieved_contexts`` / ``reference_contexts`` (or their
                ``*_context_ids``); legacy: ``question`` with ``contexts``
``deepeval``    ``input`` with ``retrieval_context`` / ``context`` / ``actual_output``
``llamaindex``  one JSON object with ``queries``, ``corpus`` and ``relevant_docs``; and, as the shape
                ``llamaindex_results``, ``RetrieverEvaluator`` results: records with ``expected_ids``
                and ``retrieved_ids`` (``RetrievalEvalResult.model_dump()``)
``table``       a long table: a query id column and an item id column (CSV, Parquet)
``jsonl``       rankgate's own records (``relevant_chunks``, ``topk`` …)
==============  ==============================================================================

Matching by text (when a tool logs the texts of contexts, not their ids): two texts are the same
item when they are equal after collapsing every run of whitespace to one space, stripping the ends
and case-folding. The item's id is ``"t:"`` + the first 16 hex digits of the SHA-256 of that
normalised text (UTF-8), so the same text gets the same id in every file and on every machine.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

__all__ = ["SHAPE_NAMES", "describe_shape", "normalise_text", "shape_of", "text_id"]

SHAPE_NAMES = {
    "ragas": "a RAGAS dataset",
    "deepeval": "a DeepEval dataset",
    "llamaindex": "a LlamaIndex EmbeddingQAFinetuneDataset",
    "llamaindex_results": "LlamaIndex RetrieverEvaluator results",
    "table": "a long table (one row per query and item)",
    "jsonl": "rankgate JSON records",
}

RAGAS_KEYS = frozenset({"user_input", "retrieved_contexts", "reference_contexts", "retrieved_context_ids",
                        "reference_context_ids"})
DEEPEVAL_KEYS = frozenset({"retrieval_context", "context", "actual_output"})
RANKGATE_KEYS = frozenset({"relevant_chunks", "relevant", "relevant_docs", "qrels", "topk", "retrieved", "results",
                           "hits", "ranking", "docs", "chunks", "retrieved_chunks"})
TABLE_QUERY = ("query_id", "qid", "query-id")
TABLE_ITEM = ("chunk_id", "doc_id", "docid", "corpus_id", "corpus-id", "docno")


def normalise_text(text: str) -> str:
    """Whitespace runs collapsed to one space, ends stripped, case-folded."""
    return " ".join(text.split()).casefold()


def text_id(text: str) -> str:
    """The stable id of a context known only by its text (see module docs)."""
    return "t:" + hashlib.sha256(normalise_text(text).encode("utf-8")).hexdigest()[:16]


def shape_of(keys: Iterable[str]) -> str | None:
    """The shape whose field names these are, or None when they name none of them."""
    k = set(keys)
    if {"queries", "corpus", "relevant_docs"} <= k:
        return "llamaindex"
    if {"expected_ids", "retrieved_ids"} <= k:
        return "llamaindex_results"
    if k & RANKGATE_KEYS:
        return "jsonl"
    if "user_input" in k and k & (RAGAS_KEYS - {"user_input"}) or {"question", "contexts"} <= k:
        return "ragas"
    if k & {"retrieved_context_ids", "reference_context_ids", "retrieved_contexts", "reference_contexts"}:
        return "ragas"
    if "input" in k and k & DEEPEVAL_KEYS:
        return "deepeval"
    if any(q in k for q in TABLE_QUERY) and any(d in k for d in TABLE_ITEM):
        return "table"
    return None


def describe_shape(shape: str | None) -> str:
    return SHAPE_NAMES.get(shape or "", "no shape rankgate knows")
