"""evaluate(gold, run, metrics) -> EvaluationResult.

The pipeline, each step once: load → rank (the one ranking rule) → align run queries to gold queries
→ drop rows deeper than any requested cutoff → look up each row's grade with one hash join on
integer codes → run every metric's vectorised kernel.

Query set (default): every gold query counts; a query missing from the run scores 0 and is listed in
``missing_from_run`` (trec_eval ``-c``); run queries absent from the gold set are ignored and listed
in ``not_in_gold``; queries with no relevant item are no-answer items, NaN for ranking metrics.
``trec=True`` reproduces trec_eval v10: only queries in both files (all gold queries with
``complete=True``, i.e. ``-c``), and queries whose judgements are all non-relevant score 0.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any, cast

import numpy as np
import pyarrow as pa

from rankgate._util.constraints import COLUMNS, DEDUPE, DOC_MAP, FLAG, K, LEVEL, TEXT, check, plain
from rankgate.io import Gold, Run, load_gold, load_run
from rankgate._util.arrow import arrow_of, none_contains, np_of, strings_of, take_rows
from rankgate.model.ids import item_codes_ordered, segment_duplicates
from rankgate.model.gold_run import joined_fields, joined_runs
from rankgate.model.ranking import Reorder, TieEffect, check_ties, rank_order, resolve_ties, tie_effect
from rankgate.errors import FileChangedError, InputError, RankgateError, UsageError
from rankgate.metrics import Metric, parse_metrics
from rankgate.metrics.context import NO_CUTOFF, EvalContext, JoinCodes
from rankgate.metrics.ranking import compiled_values
from rankgate.model.results import EvaluationResult
from rankgate.scoring.options import Scoring, load_doc_map

__all__ = ["API_METRICS", "DEFAULT_K", "doc_mapper", "evaluate", "ties_lines"]

DEFAULT_K = 5
API_METRICS: tuple[str, ...] = ("recall@5", "mrr", "ndcg@10")
"""The metrics of :func:`evaluate` when none are given (the command line's default is longer: DEFAULT_METRICS)."""
FULL_DEPTH_ROWS = 2_000_000  # runs up to this many rows are never cut at the deepest cutoff
# Per-query run fields kept as they were logged, for layouts that report them (--layout v0).
RUN_VALUE_FIELDS = ("latency_ms", "errors", "retries", "privacy_leak")
SEGMENT_FIELDS = ("intent", "segment", "source_of_query", "corpus_version", "as_of", "created")


def evaluate(
    gold: Any,
    run: Any,
    metrics: str | Sequence[str | Metric] = API_METRICS,
    *,
    scoring: Scoring | None = None,
    k: int | None = None,
    trec: bool = False,
    complete: bool = False,
    level: str = "chunk",
    doc_sep: str = "#",
    doc_map: dict[str, str] | None = None,
    dedupe: str = "error",
    gold_format: str | None = None,
    run_format: str | None = None,
    ties: str | None = None,
    columns: Mapping[str, str] | None = None,
) -> EvaluationResult:
    """Score ``run`` against ``gold`` and return per-query values and means.

    Args:
        gold: a path (JSONL, TREC qrels, BEIR tsv/folder, Parquet), a :class:`~rankgate.io.Gold`,
            a ``{query_id: {doc_id: grade}}`` dict, a list of gold records, or a long table (a pandas
            DataFrame with ``query_id``, ``chunk_id``, ``grade`` columns).
        run: a path (JSONL, TREC, Parquet), a :class:`~rankgate.io.Run`, a
            ``{query_id: {doc_id: score}}`` or ``{query_id: [doc_id, ...]}`` dict, run records, or a long
            table (``query_id``, ``chunk_id``, ``score`` or ``rank``). numpy scalars count as the Python
            values they stand for, here and in every argument; an argument of the wrong type is a
            :class:`~rankgate.errors.UsageError` naming it.
        metrics: specs such as ``"recall@5"``, ``"ndcg(gain=exp)@10"`` (a list or one comma string).
        k: cutoff for metrics written without ``@k`` that need one (per-query ``k`` wins); default 5.
        trec: trec_eval v10 semantics (see module docs); ``complete`` adds ``-c``.
        level: ``"chunk"`` (ids as given) or ``"doc"`` (map ids to parent documents; a document
            counts once, at its best rank; its grade is the best grade of its chunks).
        doc_sep: separator between document id and chunk suffix (``doc_123#p6``) for ``level="doc"``.
        doc_map: explicit chunk id -> document id mapping (overrides ``doc_sep``).
        dedupe: ``"error"`` (a duplicate id within one query's ranking is an input error) or
            ``"first"`` (keep its best-ranked occurrence; the count dropped is in ``info``).
        gold_format, run_format: force a format (see :data:`rankgate.io.GOLD_FORMATS`); detected
            from the file otherwise.
        ties: the ranking rule: ``"id"`` (trec_eval's: score descending, equal scores by id
            descending) or ``"input"`` (the producer's order: explicit ranks when every item of a query
            has one, else score descending with equal scores in list or row order). Default (None):
            ``"id"`` for TREC runs, score dicts and ``trec=True``, ``"input"`` for every other format;
            see :mod:`rankgate.model.ranking`. ``info["ties"]`` is the rule used, ``info["ties_differ"]``
            the number of evaluated queries the other rule would order differently up to the deepest cutoff.
        columns: for CSV/TSV files with a header, which column holds each field, e.g.
            ``{"query_id": "qid", "chunk_id": "doc", "score": "s"}``.
        scoring: all of the above as one value (:class:`rankgate.scoring.options.Scoring`, as the flows and
            the command line hold them: its ``doc_map`` is a file, its ``columns`` the ``--columns`` text). Its
            ``metrics`` apply unless ``metrics`` is given; the other keywords must then be left out, except
            ``doc_map``, a mapping already read, which wins over the scoring's file.
    """
    if scoring is not None:
        loose = {"k": (k, None), "trec": (trec, False), "complete": (complete, False), "level": (level, "chunk"),
                 "doc_sep": (doc_sep, "#"), "dedupe": (dedupe, "error"), "gold_format": (gold_format, None),
                 "run_format": (run_format, None), "ties": (ties, None), "columns": (columns, None)}
        both = [name for name, (value, default) in loose.items() if value is not default and value != default]
        if not isinstance(scoring, Scoring):
            raise UsageError(f"The 'scoring' parameter of evaluate must be a rankgate Scoring; got "
                             f"{type(scoring).__name__}")
        if both:
            raise UsageError(f"evaluate takes the scoring options as scoring= or as keywords, not both: drop "
                             f"{', '.join(both)} or set {'it' if len(both) == 1 else 'them'} in the Scoring")
        metrics = scoring.metrics if metrics is API_METRICS else metrics
        k, trec, complete, level, doc_sep, dedupe = (scoring.k, scoring.trec, scoring.complete, scoring.level,
                                                     scoring.doc_sep, scoring.dedupe)
        gold_format, run_format, ties, columns = (scoring.gold_format, scoring.run_format, scoring.ties,
                                                  scoring.column_map())
        if doc_map is None:
            doc_map = load_doc_map(scoring.doc_map)
    # Every argument checked at the door (a UsageError naming it), numpy scalars taken as their values.
    metric_list = parse_metrics(metrics, caller="evaluate")
    if k is not None:
        k = check(K, k, caller="evaluate")
    trec, complete = (check(FLAG, v, caller="evaluate", name=n) for n, v in (("trec", trec), ("complete", complete)))
    level = check(LEVEL, level, caller="evaluate")
    dedupe = check(DEDUPE, dedupe, caller="evaluate")
    doc_sep = check(TEXT, doc_sep, caller="evaluate", name="doc_sep")
    doc_map = check(DOC_MAP, doc_map, caller="evaluate")
    columns = check(COLUMNS, columns, caller="evaluate")
    gold_format, run_format = (check(TEXT, v, caller="evaluate", name=n)
                               for n, v in (("gold_format", gold_format), ("run_format", run_format)))
    if ties is not None:
        ties = check_ties(plain(ties))
    if level == "doc" and doc_map is None and not (isinstance(doc_sep, str) and doc_sep):
        # An empty separator would make every chunk its own document: doc level would silently be chunk level.
        raise UsageError(f"doc_sep (--doc-sep) must be a non-empty string for level='doc'; got {doc_sep!r} "
                         "(give the separator between document id and chunk part, e.g. '#', or a doc map)")
    load_opts: dict[str, Any] = {"columns": dict(columns)} if columns else {}

    inputs: dict[str, Any] = {}
    hashes: dict[str, Any] = {}
    # The gold set is parsed while the run is (pyarrow's readers free the GIL); the files are hashed
    # afterwards, on the core that the mostly single-threaded evaluation leaves free.
    with ThreadPoolExecutor(max_workers=2) as pool:
        gold_future = pool.submit(load_gold, gold, format=gold_format, **load_opts)
        doc_of = doc_mapper(doc_sep, doc_map)
        opts: dict[str, Any] = {"k": k or DEFAULT_K, "trec": trec, "complete": complete, "level": level,
                                "doc_of": doc_of, "dedupe": dedupe, "inputs": inputs, "ties": ties}
        from rankgate.io.inputs import gold_files, run_files, sha256_files

        def hash_inputs() -> None:
            # The files actually read: a BEIR folder given as the gold set is hashed as its qrels file,
            # a Hugging Face save_to_disk folder as its Arrow files.
            for name, files in (("gold", gold_files(gold)), ("run", run_files(run))):
                if files and name not in hashes:
                    hashes[name] = pool.submit(sha256_files, files)

        # A large TREC run grouped by query is read and scored block by block, with the same result.
        from rankgate.io.load import gold_first, run_blocks

        # (a JSONL run's item texts and versions are left out of its blocks when nothing reads them)
        keep_items = reads_items(metric_list)
        blocks = run_blocks(run, format=run_format, columns=columns, items=keep_items)
        streamed = None
        if blocks is not None:
            from rankgate.io.nearmiss import compares_texts
            from rankgate.io.source import Resumed

            parts = blocks
            try:  # the first block is read here while the gold set is read on its thread
                g, resumed = gold_first(gold_future, lambda: Resumed.take_first(parts))
            except BaseException:  # (the gold set's error)
                close = getattr(parts, "close", None)
                if close is not None:
                    close()
                raise
            hash_inputs()
            try:
                # (the near-miss check reads the run's texts when the gold set has reference texts)
                if keep_items or not compares_texts(g):
                    streamed = _evaluate_blocks(_gold_to_docs(g, doc_of) if level == "doc" else g, resumed,
                                                metric_list, **opts)
            finally:  # (the map and a block read ahead go before a whole read, also when no block was scored)
                resumed.close()
        if streamed is not None:
            r = streamed.run
        else:
            g, r = gold_first(gold_future, lambda: _read_run(run, run_format, load_opts, keep_items, trec=trec))
            hash_inputs()
        notices = input_notices(g, r)
        from rankgate._native import slow_notice

        # (once, with how the inputs were read; a run read in blocks: its rows, counted as they were scored)
        rows = streamed.result.info["run"]["rows"] if streamed is not None and streamed.result is not None else len(r)
        slow = slow_notice(rows)
        if slow is not None:
            notices.append(slow)
        texts = query_texts(g)
        from rankgate.io.nearmiss import near_misses

        near = near_misses(g, r)
        if streamed is not None and streamed.result is not None:
            result = streamed.result
        else:
            if level == "doc":
                g = _gold_to_docs(g, doc_of)
            # A large run grouped by query is scored in blocks too, two at a time, with the same result.
            in_blocks = _loaded_blocks(r, MEMORY_BLOCK_ROWS, items=keep_items)
            got = None if in_blocks is None else _evaluate_blocks(g, in_blocks, metric_list, **opts)
            result = got.result if got is not None and got.result is not None else \
                _evaluate_loaded(g, r, metric_list, **opts)
        read = {"notices": notices, "near_misses": near, "query_texts": texts}  # what reading the inputs found
        if any(read.values()):
            result = replace(result, info={**result.info, **{key: v for key, v in read.items() if v}})
        for name, obj in (("gold", g), ("run", r)):
            entry: dict[str, Any] = {"path": obj.source}
            if name in hashes:
                entry["sha256"] = hashes[name].result()
            inputs[name] = entry
    return result


def doc_mapper(sep: str, mapping: dict[str, str] | None) -> Callable[[str], str]:
    """Chunk id -> document id: through ``mapping`` when given (ids it lacks are their own document),
    else the part before the first ``sep`` (an empty ``sep``: every chunk is its own document)."""
    if mapping is not None:
        return lambda chunk: mapping.get(chunk, chunk)
    if not sep:
        def same(chunk: str) -> str:
            return chunk

        same.own_document = True  # type: ignore[attr-defined]  # every chunk is its own document
        return same

    def before_sep(chunk: str) -> str:
        return chunk.split(sep, 1)[0]

    before_sep.split_sep = sep  # type: ignore[attr-defined]  # lets column code split whole arrays at once
    return before_sep


_doc_mapper = doc_mapper  # the name earlier releases used


def _map_array(arr: pa.Array | pa.ChunkedArray, doc_of: Callable[[str], str]) -> pa.Array:
    import pyarrow.compute as pc

    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    enc = pc.dictionary_encode(arr)
    mapped = strings_of([doc_of(x) for x in enc.dictionary.to_pylist()])
    return mapped.take(enc.indices)


def _gold_to_docs(g: Gold, doc_of: Callable[[str], str]) -> Gold:
    """Document-level gold: each (query, document) keeps the best grade of its chunks."""
    import pyarrow.compute as pc

    docs = _map_array(g.j_doc, doc_of)
    enc = pc.dictionary_encode(docs)
    codes = np_of(enc.indices, np.int64)
    keys = g.j_query.astype(np.int64) * (len(enc.dictionary) + 1) + codes
    order = np.lexsort((-g.j_grade, keys))
    first = np.ones(order.size, dtype=bool)
    first[1:] = keys[order][1:] != keys[order][:-1]
    keep = np.sort(order[first])
    fields = dict(g.fields)
    if "must_not_retrieve" in fields:
        fields["must_not_retrieve"] = [None if v is None else sorted({doc_of(x) for x in v}) for v in fields["must_not_retrieve"]]
    return Gold(g.query_ids, g.j_query[keep], docs.take(arrow_of(keep)), g.j_grade[keep], fields, None, g.source)


MAX_EXP_GRADE = 64
"""The highest grade ``gain=exp`` takes: 2^64 - 1 summed over any real list stays a finite double, while
2^1024 is beyond any double and would turn the metric into "no value"."""


def _read_run(run: Any, run_format: str | None, load_opts: dict[str, Any], keep_items: bool, *,
              trec: bool = False) -> Run:
    """The run read whole: a JSONL file whose item texts no metric reads with its texts left in the
    file (:func:`rankgate.io.load.load_run_lazy_texts`: the same values when something asks), else
    as :func:`load_run` reads it; ``trec``: a TREC run's lines as trec_eval reads them (text after the
    sixth field ignored, :func:`rankgate.io.trec.trec_eval_lines`)."""
    from rankgate.io.load import load_run_lazy_texts
    from rankgate.io.trec import trec_eval_lines

    lazy = None if keep_items else load_run_lazy_texts(run, format=run_format, **load_opts)
    if lazy is not None:
        return lazy
    with trec_eval_lines(trec):
        return load_run(run, format=run_format, **load_opts)


def reads_items(metric_list: Sequence[Metric]) -> bool:
    """Whether a metric may read the run's item columns (texts, versions): one that says it needs one
    (``needs``), or one defined outside rankgate (its needs are its author's word, so it gets them all)."""
    return any(m.definition.needs or not type(m.definition).__module__.startswith("rankgate.") for m in metric_list)


def _check_exp_gain(g: Gold, metric_list: Sequence[Metric]) -> None:
    """Refuse grades whose exponential gain cannot be a number, before a value goes missing silently."""
    if g.j_grade.size == 0 or int(g.j_grade.max()) <= MAX_EXP_GRADE:
        return
    exp = [m for m in metric_list if m.name == "ndcg" and m.param("gain") == "exp"]
    if not exp:
        return
    row = int(np.argmax(g.j_grade > MAX_EXP_GRADE))
    raise InputError(
        f"holds grade {int(g.j_grade[row])} for {g.j_doc[row].as_py()!r} in query "
        f"{g.query_ids[int(g.j_query[row])]!r}; {exp[0]} takes grades up to {MAX_EXP_GRADE} (gain 2^g - 1)",
        path=g.source, field="grade",
        hint="use linear gain (the default), or map the grades onto a small scale such as 0-3",
    )


@dataclass(frozen=True)
class QueryAlignment:
    """Which queries are evaluated, in gold order, and how the run's queries map onto them."""

    run_to_gold: np.ndarray  # gold index of each run query, -1 when the gold set lacks it
    evaluated: np.ndarray  # gold indices evaluated, ascending
    eval_pos: np.ndarray  # per gold query: its place among the evaluated ones, -1 if not evaluated
    in_run: np.ndarray  # per gold query: the run ranks it
    not_in_gold: tuple[str, ...]
    missing: tuple[str, ...]  # evaluated gold queries the run does not rank (they score 0)


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


def align_queries(g: Gold, r: Run, *, trec: bool, complete: bool, shared: bool = True) -> QueryAlignment:
    """The evaluated queries: all gold queries, or in trec mode (without ``complete``) those the run ranks.
    ``shared``: refuse a run that shares no query id with the gold set (off for one block of a run)."""
    nq = len(r.query_ids)
    if nq == len(g.query_ids) and r.query_ids == g.query_ids:  # the usual case: the same queries in the same order
        run_to_gold = np.arange(nq, dtype=np.int64)
    else:
        from itertools import repeat

        gold_index = {q: i for i, q in enumerate(g.query_ids)}
        run_to_gold = np.fromiter(map(gold_index.get, r.query_ids, repeat(-1)), dtype=np.int64, count=nq)
    not_in_gold = tuple(r.query_ids[i] for i in np.flatnonzero(run_to_gold < 0).tolist())
    in_run = np.zeros(len(g.query_ids), dtype=bool)
    in_run[run_to_gold[run_to_gold >= 0]] = True
    if trec and not complete:
        evaluated = np.flatnonzero(in_run)
    else:
        evaluated = np.arange(len(g.query_ids), dtype=np.int64)
    if shared and not in_run.any():  # every gold query "missing": almost surely ids in two different shapes
        raise InputError(
            "shares no query id with the gold set", path=r.source,
            hint=f"gold ids look like {g.query_ids[0]!r}, run ids like {r.query_ids[0]!r}",
        )
    eval_pos = np.full(len(g.query_ids), -1, dtype=np.int64)
    eval_pos[evaluated] = np.arange(evaluated.size)
    missing = tuple(g.query_ids[i] for i in evaluated[~in_run[evaluated]].tolist())
    return QueryAlignment(run_to_gold, evaluated, eval_pos, in_run, not_in_gold, missing)


def ranked_rows(g: Gold, r: Run, aligned: QueryAlignment, metric_list: list[Metric], *, k: int, level: str,
                doc_of: Callable[[str], str], dedupe: str, ties: str, full_depth_rows: int | None = None) -> RankedRows:
    """Rank the run once, drop repeated ids (or refuse them), lay the rows out query by query in
    evaluation order and cut them at the deepest cutoff the metrics need (runs of at most
    ``full_depth_rows`` rows, default :data:`FULL_DEPTH_ROWS`, are not cut)."""
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

    if codes_sorted.size <= (FULL_DEPTH_ROWS if full_depth_rows is None else full_depth_rows):
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


def score_all(ctx: EvalContext, metric_list: list[Metric]) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """Every metric's per-query values and its definition, in the order asked."""
    values = compiled_values(ctx, metric_list)  # the common ranking metrics, in one compiled pass
    for metric in _deepest_first([m for m in metric_list if str(m) not in values]):  # a shallower cut is then made from a deeper one
        if metric.k is not None:
            ctx.drop_cuts_deeper_than(metric.k)
        values[str(metric)] = metric.definition.compute(ctx, metric, ctx.k_for(metric))
    values = {str(m): values[str(m)] for m in metric_list}
    return values, {str(m): m.definition.describe(m) for m in metric_list}


def _evaluate_loaded(
    g: Gold, r: Run, metric_list: list[Metric], *, k: int, trec: bool, complete: bool, level: str,
    doc_of: Callable[[str], str], dedupe: str, inputs: dict[str, Any], ties: str | None = None,
) -> EvaluationResult:
    _check_exp_gain(g, metric_list)
    ties = resolve_ties(ties, r, trec=trec)
    aligned = align_queries(g, r, trec=trec, complete=complete)
    rows = ranked_rows(g, r, aligned, metric_list, k=k, level=level, doc_of=doc_of, dedupe=dedupe, ties=ties)
    ctx = judged_context(g, r, aligned, rows, k=k, trec=trec, doc_of=doc_of)
    values, definitions = score_all(ctx, metric_list)
    return _result(g, r, aligned, rows, ctx, tuple(str(m) for m in metric_list), values, definitions, level=level,
                   trec=trec, complete=complete, k=k, ties=ties, inputs=inputs)


MEMORY_BLOCK_ROWS = 1_000_000
"""Rows of a block when a loaded run of at least twice as many rows is scored block by block."""


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


@dataclass(frozen=True)
class _Streamed:
    """What :func:`_evaluate_blocks` gives: the result and the run's first block, or (``result`` None)
    the whole run, joined from its blocks, when it is short enough to be scored whole."""

    result: EvaluationResult | None
    run: Run


def _evaluate_blocks(
    g: Gold, blocks: Iterator[Run | None], metric_list: list[Metric], *, k: int, trec: bool, complete: bool,
    level: str, doc_of: Callable[[str], str], dedupe: str, inputs: dict[str, Any], ties: str | None = None,
) -> _Streamed | None:
    """:func:`_evaluate_loaded` on a run given as blocks of whole queries (a large TREC file grouped by
    query), holding one block's rows at a time: each block is scored against the gold queries it
    ranks (the last one also against the gold queries no block ranked), and the per-query values are
    put back in gold order. A query's values depend on its own rows and judgements only; what spans
    queries (counts, lists, the highest grade of the gold set) is summed or taken from the whole.

    None, for the caller to read the run whole, whenever the result could differ or an error is to be
    named: a block not regular, not grouped by query, or sharing a query with an earlier one,
    a gold set with per-query ``k`` (the depth cut would differ per block), no query shared with the
    gold set, an error in a block (such as a repeated id), or nothing relevant retrieved anywhere (the
    id-mismatch check compares the whole run's ids). A run short enough that it is never cut (at most
    :data:`FULL_DEPTH_ROWS` rows) is kept as its blocks are read and given back whole, joined, for the
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
    done: list[tuple[np.ndarray, dict[str, np.ndarray], np.ndarray, np.ndarray]] = []
    not_in_gold: list[str] = []
    missing: list[str] = []
    count = {"queries": 0, "rows": 0, "kept": 0, "dupes": 0, "differ": 0, "clash": 0}
    facts: dict[str, Any] = {}
    run_fields: list[tuple[dict[str, list[Any]], int]] = []  # each block's per-query fields, in block order
    run_gold: list[np.ndarray] = []  # each block's queries' places in the gold set (-1: not in it)
    short: list[Run] | None = []  # every block while the run is short enough to be scored whole
    rows_read = 0

    def score(block: Run, gi: np.ndarray, last: bool) -> tuple[Any, ...]:
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
            scored = (sub_idx[aligned.evaluated], values, _first_relevant(ctx, rows, aligned.evaluated.size),
                      ctx.answerable), definitions
            ctx.cache.clear()  # (its cuts refer back to it: a cycle that would keep every block's rows)
        return block, aligned.not_in_gold, aligned.missing, rows.kept, rows.dropped_dupes, rows.ties, rule, \
            rows.depth, scored

    def merge(part: tuple[Any, ...]) -> None:  # in block order
        block, outside, absent, kept, dupes, tie_effect, rule, depth, scored = part
        not_in_gold.extend(outside)
        missing.extend(absent)
        count["queries"] += len(block.query_ids)
        count["rows"] += len(block)
        count["kept"] += kept
        count["dupes"] += dupes
        count["differ"] += tie_effect.differ
        count["clash"] += tie_effect.rank_vs_score
        facts.update(ties=rule, depth=depth)
        if scored is not None:
            done.append(scored[0])
            facts["definitions"] = scored[1]

    from collections import deque
    from concurrent.futures import Future, ThreadPoolExecutor

    # Two blocks are scored at a time: most of the work is in numpy and the compiled kernels, which
    # let go of the interpreter lock, so a second core shortens the wall time.
    pool = ThreadPoolExecutor(max_workers=2)
    flying: deque[Future[tuple[Any, ...]]] = deque()
    first: Run | None = None
    pending: tuple[Run, np.ndarray] | None = None
    try:
        _check_exp_gain(g, metric_list)  # (its error comes after the run's, as when the run is read whole)
        for block in blocks:
            if block is None or block.items:
                return None
            rows_read += len(block)
            short = short if short is not None and rows_read <= FULL_DEPTH_ROWS else None
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
                    merge(flying.popleft().result())
                flying.append(pool.submit(score, *pending, last=False))
            first = first or block
            pending = (block, gi)
        if pending is None or first is None or not seen.any():
            return None
        # The last block (also scored against the gold queries no block ranked, now that every block
        # is read) goes beside the one before it, not after it.
        if len(flying) == 2:
            merge(flying.popleft().result())
        flying.append(pool.submit(score, *pending, last=True))
        while flying:
            merge(flying.popleft().result())
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
    if count["kept"] <= FULL_DEPTH_ROWS:
        whole = None if short is None else joined_runs(short)
        return None if whole is None else _Streamed(None, whole)
    if not done:
        return None
    gidx = np.concatenate([d[0] for d in done])
    order = np.argsort(gidx, kind="stable")
    evaluated = gidx[order]
    names = tuple(str(m) for m in metric_list)
    values = {name: np.concatenate([d[1][name] for d in done])[order] for name in names}
    first_rel = np.concatenate([d[2] for d in done])[order]
    answerable = np.concatenate([d[3] for d in done])[order]
    if len(g.j_doc) and answerable.any() and not first_rel.any():
        return None
    depth = facts["depth"]
    fields = joined_fields(run_fields)  # (the whole run's per-query fields, as one read gives them)
    info: dict[str, Any] = {
        "level": level,
        "trec": trec,
        "complete": complete or not trec,
        "default_k": k,
        "evaluated_depth": None if depth >= NO_CUTOFF else depth,
        "duplicates_dropped": count["dupes"],
        "ties": facts["ties"],
        "ties_differ": count["differ"],
        "run": _run_facts_of(count["queries"], count["rows"], fields),
        "gold": _gold_facts(g),
    }
    if count["clash"]:
        info["rank_vs_score"] = count["clash"]
    if fields:  # (as the whole run's: the values logged per query, in evaluation order)
        eval_pos = np.full(len(g.query_ids), -1, dtype=np.int64)
        eval_pos[evaluated] = np.arange(evaluated.size, dtype=np.int64)
        _put_run_values(info, fields, np.concatenate(run_gold), eval_pos, evaluated.size)
    sel = evaluated.tolist()
    qids = tuple(g.query_ids[i] for i in sel)
    result = EvaluationResult(
        query_ids=qids,
        metric_names=names,
        values=values,
        fields=_segments(g, sel),
        first_relevant_rank=first_rel,
        missing_from_run=tuple(missing),  # (the last block's, in gold order)
        not_in_gold=tuple(not_in_gold),
        no_answer=tuple(q for q, a in zip(qids, answerable.tolist()) if not a),
        definitions=facts["definitions"],
        inputs=inputs,
        info=info,
    )
    return _Streamed(result, first)


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


def _result(g: Gold, r: Run, aligned: QueryAlignment, rows: RankedRows, ctx: EvalContext, names: tuple[str, ...],
            values: dict[str, np.ndarray],
            definitions: dict[str, str], *, level: str, trec: bool, complete: bool, k: int, ties: str,
            inputs: dict[str, Any]) -> EvaluationResult:
    """The result: values, first relevant ranks, coverage lists and the facts reports show."""
    evaluated = aligned.evaluated
    first_rel = _first_relevant(ctx, rows, evaluated.size)
    sel = evaluated.tolist()
    qids = tuple(g.query_ids[i] for i in sel)
    info: dict[str, Any] = {
        "level": level,
        "trec": trec,
        "complete": complete or not trec,
        "default_k": k,
        "evaluated_depth": None if rows.depth >= NO_CUTOFF else rows.depth,
        "duplicates_dropped": rows.dropped_dupes,
        "ties": ties,
        "ties_differ": rows.ties.differ,
        "run": _run_facts_of(len(r.query_ids), len(r), r.fields),
        "gold": _gold_facts(g),
    }
    if rows.ties.rank_vs_score:
        info["rank_vs_score"] = rows.ties.rank_vs_score
    answerable = ctx.answerable
    if len(rows.run_docs) and len(g.j_doc) and answerable.any() and not first_rel.any():
        unmatched = _id_mismatch(rows.run_docs, g.j_doc)  # nothing relevant anywhere: did any id match at all?
        if unmatched:
            info["id_mismatch"] = unmatched
    _put_run_values(info, r.fields, aligned.run_to_gold, aligned.eval_pos, evaluated.size)
    return EvaluationResult(
        query_ids=qids,
        metric_names=names,
        values=values,
        fields=_segments(g, sel),
        first_relevant_rank=first_rel,
        missing_from_run=aligned.missing,
        not_in_gold=aligned.not_in_gold,
        no_answer=tuple(q for q, a in zip(qids, answerable.tolist()) if not a),
        definitions=definitions,
        inputs=inputs,
        info=info,
    )


def _first_relevant(ctx: EvalContext, rows: RankedRows, n: int) -> np.ndarray:
    """Rank of each evaluated query's first relevant row, 0 when none is retrieved."""
    if "first_relevant" in ctx.cache:  # (found by the compiled pass)
        return cast(np.ndarray, ctx.cache["first_relevant"])
    rel_rows, rel_query, nth = ctx.hits(ctx.is_rel(1))
    first_rel = np.zeros(n, dtype=np.int64)
    first_rel[rel_query[nth == 1]] = rows.rank[rel_rows[nth == 1]]
    return first_rel


def query_texts(g: Gold) -> dict[str, str] | None:
    """Question text by query id, for the queries whose id is only a hash of their question (a RAG
    tool's samples without ids: ``q:…``), so that outputs can show the question; None when there are none.
    A mapping, not a list: it stays right for a subset of the queries."""
    if "query" not in g.fields or not any(q.startswith("q:") for q in g.query_ids):
        return None
    texts = {q: t for q, t in zip(g.query_ids, g.field("query")) if q.startswith("q:") and isinstance(t, str)}
    return texts or None


def input_notices(g: Gold, r: Run) -> list[str]:
    """What the readers of the two inputs want said, each sentence once, the gold set's first."""
    return list(dict.fromkeys([*getattr(g, "notices", ()), *getattr(r, "notices", ())]))


def _deepest_first(metrics: list[Metric]) -> list[Metric]:
    """The metrics with an ``@k`` by descending k (stable), then the rest: each metric's values do not
    depend on the order, and the rows of a cut at k are taken from the cut just deeper."""
    return sorted(metrics, key=lambda m: -m.k if m.k is not None else 0)


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


def _segments(g: Gold, sel: list[int]) -> dict[str, tuple[str | None, ...]]:
    out: dict[str, tuple[str | None, ...]] = {}
    for name in SEGMENT_FIELDS:
        if name in g.fields:
            out[name] = tuple(g.fields[name][i] for i in sel)
    tags = g.fields.get("tags")
    if tags:
        names = sorted({t for d in tags if d for t in d})
        for t in names:
            out[f"tags.{t}"] = tuple((tags[i] or {}).get(t) for i in sel)
    not_segments = {"tags", "query", "k", "expected_answer", "entities", "must_not_retrieve", "no_answer"}
    for name, col in g.fields.items():  # other scalar fields the gold set carries (difficulty, owner …)
        if name not in out and name not in not_segments:
            out[name] = tuple(None if col[i] is None else str(col[i]) for i in sel)
    return out


def _distinct(values: list[Any]) -> list[Any]:
    """The distinct values (None aside), each once, in the order of their JSON text."""
    import json

    if set(map(type, values)) <= {str, type(None)}:  # (usual: a version or a name per query) one text per string
        return [v for _, v in sorted((json.dumps(v), v) for v in set(values) if v is not None)]
    seen: dict[str, Any] = {}
    for v in values:
        if v is not None:
            seen.setdefault(json.dumps(v, sort_keys=True), v)
    return [seen[k] for k in sorted(seen)]


def _id_mismatch(run_docs: pa.Array | pa.ChunkedArray, gold_docs: pa.Array) -> dict[str, list[str]] | None:
    """Examples of the ids on each side when no retrieved id is any judged id, else None.

    Checked only when nothing relevant was retrieved for any query: then the usual cause is two
    files that name items differently (chunk ids against text-derived ``t:`` ids, ``doc1`` against
    ``doc1#p0``), which would otherwise show only as zero scores."""
    import pyarrow.compute as pc

    try:
        run_unique = pc.unique(pc.cast(run_docs, pa.string()))
        if isinstance(run_unique, pa.ChunkedArray):
            run_unique = run_unique.combine_chunks()
        gold_docs = pc.cast(gold_docs, pa.string())
        if pc.any(pc.is_in(gold_docs, value_set=run_unique)).as_py():
            return None
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):  # a warning never stops a run
        return None
    gold_unique = pc.unique(gold_docs)
    return {"run": [_example_id(x) for x in run_unique.slice(0, 3).to_pylist()],
            "gold": [_example_id(x) for x in gold_unique.slice(0, 3).to_pylist()]}


def _example_id(value: Any, limit: int = 80) -> str:
    """An id shown as an example, cut to ``limit`` characters (a 30 MB id once took a minute to wrap)."""
    text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def id_mismatch_line(result: EvaluationResult) -> str | None:
    """The warning for a run whose ids never meet the gold set's (every score is then 0), or None."""
    seen = result.info.get("id_mismatch")
    if not seen:
        return None
    run = ", ".join(seen["run"])
    gold = ", ".join(seen["gold"])
    return (f"warning: no retrieved id matches any id in the gold set, so every score is 0: the run has ids "
            f"like {run}; the gold set has {gold}. Name items the same way in both files (contexts matched by "
            f"text get t: ids, so give ids on both sides or texts on both; see docs/formats.md)")


RULE_NAMES = {"input": "the file's order", "id": "score, then id descending (trec_eval's rule)"}


def ties_lines(result: EvaluationResult) -> list[str]:
    """What the tie rule changed, in one line each: a note when the other rule would order some
    queries differently up to the deepest cutoff, a warning when explicit ranks (which order those
    queries alone) put a higher score below a lower one. Empty when neither happened."""
    rule = result.info.get("ties")
    out = []
    differ = result.info.get("ties_differ") or 0
    if differ and rule in RULE_NAMES:
        other = "--ties id ranks them by score, then id, as trec_eval" if rule == "input" else \
            "--ties input keeps the file's order"
        out.append(f"note: {differ} {'query has' if differ == 1 else 'queries have'} tied scores or explicit ranks that "
                   f"the two tie rules order differently; ranked by {RULE_NAMES[rule]} ({other})")
    clash = result.info.get("rank_vs_score") or 0
    if clash:
        out.append(f"warning: in {clash} {'query' if clash == 1 else 'queries'} with a rank on every item, the ranks put a "
                   "higher score below a lower one; ranked by the ranks alone (--ties id ranks by score instead)")
    return out


def _run_facts_of(queries: int, rows: int, fields: dict[str, list[Any]]) -> dict[str, Any]:
    facts: dict[str, Any] = {"queries": queries, "rows": rows}
    for name in ("system", "index_version", "chunker", "embedding_model", "reranker", "corpus_version"):
        if name in fields:
            facts[name] = _distinct(fields[name])
    return facts


def _put_run_values(info: dict[str, Any], fields: dict[str, list[Any]], run_to_gold: np.ndarray,
                    eval_pos: np.ndarray, n: int) -> None:
    """The run's logged latencies and other per-query values, for each evaluated query, into ``info``."""
    if not fields:
        return
    at = _evaluated_at(run_to_gold, eval_pos)
    lat = _latency(fields, at, n)
    if lat:
        info["latency_ms"] = lat
    run_values = {name: _per_query(fields[name], at, n) for name in RUN_VALUE_FIELDS if name in fields}
    if run_values:
        info["run_values"] = run_values


def _gold_facts(g: Gold) -> dict[str, Any]:
    facts: dict[str, Any] = {"queries": len(g.query_ids), "judgements": len(g.j_doc)}
    if "corpus_version" in g.fields:
        facts["corpus_version"] = _distinct(g.fields["corpus_version"])
    return facts


def _per_query(col: list[Any], places: list[int], n: int) -> list[Any]:
    """A run field's value for each evaluated query (None where the run has no value); ``places``:
    each run query's place among the evaluated ones (:func:`_evaluated_at`)."""
    out: list[Any] = [None] * n
    for at, value in zip(places, col):
        if at >= 0:
            out[at] = value
    return out


def _stage_column(n: int) -> list[float | None]:
    """One stage's latency column, one slot per evaluated query (built once per stage)."""
    return [None] * n


def _latency(fields: dict[str, list[Any]], places: list[int], n: int) -> dict[str, list[float | None]]:
    col = fields.get("latency_ms")
    if not col:
        return {}
    out: dict[str, list[float | None]] = {}
    for at, value in zip(places, col):
        if at < 0 or value is None:
            continue
        parts = value if isinstance(value, dict) else {"total": value}
        for stage, ms in parts.items():
            if isinstance(ms, (int, float)) and not isinstance(ms, bool):
                key = str(stage)
                if key not in out:  # not setdefault: its default would be built for every query
                    out[key] = _stage_column(n)
                out[key][at] = float(ms)
    return out


def _evaluated_at(run_to_gold: np.ndarray, eval_pos: np.ndarray) -> list[int]:
    """Each run query's place among the evaluated queries; -1 where it is not evaluated."""
    at = np.full(run_to_gold.size, -1, dtype=np.int64)
    known = run_to_gold >= 0
    at[known] = eval_pos[run_to_gold[known]]
    return at.tolist()
