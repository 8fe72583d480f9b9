"""HTTP for the judge: a whole-request deadline, and reply bodies read in bounded pieces.

:func:`client` builds the httpx client the OpenAI-compatible judge uses. Its network layer gives
every socket read, write and connect only what is left of the current thread's deadline (set with
:func:`deadline` around one request), so the deadline holds whatever the server does: a reply
dripped a byte at a time, headers that never end, a stalled body. httpx's own timeouts bound one
wait; this bounds the request.

:func:`read_body` reads a streamed reply's body, decompressing gzip or deflate here, piece by piece,
and stops once more than ``cap`` bytes have come out: a gzip bomb costs at most the cap plus one
piece, not what it would inflate to.
"""

from __future__ import annotations

import threading
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["ACCEPT_ENCODING", "DEFAULT_MAX_REPLY_BYTES", "MAX_MAX_REPLY_BYTES", "BadReply", "ReplyTooLarge",
           "client", "deadline", "read_body"]

DEFAULT_MAX_REPLY_BYTES = 1_000_000  # a chat completion is a few KB
MAX_MAX_REPLY_BYTES = 1 << 30  # the most --max-reply-bytes may allow
ACCEPT_ENCODING = "gzip, deflate"  # what read_body decodes (httpx would also offer br/zstd when installed)
_PIECE = 64 * 1024  # the most one decompression step may produce
_MAX_CODINGS = 4  # content-encoding layers accepted ("gzip, gzip" is legal, forty of them is not)

_local = threading.local()


class ReplyTooLarge(Exception):
    """The body, decompressed, is larger than the cap."""


class BadReply(Exception):
    """The body cannot be decoded (an encoding not asked for, corrupt gzip)."""


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Within the block, this thread's requests through :func:`client` end by ``seconds`` from now."""
    _local.at = time.monotonic() + seconds
    try:
        yield
    finally:
        _local.at = None


def _left(timeout: float | None, error: type[Exception]) -> float | None:
    at = getattr(_local, "at", None)
    if at is None:
        return timeout
    left = at - time.monotonic()
    if left <= 0:
        raise error("the request's deadline passed")
    return left if timeout is None else min(timeout, left)


def _backend(inner: Any) -> Any:
    """``inner`` (an httpcore network backend) with the deadline applied to every operation."""
    import httpcore

    class Stream(httpcore.NetworkStream):
        def __init__(self, stream: Any) -> None:
            self._stream = stream

        def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
            return self._stream.read(max_bytes, _left(timeout, httpcore.ReadTimeout))

        def write(self, buffer: bytes, timeout: float | None = None) -> None:
            self._stream.write(buffer, _left(timeout, httpcore.WriteTimeout))

        def close(self) -> None:
            self._stream.close()

        def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                      timeout: float | None = None) -> Any:
            return Stream(self._stream.start_tls(ssl_context, server_hostname,
                                                 _left(timeout, httpcore.ConnectTimeout)))

        def get_extra_info(self, info: str) -> Any:
            return self._stream.get_extra_info(info)

    class Backend(httpcore.NetworkBackend):
        def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                        socket_options: Any = None) -> Any:
            return Stream(inner.connect_tcp(host, port, _left(timeout, httpcore.ConnectTimeout), local_address,
                                            socket_options))

        def connect_unix_socket(self, path: str, timeout: float | None = None, socket_options: Any = None) -> Any:
            return Stream(inner.connect_unix_socket(path, _left(timeout, httpcore.ConnectTimeout), socket_options))

        def sleep(self, seconds: float) -> None:
            inner.sleep(seconds)

    return Backend()


def client(timeout_s: float, connections: int, transport: Any = None) -> Any:
    """An httpx client whose requests keep to :func:`deadline` (proxies from the environment included).

    ``transport`` (an ``httpx.BaseTransport``) replaces httpx's own, as ``httpx.Client(transport=…)``
    does: then no proxy is read from the environment and ``connections`` is the transport's business.
    An ``httpx.HTTPTransport`` still gets the deadline under its connection pool; a transport without
    sockets (``httpx.MockTransport``) cannot be interrupted, so its reply counts as a timeout when it
    arrives after the deadline (:func:`read_body` checks).
    """
    import httpx

    # follow_redirects=False (httpx's default, said here because the key depends on it): a redirect is
    # the judge's to refuse (openai.py, "Redirects"), never a request with the key to another server
    http = httpx.Client(timeout=httpx.Timeout(timeout_s), transport=transport, follow_redirects=False,
                        limits=httpx.Limits(max_connections=connections, max_keepalive_connections=connections))
    # httpx has no hook for the network layer: put the deadline under each transport's connection pool
    # (the default one and any proxy mounted from the environment). tests/test_judge_limits.py checks
    # that it took, against a server that drips its reply.
    for transport in [http._transport, *getattr(http, "_mounts", {}).values()]:
        pool = getattr(transport, "_pool", None)
        if pool is not None and hasattr(pool, "_network_backend"):
            pool._network_backend = _backend(pool._network_backend)
    return http


class _Inflate:
    """One gzip or deflate layer, producing at most ``_PIECE`` bytes per step."""

    def __init__(self, coding: str) -> None:
        self._gzip = coding in ("gzip", "x-gzip")
        self._z = zlib.decompressobj(16 + zlib.MAX_WBITS if self._gzip else zlib.MAX_WBITS)
        self._started = False

    def feed(self, data: bytes) -> Iterator[bytes]:
        if not data or self._z.eof:
            return
        try:
            piece = self._z.decompress(data, _PIECE)
        except zlib.error:
            if self._gzip or self._started:
                raise BadReply(f"the reply's {'gzip' if self._gzip else 'deflate'} body is corrupt") from None
            self._z = zlib.decompressobj(-zlib.MAX_WBITS)  # "deflate" sent without its zlib header
            piece = self._z.decompress(data, _PIECE)
        self._started = True
        while True:
            if piece:
                yield piece
            if not self._z.unconsumed_tail or self._z.eof:
                return
            try:
                piece = self._z.decompress(self._z.unconsumed_tail, _PIECE)
            except zlib.error:
                raise BadReply("the reply's compressed body is corrupt") from None

    def end(self) -> Iterator[bytes]:
        while not self._z.eof:
            try:
                piece = self._z.decompress(b"", _PIECE)
            except zlib.error:
                raise BadReply("the reply's compressed body is corrupt") from None
            if not piece:
                return
            yield piece


def _layers(header: str | None) -> list[_Inflate]:
    codings = [c.strip().lower() for c in (header or "").split(",") if c.strip()]
    codings = [c for c in codings if c != "identity"]
    if len(codings) > _MAX_CODINGS:
        raise BadReply(f"the reply is encoded {len(codings)} times over (content-encoding)")
    unknown = [c for c in codings if c not in ("gzip", "x-gzip", "deflate")]
    if unknown:
        raise BadReply(f"the reply is encoded as {unknown[0]!r}, which was not asked for (asked: {ACCEPT_ENCODING})")
    return [_Inflate(c) for c in reversed(codings)]  # the last coding applied is undone first


def _through(layers: list[_Inflate], data: bytes, end: bool = False) -> Iterator[bytes]:
    if not layers:
        if data:
            yield data
        return
    first, rest = layers[0], layers[1:]
    for piece in first.feed(data):
        yield from _through(rest, piece)
    if end:
        for piece in first.end():
            yield from _through(rest, piece)
        yield from _through(rest, b"", end=True)


def read_body(response: Any, cap: int) -> bytes:
    """The body of a streamed httpx response, decompressed; :class:`ReplyTooLarge` past ``cap`` bytes.

    Past the :func:`deadline` (a reply that arrived late, from a transport that has no sockets to cut),
    and after each piece, this raises ``httpx.ReadTimeout`` as a socket read would.
    """
    _left(None, _deadline_error())
    layers = _layers(response.headers.get("content-encoding"))
    length = response.headers.get("content-length")
    if not layers and length is not None and length.strip().isdigit() and int(length) > cap:
        raise ReplyTooLarge(int(length))
    body = bytearray()
    # A response a handler built with content= (httpx.MockTransport) was read when it was made; its
    # stream still gives the raw bytes, which go through the same decoder and cap.
    for chunk in (response.stream if getattr(response, "is_stream_consumed", False) else response.iter_raw()):
        for piece in _through(layers, chunk):
            body += piece
            if len(body) > cap:
                raise ReplyTooLarge(len(body))
        _left(None, _deadline_error())
    for piece in _through(layers, b"", end=True):
        body += piece
        if len(body) > cap:
            raise ReplyTooLarge(len(body))
    return bytes(body)


def _deadline_error() -> type[Exception]:
    import httpx

    return httpx.ReadTimeout
