"""The ``openai`` judge: any OpenAI-compatible ``/v1/chat/completions`` endpoint over httpx.

Works with OpenAI, Azure OpenAI, vLLM, Ollama (``/v1``) and llama.cpp's ``llama-server``.

Request
    ``temperature: 0`` and ``seed`` are always sent (llama.cpp's default temperature is 0.8, so
    leaving it out is not "the default"); ``n`` is never sent (llama.cpp refuses ``n > 1``: k samples
    are k calls with seeds ``seed + i``); ``max_tokens`` is the task's budget; ``response_format`` is
    ``json_schema`` (strict) with the task's answer schema.
Fallback
    A 400 that names ``response_format``/``json_schema`` switches this judge to ``json_object`` and
    resends at once; a 400 on that switches to no ``response_format`` at all (the prompt still asks
    for JSON). The switch sticks for the rest of the run. Replies are read with a tolerant extractor
    (code fences, prose around the JSON).
Re-ask
    An answer that does not parse, does not match the schema or was cut off
    (``finish_reason: "length"``) is re-asked once, in the same conversation, with the problem named
    (and twice the token budget when it was cut off); a second failure is a failed call.
Retries
    408, 409, 429, 5xx, timeouts and connection errors are retried up to ``retries`` times with
    exponential backoff (``backoff_s · 2^attempt``, at most ``max_backoff_s``) times a jitter factor
    in [0.5, 1) drawn from a generator seeded by the seed, the request and the attempt (so a re-run
    waits the same). ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date) replaces the
    backoff, capped at ``max_retry_after_s``. Other statuses fail at once, naming the status and the
    server's message.
Redirects
    None is followed: a 301, 302, 303, 307 or 308 is a failed call, not retried, that says where the
    server points. One to another origin (scheme, host or port) names both origins: the request, and
    the key in it, never reach the other server. One on the same origin is not followed either, since
    the chat-completions API has no redirects to follow (a proxy's trailing-slash or login redirect
    would make every call twice, or answer with a page): give ``--judge-url`` the address it names.
Replies
    Every reply body, error bodies included, is read as a stream and decompressed here (gzip and
    deflate are asked for; another encoding is refused) in pieces, with at most ``max_reply_bytes``
    (default 1 MB, ``--max-reply-bytes``) kept after decompression: a larger reply, or a compressed
    one that inflates past the cap, is a failed call "reply larger than …", never retried. A reply
    nesting deeper than :data:`rankgate.io.jsonl.MAX_DEPTH` levels, or that is not JSON, is a
    failed call too.
Deadline
    ``timeout_s`` (``--timeout``) is the whole time one request may take, from connecting to the last
    byte of the reply, not only the longest wait for one read: every socket read and write is given
    what is left of it, so a server that drips a byte at a time cannot hold a call past it. Each
    retry gets a new deadline.
Key
    Read from the environment variable the user names (``key_env``) and sent as
    ``Authorization: Bearer`` (``api-key`` for Azure hosts); no key for a local server. The key is
    never part of the identity, the cache key or a message: it (and a password in the URL) is
    registered with :mod:`rankgate._util.redact`, and every error message and every reply passes
    :func:`~rankgate._util.redact.redact` before it is shown or cached.
Transport
    ``transport`` (any ``httpx.BaseTransport``; default: httpx's own, with proxies from the
    environment) carries the requests, as in ``httpx.Client(transport=…)``: an
    ``httpx.HTTPTransport`` with your TLS or proxy settings, or an ``httpx.MockTransport(handler)`` in
    tests (:mod:`rankgate.judges.testing` ships one that answers like a server). Replies from it are
    read, capped and redacted as above. The deadline reaches under an ``httpx.HTTPTransport``; a
    transport with no sockets cannot be interrupted, so its reply counts as a timeout when it comes
    after the deadline. A transport other than ``httpx.HTTPTransport`` is named in the identity and
    the cache key, so a fake's labels never answer for the real server. It is closed with the judge.
Failures
    How an exception from the HTTP layer becomes a call's error (and whether it is retried) is one
    table, :func:`failure`.
"""

from __future__ import annotations

import email.utils
import hashlib
import json
import math
import os
import random
import threading
import time
import urllib.parse
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

from rankgate.errors import F, UsageError
from rankgate._util.redact import origin, redact, register, register_url
from rankgate.judges.base import TASKS, CallResult, JudgeCallError, check_label, is_problem
from rankgate.judges.extract import extract_json
from rankgate.judges.prompts import answer_schema, max_tokens, prompt
from rankgate.judges.transport import ACCEPT_ENCODING, DEFAULT_MAX_REPLY_BYTES, BadReply, ReplyTooLarge, deadline, read_body
from rankgate.judges.transport import client as http_client

__all__ = ["OpenAIJudge", "chat_endpoint", "failure"]

RETRY_STATUSES = frozenset({408, 409, 429}) | frozenset(range(500, 600))
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})  # never followed (module docstring, "Redirects")
MODES = ("json_schema", "json_object", "none")
_FORMAT_WORDS = ("response_format", "json_schema", "json_object", "schema")


def chat_endpoint(url: str) -> str:
    """The chat-completions URL for a base URL (``…/v1``), a bare host, or the full endpoint."""
    parts = urllib.parse.urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise UsageError(f"judge URL {url!r} must be an http:// or https:// URL, e.g. http://localhost:8000/v1")
    path = parts.path.rstrip("/")
    if not path.endswith("/chat/completions"):
        path = (path or "/v1") + "/chat/completions"
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def _is_azure(endpoint: str) -> bool:
    host = urllib.parse.urlsplit(endpoint).hostname or ""
    return host.endswith(".openai.azure.com") or host.endswith(".cognitiveservices.azure.com")


def _retry_after(headers: Mapping[str, str]) -> float | None:
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            value = float(ms) / 1000.0
            return value if math.isfinite(value) and value >= 0 else None
        except ValueError:
            pass
    text = headers.get("retry-after")
    if text is None:
        return None
    try:
        value = float(text)
        return value if math.isfinite(value) and value >= 0 else None
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _server_message(raw: bytes) -> str:
    """The server's own words from an error body (redacted before it is cut to 300 characters)."""
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        return redact(raw.decode("utf-8", "replace").strip())[:300]
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and error.get("message"):
        text = str(error["message"])
    elif isinstance(error, str):
        text = error
    else:
        try:
            text = json.dumps(body)
        except (ValueError, RecursionError):
            text = raw.decode("utf-8", "replace")
    return redact(text)[:300]


def _loads(raw: bytes) -> Any:
    """The reply's JSON; ValueError for one that is not JSON or nests deeper than the readers allow."""
    try:
        body = json.loads(raw)
    except RecursionError:
        raise _TooDeep() from None
    if raw.count(b"[") + raw.count(b"{") > 64:  # a completion holds a handful: only then is it measured
        from rankgate.io.jsonl import json_depth

        if json_depth(body) > _TooDeep.levels():
            raise _TooDeep()
    return body


class _TooDeep(ValueError):
    """A reply nesting deeper than the JSON readers allow (:data:`rankgate.io.jsonl.MAX_DEPTH`)."""

    @staticmethod
    def levels() -> int:
        from rankgate.io.jsonl import MAX_DEPTH

        return MAX_DEPTH

    def __str__(self) -> str:
        return f"nested deeper than {self.levels()} levels"


@cache
def _failures() -> tuple[tuple[type[BaseException], bool, Callable[[BaseException, float], str]], ...]:
    import httpx

    return (  # (exception class, retried, the call's error); the first row that matches wins
        (httpx.TimeoutException, True, lambda exc, timeout_s: f"timeout after {timeout_s:g} s"),
        (httpx.TransportError, True,
         lambda exc, timeout_s: redact(f"connection error ({type(exc).__name__}: {exc})")[:300]),
        (BadReply, False, lambda exc, timeout_s: redact(str(exc))[:300]),
    )


def failure(exc: BaseException, timeout_s: float) -> tuple[str, bool] | None:
    """``(reason, retried)`` for an exception of the HTTP layer, None for one that is not (a bug: re-raised).

    The one table of foreign exceptions: httpx's timeouts (connect, read, write, pool, and the
    request's :func:`~rankgate.judges.transport.deadline`) and transport errors (refused, reset,
    DNS, TLS, protocol) are retried; a body that cannot be decoded is not.
    """
    for kind, retried, reason in _failures():
        if isinstance(exc, kind):
            return reason(exc, timeout_s), retried
    return None


def _count(value: Any) -> int:
    """A token count the server reported; anything but a whole number >= 0 counts as 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        return 0
    return int(value)


class OpenAIJudge:
    """Judge over an OpenAI-compatible chat-completions endpoint (module docstring)."""

    calls_model = True

    def __init__(self, url: str, model: str, *, key_env: str | None = None, timeout_s: float = 60.0,
                 retries: int = 4, workers: int = 8, backoff_s: float = 0.5, max_backoff_s: float = 30.0,
                 max_retry_after_s: float = 60.0,
                 max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES, transport: Any = None) -> None:
        register_url(url)  # before anything can name the URL
        if not model or not isinstance(model, str):
            raise UsageError(f"the openai judge needs a model name: pass {F.model} (e.g. gpt-4o-mini, or the "
                             "name your vLLM/Ollama/llama.cpp server serves)")
        self.endpoint = chat_endpoint(url)
        self.model = model
        self.timeout_s = float(timeout_s)
        self.retries = int(retries)
        self.workers = int(workers)
        self.backoff_s, self.max_backoff_s, self.max_retry_after_s = backoff_s, max_backoff_s, max_retry_after_s
        self.max_reply_bytes = int(max_reply_bytes)
        self._headers = {"content-type": "application/json", "accept-encoding": ACCEPT_ENCODING}
        key = None
        if key_env:
            key = os.environ.get(key_env)
            if not key:  # (a name holding a NUL, which no variable has, is shown escaped: a NUL marks a field)
                shown = str(key_env).replace("\x00", "\\x00")
                raise UsageError(f"the judge key variable {shown} is not set (or empty); export it, or leave out "
                                 f"{F.key_env} for a local server that needs no key")
        elif (urllib.parse.urlsplit(self.endpoint).hostname or "").endswith("api.openai.com"):
            raise UsageError("api.openai.com needs an API key: name the variable that holds it with "
                             f"{F.key_env} (e.g. {F(key_env='OPENAI_API_KEY')})")
        if key:
            register(key)
            if _is_azure(self.endpoint):
                self._headers["api-key"] = key
            else:
                self._headers["authorization"] = f"Bearer {key}"
        self.mode = MODES[0]
        self._lock = threading.Lock()
        self._http: Any = None
        self._transport = transport
        self._transport_name: str | None = None
        if transport is not None:
            import httpx

            if not isinstance(transport, httpx.BaseTransport):
                raise UsageError(f"the judge's transport must be an httpx.BaseTransport (e.g. "
                                 f"httpx.MockTransport(handler)); got {type(transport).__name__}")
            if not isinstance(transport, httpx.HTTPTransport):  # a fake: its labels are not the server's
                self._transport_name = f"{type(transport).__module__}.{type(transport).__qualname__}"

    # -- what is sent ------------------------------------------------------------------------------
    def request(self, task: str, fields: Mapping[str, str], *, seed: int) -> dict[str, Any]:
        """The canonical request (for the cache key): everything that decides the answer."""
        p = prompt(task)
        return {"endpoint": self.endpoint, "model": self.model, "messages": p.messages(fields),
                "temperature": 0, "seed": seed, "max_tokens": max_tokens(task), "schema": answer_schema(task),
                "prompt": p.label, **self._fake_transport()}

    def _fake_transport(self) -> dict[str, str]:
        return {} if self._transport_name is None else {"transport": self._transport_name}

    def estimate_tokens(self, task: str, fields: Mapping[str, str]) -> tuple[int, int]:
        """Approximate (input, output) tokens: characters / 4, the output a typical answer's size."""
        chars = sum(len(m["content"]) + 8 for m in prompt(task).messages(fields))
        out = 16 + len(fields.get("answer", "")) // 4 if task == "statements" else 8
        return math.ceil(chars / 4), out

    def identity(self) -> dict[str, Any]:
        return {"backend": "openai", "model": self.model, "url": redact(self.endpoint),
                "prompts": {task: prompt(task).label for task in TASKS}, "response_format": self.mode, **self._fake_transport()}

    def _body(self, task: str, messages: list[dict[str, str]], seed: int, budget: int, mode: str) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": 0, "seed": seed,
                                "max_tokens": budget}
        if mode == "json_schema":
            body["response_format"] = {"type": "json_schema",
                                       "json_schema": {"name": task, "schema": answer_schema(task), "strict": True}}
        elif mode == "json_object":
            body["response_format"] = {"type": "json_object"}
        return body

    # -- calling -----------------------------------------------------------------------------------
    def judge(self, task: str, fields: Mapping[str, str], *, seed: int) -> CallResult:
        messages = prompt(task).messages(fields)
        budget = max_tokens(task)
        usage = {"prompt_tokens": 0, "completion_tokens": 0}
        problem = ""
        for round_ in (0, 1):
            content, finish, used, fingerprint = self._post(task, messages, seed, budget)
            for name in usage:
                usage[name] += used.get(name, 0)
            if finish == "length":
                problem = f"the answer was cut off at {budget} tokens (finish_reason length)"
                budget *= 2
            else:
                try:
                    parsed = extract_json(content)
                except RecursionError:  # an answer nested past Python's own parser
                    parsed = None
                if parsed is None:
                    problem = "unparseable answer (no JSON found)"
                else:
                    label = check_label(task, parsed)
                    if not is_problem(label):
                        return CallResult(label=label, raw=content or "", usage=usage,  # type: ignore[arg-type]
                                          fingerprint=fingerprint)
                    problem = f"answer does not match the schema: {label.reason}"  # type: ignore[union-attr]
            if round_ == 0:
                messages = [*messages, {"role": "assistant", "content": content or ""},
                            {"role": "user", "content": f"Your reply could not be used: {problem}. "
                                                        f"Reply again with only the JSON object asked for."}]
        raise JudgeCallError(f"{problem}, also after one re-ask")

    def _client(self) -> Any:
        with self._lock:
            if self._http is None:
                self._http = http_client(self.timeout_s, max(1, self.workers), self._transport)
            return self._http

    def _downgrade(self, mode: str) -> None:
        with self._lock:
            if self.mode == mode and mode != MODES[-1]:
                self.mode = MODES[MODES.index(mode) + 1]

    def _delay(self, attempt: int, messages: list[dict[str, str]], seed: int) -> float:
        digest = hashlib.sha256(json.dumps([seed, attempt, messages], sort_keys=True).encode()).digest()
        jitter = 0.5 + 0.5 * random.Random(int.from_bytes(digest[:8], "big")).random()
        return min(self.max_backoff_s, self.backoff_s * 2.0 ** attempt) * jitter

    def _post(self, task: str, messages: list[dict[str, str]], seed: int, budget: int) -> tuple[str | None, Any, Any, str | None]:
        http = self._client()
        attempt = 0
        while True:
            mode = self.mode
            wait: float | None = None
            too_large = False
            try:
                with deadline(self.timeout_s), \
                        http.stream("POST", self.endpoint, json=self._body(task, messages, seed, budget, mode),
                                    headers=self._headers) as response:
                    status, headers = response.status_code, response.headers
                    try:
                        raw = read_body(response, self.max_reply_bytes)
                    except ReplyTooLarge:  # not a failure of the HTTP layer: the status decides what it means
                        raw, too_large = b"", True
            except Exception as exc:
                failed = failure(exc, self.timeout_s)
                if failed is None:
                    raise
                reason, retried = failed
                if not retried:
                    raise JudgeCallError(reason) from None
            else:
                if status == 200:
                    if too_large:
                        raise JudgeCallError(self._too_large())
                    return self._read(raw)
                if status in REDIRECT_STATUSES:
                    raise JudgeCallError(self._redirect(status, headers))
                message = self._too_large() if too_large else _server_message(raw)
                if status == 400 and mode != MODES[-1] and any(w in message.lower() for w in _FORMAT_WORDS):
                    self._downgrade(mode)
                    continue
                if status not in RETRY_STATUSES:
                    hint = " (check --judge-key-env)" if status in (401, 403) else ""
                    raise JudgeCallError(f"HTTP {status}: {message}{hint}")
                reason = f"HTTP {status}"
                after = _retry_after(headers)
                if after is not None:
                    wait = min(after, self.max_retry_after_s)
            attempt += 1
            if attempt > self.retries:
                raise JudgeCallError(f"{reason} after {attempt} attempt{'s' if attempt > 1 else ''}")
            time.sleep(wait if wait is not None else self._delay(attempt - 1, messages, seed))

    def _redirect(self, status: int, headers: Mapping[str, str]) -> str:
        """The error of a redirect, which is never followed (module docstring, "Redirects")."""
        location = headers.get("location", "").strip()
        if not location:
            return f"HTTP {status}: a redirect with no Location; not followed"
        target = urllib.parse.urljoin(self.endpoint, location)
        here, there = origin(self.endpoint), origin(target)
        if there != here:
            return (f"HTTP {status}: the server redirects from {here} to {there}; not followed, so no request and "
                    f"no key goes to {there} (if it is your judge's server, give its URL as --judge-url)")
        return (f"HTTP {status}: the server redirects to {urllib.parse.urlsplit(target).path or '/'} on {here}; not "
                f"followed, as the chat-completions API has no redirects (give that URL as --judge-url)")

    def _too_large(self) -> str:
        return (f"reply larger than {self.max_reply_bytes:,} bytes (--max-reply-bytes; a chat completion is a "
                f"few KB)")

    @staticmethod
    def _read(raw: bytes) -> tuple[str | None, Any, dict[str, int], str | None]:
        """(content, finish_reason, usage, fingerprint) of a completion; every server text redacted."""
        try:
            body = _loads(raw)
            choice = body["choices"][0]
            message = choice.get("message") or {}
            content = message.get("content")
            if isinstance(content, list):  # content parts: keep the text ones
                content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
            elif content is not None and not isinstance(content, str):
                content = json.dumps(content)
            used = body.get("usage") if isinstance(body.get("usage"), dict) else {}
            usage = {name: _count(used.get(name)) for name in ("prompt_tokens", "completion_tokens")}
            fingerprint = body.get("system_fingerprint")
            fingerprint = redact(fingerprint)[:200] if isinstance(fingerprint, str) else None
            return (None if content is None else redact(content)), choice.get("finish_reason"), usage, fingerprint
        except (ValueError, KeyError, IndexError, TypeError, AttributeError, RecursionError) as exc:
            why = f" ({exc})" if isinstance(exc, _TooDeep) else ""
            shown = redact(raw[:400].decode("utf-8", "replace"))[:200]
            raise JudgeCallError(f"the server's reply is not a chat completion{why}: {shown!r}") from None

    def check_reachable(self) -> None:
        """Raise UsageError when nothing answers at the endpoint's host (any HTTP reply will do)."""
        try:
            with deadline(self.timeout_s), self._client().stream(
                    "GET", self.endpoint.rsplit("/chat/completions", 1)[0] + "/models", headers=self._headers):
                pass  # the status line is enough; the body is never read
        except Exception as exc:
            failed = failure(exc, self.timeout_s)
            if failed is None or not failed[1]:
                raise
            raise UsageError(redact(f"the judge URL {self.endpoint} does not answer ({type(exc).__name__}: {exc}); "
                                    f"is the server running?")) from None

    def close(self) -> None:
        with self._lock:
            if self._http is not None:
                self._http.close()
                self._http = None
