"""In-memory gold sets and runs: columnar, so ten million rows stay cheap.

Every loader (JSONL, TREC, BEIR, Parquet, Python objects) produces one of these two types; nothing
downstream knows which format the data came from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import pyarrow as pa

__all__ = ["GOLD_FIELDS", "Gold", "Run"]

# Per-query gold fields with a fixed meaning (DESIGN §2). Other scalar fields are kept as segments.
GOLD_FIELDS = (
    "query",
    "intent",
    "segment",
    "source_of_query",
    "created",
    "corpus_version",
    "as_of",
    "k",
    "expected_answer",
    "entities",
    "must_not_retrieve",
    "no_answer",
    "tags",
    "conversation_id",  # the conversation a query is a turn of (model/conversations.py)
    "turn",  # its position in the conversation, 1 for the first
    "depends_on_turns",  # the earlier turns whose context its retrieval needs
)


@dataclass
class Gold:
    """A gold set: queries, their judgements and descriptive fields.

    ``query_ids`` keeps the order of the input. Judgements are a long table: ``j_query`` (index into
    ``query_ids``), ``j_doc`` (chunk or document id) and ``j_grade`` (integer; <= 0 judged not
    relevant). ``fields`` maps a gold field name to one value per query (None when absent);
    ``tags`` is a list of dicts. ``notes`` holds the annotator note of each judgement, if any.
    ``notices`` (gold set and run alike): sentences the reader wants shown once, about how the file
    was read when that can differ from what was meant (lists joined by a delimiter, near-misses).
    """

    query_ids: list[str]
    j_query: np.ndarray
    j_doc: pa.Array
    j_grade: np.ndarray
    fields: dict[str, list[Any]] = field(default_factory=dict)
    notes: list[str | None] | None = None
    source: str = "<gold>"
    notices: list[str] = field(default_factory=list)  # what the reader wants the user told (one line each)

    def __len__(self) -> int:
        return len(self.query_ids)

    def field(self, name: str) -> list[Any]:
        return self.fields.get(name) or [None] * len(self.query_ids)

    def judgements(self) -> dict[str, dict[str, int]]:
        """``{query_id: {doc_id: grade}}`` (the pytrec_eval shape)."""
        out: dict[str, dict[str, int]] = {q: {} for q in self.query_ids}
        for qi, d, g in zip(self.j_query.tolist(), self.j_doc.to_pylist(), self.j_grade.tolist()):
            out[self.query_ids[qi]][d] = g
        return out


def joined_fields(parts: list[tuple[dict[str, list[Any]], int]]) -> dict[str, list[Any]]:
    """The per-query ``fields`` of runs read one after another (each with its number of queries) as
    one run's: a column per name in order of first appearance, None for the queries of a part
    without that name (as the JSONL parser builds them for the whole file)."""
    from rankgate.model.costs import CostColumn

    names = list(dict.fromkeys(name for fields, _ in parts for name in fields))
    out: dict[str, Any] = {}
    for name in names:
        cols = [(fields.get(name), n) for fields, n in parts]
        if all(c is None or isinstance(c, CostColumn) for c, _ in cols):  # (cost objects as columns: kept so)
            out[name] = CostColumn.joined(cols)  # type: ignore[arg-type]
        else:
            out[name] = [v for c, n in cols for v in (c if c is not None else [None] * n)]
    return out


def joined_runs(parts: list[Run]) -> Run | None:
    """Runs read one after another from one file (its blocks of whole queries, each with the file's line
    numbers) as the run of the whole file, as its reader gives it; None when they cannot be one run
    (none, scores in some and not in others, two tie rules or sources, per-row columns)."""
    if not parts or any(p.items for p in parts):
        return None
    first = parts[0]
    scored = {p.r_score is not None for p in parts}
    if len(scored) != 1 or {p.ties for p in parts} != {first.ties} or {p.source for p in parts} != {first.source}:
        return None
    if len(parts) == 1:
        return first
    chunks = [chunk for p in parts for chunk in _chunks(p.r_doc)]
    if len({chunk.type for chunk in chunks}) > 1:
        return None
    sizes = np.cumsum([0] + [len(p.query_ids) for p in parts[:-1]])
    lines = [p.query_lines for p in parts]
    ranked = any(p.r_order is not None for p in parts)
    return Run(
        query_ids=[q for p in parts for q in p.query_ids],
        r_query=np.concatenate([p.r_query + base for p, base in zip(parts, sizes.tolist())]),
        r_doc=pa.chunked_array(chunks, type=chunks[0].type) if chunks else first.r_doc,
        r_score=np.concatenate([cast(np.ndarray, p.r_score) for p in parts]) if True in scored else None,
        # (given ranks, NaN where a block has none, only when some block has one: as the whole read)
        r_order=np.concatenate([np.full(len(p), np.nan) if p.r_order is None else p.r_order for p in parts])
        if ranked else None,
        fields=joined_fields([(p.fields, len(p.query_ids)) for p in parts]),
        source=first.source,
        query_lines=None if any(x is None for x in lines) else np.concatenate(cast(list[np.ndarray], lines)),
        ties=first.ties,
        notices=list(dict.fromkeys(n for p in parts for n in p.notices)),
    )


def _chunks(arr: pa.Array | pa.ChunkedArray) -> list[pa.Array]:
    return list(arr.chunks) if isinstance(arr, pa.ChunkedArray) else [arr]


@dataclass
class Run:
    """A run: for each query, the retrieved items, with scores or in a given order.

    Rows are a long table: ``r_query`` (index into ``query_ids``), ``r_doc``, and either
    ``r_score`` (float64; ranked by :func:`rankgate.model.ranking.rank_rows`) or ``r_order`` (the
    given position: JSONL ``rank`` or list position; kept as given). Beside scores, ``r_order`` holds
    the explicit ranks, NaN for an item without one (None: no rank given at all). ``ties``: the rule
    that orders equal scores by default (``"input"``: the producer gave an order, a list's position or
    a table's rows; ``"id"``: trec_eval's rule, for TREC runs and score dicts). ``items`` holds optional
    per-row columns (``doc_version``, ``text``, ``source``); ``fields`` optional per-query values
    (``system``, ``k_raw``, ``latency_ms``, ``index_version``, ``chunker`` …). ``query_lines``: the
    input line of each query, when the format has one line per query (JSONL), so that errors found
    later (an id listed twice in one ranking) can name it.
    """

    query_ids: list[str]
    r_query: np.ndarray
    r_doc: pa.Array | pa.ChunkedArray  # chunked as a CSV reader returns it, or one array
    r_score: np.ndarray | None = None
    r_order: np.ndarray | None = None
    items: dict[str, list[Any]] = field(default_factory=dict)
    fields: dict[str, list[Any]] = field(default_factory=dict)
    source: str = "<run>"
    query_lines: np.ndarray | None = None
    ties: str = "input"
    notices: list[str] = field(default_factory=list)  # what the reader wants the user told (one line each)

    def __len__(self) -> int:
        return len(self.r_doc)
