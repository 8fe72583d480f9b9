"""What metric kernels read: the ranked, judged rows of every evaluated query.

Rows are grouped by query (CSR: query ``i`` owns rows ``offsets[i]:offsets[i+1]``) and already in
ranking order (see :mod:`rankgate.model.ranking`); kernels never sort. ``grade`` is NaN for items that
have no judgement. Per-query helpers sum in a fixed order so results are byte-identical run to run.
When the context keeps the item codes the grades are joined from (``codes``), the common ranking
metrics are computed from them in one compiled pass and the grade of every row is never made
(:func:`rankgate.metrics.ranking.compiled_values`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from rankgate.metrics.spec import Metric

__all__ = ["EvalContext", "JoinCodes", "QueryView"]

NO_CUTOFF = np.iinfo(np.int64).max // 4


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """``np.unique`` of an int array by a sort and a neighbour comparison: the same sorted distinct values,
    but numpy 2's hashing ``unique`` takes ~20x longer on a million keys that come nearly sorted."""
    if values.size == 0:
        return values.copy()
    s = np.sort(values)
    keep = np.empty(s.size, dtype=bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]


@dataclass
class JoinCodes:
    """Integer item codes the grades of the ranked rows are joined from: each row's (``rows``; None
    once the grades have been written over them) and each judgement's (``judged``, in the order of
    ``judged_grade``; -1 for an id no row holds). Equal codes are the same id."""

    rows: np.ndarray | None
    judged: np.ndarray


@dataclass
class EvalContext:
    offsets: np.ndarray  # int64, len nq + 1
    # Rank per row (int64, 1-based): an array, or a callable that makes it when first read.
    rank_source: np.ndarray | Callable[[], np.ndarray]
    # Grade per row (float64, NaN = unjudged): an array, or a callable that makes it when first read.
    grade_source: np.ndarray | Callable[[], np.ndarray]
    judged_offsets: np.ndarray  # int64, len nq + 1: CSR over judged_grade
    judged_grade: np.ndarray  # int64: every judgement of each query
    query_k: np.ndarray  # int64 per query, 0 = the gold set gives none
    default_k: int
    answerable: np.ndarray  # bool per query: has at least one item with grade >= 1
    trec: bool = False
    gold_max_grade: int | None = None  # highest grade in the whole gold set (err's default g_max)
    # Score per row: an array, or a callable that makes it when a kernel first reads ``score``.
    score_source: np.ndarray | Callable[[], np.ndarray] | None = None
    docs: Callable[[], list[str]] | None = None  # doc id per row, materialised on demand
    # Doc ids of some rows (an int64 array of row numbers) as an arrow string array: what kernels that
    # read ids of the top k use, so that the ids of rows past k are never made into Python strings.
    docs_at: Callable[[np.ndarray], Any] | None = None
    items: dict[str, Callable[[], list[Any]]] = field(default_factory=dict)  # doc_version, text per row
    queries: dict[str, list[Any]] = field(default_factory=dict)  # per-query gold fields
    doc_of: Callable[[str], str] = lambda chunk: chunk
    # Whether no item id of the ranked rows contains a text (False: some may); None: not known.
    ids_lack: Callable[[str], bool] | None = None
    codes: JoinCodes | None = None  # what the grades are joined from, while it is kept
    cache: dict[Any, Any] = field(default_factory=dict)

    # -- shapes ---------------------------------------------------------------------------------
    @property
    def nq(self) -> int:
        return len(self.offsets) - 1

    @property
    def qrow(self) -> np.ndarray:
        """Query index of every row."""
        if "qrow" not in self.cache:
            self.cache["qrow"] = np.repeat(np.arange(self.nq, dtype=np.int64), np.diff(self.offsets))
        return self.cache["qrow"]

    @property
    def n_retrieved(self) -> np.ndarray:
        return np.diff(self.offsets)

    @property
    def rank(self) -> np.ndarray:
        """Rank of every row within its query (1-based)."""
        if callable(self.rank_source):
            self.rank_source = self.rank_source()
        return self.rank_source

    @property
    def grade(self) -> np.ndarray:
        """Grade of every row (NaN: no judgement)."""
        if callable(self.grade_source):
            self.grade_source = self.grade_source()
        return self.grade_source

    @property
    def score(self) -> np.ndarray | None:
        """Score of every row; None when the run has no scores."""
        if callable(self.score_source):
            self.score_source = self.score_source()
        return self.score_source

    def has_item(self, name: str) -> bool:
        return name in self.items

    def item(self, name: str) -> list[Any]:
        key = ("item", name)
        if key not in self.cache:
            self.cache[key] = self.items[name]()
        return self.cache[key]

    def doc_ids(self) -> list[str]:
        if "docs" not in self.cache:
            assert self.docs is not None
            self.cache["docs"] = self.docs()
        return self.cache["docs"]

    def parent_codes(self, rows: np.ndarray) -> np.ndarray:
        """For the given rows: an int64 code of each row's parent document (``doc_of`` of its id);
        equal codes mean the same parent. Each distinct id is mapped once."""
        index: dict[str, int] = {}
        if self.docs_at is None:  # a context built by hand: through the materialised ids
            ids = self.doc_ids()
            return np.fromiter((index.setdefault(self.doc_of(ids[r]), len(index)) for r in rows.tolist()),
                               dtype=np.int64, count=rows.size)
        import pyarrow as pa
        import pyarrow.compute as pc

        enc = pc.dictionary_encode(self.docs_at(rows))
        if isinstance(enc, pa.ChunkedArray):
            enc = enc.combine_chunks()
        sep = getattr(self.doc_of, "split_sep", None)  # doc_of cuts at the first sep: split the whole dictionary
        if sep and not pc.any(pc.match_substring(enc.dictionary, sep)).as_py():
            mapped = np.arange(len(enc.dictionary), dtype=np.int64)  # no id has a part: each is its own parent
        elif sep:
            parents = pc.list_element(pc.split_pattern(enc.dictionary, pattern=sep, max_splits=1), 0)
            # dictionary_encode numbers values in order of first appearance, as setdefault below does
            mapped = np.asarray(pc.dictionary_encode(parents).indices.to_numpy(zero_copy_only=False), dtype=np.int64)
        else:
            mapped = np.fromiter((index.setdefault(self.doc_of(d), len(index)) for d in enc.dictionary.to_pylist()),
                                 dtype=np.int64, count=len(enc.dictionary))
        return mapped[np.asarray(enc.indices.to_numpy(zero_copy_only=False), dtype=np.int64)]

    def distinct_parents(self, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per query: the number of distinct parent documents among its top-k rows, and of rows."""
        key = ("distinct_parents", k.tobytes() if k.size and not (k == k[0]).all() else int(k[0]) if k.size else 0)
        if key not in self.cache:
            rows = np.flatnonzero(self.within(k))
            q = self.qrow[rows]
            counted = np.bincount(q, minlength=self.nq).astype(np.int64)
            if self._own_parents():  # a query's ranked ids are distinct: repeats are refused or dropped
                self.cache[key] = (counted, counted)
                return self.cache[key]
            codes = self.parent_codes(rows)
            width = int(codes.max()) + 1 if codes.size else 1
            pairs = sorted_unique(q * width + codes)
            distinct = np.bincount(pairs // width, minlength=self.nq).astype(np.int64)
            self.cache[key] = (distinct, counted)
        return self.cache[key]

    def _own_parents(self) -> bool:
        """Whether every ranked id is its own parent document: ``doc_of`` cuts at a separator that no
        id holds, or keeps every id (``own_document``). Only for ranked rows (``docs_at``), whose ids
        are distinct within each query."""
        if self.docs_at is None:
            return False
        if getattr(self.doc_of, "own_document", False):
            return True
        sep = getattr(self.doc_of, "split_sep", None)
        if not sep or self.ids_lack is None:
            return False
        if ("ids_lack", sep) not in self.cache:
            self.cache["ids_lack", sep] = bool(self.ids_lack(sep))
        return bool(self.cache["ids_lack", sep])

    # -- cutoffs --------------------------------------------------------------------------------
    def k_for(self, metric: Metric) -> np.ndarray:
        """Cutoff per query: ``@k`` if given; else per-query k / default k, or no cutoff."""
        nq = self.nq
        if metric.k is not None:
            return np.full(nq, metric.k, dtype=np.int64)
        if metric.definition.cutoff == "query_k":
            return np.where(self.query_k > 0, self.query_k, self.default_k).astype(np.int64)
        return np.full(nq, NO_CUTOFF, dtype=np.int64)

    def cut(self, k: np.ndarray) -> EvalContext:
        """The same queries with only their top-k rows, for kernels that read nothing past k.

        Returns ``self`` when no query has more than k rows. Row data is sliced (grade, rank, score);
        per-query judgement caches are shared; item columns are not carried (ranking kernels only).
        """
        lengths = np.diff(self.offsets)
        keep = np.minimum(lengths, k)
        if np.array_equal(keep, lengths):
            return self
        uniform = not k.size or bool((k == k[0]).all())
        key = ("cut", int(k[0]) if uniform and k.size else k.tobytes())
        sub = self.cache.get(key)
        if sub is None:
            source = self
            if uniform and k.size:
                # A cut of a deeper cut is the same rows: start from the smallest one already made.
                deeper = [c[1] for c in self.cache
                          if isinstance(c, tuple) and len(c) == 2 and c[0] == "cut" and isinstance(c[1], int) and c[1] > int(k[0])]
                if deeper:
                    source = self.cache[("cut", min(deeper))]
            sub = source._cut_of(k, self)
            self.cache[key] = sub
        return sub

    def _cut_of(self, k: np.ndarray, root: EvalContext) -> EvalContext:
        """The top-k rows of this context as a new one (not cached here). ``root`` is the context the
        cut is asked of: its scores are read through it, so a cut never keeps a deeper cut alive."""
        rows = self.within(k)
        shared = {c: v for c, v in self.cache.items() if c[0] in ("num_rel", "gain_total", "ideal_sorted", "ideal_counts", "max_grade")}
        return EvalContext(
            offsets=np.concatenate(([0], np.cumsum(np.minimum(np.diff(self.offsets), k)))).astype(np.int64),
            rank_source=self.rank[rows],
            grade_source=self.grade[rows],
            judged_offsets=self.judged_offsets,
            judged_grade=self.judged_grade,
            query_k=self.query_k,
            default_k=self.default_k,
            answerable=self.answerable,
            trec=self.trec,
            gold_max_grade=self.gold_max_grade,
            score_source=None if root.score_source is None else (lambda: cast(np.ndarray, root.score)[root.within(k)]),
            cache=shared,
        )

    def drop_cuts_deeper_than(self, k: int) -> None:
        """Forget the cached cuts deeper than ``k`` but the shallowest of them (the one a cut at ``k``
        is taken from): when metrics come deepest first, at most two cuts are held at a time."""
        deeper = sorted(c[1] for c in self.cache
                        if isinstance(c, tuple) and len(c) == 2 and c[0] == "cut" and isinstance(c[1], int) and c[1] > k)
        for depth in deeper[1:]:
            del self.cache[("cut", depth)]

    def within(self, k: np.ndarray) -> np.ndarray:
        """Row mask: rank <= k of the row's query."""
        if k.size and (k == k[0]).all():
            return self.rank <= k[0]
        return self.rank <= k[self.qrow]

    # -- per-query reductions (fixed order: deterministic) -------------------------------------
    def seg_sum(self, x: np.ndarray) -> np.ndarray:
        """Sum of a per-row array within each query (0 for queries with no rows)."""
        if x.dtype == np.bool_:  # a count: where the true rows fall between the query offsets
            return np.diff(np.searchsorted(np.flatnonzero(x), self.offsets)).astype(np.int64)
        out = np.zeros(self.nq, dtype=x.dtype if x.dtype.kind in "if" else np.float64)
        starts = self.offsets[:-1]
        nonempty = self.offsets[1:] > starts
        if x.size:
            out[nonempty] = np.add.reduceat(x, starts[nonempty])
        return out

    def seg_min(self, x: np.ndarray, empty: Any) -> np.ndarray:
        out = np.full(self.nq, empty, dtype=x.dtype)
        starts = self.offsets[:-1]
        nonempty = self.offsets[1:] > starts
        if x.size:
            out[nonempty] = np.minimum.reduceat(x, starts[nonempty])
        return out

    # -- relevance --------------------------------------------------------------------------------
    def is_rel(self, rel: int) -> np.ndarray:
        key = ("is_rel", rel)
        if key not in self.cache:
            with np.errstate(invalid="ignore"):
                self.cache[key] = self.grade >= rel  # NaN compares False: unjudged is not relevant
        return self.cache[key]

    def num_rel(self, rel: int) -> np.ndarray:
        key = ("num_rel", rel)
        if key not in self.cache:
            hit = (self.judged_grade >= rel).astype(np.int64)
            cs = np.concatenate(([0], np.cumsum(hit)))
            self.cache[key] = cs[self.judged_offsets[1:]] - cs[self.judged_offsets[:-1]]
        return self.cache[key]

    def rel_gain_total(self, rel: int) -> np.ndarray:
        """Sum of grades of relevant judgements per query (grade >= rel)."""
        key = ("gain_total", rel)
        if key not in self.cache:
            g = np.where(self.judged_grade >= rel, self.judged_grade, 0).astype(np.int64)
            cs = np.concatenate(([0], np.cumsum(g)))
            self.cache[key] = cs[self.judged_offsets[1:]] - cs[self.judged_offsets[:-1]]
        return self.cache[key]

    def hits(self, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The rows where ``mask`` holds, sparse: (rows, query of each, 1-based position of each
        among its query's such rows). Relevant rows are a small share of a run, so per-row work
        on them is far cheaper than on every row."""
        rows = np.flatnonzero(mask)
        per_query = np.diff(np.searchsorted(rows, self.offsets))
        first = np.concatenate(([0], np.cumsum(per_query)[:-1]))
        query = np.repeat(np.arange(self.nq, dtype=np.int64), per_query)
        position = np.arange(1, rows.size + 1, dtype=np.int64) - np.repeat(first, per_query)
        return rows, query, position

    def hits_within(self, key: Any, make: Callable[[], tuple[np.ndarray, ...]], k: np.ndarray) -> tuple[np.ndarray, ...]:
        """Sparse per-row arrays (query, rank, …, as ``make`` gives them from :meth:`hits` over all rows,
        made once under ``key``) kept to the rows with rank <= k of their query. Rows within k are a
        prefix of each query's rows, so positions from :meth:`hits` stay what a cut at k would give:
        a metric of every k reads the sparse rows, never a cut of every row."""
        if key not in self.cache:
            self.cache[key] = make()
        arrays = self.cache[key]
        query, rank = arrays[0], arrays[1]
        if not k.size or int(k.min()) >= NO_CUTOFF:
            return arrays
        keep = rank <= (k[0] if (k == k[0]).all() else k[query])
        return tuple(a[keep] for a in arrays)

    def sparse_sum(self, values: np.ndarray, query: np.ndarray, position: np.ndarray) -> np.ndarray:
        """Per-query sums of sparse values, added one at a time in rank order, as trec_eval adds
        them: ``((v1 + v2) + v3) + …``. ``position`` is each value's 1-based place in its query
        (from :meth:`hits`); one vector addition per place, over the queries that have one."""
        out = np.zeros(self.nq)
        if values.size == 0:
            return out
        step = np.diff(query)
        if bool((step >= 0).all()) and bool((np.diff(position)[step == 0] > 0).all()):
            # Grouped by query, each in place order (as hits and the ideal lists come): bincount
            # adds the weights one by one in array order, so each query's sum is the same chain.
            return np.bincount(query, weights=values, minlength=self.nq).astype(np.float64, copy=False)
        small = position.astype(np.int16) if int(position.max()) < 2**15 else position
        order = np.argsort(small, kind="stable")  # (a radix sort for 16-bit keys)
        bounds = np.searchsorted(position[order], np.arange(1, int(position.max()) + 2))
        for p in range(bounds.size - 1):
            at = order[bounds[p]:bounds[p + 1]]
            out[query[at]] += values[at]  # one value per query at each place
        return out

    # -- applicability --------------------------------------------------------------------------
    def finish(self, values: np.ndarray, metric: Metric, applicable: np.ndarray | None = None) -> np.ndarray:
        """Apply the metric's scope: NaN where it does not apply (0 in trec mode for answerable-only)."""
        values = np.asarray(values, dtype=np.float64)
        scope = metric.definition.applies
        if scope == "answerable":
            rel = metric.param("rel") if "rel" in metric.definition.params else 1
            ok = self.num_rel(rel) > 0
            if self.trec:
                values = np.where(ok, values, 0.0)
            else:
                values = np.where(ok & self.answerable, values, np.nan)
        elif scope == "no_answer":
            values = np.where(~self.answerable, values, np.nan)
        if applicable is not None:
            values = np.where(applicable, values, np.nan)
        return values


@dataclass
class QueryView:
    """One query, spelled out for reference implementations (plain Python)."""

    ranking: list[str]  # ids in ranked order, rank 1 first
    judgements: dict[str, int]
    k: int  # this query's k when a metric is written without @k (per-query, else default)
    scores: list[float] | None = None
    doc_versions: list[str | None] | None = None
    texts: list[str | None] | None = None
    must_not_retrieve: list[str] | None = None
    as_of: str | None = None
    expected_answer: str | None = None
    entities: list[str] | None = None
    answerable: bool = True
    trec: bool = False
    gold_max_grade: int | None = None
    doc_of: Callable[[str], str] = lambda chunk: chunk
    answer_labels: Any = None  # rankgate.metrics.answers.AnswerLabels, for the answer metrics

    def cutoff(self, metric: Metric, k: int | None) -> int | None:
        if k is not None:
            return k
        if metric.definition.cutoff == "query_k":
            return self.k
        return None

    def top(self, k: int | None) -> list[str]:
        return self.ranking if k is None else self.ranking[:k]

    def relevant(self, rel: int) -> set[str]:
        return {d for d, g in self.judgements.items() if g >= rel}
