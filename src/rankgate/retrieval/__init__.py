"""Built-in retrievers and the retriever extension point.

Run a retriever over a corpus and gold queries, and write the run rankgate evaluates::

    from rankgate.retrieval import retrieve, write_run
    run = retrieve("corpus.jsonl", "gold.jsonl", "bm25", k=100)
    write_run(run, "run.jsonl")

* :mod:`~rankgate.retrieval.base`: :class:`Chunk`, :class:`Query`, the :class:`Retriever` protocol.
* :mod:`~rankgate.retrieval.bm25`: BM25 on bm25s with per-language analysis (the default retriever).
* :mod:`~rankgate.retrieval.dense`: sentence-transformers embeddings (``pip install 'rankgate[dense]'``).
* :mod:`~rankgate.retrieval.corpus`: loaders for corpus JSONL, gold queries and BEIR folders.
* :mod:`~rankgate.retrieval.registry`: retrievers by name, plus ``package.module:Class`` for your own.
* :mod:`~rankgate.retrieval.configs`: named configurations, including :func:`demo_configs`.

Heavy libraries (bm25s, PyStemmer, sentence-transformers) are imported only when a retriever is built.
"""

from __future__ import annotations

from rankgate.retrieval.api import DEFAULT_DEPTH, retrieve, write_run
from rankgate.retrieval.base import Chunk, Query, Retriever
from rankgate.retrieval.configs import RetrieverConfig, demo_configs
from rankgate.retrieval.corpus import (
    BeirCollection,
    load_beir,
    load_beir_qrels,
    load_corpus,
    load_gold_queries,
)
from rankgate.retrieval.registry import available, get_retriever, register

__all__ = [
    "DEFAULT_DEPTH",
    "BeirCollection",
    "Chunk",
    "Query",
    "Retriever",
    "RetrieverConfig",
    "available",
    "demo_configs",
    "get_retriever",
    "load_beir",
    "load_beir_qrels",
    "load_corpus",
    "load_gold_queries",
    "register",
    "retrieve",
    "write_run",
]
