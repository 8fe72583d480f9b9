"""Per-query details for the report: the lists behind the numbers (misses, offending items, stages).

Lists are read in the one ranking order (:func:`rankgate.model.ranking.rank_rows`); nothing here sorts
a run. Only the queries a section shows are materialised, so a 10k-query run stays cheap.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from rankgate.io import Gold, Run
from rankgate._util.arrow import code_counts, take_rows
from rankgate.model.ranking import Reorder, rank_order, resolve_ties
from rankgate.metrics.context import sorted_unique
from rankgate.model.results import EvaluationResult
from rankgate.render.model import Item, Judgement, Miss, NoAnswer, Offence, SourceRow

__all__ = ["GoldIndex", "RankedLists", "misses", "no_answer_items", "offences", "source_rows"]

SNIPPET_WORDS = 24


def snippet(text: str | None, words: int = SNIPPET_WORDS) -> str | None:
    if not text:
        return None
    parts = str(text).split()
    out = " ".join(parts[:words])
    return out + (" …" if len(parts) > words else "")


def strings_at(column: Any, rows: list[int]) -> list[str]:
    """The values of a few rows of an arrow string column (a chunked one taken chunk by chunk)."""
    if not rows:
        return []
    return take_rows(column, np.asarray(rows, dtype=np.int64)).to_pylist()


class GoldIndex:
    """Judgements per query, with grades looked up at the level evaluated (chunk or document).

    Built lazily: a query's judgements become objects only when a section shows that query, and the
    counts every query needs (judged, relevant) are computed on the arrays, so a 100k-query gold set
    costs what the report shows of it."""

    def __init__(self, gold: Gold, level: str, doc_of: Callable[[str], str],
                 query_texts: Mapping[str, str] | None = None) -> None:
        self.gold = gold
        self.query_texts = query_texts or {}  # e.g. a BEIR folder's queries.jsonl, when the gold has no text
        self.level = level
        self.doc_of = doc_of
        self.index = {q: i for i, q in enumerate(gold.query_ids)}
        self.judged = _Judged(gold)
        self._grades: list[dict[str, int] | None] = [None] * len(gold.query_ids)

    def field(self, name: str, qid: str) -> Any:
        col = self.gold.fields.get(name)
        value = None if col is None else col[self.index[qid]]
        if value is None and name == "query":
            return self.query_texts.get(qid)
        return value

    def grades(self, qid: str) -> dict[str, int]:
        """Id -> grade of one query, keyed at the evaluated level (a document keeps its best chunk's grade)."""
        i = self.index[qid]
        got = self._grades[i]
        if got is None:
            got = {}
            for j in self.judged[i]:
                key = j.chunk_id if self.level == "chunk" else self.doc_of(j.chunk_id)
                got[key] = max(got.get(key, j.grade), j.grade)
            self._grades[i] = got
        return got

    def grade(self, qid: str, chunk_id: str) -> int | None:
        key = chunk_id if self.level == "chunk" else self.doc_of(chunk_id)
        return self.grades(qid).get(key)

    def relevant_count(self, qid: str) -> int:
        return sum(1 for g in self.grades(qid).values() if g >= 1)

    def judged_counts(self) -> np.ndarray:
        """Judgements per query (gold order)."""
        return np.bincount(np.asarray(self.gold.j_query, dtype=np.int64), minlength=len(self.gold.query_ids))

    def relevant_counts(self) -> np.ndarray:
        """:meth:`relevant_count` of every query (gold order): distinct ids (at the evaluated level)
        whose best grade is at least 1."""
        g = self.gold
        if self.level != "chunk":
            return np.asarray([self.relevant_count(q) for q in g.query_ids], dtype=np.int64)
        import pyarrow as pa

        from rankgate.model.ids import _fixed_width

        rel = np.flatnonzero(np.asarray(g.j_grade) >= 1)
        docs = g.j_doc.take(pa.array(rel)) if rel.size else g.j_doc.slice(0, 0)
        if isinstance(docs, pa.ChunkedArray):
            docs = docs.combine_chunks()
        numbered = _fixed_width(docs)  # ids such as d000123: the number is the code
        if numbered is not None:
            codes = numbered[2]
        else:
            import pyarrow.compute as pc  # (only here: its import is a tenth of a second)

            enc = pc.dictionary_encode(docs)
            codes = np.asarray(enc.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
        q = np.asarray(g.j_query, dtype=np.int64)[rel]
        width = int(codes.max()) + 1 if codes.size else 1
        pairs = sorted_unique(q * width + codes)  # an id judged twice in one query counts once
        return np.bincount(pairs // width, minlength=len(g.query_ids)).astype(np.int64)


class _Judged:
    """``judged[i]``: the judgements of gold query ``i`` (in file order), made on first use."""

    def __init__(self, gold: Gold) -> None:
        self.gold = gold
        q = np.asarray(gold.j_query, dtype=np.int64)
        self.order = np.argsort(q, kind="stable")
        counts = np.bincount(q, minlength=len(gold.query_ids))
        self.start = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
        self.memo: dict[int, list[Judgement]] = {}

    def __len__(self) -> int:
        return len(self.gold.query_ids)

    def __getitem__(self, i: int) -> list[Judgement]:
        got = self.memo.get(i)
        if got is None:
            rows = self.order[self.start[i]:self.start[i + 1]]
            ids = strings_at(self.gold.j_doc, rows.tolist())
            grades = np.asarray(self.gold.j_grade)[rows].tolist()
            notes = self.gold.notes or None
            got = [Judgement(d, int(gr), None if notes is None else notes[r]) for d, gr, r in zip(ids, grades, rows.tolist())]
            self.memo[i] = got
        return got


class RankedLists:
    """Each query's ranking of a run, in ranking order.

    A run grouped by query (as files are written) is ranked query by query as lists are asked for:
    the report shows a few hundred lists, and a query's ranking depends on its own rows only. Past
    :data:`LAZY_LISTS` lists (a section that reads every query) the whole run is ranked once."""

    LAZY_LISTS = 512

    def __init__(self, run: Run, *, ties: str | None = None) -> None:
        self.run = run
        self.rule = resolve_ties(ties, run)
        q = run.r_query
        self._order: Reorder | None = None
        self._grouped = bool((q[1:] >= q[:-1]).all()) if q.size else False  # (each query's rows together)
        self._lists: dict[int, np.ndarray] = {}
        self._moved: tuple[np.ndarray, np.ndarray] | None = None
        counts = code_counts(q, len(run.query_ids))
        self.count = counts
        self.start = np.concatenate(([0], np.cumsum(counts)))[:-1]
        self.index = {q: i for i, q in enumerate(run.query_ids)}

    @property
    def order(self) -> Reorder:
        """The whole run's ranking as :func:`rank_order` gives it (no whole permutation unless rows
        move between queries), made on first use."""
        if self._order is None:
            r = self.run
            self._order = rank_order(r.r_query, r.r_doc, r.r_score, r.r_order, ties=self.rule)
        return self._order

    @property
    def depth(self) -> int:
        return int(self.count.max()) if self.count.size else 0

    def rows(self, qid: str, depth: int | None = None) -> list[int]:
        i = self.index.get(qid)
        if i is None:
            return []
        n = int(self.count[i]) if depth is None else min(int(self.count[i]), depth)
        s = int(self.start[i])
        if self._grouped and self._order is None and (i in self._lists or len(self._lists) < self.LAZY_LISTS):
            return self._query_rows(i)[:n].tolist()
        return self.rows_at(np.arange(s, s + n, dtype=np.int64)).tolist()

    def _query_rows(self, i: int) -> np.ndarray:
        """Query ``i``'s input rows in ranking order (the run grouped by query): its own rows ranked."""
        got = self._lists.get(i)
        if got is None:
            r = self.run
            s, c = int(self.start[i]), int(self.count[i])
            order = rank_order(r.r_query[s:s + c], r.r_doc.slice(s, c), None if r.r_score is None else r.r_score[s:s + c],
                               None if r.r_order is None else r.r_order[s:s + c], ties=self.rule)
            got = self._lists[i] = order.full(c) + s
        return got

    def rows_at(self, positions: np.ndarray) -> np.ndarray:
        """The input rows at these positions of the ranked run (``rank_rows(...)[positions]``)."""
        o = self.order
        if o.perm is not None:
            return o.perm[positions]
        out = np.asarray(positions, dtype=np.int64).copy()
        if o.rows is not None and o.src is not None and o.rows.size:
            if self._moved is None:
                by = np.argsort(o.rows, kind="stable")
                self._moved = (o.rows[by], o.src[by])
            moved, src = self._moved
            j = np.minimum(np.searchsorted(moved, out), moved.size - 1)
            hit = moved[j] == out
            out[hit] = src[j[hit]]
        return out

    def ids(self, qid: str, depth: int | None = None) -> list[str]:
        return self._ids_at(self.rows(qid, depth))

    def _ids_at(self, rows: list[int]) -> list[str]:
        return strings_at(self.run.r_doc, rows)

    def items(self, qid: str, depth: int | None, gold: GoldIndex | None) -> list[Item]:
        rows = self.rows(qid, depth)
        if not rows:
            return []
        ids = self._ids_at(rows)
        items = self.run.items
        out: list[Item] = []
        seen: set[str] = set()
        for row, d in zip(rows, ids):
            if d in seen:  # a repeated id keeps its best rank (as --dedupe first)
                continue
            seen.add(d)
            score = None if self.run.r_score is None else float(self.run.r_score[row])
            out.append(Item(
                rank=len(out) + 1, chunk_id=d, score=score,
                version=items["doc_version"][row] if "doc_version" in items else None,
                snippet=snippet(items["text"][row]) if "text" in items else None,
                grade=None if gold is None else gold.grade(qid, d),
                source=items["source"][row] if "source" in items else None,
            ))
        return out

    def top_scores(self) -> dict[str, float]:
        """Score of rank 1 of each query with a non-empty list (scored runs only)."""
        if self.run.r_score is None:
            return {}
        some = np.flatnonzero(self.count > 0)
        score = np.asarray(self.run.r_score)
        top = np.maximum.reduceat(score, self.start[some]) if self._grouped and self.run.r_order is None and some.size else None
        if top is not None and not (top == 0).any():
            # Ranked by score (ties only choose among equal scores), rank 1 holds the query's highest
            # score; a zero is left to the ranking (which of 0.0 and -0.0 comes first).
            scores = top.tolist()
        else:
            scores = score[self.rows_at(self.start[some])].tolist()
        ids = self.run.query_ids
        return {ids[i]: s for i, s in zip(some.tolist(), scores)}


def _labels(result: EvaluationResult, i: int, fields: list[str]) -> dict[str, str]:
    out = {}
    for key in fields:
        value = result.fields[key][i]
        if value is not None:
            out[key.removeprefix("tags.")] = str(value)
    return out


def misses(result: EvaluationResult, lists: RankedLists, gold: GoldIndex, *, limit: int, fields: list[str],
           lexical: tuple[EvaluationResult, RankedLists] | None = None) -> tuple[list[Miss], int, int | None]:
    """Answerable queries with no relevant item in the top 10: (shown, total, rescued by the lexical run)."""
    hit = result.values["hit@10"]
    no_answer = set(result.no_answer)  # in trec mode they score 0 rather than n/a; they are not misses
    idx = [i for i, q in enumerate(result.query_ids) if hit[i] == 0.0 and q not in no_answer]
    rescued = None
    lex_hit: dict[str, float] = {}
    lex_rank: dict[str, int] = {}
    if lexical is not None:
        lres, _ = lexical
        li = lres.query_index()
        lhit = lres.values["hit@10"]
        for i in idx:
            j = li.get(result.query_ids[i])
            if j is not None:
                lex_hit[result.query_ids[i]] = float(lhit[j])
                lex_rank[result.query_ids[i]] = int(np.asarray(lres.first_relevant_rank)[j])
        rescued = sum(1 for v in lex_hit.values() if v == 1.0)
    missing = set(result.missing_from_run)
    out = []
    for i in idx[:limit]:
        q = result.query_ids[i]
        ids = lists.ids(q)
        pos: dict[str, int] = {}
        for r, d in enumerate(ids, start=1):
            pos.setdefault(d if gold.level == "chunk" else gold.doc_of(d), r)
        judged: list[Judgement] = []
        for jd in gold.judged[gold.index[q]]:
            key = jd.chunk_id if gold.level == "chunk" else gold.doc_of(jd.chunk_id)
            judged.append(Judgement(jd.chunk_id, jd.grade, jd.note, pos.get(key, 0)))
        judged.sort(key=lambda x: (-x.grade, x.chunk_id))
        lex_items = None
        if lexical is not None:
            lex_items = tuple(lexical[1].items(q, 10, gold))
        out.append(Miss(
            query_id=q, query=gold.field("query", q), labels=_labels(result, i, fields), gold=tuple(judged),
            retrieved=tuple(lists.items(q, 10, gold)), first_relevant_rank=int(np.asarray(result.first_relevant_rank)[i]),
            depth=len(ids), missing_from_run=q in missing, lexical=lex_items, lexical_rank=lex_rank.get(q),
        ))
    return out, len(idx), rescued


def _query_k(gold: GoldIndex, qid: str, default_k: int) -> int:
    k = gold.field("k", qid)
    return int(k) if k else default_k


def offences(result: EvaluationResult, lists: RankedLists, gold: GoldIndex, default_k: int,
             limit: int) -> tuple[list[Offence], list[Offence], int, int, int, int]:
    """Queries whose top k holds must_not_retrieve items / items newer than as_of (up to ``limit`` each),
    then how many there are in all, and how many queries could be checked for each."""
    forb: list[Offence] = []
    stale: list[Offence] = []
    ftotal = stotal = 0
    fvals = result.values.get("forbidden")
    svals = result.values.get("fresh")
    fchecked = 0 if fvals is None else int((~np.isnan(fvals)).sum())
    schecked = 0 if svals is None else int((~np.isnan(svals)).sum())
    for i, q in enumerate(result.query_ids):
        bad_f = fvals is not None and fvals[i] == 1.0
        bad_s = svals is not None and not math.isnan(svals[i]) and svals[i] < 1.0
        ftotal += bad_f
        stotal += bad_s
        if not ((bad_f and len(forb) < limit) or (bad_s and len(stale) < limit)):
            continue
        k = _query_k(gold, q, default_k)
        items = lists.items(q, k, gold)
        text = gold.field("query", q)
        if bad_f and len(forb) < limit:
            banned = set(gold.field("must_not_retrieve", q) or ())
            if gold.level == "doc":
                banned |= {gold.doc_of(b) for b in banned}
            hits = [_flag(it, "must not retrieve") for it in items
                    if it.chunk_id in banned or (gold.level == "doc" and gold.doc_of(it.chunk_id) in banned)]
            forb.append(Offence(q, text, k, gold.field("as_of", q), tuple(hits)))
        if bad_s and len(stale) < limit:
            as_of = str(gold.field("as_of", q))
            hits = [_flag(it, f"newer than as_of {as_of}") for it in items if it.version and str(it.version) > as_of]
            stale.append(Offence(q, text, k, as_of, tuple(hits)))
    return forb, stale, ftotal, stotal, fchecked, schecked


def _flag(item: Item, why: str) -> Item:
    from dataclasses import replace

    return replace(item, flag=why)


def no_answer_items(result: EvaluationResult, lists: RankedLists, gold: GoldIndex, metric: str | None,
                    limit: int) -> list[NoAnswer]:
    vals = result.values.get(metric) if metric else None
    idx = result.query_index()
    out = []
    for q in result.no_answer[:limit]:
        flagged = vals is not None and vals[idx[q]] == 1.0
        out.append(NoAnswer(q, gold.field("query", q), flagged, tuple(lists.items(q, 3, gold))))
    out.sort(key=lambda x: not x.flagged)
    return out


def source_rows(lists: RankedLists, gold: GoldIndex, result: EvaluationResult) -> list[SourceRow]:
    """Per-source contribution over the whole lists: slots, relevant items found, recall via the source."""
    run = lists.run
    if "source" not in run.items:
        return []
    sources = run.items["source"]
    answerable = set(result.query_ids) - set(result.no_answer)
    slots: Counter[str] = Counter()
    found: Counter[str] = Counter()
    recall: dict[str, float] = {}
    only: Counter[str] = Counter()
    for q in run.query_ids:
        if q not in gold.index:
            continue
        rows = lists.rows(q)
        ids = lists._ids_at(rows)
        n_rel = gold.relevant_count(q)
        seen: set[str] = set()
        via: Counter[str] = Counter()
        for row, d in zip(rows, ids):
            src = sources[row] or "(none)"
            slots[src] += 1
            key = d if gold.level == "chunk" else gold.doc_of(d)
            if key in seen:
                continue
            seen.add(key)
            g = gold.grade(q, d)
            if g is not None and g >= 1:
                found[src] += 1
                via[src] += 1
        if q in answerable and n_rel:
            for src, c in via.items():
                recall[src] = recall.get(src, 0.0) + c / n_rel
            if len(via) == 1:
                only[next(iter(via))] += 1
    total_slots = sum(slots.values()) or 1
    total_found = sum(found.values())
    n_ans = len(answerable) or 1
    return [
        SourceRow(src, slots[src], slots[src] / total_slots, found[src],
                  found[src] / total_found if total_found else math.nan, recall.get(src, 0.0) / n_ans, only[src])
        for src in sorted(slots)
    ]


def median(values: Mapping[str, float] | list[float]) -> float:
    xs = list(values.values()) if isinstance(values, Mapping) else list(values)
    return float(np.median(np.asarray(xs, dtype=np.float64))) if xs else math.nan
