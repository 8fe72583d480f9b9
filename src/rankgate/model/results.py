"""The result of an evaluation: per-query values, means, and what was evaluated.

A result knows nothing about how it is shown; renderers in :mod:`rankgate.render` format it.

Per-query values are ``float64`` arrays aligned with :attr:`EvaluationResult.query_ids`. A value of
``NaN`` means *not applicable* for that query (for example a ranking metric on a no-answer query, or
``containment@k`` on a query without an expected answer); means, counts and statistics use only the
queries where the metric applies, and ``n`` says how many those are.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rankgate._util.jsonable import exact_mean, nan_to_none
from rankgate.errors import UsageError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = ["EvaluationResult", "MetricSummary", "run_label"]


@dataclass(frozen=True)
class MetricSummary:
    """Mean of one metric over the queries where it applies."""

    name: str
    mean: float
    n: int


@dataclass(frozen=True)
class EvaluationResult:
    """Per-query metric values for one run against one gold set.

    Attributes:
        query_ids: evaluated queries, in gold-set order.
        metric_names: canonical metric names, in the order requested.
        values: canonical metric name -> ``float64`` array aligned with ``query_ids`` (NaN = n/a).
        fields: per-query descriptive fields usable as segments: ``intent``, ``segment``,
            ``source_of_query``, ``corpus_version``, ``tags.<name>`` … -> one label (or None) per query.
        first_relevant_rank: rank (1-based) of the first relevant item per query, 0 when none was
            retrieved (relevance threshold 1). Used to explain what changed between two runs. Runs
            of more than 2M rows are cut at the deepest cutoff the metrics need
            (``info["evaluated_depth"]``); then 0 means none within that depth.
        missing_from_run: gold queries with no ranking in the run (they score 0).
        not_in_gold: run queries absent from the gold set (ignored).
        no_answer: gold queries with no relevant item (ranking metrics do not apply to them).
        definitions: canonical metric name -> the exact definition used.
        inputs: what was evaluated (paths and sha256 of the files, or labels for in-memory data).
        info: extra facts for reports (run systems, index versions, corpus versions, options used).
    """

    query_ids: tuple[str, ...]
    metric_names: tuple[str, ...]
    values: Mapping[str, np.ndarray]
    fields: Mapping[str, tuple[str | None, ...]] = field(default_factory=dict)
    first_relevant_rank: np.ndarray | None = None
    missing_from_run: tuple[str, ...] = ()
    not_in_gold: tuple[str, ...] = ()
    no_answer: tuple[str, ...] = ()
    definitions: Mapping[str, str] = field(default_factory=dict)
    inputs: Mapping[str, Any] = field(default_factory=dict)
    info: Mapping[str, Any] = field(default_factory=dict)
    # Means already summed (a report asks for the same ones several times); never copied by replace().
    _summaries: dict[str, MetricSummary] = field(default_factory=dict, init=False, repr=False, compare=False)

    # -- access ---------------------------------------------------------------------------------
    def __getitem__(self, metric: str) -> np.ndarray:
        return self.values[self.resolve_metric(metric)]

    def resolve_metric(self, metric: str) -> str:
        """The canonical name under which ``metric`` (any spelling: ``ndcg@10``, ``NDCG@10``) is stored."""
        if metric in self.values:
            return metric
        from rankgate.metrics import parse_metric

        name = str(parse_metric(metric))
        if name not in self.values:
            raise UsageError(
                f"metric '{metric}' was not evaluated; evaluated: {', '.join(self.metric_names)}"
            )
        return name

    def summary(self, metric: str) -> MetricSummary:
        """Mean and count of ``metric`` over the queries where it applies."""
        import numpy as np

        name = self.resolve_metric(metric)
        got = self._summaries.get(name)
        if got is None:
            v = self.values[name]
            ok = v[~np.isnan(v)]
            got = self._summaries[name] = MetricSummary(name, exact_mean(ok), int(ok.size))
        return got

    @property
    def means(self) -> dict[str, float]:
        """Canonical metric name -> mean over the queries where it applies (NaN if none)."""
        return {m: self.summary(m).mean for m in self.metric_names}

    def segment(self, field_name: str) -> tuple[str | None, ...]:
        """Per-query labels of a gold field or tag (``intent``, ``tags.lang`` or just ``lang``)."""
        if field_name in self.fields:
            return self.fields[field_name]
        tagged = f"tags.{field_name}"
        if tagged in self.fields:
            return self.fields[tagged]
        known = ", ".join(sorted(self.fields)) or "none"
        raise UsageError(f"no field or tag '{field_name}' in the gold set; available: {known}")

    def subset(self, mask: np.ndarray) -> EvaluationResult:
        """The same result restricted to the queries where ``mask`` is true."""
        import numpy as np

        idx = np.flatnonzero(mask)
        kept = [self.query_ids[i] for i in idx]
        missing, no_answer = set(self.missing_from_run), set(self.no_answer)
        return EvaluationResult(
            query_ids=tuple(kept),
            metric_names=self.metric_names,
            values={k: v[idx] for k, v in self.values.items()},
            fields={k: tuple(v[i] for i in idx) for k, v in self.fields.items()},
            first_relevant_rank=None if self.first_relevant_rank is None else self.first_relevant_rank[idx],
            missing_from_run=tuple(q for q in kept if q in missing),
            not_in_gold=(),
            no_answer=tuple(q for q in kept if q in no_answer),
            definitions=self.definitions,
            inputs=self.inputs,
            info=self.info,
        )

    def query_index(self) -> dict[str, int]:
        return {q: i for i, q in enumerate(self.query_ids)}

    # Kept for code written against earlier releases; use :meth:`resolve_metric`.
    _name = resolve_metric

    def to_dict(self) -> dict[str, Any]:
        """Summary as plain JSON-able data (no per-query values)."""
        return {
            "metrics": {m: {"mean": nan_to_none(s.mean), "n": s.n} for m in self.metric_names for s in [self.summary(m)]},
            "queries": {
                "evaluated": len(self.query_ids),
                "missing_from_run": list(self.missing_from_run),
                "not_in_gold": list(self.not_in_gold),
                "no_answer": list(self.no_answer),
            },
            "definitions": dict(self.definitions),
            "inputs": dict(self.inputs),
        }


def run_names(paths: Sequence[str], systems: Sequence[str | None] | None = None) -> list[str]:
    """How runs are named, the one rule of every flow that shows several (compare, report, pool, gate): the
    ``system`` the run's file gives (one value on its lines, ``systems``) when no other run has the same
    one; else the run's file name, or its path as given when another run (another path) has the same file
    name."""
    names = [os.path.basename(p) or p for p in paths]
    by_file = [p if any(other != p and os.path.basename(other) == name for other in paths) else name
               for p, name in zip(paths, names)]
    if not systems:
        return by_file
    return [s if s and sum(1 for t in systems if t == s) == 1 and s not in by_file[:i] + by_file[i + 1:] else f
            for i, (s, f) in enumerate(zip(systems, by_file))]


def run_system(result: EvaluationResult) -> str | None:
    """The one ``system`` a result's run file gives on its lines, or None (none given, or several)."""
    info: Any = getattr(result, "info", None)
    info_run: Any = info.get("run") if isinstance(info, Mapping) else None
    systems = info_run.get("system") if isinstance(info_run, Mapping) else None
    if isinstance(systems, list) and len(systems) == 1 and isinstance(systems[0], str) and systems[0].strip():
        return systems[0]
    return None


def run_label(result: EvaluationResult, given: str | None = None, default: str = "candidate") -> str:
    """How a result's run is named in comparisons and gates: ``given`` if set, else the ``system`` its file
    gives on its lines (:func:`run_system`), else the run file's name (``inputs["run"]["path"]``), else
    ``default``. Two results named alike are told apart by :func:`pair_labels`."""
    if given:
        return given
    system = run_system(result)
    if system:
        return system
    run = result.inputs.get("run") if hasattr(result.inputs, "get") else None
    path = run.get("path") if run is not None and hasattr(run, "get") else None
    return os.path.basename(str(path)) if path else default


def pair_labels(base: EvaluationResult, cand: EvaluationResult, given_base: str | None = None,
                given_cand: str | None = None) -> tuple[str, str]:
    """The names of a baseline and a candidate: :func:`run_label` of each, or, when both runs give the same
    ``system``, their file names (a candidate of the same system is still another run)."""
    b, c = run_label(base, given_base, "baseline"), run_label(cand, given_cand, "candidate")
    if b == c and not (given_base and given_cand):
        files = run_names([_run_path(base) or "baseline", _run_path(cand) or "candidate"])
        b = given_base or files[0]
        c = given_cand or files[1]
    return b, c


def _run_path(result: EvaluationResult) -> str | None:
    run = result.inputs.get("run") if hasattr(result.inputs, "get") else None
    path = run.get("path") if run is not None and hasattr(run, "get") else None
    return str(path) if path else None

