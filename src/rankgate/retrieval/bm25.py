"""BM25 retrieval on ``bm25s``, with configurable text analysis.

Scoring is bm25s's (Lucene's BM25 variant by default: ``idf = ln(1 + (N - df + 0.5) / (df + 0.5))``);
text analysis is rankgate's own :class:`~rankgate.retrieval.analysis.Analyzer`, so that each chunk
can be stemmed in its own language and each query in the reader's.

Determinism: every chunk is scored exhaustively (no approximate top-k), scores are rounded to
:data:`~rankgate.retrieval.base.SCORE_DECIMALS` decimals and ordered by rankgate's ranking rule
(score descending, chunk id descending on ties). A chunk that shares no term with the query scores 0
and is never returned, so a query can get fewer than ``k`` hits, or none.

bm25s and PyStemmer are imported when a retriever is built, never by ``import rankgate``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rankgate.errors import UsageError
from rankgate.retrieval.analysis import Analyzer
from rankgate.retrieval.base import SCORE_DECIMALS, Chunk, Query, content_version, search_records, top_k

__all__ = ["BM25Retriever"]

_METHODS = ("lucene", "robertson", "atire", "bm25l", "bm25+")


class BM25Retriever:
    """BM25 over chunk text (optionally with the title prepended).

    Parameters
    ----------
    k1, b:
        BM25 term-frequency saturation and length normalisation (defaults 1.2 and 0.75).
    stemmer, stopwords, language:
        Text analysis, see :class:`~rankgate.retrieval.analysis.Analyzer`. ``"auto"`` (the default)
        analyses each chunk in its ``lang`` metadata and each query in its ``lang`` tag, falling back
        to ``language``; a language code such as ``"en"`` analyses everything in that language;
        ``None`` switches the step off.
    title:
        Prepend the chunk's title to its text before indexing (default ``True``).
    method:
        The bm25s scoring variant (``"lucene"`` by default).
    name:
        The ``system`` written into each run record.
    """

    def __init__(
        self,
        *,
        k1: float = 1.2,
        b: float = 0.75,
        stemmer: str | None = "auto",
        stopwords: str | None = "auto",
        language: str = "en",
        title: bool = True,
        method: str = "lucene",
        name: str | None = None,
    ) -> None:
        if not (isinstance(k1, (int, float)) and k1 >= 0):
            raise UsageError(f"BM25 parameter k1 must be a number >= 0; got {k1!r}")
        if not (isinstance(b, (int, float)) and 0 <= b <= 1):
            raise UsageError(f"BM25 parameter b must be a number in [0, 1]; got {b!r}")
        if method not in _METHODS:
            raise UsageError(f"Unknown BM25 method {method!r}; expected one of {', '.join(_METHODS)}")
        self.k1 = float(k1)
        self.b = float(b)
        self.title = bool(title)
        self.method = method
        self.analyzer = Analyzer(stemmer=stemmer, stopwords=stopwords, language=language)
        self.name = name or self._default_name()
        self._chunks: list[Chunk] = []
        self._model: Any = None
        self._order_key: Any = None
        self.index_version: str | None = None

    def _default_name(self) -> str:
        a = self.analyzer
        return f"bm25(k1={self.k1:g},b={self.b:g},stemmer={a.stemmer},stopwords={a.stopwords},title={self.title})"

    def config(self) -> dict[str, Any]:
        """Every setting that changes the ranking."""
        return {
            "retriever": "bm25",
            "k1": self.k1,
            "b": self.b,
            "title": self.title,
            "method": self.method,
            **self.analyzer.describe(),
        }

    def _chunk_terms(self, chunk: Chunk) -> list[str]:
        text = f"{chunk.title}\n{chunk.text}" if self.title and chunk.title else chunk.text
        lang = chunk.metadata.get("lang") if chunk.metadata else None
        return self.analyzer.terms(text, lang if isinstance(lang, str) else None)

    def index(self, chunks: Sequence[Chunk]) -> None:
        """Analyse and index ``chunks``; replaces any earlier index."""
        import bm25s
        import numpy as np

        seen: set[str] = set()
        for chunk in chunks:
            if chunk.chunk_id in seen:
                raise UsageError(f"Duplicate chunk id {chunk.chunk_id!r} given to the BM25 index")
            seen.add(chunk.chunk_id)
        self._chunks = list(chunks)
        corpus_terms = [self._chunk_terms(chunk) for chunk in self._chunks]
        model = bm25s.BM25(k1=self.k1, b=self.b, method=self.method)
        if self._chunks:
            model.index(corpus_terms, show_progress=False)
        self._model = model
        # Rank of each chunk id in byte-wise ascending order: the tie-break key of the ranking rule.
        by_id = sorted(range(len(self._chunks)), key=lambda i: self._chunks[i].chunk_id.encode("utf-8"))
        order_key = np.empty(len(self._chunks), dtype=np.int64)
        order_key[by_id] = np.arange(len(self._chunks))
        self._order_key = order_key
        self.index_version = content_version("bm25", self.config(), self._chunks)

    def _search_one(self, query: Query, k: int) -> list[tuple[Chunk, float]]:
        import numpy as np

        if not self._chunks:
            return []
        lang = query.metadata.get("lang") if query.metadata else None
        terms = self.analyzer.terms(query.text, lang if isinstance(lang, str) else None)
        if not terms:
            return []
        scores = np.round(np.asarray(self._model.get_scores(terms), dtype=np.float64), SCORE_DECIMALS)
        candidates = np.flatnonzero(scores > 0)
        if candidates.size > k:
            # Keep everything tied with the k-th score, so the tie-break, not argpartition, decides.
            kth = np.partition(scores[candidates], candidates.size - k)[candidates.size - k]
            candidates = candidates[scores[candidates] >= kth]
        order = np.lexsort((-self._order_key[candidates], -scores[candidates]))
        hits = [(self._chunks[i], float(scores[i])) for i in candidates[order]]
        return top_k(hits, k)

    def search(self, queries: Sequence[Query], k: int, *, latency: bool = True) -> list[dict[str, Any]]:
        """Return one run record per query (see :func:`~rankgate.retrieval.base.run_record`).

        ``latency=False`` leaves ``latency_ms`` out so the records are byte-identical across runs.
        """
        if self._model is None or self.index_version is None:
            raise UsageError("BM25Retriever.search() called before index()")
        return search_records(self.name, self.index_version, queries, k, self._search_one, latency=latency)
