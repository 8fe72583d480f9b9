"""The judge's nouns: tasks, items, judgements, plans, and the protocol a backend implements.

A *task* names what is judged and the shape of its label:

=================  ======================  ==============================================================
task               fields                  label
=================  ======================  ==============================================================
statements         question, answer        ``tuple[str, ...]``: the answer's atomic statements
                                           (empty for an answer that states nothing, e.g. a refusal)
support            statement, context      ``"supported" | "contradicted" | "not_found"``
correctness        statement, reference    ``"supported" | "contradicted" | "not_found"``
answer_relevance   question, answer        ``0 | 1 | 2`` (2 answers the question, 1 partly, 0 not)
context_relevance  question, passage       ``0 | 1 | 2`` (2 answers the question, 1 related, 0 not)
=================  ======================  ==============================================================

A backend (:class:`Judge`) turns one item's fields into one label and raises :class:`JudgeCallError`
when it cannot; the client (:mod:`rankgate.judges.client`) adds the cache, the workers and the
bookkeeping, and turns every failure into a :class:`Judgement` whose ``error`` says why.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from rankgate.errors import JudgeError
from rankgate._util.redact import redact

__all__ = [
    "GRADES",
    "TASKS",
    "VERDICTS",
    "Judge",
    "JudgeCallError",
    "JudgeItem",
    "Judgement",
    "Label",
    "Plan",
    "TASK_FIELDS",
    "check_label",
]

TASKS = ("statements", "support", "answer_relevance", "context_relevance", "correctness")
TASK_FIELDS: dict[str, tuple[str, ...]] = {
    "statements": ("question", "answer"),
    "support": ("statement", "context"),
    "answer_relevance": ("question", "answer"),
    "context_relevance": ("question", "passage"),
    "correctness": ("statement", "reference"),
}
VERDICTS = ("supported", "contradicted", "not_found")
GRADES = (0, 1, 2)
Label = str | int | tuple[str, ...]


@dataclass(frozen=True)
class JudgeItem:
    """One thing to judge: ``key`` is the caller's stable id, ``fields`` the task's texts."""

    key: str
    fields: Mapping[str, str]


@dataclass(frozen=True)
class Judgement:
    """The judge's answer for one item and sample; ``label`` is None exactly when ``error`` is set."""

    key: str
    task: str
    sample: int
    label: Label | None
    error: str | None
    cached: bool

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class Plan:
    """What :meth:`JudgeClient.run` would do, computed without calling anything.

    ``calls`` counts every (item, sample) pair; ``cache_hits`` of them are answered by the cache, so
    ``calls - cache_hits`` requests would be sent. Token counts are for the requests that would be
    sent, estimated as characters / 4 (approximate: real tokenizers differ, local models more so);
    ``approx_tokens = approx_tokens_in + approx_tokens_out``, the output side taken as a
    typical answer's size. ``model_calls`` is False for a backend that calls no model (the lexical
    judge), whose token counts are 0; ``tokens_known`` is False for a judge without an
    ``estimate_tokens(task, fields)`` method (token counts 0, meaning unknown).
    """

    calls: int
    cache_hits: int
    approx_tokens: int
    approx_tokens_in: int = 0
    approx_tokens_out: int = 0
    task: str = ""
    backend: str = ""
    model_calls: bool = True
    tokens_known: bool = True  # False for a judge that cannot estimate its tokens (a user's judge)

    @property
    def to_send(self) -> int:
        return self.calls - self.cache_hits

    def cost(self, price_in: float | None, price_out: float | None) -> float | None:
        """Cost in the prices' currency, prices given per 1M tokens; None when no price is given."""
        if price_in is None and price_out is None:
            return None
        return (self.approx_tokens_in * (price_in or 0.0) + self.approx_tokens_out * (price_out or 0.0)) / 1e6


class JudgeCallError(JudgeError):
    """A call that failed for good (after the backend's own retries); the message is the reason.

    A :class:`rankgate.errors.JudgeError`, so a :class:`~rankgate.errors.RankgateError`: one that escapes
    to the CLI is a one-line error with exit code 2 (errors.py says why).

    The message passes :func:`rankgate._util.redact.redact` here, so no backend's error can carry a
    registered key or URL userinfo into a labels file, ``answers.csv`` or the terminal.
    """

    def __init__(self, message: str = "") -> None:
        super().__init__(redact(str(message)))


@runtime_checkable
class Judge(Protocol):
    """A backend: one item in, one label out (or :class:`JudgeCallError`).

    Must be safe to call from several threads at once. Optional members a user judge may define:
    ``version`` (a string: when set, the judge's labels are cached under it; change it when the
    judge changes), ``identity() -> dict`` (merged into the client's identity) and ``close()``.
    """

    def judge(self, task: str, fields: Mapping[str, str], *, seed: int) -> Any: ...


@dataclass(frozen=True)
class _LabelProblem:
    reason: str


def check_label(task: str, value: Any) -> Label | _LabelProblem:
    """The label for ``task`` from a parsed answer, or a problem saying what was wrong.

    Accepts a bare label or an object ``{"label": ...}`` (``{"statements": [...]}`` for the
    statements task); grades may come as the strings "0", "1", "2"; verdicts ignore case and
    accept "not found"/"not-found".
    """
    if task == "statements":
        if isinstance(value, Mapping):
            if "statements" not in value:
                return _LabelProblem("expected an object with a 'statements' list")
            value = value["statements"]
        if not isinstance(value, (list, tuple)) or not all(isinstance(s, str) for s in value):
            return _LabelProblem("'statements' must be a list of strings")
        return tuple(s.strip() for s in value if s.strip())
    if isinstance(value, Mapping):
        if "label" not in value:
            return _LabelProblem("expected an object with a 'label' field")
        value = value["label"]
    if task in ("support", "correctness"):
        if isinstance(value, str):
            word = value.strip().lower().replace(" ", "_").replace("-", "_")
            if word in VERDICTS:
                return word
        return _LabelProblem(f"'label' must be one of {', '.join(VERDICTS)}; got {value!r}"[:200])
    if task in ("answer_relevance", "context_relevance"):
        if isinstance(value, bool):
            return _LabelProblem(f"'label' must be 0, 1 or 2; got {value!r}")
        if isinstance(value, str) and value.strip() in ("0", "1", "2"):
            return int(value.strip())
        if isinstance(value, (int, float)) and value in GRADES:
            return int(value)
        return _LabelProblem(f"'label' must be 0, 1 or 2; got {value!r}"[:200])
    raise ValueError(f"unknown task {task!r}")


def label_to_json(label: Label | None) -> Any:
    return list(label) if isinstance(label, tuple) else label


def label_from_json(task: str, value: Any) -> Label:
    checked = check_label(task, value)
    if isinstance(checked, _LabelProblem):
        raise ValueError(checked.reason)
    return checked


def is_problem(value: object) -> bool:
    return isinstance(value, _LabelProblem)


@dataclass(frozen=True)
class CallResult:
    """What a backend that reports more than a label returns: the label plus bookkeeping."""

    label: Label
    raw: str = ""
    usage: Mapping[str, int] = field(default_factory=dict)
    fingerprint: str | None = None
