"""Label a pooling queue 2/1/0 with a judge, measure a judge against human labels, and keep that measure fresh.

:func:`run_relevance` judges every queue item (``repeats`` samples each, the majority grade kept) and
returns the label rows and the sidecar's facts; :func:`plan_relevance` says what it would ask and
calls nothing. :func:`run_calibration` compares the judge's labels with human ones on the same items, and
binds the result to the judge, the human labels and a date (:mod:`rankgate.stats.calibration`).
:func:`run_recalibrate` samples fresh items for people to label (from answers, or recent production traces);
:func:`run_drift` says whether agreement changed between two calibrations. Writing the files is the command's.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rankgate.flows._common import JudgeSpec, budget_warning, check_counts, open_judge
from rankgate.flows._inputs import FilePath, paths

if TYPE_CHECKING:  # pragma: no cover
    from rankgate.judges import RepeatVariance
    from rankgate.stats.calibration import Drift
    from rankgate.stats.pooling import Calibration

__all__ = ["CalibrationRequest", "DriftRequest", "DriftResult", "JudgeSpec", "RecalibrateRequest", "RecalibrateResult",
           "RelevancePlan", "RelevanceRequest", "RelevanceResult", "plan_relevance", "run_calibration", "run_drift",
           "run_recalibrate", "run_relevance"]


@dataclass(frozen=True, slots=True)
class RelevanceRequest:
    queue: str                          # JSONL of {query_id, query, id, text}, as rankgate pool writes
    judge: JudgeSpec = field(default_factory=JudgeSpec)
    repeats: int = 1
    price_in: float | None = None       # per 1M input tokens: the cost from the server's usage
    price_out: float | None = None

    def inputs(self) -> tuple[FilePath, ...]:
        """The files the request reads (an output may be none of them): the queue."""
        return paths(self.queue)

    def __post_init__(self) -> None:
        from rankgate._util.constraints import check_fields, typed
        from rankgate.judges import MAX_REPEATS

        check_fields(self, "RelevanceRequest", judge=typed(JudgeSpec), repeats=typed(int),
                     price_in=typed(float, optional=True), price_out=typed(float, optional=True))
        check_counts(repeats=(self.repeats, 1, MAX_REPEATS, " (3 to 5 samples measure a judge's variance)"))
        from rankgate.flows._common import check_prices

        check_prices(self)


@dataclass(frozen=True, slots=True)
class RelevanceResult:
    rows: tuple[Mapping[str, Any], ...]  # one {query_id, id, grade[, judge_error][, grades]} per queue item
    meta: Mapping[str, Any]              # the sidecar: identity, coverage, calls, variance, tokens (cost)
    variance: RepeatVariance             # of the samples
    warnings: tuple[str, ...] = ()       # the call budget ran out


@dataclass(frozen=True, slots=True)
class RelevancePlan:
    plan: Any                            # the judge's plan of the task
    identity: Mapping[str, Any]
    max_calls: int | None


def _items(queue: Any) -> list[Any]:
    from rankgate.judges import JudgeItem

    return [JudgeItem(f"{q.query_id}\x1f{q.id}", {"question": q.query, "passage": q.text}) for q in queue]


def plan_relevance(req: RelevanceRequest) -> RelevancePlan:
    """What :func:`run_relevance` would ask (calls, cache hits, approximate tokens); calls nothing."""
    from rankgate.judges.files import read_queue

    items = _items(read_queue(req.queue))
    with open_judge(req.judge) as judge:
        return RelevancePlan(judge.plan("context_relevance", items, repeats=req.repeats), judge.identity(),
                             judge.max_calls)


def _majority(labels: list[int]) -> int:
    counts = Counter(labels)
    top = max(counts.values())
    return min(g for g, c in counts.items() if c == top)  # ties: the lower grade


def run_relevance(req: RelevanceRequest) -> RelevanceResult:
    """Grade every queue item 2/1/0; a failed call is a row with ``grade: null`` and ``judge_error``."""
    from rankgate.judges import coverage, repeat_variance
    from rankgate.judges.files import read_queue

    queue = read_queue(req.queue)
    items = _items(queue)
    with open_judge(req.judge) as judge:
        judge.check_reachable()
        priced = req.price_in is not None or req.price_out is not None
        estimate = judge.plan("context_relevance", items, repeats=req.repeats) if priced else None
        out = judge.run("context_relevance", items, repeats=req.repeats)
        identity, stats = judge.identity(), dict(judge.stats)
        warning = budget_warning(judge, "rankgate judge relevance")
    rows = []
    for n, q in enumerate(queue):
        samples = out[n * req.repeats:(n + 1) * req.repeats]
        grades = [int(s.label) for s in samples if s.error is None and s.label is not None]
        row: dict[str, Any] = {"query_id": q.query_id, "id": q.id, "grade": _majority(grades) if grades else None}
        if not grades:
            row["judge_error"] = samples[0].error
        if req.repeats > 1:
            row["grades"] = [s.label for s in samples]
        rows.append(row)
    ok, total = coverage(out)
    labelled = sum(1 for r in rows if r["grade"] is not None)
    variance = repeat_variance(out)
    meta = {"judge": identity, "task": "context_relevance", "queue": req.queue, "items": len(rows),
            "labelled": labelled, "coverage": labelled / len(rows) if rows else None, "calls": total,
            "failed_calls": total - ok, "repeats": req.repeats,
            "repeat_variance": None if req.repeats == 1 else {"items": variance.items, "changed": variance.changed,
                                                              "share": None if variance.items == 0 else variance.share},
            "cache_hits": stats["cache_hits"], "tokens": {"prompt": stats["prompt_tokens"],
                                                          "completion": stats["completion_tokens"]}}
    if req.judge.max_calls is not None:  # (only then: the sidecar of a run without it is unchanged)
        meta["call_budget"] = {"max_calls": req.judge.max_calls, "not_called": stats["over_budget"]}
    if req.price_in is not None or req.price_out is not None:  # from the usage the server reported
        meta["cost"] = round((stats["prompt_tokens"] * (req.price_in or 0.0)
                              + stats["completion_tokens"] * (req.price_out or 0.0)) / 1e6, 6)
        from rankgate.flows._common import judge_spend

        meta["spend"] = judge_spend(stats, estimate, req.price_in, req.price_out)  # (beside the dry run's estimate)
    return RelevanceResult(tuple(rows), meta, variance, (warning,) if warning else ())


@dataclass(frozen=True, slots=True)
class CalibrationRequest:
    human: str                          # human labels {query_id, id, grade}
    judge_labels: str                   # the judge's labels (rankgate judge relevance -o)
    task: str = "context_relevance"
    relevant_at: int = 1                # grade from which an item counts as relevant
    weights: str = "linear"             # kappa weights: linear, quadratic or none
    confidence: float = 0.95
    resamples: int = 2000
    seed: int = 0
    when: str | None = None             # the calibration's date (ISO 8601); default: newest label time, else now

    def inputs(self) -> tuple[FilePath, ...]:
        """The files the request reads (an output may be none of them): the human labels, the judge's labels
        and their sidecar (the judge's identity)."""
        from rankgate.judges.files import sidecar_path

        return paths(self.human, self.judge_labels, sidecar_path(self.judge_labels))

    def __post_init__(self) -> None:
        from dataclasses import replace

        from rankgate._util.constraints import CONFIDENCE, RESAMPLES, SEED, check, check_fields, typed
        from rankgate.errors import F, UsageError

        check_fields(self, "CalibrationRequest", task=typed(str), relevant_at=typed(int), weights=typed(str),
                     confidence=typed(float), resamples=typed(int), seed=typed(int))
        check(CONFIDENCE, self.confidence, field="confidence")
        check(replace(RESAMPLES, minimum=1), self.resamples, field="resamples")  # kappa's interval needs one
        check(SEED, self.seed, field="seed")
        if self.relevant_at not in (1, 2):
            raise UsageError(f"{F.relevant_at} must be 1 or 2; got {self.relevant_at}")
        if self.weights not in ("linear", "quadratic", "none"):
            raise UsageError(f"{F.weights} must be linear, quadratic or none; got {self.weights!r}")
        if self.when is not None:
            from rankgate.flows._common import check_when

            object.__setattr__(self, "when", check_when(self.when, "CalibrationRequest"))


def run_calibration(req: CalibrationRequest) -> dict[str, Any]:
    """The calibration's body: agreement, weighted kappa, sensitivity, specificity, the judge's identity
    (from the labels' sidecar), the files' hashes, the human-labelled items left out, and what binds it: the
    canonical hash and size of the human labels used and its date (``when``, else the newest label's time,
    else now)."""
    import json
    import os

    from rankgate.stats.agreement import calibrate
    from rankgate.errors import InputError
    from rankgate.judges.files import file_sha256, read_labels, sidecar_path

    human, _ = read_labels(req.human)
    judged, errors = read_labels(req.judge_labels)
    keys = sorted(k for k in human if k in judged)
    if not keys:
        raise InputError(f"no item has both a human label and a judge label (human file has {len(human)}, "
                         f"judge file {len(judged)} labelled items)", path=req.judge_labels,
                         hint="label the same queue items: match query_id and id")
    identity = None
    side = sidecar_path(req.judge_labels)
    if os.path.isfile(side):
        try:
            with open(side, encoding="utf-8") as fh:
                identity = json.load(fh).get("judge")
        except (OSError, ValueError, AttributeError):
            raise InputError("is not the judge sidecar JSON rankgate judge relevance writes", path=side) from None
    cal = calibrate(keys, [human[k] for k in keys], [judged[k] for k in keys], task=req.task,
                    relevant_at=req.relevant_at, weights=None if req.weights == "none" else req.weights,
                    confidence=req.confidence, resamples=req.resamples, seed=req.seed)
    body = cal.to_dict()
    body.update({"judge": identity, "human": f"sha256:{file_sha256(req.human)}",
                 "judge_labels": f"sha256:{file_sha256(req.judge_labels)}",
                 "not_judged": sum(1 for k in human if k not in judged),
                 "judge_errors": sum(1 for k in human if k in errors)})
    from rankgate.stats.calibration import binding, label_times, parse_time

    body.update(binding([(q, d, human[(q, d)]) for q, d in keys],
                        when=parse_time(req.when) if req.when else None, label_times=label_times(req.human)))
    return body


#: What ``rankgate judge recalibrate`` can sample items for: the pooling queue's relevance grades, or verdicts
#: on whole answers (faithful / correct).
RECALIBRATE_TASKS = ("context_relevance", "faithfulness")


@dataclass(frozen=True, slots=True)
class RecalibrateRequest:
    """Fresh items for people to label, so the judge can be calibrated again: from ``answers`` (with ``gold``
    for its fields and questions), or from the recent ``traces`` (with ``corpus`` for the items' texts)."""

    answers: str | None = None
    traces: tuple[str, ...] = ()
    n: int = 100
    stratify: tuple[str, ...] = ()        # fields whose values split the items into strata
    seed: int = 0
    task: str = "context_relevance"       # or faithfulness (answers only): what people will label
    gold: str | None = None               # with answers: the gold set (its fields, its question texts)
    corpus: str | None = None             # the corpus manifest: the texts of items logged as ids (needed with traces)
    days: int = 30                        # with traces: requests within this many days of the newest one
    depth: int = 5                        # relevance items per answer or request: its first contexts
    answers_format: str = "auto"
    traces_format: str | None = None

    def inputs(self) -> tuple[FilePath, ...]:
        """The files the request reads: the answers or traces, the gold set and the corpus."""
        return paths(self.answers, *self.traces, self.gold, self.corpus)

    def __post_init__(self) -> None:
        from rankgate._util.constraints import BY, FILE, PATHS, SEED, TEXT, check, check_fields, typed
        from rankgate.errors import F, UsageError

        check_fields(self, "RecalibrateRequest", answers=FILE, traces=typed(PATHS), n=typed(int), stratify=BY,
                     seed=typed(int), task=typed(str), gold=FILE, corpus=FILE, days=typed(int), depth=typed(int),
                     answers_format=typed(str), traces_format=TEXT)
        check(SEED, self.seed, field="seed")
        if bool(self.answers) == bool(self.traces):
            raise UsageError(f"give {F.answers} or {F.traces} (one of them): the items to sample from")
        if self.task not in RECALIBRATE_TASKS:
            raise UsageError(f"{F.task} must be one of {', '.join(RECALIBRATE_TASKS)}; got {self.task!r}")
        if self.traces and self.task != "context_relevance":
            raise UsageError(f"{F.task} {self.task} needs {F.answers}: traces carry no answer texts to give a verdict on")
        if self.traces and not self.corpus:
            raise UsageError(f"{F.traces} needs {F.corpus} (the texts of the retrieved items people will grade)")
        check_counts(n=(self.n, 1, None, ""), days=(self.days, 1, None, ""), depth=(self.depth, 1, None, ""))


@dataclass(frozen=True, slots=True)
class RecalibrateResult:
    records: tuple[dict[str, Any], ...]   # the queue, in sample order
    strata: Mapping[str, tuple[int, int]]  # each stratum (its values joined by " / ") -> (items, sampled)
    left_out: Mapping[str, int]           # items that could not be offered, by reason
    available: int                        # items there were to sample from


def run_recalibrate(req: RecalibrateRequest) -> RecalibrateResult:
    """The queue of fresh items (see :mod:`rankgate.answers.recalibrate`, :mod:`rankgate.traces.recalibrate` and
    :func:`rankgate.stats.calibration.stratified_sample`)."""
    from rankgate._util import progress
    from rankgate.stats.calibration import stratified_sample

    with progress.stage("reading the items to sample"):
        if req.answers:
            records, strata, left_out = _answer_units(req)
        else:
            records, strata, left_out = _trace_units(req)
    picked, quotas = stratified_sample(strata, req.n, req.seed)
    shown = {" / ".join("" if v is None else str(v) for v in key) or "all": counts for key, counts in quotas.items()}
    return RecalibrateResult(tuple(records[i] for i in picked), shown, left_out, len(records))


def _answer_units(req: RecalibrateRequest) -> tuple[list[dict[str, Any]], list[tuple[Any, ...]], dict[str, int]]:
    from rankgate.answers.recalibrate import answer_units
    from rankgate.errors import F, UsageError
    from rankgate.io.answers import read_answers
    from rankgate.io.source import check_file

    assert req.answers is not None
    questions: dict[str, str | None] = {}
    segments: dict[str, dict[str, Any]] = {}
    gold_ids: frozenset[str] = frozenset()
    if req.stratify and not req.gold:
        raise UsageError(f"{F.stratify} with {F.answers} needs {F.gold}: the fields are the gold set's")
    if req.gold:
        from rankgate.io import load_gold

        gold = load_gold(req.gold)
        questions = dict(zip(gold.query_ids, gold.field("query")))
        gold_ids = frozenset(gold.j_doc.to_pylist())
        from rankgate.scoring.facts import _segments  # the gold set's segment fields, as --by reads them

        fields = _segments(gold, list(range(len(gold.query_ids))))
        columns = []
        for name in req.stratify:
            key = name if name in fields else f"tags.{name}"
            if key not in fields:
                known = ", ".join(sorted(k.removeprefix("tags.") for k in fields)) or "none"
                raise UsageError(f"{F.stratify}: the gold set has no field {name!r}; its fields: {known}")
            columns.append((name, fields[key]))
        for i, q in enumerate(gold.query_ids):
            segments[q] = {name: values[i] for name, values in columns}
    corpus = None
    if req.corpus:
        from rankgate.corpus import load_manifest

        corpus = load_manifest(req.corpus)
    check_file(req.answers, "answers")
    answers = read_answers(req.answers, format=req.answers_format, corpus=corpus, gold_ids=gold_ids)
    records, strata, no_question = answer_units(answers, task=req.task, depth=req.depth, questions=questions,
                                                segments=segments)
    why = "without a question (neither in the answers nor in the gold set --gold gives)"
    return records, strata, {why: no_question} if no_question else {}


def _trace_units(req: RecalibrateRequest) -> tuple[list[dict[str, Any]], list[tuple[Any, ...]], dict[str, int]]:
    from rankgate.corpus import load_manifest
    from rankgate.traces import read_traces
    from rankgate.traces.recalibrate import recent_units

    assert req.corpus is not None
    corpus = load_manifest(req.corpus)
    tables = read_traces(list(req.traces), format=req.traces_format)
    stratify = req.stratify or ("tenant",)
    records, strata, left = recent_units(tables, corpus, days=req.days, depth=req.depth, stratify=stratify)
    return records, strata, {k: v for k, v in left.items() if v}


@dataclass(frozen=True, slots=True)
class DriftRequest:
    """Two calibration files of one judge task, the older first."""

    old: str
    new: str
    confidence: float = 0.95
    resamples: int = 2000
    seed: int = 0

    def inputs(self) -> tuple[FilePath, ...]:
        return paths(self.old, self.new)

    def __post_init__(self) -> None:
        from rankgate._util.constraints import CONFIDENCE, RESAMPLES, SEED, check, check_fields, typed

        check_fields(self, "DriftRequest", confidence=typed(float), resamples=typed(int), seed=typed(int))
        check(CONFIDENCE, self.confidence, field="confidence")
        check(RESAMPLES, self.resamples, field="resamples")
        check(SEED, self.seed, field="seed")


@dataclass(frozen=True, slots=True)
class DriftResult:
    drift: Drift
    old: Calibration                      # the two calibrations, as read
    new: Calibration
    judge_changed: str | None             # how the judge differs between them (model, prompts), if it does
    same_labels: bool                     # both were computed on the same human labels

    def to_dict(self) -> dict[str, Any]:
        """What ``rankgate judge drift --json`` prints."""
        def side(cal: Any) -> dict[str, Any]:
            return {"path": cal.source, "n": cal.n, "made": cal.made,
                    "model": (cal.judge or {}).get("model"), "human_labels": cal.labels_sha256}

        return {"drift": {"old": side(self.old), "new": side(self.new), **self.drift.to_dict(),
                          "judge_changed": self.judge_changed, "same_labels": self.same_labels}}


def run_drift(req: DriftRequest) -> DriftResult:
    """Whether agreement changed from ``old`` to ``new`` (:func:`rankgate.stats.calibration.drift`); two files of
    different tasks are an input error."""
    from rankgate.errors import InputError
    from rankgate.gating.calibration import identity_problem
    from rankgate.stats.calibration import drift
    from rankgate.stats.pooling import read_calibration

    old, new = read_calibration(req.old), read_calibration(req.new)
    if old.task and new.task and old.task != new.task:
        raise InputError(f"calibrates the {new.task} task and {req.old} the {old.task} task: agreement on two tasks "
                         "cannot be compared", path=req.new, hint="compare two calibrations of the same task")
    found = drift(old, new, confidence=req.confidence, resamples=req.resamples, seed=req.seed)
    changed = None
    if old.judge and new.judge:
        changed = identity_problem(old.judge, new.judge, new.task or old.task)
        if changed:
            changed = changed.replace("(calibration)", "(old)").replace("(judge in use)", "(new)")
    same = bool(old.labels_sha256) and old.labels_sha256 == new.labels_sha256
    return DriftResult(found, old, new, changed, same)
