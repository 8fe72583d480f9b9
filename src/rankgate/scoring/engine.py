"""evaluate(gold, run, metrics) -> EvaluationResult.

The pipeline, each step once: load → rank (the one ranking rule) → align run queries to gold queries
→ drop rows deeper than any requested cutoff → look up each row's grade with one hash join on
integer codes → run every metric's vectorised kernel.

Query set (default): every gold query counts; a query missing from the run scores 0 and is listed in
``missing_from_run`` (trec_eval ``-c``); run queries absent from the gold set are ignored and listed
in ``not_in_gold``; queries with no relevant item are no-answer items, NaN for ranking metrics.
``trec=True`` reproduces trec_eval v10: only queries in both files (all gold queries with
``complete=True``, i.e. ``-c``), and queries whose judgements are all non-relevant score 0.

This module checks the arguments, reads the inputs and picks the path; the steps live beside it:
:mod:`~rankgate.scoring.align` (which queries, doc-level ids), :mod:`~rankgate.scoring.rows` (the ranked
rows and their grades), :mod:`~rankgate.scoring.whole` (a loaded run scored whole),
:mod:`~rankgate.scoring.blocks` (a run scored block by block) and :mod:`~rankgate.scoring.facts` (the
result's ``info`` and the lines it gives). Their names that other modules import from here stay here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

from rankgate._util.constraints import COLUMNS, DEDUPE, DOC_MAP, FLAG, K, LEVEL, TEXT, check, plain
from rankgate.errors import UsageError
from rankgate.io import Run, load_gold, load_run
from rankgate.metrics import Metric, parse_metrics
from rankgate.model.ranking import check_ties
from rankgate.model.results import EvaluationResult
from rankgate.scoring.align import _gold_to_docs, doc_mapper
from rankgate.scoring.blocks import _evaluate_blocks, _loaded_blocks
from rankgate.scoring.facts import input_notices, query_texts, ties_lines
from rankgate.scoring.options import Scoring, load_doc_map
from rankgate.scoring.whole import _evaluate_loaded

# Names of the scoring steps that modules, tests and rankgate 0.1's engine module path import from here.
# (A test that patches one patches the module that reads it: facts._stage_column, say; evaluate reads
# FULL_DEPTH_ROWS, MEMORY_BLOCK_ROWS, _evaluate_blocks and _read_run from this module.)
from rankgate.scoring.align import QueryAlignment as QueryAlignment
from rankgate.scoring.align import _doc_mapper as _doc_mapper
from rankgate.scoring.align import align_queries as align_queries
from rankgate.scoring.facts import RULE_NAMES as RULE_NAMES
from rankgate.scoring.facts import RUN_VALUE_FIELDS as RUN_VALUE_FIELDS
from rankgate.scoring.facts import SEGMENT_FIELDS as SEGMENT_FIELDS
from rankgate.scoring.facts import id_mismatch_line as id_mismatch_line
from rankgate.scoring.rows import RankedRows as RankedRows
from rankgate.scoring.rows import _first_relevant as _first_relevant
from rankgate.scoring.rows import _join_grades_numpy as _join_grades_numpy
from rankgate.scoring.rows import judged_context as judged_context
from rankgate.scoring.rows import ranked_rows as ranked_rows
from rankgate.scoring.whole import MAX_EXP_GRADE as MAX_EXP_GRADE
from rankgate.scoring.whole import score_all as score_all

__all__ = ["API_METRICS", "DEFAULT_K", "doc_mapper", "evaluate", "ties_lines"]

DEFAULT_K = 5
API_METRICS: tuple[str, ...] = ("recall@5", "mrr", "ndcg@10")
"""The metrics of :func:`evaluate` when none are given (the command line's default is longer: DEFAULT_METRICS)."""
FULL_DEPTH_ROWS = 2_000_000
"""Runs of up to this many rows are never cut at the deepest cutoff (read here on each call and passed to
both paths: a run scored in blocks is cut as it would be whole)."""
MEMORY_BLOCK_ROWS = 1_000_000
"""Rows of a block when a loaded run of at least twice as many rows is scored block by block."""


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
    fields: Mapping[str, str] | None = None,
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
        fields: where fields live in JSON records (and which column of a table holds them), as dotted
            paths with ``[*]`` for lists: ``{"id": "metadata.doc_id"}``; the names are ``query_id``,
            ``query``, ``id``, ``text``, ``score``, ``rank`` (runs) and ``relevant``, ``grade`` (gold sets),
            see :mod:`rankgate.io.mapped`. A format whose fields no path reaches (TREC) is refused.
        scoring: all of the above as one value (:class:`rankgate.scoring.options.Scoring`, as the flows and
            the command line hold them: its ``doc_map`` is a file, its ``columns`` the ``--columns`` text). Its
            ``metrics`` apply unless ``metrics`` is given; the other keywords must then be left out, except
            ``doc_map`` and ``columns``, mappings already read (``rankgate.gate``'s), which win over the
            scoring's file and text.
    """
    if scoring is not None:
        loose = {"k": (k, None), "trec": (trec, False), "complete": (complete, False), "level": (level, "chunk"),
                 "doc_sep": (doc_sep, "#"), "dedupe": (dedupe, "error"), "gold_format": (gold_format, None),
                 "run_format": (run_format, None), "ties": (ties, None)}
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
        gold_format, run_format, ties = scoring.gold_format, scoring.run_format, scoring.ties
        if columns is None:
            columns = scoring.column_map()
        if fields is None:
            fields = scoring.fields
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
    if fields is not None:
        from rankgate.io.mapped import check_fields

        fields = check_fields(fields, command="rankgate.evaluate")
    gold_format, run_format = (check(TEXT, v, caller="evaluate", name=n)
                               for n, v in (("gold_format", gold_format), ("run_format", run_format)))
    if ties is not None:
        ties = check_ties(plain(ties))
    if level == "doc" and doc_map is None and not (isinstance(doc_sep, str) and doc_sep):
        # An empty separator would make every chunk its own document: doc level would silently be chunk level.
        raise UsageError(f"doc_sep (--doc-sep) must be a non-empty string for level='doc'; got {doc_sep!r} "
                         "(give the separator between document id and chunk part, e.g. '#', or a doc map)")
    load_opts: dict[str, Any] = {"columns": dict(columns)} if columns else {}
    if fields:
        load_opts["fields"] = fields

    inputs: dict[str, Any] = {}
    hashes: dict[str, Any] = {}
    # The gold set is parsed while the run is (pyarrow's readers free the GIL); the files are hashed
    # afterwards, on the core that the mostly single-threaded evaluation leaves free.
    with ThreadPoolExecutor(max_workers=2) as pool:
        gold_future = pool.submit(load_gold, gold, format=gold_format, **load_opts)
        doc_of = doc_mapper(doc_sep, doc_map)
        opts: dict[str, Any] = {"k": k or DEFAULT_K, "trec": trec, "complete": complete, "level": level,
                                "doc_of": doc_of, "dedupe": dedupe, "inputs": inputs, "ties": ties,
                                "full_depth_rows": FULL_DEPTH_ROWS}
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
        blocks = run_blocks(run, format=run_format, columns=columns, items=keep_items, fields=fields)
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
        # (kept apart from the notices, which summary.json and the report write: every build writes the same files)
        slow = slow_notice(rows)
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
        read = {"notices": notices, "near_misses": near, "query_texts": texts,  # what reading the inputs found
                "build_notice": slow}
        if any(read.values()):
            result = replace(result, info={**result.info, **{key: v for key, v in read.items() if v}})
        for name, obj in (("gold", g), ("run", r)):
            entry: dict[str, Any] = {"path": obj.source}
            if name in hashes:
                entry["sha256"] = hashes[name].result()
            inputs[name] = entry
    return result


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
