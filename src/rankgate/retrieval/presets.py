"""The named retriever configurations that ``get_retriever`` accepts by name: the two that
``rankgate demo`` compares (their story and measured numbers are in :mod:`.configs`), as plain data,
so the registry and the configurations both read them and neither imports the other."""

from __future__ import annotations

from typing import Any

__all__ = ["DEMO"]

#: role -> the fields of a :class:`~rankgate.retrieval.configs.RetrieverConfig`
DEMO: dict[str, dict[str, Any]] = {
    "baseline": dict(
        name="bm25-multilingual",
        retriever="bm25",
        options={
            "k1": 1.2,
            "b": 0.75,
            "stemmer": "auto",
            "stopwords": "auto",
            "language": "en",
            "title": True,
        },
        description="BM25, each chunk and query analysed in its own language (Snowball stemmer + stopwords)",
    ),
    "candidate": dict(
        name="bm25-english",
        retriever="bm25",
        options={
            "k1": 1.2,
            "b": 0.75,
            "stemmer": "en",
            "stopwords": "en",
            "language": "en",
            "title": True,
        },
        description="BM25 with one English analyser for all text (PR: simplify analysis)",
    ),
}
