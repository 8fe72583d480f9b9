"""A judge for your own tests: :class:`ReplayJudge` answers from a table you write, offline and at once.

A pipeline that asks rankgate's judge for labels (``rankgate answers``, pooling, or your own code
calling :meth:`~rankgate.judges.client.JudgeClient.run`) can be tested without a model server::

    from rankgate.judges.testing import ReplayJudge

    replay = ReplayJudge({"context_relevance": {"Refunds: 30 days from delivery.": 2}},
                         default={"context_relevance": 0})
    with replay.client() as judge:          # a JudgeClient, as open_judge() returns
        labels = judge.run("context_relevance", items)

The table maps each task to ``{key: label}``. A key is either the text of the task's *subject*
field (:data:`SUBJECT`: the passage for ``context_relevance``, the statement for ``support``, …) or
a tuple of all the task's fields in :data:`rankgate.judges.TASK_FIELDS` order, which wins when both
match. Labels are checked when the table is built (a typo is a :class:`~rankgate.errors.UsageError`
then, not a confusing test failure later). What the table lacks is asked of ``handler(task,
fields)`` (return a label, or None), then taken from ``default[task]``; what is still unanswered is
a *miss*: that call fails, as a real judge's call can, so the item gets a ``judge_error`` and your
pipeline's handling of failed calls is exercised too. ``asked`` lists every ``(task, fields)`` asked,
``misses`` the ones nothing answered (assert ``replay.misses == []`` to require a full table).

Three ways in:

* :meth:`ReplayJudge.client` — a :class:`~rankgate.judges.client.JudgeClient` (no cache, calls made in
  order in the calling thread) for code that takes a client;
* ``--judge yourtests.module:YourReplay`` — a subclass whose ``__init__`` takes no arguments, for the
  CLI (``rankgate answers``, ``rankgate judge``);
* :meth:`ReplayJudge.transport` — an ``httpx.MockTransport`` that answers OpenAI-compatible chat
  requests from the same table, for ``open_judge("openai", …, transport=replay.transport())``: the
  real openai client (prompts, request, reply parsing, reply cap, redaction) with no server.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import UsageError
from .base import TASK_FIELDS, TASKS, JudgeCallError, Label, check_label, is_problem, label_to_json
from .client import DEFAULT_MAX_STATEMENTS, JudgeClient

__all__ = ["SUBJECT", "ReplayJudge"]

SUBJECT: dict[str, str] = {
    "statements": "answer",
    "support": "statement",
    "correctness": "statement",
    "answer_relevance": "answer",
    "context_relevance": "passage",
}
"""The field whose text keys a task's row in a :class:`ReplayJudge` table."""

Handler = Callable[[str, Mapping[str, str]], Any]


def _label(task: str, value: Any, where: str) -> Label:
    checked = check_label(task, value)
    if is_problem(checked):
        raise UsageError(f"replay label for {where}: {checked.reason}")  # type: ignore[union-attr]
    return checked  # type: ignore[return-value]


def _task(task: Any, what: str) -> str:
    if task not in TASKS:
        raise UsageError(f"{what} names the task {task!r}; expected one of {', '.join(TASKS)}")
    return str(task)


class ReplayJudge:
    """A :class:`~rankgate.judges.Judge` answering from a table (and a handler), never calling a model."""

    calls_model = False  # the client judges in order, in the calling thread; plans count no tokens
    cacheable = False  # a replay's labels are never written to the judge cache

    def __init__(self, labels: Mapping[str, Mapping[str | tuple[str, ...], Any]] | None = None, *,
                 handler: Handler | None = None, default: Mapping[str, Any] | None = None) -> None:
        self._table: dict[str, dict[str | tuple[str, ...], Label]] = {}
        for task, rows in (labels or {}).items():
            task = _task(task, "the replay table")
            if not isinstance(rows, Mapping):
                raise UsageError(f"the replay table's {task!r} entry must map keys to labels; "
                                 f"got {type(rows).__name__}")
            need = len(TASK_FIELDS[task])
            table = self._table.setdefault(task, {})
            for key, value in rows.items():
                whole = isinstance(key, tuple) and len(key) == need and all(isinstance(k, str) for k in key)
                if not (isinstance(key, str) or whole):
                    raise UsageError(f"replay key {key!r} for {task!r} must be the {SUBJECT[task]} text or a tuple "
                                     f"of the task's {need} fields ({', '.join(TASK_FIELDS[task])})")
                table[key] = _label(task, value, f"{task} {key!r}")
        self._default = {(t := _task(task, "the replay default")): _label(t, value, f"the {t} default")
                         for task, value in (default or {}).items()}
        if handler is not None and not callable(handler):
            raise UsageError(f"the replay handler must be a function (task, fields) -> label; got {handler!r}")
        self._handler = handler
        self._lock = threading.Lock()
        self.asked: list[tuple[str, dict[str, str]]] = []
        self.misses: list[tuple[str, dict[str, str]]] = []

    def lookup(self, task: str, fields: Mapping[str, str]) -> Label | None:
        """The label for an item (table, then handler, then default), or None; records nothing."""
        table = self._table.get(task, {})
        whole = tuple(fields.get(name, "") for name in TASK_FIELDS.get(task, ()))
        if whole in table:
            return table[whole]
        subject = fields.get(SUBJECT.get(task, ""))
        if isinstance(subject, str) and subject in table:
            return table[subject]
        if self._handler is not None:
            value = self._handler(task, fields)
            if value is not None:
                return _label(task, value, f"{task} from the handler")
        return self._default.get(task)

    def judge(self, task: str, fields: Mapping[str, str], *, seed: int) -> Label:
        """One label, or :class:`~rankgate.judges.JudgeCallError` for a miss (the item's ``judge_error``)."""
        label = self.lookup(task, fields)
        with self._lock:
            self.asked.append((task, dict(fields)))
            if label is None:
                self.misses.append((task, dict(fields)))
        if label is None:
            subject = str(fields.get(SUBJECT.get(task, ""), ""))
            shown = subject if len(subject) <= 60 else subject[:57] + "..."
            raise JudgeCallError(f"no replay label for {task} of {SUBJECT.get(task, 'item')} {shown!r}")
        return label

    def identity(self) -> dict[str, Any]:
        return {"backend": "replay", "model": "replay"}

    def client(self, *, seed: int = 0, max_statements: int = DEFAULT_MAX_STATEMENTS,
               max_calls: int | None = None) -> JudgeClient:
        """A judge client over this table, as :func:`~rankgate.judges.open_judge` builds one (no cache).

        An exception from the handler other than :class:`~rankgate.judges.JudgeCallError` is raised
        from :meth:`~rankgate.judges.client.JudgeClient.run`, so a broken test shows as one.
        """
        return JudgeClient(self, spec="replay", seed=seed, workers=1, builtin=True, max_statements=max_statements,
                           max_calls=max_calls)

    def transport(self) -> Any:
        """An ``httpx.MockTransport``: an OpenAI-compatible server answering chat requests from this table.

        ``POST …/chat/completions`` made from rankgate's prompts answers the label as the prompt asks
        (``{"label": …}`` or ``{"statements": […]}``); a miss is a 404 naming it (a failed call);
        a request no rankgate prompt made is a 400. ``GET …/models`` answers, for ``check_reachable``.
        """
        import httpx

        from .prompts import read_messages

        def reply(status: int, payload: Any) -> httpx.Response:
            return httpx.Response(status, json=payload)

        def handle(request: httpx.Request) -> httpx.Response:
            path = request.url.path.rstrip("/")
            if request.method == "GET" and path.endswith("/models"):
                return reply(200, {"object": "list", "data": [{"id": "replay", "object": "model"}]})
            if request.method != "POST" or not path.endswith("/chat/completions"):
                return reply(404, {"error": {"message": f"no route {request.method} {path}"}})
            try:
                body = json.loads(request.content)
            except ValueError:
                return reply(400, {"error": {"message": "the request body is not JSON"}})
            found = read_messages(body.get("messages") if isinstance(body, dict) else None)
            if found is None:
                return reply(400, {"error": {"message": "not a request made from rankgate's judge prompts"}})
            task, fields = found
            try:
                label = self.judge(task, fields, seed=int(body.get("seed") or 0))
            except JudgeCallError as exc:
                return reply(404, {"error": {"message": str(exc)}})
            answer = {"statements": label_to_json(label)} if task == "statements" else {"label": label}
            return reply(200, {
                "id": "chatcmpl-replay", "object": "chat.completion", "created": 0, "model": body.get("model"),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": json.dumps(answer)},
                             "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}})

        return httpx.MockTransport(handle)
