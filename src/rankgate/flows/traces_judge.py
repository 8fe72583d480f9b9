"""A sampled judge on production traces: :class:`TracesJudgeRequest` → :func:`run_traces_judge` →
:class:`TracesJudgeResult`; :func:`plan_traces_judge` draws the same sample and says the calls and their cost,
calling nothing. The steps are :mod:`rankgate.traces.judge`'s; rendering is :mod:`rankgate.render.traces_judge`'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rankgate._util import progress
from rankgate.flows._common import JudgeSpec, budget_warning, open_judge
from rankgate.flows._inputs import FilePath, paths

if TYPE_CHECKING:  # pragma: no cover
    from rankgate.judges import Plan
    from rankgate.traces.judge import RequestValue, Texts, TraceSample, TracesEstimate

__all__ = ["TracesJudgePlan", "TracesJudgeRequest", "TracesJudgeResult", "plan_traces_judge", "run_traces_judge"]


@dataclass(frozen=True, slots=True)
class TracesJudgeRequest:
    traces: tuple[str, ...]             # trace exports: files or folders
    sample: int                         # how many requests to judge, over every stratum
    judge: JudgeSpec = field(default_factory=JudgeSpec)  # its max_calls is required: the hard cap of the run
    stratify: tuple[str, ...] = ("source",)  # besides the window: request fields, and source (the first context item's)
    tasks: tuple[str, ...] = ("context_relevance", "faithfulness")
    window: str = "1d"                  # the strata's (and the signals') window
    seed: int = 0                       # the sample's seed (the judge's is judge.seed)
    depth: int = 5                      # context items judged per request: its first, by rank
    human: tuple[str, ...] = ()         # human labels (rankgate label export): PPI-corrected estimates
    corpus: str | None = None           # manifest: texts of context items the traces do not carry
    confidence: float = 0.95
    faithful_min: float = 0.8           # an answer is faithful when this share of its statements is supported
    engine: str = "duckdb"              # where the sample is drawn: duckdb or spark
    spark_master: str | None = None
    format: str | None = None           # the export format (None: detected per file)
    on_error: str = "error"
    field_map: str | None = None
    fields: Mapping[str, str] | None = None
    price_in: float | None = None       # per 1M tokens: the dry run's cost estimate
    price_out: float | None = None

    def inputs(self) -> tuple[FilePath, ...]:
        """The files the request reads (an output may be none of them): the trace exports, the human labels, the
        corpus manifest and the field map."""
        return paths(*self.traces, *self.human, self.corpus, self.field_map)

    def __post_init__(self) -> None:
        from rankgate._util.constraints import (CONFIDENCE, FILE, PATHS, SEED, TEXT, check, check_fields, typed)
        from rankgate.errors import F, UsageError
        from rankgate.traces.judge import JUDGE_TASKS
        from rankgate.traces.model import current_field
        from rankgate.traces.recalibrate import STRATIFY_FIELDS
        from rankgate.traces.signals import parse_window

        check_fields(self, "TracesJudgeRequest", traces=typed(PATHS), sample=typed(int), judge=typed(JudgeSpec),
                     window=typed(str), seed=typed(int), depth=typed(int), corpus=FILE, confidence=typed(float),
                     faithful_min=typed(float), engine=typed(str), spark_master=TEXT, format=TEXT,
                     on_error=typed(str), field_map=FILE, price_in=typed(float, optional=True),
                     price_out=typed(float, optional=True))
        for name in ("stratify", "tasks", "human"):
            value = getattr(self, name)
            if isinstance(value, str) or not all(isinstance(v, str) for v in value):
                raise UsageError(f"{F(name)} must be a tuple of names; got {value!r}")
            object.__setattr__(self, name, tuple(dict.fromkeys(value)))
        from rankgate.flows.traces import _check_trace_fields

        _check_trace_fields(self)
        check(CONFIDENCE, self.confidence, field="confidence")
        check(SEED, self.seed, field="seed")
        parse_window(self.window)
        if self.sample < 1:
            raise UsageError(f"{F.sample} must be at least 1 request; got {self.sample}")
        if self.depth < 1 or self.depth > 100:
            raise UsageError(f"{F.depth} must be between 1 and 100; got {self.depth}")
        if not self.tasks:
            raise UsageError(f"{F.tasks} is empty; tasks: {', '.join(JUDGE_TASKS)}")
        for t in self.tasks:
            if t not in JUDGE_TASKS:
                raise UsageError(f"{F.tasks}: {t!r} is not a task of the traces judge; tasks: {', '.join(JUDGE_TASKS)}")
        object.__setattr__(self, "stratify", tuple(dict.fromkeys(current_field(f, "stratify") for f in self.stratify)))
        for f in self.stratify:
            if f not in STRATIFY_FIELDS:
                raise UsageError(f"{F.stratify}: cannot stratify production requests by {f!r}; fields: "
                                 f"{', '.join(STRATIFY_FIELDS)}")
        if self.judge.max_calls is None:
            raise UsageError(f"{F.max_calls} is required: the judge on production traces always runs under a call "
                             f"budget (see the dry run for what the sample needs)")
        if not 0 <= self.faithful_min <= 1:
            raise UsageError(f"{F.faithful_min} must lie between 0 and 1; got {self.faithful_min}")
        if self.spark_master and self.engine != "spark":
            raise UsageError(f"{F.spark_master} needs {F(engine='spark')}")
        if self.engine not in ("duckdb", "spark"):
            raise UsageError(f"{F.engine} must be duckdb or spark; got {self.engine!r}")
        from rankgate.flows._common import check_prices

        check_prices(self)


@dataclass(frozen=True, slots=True)
class TracesJudgePlan:
    sample: TraceSample                  # the sample the run would judge
    plans: tuple[Plan, ...]              # per judge task: calls, cache hits, approximate tokens
    identity: Mapping[str, Any]          # the judge's identity
    max_calls: int                       # the cap
    first_round: int                     # calls the first round would send (context relevance, statements)
    texts: Mapping[str, int]             # context texts found in the traces and in the corpus


@dataclass(frozen=True, slots=True)
class TracesJudgeResult:
    sample: TraceSample                  # the stratified sample and its design
    values: tuple[RequestValue, ...]     # per sampled request: the judge's and the human values per task
    estimates: tuple[TracesEstimate, ...]  # per task, period and window, all traffic and each stratify field's value
    strata: tuple[Mapping[str, Any], ...]  # per stratum: design and estimate (summary.json)
    judge: Mapping[str, Any]             # identity, calls, cache hits, the call budget, tokens
    texts: Texts                         # the sampled requests' context texts and answers, and where they were found
    human: Mapping[str, Any] | None = None  # the human labels read and how many matched the sample
    warnings: tuple[str, ...] = ()


def _prepare(req: TracesJudgeRequest) -> tuple[Any, Any, Any]:
    """The human labels (read first: a bad file stops the run before the traces are read), the sample drawn on
    the engine, and its texts."""
    from rankgate.traces import read_traces
    from rankgate.traces.engines import make_backend
    from rankgate.traces.judge import HumanLabels, fetch_texts, read_human_labels, sample_requests

    human = read_human_labels(list(req.human)) if req.human else HumanLabels()
    corpus = None
    if req.corpus:
        from rankgate.corpus import load_manifest

        corpus = load_manifest(req.corpus)
    tables = read_traces(list(req.traces), format=req.format, on_error=req.on_error, field_map=req.field_map,
                         fields=req.fields)
    backend = make_backend(req.engine, spark_master=req.spark_master)
    try:
        with progress.stage(f"sampling {req.sample:,} of {tables.requests.num_rows:,} requests on {backend.name}"):
            sample = sample_requests(tables, backend, n=req.sample, stratify=req.stratify, seed=req.seed,
                                     window=req.window, depth=req.depth)
    finally:
        backend.close()
    with progress.stage(f"reading the texts of {len(sample.requests):,} requests"):
        texts = fetch_texts(sample, corpus)
    return human, sample, texts


def _over_cap(first_round: int, cap: int) -> str:
    from rankgate.errors import F

    return (f"the sample needs {first_round:,} judge calls before any answer's statements are checked, more than "
            f"{F.max_calls} {cap:,}: nothing was sent; raise {F.max_calls} or lower {F.sample}")


def plan_traces_judge(req: TracesJudgeRequest) -> TracesJudgePlan:
    """The sample and what judging it would cost (calls, cache hits, approximate tokens); calls nothing. The
    support calls depend on the statements the judge finds: estimated as one per sentence of each answer."""
    from rankgate.traces.judge import first_round_plan, support_plan

    _, sample, texts = _prepare(req)
    client = open_judge(req.judge)
    try:
        plans = first_round_plan(client, sample, texts, req.tasks)
        first = sum(p.to_send for p in plans)
        if "faithfulness" in req.tasks and texts.answers:
            plans.append(support_plan(client, sample, texts))
        return TracesJudgePlan(sample, tuple(plans), client.identity(), int(req.judge.max_calls or 0), first,
                               {"trace": texts.from_trace, "corpus": texts.from_corpus})
    finally:
        client.close()


def run_traces_judge(req: TracesJudgeRequest) -> TracesJudgeResult:
    """Draw the sample, judge it within the call budget, and estimate each task per stratum, window and segment.
    The calls the first round needs are counted before any is sent: over the budget is a UsageError and nothing is
    sent; the support round stops at the budget (its answers are left out of faithfulness, said in a warning)."""
    from rankgate.errors import UsageError
    from rankgate.traces.judge import estimate, first_round_plan, request_values, run_judge, stratum_rows

    human, sample, texts = _prepare(req)
    cap = int(req.judge.max_calls or 0)
    client = open_judge(req.judge)
    warnings: list[str] = []
    try:
        first = sum(p.to_send for p in first_round_plan(client, sample, texts, req.tasks))
        if first > cap:
            raise UsageError(_over_cap(first, cap))
        client.check_reachable()
        judged = run_judge(client, sample, texts, req.tasks)
        identity, stats = client.identity(), dict(client.stats)
        warning = budget_warning(client, "rankgate traces judge")
        if warning:
            warnings.append(warning)
    finally:
        client.close()
    with progress.stage("estimating"):
        values = request_values(sample, texts, judged, req.tasks, human, faithful_min=req.faithful_min)
        estimates = estimate(sample, values, req.tasks, confidence=req.confidence)
        strata = stratum_rows(sample, values, req.tasks, confidence=req.confidence)
    unread = sum(1 for v in values if any(v.notes.get(t) == "no text" for t in req.tasks))
    if unread:
        warnings.append(f"{unread:,} sampled request{'s have' if unread != 1 else ' has'} context items whose text "
                        f"neither the traces nor the corpus hold; they are not judged (give the corpus manifest)")
    judge = {"identity": identity, "calls": dict(judged.calls), "cache_hits": dict(judged.cached),
             "sent": stats.get("sent", 0), "call_budget": {"max_calls": cap, "not_called": stats.get("over_budget", 0)},
             "tokens": {"prompt": stats.get("prompt_tokens", 0), "completion": stats.get("completion_tokens", 0)}}
    if req.price_in is not None or req.price_out is not None:
        judge["cost"] = round((judge["tokens"]["prompt"] * (req.price_in or 0.0)
                               + judge["tokens"]["completion"] * (req.price_out or 0.0)) / 1e6, 6)
    human_info = None
    if req.human:
        matched = {t: sum(1 for v in values if v.human.get(t) is not None and v.values.get(t) is not None)
                   for t in req.tasks}
        human_info = {"files": list(req.human), "relevance_labels": len(human.grades),
                      "answer_labels": len(human.verdicts), "matched": matched}
    return TracesJudgeResult(sample, tuple(values), tuple(estimates), tuple(strata), judge, texts, human_info,
                             tuple(warnings))
