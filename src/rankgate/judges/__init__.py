"""One judge client for every LLM-judged label rankgate uses (answers, pooling, calibration).

::

    from rankgate.judges import open_judge, JudgeItem
    with open_judge("openai", url="http://localhost:8000/v1", model="qwen2.5-7b-instruct") as judge:
        labels = judge.run("context_relevance", [JudgeItem("q1\\x1fc7", {"question": q, "passage": p})])

Backends: ``lexical`` (deterministic token-overlap baseline, offline: :mod:`.lexical`), ``openai``
(any OpenAI-compatible ``/v1/chat/completions``: :mod:`.openai`) and a user's ``module:Class``
(the :class:`Judge` protocol). Around each: the persistent cache (:mod:`.cache`), the worker pool
and failures as data (:mod:`.client`). For tests of your own pipeline, :mod:`.testing` has a replay
judge that answers from a table. Imports only the standard library at import time; httpx is imported
on the first call. See docs/judges.md.
"""

from __future__ import annotations

import inspect
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from rankgate._util.constraints import TIMEOUT, check
from rankgate.errors import F, UsageError
from rankgate._util.redact import register_url
from rankgate.judges.base import TASK_FIELDS, TASKS, Judge, JudgeCallError, JudgeItem, Judgement, Label, Plan
from rankgate.judges.client import (BUDGET_REACHED, DEFAULT_MAX_STATEMENTS, MAX_REPEATS, MAX_STATEMENTS, JudgeClient,
                     check_count)

__all__ = [
    "BUDGET_REACHED",
    "DEFAULT_MAX_STATEMENTS",
    "MAX_REPEATS",
    "MAX_RETRIES",
    "MAX_STATEMENTS",
    "MAX_WORKERS",
    "TASKS",
    "TASK_FIELDS",
    "Judge",
    "JudgeCallError",
    "JudgeClient",
    "JudgeItem",
    "Judgement",
    "Label",
    "Plan",
    "RepeatVariance",
    "coverage",
    "open_judge",
    "repeat_variance",
]

BACKENDS = ("lexical", "openai")
MAX_WORKERS = 64  # calls in flight at once
MAX_RETRIES = 10  # retries of one failed call (the backoff doubles up to 30 s each)


def open_judge(backend: str, *, url: str | None = None, model: str | None = None, key_env: str | None = None,
               cache_dir: str | None = None, use_cache: bool = True, refresh: bool = False, workers: int = 8,
               timeout_s: float = 60.0, seed: int = 0, retries: int = 4, progress: bool = False,
               backoff_s: float = 0.5, max_retry_after_s: float = 60.0,
               max_statements: int = DEFAULT_MAX_STATEMENTS, max_calls: int | None = None,
               max_reply_bytes: int | None = None, transport: Any = None) -> JudgeClient:
    """Build a judge client; bad configuration is a UsageError here, before any call.

    ``backend`` is ``"lexical"``, ``"openai"`` (needs ``url`` and ``model``; ``key_env`` names the
    environment variable holding the API key, none for a local server) or ``"package.module:Class"``
    (called with no arguments, or with ``url``/``model`` when given and accepted). ``use_cache=False``
    neither reads nor writes the cache; ``refresh=True`` writes without reading. ``workers`` is at most
    :data:`MAX_WORKERS`, ``retries`` at most :data:`MAX_RETRIES`; ``max_statements`` and ``max_calls``
    bound what the run may cost (:mod:`.client`). ``timeout_s`` is the whole time one request may take;
    ``max_reply_bytes`` (default 1 MB) caps each reply body after decompression. ``transport`` (an
    ``httpx.BaseTransport``, e.g. ``httpx.MockTransport(handler)`` in tests) carries the openai judge's
    requests instead of httpx's own (:mod:`.openai`, "Transport"); any other backend refuses it.
    """
    register_url(url)  # a password in the URL is a secret whichever judge gets it
    check_count(workers, "judge workers", 1, MAX_WORKERS)
    timeout_s = check(TIMEOUT, timeout_s, caller="open_judge", name="timeout_s")
    check_count(retries, "judge retries", 0, MAX_RETRIES)
    check_count(max_statements, "max_statements", 1, MAX_STATEMENTS)
    if max_calls is not None:
        check_count(max_calls, "max_calls", 0, None)
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise UsageError(f"judge seed must be an integer; got {seed!r}")
    from rankgate.judges.transport import DEFAULT_MAX_REPLY_BYTES, MAX_MAX_REPLY_BYTES

    if max_reply_bytes is None:
        max_reply_bytes = DEFAULT_MAX_REPLY_BYTES
    if (not isinstance(max_reply_bytes, int) or isinstance(max_reply_bytes, bool)
            or not 1024 <= max_reply_bytes <= MAX_MAX_REPLY_BYTES):
        raise UsageError(f"{F.max_reply_bytes} must be a whole number of bytes from 1024 to {MAX_MAX_REPLY_BYTES:,} "
                         f"(default {DEFAULT_MAX_REPLY_BYTES:,}); got {max_reply_bytes!r}")
    if transport is not None and backend != "openai":
        raise UsageError(f"a transport is for the openai judge (it carries its HTTP requests); the {backend!r} "
                         f"judge makes none")
    builtin = True
    if backend == "lexical":
        from rankgate.judges.lexical import LexicalJudge

        impl: Any = LexicalJudge()
    elif backend == "openai":
        if not url:
            raise UsageError(f"the openai judge needs a URL: pass {F.url} (e.g. http://localhost:8000/v1 for "
                             "vLLM, http://localhost:11434/v1 for Ollama, https://api.openai.com/v1)")
        from rankgate.judges.openai import OpenAIJudge

        impl = OpenAIJudge(url, model or "", key_env=key_env, timeout_s=timeout_s, retries=retries,
                           workers=workers, backoff_s=backoff_s, max_retry_after_s=max_retry_after_s,
                           max_reply_bytes=max_reply_bytes, transport=transport)
    elif isinstance(backend, str) and ":" in backend:
        impl = _user_judge(backend, url=url, model=model)
        builtin = False
    else:
        import difflib

        close = difflib.get_close_matches(str(backend), BACKENDS, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise UsageError(f"unknown judge {backend!r}.{hint} Known: {', '.join(BACKENDS)}; or give your own as "
                         f"'package.module:ClassName'")
    cache = None
    if use_cache:
        from rankgate.judges.cache import JudgeCache

        cache = JudgeCache(cache_dir)
    return JudgeClient(impl, spec=backend, seed=seed, workers=workers, cache=cache, refresh=refresh,
                       progress=progress, builtin=builtin, max_statements=max_statements, max_calls=max_calls)


def _user_judge(spec: str, **given: str | None) -> Any:
    from rankgate._util.plugins import load_object

    factory = load_object(spec, "judge")
    options = {k: v for k, v in given.items() if v is not None}
    try:
        params = inspect.signature(factory).parameters
        if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
            options = {k: v for k, v in options.items() if k in params}
    except (TypeError, ValueError):
        options = {}
    try:
        obj = factory(**options)
    except Exception as exc:  # noqa: BLE001 - a user's constructor failing is a configuration error
        raise UsageError(f"judge {spec!r} could not be built: {type(exc).__name__}: {exc}") from None
    if not callable(getattr(obj, "judge", None)):
        raise UsageError(f"judge {spec!r} gave a {type(obj).__name__}, which has no judge(task, fields, *, seed) "
                         f"method (see rankgate.judges.Judge)")
    return obj


@dataclass(frozen=True)
class RepeatVariance:
    """How often the judge changes its mind across repeated samples of the same item.

    ``items`` counts keys with at least two samples that have a label (errors are left out);
    ``changed`` of them got more than one distinct label; ``share = changed / items`` (NaN if 0).
    """

    items: int
    changed: int
    share: float


def repeat_variance(judgements: Iterable[Judgement]) -> RepeatVariance:
    """The share of items whose label changes across samples (``--repeats n``)."""
    labels: dict[tuple[str, str], list[Any]] = defaultdict(list)
    for j in judgements:
        if j.error is None:
            labels[(j.task, j.key)].append(j.label)
    counted = [v for v in labels.values() if len(v) >= 2]
    changed = sum(1 for v in counted if len(set(v)) > 1)
    return RepeatVariance(len(counted), changed, changed / len(counted) if counted else float("nan"))


def coverage(judgements: Iterable[Judgement]) -> tuple[int, int]:
    """``(labelled, total)`` over judgements: the coverage every judged number reports."""
    total = ok = 0
    for j in judgements:
        total += 1
        ok += j.error is None
    return ok, total
