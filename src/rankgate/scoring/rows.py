"""The run's rows ranked once and each row's grade: the ranking rule applied, repeated ids dropped (or
refused), the rows laid out query by query in evaluation order and cut at the deepest cutoff the
metrics need, then joined to the gold judgements on integer codes (:func:`judged_context`).

The grade join has a compiled kernel and a numpy reference (:func:`_join_grades_numpy`), which the
tests compare.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any, cast

import numpy as np
import pyarrow as pa

from rankgate._util.arrow import none_contains, take_rows
from rankgate.errors import InputError
from rankgate.io import Gold, Run
from rankgate.metrics import Metric
from rankgate.metrics.context import NO_CUTOFF, EvalContext, JoinCodes
from rankgate.model.ids import item_codes_ordered, segment_duplicates
from rankgate.model.ranking import Reorder, TieEffect, rank_order, tie_effect
from rankgate.scoring.align import QueryAlignment, _map_array

__all__ = ["RankedRows", "judged_context", "ranked_rows"]


@dataclass(frozen=True)
class RankedRows:
    """The run's rows in ranking order, query by query (repeats dropped), cut at the depth needed."""

    run_docs: pa.Array  # the ids the rows are matched on (document ids at doc level)
    gold_codes: np.ndarray  # item code of each judgement
    order: Reorder  # input row of each ranked row (built when asked)
    n_rows: int  # input rows
    offsets: np.ndarray  # CSR over evaluated queries
    row_codes: np.ndarray  # item code of each ranked, kept row
    picked: np.ndarray | None  # ranked row of each kept row, None when every row is kept in order
    depth: int
    query_k: np.ndarray
    dropped_dupes: int
    ties: TieEffect = TieEffect()  # what the other ranking rule would change
    kept: int = 0  # rows left after repeats are dropped

    @cached_property
    def rank(self) -> np.ndarray:
        """Each row's rank in its query, 1-based (made when first read: the compiled metrics need none)."""
        return _ranks(np.diff(self.offsets), int(self.offsets[-1]))


def ranked_rows(g: Gold, r: Run, aligned: QueryAlignment, metric_list: list[Metric], *, k: int, level: str,
                doc_of: Callable[[str], str], dedupe: str, ties: str, full_depth_rows: int) -> RankedRows:
    """Rank the run once, drop repeated ids (or refuse them), lay the rows out query by query in
    evaluation order and cut them at the deepest cutoff the metrics need (runs of at most
    ``full_depth_rows`` rows are not cut: :func:`rankgate.evaluate` passes
    :data:`rankgate.scoring.engine.FULL_DEPTH_ROWS`)."""
    # One pass over the id strings; integer codes from here on.
    run_docs = _map_array(r.r_doc, doc_of) if level == "doc" else r.r_doc
    codes, gold_codes, byte_ordered = item_codes_ordered(run_docs, g.j_doc)

    # Most runs are already ranked, or only runs of tied scores move: then nothing is gathered and the
    # full permutation is built only if something asks for input rows (ids, texts, scores).
    id_keys = codes if byte_ordered else None
    order = rank_order(r.r_query, run_docs, r.r_score, r.r_order, id_keys=id_keys, ties=ties)
    evaluated, eval_pos, run_to_gold = aligned.evaluated, aligned.eval_pos, aligned.run_to_gold
    query_k = np.zeros(evaluated.size, dtype=np.int64)
    kcol = g.field("k")
    if any(v is not None for v in kcol):
        query_k = np.array([kcol[i] or 0 for i in evaluated.tolist()], dtype=np.int64)
    depth = _max_depth(metric_list, query_k, k)
    # (before the codes are put in ranked order: the other rule ranks them from the input order)
    counted = run_to_gold >= 0
    counted[counted] = eval_pos[run_to_gold[counted]] >= 0
    effect = tie_effect(r.r_query, run_docs, r.r_score, r.r_order, order, ties, id_keys=id_keys, counted=counted,
                        depth=None if depth >= NO_CUTOFF else depth)
    codes_sorted = order.apply(codes)
    counts = _row_counts(r.r_query, len(r.query_ids))
    run_off = np.concatenate(([0], np.cumsum(counts)))
    dropped_dupes = 0
    dupes = segment_duplicates(codes_sorted, run_off)
    if dupes.size:
        perm = order.full(codes.size)
        if level != "doc" and dedupe != "first":
            row = int(perm[dupes[0]])
            qi = int(r.r_query[row])
            raise InputError(
                f"lists {run_docs[row].as_py()!r} more than once for query {r.query_ids[qi]!r} "
                f"({dupes.size} repeated ids in all)",
                path=r.source,
                line=None if r.query_lines is None else int(r.query_lines[qi]),
                hint="trec_eval refuses this too; fix the retriever, or pass --dedupe first to keep each id's best rank",
            )
        keep = np.ones(codes_sorted.size, dtype=bool)
        keep[dupes] = False  # a repeat comes after the first, best-ranked occurrence
        perm, codes_sorted = perm[keep], codes_sorted[keep]
        order = Reorder(perm=perm)
        dropped_dupes = 0 if level == "doc" else int(dupes.size)
        counts = np.bincount(r.r_query[perm], minlength=len(r.query_ids))
        run_off = np.concatenate(([0], np.cumsum(counts)))
    run_start = run_off[:-1]

    if codes_sorted.size <= full_depth_rows:
        # Small runs keep every row, so first-relevant ranks (shown when comparing runs) are exact.
        depth = int(NO_CUTOFF)

    seg_start = np.zeros(evaluated.size, dtype=np.int64)
    seg_len = np.zeros(evaluated.size, dtype=np.int64)
    hit = run_to_gold >= 0
    rq_codes = np.flatnonzero(hit)
    pos = eval_pos[run_to_gold[hit]]
    ok = pos >= 0
    seg_start[pos[ok]] = run_start[rq_codes[ok]]
    seg_len[pos[ok]] = np.minimum(counts[rq_codes[ok]], depth)
    offsets = np.concatenate(([0], np.cumsum(seg_len))).astype(np.int64)
    total = int(offsets[-1])
    # Usually every run row is evaluated, in run order: then the ranked rows are used as they are.
    contiguous = total == codes_sorted.size and np.array_equal(seg_start, offsets[:-1])
    if contiguous:
        picked, row_codes = None, codes_sorted
    else:
        picked = np.repeat(seg_start - offsets[:-1], seg_len) + np.arange(total, dtype=np.int64)
        row_codes = codes_sorted[picked]
    return RankedRows(run_docs, gold_codes, order, codes.size, offsets, row_codes, picked, depth, query_k,
                      dropped_dupes, effect, int(codes_sorted.size))


def judged_context(g: Gold, r: Run, aligned: QueryAlignment, rows: RankedRows, *, k: int, trec: bool,
                   doc_of: Callable[[str], str]) -> EvalContext:
    """Each ranked row's grade from the gold judgements, and what metric kernels read."""
    memo: dict[str, np.ndarray] = {}

    def src_rows() -> np.ndarray:
        """Input row of each evaluated row (built on first use)."""
        if "rows" not in memo:
            perm = rows.order.full(rows.n_rows)
            memo["rows"] = perm if rows.picked is None else perm[rows.picked]
        return memo["rows"]

    def doc_list() -> list[str]:
        return take_rows(rows.run_docs, src_rows()).to_pylist()

    def docs_at(at: np.ndarray) -> Any:
        return take_rows(rows.run_docs, src_rows()[at])

    # Gold judgements per evaluated query (CSR), then each ranked row's grade.
    evaluated, eval_pos = aligned.evaluated, aligned.eval_pos
    jpos = eval_pos[g.j_query]
    jm = jpos >= 0
    jsel = jpos[jm]
    judged_grade, judged_codes = g.j_grade[jm], rows.gold_codes[jm]
    if not bool((jsel[1:] >= jsel[:-1]).all()):  # usually the gold set is already in evaluation order
        jorder = np.argsort(jsel, kind="stable")
        judged_grade, judged_codes = judged_grade[jorder], judged_codes[jorder]
    judged_offsets = np.concatenate(([0], np.cumsum(np.bincount(jsel, minlength=evaluated.size)))).astype(np.int64)
    codes = JoinCodes(rows.row_codes, judged_codes)

    def grade() -> np.ndarray:
        """Each ranked row's grade, made when first read (the common metrics need none: they are
        computed from the codes). The row codes are not read again: the grades take their memory."""
        row_codes, codes.rows = codes.rows, None
        assert row_codes is not None
        return _join_grades(rows.offsets, row_codes, judged_offsets, judged_codes, judged_grade, reuse=True)

    cs = np.concatenate(([0], np.cumsum(judged_grade >= 1)))
    num_rel1 = cs[judged_offsets[1:]] - cs[judged_offsets[:-1]]

    def items(name: str) -> Callable[[], list[Any]]:
        col = r.items[name]
        return lambda: [col[i] for i in src_rows().tolist()]

    sel = evaluated.tolist()
    queries: dict[str, list[Any]] = {
        name: [g.field(name)[i] for i in sel]
        for name in ("must_not_retrieve", "as_of", "expected_answer", "entities")
        if name in g.fields
    }
    return EvalContext(
        offsets=rows.offsets,
        rank_source=lambda: rows.rank,
        grade_source=grade,
        judged_offsets=judged_offsets,
        judged_grade=judged_grade,
        query_k=rows.query_k,
        default_k=k,
        answerable=num_rel1 > 0,
        trec=trec,
        gold_max_grade=int(g.j_grade.max()) if g.j_grade.size else 0,
        score_source=(lambda: cast(np.ndarray, r.r_score)[src_rows()]) if r.r_score is not None else None,
        docs=doc_list,
        docs_at=docs_at,
        items={name: items(name) for name in r.items},
        queries=queries,
        doc_of=doc_of,
        ids_lack=lambda text: none_contains(rows.run_docs, text),
        codes=codes,
    )


def _first_relevant(ctx: EvalContext, rows: RankedRows, n: int) -> np.ndarray:
    """Rank of each evaluated query's first relevant row, 0 when none is retrieved."""
    if "first_relevant" in ctx.cache:  # (found by the compiled pass)
        return cast(np.ndarray, ctx.cache["first_relevant"])
    rel_rows, rel_query, nth = ctx.hits(ctx.is_rel(1))
    first_rel = np.zeros(n, dtype=np.int64)
    first_rel[rel_query[nth == 1]] = rows.rank[rel_rows[nth == 1]]
    return first_rel


def _row_counts(query: np.ndarray, n: int) -> np.ndarray:
    """Rows of each of ``n`` query codes: where the codes ascend (a block's do) a binary search for each
    query's first row, else one counting pass over them."""
    if query.size > 1 and bool((query[1:] >= query[:-1]).all()):
        return np.diff(np.searchsorted(query, np.arange(n + 1, dtype=query.dtype)))
    return np.bincount(query, minlength=n)


def _ranks(seg_len: np.ndarray, total: int) -> np.ndarray:
    """1, 2, … within each segment, in one array: ones, a step back at each segment start, cumsum."""
    rank = np.ones(total, dtype=np.int64)
    lens = seg_len[seg_len > 0]
    if lens.size > 1:
        rank[np.cumsum(lens)[:-1]] = 1 - lens[:-1]
    return np.cumsum(rank, out=rank)


def _max_depth(metrics: list[Metric], query_k: np.ndarray, k: int) -> int:
    depth = 0
    for m in metrics:
        d = m.definition
        if m.k is not None:
            depth = max(depth, m.k)
        elif d.cutoff == "query_k":
            depth = max(depth, k, int(query_k.max()) if query_k.size else 0)
        else:
            return int(NO_CUTOFF)  # needs the whole ranking (map, ndcg, mrr without @k, rprec)
    return depth


def _join_grades(offsets: np.ndarray, row_codes: np.ndarray, judged_offsets: np.ndarray,
                 judged_codes: np.ndarray, judged_grade: np.ndarray, *, reuse: bool = False) -> np.ndarray:
    """Grade of every ranked row (NaN if unjudged). Rows and judgements are CSR by evaluated query;
    a judged code of -1 (an id the run never has) matches nothing. ``reuse``: the caller no longer
    needs ``row_codes``, so the grades may be written over them (same size; the kernel reads each
    row's code before it writes that row's grade)."""
    from rankgate._native import kernels

    def i64(a: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(a, dtype=np.int64)

    if kernels is None:
        return _join_grades_numpy(offsets, row_codes, judged_offsets, judged_codes, judged_grade)
    codes = i64(row_codes)
    writable = reuse and codes.flags.writeable and codes.flags.c_contiguous and codes.base is None
    grade = codes.view(np.float64) if writable else np.empty(codes.size)
    kernels.join_grades(i64(offsets), codes, i64(judged_offsets), i64(judged_codes), i64(judged_grade), grade)
    return grade


def _join_grades_numpy(offsets: np.ndarray, row_codes: np.ndarray, judged_offsets: np.ndarray,
                       judged_codes: np.ndarray, judged_grade: np.ndarray) -> np.ndarray:
    """The same join without the compiled kernels: integer keys (query, code), one sorted search
    behind a bit-table filter."""
    grade = np.full(row_codes.size, np.nan)
    nq = offsets.size - 1
    ok = judged_codes >= 0
    if row_codes.size == 0 or not ok.any():
        return grade
    row_query = np.repeat(np.arange(nq, dtype=np.int64), np.diff(offsets))
    jq = np.repeat(np.arange(nq, dtype=np.int64), np.diff(judged_offsets))[ok]
    gcodes = judged_codes[ok]
    width = int(max(row_codes.max(initial=0), gcodes.max(initial=0))) + 1
    if width * (nq + 1) >= 2**62:  # keys would overflow: compact the codes first
        uniq, inv = np.unique(np.concatenate((row_codes, gcodes)), return_inverse=True)
        row_codes, gcodes = inv[: row_codes.size], inv[row_codes.size:]
        width = uniq.size
    gkeys = jq * width + gcodes
    ggrades = judged_grade[ok]
    order = np.argsort(gkeys, kind="stable")
    gkeys, ggrades = gkeys[order], ggrades[order]
    rkeys = row_query * width
    rkeys += row_codes
    # Cheap filter first: a bit table over a hash of the judged keys; only rows whose bit is set
    # (the judged ones, plus a few collisions) are looked up exactly.
    bits = 1 << max(16, min(26, int(gkeys.size * 8).bit_length()))
    table = np.zeros(bits, dtype=bool)
    table[_fold(gkeys.copy(), bits)] = True
    cand = np.flatnonzero(table[_fold(rkeys.copy(), bits)])
    keys = rkeys[cand]
    idx = np.minimum(np.searchsorted(gkeys, keys), gkeys.size - 1)
    match = gkeys[idx] == keys
    grade[cand[match]] = ggrades[idx[match]]
    return grade


def _fold(keys: np.ndarray, bits: int) -> np.ndarray:
    """Fold non-negative int64 keys into [0, bits) in place (xor of the high part into the low)."""
    keys ^= keys >> 23
    keys ^= keys >> 41
    keys &= bits - 1
    return keys
