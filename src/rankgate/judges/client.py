"""The judge client: one backend wrapped in the cache, a pool of workers and the bookkeeping.

:meth:`JudgeClient.run` returns one :class:`Judgement` per (item, sample), in item order with
samples inner, whatever order the calls finish in. It never raises for a failed call: a backend's
:class:`JudgeCallError` (or any exception from a user's judge) becomes a Judgement with ``error``
set (redacted, and one line whatever the server's message held) and ``label`` None, and is never
cached. Sample ``i`` is sent with ``seed + i``. Answers are looked up in the cache in batches before
any call, and written to it from the calling thread every few hundred answers (and when the run ends
or is interrupted), so an interrupted run keeps what it paid for.

Bounds, so that no input and no reply can make the run's cost grow without end:

* ``repeats`` is at most :data:`MAX_REPEATS`;
* a ``statements`` label with more than ``max_statements`` statements (default
  :data:`DEFAULT_MAX_STATEMENTS`, at most :data:`MAX_STATEMENTS`) is that item's error, naming the
  count (the label stays in the cache: a run with a higher cap uses it), so a caller never fans it
  out into one call per statement;
* ``max_calls`` (None: no budget) is a budget of calls for the client's whole life, checked before
  each call, in item order: a call is one (item, sample) sent to the judge, its retries and re-ask
  included; cache hits are free. Once it is spent every further item becomes the error
  :data:`BUDGET_REACHED`, and ``stats["over_budget"]`` counts them.
"""

from __future__ import annotations

import json
import queue
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from typing import Any

from rankgate.errors import UsageError
from rankgate._util.redact import redact_line
from rankgate.judges.base import TASK_FIELDS, TASKS, CallResult, JudgeCallError, JudgeItem, Judgement, Plan, check_label, is_problem
from rankgate.judges.cache import JudgeCache, request_key

__all__ = ["BUDGET_REACHED", "DEFAULT_MAX_STATEMENTS", "MAX_REPEATS", "MAX_STATEMENTS", "JudgeClient",
           "check_count"]

_FLUSH_ROWS, _FLUSH_SECONDS = 256, 2.0
MAX_REPEATS = 20  # samples per item: 3 to 5 measure a judge's variance
DEFAULT_MAX_STATEMENTS = 200  # statements per answer; each costs a support (and a correctness) call
MAX_STATEMENTS = 10_000
BUDGET_REACHED = "call budget reached"


def check_count(value: Any, name: str, low: int, high: int | None, why: str = "") -> int:
    """``value`` as an int in ``[low, high]`` (``high`` None: no upper bound), else a UsageError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise UsageError(f"{name} must be an integer; got {value!r}")
    if value < low or (high is not None and value > high):
        bound = f"between {low:,} and {high:,}" if high is not None else f">= {low:,}"
        raise UsageError(f"{name} must be {bound}; got {value:,}{why}")
    return value


class JudgeClient:
    """A backend plus cache, workers and counters. Build it with :func:`rankgate.judges.open_judge`."""

    def __init__(self, backend: Any, *, spec: str, seed: int = 0, workers: int = 8,
                 cache: JudgeCache | None = None, refresh: bool = False, progress: bool = False,
                 builtin: bool = False, max_statements: int = DEFAULT_MAX_STATEMENTS,
                 max_calls: int | None = None) -> None:
        self.max_statements = check_count(max_statements, "max_statements", 1, MAX_STATEMENTS)
        self.max_calls = None if max_calls is None else check_count(max_calls, "max_calls", 0, None)
        self._budget_used = 0
        self.backend = backend
        self.spec = spec
        self.seed = seed
        self.workers = workers
        self.cache = cache
        self.refresh = refresh
        self.progress = progress
        self._builtin = builtin
        self.stats = {"calls": 0, "sent": 0, "cache_hits": 0, "errors": 0, "prompt_tokens": 0,
                      "completion_tokens": 0, "over_budget": 0}

    # -- what is asked -----------------------------------------------------------------------------
    def _check(self, task: str, items: Sequence[JudgeItem], repeats: int) -> None:
        if task not in TASKS:
            raise UsageError(f"unknown judge task {task!r}; expected one of {', '.join(TASKS)}")
        check_count(repeats, "repeats", 1, MAX_REPEATS, " (3 to 5 samples measure a judge's variance)")
        need = TASK_FIELDS[task]
        for item in items:
            missing = [f for f in need if not isinstance(item.fields.get(f), str)]
            if missing:
                raise UsageError(f"judge item {item.key!r} for task {task!r} lacks text field(s) "
                                 f"{', '.join(missing)} (the task needs {', '.join(need)})")

    def _request(self, task: str, fields: Mapping[str, str], sample: int) -> dict[str, Any] | None:
        if self.cache is None:
            return None
        describe = getattr(self.backend, "request", None)
        if describe is not None:
            request = describe(task, fields, seed=self.seed + sample)
        elif getattr(self.backend, "cacheable", None) is False or not isinstance(
                getattr(self.backend, "version", None), str):
            return None
        else:  # a user's judge that declares a version
            request = {"backend": self.spec, "version": self.backend.version, "task": task,
                       "fields": dict(fields), "seed": self.seed + sample}
        if request is None:
            return None
        return {**request, "sample": sample}

    def _keys(self, task: str, items: Sequence[JudgeItem], repeats: int) -> list[str | None]:
        keys: list[str | None] = []
        for item in items:
            for sample in range(repeats):
                request = self._request(task, item.fields, sample)
                keys.append(None if request is None else request_key(request))
        return keys

    def _lookup(self, keys: Sequence[str | None]) -> dict[str, str]:
        if self.cache is None or self.refresh:
            return {}
        return self.cache.get_many(k for k in keys if k is not None)

    # -- planning ----------------------------------------------------------------------------------
    def plan(self, task: str, items: Sequence[JudgeItem], *, repeats: int = 1) -> Plan:
        """How many calls a run would make, how many the cache answers, approximate tokens; calls nothing."""
        self._check(task, items, repeats)
        keys = self._keys(task, items, repeats)
        found = self._lookup(keys)
        estimate = getattr(self.backend, "estimate_tokens", None)
        tokens_in = tokens_out = 0
        hits = 0
        for index, key in enumerate(keys):
            if key is not None and key in found:
                hits += 1
                continue
            if estimate is not None:
                t_in, t_out = estimate(task, items[index // repeats].fields)
                tokens_in += t_in
                tokens_out += t_out
        calls_model = bool(getattr(self.backend, "calls_model", True))
        return Plan(task=task, calls=len(keys), cache_hits=hits, approx_tokens=tokens_in + tokens_out,
                    approx_tokens_in=tokens_in, approx_tokens_out=tokens_out, backend=self.spec,
                    model_calls=calls_model, tokens_known=estimate is not None or not calls_model)

    # -- running -----------------------------------------------------------------------------------
    def run(self, task: str, items: Sequence[JudgeItem], *, repeats: int = 1) -> list[Judgement]:
        """Judge every item ``repeats`` times; in item order, samples inner; never raises for a failed call."""
        self._check(task, items, repeats)
        keys = self._keys(task, items, repeats)
        found = self._lookup(keys)
        out: list[Judgement | None] = [None] * len(keys)
        todo: list[int] = []
        for index, key in enumerate(keys):
            item = items[index // repeats]
            if key is not None and key in found:
                try:
                    label = check_label(task, json.loads(found[key]))
                except (ValueError, RecursionError):  # a damaged cache row is asked again
                    label = None
                if label is not None and not is_problem(label):
                    error = self._over_cap(task, label)
                    out[index] = Judgement(item.key, task, index % repeats, None if error else label,  # type: ignore[arg-type]
                                           error, True)
                    continue
            todo.append(index)
        self.stats["calls"] += len(keys)
        self.stats["cache_hits"] += len(keys) - len(todo)
        if todo:
            with self._progress(len(todo), task) as bar:
                self._dispatch(task, items, repeats, keys, todo, out, bar)
        self.stats["errors"] += sum(1 for j in out if j is not None and j.error is not None)
        return [j for j in out if j is not None]

    def _over_cap(self, task: str, label: Any) -> str | None:
        """The error for a statements label over the cap (the answer gets no call per statement), else None."""
        if task == "statements" and isinstance(label, tuple) and len(label) > self.max_statements:
            return (f"the judge found {len(label):,} statements, more than the cap of {self.max_statements:,} "
                    f"per answer (--max-statements); no statement was checked")
        return None

    def _take_budget(self) -> bool:
        """One call from the budget (True), or False when it is spent. Called in item order, before the call."""
        if self.max_calls is not None and self._budget_used >= self.max_calls:
            self.stats["over_budget"] += 1
            return False
        self._budget_used += 1
        return True

    def _one(self, task: str, fields: Mapping[str, str], sample: int) -> tuple[Any, str | None]:
        try:
            answer = self.backend.judge(task, fields, seed=self.seed + sample)
        except JudgeCallError as exc:
            return None, str(exc) or "the judge call failed"
        except RecursionError:  # a reply nested past Python's stack, in any backend: this call's error
            return None, "the judge's reply nests too deeply to read"
        except Exception as exc:  # noqa: BLE001 - a user's judge failing is a failed call, not a crash
            if self._builtin:
                raise
            return None, f"{type(exc).__name__}: {exc}"[:500]
        result = answer if isinstance(answer, CallResult) else CallResult(label=answer)
        label = check_label(task, result.label)
        if is_problem(label):
            return None, f"the judge returned an invalid label: {label.reason}"  # type: ignore[union-attr]
        return CallResult(label=label, raw=result.raw, usage=result.usage, fingerprint=result.fingerprint), None  # type: ignore[arg-type]

    def _dispatch(self, task: str, items: Sequence[JudgeItem], repeats: int, keys: Sequence[str | None],
                  todo: Sequence[int], out: list[Judgement | None], bar: Any) -> None:
        pending_rows: list[tuple[str, str, str, str, Mapping[str, int], str | None]] = []
        last_flush = time.monotonic()

        def flush() -> None:
            nonlocal last_flush
            if self.cache is not None and pending_rows:
                self.cache.put_many(pending_rows)
            pending_rows.clear()
            last_flush = time.monotonic()

        inline = getattr(self.backend, "calls_model", True) is False
        results: queue.SimpleQueue[tuple[int, Any, str | None]] = queue.SimpleQueue()

        def work(index: int) -> None:
            try:
                result, error = self._one(task, items[index // repeats].fields, index % repeats)
            except BaseException as exc:  # noqa: BLE001 - a bug in a built-in backend: re-raised below
                results.put((index, exc, "\x00crash"))
                return
            results.put((index, result, None if error is None else redact_line(error)))  # one line, whatever a server sent

        finished = False
        pool = None if inline else ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="rankgate-judge")
        try:
            for index in todo:  # the budget is taken here, in item order, so the same items get it every run
                if not self._take_budget():
                    results.put((index, None, BUDGET_REACHED))
                elif pool is None:  # no model to wait for: judge in this thread, in order
                    work(index)
                else:
                    pool.submit(work, index)
            for _ in todo:
                index, result, error = results.get()
                if error == "\x00crash":
                    raise result
                item = items[index // repeats]
                if error is not None:
                    out[index] = Judgement(item.key, task, index % repeats, None, error, False)
                else:
                    capped = self._over_cap(task, result.label)
                    out[index] = Judgement(item.key, task, index % repeats, None if capped else result.label,
                                           capped, False)
                    self.stats["sent"] += 1
                    for name in ("prompt_tokens", "completion_tokens"):
                        self.stats[name] += int(result.usage.get(name, 0) or 0)
                    key = keys[index]
                    if key is not None:
                        label = list(result.label) if isinstance(result.label, tuple) else result.label
                        pending_rows.append((key, task, json.dumps(label, ensure_ascii=False), result.raw,
                                             result.usage, result.fingerprint))
                bar.advance()  # (every completion; the terminal is redrawn when due)
                if len(pending_rows) >= _FLUSH_ROWS or time.monotonic() - last_flush > _FLUSH_SECONDS:
                    flush()
            finished = True
        finally:
            if pool is not None:  # interrupted: drop the queued calls, do not wait for those in flight
                pool.shutdown(wait=finished, cancel_futures=True)
            flush()

    @contextmanager
    def _progress(self, total: int, task: str) -> Iterator[Any]:
        """The bar of one run's calls, moved on every completion (:mod:`rankgate._util.progress`). The command line
        decides whether it is shown (a terminal, no ``--quiet``); a library call shows it when the client was opened
        with ``progress=True`` and stderr is a terminal."""
        from rankgate._util import progress

        with ExitStack() as stack:
            if self.progress and not progress.decided():
                stack.enter_context(progress.showing(progress.for_terminal()))
            yield stack.enter_context(progress.stage(f"judge {task}", total=total, unit="calls"))

    # -- describing --------------------------------------------------------------------------------
    def identity(self) -> dict[str, Any]:
        """Backend, model, url, seed and the prompt of each task, for every output that shows labels."""
        own = getattr(self.backend, "identity", None)
        info: dict[str, Any] = dict(own()) if callable(own) else {}
        info.setdefault("backend", self.spec)
        info.setdefault("model", getattr(self.backend, "name", None) or self.spec)
        info.setdefault("url", None)
        info.setdefault("prompts", {})
        info["seed"] = self.seed
        first = ("backend", "model", "url", "seed", "prompts")
        return {**{k: info[k] for k in first}, **{k: v for k, v in info.items() if k not in first}}

    def check_reachable(self) -> None:
        """Raise UsageError when the backend's server does not answer at all (no-op for offline backends)."""
        check = getattr(self.backend, "check_reachable", None)
        if callable(check):
            check()

    def close(self) -> None:
        closer = getattr(self.backend, "close", None)
        if callable(closer):
            closer()
        if self.cache is not None:
            self.cache.close()
            self.cache = None

    def __enter__(self) -> JudgeClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
