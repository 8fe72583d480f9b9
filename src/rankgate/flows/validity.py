"""Offline ↔ online validity: the gold set's per-query metric values against what the same queries met in
production (:mod:`rankgate.traces.validity`, docs/validity.md)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rankgate._util import progress
from rankgate.flows._inputs import FilePath, paths

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from rankgate.flows.traces import TracesRequest
    from rankgate.traces.model import TraceTables
    from rankgate.traces.monitors import MonitorOutcome
    from rankgate.traces.signals import TraceSummary
    from rankgate.traces.validity import ValidityAnalysis, ValidityMonitor


@dataclass(frozen=True, slots=True)
class ValidityRequest:
    gold: str
    run: str                            # the run the gate scored (per-query values)
    traces: tuple[str, ...]             # trace exports: files or folders
    metrics: str = "hit@5,recall@5,mrr"  # offline metrics, better high
    by: tuple[str, ...] = ()            # gold-set fields to break the rows down by
    outcomes: tuple[str, ...] = ()      # online outcomes (empty: every one the traces carry)
    key: str = "text"                   # text (the normalised query text's id) or query_key
    fail_below: float = 0.5             # a query misses a metric when its value is below this
    effect: float = 0.10                # the risk difference the power is stated for
    confidence: float = 0.95
    engine: str = "duckdb"              # the trace engine: duckdb or spark
    spark_master: str | None = None
    gold_format: str | None = None
    run_format: str | None = None
    traces_format: str | None = None
    on_error: str = "error"             # a trace row that cannot be used: error, or skip and count it
    field_map: str | None = None
    abstention: str | None = None       # the calibrate-abstention file: its threshold is low confidence
    abstention_threshold: float | None = None
    fields: Mapping[str, str] | None = field(default=None, hash=False)  # where the trace export keeps each field

    def inputs(self) -> tuple[FilePath, ...]:
        """The files the request reads: the gold set, the run, the trace exports, the abstention file and the
        field map."""
        return paths(self.gold, self.run, *self.traces, self.abstention, self.field_map)

    def __post_init__(self) -> None:
        from rankgate._util.constraints import BY, CONFIDENCE, FILE, NAMES, PATHS, TEXT, check, check_fields, typed
        from rankgate.errors import F, UsageError
        from rankgate.traces.validity import KEYS, OUTCOMES

        check_fields(self, "ValidityRequest", gold=typed(str), run=typed(str), traces=typed(PATHS), metrics=typed(str),
                     by=BY, key=typed(str), fail_below=typed(float), effect=typed(float), engine=typed(str),
                     spark_master=TEXT, gold_format=TEXT, run_format=TEXT, traces_format=TEXT, on_error=typed(str),
                     field_map=FILE, abstention=FILE, abstention_threshold=typed(float, optional=True))
        object.__setattr__(self, "outcomes", check(typed(NAMES), self.outcomes, caller="ValidityRequest",
                                                   name="outcomes"))
        object.__setattr__(self, "confidence", check(CONFIDENCE, self.confidence, caller="ValidityRequest"))
        for o in self.outcomes:
            if o not in OUTCOMES:
                raise UsageError(f"{F.outcomes}: unknown outcome {o!r}; outcomes: {', '.join(OUTCOMES)}")
        if self.key not in KEYS:
            raise UsageError(f"{F.key} must be one of {', '.join(KEYS)}; got {self.key!r}")
        if not 0 < self.fail_below <= 1:
            raise UsageError(f"{F.fail_below} must lie in (0, 1]; got {self.fail_below}")
        if not 0 < self.effect < 1:
            raise UsageError(f"{F.effect} must lie between 0 and 1 (a difference of two shares); got {self.effect}")
        if self.engine not in ("duckdb", "spark"):
            raise UsageError(f"{F.engine} must be duckdb or spark; got {self.engine!r}")
        if self.spark_master and self.engine != "spark":
            raise UsageError(f"{F.spark_master} needs {F(engine='spark')}")
        if self.abstention and self.abstention_threshold is not None:
            raise UsageError(f"give {F.abstention} or {F.abstention_threshold}, not both")
        if self.abstention_threshold is not None and not math.isfinite(self.abstention_threshold):
            raise UsageError(f"{F.abstention_threshold} must be a finite number; got {self.abstention_threshold}")
        if self.on_error not in ("error", "skip"):
            raise UsageError(f"{F.on_error} must be error or skip; got {self.on_error!r}")


@dataclass(frozen=True, slots=True)
class ValidityResult:
    analysis: ValidityAnalysis
    inputs: Mapping[str, str]           # gold, run, traces: sha256 of each (pipes: "")


def run_validity(req: ValidityRequest, *, tables: TraceTables | None = None) -> ValidityResult:
    """The analysis of ``req`` (docs/validity.md). ``tables``: traces already read (``traces check`` reads
    them once for its signals and for its validity monitor)."""
    from rankgate.traces.engines import make_backend
    from rankgate.traces.validity import outcome_counts

    threshold = req.abstention_threshold
    if threshold is None and req.abstention:
        from rankgate.traces.abstention import read_threshold

        threshold = read_threshold(req.abstention)
    keys, query_ids, values, segments, metrics = _offline(req)
    if tables is None:
        from rankgate.traces import read_traces

        tables = read_traces(list(req.traces), format=req.traces_format, on_error=req.on_error,
                             field_map=req.field_map, fields=req.fields, engine_items=req.engine == "duckdb")
    _check_trace_fields(tables, req.key)
    backend = make_backend(req.engine, spark_master=req.spark_master)
    try:
        with progress.stage(f"counting the outcomes of {tables.requests.num_rows:,} requests per query"):
            counted = outcome_counts(tables, backend=backend, key=req.key,
                                     threshold=None if threshold is None else float(threshold))
    finally:
        backend.close()
    from rankgate.traces.validity import analyse

    analysis = analyse(query_ids, keys, values, counted, segments=segments, outcomes=req.outcomes or None,
                       fail_below=req.fail_below, effect=req.effect, confidence=req.confidence, key=req.key,
                       no_key_reason="no query text" if req.key == "text" else "no query_key field")
    if not analysis.rows:
        from rankgate.errors import InputError

        notes = "; ".join(f"{o}: {n}" for o, n in analysis.absent.items())
        raise InputError(f"none of the online outcomes asked for can be measured from these traces ({notes})",
                         path=req.traces[0] if len(req.traces) == 1 else "<traces>",
                         hint="see docs/validity.md, 'Outcomes', for the fields each outcome reads")
    return ValidityResult(analysis, _hashes(req))


def _offline(req: ValidityRequest) -> tuple[list[str | None], list[str], dict[str, np.ndarray], dict[str, tuple[str, ...]],
                                             tuple[str, ...]]:
    """The gold queries' join keys, ids, per-query metric values and segment labels (the evaluate flow's
    values, without intervals)."""
    import numpy as np

    from rankgate.errors import F, UsageError
    from rankgate.flows.evaluate import EvaluateRequest, Scoring, Statistics, run_evaluation
    from rankgate.io import load_gold
    from rankgate.metrics.info import metric_info
    from rankgate.stats.segments import display_field, field_key
    from rankgate.traces.validity import query_text_key

    gold = load_gold(req.gold, format=req.gold_format, label=req.gold)
    with progress.stage("scoring the run on the gold set"):
        ev = run_evaluation(EvaluateRequest(gold, req.run, Scoring(metrics=req.metrics, run_format=req.run_format),
                                            Statistics(resamples=0), latency=False))
    result = ev.result
    for m in result.metric_names:
        if not metric_info(m).higher_is_better:
            raise UsageError(f"{F.metrics}: {m} is better low; validity reads metrics that are better high "
                             "(hit, recall, mrr, ndcg …)")
    position = {q: i for i, q in enumerate(gold.query_ids)}
    if req.key == "text":
        source = gold.field("query")
        keys = [query_text_key(source[position[q]]) if q in position else None for q in result.query_ids]
    else:
        source = gold.field("query_key")
        keys = [(str(source[position[q]]).strip() or None) if q in position and source[position[q]] is not None
                else None for q in result.query_ids]
        if all(k is None for k in keys):
            from rankgate.errors import InputError

            raise InputError("no gold query has a query_key field", path=req.gold, field="query_key",
                             hint="give each gold record the traces' query_key, or join on the query text "
                                  "(key text)")
    values: dict[str, np.ndarray] = {m: np.asarray(result.values[m], dtype=np.float64) for m in result.metric_names}
    segments: dict[str, tuple[str, ...]] = {}
    for name in req.by:
        k = field_key(result, name)
        labels = tuple("(none)" if v is None else str(v) for v in result.fields[k])
        segments[display_field(k)] = labels
    return keys, list(result.query_ids), values, segments, tuple(result.metric_names)


def _check_trace_fields(tables: TraceTables, key: str) -> None:
    """Traces that cannot join at all: no query text anywhere (text key)."""
    from rankgate.errors import InputError

    req = tables.requests
    if req.num_rows == 0:
        raise InputError("holds no requests", path="<traces>", hint="give trace exports with production requests")
    if key == "text" and req.column("query_text").null_count == req.num_rows:
        raise InputError("no request logs its query text, so no gold query can be matched", path="<traces>",
                         field="query",
                         hint="log the query text (rankgate trace JSONL: 'query'; or --field query=PATH), or join "
                              "on query_key")


def _hashes(req: ValidityRequest) -> dict[str, str]:
    from rankgate.io.inputs import sha256_files
    from rankgate.io.source import is_pipe

    import os

    traces: list[str] = []
    for p in req.traces:  # a folder stands for its files, in sorted order (as the trace readers read them)
        traces += (sorted(os.path.join(d, f) for d, _, fs in os.walk(p) for f in fs if not f.startswith("."))
                   if os.path.isdir(p) else [p])
    out = {}
    for name, given in (("gold", [req.gold]), ("run", [req.run]), ("traces", traces)):
        out[name] = "" if not given or any(is_pipe(p) for p in given) else sha256_files(given)
    return out


def with_validity_monitor(traces: TracesRequest, m: ValidityMonitor, summary: TraceSummary,
                          outcome: MonitorOutcome) -> MonitorOutcome:
    """``traces check`` with a ``validity:`` monitor: the analysis of its metric and outcome on the same
    traces, and the monitor's rule (:func:`rankgate.traces.validity.check_monitor`) as one more flag, or,
    when it cannot decide, a line among the cells not checked that says why and what it could see."""
    import dataclasses

    from rankgate.traces.monitors import Flag
    from rankgate.traces.validity import check_monitor

    req = ValidityRequest(m.gold, m.run, traces.traces, metrics=m.metric, outcomes=(m.outcome,), key=m.key,
                          fail_below=m.fail_below, effect=m.effect, confidence=m.confidence, engine=traces.engine,
                          spark_master=traces.spark_master, gold_format=m.gold_format, run_format=m.run_format,
                          traces_format=traces.format, on_error=traces.on_error, field_map=traces.field_map,
                          abstention=traces.abstention, abstention_threshold=traces.abstention_threshold,
                          fields=traces.fields)
    from rankgate.errors import InputError

    try:
        found = check_monitor(m, run_validity(req).analysis)
    except InputError as exc:  # no gold query joins a request: the monitor cannot be checked, and says so
        if "no gold query matches" not in str(exc):
            raise
        return dataclasses.replace(outcome, not_measurable={**outcome.not_measurable, m.name: str(exc)})
    if not found.decided:
        if "not measurable" in found.detail:
            return dataclasses.replace(outcome, not_measurable={**outcome.not_measurable, m.name: found.detail})
        unchecked = dict(outcome.unchecked)
        unchecked[f"{m.name}: {found.detail}"] = 1
        return dataclasses.replace(outcome, unchecked=unchecked)
    checked = outcome.checked + 1
    if not found.flagged:
        return dataclasses.replace(outcome, checked=checked)
    window = summary.windows[0] if summary.windows else 0
    flag = Flag(m.name, "validity", window, "all", found.value, found.queries, "validity", None, None, m.severity,
                m.owner, found.detail)
    return dataclasses.replace(outcome, flags=(*outcome.flags, flag), checked=checked)
