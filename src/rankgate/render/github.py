"""Post the PR comment as one sticky comment through GitHub's REST API (standard library only).

:func:`upsert_comment` finds the comment this tool posted before (its body starts with
:data:`~rankgate.render.comment.MARKER`, after any leading whitespace, and, when the token may read
``GET /user``, its author is the token's own login) and updates it, or creates one. It never raises
for a network or API failure: it returns a :class:`Posted` whose ``level`` is ``notice`` (expected,
e.g. a read-only token on a fork's pull request) or ``warning``, and whose ``message`` says why, so
a CI step stays green and the job summary still shows the comment.

Where things come from (as GitHub Actions sets them): the token from ``GITHUB_TOKEN`` (or
``GH_TOKEN``), the API from ``GITHUB_API_URL`` (default ``https://api.github.com``), the repository
from ``GITHUB_REPOSITORY``, the pull request number from the event payload at ``GITHUB_EVENT_PATH``
(``pull_request.number``, or ``issue.number`` when the issue is a pull request).

Bounded and secret-safe: each reply body is read up to ``max_reply_bytes`` (default 1 MB,
``gate --max-reply-bytes``), and each request, from connecting to the reply's last byte, has
:data:`TIMEOUT` seconds in all (a watchdog shuts the connection when they are up, so a server
dripping its headers or body cannot hold the step); a reply over either limit, or a comment list
longer than :data:`MAX_PAGES` pages, ends the attempt with a warning and nothing posted (a comment that could not be looked for is never
posted again beside itself). The token and a password in ``GITHUB_API_URL`` are registered with
:mod:`rankgate._util.redact` and every message passes :func:`~rankgate._util.redact.redact`.

The token goes to ``GITHUB_API_URL``'s origin (scheme, host and port) only. A ``Link`` to another
origin is not followed, and neither is a redirect to one: urllib's own redirect handling, which would
resend the ``Authorization`` header to wherever a reply points, is replaced by :meth:`_Client.follow`.
On the same origin it follows what GitHub's REST API documents (a renamed or transferred repository
answers 301 or 302 for a GET and 307 for other requests, each to be repeated at the new address): a
GET follows 301, 302 and 307, a POST or PATCH only 307 (resent with its body, where urllib would
turn a POST into a GET and drop the comment). Any other redirect, more than :data:`MAX_REDIRECTS` of
them, or one to another origin ends the attempt with a warning naming both origins; the whole chain
keeps to the one request's :data:`TIMEOUT`.

Run it on a file: ``python -m rankgate.render.github pr-comment.md``.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import socket
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rankgate._util.redact import origin, redact, register, register_url
from rankgate.render.comment import MARKER
from rankgate.render.numbers import fmt_sig

__all__ = ["MAX_CHARS", "MAX_REPLY_BYTES", "Posted", "fit_body", "pull_request_from_env", "upsert_comment"]

MAX_CHARS = 65_536  # GitHub refuses a comment body longer than this many characters
CUT_NOTE = "\n\n… comment cut to fit GitHub's limit of 65,536 characters; the job summary and the JSON outcome have it all.\n"
PER_PAGE = 100
MAX_PAGES = 100  # 10,000 comments: enough for any pull request, and a bound on a broken Link chain
TIMEOUT = 30.0  # seconds one request may take in all, from connecting to the reply's last byte
MAX_REPLY_BYTES = 1_000_000  # a page of 100 comments is a few hundred KB; GitHub does not compress for urllib
MAX_REDIRECTS = 3  # same-origin redirects one request follows (a renamed or transferred repository takes one)
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_READ = 64 * 1024


@dataclass(frozen=True)
class Posted:
    """What happened: ``action`` is created | updated | skipped | failed; ``level`` is how a CI log
    should show ``message`` (``notice`` or ``warning``; empty when all went well)."""

    action: str
    message: str
    level: str = ""
    comment_id: int | None = None
    url: str | None = None


class _ApiError(Exception):
    def __init__(self, status: int | None, message: str) -> None:
        super().__init__(message)
        self.status = status


class _Redirect(Exception):
    """A 3xx reply, for :meth:`_Client.follow` to follow or refuse."""

    def __init__(self, status: int, location: str | None) -> None:
        super().__init__(status)
        self.status, self.location = status, location


def fit_body(body: str, limit: int = MAX_CHARS) -> str:
    """``body`` cut (with a note) so that GitHub accepts it: at most ``limit`` characters."""
    if len(body) <= limit:
        return body
    return body[: limit - len(CUT_NOTE)] + CUT_NOTE


def _starts_with_marker(body: Any) -> bool:
    return isinstance(body, str) and body.lstrip("\ufeff \t\r\n").startswith(MARKER)


def pull_request_from_env(env: Mapping[str, str] | None = None) -> tuple[str | None, int | None]:
    """``(owner/repo, pull request number)`` from a GitHub Actions environment (``None`` when absent)."""
    env = os.environ if env is None else env
    repo = env.get("GITHUB_REPOSITORY") or None
    number = None
    path = env.get("GITHUB_EVENT_PATH")
    if path:
        try:
            with open(path, encoding="utf-8") as fh:
                event = json.load(fh)
        except (OSError, ValueError):
            event = None
        if isinstance(event, dict):
            pr = event.get("pull_request")
            issue = event.get("issue")
            if isinstance(pr, dict) and isinstance(pr.get("number"), int):
                number = pr["number"]
            elif isinstance(issue, dict) and isinstance(issue.get("pull_request"), dict) and isinstance(issue.get("number"), int):
                number = issue["number"]
    return repo, number


def _read_body(resp: Any, cap: int, what: str) -> bytes:
    """At most ``cap`` bytes of a reply (no encoding is asked for, so none is undone)."""
    body = bytearray()
    while True:
        chunk = resp.read1(_READ) if hasattr(resp, "read1") else resp.read(_READ)
        if not chunk:
            if getattr(resp, "length", None):  # closed before Content-Length said (read1 does not raise it)
                raise http.client.IncompleteRead(bytes(body), resp.length)
            return bytes(body)
        body += chunk
        if len(body) > cap:
            raise _ApiError(None, f"{what}: reply larger than {cap:,} bytes (raise --max-reply-bytes if this is "
                                  "a real comment list)")


class _Watchdog:
    """Shuts down the sockets a request opened once its time is up: a blocked read then ends at once."""

    def __init__(self) -> None:
        self.sockets: list[socket.socket] = []
        self.fired = False
        self._lock = threading.Lock()

    def opened(self, sock: socket.socket) -> None:
        with self._lock:
            self.sockets.append(sock)
            if self.fired:
                self._shut(sock)

    def fire(self) -> None:
        with self._lock:
            self.fired = True
            for sock in self.sockets:
                self._shut(sock)

    @staticmethod
    def _shut(sock: socket.socket) -> None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def opener(self) -> urllib.request.OpenerDirector:
        """urllib's usual opener (proxies from the environment included) whose connections report here,
        and which follows no redirect: a 3xx comes back as an HTTPError (:meth:`_Client.follow` decides)."""
        dog = self

        class HTTPConnection(http.client.HTTPConnection):
            def connect(self) -> None:
                super().connect()
                dog.opened(self.sock)

        class HTTPSConnection(http.client.HTTPSConnection):
            def connect(self) -> None:
                super().connect()
                dog.opened(self.sock)

        class HTTPHandler(urllib.request.HTTPHandler):
            def http_open(self, req: Any) -> Any:
                return self.do_open(HTTPConnection, req)

        class HTTPSHandler(urllib.request.HTTPSHandler):
            def https_open(self, req: Any) -> Any:
                return self.do_open(HTTPSConnection, req, context=getattr(self, "_context", None))

        class NoRedirects(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *args: Any, **kwargs: Any) -> None:
                return None

        return urllib.request.build_opener(HTTPHandler, HTTPSHandler, NoRedirects)


class _Client:
    def __init__(self, api: str, token: str, max_reply_bytes: int = MAX_REPLY_BYTES) -> None:
        self.api = api.rstrip("/")
        self.origin = origin(self.api)
        self.token = token
        self.max_reply_bytes = max_reply_bytes

    def request(self, method: str, url: str, data: Any = None) -> tuple[Any, Mapping[str, str]]:
        if not url.startswith(("http://", "https://")):
            url = self.api + url
        if origin(url) != self.origin:  # never send the token to another host
            raise _ApiError(None, f"the API returned a link to another host ({url}); not followed")
        body = None if data is None else json.dumps(data).encode("utf-8")
        headers = {
            "Accept": "application/vnd.github+json",
            "Authorization": f"Bearer {self.token}",
            "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": "rankgate",
            **({"Content-Type": "application/json"} if body is not None else {}),
        }
        what = f"{method} {urllib.parse.urlsplit(url).path}"
        dog = _Watchdog()
        timer = threading.Timer(TIMEOUT, dog.fire)
        timer.daemon = True
        timer.start()
        try:
            result = self.follow(method, url, body, headers, what, dog)
        except _ApiError:
            if not dog.fired:
                raise
            result = None
        finally:
            timer.cancel()
        if dog.fired or result is None:  # whatever the cut-off connection looked like, the time ran out
            raise _ApiError(None, f"{what}: no whole reply within {fmt_sig(TIMEOUT)} s")
        return result

    def follow(self, method: str, url: str, body: bytes | None, headers: Mapping[str, str], what: str,
               dog: _Watchdog) -> tuple[Any, Mapping[str, str]]:
        """The reply to ``method url``, following the same-origin redirects GitHub documents (module docstring)."""
        for _ in range(MAX_REDIRECTS + 1):
            try:
                return self._send(urllib.request.Request(url, data=body, method=method, headers=dict(headers)), what, dog)
            except _Redirect as hop:
                url = self._redirected(hop, url, method, what)
        raise _ApiError(None, f"{what}: more than {MAX_REDIRECTS} redirects; not followed further")

    @staticmethod
    def _redirected(hop: _Redirect, url: str, method: str, what: str) -> str:
        """Where ``hop`` leads, when it may be followed; else an _ApiError saying why not and what to do."""
        if not hop.location:
            raise _ApiError(None, f"{what}: HTTP {hop.status} redirect with no Location; nothing to follow")
        target = urllib.parse.urljoin(url, hop.location.strip())
        here, there = origin(url), origin(target)
        if there != here:
            raise _ApiError(None, f"{what}: the API redirected (HTTP {hop.status}) from {here} to {there}; not "
                                  f"followed, so the token goes to {here} only (if {there} is your GitHub API, "
                                  f"set GITHUB_API_URL to it)")
        if hop.status == 307 or (method == "GET" and hop.status in (301, 302)):
            return target
        raise _ApiError(None, f"{what}: HTTP {hop.status} redirect to {urllib.parse.urlsplit(target).path} not "
                              f"followed (GitHub's API redirects a GET with 301, 302 or 307 and other requests with "
                              f"307)")

    def _send(self, req: urllib.request.Request, what: str, dog: _Watchdog) -> tuple[Any, Mapping[str, str]]:
        try:
            with dog.opener().open(req, timeout=TIMEOUT) as resp:
                raw = _read_body(resp, self.max_reply_bytes, what)
                headers = dict(resp.headers.items())
        except urllib.error.HTTPError as exc:
            if exc.code in _REDIRECTS:
                location = exc.headers.get("Location") if exc.headers is not None else None
                exc.close()
                raise _Redirect(exc.code, location) from None
            detail = ""
            try:
                message = json.loads(_read_body(exc, self.max_reply_bytes, what).decode("utf-8", "replace"))
                detail = " ".join(str(message.get("message", "")).split())[:300]  # one line, whatever was sent
            except (ValueError, AttributeError, OSError, RecursionError, _ApiError, http.client.HTTPException):
                pass
            raise _ApiError(exc.code, f"HTTP {exc.code} from {what}" + (f": {detail}" if detail else "")) from None
        except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException) as exc:
            reason = getattr(exc, "reason", None) or f"{type(exc).__name__}: {exc}"
            raise _ApiError(None, f"cannot reach {self.api}: {reason}") from None
        try:
            return (json.loads(raw.decode("utf-8")) if raw else None), headers
        except (ValueError, UnicodeDecodeError, RecursionError):
            raise _ApiError(None, f"{what} did not return JSON") from None

    def login(self) -> str | None:
        """The token's own login, or None when the token may not ask (an app's installation token)."""
        try:
            user, _ = self.request("GET", "/user")
        except _ApiError as exc:
            if exc.status is None:
                raise
            return None
        return user.get("login") if isinstance(user, dict) and isinstance(user.get("login"), str) else None

    def comments(self, repo: str, number: int):
        url: str | None = f"/repos/{repo}/issues/{number}/comments?per_page={PER_PAGE}"
        for _ in range(MAX_PAGES):
            if url is None:
                return
            page, headers = self.request("GET", url)
            if not isinstance(page, list):
                raise _ApiError(None, "the comment list is not a JSON list")
            yield from (c for c in page if isinstance(c, dict))
            url = _next_link(headers)
        if url is not None:  # the rest was not seen: the comment may be there, so posting could duplicate it
            raise _ApiError(None, f"the pull request has more than {MAX_PAGES * PER_PAGE:,} comments; "
                                  "not looked through further")


def _next_link(headers: Mapping[str, str]) -> str | None:
    link = next((v for k, v in headers.items() if k.lower() == "link"), "")
    for part in link.split(","):
        m = re.match(r'\s*<([^>]*)>\s*;(.*)', part)
        if m and re.search(r'rel="?next"?', m.group(2)):
            return m.group(1)
    return None


def upsert_comment(body: str, *, repo: str | None = None, number: int | None = None, token: str | None = None,
                   api_url: str | None = None, env: Mapping[str, str] | None = None,
                   max_reply_bytes: int = MAX_REPLY_BYTES) -> Posted:
    """Create or update the sticky comment on a pull request; never raises for API or network errors.

    The returned message (and URL) are redacted: the token and ``GITHUB_API_URL``'s userinfo never show.
    """
    env = os.environ if env is None else env
    token = token or env.get("GITHUB_TOKEN") or env.get("GH_TOKEN")
    api = api_url or env.get("GITHUB_API_URL") or "https://api.github.com"
    register(token)
    register_url(api)
    posted = _upsert(body, repo, number, token, api, env, max_reply_bytes)
    return Posted(posted.action, redact(posted.message), posted.level, posted.comment_id,
                  None if posted.url is None else redact(posted.url))


def _upsert(body: str, repo: str | None, number: int | None, token: str | None, api: str,
            env: Mapping[str, str], max_reply_bytes: int) -> Posted:
    env_repo, env_number = pull_request_from_env(env)
    repo, number = repo or env_repo, number or env_number
    if not repo or number is None:
        return Posted("skipped", "not a pull request (no GITHUB_REPOSITORY or pull request number in the event): "
                      "comment not posted", "notice")
    if not re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", repo):
        return Posted("skipped", f"GITHUB_REPOSITORY {repo!r} is not owner/name: comment not posted", "warning")
    if not token:
        return Posted("skipped", "no token (set GITHUB_TOKEN): comment not posted", "warning")
    if not _starts_with_marker(body):  # a hand-written file: mark it, so the next run finds it
        body = f"{MARKER}\n{body}"
    body = fit_body(body)
    client = _Client(api, token, max_reply_bytes)
    try:
        login = client.login()
        mine = next((c for c in client.comments(repo, number)
                     if _starts_with_marker(c.get("body"))
                     and (login is None or (c.get("user") or {}).get("login") == login)
                     and isinstance(c.get("id"), int)), None)
        if mine is not None:
            data, _ = client.request("PATCH", f"/repos/{repo}/issues/comments/{mine['id']}", {"body": body})
            action = "updated"
        else:
            data, _ = client.request("POST", f"/repos/{repo}/issues/{number}/comments", {"body": body})
            action = "created"
    except Exception as exc:  # noqa: BLE001 - posting is a courtesy: whatever goes wrong, the verdict stands
        if not isinstance(exc, _ApiError):
            return Posted("failed", f"comment not posted: unexpected {type(exc).__name__}: {exc}. "
                          "The job summary has the comment.", "warning")
        if exc.status in (403, 404):
            why = ("the token may not write comments here (a pull request from a fork gets a read-only token; "
                   "give the job `issues: write` and `pull-requests: write`)")
            return Posted("failed", f"comment not posted: {exc}; {why}. The job summary has the comment.", "notice")
        return Posted("failed", f"comment not posted: {exc}. The job summary has the comment.", "warning")
    data = data if isinstance(data, dict) else {}
    cid = data.get("id") if isinstance(data.get("id"), int) else None
    url = data.get("html_url") if isinstance(data.get("html_url"), str) else None
    return Posted(action, f"PR comment {action}" + (f": {url}" if url else ""), "", cid, url)


def workflow_command(posted: Posted, env: Mapping[str, str] | None = None) -> str:
    """The line to print for ``posted``: a ``::notice::``/``::warning::`` command in GitHub Actions
    (``GITHUB_ACTIONS=true``), else ``rankgate: notice: …``; plain when all went well."""
    env = os.environ if env is None else env
    if not posted.level:
        return redact(f"rankgate: {posted.message}")
    if env.get("GITHUB_ACTIONS") == "true":
        message = redact(posted.message).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
        return f"::{posted.level}::{message}"
    return redact(f"rankgate: {posted.level}: {posted.message}")


if __name__ == "__main__":  # pragma: no cover
    import sys

    with open(sys.argv[1], encoding="utf-8") as fh:
        print(workflow_command(upsert_comment(fh.read())))
