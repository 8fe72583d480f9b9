"""Production traces: their retrieval signals (analyze), the monitors on them (check), and the queries
worth labelling (sample). See :mod:`rankgate.traces` and docs/traces.md."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rankgate._util import progress
from rankgate.flows._inputs import FilePath, paths

if TYPE_CHECKING:  # pragma: no cover
    from rankgate.traces.monitors import MonitorConfig, MonitorOutcome
    from rankgate.traces.signals import TraceSummary


def _check_threshold(abstention: str | None, threshold: float | None) -> None:
    from rankgate.errors import F, UsageError

    if abstention and threshold is not None:
        raise UsageError(f"give {F.abstention} or {F.abstention_threshold}, not both")
    if threshold is not None and not math.isfinite(threshold):
        raise UsageError(f"{F.abstention_threshold} must be a finite number; got {threshold}")


def _check_trace_fields(req: Any) -> None:
    """``req.fields`` read with the one field syntax (a UsageError naming the first flaw), kept as ``{name: path}``."""
    if req.fields is not None:
        from rankgate._util.fields import parse_fields
        from rankgate.traces.fieldmap import FIELD_NAMES, field_map_of

        field_map_of(req.fields)  # (the names, the paths, and the documents' one list)
        object.__setattr__(req, "fields", parse_fields(req.fields, FIELD_NAMES, command="traces"))


@dataclass(frozen=True, slots=True)
class TracesRequest:
    traces: tuple[str, ...]             # trace exports: files or folders
    format: str | None = None           # the export format (None: detected per file)
    on_error: str = "error"             # a row that cannot be used: error, or skip and count it
    field_map: str | None = None        # YAML: where the export keeps each field
    window: str | None = None           # window width (None: the monitors', else 1d)
    by: tuple[str, ...] = ()            # segment fields
    engine: str = "duckdb"              # duckdb or spark
    spark_master: str | None = None
    abstention: str | None = None       # the calibrate-abstention file: its threshold is low confidence
    abstention_threshold: float | None = None
    corpus: str | None = None           # manifest: item status and current versions
    k: int = 10                         # list depth compared for instability
    monitors: str | None = None         # YAML (None: the defaults)
    signals: str | Iterable[str] | None = None  # analyze: headline, all or groups (None: all); kept as a frozenset
    fields: Mapping[str, str] | None = None  # where the export keeps each field: {"id": "metadata.chunk_id"}
    judge_dir: str | None = None        # check: the folder of rankgate traces judge, whose judge.* signals join

    def inputs(self) -> tuple[FilePath, ...]:
        """The files the request reads (an output may be none of them): the trace exports, the monitors, the
        corpus manifest, the abstention file, the field map and the traces judge's folder."""
        return paths(*self.traces, self.monitors, self.corpus, self.abstention, self.field_map, self.judge_dir)

    def __post_init__(self) -> None:
        from rankgate._util.constraints import BY, FILE, NAMES, PATHS, TEXT, check, check_fields, typed
        from rankgate.errors import F, UsageError
        from rankgate.traces.model import current_field
        from rankgate.traces.signals import SEGMENT_FIELDS, parse_signals, parse_window

        # the types here (a UsageError naming the field; one path is one export, not its letters)
        check_fields(self, "TracesRequest", traces=typed(PATHS), format=TEXT, on_error=typed(str), field_map=FILE,
                     window=TEXT, by=BY, engine=typed(str), spark_master=TEXT, abstention=FILE,
                     abstention_threshold=typed(float, optional=True), corpus=FILE, k=typed(int), monitors=FILE,
                     judge_dir=TEXT)
        check(typed(NAMES, optional=True), self.signals, caller="TracesRequest", name="signals")
        _check_trace_fields(self)
        object.__setattr__(self, "signals", parse_signals(self.signals))
        object.__setattr__(self, "by", tuple(current_field(f, "segments") for f in self.by))  # (session: old name)
        for f in self.by:
            if f not in SEGMENT_FIELDS:
                raise UsageError(f"{F.by} {f!r} is not a segment field; fields: {', '.join(SEGMENT_FIELDS)}")
        if self.window:
            parse_window(self.window)
        if self.k < 1 or self.k > 100:
            raise UsageError(f"{F.k} must be between 1 and 100; got {self.k}")
        if self.spark_master and self.engine != "spark":
            raise UsageError(f"{F.spark_master} needs {F(engine='spark')}")
        _check_threshold(self.abstention, self.abstention_threshold)


@dataclass(frozen=True, slots=True)
class TracesResult:
    summary: TraceSummary               # the signals asked for, per window and segment
    outcome: MonitorOutcome | None      # the monitors' flags (analyze: only for every signal)
    monitors: MonitorConfig             # the monitors checked


def _summarize(req: TracesRequest, by_extra: tuple[str, ...] = (), window: str | None = None,
               signals: Any = None) -> Any:
    from rankgate.traces import read_traces
    from rankgate.traces.engines import make_backend
    from rankgate.traces.signals import parse_window, summarize_traces, top1_only

    window = req.window or window or "1d"
    parse_window(window)
    threshold = req.abstention_threshold
    if threshold is None and req.abstention:
        from rankgate.traces.abstention import read_threshold

        threshold = read_threshold(req.abstention)
    manifest = None
    if req.corpus:
        from rankgate.corpus import load_manifest

        manifest = load_manifest(req.corpus)
    # on DuckDB, items of large rankgate Parquet files stay in the file (rankgate.traces.native)
    tables = read_traces(list(req.traces), format=req.format, on_error=req.on_error, field_map=req.field_map,
                         engine_items=req.engine in (None, "duckdb"), rank1=top1_only(signals), fields=req.fields)
    backend = make_backend(req.engine, spark_master=req.spark_master)
    try:
        with progress.stage(f"computing the signals of {tables.requests.num_rows:,} requests"):
            return summarize_traces(tables, by=tuple(dict.fromkeys(req.by + by_extra)), backend=backend,
                                    window=window, threshold=None if threshold is None else float(threshold),
                                    manifest=manifest, k=req.k, signals=signals)
    finally:
        backend.close()


def run_analyze(req: TracesRequest) -> TracesResult:
    """The signals asked for per window and segment; for every signal, also the monitors' flags (which
    the HTML report marks)."""
    from rankgate.traces.monitors import check_monitors, load_monitors

    monitors = load_monitors(req.monitors)
    summary = _summarize(req, window=monitors.window, signals=req.signals)
    return TracesResult(summary, check_monitors(summary, monitors) if req.signals is None else None, monitors)


def run_check(req: TracesRequest) -> TracesResult:
    """The monitors run on the signals, with the segments they name."""
    from rankgate.traces.monitors import check_monitors, load_monitors

    monitors = load_monitors(req.monitors)
    from rankgate.traces.judge import check_judge_monitors, with_judge_signals

    check_judge_monitors(monitors, req.judge_dir is not None)  # (before the traces are read)
    summary = _summarize(req, monitors.segment_fields, window=monitors.window)
    if req.judge_dir is not None:
        summary = with_judge_signals(summary, req.judge_dir)
    outcome = check_monitors(summary, monitors)
    if monitors.validity is not None:  # the gated metric against production outcomes (docs/validity.md)
        from rankgate.flows.validity import with_validity_monitor

        outcome = with_validity_monitor(req, monitors.validity, summary, outcome)
    return TracesResult(summary, outcome, monitors)


@dataclass(frozen=True, slots=True)
class SampleRequest:
    traces: tuple[str, ...]             # trace exports: files or folders
    format: str | None = None
    field_map: str | None = None
    on_error: str = "error"
    abstention: str | None = None       # requests whose top score is under its threshold are candidates
    abstention_threshold: float | None = None
    corpus: str | None = None           # manifest: each candidate chunk gets its text and status
    n: int = 50                         # how many candidates
    seed: int = 0
    by: tuple[str, ...] = ("tenant",)   # request fields to stratify by besides reason and source
    fields: Mapping[str, str] | None = None  # where the export keeps each field (as TracesRequest's)
    plan: str | None = None             # a gold plan's plan.csv: each segment's quota replaces n, by and the reasons

    def inputs(self) -> tuple[FilePath, ...]:
        """The files the request reads (an output may be none of them): the trace exports, the abstention
        file, the field map, the corpus manifest and the plan."""
        return paths(*self.traces, self.abstention, self.field_map, self.corpus, self.plan)

    def __post_init__(self) -> None:
        from rankgate._util.constraints import BY, FILE, PATHS, TEXT, check_fields, typed

        check_fields(self, "SampleRequest", traces=typed(PATHS), format=TEXT, field_map=FILE, on_error=typed(str),
                     abstention=FILE, abstention_threshold=typed(float, optional=True), corpus=FILE, n=typed(int),
                     seed=typed(int), by=BY, plan=FILE)
        _check_trace_fields(self)
        _check_threshold(self.abstention, self.abstention_threshold)
        if self.plan and (self.abstention or self.abstention_threshold is not None):
            from rankgate.errors import F, UsageError

            raise UsageError(f"{F.plan} samples each segment's production queries at random; the low-confidence "
                             f"line ({F.abstention}, {F.abstention_threshold}) is for sampling by reason, without it")


@dataclass(frozen=True, slots=True)
class Sample:
    records: tuple[dict[str, Any], ...]  # the gold-set candidates
    threshold: float | None              # the low-confidence line used (None: not sampled)
    missing: tuple[str, ...]             # candidate chunks the corpus lacks
    skipped: int                         # unusable rows skipped
    quotas: tuple[tuple[str, str, int], ...] = ()      # with a plan: (field, value, labels) per segment
    short: tuple[tuple[str, str, int, int], ...] = ()  # (field, value, quota, found) the traces could not fill
    untracked: tuple[tuple[str, str, int], ...] = ()   # (field, value, quota) of fields the traces do not carry


def run_sample(req: SampleRequest) -> Sample:
    from rankgate.traces import read_traces
    from rankgate.traces.sample import sample_candidates

    threshold = req.abstention_threshold
    if threshold is None and req.abstention:
        from rankgate.traces.abstention import read_threshold

        threshold = read_threshold(req.abstention)
    threshold = None if threshold is None else float(threshold)
    corpus = None
    if req.corpus:
        from rankgate.corpus import load_manifest

        corpus = load_manifest(req.corpus)
    quotas = None
    if req.plan:  # read before the traces: a plan that cannot be read stops the command at once
        from rankgate.goldset.plan import read_plan_quotas

        quotas = read_plan_quotas(req.plan)
    tables = read_traces(list(req.traces), format=req.format, on_error=req.on_error, field_map=req.field_map,
                         fields=req.fields)
    if quotas is not None:
        return _sample_to_plan(req, tables, corpus, quotas)
    recs = sample_candidates(tables, threshold=threshold, n=req.n, seed=req.seed, by=req.by)
    missing: list[str] = []
    if corpus is not None:
        from rankgate.traces.sample import add_corpus_texts

        missing = add_corpus_texts(recs, corpus)
    return Sample(tuple(recs), threshold, tuple(missing), tables.skipped.total)


def _sample_to_plan(req: SampleRequest, tables: Any, corpus: Any, quotas: Mapping[tuple[str, str], int]) -> Sample:
    """``gold sample --plan``: each segment's production queries to its quota (:mod:`rankgate.traces.quota`)."""
    from rankgate.traces.quota import sample_to_quotas

    got = sample_to_quotas(tables, quotas, seed=req.seed)
    recs = list(got.records)
    missing: list[str] = []
    if corpus is not None:
        from rankgate.traces.sample import add_corpus_texts

        missing = add_corpus_texts(recs, corpus)
    return Sample(tuple(recs), None, tuple(missing), tables.skipped.total,
                  tuple((f, v, n) for (f, v), n in quotas.items()), got.short, got.untracked)
