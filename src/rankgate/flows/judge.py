"""Label a pooling queue 2/1/0 with a judge, and measure a judge against human labels.

:func:`run_relevance` judges every queue item (``repeats`` samples each, the majority grade kept) and
returns the label rows and the sidecar's facts; :func:`plan_relevance` says what it would ask and
calls nothing. :func:`run_calibration` compares the judge's labels with human ones on the same items.
Writing the files is the command's.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rankgate.flows._common import JudgeSpec, budget_warning, check_counts
from rankgate.flows._inputs import FilePath, paths

if TYPE_CHECKING:  # pragma: no cover
    from rankgate.judges import RepeatVariance

__all__ = ["CalibrationRequest", "JudgeSpec", "RelevancePlan", "RelevanceRequest", "RelevanceResult", "plan_relevance",
           "run_calibration", "run_relevance"]


def _open(spec: JudgeSpec) -> Any:
    """The judge client, options first and then the RANKGATE_JUDGE* environment; the lexical judge
    takes no url, model or key (the environment's are for another judge)."""
    from rankgate.errors import F, UsageError

    settings = spec.settings()
    if settings["backend"] == "lexical":
        if spec.url or spec.model:
            raise UsageError(f"{F.url}/{F.model} are for {F(backend='openai')} (or your own judge); "
                             "the lexical judge calls no model")
        settings.update(url=None, model=None, key_env=None)
    return spec.open(settings)


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
        from rankgate.errors import F, UsageError
        from rankgate.judges import MAX_REPEATS

        check_fields(self, "RelevanceRequest", judge=typed(JudgeSpec), repeats=typed(int),
                     price_in=typed(float, optional=True), price_out=typed(float, optional=True))
        check_counts(repeats=(self.repeats, 1, MAX_REPEATS, " (3 to 5 samples measure a judge's variance)"))
        for name in ("price_in", "price_out"):
            value = getattr(self, name)
            if value is not None and not value >= 0:
                raise UsageError(f"{F(name)} must be a price >= 0 per 1M tokens; got {value}")


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
    with _open(req.judge) as judge:
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
    with _open(req.judge) as judge:
        judge.check_reachable()
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


def run_calibration(req: CalibrationRequest) -> dict[str, Any]:
    """The calibration's body: agreement, weighted kappa, sensitivity, specificity, the judge's identity
    (from the labels' sidecar), the files' hashes, and the human-labelled items left out."""
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
    return body
