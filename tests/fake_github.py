"""A small fake of GitHub's REST API for issue comments, served on 127.0.0.1 from a thread.

It implements what the sticky-comment upsert uses: ``GET /user``, listing an issue's comments with
``per_page``/``page`` and RFC 8288 ``Link`` headers, creating and updating a comment. Switches
simulate a read-only token (403 on writes, as on a fork's pull request) and an app installation
token (403 on ``GET /user``); hostile ones echo the request's Authorization header in every error
message (``echo``, as some proxies do), pad each comment list reply with ``pad`` bytes of JSON
whitespace (an oversized list), or send every reply one byte each ``drip`` seconds (from its status
line, or with ``drip_body`` only its body). ``moved`` answers the requests under a path prefix with a
redirect, as GitHub does for a renamed or transferred repository (``{"/repos/acme/old/": ({"GET": 301,
"POST": 307}, "/repos/acme/search/")}``: the status by method, or one for all, and where the rest of
the path goes, on this server or another). ``auth`` holds each request's Authorization header.
"""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

LOGINS = {"bot-token": "github-actions[bot]", "pat-token": "octo-user", "other-token": "someone-else"}


class FakeGitHub:
    def __init__(self) -> None:
        self.comments: list[dict] = []
        self.requests: list[tuple[str, str]] = []
        self.read_only = False
        self.user_refused = False
        self.truncate = False  # answer with fewer bytes than Content-Length says, then close
        self.echo = False  # error messages carry the Authorization header the request came with
        self.pad = 0  # bytes of whitespace after each comment list
        self.drip = 0.0  # seconds between the bytes of every reply
        self.drip_body = False  # drip only the body (the status line and headers come at once)
        self.moved: dict[str, tuple[int | dict[str, int], str]] = {}  # path prefix -> (status, new prefix)
        self.auth: list[str | None] = []  # the Authorization header of each request, in order
        self._next_id = 1000
        self._lock = threading.Lock()
        handler = _handler(self)
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()

    def add(self, body: str, login: str, user_type: str = "User") -> dict:
        with self._lock:
            self._next_id += 1
            c = {"id": self._next_id, "body": body, "user": {"login": login, "type": user_type},
                 "html_url": f"https://github.example/c/{self._next_id}"}
            self.comments.append(c)
            return c

    def env(self, tmp_path, token: str = "bot-token", number: int = 7) -> dict[str, str]:
        event = tmp_path / "event.json"
        event.write_text(json.dumps({"pull_request": {"number": number}}), encoding="utf-8")
        return {"GITHUB_API_URL": self.url, "GITHUB_REPOSITORY": "acme/search", "GITHUB_EVENT_PATH": str(event),
                "GITHUB_TOKEN": token, "GITHUB_ACTIONS": "true"}

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _handler(gh: FakeGitHub):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # keep pytest output clean
            pass

        def _send(self, status: int, data, headers: dict | None = None, pad: int = 0) -> None:
            if gh.echo and status >= 400:
                data = {**data, "message": f"{data['message']} (Authorization: {self.headers.get('Authorization')})"}
            raw = json.dumps(data).encode("utf-8") + b" " * pad
            if gh.drip:
                return self._drip(status, raw, headers or {})
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw) + (1000 if gh.truncate else 0)))
            if gh.truncate:
                self.close_connection = True
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(raw)

        def _drip(self, status: int, raw: bytes, headers: dict) -> None:
            lines = [f"HTTP/1.0 {status} Whatever", "Content-Type: application/json", f"Content-Length: {len(raw)}",
                     *(f"{k}: {v}" for k, v in headers.items())]
            head = ("\r\n".join(lines) + "\r\n\r\n").encode()
            try:
                if gh.drip_body:
                    self.wfile.write(head)
                for byte in (raw if gh.drip_body else head + raw):
                    time.sleep(gh.drip)
                    self.wfile.write(bytes([byte]))
            except (BrokenPipeError, ConnectionResetError):
                pass

        def _moved(self, method: str) -> bool:
            """Answer with a redirect when the path is under a moved prefix (the request body read first)."""
            gh.auth.append(self.headers.get("Authorization"))
            for prefix, (status, where) in gh.moved.items():
                code = status.get(method) if isinstance(status, dict) else status
                if code is not None and self.path.startswith(prefix):
                    self.rfile.read(int(self.headers.get("Content-Length") or 0))
                    self.send_response(code)
                    self.send_header("Location", where + self.path[len(prefix):])
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return True
            return False

        def _login(self):
            auth = self.headers.get("Authorization", "")
            return LOGINS.get(auth.removeprefix("Bearer ").strip())

        def _body(self):
            n = int(self.headers.get("Content-Length") or 0)
            return json.loads(self.rfile.read(n).decode("utf-8"))

        def do_GET(self):
            gh.requests.append(("GET", self.path))
            if self._moved("GET"):
                return None
            login = self._login()
            if login is None:
                return self._send(401, {"message": "Bad credentials"})
            parts = urlsplit(self.path)
            if parts.path == "/user":
                if gh.user_refused:
                    return self._send(403, {"message": "Resource not accessible by integration"})
                return self._send(200, {"login": login, "type": "Bot" if login.endswith("[bot]") else "User"})
            if re.fullmatch(r"/repos/acme/search/issues/\d+/comments", parts.path):
                q = parse_qs(parts.query)
                per = min(int(q.get("per_page", ["30"])[0]), 100)
                page = int(q.get("page", ["1"])[0])
                chunk = gh.comments[(page - 1) * per: page * per]
                headers = {}
                if page * per < len(gh.comments):
                    headers["Link"] = (f'<{gh.url}{parts.path}?per_page={per}&page={page + 1}>; rel="next", '
                                       f'<{gh.url}{parts.path}?per_page={per}&page=1>; rel="first"')
                try:
                    return self._send(200, chunk, headers, pad=gh.pad)
                except (BrokenPipeError, ConnectionResetError):  # the client stopped reading: as it should
                    return None
            return self._send(404, {"message": "Not Found"})

        def do_POST(self):
            gh.requests.append(("POST", self.path))
            if self._moved("POST"):
                return None
            if self._login() is None:
                return self._send(401, {"message": "Bad credentials"})
            if gh.read_only:
                return self._send(403, {"message": "Resource not accessible by integration"})
            body = self._body()["body"]
            if len(body) > 65536:
                return self._send(422, {"message": "body is too long (maximum is 65536 characters)"})
            login = self._login()
            c = gh.add(body, login, "Bot" if login.endswith("[bot]") else "User")
            return self._send(201, c)

        def do_PATCH(self):
            gh.requests.append(("PATCH", self.path))
            if self._moved("PATCH"):
                return None
            if self._login() is None:
                return self._send(401, {"message": "Bad credentials"})
            if gh.read_only:
                return self._send(403, {"message": "Resource not accessible by integration"})
            m = re.fullmatch(r"/repos/acme/search/issues/comments/(\d+)", self.path)
            c = next((c for c in gh.comments if m and c["id"] == int(m.group(1))), None)
            if c is None:
                return self._send(404, {"message": "Not Found"})
            body = self._body()["body"]
            if len(body) > 65536:
                return self._send(422, {"message": "body is too long (maximum is 65536 characters)"})
            c["body"] = body
            return self._send(200, c)

    return Handler
