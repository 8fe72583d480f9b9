"""Score generated answers (layer two) with a judge and join them with retrieval per query.

:class:`AnswersRequest` names the answers, the gold set and the judge; :func:`run_answers` loads them,
asks the judge for labels, evaluates every answer metric with its interval, places each query in the
diagnosis grid, and (when asked) measures the judge against human verdicts, breaks the metrics down by
segment and checks ship criteria. :func:`plan_answers` says what the judge would be asked and calls
nothing. Rendering (``summary.json``, ``answers.csv``, the terminal) is :mod:`rankgate.render`'s.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rankgate._util import progress
from rankgate.flows._common import JudgeSpec, budget_warning, check_counts
from rankgate.stats.options import Statistics

if TYPE_CHECKING:  # pragma: no cover
    from rankgate.gating.decide import GateOutcome
    from rankgate.model.results import EvaluationResult
    from rankgate.stats.segments import SegmentSummary

__all__ = ["AnswersPlan", "AnswersRequest", "AnswersResult", "JudgeSpec", "plan_answers", "run_answers"]

DEFAULT_METRICS = "faithfulness,contradiction_rate,answer_relevance,context_relevance,answer_correctness"


@dataclass(frozen=True, slots=True)
class AnswersRequest:
    answers: str                        # answers with their packed contexts
    gold: str
    answers_format: str = "auto"
    columns: str | None = None          # the old spelling of fields: "question=inputs.q,answer=outputs.a"
    gold_format: str | None = None
    corpus: str | None = None           # manifest: texts of contexts logged as ids only
    human: str | None = None            # human verdicts {query_id, faithful, correct}
    metrics: str = DEFAULT_METRICS
    faithful_min: float = 0.8
    contradiction_max: float = 0.0
    correct_min: float = 0.8
    by: tuple[str, ...] = ()
    examples: int = 3
    seed: int = 0
    resamples: int = 2000
    confidence: float = 0.95
    ties: str | None = None
    judge: JudgeSpec = field(default_factory=JudgeSpec)
    repeats: int = 1
    calibration: bool = False           # with human: the judge's faithful verdicts as a calibration
    when: str | None = None             # with calibration: its date (ISO 8601; default: newest label time, else now)
    config: str | None = None           # ship criteria to check
    baseline: str | None = None         # with config: an earlier answers run's summary.json
    shown: Mapping[str, str] | None = None  # an input's path -> the name summary.json gives it
    fields: Mapping[str, str] | None = None  # where the answers file keeps each field: {"question": "inputs.q"}
    price_in: float | None = None       # per 1M input tokens: the spend from the server's usage, beside the estimate
    price_out: float | None = None      # per 1M output tokens

    def __post_init__(self) -> None:
        from rankgate._util.constraints import BY, CONFIDENCE, COUNT, FILE, FLAG, NAME_MAP, PATH, RESAMPLES, SEED, TEXT, Param, check
        from rankgate.errors import F, UsageError
        from rankgate.judges import MAX_REPEATS

        def put(attr: str, value: Any) -> None:
            object.__setattr__(self, attr, value)

        # Each field's type checked here (a UsageError naming it; numpy scalars made plain), then its bounds
        # (a UsageError naming the field, which the command line names by its option).
        for attr in ("answers", "gold"):
            put(attr, check(Param(attr, PATH, None), getattr(self, attr), caller="AnswersRequest"))
        for attr in ("corpus", "human", "config", "baseline"):
            put(attr, check(FILE, getattr(self, attr), caller="AnswersRequest", name=attr))
        for attr in ("answers_format", "metrics"):
            put(attr, check(Param(attr, str, None), getattr(self, attr), caller="AnswersRequest"))
        for attr in ("columns", "gold_format", "ties"):
            put(attr, check(TEXT, getattr(self, attr), caller="AnswersRequest", name=attr))
        for attr in ("faithful_min", "contradiction_max", "correct_min"):
            put(attr, check(Param(attr, float, None), getattr(self, attr), caller="AnswersRequest"))
        put("by", check(BY, self.by, caller="AnswersRequest"))
        put("examples", check(COUNT, self.examples, caller="AnswersRequest", field="examples"))
        put("repeats", check(Param("repeats", int, 1), self.repeats, caller="AnswersRequest"))
        put("calibration", check(FLAG, self.calibration, caller="AnswersRequest", name="calibration"))
        put("judge", check(Param("judge", JudgeSpec, None), self.judge, caller="AnswersRequest"))
        put("shown", check(Param("shown", NAME_MAP, None, optional=True), self.shown, caller="AnswersRequest"))
        for attr in ("price_in", "price_out"):  # (their bounds: check_prices below, as the judge's request)
            put(attr, check(Param(attr, float, None, optional=True), getattr(self, attr), caller="AnswersRequest"))
        if self.fields is not None:  # (checked, with the old columns, by the one field syntax)
            from rankgate.io.answers import answer_fields

            put("fields", answer_fields(self.fields))
        if self.columns is not None:
            from rankgate.io.answers import answer_fields

            answer_fields(self.fields, self.columns)
        for param in (SEED, RESAMPLES, CONFIDENCE):  # their types here; their bounds by Statistics, with the cost
            put(param.name, check(Param(param.name, param.type, param.default), getattr(self, param.name),
                                  caller="AnswersRequest"))
        Statistics(seed=self.seed, resamples=self.resamples, confidence=self.confidence)
        if self.calibration and not self.human:
            raise UsageError(f"{F.calibration} needs {F.human} (the human verdicts the judge is measured against)")
        if self.when is not None:
            from rankgate.flows._common import check_when

            put("when", check_when(self.when, "AnswersRequest"))
            if not self.calibration:
                raise UsageError(f"{F.when} goes with {F.calibration} (it dates the calibration written)")
        if self.baseline and not self.config:
            raise UsageError(f"{F.baseline} goes with {F.config} (the ship criteria that compare against it)")
        check_counts(repeats=(self.repeats, 1, MAX_REPEATS, " (3 to 5 samples measure a judge's variance)"))
        from rankgate.flows._common import check_prices

        check_prices(self)

    def inputs(self) -> tuple[str, ...]:
        """The files the request reads (an output may be none of them)."""
        return tuple(p for p in (self.gold, self.answers, self.corpus, self.human, self.config, self.baseline) if p)


@dataclass(frozen=True, slots=True)
class AnswersResult:
    result: EvaluationResult             # retrieval and answer metrics per query
    cis: Mapping[str, tuple[float, float]]
    rows: tuple[Any, ...]                # the diagnosis grid, one row per query
    extra: Mapping[str, Any]             # summary.json's answers, statistics (and segments) parts
    inputs: Mapping[str, Any]            # summary.json's inputs part
    segments: SegmentSummary | None = None  # with ``by``
    calibration: Mapping[str, Any] | None = None  # with ``calibration``: the body of the calibration file
    outcome: GateOutcome | None = None   # with ``config``
    cache_hits: tuple[int, int] = (0, 0)  # (labels from the cache, labels asked for)

    @property
    def layer(self) -> Mapping[str, Any]:
        """The ``answers`` part of summary.json: coverage per metric, the grid, the judge."""
        return self.extra["answers"]

    @property
    def warnings(self) -> tuple[str, ...]:
        return tuple(self.layer.get("warnings") or ())


@dataclass(frozen=True, slots=True)
class AnswersPlan:
    identity: Mapping[str, Any]          # the judge's identity
    answers: int                         # answers that would be judged
    tasks: Mapping[str, Mapping[str, Any]]  # per judge task: calls, cache hits, tokens, bounds
    max_statements: int
    max_calls: int | None


@dataclass(frozen=True, slots=True)
class _Loaded:
    config: Any
    metrics: tuple[str, ...]
    gold: Any
    answers: Any
    human: Any


def _load(req: AnswersRequest) -> _Loaded:
    from rankgate.answers.score import check_answers_join
    from rankgate.io import load_gold
    from rankgate.io.answers import answer_fields, read_answers
    from rankgate.io.source import check_file
    from rankgate.metrics import parse_metric, parse_metrics

    config = None
    wanted = [m.strip() for m in req.metrics.split(",") if m.strip()]
    if req.config:
        from rankgate.gating.decide import load_config

        config = load_config(req.config)  # a judge metric without calibration is refused here, before any call
        from rankgate.answers.abstention import is_abstention_metric

        for m in config.metrics:  # (an abstention metric needs the statements: asking for it judges them)
            if (hasattr(parse_metric(m).definition, "judge_task") or is_abstention_metric(m)) and m not in wanted:
                wanted.append(m)
    gold = load_gold(req.gold, format=req.gold_format)
    corpus = None
    if req.corpus:
        from rankgate.corpus import load_manifest

        corpus = load_manifest(req.corpus)
    check_file(req.answers, "answers")
    answers = read_answers(req.answers, format=req.answers_format, columns=answer_fields(req.fields, req.columns),
                           corpus=corpus, gold_ids=frozenset(gold.j_doc.to_pylist()))
    check_answers_join(gold, answers)
    human = None
    if req.human:
        from rankgate.answers.score import read_human_verdicts

        human = read_human_verdicts(req.human, answers.query_ids)
    metrics = tuple(str(m) for m in parse_metrics(",".join(wanted)))
    return _Loaded(config, metrics, gold, answers, human)


def _binding(rows: Any, human: Any, path: str, when: str | None) -> dict[str, Any]:
    """What binds the faithfulness calibration to its human verdicts and its date (rankgate.stats.calibration):
    the verdicts it counts (those faithfulness_calibration keeps), and ``when`` or their newest time."""
    from rankgate.stats.calibration import binding, label_times, parse_time

    items = [(r.query_id, "answer", int(bool(human[r.query_id]["faithful"]))) for r in rows
             if r.query_id in human and human[r.query_id]["faithful"] is not None and r.faithful is not None]
    return binding(items, when=parse_time(when) if when else None, label_times=label_times(path))


def _questions(gold: Any) -> dict[str, str | None]:
    return dict(zip(gold.query_ids, gold.field("query")))


def plan_answers(req: AnswersRequest) -> AnswersPlan:
    """What :func:`run_answers` would ask the judge (calls, cache hits, approximate tokens); calls nothing."""
    from rankgate.answers.score import plan_answers as plan

    loaded = _load(req)
    client = req.judge.open()
    try:
        tasks = plan(client, loaded.answers, _questions(loaded.gold), metrics=list(loaded.metrics), repeats=req.repeats)
        return AnswersPlan(client.identity(), len(loaded.answers), tasks, client.max_statements, client.max_calls)
    finally:
        client.close()


def run_answers(req: AnswersRequest) -> AnswersResult:
    """Judge the answers and evaluate them; check the ship criteria when the request names them."""
    from rankgate.answers.score import GridThresholds, answers_summary, diagnosis_grid, evaluate_answers, judge_answers
    from rankgate.io.inputs import sha256_files
    from rankgate.stats.bootstrap import metric_cis

    with progress.stage(f"reading {os.path.basename(os.fspath(req.answers))}"):
        loaded = _load(req)
    gold, answers = loaded.gold, loaded.answers
    thresholds = GridThresholds(req.faithful_min, req.contradiction_max, req.correct_min)
    client = req.judge.open()
    try:  # (the judge's calls: a bar per task, moved on every answer it gives)
        if loaded.config is not None:  # a judge gate's calibration must be of this judge: refused before any call
            from rankgate.gating.calibration import check_judge

            check_judge(loaded.config, client.identity())
        priced = req.price_in is not None or req.price_out is not None
        if priced:  # the dry run's estimate of the calls this run will send, to record beside what they cost
            from rankgate.answers.score import plan_answers as plan

            estimate = plan(client, answers, _questions(gold), metrics=list(loaded.metrics), repeats=req.repeats)
            sent_before = {k: client.stats.get(k, 0) for k in ("sent", "prompt_tokens", "completion_tokens")}
        judged = judge_answers(client, answers, _questions(gold), metrics=list(loaded.metrics), repeats=req.repeats)
        with progress.stage(f"scoring {len(answers):,} answers"):
            result = evaluate_answers(gold, answers, list(loaded.metrics), judgements=judged.labels, ties=req.ties)
        with progress.stage(f"intervals ({req.resamples:,} resamples)"):
            cis = metric_cis(result, seed=req.seed, resamples=req.resamples, confidence=req.confidence)
        rows = diagnosis_grid(result, thresholds)
        # (cache hits are not in the summary: a second run must give the same bytes)
        cache_hits = (sum(judged.cached.values()), sum(judged.calls.values()))
        judge: dict[str, Any] = {"identity": client.identity(), "calls": dict(judged.calls), "repeats": req.repeats,
                                 "variance": {t: list(v) for t, v in judged.variance.items()}}
        if req.judge.max_calls is not None:  # (only then: the summary of a run without it is unchanged)
            judge["call_budget"] = {"max_calls": req.judge.max_calls, "not_called": client.stats.get("over_budget", 0)}
        if priced:  # (only with prices: what this run sent depends on the cache, so a run without them keeps its bytes)
            from rankgate.flows._common import judge_spend

            judge["spend"] = judge_spend({k: client.stats.get(k, 0) - v for k, v in sent_before.items()},
                                         estimate, req.price_in, req.price_out)
        layer = answers_summary(result, rows, cis=cis, thresholds=thresholds, judge=judge, examples=req.examples,
                                confidence=req.confidence)
        warning = budget_warning(client, "rankgate answers")
        if warning:
            layer["warnings"].append(warning)
        calibration = None
        if loaded.human is not None:
            from rankgate.answers.score import agreement_with_human

            layer["human"] = agreement_with_human(rows, loaded.human, confidence=req.confidence)
            if req.calibration:
                from rankgate.answers.score import faithfulness_calibration

                calibration = faithfulness_calibration(rows, loaded.human, seed=req.seed, resamples=req.resamples,
                                                       confidence=req.confidence).to_dict()
                calibration.update({"judge": client.identity(), "human": f"sha256:{sha256_files([str(req.human)])}"})
                calibration.update(_binding(rows, loaded.human, str(req.human), req.when))
    finally:
        client.close()

    def name(path: str) -> str:
        return (req.shown or {}).get(path, path)

    inputs: dict[str, Any] = {
        "answers": {"path": name(answers.source), "sha256": sha256_files([answers.source]), "format": answers.format},
        "gold": {"path": name(gold.source), "sha256": sha256_files([gold.source]) if os.path.isfile(gold.source) else None}}
    if req.corpus:
        inputs["corpus"] = {"path": name(req.corpus)}
    if req.human:
        inputs["human"] = {"path": name(req.human), "sha256": sha256_files([req.human])}
    extra: dict[str, Any] = {"answers": layer, "statistics": {"seed": req.seed, "resamples": req.resamples,
                                                              "confidence": req.confidence}}
    segments = None
    if req.by:
        from rankgate.stats.segments import segment_summary

        segments = segment_summary(result, list(req.by), seed=req.seed, resamples=req.resamples,
                                   confidence=req.confidence)
        extra["segments"] = segments.to_dict()
    outcome = None
    if loaded.config is not None:
        from rankgate.flows.gate import gate

        outcome = gate(loaded.config, gold, result, req.baseline, candidate_label=os.path.basename(req.answers))
    return AnswersResult(result=result, cis=cis, rows=tuple(rows), extra=extra, inputs=inputs, segments=segments,
                         calibration=calibration, outcome=outcome, cache_hits=cache_hits)
