"""A run scored block by block, with the result of scoring it whole: a large TREC or JSONL file grouped
by query as its reader gives it (:func:`_evaluate_blocks`, one block's rows held at a time), or a large
loaded run cut into blocks of whole queries (:func:`_loaded_blocks`). Two blocks are scored at a time.

A query's values depend on its own rows and judgements only; what spans queries (counts, lists, the
highest grade of the gold set) is summed over the blocks or taken from the whole, and the facts of the
result are built by the same function as for a run scored whole (:func:`rankgate.scoring.facts.result_info`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from rankgate._util.arrow import arrow_of
from rankgate.errors import FileChangedError, RankgateError
from rankgate.io import Gold, Run
from rankgate.io.cost import check_costs
from rankgate.io.resources import check_run_resources
from rankgate.metrics import Metric
from rankgate.model.gold_run import joined_fields, joined_runs
from rankgate.model.ranking import TieEffect, resolve_ties
from rankgate.model.results import EvaluationResult
from rankgate.scoring.align import align_queries
from rankgate.scoring.facts import result_info, scored_result
from rankgate.scoring.rows import _first_relevant, judged_context, ranked_rows
from rankgate.scoring.whole import _check_exp_gain, score_all

__all__: list[str] = []


@dataclass(frozen=True)
class _Streamed:
    """What :func:`_evaluate_blocks` gives: the result and the run's first block, or (``result`` None)
    the whole run, joined from its blocks, when it is short enough to be scored whole."""

    result: EvaluationResult | None
    run: Run


@dataclass(frozen=True)
class _Values:
    """The per-query values of one block's evaluated queries."""

    gold_idx: np.ndarray  # each query's index in the gold set, ascending
    values: dict[str, np.ndarray]  # by metric
    first_rel: np.ndarray  # rank of the first relevant row, 0 when none is retrieved
    answerable: np.ndarray  # the query has a relevant judgement
    definitions: dict[str, str]  # by metric


@dataclass(frozen=True)
class _BlockScore:
    """One block scored: what the result sums over the blocks, in block order, and its values."""

    queries: int  # the block's run queries
    rows: int  # its input rows
    not_in_gold: tuple[str, ...]
    missing: tuple[str, ...]  # evaluated gold queries it does not rank (the last block's: all the run lacks)
    kept: int  # rows left after repeats are dropped
    dropped: int  # repeats dropped
    effect: TieEffect
    rule: str  # the tie rule used
    depth: int  # the rows' cut
    scored: _Values | None  # None when the block has no evaluated query


def _evaluate_blocks(
    g: Gold, blocks: Iterator[Run | None], metric_list: list[Metric], *, k: int, trec: bool, complete: bool,
    level: str, doc_of: Callable[[str], str], dedupe: str, inputs: dict[str, Any], full_depth_rows: int,
    ties: str | None = None,
) -> _Streamed | None:
    """:func:`rankgate.scoring.whole._evaluate_loaded` on a run given as blocks of whole queries (a large
    TREC file grouped by query), holding one block's rows at a time: each block is scored against the
    gold queries it ranks (the last one also against the gold queries no block ranked), and the
    per-query values are put back in gold order.

    None, for the caller to read the run whole, whenever the result could differ or an error is to be
    named: a block not regular, not grouped by query, or sharing a query with an earlier one,
    a gold set with per-query ``k`` (the depth cut would differ per block), no query shared with the
    gold set, an error in a block (such as a repeated id), or nothing relevant retrieved anywhere (the
    id-mismatch check compares the whole run's ids). A run short enough that it is never cut (at most
    ``full_depth_rows`` rows) is kept as its blocks are read and given back whole, joined, for the
    caller to score whole without reading it again."""
    from itertools import repeat

    if any(v is not None for v in g.field("k")):
        return None
    index: dict[str, int] = {}
    cursor = 0  # where the next block's queries start in the gold set, when the run follows its order
    seen = np.zeros(len(g.query_ids), dtype=bool)
    others: set[str] = set()
    parts = _GoldParts(g)
    gold_max = int(g.j_grade.max()) if g.j_grade.size else 0
    scores: list[_BlockScore] = []  # in block order
    run_fields: list[tuple[dict[str, list[Any]], int]] = []  # each block's per-query fields, in block order
    run_gold: list[np.ndarray] = []  # each block's queries' places in the gold set (-1: not in it)
    short: list[Run] | None = []  # every block while the run is short enough to be scored whole
    rows_read = 0

    def score(block: Run, gi: np.ndarray, last: bool) -> _BlockScore:
        """One block scored; nothing shared is touched (blocks are scored two at a time)."""
        sub_idx = np.sort(gi[gi >= 0])
        if last:
            sub_idx = np.sort(np.concatenate((sub_idx, np.flatnonzero(~seen))))
        sub = parts.take(sub_idx)
        rule = resolve_ties(ties, block, trec=trec)
        aligned = align_queries(sub, block, trec=trec, complete=complete, shared=False)
        rows = ranked_rows(sub, block, aligned, metric_list, k=k, level=level, doc_of=doc_of, dedupe=dedupe,
                           ties=rule, full_depth_rows=-1)  # cut as the whole run is (checked below)
        scored = None
        if aligned.evaluated.size:
            ctx = judged_context(sub, block, aligned, rows, k=k, trec=trec, doc_of=doc_of)
            ctx.gold_max_grade = gold_max
            values, definitions = score_all(ctx, metric_list)
            scored = _Values(sub_idx[aligned.evaluated], values, _first_relevant(ctx, rows, aligned.evaluated.size),
                             ctx.answerable, definitions)
            ctx.cache.clear()  # (its cuts refer back to it: a cycle that would keep every block's rows)
        return _BlockScore(len(block.query_ids), len(block), aligned.not_in_gold, aligned.missing, rows.kept,
                           rows.dropped_dupes, rows.ties, rule, rows.depth, scored)

    from collections import deque
    from concurrent.futures import Future, ThreadPoolExecutor

    # Two blocks are scored at a time: most of the work is in numpy and the compiled kernels, which
    # let go of the interpreter lock, so a second core shortens the wall time.
    pool = ThreadPoolExecutor(max_workers=2)
    flying: deque[Future[_BlockScore]] = deque()
    first: Run | None = None
    pending: tuple[Run, np.ndarray] | None = None
    try:
        _check_exp_gain(g, metric_list)  # (its error comes after the run's, as when the run is read whole)
        for block in blocks:
            if block is None or block.items:
                return None
            rows_read += len(block)
            short = short if short is not None and rows_read <= full_depth_rows else None
            if short is not None:
                short.append(block)
            codes = block.r_query
            if codes.size > 1 and not bool((codes[1:] >= codes[:-1]).all()):  # not grouped: say so at once
                return None
            nb = len(block.query_ids)
            if g.query_ids[cursor : cursor + nb] == block.query_ids:  # (usual: no dictionary of gold ids needed)
                gi = np.arange(cursor, cursor + nb, dtype=np.int64)
                cursor += nb
            else:
                index = index or {q: i for i, q in enumerate(g.query_ids)}
                gi = np.fromiter(map(index.get, block.query_ids, repeat(-1)), dtype=np.int64, count=nb)
                cursor = len(g.query_ids) + 1  # (not again)
            known = gi[gi >= 0]
            if seen[known].any():  # a query in two blocks: the file is not grouped by query
                return None
            seen[known] = True
            run_fields.append((block.fields, nb))
            run_gold.append(gi)
            for i in np.flatnonzero(gi < 0).tolist():
                if block.query_ids[i] in others:
                    return None
                others.add(block.query_ids[i])
            if pending is not None:
                if len(flying) == 2:
                    scores.append(flying.popleft().result())
                flying.append(pool.submit(score, *pending, last=False))
            first = first or block
            pending = (block, gi)
        if pending is None or first is None or not seen.any():
            return None
        # The last block (also scored against the gold queries no block ranked, now that every block
        # is read) goes beside the one before it, not after it.
        if len(flying) == 2:
            scores.append(flying.popleft().result())
        flying.append(pool.submit(score, *pending, last=True))
        while flying:
            scores.append(flying.popleft().result())
    except FileChangedError:  # (not a reason to read it again: it is no longer the file that was given)
        raise
    except RankgateError:  # named by the whole run's reading, as it would be without blocks
        return None
    finally:
        for f in flying:
            f.cancel()
        pool.shutdown(wait=True)
        close = getattr(blocks, "close", None)
        if close is not None:  # a generator's read-ahead block and map go now, before a whole read
            close()
    if sum(s.kept for s in scores) <= full_depth_rows:
        whole = None if short is None else joined_runs(short)
        return None if whole is None else _Streamed(None, whole)
    done = [s.scored for s in scores if s.scored is not None]
    if not done:
        return None
    gidx = np.concatenate([d.gold_idx for d in done])
    order = np.argsort(gidx, kind="stable")
    evaluated = gidx[order]
    names = tuple(str(m) for m in metric_list)
    values = {name: np.concatenate([d.values[name] for d in done])[order] for name in names}
    first_rel = np.concatenate([d.first_rel for d in done])[order]
    answerable = np.concatenate([d.answerable for d in done])[order]
    if len(g.j_doc) and answerable.any() and not first_rel.any():
        return None
    last = scores[-1]
    fields = joined_fields(run_fields)  # (the whole run's per-query fields, as one read gives them)
    try:  # (a cost refused here is named, with its line, by the whole read)
        check_costs(fields, first.source if first is not None else "<run>")
        check_run_resources(fields, first.source if first is not None else "<run>")
    except RankgateError:
        return None
    eval_pos = np.full(len(g.query_ids), -1, dtype=np.int64)
    eval_pos[evaluated] = np.arange(evaluated.size, dtype=np.int64)
    effect = TieEffect(differ=sum(s.effect.differ for s in scores),
                       rank_vs_score=sum(s.effect.rank_vs_score for s in scores))
    info = result_info(g, fields, level=level, trec=trec, complete=complete, k=k, depth=last.depth, ties=last.rule,
                       effect=effect, dropped=sum(s.dropped for s in scores), queries=sum(s.queries for s in scores),
                       rows=sum(s.rows for s in scores), run_to_gold=np.concatenate(run_gold), eval_pos=eval_pos,
                       evaluated=evaluated.size)
    result = scored_result(g, evaluated, names, values, first_rel, answerable,
                           missing=tuple(m for s in scores for m in s.missing),  # (the last block's, in gold order)
                           not_in_gold=tuple(q for s in scores for q in s.not_in_gold),
                           definitions=done[-1].definitions, inputs=inputs, info=info)
    return _Streamed(result, first)


def _loaded_blocks(r: Run, rows: int, *, items: bool = True) -> Iterator[Run] | None:
    """A loaded run as blocks of whole queries of about ``rows`` rows (views of its arrays; its per-query
    fields and given ranks cut with them), for :func:`_evaluate_blocks`; None when it is short, not
    grouped by query in code order, or has no scores, or carries per-row columns that a metric reads
    (``items``: some metric may; the blocks carry none) (read whole, as before)."""
    n = len(r)
    q = r.r_query
    if n < 2 * rows or (r.items and items) or r.r_score is None:
        return None
    if not bool((q[1:] >= q[:-1]).all()):
        return None
    count = -(-n // rows)
    rows = -(-n // (count + count % 2))  # an even number of blocks: they are scored two at a time
    cuts = [0]
    while cuts[-1] < n:
        at = min(cuts[-1] + rows, n)
        if at < n:  # forward to the first row of the next query
            at = int(np.searchsorted(q, q[at - 1], side="right"))
        cuts.append(at)
    starts = [int(q[c]) if c < n else len(r.query_ids) for c in cuts]
    starts[0] = 0

    def blocks() -> Iterator[Run]:
        score = r.r_score
        assert score is not None
        for (a, b), (c0, c1) in zip(itertools.pairwise(cuts), itertools.pairwise(starts)):
            yield Run(query_ids=r.query_ids[c0:c1], r_query=q[a:b] - c0, r_doc=r.r_doc.slice(a, b - a),
                      r_score=score[a:b], r_order=None if r.r_order is None else r.r_order[a:b],
                      fields={name: col[c0:c1] for name, col in r.fields.items()}, source=r.source,
                      query_lines=None if r.query_lines is None else r.query_lines[c0:c1], ties=r.ties,
                      notices=r.notices)

    return blocks()


class _GoldParts:
    """Gold sets of some of a gold set's queries, each in one slice of judgements grouped by query."""

    def __init__(self, g: Gold) -> None:
        self.g = g
        jq = g.j_query
        self.order = None if bool((jq[1:] >= jq[:-1]).all()) else np.argsort(jq, kind="stable")
        self.offsets = np.concatenate(([0], np.cumsum(np.bincount(jq, minlength=len(g.query_ids))))).astype(np.int64)

    def take(self, idx: np.ndarray) -> Gold:
        """The queries ``idx`` (ascending) with their judgements in the gold set's order."""
        g = self.g
        starts = self.offsets[idx]
        lens = self.offsets[idx + 1] - starts
        total = int(lens.sum())
        rows = np.repeat(starts - (np.cumsum(lens) - lens), lens) + np.arange(total, dtype=np.int64)
        if self.order is not None:
            rows = self.order[rows]
        sel = idx.tolist()
        if self.order is None and total and int(rows[-1]) - int(rows[0]) == total - 1:
            j_doc = g.j_doc.slice(int(rows[0]), total)  # (usual: the block's judgements are one stretch)
        else:
            j_doc = g.j_doc.take(arrow_of(rows))
        return Gold(
            query_ids=[g.query_ids[i] for i in sel],
            j_query=np.repeat(np.arange(idx.size, dtype=np.int64), lens),
            j_doc=j_doc,
            j_grade=g.j_grade[rows],
            fields={name: [col[i] for i in sel] for name, col in g.fields.items()},
            source=g.source,
        )
