"""The reranker extension point, beside the retriever's (:mod:`rankgate.retrieval.base`).

A reranker is anything with one method (see :class:`Reranker`)::

    rerank(query: Query, items: Sequence[Chunk]) -> Sequence[float]   # one score per item, higher first

and, optionally, ``index(chunks)``: called once with the whole corpus before any ``rerank`` when a
corpus is given (BM25 takes its term statistics from it). Built in:

* ``bm25`` (:class:`BM25Reranker`): BM25 scores of each item for the query, with the options of the
  BM25 retriever (``k1``, ``b``, ``stemmer`` …); term statistics from the corpus when indexed, else
  from the items of each call;
* ``dense`` (:class:`DenseReranker`, needs ``pip install 'rankgate[dense]'``): cosine similarity of
  the embedding model's vectors of the query and each item;
* your own as ``package.module:ClassName`` (called with the ``-O key=value`` options), found the way
  retrievers are (:func:`rankgate.retrieval.registry.get_retriever`).

:func:`apply_reranker` calls a reranker and orders the items by its scores: score descending, and on
equal scores the input order (a stable sort), so a reranker that gives every item the same score
leaves the list as it was. A reranker that returns the wrong number of scores, or a score that is not
a finite number, is an error naming it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from rankgate.errors import UsageError
from rankgate.retrieval.base import Chunk, Query

__all__ = ["BM25Reranker", "DenseReranker", "Reranker", "apply_reranker", "get_reranker"]


@runtime_checkable
class Reranker(Protocol):
    """What rankgate needs from a reranker; ``index(chunks)`` is optional."""

    def rerank(self, query: Query, items: Sequence[Chunk]) -> Sequence[float]:
        """One score per item, in the items' order; higher ranks first."""


class BM25Reranker:
    """BM25 scores of the given items; options as :class:`~rankgate.retrieval.bm25.BM25Retriever`."""

    def __init__(self, **options: Any) -> None:
        from rankgate.retrieval.bm25 import BM25Retriever

        self._bm25 = BM25Retriever(**options)
        self._options = dict(options)
        self._position: dict[str, int] = {}
        self.name = "bm25-rerank"

    def index(self, chunks: Sequence[Chunk]) -> None:
        self._bm25.index(chunks)
        self._position = {c.chunk_id: i for i, c in enumerate(self._bm25._chunks)}

    def _scores(self, query: Query) -> Any:
        lang = query.metadata.get("lang") if query.metadata else None
        terms = self._bm25.analyzer.terms(query.text, lang if isinstance(lang, str) else None)
        return self._bm25._model.get_scores(terms) if terms else None

    def rerank(self, query: Query, items: Sequence[Chunk]) -> list[float]:
        if not items:
            return []
        if not self._position or any(c.chunk_id not in self._position for c in items):
            # No corpus (or items outside it): the items of this call are the collection.
            local = BM25Reranker(**self._options)
            unique = list({c.chunk_id: c for c in items}.values())
            local.index(unique)
            return local.rerank(query, items)
        scores = self._scores(query)
        if scores is None:
            return [0.0] * len(items)
        return [round(float(scores[self._position[c.chunk_id]]), 6) for c in items]


class DenseReranker:
    """Cosine similarity of embeddings (the dense extra's model); options as the dense retriever."""

    def __init__(self, **options: Any) -> None:
        from rankgate.retrieval.dense import DenseRetriever

        self._dense = DenseRetriever(**options)
        self.name = "dense-rerank"

    def rerank(self, query: Query, items: Sequence[Chunk]) -> list[float]:
        if not items:
            return []
        d = self._dense
        texts = [f"{c.title}\n{c.text}" if d.title and c.title else c.text for c in items]
        vectors = d._embed(texts)
        q = d._embed([query.text])[0]
        return [round(float(x), 6) for x in vectors @ q]


_BUILT_IN = {"bm25": BM25Reranker, "dense": DenseReranker}


def get_reranker(spec: str, **options: Any) -> Reranker:
    """Build the reranker named ``spec`` (``bm25``, ``dense`` or ``package.module:ClassName``)."""
    from rankgate.retrieval.registry import _call, _import

    if not isinstance(spec, str) or not spec:
        raise UsageError(f"Reranker must be a name or 'module:Class'; got {spec!r}")
    if ":" in spec:
        obj = _call(_import(spec), spec, options)
    elif spec in _BUILT_IN:
        obj = _call(_BUILT_IN[spec], spec, options)
    else:
        import difflib

        close = difflib.get_close_matches(spec, list(_BUILT_IN), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise UsageError(f"Unknown reranker {spec!r}.{hint} Known: {', '.join(_BUILT_IN)}; or give your own as "
                         "'package.module:ClassName'")
    if not callable(getattr(obj, "rerank", None)):
        raise UsageError(f"Reranker {spec!r} gave a {type(obj).__name__}, which has no rerank(query, items) method "
                         "(a reranker returns one score per item; see rankgate.retrieval.rerank)")
    return obj


def apply_reranker(reranker: Reranker, query: Query, items: Sequence[Chunk]) -> list[tuple[Chunk, float]]:
    """``items`` ordered by ``reranker``'s scores (descending; input order on ties), with their scores."""
    who = type(reranker).__name__
    scores = reranker.rerank(query, items)
    try:
        values = [float(s) for s in scores]
    except (TypeError, ValueError):
        raise UsageError(f"{who}.rerank() must return numbers, one per item; got {str(scores)[:80]}") from None
    if len(values) != len(items):
        raise UsageError(f"{who}.rerank() returned {len(values)} scores for {len(items)} items of query "
                         f"{query.query_id!r}; it must return one score per item")
    bad = next((v for v in values if not math.isfinite(v)), None)
    if bad is not None:
        raise UsageError(f"{who}.rerank() returned {bad} for query {query.query_id!r}; scores must be finite numbers")
    order = sorted(range(len(items)), key=lambda i: -values[i])  # stable: input order on ties
    return [(items[i], values[i]) for i in order]
