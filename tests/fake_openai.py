"""A fake OpenAI-compatible chat-completions server for offline judge tests and benchmarks.

Runs on 127.0.0.1 at a free port (``FakeOpenAI().start()``, or the ``fake_openai`` fixture) in
daemon threads, over real HTTP/1.1 with keep-alive. It answers ``POST …/chat/completions`` with
OpenAI-shaped JSON and ``GET …/models``, records every request (body, headers, arrival time) and
the peak number of requests in flight.

Answers. The task is read from the system prompt. By default ``context_relevance`` /
``answer_relevance`` answer ``{"label": 2}``, ``support`` / ``correctness`` ``{"label":
"supported"}``, and ``statements`` the answer's sentences. A user message containing
``label=<json>`` answers that label instead; one containing ``seedlabel`` answers ``seed % 3``
(to see repeats differ).

Faults. ``script(marker, *steps)``: the requests whose last user message contains ``marker`` are
served the steps in order, one each, then normal answers. A step is ``status(code, message,
headers)``, ``delay(seconds)`` (then a normal answer), ``content(text, finish_reason)``, or
``parts(text)`` (content as a list of parts), ``length()`` (a cut-off answer with ``finish_reason: "length"``).
Hostile steps: ``huge(n)`` (a completion of ``n`` bytes, streamed, with or without Content-Length),
``bomb(n)`` (a gzip body, produced as it is read, that inflates to ``n`` bytes), ``drip(seconds,
headers=False)`` (the reply, or its status line and headers, one byte every ``seconds``),
``reply(data)`` (a 200 whose body is exactly ``data``), ``nested(depth)`` (a reply nested ``depth``
arrays deep) and ``echo(code, template)`` (the template
with ``{auth}`` replaced by the request's Authorization or api-key header: the content of a 200, else
the error message, as some gateways echo credentials; a 200 answers as usual with the text added
as a ``note`` field, and as one more statement). ``always`` (a step) is served to every chat
request instead of the scripts. Server-wide modes:
``reject_formats`` (a set of ``response_format`` types refused with a 400 naming
``response_format``), ``llama_cpp`` (a 400 "Only one completion choice is allowed" for any ``n``
other than 1) and ``latency`` (seconds slept on every request).

Without sockets. ``FakeOpenAI().transport()`` (no ``start()``) is an ``httpx.MockTransport`` giving
the same answers, scripts and records to a judge built with ``transport=``; ``judge_url`` is then a
URL nothing listens on. The hostile steps (huge, bomb, drip, reply, nested) need the real server:
they are about bytes on a socket.
"""

from __future__ import annotations

import html
import json
import re
import threading
import time
import zlib
from collections import defaultdict, deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class _Server(ThreadingHTTPServer):
    """The fake's server: a client that hangs up mid-reply (a capped or refused body, a deadline) is what the
    tests provoke, not an error of the fake, so it prints no traceback into the stderr they check."""

    def handle_error(self, request, client_address) -> None:
        import sys

        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)


@dataclass
class Step:
    kind: str
    status: int = 200
    message: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    text: str = ""
    finish_reason: str = "stop"
    size: int = 0
    flag: bool = False


def status(code: int, message: str = "", headers: dict[str, str] | None = None) -> Step:
    return Step("status", status=code, message=message or f"fake error {code}", headers=headers or {})


def delay(seconds: float) -> Step:
    return Step("delay", seconds=seconds)


def content(text: str, finish_reason: str = "stop") -> Step:
    return Step("content", text=text, finish_reason=finish_reason)


def parts(text: str) -> Step:
    """The reply as a list of content parts (``[{"type": "text", "text": ...}]``), as some servers send."""
    return Step("parts", text=text)


def huge(size: int, content_length: bool = False, code: int = 200) -> Step:
    """A completion (or, with ``code``, an error) ``size`` bytes long, written in 64 KB blocks (never held whole)."""
    return Step("huge", size=size, flag=content_length, status=code)


def bomb(size: int) -> Step:
    """A 200 reply with ``content-encoding: gzip`` inflating to ``size`` bytes, compressed as it is sent."""
    return Step("bomb", size=size)


def drip(seconds: float, headers: bool = False) -> Step:
    """The normal answer sent one byte every ``seconds`` (its headers too with ``headers=True``)."""
    return Step("drip", seconds=seconds, flag=headers)


def reply(data: bytes, encoding: str = "") -> Step:
    """A 200 reply whose body is ``data`` exactly (sent with ``content-encoding: encoding`` when given)."""
    return Step("reply", text=data.decode("latin-1"), message=encoding)


def nested(depth: int) -> Step:
    """A 200 reply whose body is ``depth`` arrays inside each other."""
    return reply(b"[" * depth + b"]" * depth)


def echo(code: int, template: str) -> Step:
    """``template`` with ``{auth}`` = the credential header the request carried (content or error message)."""
    return Step("echo", status=code, text=template)


def length() -> Step:
    return Step("content", text='{"label": ', finish_reason="length")


def _completion(text: Any, finish: str, model: Any) -> dict[str, Any]:
    return {"id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": model,
            "system_fingerprint": "fp_fake",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13}}


def _task(system: str) -> str:
    if "atomic statements" in system:
        return "statements"
    if "reference answer" in system:
        return "correctness"
    if "statement against a context" in system:
        return "support"
    if "answer addresses" in system:
        return "answer_relevance"
    return "context_relevance"


def default_answer(body: dict[str, Any]) -> dict[str, Any]:
    messages = body.get("messages") or []
    system = next((m["content"] for m in messages if m.get("role") == "system"), "")
    user = next((m["content"] for m in messages if m.get("role") == "user"), "")
    task = _task(system)
    marker = re.search(r"label=(\S+)", user)
    if marker:
        return {"label": json.loads(marker.group(1))}
    if "seedlabel" in user:
        return {"label": int(body.get("seed", 0)) % 3}
    if task == "statements":
        block = re.search(r"<answer>\n(.*)\n</answer>", user, re.S)  # the prompt's data block, unescaped
        answer = html.unescape(block.group(1)) if block else user
        return {"statements": [s.strip() for s in re.split(r"(?<=[.!?])\s+", answer) if s.strip()]}
    if task in ("support", "correctness"):
        return {"label": "supported"}
    return {"label": 2}


class FakeOpenAI:
    def __init__(self, *, latency: float = 0.0, llama_cpp: bool = False,
                 reject_formats: set[str] | None = None, record: bool = True) -> None:
        self.latency = latency
        self.llama_cpp = llama_cpp
        self.reject_formats = set(reject_formats or ())
        self.record = record
        self.always: Step | None = None
        self.requests: list[dict[str, Any]] = []
        self.count = 0
        self.active = 0
        self.peak = 0
        self._scripts: dict[str, deque[Step]] = defaultdict(deque)
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    # -- scripting ---------------------------------------------------------------------------------
    def script(self, marker: str, *steps: Step) -> None:
        with self._lock:
            self._scripts[marker].extend(steps)

    def _next_step(self, body: dict[str, Any]) -> Step | None:
        if self.always is not None:
            return self.always
        users = [m.get("content", "") for m in body.get("messages") or [] if m.get("role") == "user"]
        first = users[0] if users else ""
        with self._lock:
            for marker, steps in self._scripts.items():
                if marker in first and steps:
                    return steps.popleft()
        return None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def bodies(self) -> list[dict[str, Any]]:
        with self._lock:
            return [r["body"] for r in self.requests]

    # -- answering ---------------------------------------------------------------------------------
    def respond(self, path: str, body: dict[str, Any], auth: str) -> tuple[int, Any, dict[str, str]] | Step:
        """(status, JSON payload, headers) for one request, or the hostile step the server must send itself."""
        if self.latency:
            time.sleep(self.latency)
        if not path.endswith("/chat/completions"):
            return 404, {"error": {"message": f"no route {path}"}}, {}
        if self.llama_cpp and body.get("n", 1) != 1:
            return 400, {"error": {"code": 400, "type": "invalid_request_error",
                                   "message": "Only one completion choice is allowed"}}, {}
        kind = (body.get("response_format") or {}).get("type")
        if kind in self.reject_formats:
            return 400, {"error": {"type": "invalid_request_error",
                                   "message": f"response_format type {kind!r} is not supported"}}, {}
        step = self._next_step(body)
        text, finish = json.dumps(default_answer(body)), "stop"
        if step is not None and step.kind in ("huge", "bomb", "drip", "reply"):
            return step
        if step is not None and step.kind == "echo":
            note = step.text.format(auth=auth)
            if step.status != 200:
                return step.status, {"error": {"message": note}}, {}
            answer = {**default_answer(body), "note": note}
            if "statements" in answer:
                answer["statements"] = [*answer["statements"], note]
            step = content(json.dumps(answer))
        if step is not None:
            if step.kind == "status":
                return step.status, {"error": {"message": step.message}}, step.headers
            if step.kind == "delay":
                time.sleep(step.seconds)
            if step.kind == "content":
                text, finish = step.text, step.finish_reason
            if step.kind == "parts":
                text = [{"type": "text", "text": step.text}]  # type: ignore[assignment]
        return 200, _completion(text, finish, body.get("model")), {}

    def _arrive(self, body: dict[str, Any], headers: dict[str, str]) -> None:
        with self._lock:
            self.count += 1
            self.active += 1
            self.peak = max(self.peak, self.active)
            if self.record:
                self.requests.append({"body": body, "headers": headers, "at": time.monotonic()})

    def _leave(self) -> None:
        with self._lock:
            self.active -= 1

    # -- serving -----------------------------------------------------------------------------------
    judge_url = "http://fake-openai.test/v1"  # where a judge with transport() points (nothing listens)

    def transport(self) -> Any:
        """An httpx.MockTransport answering as the server would (no socket; hostile steps refused)."""
        import httpx

        def handle(request: httpx.Request) -> httpx.Response:
            if request.method == "GET":
                return httpx.Response(200, json={"object": "list", "data": [{"id": "fake-model", "object": "model"}]})
            body = json.loads(request.content or b"{}")
            self._arrive(body, dict(request.headers))
            try:
                out = self.respond(request.url.path, body,
                                   request.headers.get("authorization") or request.headers.get("api-key") or "")
            finally:
                self._leave()
            if isinstance(out, Step):
                raise AssertionError(f"the {out.kind!r} step needs the real server (FakeOpenAI().start())")
            code, payload, headers = out
            return httpx.Response(code, json=payload, headers=headers)

        return httpx.MockTransport(handle)

    def start(self) -> FakeOpenAI:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out as separate writes

            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, code: int, payload: Any, headers: dict[str, str] | None = None) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(code)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for k, v in (headers or {}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def do_GET(self) -> None:
                self._send(200, {"object": "list", "data": [{"id": "fake-model", "object": "model"}]})

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                body = json.loads(raw or b"{}")
                fake._arrive(body, dict(self.headers))
                try:
                    self._answer(body)
                finally:
                    fake._leave()

            def _answer(self, body: dict[str, Any]) -> None:
                auth = self.headers.get("authorization") or self.headers.get("api-key") or ""
                out = fake.respond(self.path, body, auth)
                if isinstance(out, Step):
                    return self._hostile(out, json.dumps(default_answer(body)))
                return self._send(*out)

            def _hostile(self, step: Step, text: str) -> None:
                self.close_connection = True
                try:
                    if step.kind == "reply":
                        data = step.text.encode("latin-1")
                        coding = {"content-encoding": step.message} if step.message else {}
                        return self._raw(200, {"content-length": str(len(data)), **coding}, data)
                    if step.kind == "drip":
                        data = json.dumps(_completion(text, "stop", "fake-model")).encode()
                        head = (f"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                                f"content-length: {len(data)}\r\n\r\n").encode()
                        if not step.flag:
                            self.wfile.write(head)
                        for byte in (head + data if step.flag else data):
                            time.sleep(step.seconds)
                            self.wfile.write(bytes([byte]))
                        return None
                    opening = b'{"choices": [{"index": 0, "finish_reason": "stop", "message": {"content": "'
                    closing = b'"}}]}'
                    block = b"x" * 65536
                    if step.kind == "huge":
                        self._raw(step.status, {"content-length": str(step.size)} if step.flag else {}, opening)
                        left = step.size - len(opening) - len(closing)
                        while left > 0:
                            self.wfile.write(block[:left])
                            left -= len(block)
                        self.wfile.write(closing)
                        return None
                    # bomb: gzip of the completion, made block by block as the client reads it
                    z = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
                    self._raw(200, {"content-encoding": "gzip"}, z.compress(opening))
                    block = b" " * (1 << 20)
                    for _ in range(step.size >> 20):
                        self.wfile.write(z.compress(block))
                    self.wfile.write(z.compress(closing) + z.flush())
                except (BrokenPipeError, ConnectionResetError):
                    pass
                return None

            def _raw(self, code: int, headers: dict[str, str], first: bytes) -> None:
                self.send_response(code)
                self.send_header("content-type", "application/json")
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(first)

        self._server = _Server(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True,
                         name="fake-openai").start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


if __name__ == "__main__":  # python -m tests.fake_openai [latency]: serve until Ctrl-C
    import sys

    server = FakeOpenAI(latency=float(sys.argv[1]) if len(sys.argv) > 1 else 0.0, record=False).start()
    print(server.url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()
