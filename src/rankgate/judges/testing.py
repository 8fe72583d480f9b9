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

Recorded labels. :meth:`ReplayJudge.learn` adds a real judge's labels to a table and
:meth:`ReplayJudge.dumps` writes the table as JSON lines, one ``{"task", "fields", "label"}`` per
row; :meth:`ReplayJudge.from_file` reads such a file back (an :class:`~rankgate.errors.InputError`
naming the line and field for a bad row). Record once against the real judge, commit the file, and
your tests replay it offline.

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
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from rankgate.errors import InputError, UsageError
from rankgate.judges.base import (TASK_FIELDS, TASKS, JudgeCallError, JudgeItem, Judgement, Label, check_label, is_problem,
                   label_to_json)
from rankgate.judges.client import DEFAULT_MAX_STATEMENTS, JudgeClient

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

    # -- recording ---------------------------------------------------------------------------------
    def learn(self, task: str, items: Sequence[JudgeItem], judgements: Iterable[Judgement]) -> int:
        """Add the labels a judge gave ``items`` (what ``client.run(task, items)`` returned) to the table.

        Keyed by all the item's fields; failed calls are left out and, with repeats, the first sample
        counts. Returns how many rows were added or changed.
        """
        _task(task, "learn()")
        by_key = {item.key: item for item in items}
        table = self._table.setdefault(task, {})
        added = 0
        for judgement in judgements:
            item = by_key.get(judgement.key)
            if judgement.task != task or judgement.sample != 0 or judgement.label is None or item is None:
                continue
            key = tuple(str(item.fields.get(name, "")) for name in TASK_FIELDS[task])
            label = _label(task, label_to_json(judgement.label), f"{task} {judgement.key!r}")
            added += table.get(key) != label
            table[key] = label
        return added

    def dumps(self) -> str:
        """The table's rows keyed by all fields, as JSON lines ``{"task", "fields", "label"}`` (for :meth:`from_file`).

        Rows keyed by a subject text alone, the handler and the defaults are code, not data: they are
        not written.
        """
        lines = []
        for task in TASKS:
            for key, label in self._table.get(task, {}).items():
                if isinstance(key, tuple):
                    lines.append(json.dumps({"task": task, "fields": dict(zip(TASK_FIELDS[task], key)),
                                             "label": label_to_json(label)}, ensure_ascii=False))
        return "".join(line + "\n" for line in lines)

    @classmethod
    def from_file(cls, path: str, *, handler: Handler | None = None,
                  default: Mapping[str, Any] | None = None) -> ReplayJudge:
        """A replay of the JSON lines :meth:`dumps` writes; a bad row is an InputError naming its line."""
        from rankgate.io.jsonl import json_objects

        shape = '{"task", "fields": {...}, "label"}'
        judge = cls(handler=handler, default=default)
        seen: dict[tuple[str, tuple[str, ...]], int] = {}
        for line, obj in json_objects(path, "replay labels", shape):
            task = obj.get("task")
            if task not in TASKS:
                raise InputError(f"must be one of {', '.join(TASKS)}; got {json.dumps(task)[:60]}", path=path,
                                 line=line, field="task")
            fields = obj.get("fields")
            if not isinstance(fields, dict):
                raise InputError(f"must be an object with the task's fields ({', '.join(TASK_FIELDS[task])})",
                                 path=path, line=line, field="fields")
            for name in TASK_FIELDS[task]:
                if not isinstance(fields.get(name), str):
                    raise InputError(f"must be a string (the {task} task needs {', '.join(TASK_FIELDS[task])})",
                                     path=path, line=line, field=f"fields.{name}")
            key = tuple(fields[name] for name in TASK_FIELDS[task])
            if (task, key) in seen:
                raise InputError(f"the same {task} item again (first at line {seen[(task, key)]})", path=path,
                                 line=line, hint="one label per item")
            seen[(task, key)] = line
            checked = check_label(task, obj.get("label"))
            if is_problem(checked):
                reason = checked.reason.removeprefix("'label' ")  # type: ignore[union-attr]
                raise InputError(reason, path=path, line=line, field="label")
            judge._table.setdefault(task, {})[key] = checked  # type: ignore[assignment]
        return judge

    # -- answering ---------------------------------------------------------------------------------
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

        from rankgate.judges.prompts import read_messages

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
