"""Paired comparison of two runs scored on the same gold set: what changed, and is it real.

:func:`compare` takes two or more results. With two, it pairs queries by ``query_id``. For each metric, over all queries and over each
segment of the ``by`` fields, it reports the baseline and candidate means over the queries where the
metric applies in both runs, the change, a paired bootstrap interval of the change, a paired
randomisation p-value, and that p-value Holm-corrected within its family of rows, so a table of many rows
does not produce "significant" changes by chance. The headline rows (every metric over all queries) are one
family; the segment rows of each ``by`` field are a family of their own, so segments never change a
headline row's numbers or verdict.

With three or more it compares every run with one baseline (ranx's comparison table): one row per
metric and run, each with the paired numbers above against the baseline, and Holm's correction
across every (run, metric) row (the headline family); segments and most-changed queries are the two-run comparison's.
Both results are a :class:`PairedComparison` (:class:`Comparison` for two runs, :class:`MultiComparison`
for more), rendered by one set of renderers in :mod:`rankgate.render.compare`.
:func:`compare_systems` (the several-runs table for any number of runs, two included) is kept as a
wrapper until 0.3.

Nothing is dropped silently: queries present in only one of the two results are listed (and left
out of the paired numbers); gold queries a run did not answer score 0 there, as in any evaluation,
and are listed per run.

A row's *verdict* is :func:`rankgate.stats.verdict.verdict` of its numbers: ``better`` or ``worse`` when its
Holm-corrected p-value is below ``1 − confidence``; ``not significant after correcting for N comparisons``
when its interval excludes 0 but the corrected p-value does not; ``within noise`` when the interval includes 0
(when p-values are off, the interval decides); ``unchanged`` when no query's value changed.

When the queries carry a ``conversation_id`` (the baseline's, else the candidate's), every interval and
p-value resamples conversations, not queries (the cluster bootstrap and the per-conversation sign flip of
:mod:`rankgate.stats.bootstrap`), and ``statistics.resampling`` says how many conversations and turns
were paired and each metric's effective number of units (:mod:`rankgate.stats.clusters`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, overload

import numpy as np

from rankgate.errors import UsageError
from rankgate._util.jsonable import exact_mean, exact_means, nan_to_none
# metric facts live in the registry; re-exported here for code written against earlier releases
from rankgate.metrics.info import higher_is_better, is_share, metric_family
from rankgate.model.results import EvaluationResult, pair_labels, run_label
from rankgate.stats.segments import label_groups, segment_labels, split_fields
from rankgate.stats.bootstrap import (grouped_bootstrap_cis, grouped_cluster_cis, grouped_cluster_randomization_tests,
                                      grouped_randomization_tests, holm, paired_bootstrap_ci, randomization_test)
from rankgate.stats.clusters import Resampling, conversation_codes, effective_n
from rankgate.stats.options import Statistics, taken
from rankgate.stats.verdict import verdict

__all__ = [
    "Comparison", "DeltaRow", "MultiComparison", "PairedComparison", "QueryChange", "SystemPairing", "SystemRow",
    "change_dict",
    "change_stats", "compare", "compare_systems", "higher_is_better", "is_share", "metric_family",
]

@dataclass(frozen=True)
class DeltaRow:
    """One metric, over all queries (``field is None``) or one segment."""

    metric: str
    field: str | None
    segment: str | None
    n: int
    baseline: float
    candidate: float
    delta: float
    ci_low: float
    ci_high: float
    p_value: float
    p_holm: float
    higher_is_better: bool = True
    family: int = 1  # rows sharing this row's Holm correction: the headline rows, or one field's segment rows

    def verdict(self, confidence: float = 0.95) -> str:
        """The row's verdict by :func:`rankgate.stats.verdict.verdict`: ``better``, ``worse``, ``not significant
        after correcting for N comparisons``, ``within noise``, ``unchanged`` (no query changed; known when
        intervals are on), or ``n/a`` when no query applies."""
        return verdict(self.delta, self.ci_low, self.ci_high, self.p_value, self.p_holm, self.family,
                       higher_is_better=self.higher_is_better, confidence=confidence, n=self.n)


@dataclass(frozen=True)
class QueryChange:
    """How one query's value of the primary metric changed; ranks are the first relevant item's."""

    query_id: str
    metric: str
    baseline: float
    candidate: float
    delta: float
    baseline_rank: int | None  # 0: no relevant item retrieved; None: unknown
    candidate_rank: int | None
    note: str = ""


def change_dict(c: QueryChange) -> dict[str, Any]:
    return {
        "query_id": c.query_id,
        "metric": c.metric,
        "baseline": nan_to_none(c.baseline),
        "candidate": nan_to_none(c.candidate),
        "delta": nan_to_none(c.delta),
        "first_relevant_rank": {"baseline": c.baseline_rank, "candidate": c.candidate_rank},
        "note": c.note,
    }


def change_stats(r: Any, confidence: float) -> dict[str, Any]:
    """The paired statistics of one comparison row, as both the two-run and the several-runs dicts give them."""
    return {
        "delta": nan_to_none(r.delta),
        "ci_low": nan_to_none(r.ci_low),
        "ci_high": nan_to_none(r.ci_high),
        "p_value": nan_to_none(r.p_value),
        "p_holm": nan_to_none(r.p_holm),
        "higher_is_better": r.higher_is_better,
        "holm_family_size": r.family,
        "verdict": r.verdict(confidence),
    }


def _statistics(cmp: Any, correction: str) -> dict[str, Any]:
    """How a comparison's numbers were made, as both comparison dicts give it; ``holm_families``: each family's
    rows (``headline``, or a ``by`` field) and size."""
    return {
        "seed": cmp.seed,
        "resamples": cmp.resamples,
        "permutations": cmp.n_permutations,
        "confidence": cmp.confidence,
        "interval": "paired percentile bootstrap of the mean change over queries",
        "p_value": "paired two-sided sign-flip randomisation test, p = (b+1)/(n+1)",
        "correction": correction,
        "holm_families": [{"rows": "headline" if f is None else f, "size": size} for f, size in cmp.holm_families],
        **({} if cmp.resampling is None else {"interval": "paired percentile bootstrap of the mean change over "
                                                          "conversations (cluster bootstrap)",
                                              "p_value": "paired two-sided sign-flip randomisation test of each "
                                                         "conversation's summed change, p = (b+1)/(n+1)",
                                              "resampling": cmp.resampling.to_dict()}),
    }


class PairedComparison:
    """What every comparison of runs against a baseline holds: the metrics, a :class:`DeltaRow` per metric and
    run (and segment), what was not compared, and how the numbers were made. :class:`Comparison` (two runs,
    with segments and most-changed queries) and :class:`MultiComparison` (several runs) are its two forms;
    :mod:`rankgate.render.compare` renders either, :meth:`to_dict` gives either as JSON-able data."""

    metrics: tuple[str, ...]
    rows: tuple[DeltaRow, ...]
    missing_from_baseline_run: tuple[str, ...]
    not_compared: tuple[str, ...]
    seed: int
    resamples: int
    n_permutations: int
    confidence: float
    resampling: Resampling | None = None  # conversations, when the queries carry them (None: queries)

    @property
    def baseline_name(self) -> str:
        """The baseline run's label."""
        raise NotImplementedError

    @property
    def run_names(self) -> tuple[str, ...]:
        """The labels of the runs compared with the baseline, in order."""
        raise NotImplementedError

    @property
    def detailed(self) -> bool:
        """True for the two-run form: segment rows (``by``) and the most-changed queries."""
        return False

    @property
    def holm_families(self) -> tuple[tuple[str | None, int], ...]:
        """Each family of Holm's correction and its size, headline rows (``None``) first, then each ``by``
        field's segment rows, in the table's order."""
        sizes: dict[str | None, int] = {None: 0}
        for r in self.rows:
            sizes.setdefault(r.field, r.family)
            if r.field is None:
                sizes[None] = r.family
        return tuple(sizes.items())

    def to_dict(self) -> dict[str, Any]:
        raise NotImplementedError


@dataclass(frozen=True)
class Comparison(PairedComparison):
    """Two runs compared by :func:`compare`: rows per metric and segment, and the most-changed queries;
    :meth:`to_dict` for JSON, renderers in :mod:`rankgate.render.compare`."""

    metrics: tuple[str, ...]
    by: tuple[str, ...]
    rows: tuple[DeltaRow, ...]
    primary: str
    regressions: tuple[QueryChange, ...]
    improvements: tuple[QueryChange, ...]
    changed: int
    paired: int
    only_in_baseline: tuple[str, ...] = ()
    only_in_candidate: tuple[str, ...] = ()
    missing_from_baseline_run: tuple[str, ...] = ()
    missing_from_candidate_run: tuple[str, ...] = ()
    not_compared: tuple[str, ...] = ()
    baseline_label: str = "baseline"
    candidate_label: str = "candidate"
    seed: int = 0
    resamples: int = 2000
    n_permutations: int = 10000
    confidence: float = 0.95
    notes: tuple[str, ...] = field(default=())
    changed_by_metric: tuple[tuple[str, int], ...] = ()  # (metric, paired queries whose value changed), every metric
    resampling: Resampling | None = None  # conversations, when the queries carry them (None: queries)

    @property
    def baseline_name(self) -> str:
        return self.baseline_label

    @property
    def run_names(self) -> tuple[str, ...]:
        return (self.candidate_label,)

    @property
    def detailed(self) -> bool:
        return True

    def row(self, metric: str, field: str | None = None, segment: str | None = None) -> DeltaRow | None:
        return self._index.get((metric, field, segment))

    @cached_property
    def _index(self) -> dict[tuple[str, str | None, str | None], DeltaRow]:
        """(metric, field, segment) -> the first such row, built on the first look-up (a gate looks up every
        segment of a field, which may have 50,000)."""
        index: dict[tuple[str, str | None, str | None], DeltaRow] = {}
        for r in self.rows:
            index.setdefault((r.metric, r.field, r.segment), r)
        return index

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able data (NaN as null); same comparison ⇒ same dict."""
        return {
            "baseline": self.baseline_label,
            "candidate": self.candidate_label,
            "metrics": list(self.metrics),
            "by": list(self.by),
            "rows": [
                {
                    "metric": r.metric,
                    "field": r.field,
                    "segment": r.segment,
                    "n": r.n,
                    "baseline": nan_to_none(r.baseline),
                    "candidate": nan_to_none(r.candidate),
                    **change_stats(r, self.confidence),
                }
                for r in self.rows
            ],
            "queries": {
                "paired": self.paired,
                "changed": self.changed,
                "changed_by_metric": dict(self.changed_by_metric),
                "only_in_baseline": list(self.only_in_baseline),
                "only_in_candidate": list(self.only_in_candidate),
                "missing_from_baseline_run": list(self.missing_from_baseline_run),
                "missing_from_candidate_run": list(self.missing_from_candidate_run),
            },
            "primary": self.primary,
            "most_regressed": [change_dict(c) for c in self.regressions],
            "most_improved": [change_dict(c) for c in self.improvements],
            "not_compared": list(self.not_compared),
            "statistics": _statistics(self, "Holm within each family: the headline rows (every metric over all "
                                            "queries), and separately the segment rows of each by field"),
        }


@overload
def compare(
    results: EvaluationResult, cand: EvaluationResult, *, labels: Sequence[str] | None = ..., baseline: int | str = ...,
    metrics: Sequence[str] | None = ..., by: str | Iterable[str] = ..., statistics: Statistics | None = ...,
    seed: int = ..., resamples: int = ..., n_permutations: int = ..., confidence: float = ...,
    primary: str | None = ..., top: int = ..., baseline_label: str | None = ..., candidate_label: str | None = ...,
) -> Comparison: ...


@overload
def compare(
    results: Sequence[EvaluationResult], cand: None = ..., *, labels: Sequence[str] | None = ...,
    baseline: int | str = ..., metrics: Sequence[str] | None = ..., by: str | Iterable[str] = ...,
    statistics: Statistics | None = ..., seed: int = ..., resamples: int = ..., n_permutations: int = ...,
    confidence: float = ..., primary: str | None = ..., top: int = ..., baseline_label: str | None = ...,
    candidate_label: str | None = ...,
) -> PairedComparison: ...


def compare(
    results: Sequence[EvaluationResult] | EvaluationResult,
    cand: EvaluationResult | None = None,
    *,
    labels: Sequence[str] | None = None,
    baseline: int | str = 0,
    metrics: Sequence[str] | None = None,
    by: str | Iterable[str] = (),
    statistics: Statistics | None = None,
    seed: int = 0,
    resamples: int = 2000,
    n_permutations: int = 10000,
    confidence: float = 0.95,
    primary: str | None = None,
    top: int = 10,
    baseline_label: str | None = None,
    candidate_label: str | None = None,
) -> PairedComparison:
    """Compare two or more results query by query (see the module docs for every number).

    ``compare([base, cand, ...])`` takes the results in a list: two give a :class:`Comparison` (segments,
    most-changed queries), three or more a :class:`MultiComparison` (every run against the baseline).
    ``compare(base, cand)`` (two results, a :class:`Comparison`) is the form of earlier releases, kept until 0.3.

    Args:
        labels: a name per result (default: the run file's name, else ``baseline`` and ``candidate`` for two
            results, ``run 1``, ``run 2`` … for more).
        baseline: index or label of the baseline (default: the first result).
        metrics: metrics to compare (default: those evaluated in every result, in the baseline's order).
        by: segment fields (``"intent"``, ``["intent", "lang"]``, ``"intent+lang"``); two results only.
        seed: seed of the bootstrap and the randomisation test; every row uses a fresh generator
            seeded with it, so a row's numbers do not depend on the rest of the table.
        resamples: bootstrap resamples (0 turns intervals off).
        n_permutations: sign flips of the randomisation test (0 turns p-values off).
        primary: metric whose per-query changes are listed (default: the first metric); two results only.
        top: how many most-regressed and most-improved queries to keep; two results only.
        baseline_label, candidate_label: the two runs' names in ``compare(base, cand)`` (``labels`` otherwise).
    """
    seed, resamples, confidence = taken(statistics, seed, resamples, confidence, caller="compare",
                                         defaults=(0, 2000, 0.95))
    draw: dict[str, Any] = {"seed": seed, "resamples": resamples, "n_permutations": n_permutations, "confidence": confidence}
    if isinstance(results, EvaluationResult) or cand is not None:
        if labels is not None or baseline != 0:
            raise UsageError("compare(base, cand) names its runs with baseline_label= and candidate_label=; give "
                             "the results as a list, compare([base, cand], labels=..., baseline=...), for labels= "
                             "and baseline=")
        if not isinstance(results, EvaluationResult) or not isinstance(cand, EvaluationResult):
            raise UsageError("compare() takes two EvaluationResult objects (from rankgate.evaluate)")
        return _compare_two(results, cand, metrics=metrics, by=by, primary=primary, top=top,
                            baseline_label=baseline_label, candidate_label=candidate_label, **draw)
    if baseline_label is not None or candidate_label is not None:
        raise UsageError("compare([...]) names its runs with labels=, one per result; baseline_label= and "
                         "candidate_label= belong to compare(base, cand)")
    runs = _listed(results, "compare")
    if len(runs) == 2:
        names, b = _run_names(runs, labels, baseline, distinct=labels is not None)
        base_r, cand_r = runs[b], runs[1 - b]
        given = (None, None) if labels is None else (names[b], names[1 - b])
        return _compare_two(base_r, cand_r, metrics=metrics, by=by, primary=primary, top=top,
                            baseline_label=given[0], candidate_label=given[1], **draw)
    if split_fields(by):
        raise UsageError("by= compares segments of two results; with more, compare two at a time for segments")
    names, b = _run_names(runs, labels, baseline)
    return _compare_many(runs, names, b, metrics=metrics, **draw)


def _listed(results: Any, caller: str) -> list[EvaluationResult]:
    """The results as a list, said wrong when they are fewer than two or not all evaluation results."""
    runs = list(results) if isinstance(results, Iterable) and not isinstance(results, (str, bytes)) else []
    if len(runs) < 2 or not all(isinstance(r, EvaluationResult) for r in runs):
        raise UsageError(f"{caller}() takes two or more EvaluationResult objects (from rankgate.evaluate)")
    return runs


def _run_names(results: list[EvaluationResult], labels: Sequence[str] | None, baseline: int | str,
               distinct: bool = True) -> tuple[list[str], int]:
    """The runs' labels (given, else each run file's name, else ``run 1``, ``run 2`` …) and the baseline's index.
    ``distinct``: two runs may share a file name when no label is given (``compare(base, cand)`` allowed it)."""
    names = [run_label(r, None, f"run {i + 1}") for i, r in enumerate(results)] if labels is None else [str(x) for x in labels]
    if len(names) != len(results):
        raise UsageError(f"got {len(names)} labels for {len(results)} results")
    if (distinct or isinstance(baseline, str)) and len(set(names)) != len(names):
        raise UsageError(f"run labels must differ; got {', '.join(names)}")
    if isinstance(baseline, str):
        if baseline not in names:
            raise UsageError(f"no run is named {baseline!r}; the runs are: {', '.join(names)}")
        return names, names.index(baseline)
    if isinstance(baseline, int) and not isinstance(baseline, bool) and 0 <= baseline < len(results):
        return names, baseline
    raise UsageError(f"baseline must be a run label or an index below {len(results)}; got {baseline!r}")


def _compare_two(base: EvaluationResult, cand: EvaluationResult, *, metrics: Sequence[str] | None,
                 by: str | Iterable[str], primary: str | None, top: int, baseline_label: str | None,
                 candidate_label: str | None, seed: int, resamples: int, n_permutations: int,
                 confidence: float) -> Comparison:
    """Two runs: rows per metric and segment, and the most-changed queries of the primary metric."""
    if metrics is None:
        names = [m for m in base.metric_names if m in cand.values]
        not_compared = tuple(m for m in (*base.metric_names, *cand.metric_names) if not (m in base.values and m in cand.values))
    else:
        names = [base.resolve_metric(m) for m in metrics]
        for m in names:
            cand.resolve_metric(m)
        not_compared = ()
    if not names:
        raise UsageError("the two results share no metric; evaluate both runs with the same metrics")
    prim = names[0] if primary is None else base.resolve_metric(primary)
    if prim not in names:
        names.append(prim)

    cidx = cand.query_index()
    pairs = [(i, cidx[q]) for i, q in enumerate(base.query_ids) if q in cidx]
    bi = np.array([p[0] for p in pairs], dtype=np.int64)
    ci = np.array([p[1] for p in pairs], dtype=np.int64)
    paired_ids = [base.query_ids[i] for i in bi.tolist()]
    bset = set(base.query_ids)
    only_base = tuple(q for q in base.query_ids if q not in cidx)
    only_cand = tuple(q for q in cand.query_ids if q not in bset)

    scopes: list[tuple[str | None, str | None]] = [(None, None)]
    members = [np.arange(bi.size)]  # each scope's paired queries, in query order
    keys: list[str] = []
    for name in split_fields(by):
        source = base
        try:
            key, labels = segment_labels(base, name)
        except UsageError:
            source = cand
            key, labels = segment_labels(cand, name)
        if key in keys:
            continue
        keys.append(key)
        sel = bi if source is base else ci
        distinct, codes, order = label_groups([labels[i] for i in sel.tolist()])
        scopes += [(key, label) for label in distinct]
        if distinct:
            members += np.split(order, np.cumsum(np.bincount(codes, minlength=len(distinct)))[:-1])
    units = _paired_conversations(base, cand, bi, ci)
    rows = _delta_rows(base, cand, bi, ci, names, scopes, np.concatenate(members), [m.size for m in members],
                       seed=seed, resamples=resamples, n_permutations=n_permutations, confidence=confidence,
                       clusters=units)

    regressions, improvements, changed = _query_changes(base, cand, bi, ci, paired_ids, prim, top)
    changed_by_metric = tuple((m, _changed_count(base.values[m][bi], cand.values[m][ci])) for m in names)
    bmiss, cmiss = set(base.missing_from_run), set(cand.missing_from_run)
    return Comparison(
        metrics=tuple(names),
        by=tuple(keys),
        rows=rows,
        primary=prim,
        regressions=regressions,
        improvements=improvements,
        changed=changed,
        paired=int(bi.size),
        only_in_baseline=only_base,
        only_in_candidate=only_cand,
        missing_from_baseline_run=tuple(q for q in paired_ids if q in bmiss),
        missing_from_candidate_run=tuple(q for q in paired_ids if q in cmiss),
        not_compared=tuple(dict.fromkeys(not_compared)),
        baseline_label=pair_labels(base, cand, baseline_label, candidate_label)[0],
        candidate_label=pair_labels(base, cand, baseline_label, candidate_label)[1],
        seed=seed,
        resamples=resamples,
        n_permutations=n_permutations,
        confidence=confidence,
        changed_by_metric=changed_by_metric,
        resampling=_paired_resampling(base, cand, bi, ci, names, units),
    )


def _paired_conversations(base: EvaluationResult, cand: EvaluationResult, bi: np.ndarray,
                          ci: np.ndarray) -> np.ndarray | None:
    """A conversation code per paired query (the baseline's conversation ids, else the candidate's), or None."""
    codes = conversation_codes(base)
    if codes is not None:
        return codes[bi]
    codes = conversation_codes(cand)
    return None if codes is None else codes[ci]


def _paired_resampling(base: EvaluationResult, cand: EvaluationResult, bi: np.ndarray, ci: np.ndarray,
                       names: Sequence[str], units: np.ndarray | None) -> Resampling | None:
    """What the paired numbers resampled: the paired conversations and turns, and each metric's effective
    number of units over its paired differences; None when queries were the unit."""
    if units is None:
        return None
    turns = base.fields.get("turn") or ()
    effective = {m: effective_n(np.asarray(cand.values[m], dtype=np.float64)[ci]
                                - np.asarray(base.values[m], dtype=np.float64)[bi], units) for m in names}
    return Resampling(conversations=int(np.unique(units).size), turns=int(units.size),
                      follow_ups=sum(1 for i in bi.tolist() if i < len(turns) and turns[i] == "follow_up"),
                      effective_n=effective)


def _changed_count(vb: np.ndarray, vc: np.ndarray) -> int:
    """Paired queries whose value changed (where the metric applies in both runs), as the footer counts them."""
    ok = ~(np.isnan(vb) | np.isnan(vc))
    return int(np.count_nonzero(vb[ok] != vc[ok]))


def _delta_rows(base: EvaluationResult, cand: EvaluationResult, bi: np.ndarray, ci: np.ndarray, names: list[str],
                scopes: list[tuple[str | None, str | None]], members: np.ndarray, sizes: list[int], *, seed: int,
                resamples: int, n_permutations: int, confidence: float,
                clusters: np.ndarray | None = None) -> tuple[DeltaRow, ...]:
    """A row per metric and scope (metric by metric, scopes in order), Holm-corrected within its family: the
    headline rows (scope ``(None, None)``) of every metric are one, each field's segment rows another.

    ``members``: the paired positions of every scope one after the other (``sizes`` each). Every scope of
    every metric is one group of :func:`rankgate.stats.bootstrap.grouped_bootstrap_cis` and
    :func:`rankgate.stats.bootstrap.grouped_randomization_tests`: the numbers :func:`paired_bootstrap_ci` and
    :func:`randomization_test` give each scope alone, without a call per segment. ``clusters``: a conversation
    code per paired query (then conversations are resampled and flipped, :func:`grouped_cluster_cis`)."""
    scope_of = np.repeat(np.arange(len(scopes)), sizes)
    bs, cs, counts, units = [], [], [], []
    for m in names:
        vb = np.asarray(base.values[m], dtype=np.float64)[bi][members]
        vc = np.asarray(cand.values[m], dtype=np.float64)[ci][members]
        ok = ~(np.isnan(vb) | np.isnan(vc))
        bs.append(vb[ok])
        cs.append(vc[ok])
        counts.append(np.bincount(scope_of[ok], minlength=len(scopes)))
        if clusters is not None:
            units.append(clusters[members][ok])
    b, c = np.concatenate(bs), np.concatenate(cs)
    n = np.concatenate(counts)
    offsets = np.concatenate(([0], np.cumsum(n)))
    d = c - b
    # paired_bootstrap_ci resamples the differences that are numbers (as bootstrap_ci takes them)
    dok = ~np.isnan(d)
    group = np.repeat(np.arange(n.size), n)
    d_offsets = np.concatenate(([0], np.cumsum(np.bincount(group[dok], minlength=n.size))))
    if clusters is not None:
        unit = np.concatenate(units)
        low, high = grouped_cluster_cis(d[dok], d_offsets, unit[dok], seed=seed, resamples=resamples,
                                        confidence=confidence)
        p = grouped_cluster_randomization_tests(d, offsets, unit, seed=seed, resamples=n_permutations)
    else:
        low, high = grouped_bootstrap_cis(d[dok], d_offsets, seed=seed, resamples=resamples, confidence=confidence)
        p = grouped_randomization_tests(d, offsets, seed=seed, resamples=n_permutations)
    # Holm within each family: the headline rows (every metric over all queries), and each field's segment rows
    field_of = np.array([f if f is not None else "" for f, _ in scopes] * len(names), dtype=object)
    headline = np.tile(np.array([f is None for f, _ in scopes]), len(names))
    adjusted = np.full(p.shape, np.nan)
    family = np.zeros(p.shape, dtype=np.int64)
    for f in dict.fromkeys(f for f, _ in scopes):
        members_of = np.flatnonzero(headline) if f is None else np.flatnonzero(~headline & (field_of == f))
        adjusted[members_of] = holm(p[members_of])
        tested = int(np.count_nonzero(~np.isnan(p[members_of])))
        family[members_of] = tested or members_of.size
    mb, mc = exact_means(b, offsets), exact_means(c, offsets)
    n_of, low_of, high_of, p_of = n.tolist(), low.tolist(), high.tolist(), p.tolist()
    adj_of: list[float] = adjusted.tolist()
    family_of = [int(x) for x in family]
    rows = []
    for j, m in enumerate(names):
        hib = higher_is_better(m)
        for s, (scope, label) in enumerate(scopes):
            g = j * len(scopes) + s
            rows.append(DeltaRow(m, scope, label, n_of[g], mb[g], mc[g], mc[g] - mb[g], low_of[g], high_of[g], p_of[g],
                                 float(adj_of[g]), hib, family_of[g]))
    return tuple(rows)


def _query_changes(
    base: EvaluationResult, cand: EvaluationResult, bi: np.ndarray, ci: np.ndarray,
    paired_ids: list[str], metric: str, top: int,
) -> tuple[tuple[QueryChange, ...], tuple[QueryChange, ...], int]:
    vb = base.values[metric][bi]
    vc = cand.values[metric][ci]
    ok = ~(np.isnan(vb) | np.isnan(vc))
    delta = np.where(ok, vc - vb, 0.0)
    sign = 1.0 if higher_is_better(metric) else -1.0
    gain = sign * delta  # > 0: the query got better
    rb = base.first_relevant_rank[bi] if base.first_relevant_rank is not None else None
    rc = cand.first_relevant_rank[ci] if cand.first_relevant_rank is not None else None
    bmiss, cmiss = set(base.missing_from_run), set(cand.missing_from_run)

    def rank_loss(j: int) -> int:
        # a relevant item moving down (or out: rank 0) breaks ties between equal metric changes
        if rb is None or rc is None:
            return 0
        before = int(rb[j]) or 10**9
        after = int(rc[j]) or 10**9
        return after - before

    def change(j: int) -> QueryChange:
        q = paired_ids[j]
        notes = []
        if q in cmiss:
            notes.append("missing from candidate run")
        if q in bmiss:
            notes.append("missing from baseline run")
        return QueryChange(
            q, metric, float(vb[j]), float(vc[j]), float(delta[j]),
            None if rb is None else int(rb[j]), None if rc is None else int(rc[j]), "; ".join(notes),
        )

    worse = np.flatnonzero(gain < 0).tolist()
    better = np.flatnonzero(gain > 0).tolist()
    worse.sort(key=lambda j: (float(gain[j]), -rank_loss(j), paired_ids[j]))
    better.sort(key=lambda j: (-float(gain[j]), rank_loss(j), paired_ids[j]))
    top = max(0, int(top))
    return (
        tuple(change(j) for j in worse[:top]),
        tuple(change(j) for j in better[:top]),
        len(worse) + len(better),
    )


# -- several runs against one baseline ----------------------------------------------------------
@dataclass(frozen=True)
class SystemRow(DeltaRow):
    """One metric for one run against the baseline (``candidate`` is that run's mean)."""

    system: str = ""


@dataclass(frozen=True)
class SystemPairing:
    """How one run's queries paired with the baseline's."""

    system: str
    paired: int
    only_in_baseline: tuple[str, ...] = ()
    only_in_system: tuple[str, ...] = ()
    missing_from_run: tuple[str, ...] = ()


@dataclass(frozen=True)
class MultiComparison(PairedComparison):
    """Several runs compared with one baseline by :func:`compare` (or :func:`compare_systems`): rows metric by
    metric, runs in the order given."""

    baseline: str
    systems: tuple[str, ...]
    metrics: tuple[str, ...]
    rows: tuple[SystemRow, ...]
    pairings: tuple[SystemPairing, ...]
    missing_from_baseline_run: tuple[str, ...] = ()
    not_compared: tuple[str, ...] = ()
    seed: int = 0
    resamples: int = 2000
    n_permutations: int = 10000
    confidence: float = 0.95
    resampling: Resampling | None = None  # conversations, when the queries carry them (None: queries)

    @property
    def baseline_name(self) -> str:
        return self.baseline

    @property
    def run_names(self) -> tuple[str, ...]:
        return self.systems

    def row(self, metric: str, system: str) -> SystemRow | None:
        for r in self.rows:
            if r.metric == metric and r.system == system:
                return r
        return None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able data (NaN as null); same comparison ⇒ same dict."""
        return {
            "baseline": self.baseline,
            "runs": list(self.systems),
            "metrics": list(self.metrics),
            "rows": [
                {
                    "metric": r.metric,
                    "run": r.system,
                    "n": r.n,
                    "baseline": nan_to_none(r.baseline),
                    "mean": nan_to_none(r.candidate),
                    **change_stats(r, self.confidence),
                }
                for r in self.rows
            ],
            "queries": {
                p.system: {
                    "paired": p.paired,
                    "only_in_baseline": list(p.only_in_baseline),
                    "only_in_run": list(p.only_in_system),
                    "missing_from_run": list(p.missing_from_run),
                }
                for p in self.pairings
            },
            "missing_from_baseline_run": list(self.missing_from_baseline_run),
            "not_compared": list(self.not_compared),
            "statistics": _statistics(self, "Holm across every (run, metric) row (the headline rows)"),
        }


def compare_systems(
    results: Sequence[EvaluationResult],
    *,
    labels: Sequence[str] | None = None,
    baseline: int | str = 0,
    metrics: Sequence[str] | None = None,
    statistics: Statistics | None = None,
    seed: int = 0,
    resamples: int = 2000,
    n_permutations: int = 10000,
    confidence: float = 0.95,
) -> MultiComparison:
    """Every result against one baseline as a :class:`MultiComparison`, two results included (kept until 0.3:
    :func:`compare` with a list of three or more gives the same).

    Args:
        labels: a name per result (default: the run file's name, else ``run 1``, ``run 2`` …).
        baseline: index or label of the baseline (default: the first result).
        metrics: metrics to compare (default: those evaluated in every result, in the baseline's order).
        seed: every row uses a fresh generator seeded with it, as :func:`compare` does.
    """
    seed, resamples, confidence = taken(statistics, seed, resamples, confidence, caller="compare_systems",
                                         defaults=(0, 2000, 0.95))
    runs = _listed(results, "compare_systems")
    names, b = _run_names(runs, labels, baseline)
    return _compare_many(runs, names, b, metrics=metrics, seed=seed, resamples=resamples,
                         n_permutations=n_permutations, confidence=confidence)


def _compare_many(results: list[EvaluationResult], names: list[str], b: int, *, metrics: Sequence[str] | None,
                  seed: int, resamples: int, n_permutations: int, confidence: float) -> MultiComparison:
    """Every run against ``results[b]``: a row per metric and run, Holm-corrected across all of them."""
    base = results[b]
    others = [i for i in range(len(results)) if i != b]
    if metrics is None:
        shared = [m for m in base.metric_names if all(m in r.values for r in results)]
        every = [m for r in results for m in r.metric_names]
        not_compared = tuple(dict.fromkeys(m for m in every if m not in shared))
    else:
        shared = [base.resolve_metric(m) for m in metrics]
        for r in results:
            for m in shared:
                r.resolve_metric(m)
        not_compared = ()
    if not shared:
        raise UsageError("the results share no metric; evaluate every run with the same metrics")

    pairings, pairs = [], {}
    bset = set(base.query_ids)
    for i in others:
        other = results[i]
        oidx = other.query_index()
        pair = [(j, oidx[q]) for j, q in enumerate(base.query_ids) if q in oidx]
        bi = np.array([p[0] for p in pair], dtype=np.int64)
        oi = np.array([p[1] for p in pair], dtype=np.int64)
        pairs[i] = (bi, oi)
        paired_ids = {base.query_ids[j] for j in bi.tolist()}
        omiss = set(other.missing_from_run)
        pairings.append(SystemPairing(
            names[i], int(bi.size),
            only_in_baseline=tuple(q for q in base.query_ids if q not in oidx),
            only_in_system=tuple(q for q in other.query_ids if q not in bset),
            missing_from_run=tuple(q for q in other.query_ids if q in omiss and q in paired_ids),
        ))

    raw: list[SystemRow] = []
    units = {i: _paired_conversations(base, results[i], *pairs[i]) for i in others}
    for m in shared:
        hib = higher_is_better(m)
        for i in others:
            bi, oi = pairs[i]
            vb, vo = base.values[m][bi], results[i].values[m][oi]
            ok = ~(np.isnan(vb) | np.isnan(vo))
            x, y = vb[ok], vo[ok]
            mb, mo = exact_mean(x), exact_mean(y)
            unit = units[i]
            if unit is None:
                low, high = paired_bootstrap_ci(x, y, rng=seed, resamples=resamples, confidence=confidence)
                p = randomization_test(x, y, rng=seed, resamples=n_permutations)
            else:
                low, high = paired_bootstrap_ci(x, y, rng=seed, resamples=resamples, confidence=confidence,
                                                clusters=unit[ok])
                p = randomization_test(x, y, rng=seed, resamples=n_permutations, clusters=unit[ok])
            raw.append(SystemRow(m, None, None, int(ok.sum()), mb, mo, mo - mb, low, high, p, math.nan, hib,
                                 system=names[i]))
    adjusted = holm([r.p_value for r in raw])
    family = int(np.count_nonzero(~np.isnan(adjusted))) or len(raw)  # every row is a headline row
    rows = tuple(
        SystemRow(r.metric, None, None, r.n, r.baseline, r.candidate, r.delta, r.ci_low, r.ci_high, r.p_value,
                  float(a), r.higher_is_better, family, system=r.system)
        for r, a in zip(raw, adjusted.tolist())
    )
    return MultiComparison(
        baseline=names[b],
        systems=tuple(names[i] for i in others),
        metrics=tuple(shared),
        rows=rows,
        pairings=tuple(pairings),
        missing_from_baseline_run=tuple(base.missing_from_run),
        not_compared=not_compared,
        seed=seed,
        resamples=resamples,
        n_permutations=n_permutations,
        confidence=confidence,
        resampling=next((_paired_resampling(base, results[i], *pairs[i], shared, units[i]) for i in others
                         if units[i] is not None), None),
    )
