"""The Python API a notebook reaches for: :func:`evaluate` (``rankgate.evaluate``) and :func:`compare`
(``rankgate.compare``), each giving a result that holds its numbers and turns into a table.

:func:`evaluate` scores a run with :func:`rankgate.scoring.engine.evaluate` and returns an :class:`EvaluatedRun`:
the engine's :class:`~rankgate.model.results.EvaluationResult` (per-query values, means; every attribute as
before) with the bootstrap intervals of the means, the segments asked for (``by``) and :meth:`~EvaluatedRun.to_arrow`
/ :meth:`~EvaluatedRun.to_pandas`. The intervals and segments are drawn by the functions ``rankgate evaluate`` calls
(:func:`rankgate.stats.bootstrap.metric_cis`, :func:`rankgate.stats.segments.segment_summary`, as
:func:`rankgate.flows.evaluate.run_evaluation` calls them), with the same seed, resamples and confidence: the
numbers of ``rankgate evaluate --json`` on the same files. The intervals are drawn the first time they are read,
so code that reads only the means pays nothing for them.

:func:`compare` runs :func:`rankgate.flows.compare.run_comparison`, as ``rankgate compare`` does, on runs given as
paths or in memory, and returns the comparison (:class:`ComparedRuns` for two runs, :class:`ComparedManyRuns` for
more): :class:`~rankgate.stats.paired.Comparison` with the evaluated runs and a table of its rows.

pandas is optional: ``to_pandas()`` imports it when called and says how to install it when it is missing;
``to_arrow()`` needs nothing beyond rankgate's own dependencies.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from rankgate._util.constraints import BY, NAMES, Param, check
from rankgate.errors import UsageError
from rankgate.model.results import EvaluationResult
from rankgate.scoring.engine import API_METRICS
from rankgate.scoring.options import Scoring
from rankgate.stats.options import Statistics, taken
from rankgate.stats.paired import Comparison, MultiComparison

if TYPE_CHECKING:  # pragma: no cover
    import pandas
    import pyarrow

    from rankgate.io.load import GoldInput, RunInput
    from rankgate.metrics.spec import Metric
    from rankgate.stats.segments import SegmentSummary

__all__ = ["TABLES", "ComparedManyRuns", "ComparedRuns", "EvaluatedRun", "compare", "evaluate"]

#: The tables of an :class:`EvaluatedRun`: one row per query, per metric, or per (segment, metric).
TABLES = ("queries", "metrics", "segments")
_TABLE = Param("table", str, "queries", choices=TABLES, help="which table: queries, metrics or segments")
_LABELS = Param("labels", NAMES, (), help="a name per run, baseline first")


@dataclass(frozen=True, repr=False)
class EvaluatedRun(EvaluationResult):
    """What :func:`rankgate.evaluate` returns: an :class:`~rankgate.model.results.EvaluationResult` (``means``,
    ``values``, ``query_ids``, ``fields`` … as before) with the intervals, the segments and tables.

    Attributes:
        statistics: the seed, resamples and confidence of every interval.
        segments: means and intervals per segment of each field of ``by`` (None without ``by``).
        intervals: metric -> ``(low, high)``, the bootstrap interval of its mean (NaN when it cannot be drawn:
            fewer than 2 queries, or ``resamples=0``), drawn when first read.
    """

    statistics: Statistics = field(default_factory=Statistics)
    segments: SegmentSummary | None = None
    # Intervals drawn on the first read; never copied by replace().
    _intervals: dict[str, tuple[float, float]] = field(default_factory=dict, init=False, repr=False, compare=False)

    @classmethod
    def of(cls, result: EvaluationResult, statistics: Statistics, segments: SegmentSummary | None = None) -> EvaluatedRun:
        """``result`` with its statistics and segments."""
        values = {f.name: getattr(result, f.name) for f in fields(result) if f.init}
        return cls(**values, statistics=statistics, segments=segments)

    @property
    def confidence(self) -> float:
        return self.statistics.confidence

    @property
    def intervals(self) -> dict[str, tuple[float, float]]:
        """Canonical metric name -> ``(low, high)`` of its mean, as ``rankgate evaluate`` draws it (``ci_low``,
        ``ci_high`` in its ``summary.json``)."""
        if len(self._intervals) < len(self.metric_names):
            from rankgate.stats.bootstrap import metric_cis

            self._intervals.update(metric_cis(self, statistics=self.statistics))
        return {m: self._intervals[m] for m in self.metric_names}

    def interval(self, metric: str) -> tuple[float, float]:
        """The interval of ``metric``'s mean (any spelling: ``NDCG@10``)."""
        return self.intervals[self.resolve_metric(metric)]

    def to_arrow(self, table: str = "queries") -> pyarrow.Table:
        """One of :data:`TABLES` as a pyarrow Table.

        ``"queries"``: a row per evaluated query: ``query_id``, the gold set's fields (``intent``, ``tags.lang`` …),
        ``first_relevant_rank`` (0: none retrieved) and a column per metric (NaN where it does not apply).
        ``"metrics"``: a row per metric: ``metric``, ``mean``, ``n``, ``ci_low``, ``ci_high``.
        ``"segments"``: a row per segment and metric (needs ``by``): ``field``, ``segment``, ``metric``,
        ``queries``, ``n``, ``mean``, ``ci_low``, ``ci_high``.
        """
        table = check(_TABLE, table, caller="to_arrow")
        if table == "metrics":
            return self._metrics_table()
        if table == "segments":
            return self._segments_table()
        return self._queries_table()

    def to_pandas(self, table: str = "queries") -> pandas.DataFrame:
        """:meth:`to_arrow`'s table as a pandas DataFrame (pandas must be installed: ``pip install pandas``)."""
        from rankgate._util.pandas_guard import import_pandas

        import_pandas(f"{type(self).__name__}.to_pandas()")
        return self.to_arrow(table).to_pandas()

    def _queries_table(self) -> pyarrow.Table:
        import numpy as np
        import pyarrow as pa

        from rankgate._util.arrow import arrow_of, strings_of

        columns: dict[str, Any] = {"query_id": strings_of(list(self.query_ids))}
        for name, labels in self.fields.items():
            if name not in columns and name not in self.values:
                columns[name] = pa.array([None if v is None else str(v) for v in labels], type=pa.string())
        if self.first_relevant_rank is not None:
            columns["first_relevant_rank"] = arrow_of(np.asarray(self.first_relevant_rank, dtype=np.int64))
        for m in self.metric_names:
            columns[m] = arrow_of(np.asarray(self.values[m], dtype=np.float64))
        return pa.Table.from_arrays(list(columns.values()), names=list(columns))

    def _metrics_table(self) -> pyarrow.Table:
        import numpy as np
        import pyarrow as pa

        from rankgate._util.arrow import arrow_of, strings_of

        names = list(self.metric_names)
        summaries = [self.summary(m) for m in names]
        cis = self.intervals
        return pa.Table.from_arrays(
            [strings_of(names), arrow_of(np.array([s.mean for s in summaries], dtype=np.float64)),
             arrow_of(np.array([s.n for s in summaries], dtype=np.int64)),
             arrow_of(np.array([cis[m][0] for m in names], dtype=np.float64)),
             arrow_of(np.array([cis[m][1] for m in names], dtype=np.float64))],
            names=["metric", "mean", "n", "ci_low", "ci_high"])

    def _segments_table(self) -> pyarrow.Table:
        import numpy as np
        import pyarrow as pa

        from rankgate._util.arrow import arrow_of, strings_of

        if self.segments is None:
            raise UsageError("this result has no segments: evaluate with by=, e.g. rankgate.evaluate(gold, run, "
                             "by=['intent'])")
        rows = list(self.segments.rows)
        return pa.Table.from_arrays(
            [strings_of([r.field for r in rows]), strings_of([r.label for r in rows]),
             strings_of([r.metric for r in rows]),
             arrow_of(np.array([r.queries for r in rows], dtype=np.int64)),
             arrow_of(np.array([r.n for r in rows], dtype=np.int64)),
             arrow_of(np.array([r.mean for r in rows], dtype=np.float64)),
             arrow_of(np.array([r.ci_low for r in rows], dtype=np.float64)),
             arrow_of(np.array([r.ci_high for r in rows], dtype=np.float64))],
            names=["field", "segment", "metric", "queries", "n", "mean", "ci_low", "ci_high"])

    def __repr__(self) -> str:
        from rankgate.metrics.display import fmt_score

        means = ", ".join(f"{m} {fmt_score(v, 4)}" for m, v in self.means.items())
        by = f"; segments by {', '.join(self.segments.by)}" if self.segments is not None else ""
        return f"<EvaluatedRun: {len(self.query_ids)} queries; {means}{by}>"


def _rows_table(comparison: Comparison | MultiComparison) -> pyarrow.Table:
    """The comparison's rows as a pyarrow Table: the ``rows`` of its ``to_dict()``, which ``rankgate compare
    --json`` prints (NaN as null)."""
    import pyarrow as pa

    return pa.Table.from_pylist(comparison.to_dict()["rows"])


@dataclass(frozen=True)
class ComparedRuns(Comparison):
    """What :func:`rankgate.compare` returns for two runs: the paired :class:`~rankgate.stats.paired.Comparison`
    (``rows``, ``row(metric)``, ``regressions`` …, ``to_dict()``), with ``results``, each run's
    :class:`~rankgate.model.results.EvaluationResult` (baseline first), ``warnings`` (what ``rankgate compare``
    would say on stderr) and its rows as a table."""

    results: tuple[EvaluationResult, ...] = ()
    warnings: tuple[str, ...] = ()

    def to_arrow(self) -> pyarrow.Table:
        """A row per metric (``field`` and ``segment`` null) and per segment and metric: ``metric``, ``field``,
        ``segment``, ``n``, ``baseline``, ``candidate``, ``delta``, ``ci_low``, ``ci_high``, ``p_value``,
        ``p_holm``, ``verdict`` …, as ``rankgate compare --json`` gives them."""
        return _rows_table(self)

    def to_pandas(self) -> pandas.DataFrame:
        """:meth:`to_arrow` as a pandas DataFrame (pandas must be installed: ``pip install pandas``)."""
        from rankgate._util.pandas_guard import import_pandas

        import_pandas("ComparedRuns.to_pandas()")
        return self.to_arrow().to_pandas()


@dataclass(frozen=True)
class ComparedManyRuns(MultiComparison):
    """What :func:`rankgate.compare` returns for three runs or more: the
    :class:`~rankgate.stats.paired.MultiComparison` (every run against the baseline), with ``results`` (the
    baseline's first), ``warnings`` and its rows as a table."""

    results: tuple[EvaluationResult, ...] = ()
    warnings: tuple[str, ...] = ()

    def to_arrow(self) -> pyarrow.Table:
        """A row per metric and run: ``metric``, ``run``, ``n``, ``baseline``, ``mean``, ``delta``, ``ci_low``,
        ``ci_high``, ``p_value``, ``p_holm``, ``verdict`` …, as ``rankgate compare --json`` gives them."""
        return _rows_table(self)

    def to_pandas(self) -> pandas.DataFrame:
        """:meth:`to_arrow` as a pandas DataFrame (pandas must be installed: ``pip install pandas``)."""
        from rankgate._util.pandas_guard import import_pandas

        import_pandas("ComparedManyRuns.to_pandas()")
        return self.to_arrow().to_pandas()


def _statistics(statistics: Statistics | None, seed: int, resamples: int, confidence: float, caller: str) -> Statistics:
    """The statistics given whole, else those of the loose keywords (given both ways: refused, naming them)."""
    seed, resamples, confidence = taken(statistics, seed, resamples, confidence, caller=caller)
    return statistics if statistics is not None else Statistics(seed=seed, resamples=resamples, confidence=confidence)


def evaluate(
    gold: GoldInput,
    run: RunInput,
    metrics: str | Sequence[str | Metric] = API_METRICS,
    *,
    by: str | Iterable[str] = (),
    confidence: float = 0.95,
    seed: int = 0,
    resamples: int = 2000,
    statistics: Statistics | None = None,
    ranking: str = "final",
    **options: Any,
) -> EvaluatedRun:
    """Score ``run`` against ``gold``: per-query values, means, their intervals and the segments of ``by``.

    Args:
        gold, run: paths (JSONL, TREC, BEIR, Parquet, CSV …), loaded objects, dicts
            (``{query_id: {doc_id: grade}}``, ``{query_id: [doc_id, ...]}``), records or long tables, as
            :func:`rankgate.scoring.engine.evaluate` reads them.
        metrics: specs such as ``"recall@5"``, ``"ndcg(gain=exp)@10"`` (a list or one comma string); default
            recall@5, mrr, ndcg@10.
        by: segment fields or tags (``"intent"``, ``["intent", "lang"]``, ``"intent+lang"``): their means and
            intervals are in :attr:`EvaluatedRun.segments` and ``to_pandas("segments")``.
        confidence, seed, resamples: the bootstrap of every interval (as ``--confidence``, ``--seed``,
            ``--resamples``), or ``statistics=Statistics(...)`` whole.
        ranking: ``"final"`` (the run's ranked lists), ``"raw"`` (its raw candidates, ``raw_topk``) or ``"both"``,
            as ``--ranking``: raw rows are named ``recall@50 (raw)`` (:mod:`rankgate.metrics.rankings`).
        options: the scoring options of :func:`rankgate.scoring.engine.evaluate`: ``k``, ``level``, ``doc_sep``,
            ``doc_map``, ``ties``, ``trec``, ``complete``, ``dedupe``, ``gold_format``, ``run_format``,
            ``columns``, ``fields`` (passed on as they are), or ``scoring=Scoring(...)`` whole.

    Returns an :class:`EvaluatedRun`: the :class:`~rankgate.model.results.EvaluationResult` of earlier releases
    (``means``, ``values``, ``result["mrr"]`` …) with ``intervals``, ``segments``, ``to_arrow()`` and
    ``to_pandas()``. Its numbers are those of ``rankgate evaluate --json`` with the same options.
    """
    from rankgate.scoring.engine import evaluate as score

    stats = _statistics(statistics, seed, resamples, confidence, "evaluate")
    by = check(BY, by, caller="evaluate")
    if ranking == "final":
        result = score(gold, run, metrics, **options)
    else:  # (the raw candidates: scored by the flow that reads them, as rankgate evaluate --ranking does)
        from rankgate.flows.evaluate import EvaluateRequest, run_evaluation

        names = metrics if isinstance(metrics, str) else [str(m) for m in metrics]  # (a Metric by its spec)
        scoring = options.pop("scoring", None) or Scoring(metrics=names, **options)
        result = run_evaluation(EvaluateRequest(gold, run, scoring=scoring, statistics=Statistics(resamples=0),
                                                ranking=ranking)).result
    segments = None
    if by:
        from rankgate.stats.segments import segment_summary

        segments = segment_summary(result, list(by), statistics=stats)
    return EvaluatedRun.of(result, stats, segments)


def compare(
    gold: GoldInput,
    baseline: RunInput,
    candidate: RunInput,
    *runs: RunInput,
    metrics: str | Sequence[str] | None = None,
    by: str | Iterable[str] = (),
    labels: Sequence[str] | None = None,
    confidence: float = 0.95,
    seed: int = 0,
    resamples: int = 2000,
    permutations: int = 10000,
    top: int = 10,
    statistics: Statistics | None = None,
    scoring: Scoring | None = None,
    ranking: str = "final",
    **options: Any,
) -> ComparedRuns | ComparedManyRuns:
    """Compare ``candidate`` (and more ``runs``) with ``baseline`` on ``gold``, query by query, as ``rankgate
    compare`` does: the change of each metric's mean with its paired bootstrap interval and randomisation-test
    p-value (Holm-corrected), per segment of ``by`` too (two runs).

    Args:
        gold, baseline, candidate, runs: as :func:`evaluate` takes them (paths or in memory).
        metrics: default recall@5, mrr, ndcg@10 (as :func:`evaluate`).
        by: segment fields (two runs only).
        labels: a name per run, baseline first. Default: runs given as files are named as ``rankgate compare``
            names them (their ``system``, else their file names); runs given in memory ``baseline``,
            ``candidate`` (``candidate 1``, ``candidate 2`` … for more).
        confidence, seed, resamples, permutations: the bootstrap and the randomisation test (``permutations=0``:
            no p-values), or ``statistics=Statistics(...)`` whole (with ``permutations``).
        top: most-changed queries kept (two runs).
        ranking: ``"final"``, ``"raw"`` or ``"both"``, as :func:`evaluate` takes it.
        scoring, options: how every run is scored: ``scoring=Scoring(...)`` whole, or its fields as keywords
            (``k``, ``level``, ``ties``, ``doc_sep``, ``doc_map`` as a file …).

    Returns :class:`ComparedRuns` (two runs) or :class:`ComparedManyRuns`, with ``to_arrow()`` and ``to_pandas()``
    of the rows.
    """
    from rankgate.flows.compare import CompareRequest, run_comparison

    stats = _statistics(statistics, seed, resamples, confidence, "compare")
    given = {"metrics": metrics, **options}
    if scoring is not None and any(v is not None for v in given.values()):
        names = [name for name, v in given.items() if v is not None]
        raise UsageError(f"compare takes the scoring options as scoring= or as keywords, not both: drop "
                         f"{', '.join(names)} or set {'it' if len(names) == 1 else 'them'} in the Scoring")
    if scoring is None:
        unknown = sorted(set(options) - {f.name for f in fields(Scoring)})
        if unknown:
            raise UsageError(f"compare takes no option {', '.join(map(repr, unknown))}; its scoring options are the "
                             f"fields of Scoring: {', '.join(f.name for f in fields(Scoring) if f.name != 'metrics')}")
        scoring = Scoring(metrics=API_METRICS if metrics is None else metrics, **options)
    every = (baseline, candidate, *runs)
    if labels is None and not all(isinstance(r, (str, os.PathLike)) for r in every):
        labels = _labels(every)
    req = CompareRequest(every, gold, scoring, stats, by=check(BY, by, caller="compare"), permutations=permutations,
                         top=top, labels=() if labels is None else check(_LABELS, labels, caller="compare"), ranking=ranking)
    out = run_comparison(req)
    comparison = out.comparison
    results = tuple(e.result for e in out.evaluations)
    if isinstance(comparison, Comparison):
        values = {f.name: getattr(comparison, f.name) for f in fields(comparison) if f.init}
        return ComparedRuns(**values, results=results, warnings=out.warnings)
    assert isinstance(comparison, MultiComparison)  # (two runs or more with a gold set: one of the two forms)
    values = {f.name: getattr(comparison, f.name) for f in fields(comparison) if f.init}
    return ComparedManyRuns(**values, results=results, warnings=out.warnings)


def _labels(runs: Sequence[Any]) -> tuple[str, ...]:
    """Names of runs some of which are in memory: a file's name for a path, else its role (``baseline``,
    ``candidate``, or ``candidate 1``, ``candidate 2`` … among several)."""
    from rankgate.flows.compare import run_labels

    on_disk = [isinstance(r, (str, os.PathLike)) for r in runs]
    files = run_labels([os.fspath(r) if disk else "" for r, disk in zip(runs, on_disk)])
    roles = ["baseline"] + (["candidate"] if len(runs) == 2 else [f"candidate {i}" for i in range(1, len(runs))])
    return tuple(name if disk else role for disk, name, role in zip(on_disk, files, roles))
