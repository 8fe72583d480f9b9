"""No HTTP client of rankgate follows a redirect to another origin: the token and the key stay home.

Two servers on 127.0.0.1: the API (the fake GitHub, or the fake judge server), which answers some
requests with a redirect, and a witness on another port, which records every request that reaches
it. Whatever the status (301, 302, 303, 307, 308) and whichever request is redirected, the witness
must see nothing, and the attempt must end with one line naming both origins and what to do. On
the same origin the PR-comment client follows what GitHub's REST API documents (a renamed
repository: 301/302/307 for a GET, 307 for a POST or PATCH, resent with its body), at most
``MAX_REDIRECTS`` times; the judge follows nothing.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from rankgate.cli.main import main
from rankgate.judges import JudgeItem, open_judge
from rankgate._util.redact import origin, registered, restore
from rankgate.render.comment import MARKER
from rankgate.render.github import MAX_REDIRECTS, upsert_comment

from .fake_github import FakeGitHub
from .fake_openai import FakeOpenAI, status

KEY = "sk-rd-Wq7hN3cB8vK1xM6pJ2tY5"
REDIRECTS = (301, 302, 303, 307, 308)


class Witness:
    """The other server: records every request (method, path, headers) and answers 200 ``{}``.

    It stops by itself: it serves at most ``limit`` requests, for at most ``seconds``, one at a time
    (``handle_request`` with a short poll), and :meth:`close` ends it at once.
    """

    def __init__(self, limit: int = 100, seconds: float = 120.0) -> None:
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        witness = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _record(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                witness.requests.append((self.command, self.path, dict(self.headers)))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = do_HEAD = _record

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.server.timeout = 0.02
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, args=(limit, seconds), daemon=True, name="witness")
        self._thread.start()

    def _serve(self, limit: int, seconds: float) -> None:
        end = time.monotonic() + seconds
        try:
            while not self._stop.is_set() and len(self.requests) < limit and time.monotonic() < end:
                self.server.handle_request()
        finally:
            self.server.server_close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


@pytest.fixture
def witness():
    w = Witness()
    yield w
    w.close()


@pytest.fixture
def github():
    gh = FakeGitHub()
    yield gh
    gh.close()


@pytest.fixture(autouse=True)
def _forget_secrets():
    before = registered()
    yield
    restore(before)


def body(text: str = "all good") -> str:
    return f"{MARKER}\n## ✅ Retrieval gate passed\n\n{text}\n"


def port(url: str) -> int:
    return int(url.rsplit(":", 1)[1].split("/")[0])


# -- origins -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("a, b, same", [
    ("https://api.github.com", "https://API.GitHub.com:443/repos/x?y=1", True),
    ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/other#f", True),
    ("https://u:secret@ghe.corp/api/v3", "https://ghe.corp/api/v3", True),
    ("http://127.0.0.1:8000", "http://127.0.0.1:8001", False),
    ("http://127.0.0.1:8000", "http://localhost:8000", False),
    ("https://ghe.corp", "http://ghe.corp", False),
    ("http://ghe.corp", "http://ghe.corp:443", False),
    ("http://[::1]:80/", "http://[::1]/", True),
    ("http://ghe.corp", "http://ghe.corp:99999/", False),
])
def test_origin_is_scheme_host_and_port_and_never_shows_userinfo(a, b, same):
    assert (origin(a) == origin(b)) is same
    for url in (a, b):  # scheme://host[:port] and nothing else
        assert origin(url).count("/") == 2 and "@" not in origin(url) and "?" not in origin(url)


# -- the PR-comment client: another origin ---------------------------------------------------------
def moved_everywhere(github: FakeGitHub, kind: str, code: int, target: str) -> tuple[str, str]:
    """Redirect one kind of request to ``target``; (method, path) of the request that gets the redirect."""
    if kind == "user":
        github.moved = {"/user": (code, target + "/user")}
        return "GET", "/user"
    if kind == "list":
        github.moved = {"/repos/acme/search/issues/7/comments?": ({"GET": code}, target + "/list?")}
        return "GET", "/repos/acme/search/issues/7/comments?per_page=100"
    if kind == "create":
        github.moved = {"/repos/acme/search/": ({"POST": code}, target + "/")}
        return "POST", "/repos/acme/search/issues/7/comments"
    mine = github.add(body("old"), "github-actions[bot]", "Bot")
    github.moved = {"/repos/acme/search/issues/comments/": ({"PATCH": code}, target + "/x/")}
    return "PATCH", f"/repos/acme/search/issues/comments/{mine['id']}"


@pytest.mark.parametrize("code", REDIRECTS)
@pytest.mark.parametrize("kind", ["user", "list", "create", "update"])
def test_a_redirect_to_another_port_is_refused_and_the_token_never_reaches_it(github, witness, tmp_path, code, kind):
    redirected = moved_everywhere(github, kind, code, witness.url)
    before = [dict(c) for c in github.comments]
    posted = upsert_comment(body("new"), env=github.env(tmp_path))
    assert witness.requests == []
    assert posted.action == "failed" and posted.level == "warning"
    assert (f"the API redirected (HTTP {code}) from {origin(github.url)} to {origin(witness.url)}; not followed"
            in posted.message)
    assert "set GITHUB_API_URL" in posted.message and "\n" not in posted.message
    assert github.requests[-1] == redirected  # nothing was sent after the redirect, to any address
    assert github.comments == before


@pytest.mark.parametrize("target", ["https://127.0.0.1:{port}", "http://localhost:{port}"], ids=["scheme", "host"])
def test_a_redirect_to_another_scheme_or_host_name_is_refused_too(github, tmp_path, target):
    target = target.format(port=port(github.url))
    moved_everywhere(github, "user", 307, target)
    posted = upsert_comment(body(), env=github.env(tmp_path))
    assert posted.action == "failed" and f"from {origin(github.url)} to {origin(target)}" in posted.message
    assert github.requests == [("GET", "/user")]  # "localhost" is this very server: still not asked again


def test_a_token_in_the_location_is_not_shown(github, witness, tmp_path):
    token = "ghp_L0cAt10nT0k3nXyZ98765"
    github.moved = {"/user": (302, witness.url.replace("http://", f"http://x:{token}@") + f"/u?access_token={token}")}
    posted = upsert_comment(body(), env=github.env(tmp_path, token=token))
    assert posted.action == "failed" and f"to {origin(witness.url)};" in posted.message
    assert token[:6] not in posted.message and witness.requests == []


def test_the_gate_keeps_its_verdict_and_warns_when_the_api_redirects_away(github, witness, tmp_path, monkeypatch,
                                                                          capsys):
    from .test_github_comment import run_gate

    github.moved = {"/": (307, witness.url + "/")}
    code, out, step = run_gate(tmp_path, github.env(tmp_path), monkeypatch, capsys)
    assert code == 0 and witness.requests == []
    line = next(ln for ln in out.out.splitlines() if ln.startswith("::warning::"))
    assert f"from {origin(github.url)} to {origin(witness.url)}; not followed" in line
    assert step.read_text(encoding="utf-8").startswith(MARKER)


# -- the PR-comment client: the same origin -------------------------------------------------------
@pytest.mark.parametrize("get", [301, 302, 307])
def test_a_renamed_repository_is_followed_as_github_documents(github, tmp_path, get):
    github.moved = {"/repos/acme/old/": ({"GET": get, "POST": 307, "PATCH": 307}, "/repos/acme/search/")}
    env = {**github.env(tmp_path), "GITHUB_REPOSITORY": "acme/old"}
    first = upsert_comment(body("one"), env=env)
    assert first.action == "created" and github.comments[0]["body"] == body("one")  # resent with its body
    second = upsert_comment(body("two"), env=env)
    assert second.action == "updated" and [c["body"] for c in github.comments] == [body("two")]
    moved = [(m, p) for m, p in github.requests if p.startswith("/repos/acme/old/")]
    assert [m for m, _ in moved] == ["GET", "POST", "GET", "PATCH"]
    assert ("POST", "/repos/acme/search/issues/7/comments") in github.requests
    assert set(github.auth) == {"Bearer bot-token"}


@pytest.mark.parametrize("method, code", [("POST", 301), ("POST", 302), ("POST", 303), ("POST", 308),
                                          ("PATCH", 301), ("PATCH", 308), ("GET", 303), ("GET", 308)])
def test_a_same_origin_redirect_github_does_not_document_is_refused(github, tmp_path, method, code):
    if method == "PATCH":
        github.add(body("old"), "github-actions[bot]", "Bot")
    github.moved = {"/repos/acme/old/": ({"GET": 301, "POST": 307, "PATCH": 307, method: code}, "/repos/acme/search/")}
    before = [dict(c) for c in github.comments]
    posted = upsert_comment(body("new"), env={**github.env(tmp_path), "GITHUB_REPOSITORY": "acme/old"})
    assert posted.action == "failed" and f"{method} /repos/acme/old/" in posted.message
    assert f"HTTP {code} redirect to /repos/acme/search/" in posted.message and "not followed" in posted.message
    assert github.requests[-1][0] == method and github.requests[-1][1].startswith("/repos/acme/old/")
    assert github.comments == before  # not resent as a GET either (urllib's habit for a POST)


def test_redirects_are_capped(github, tmp_path):
    github.moved = {"/user": (302, "/user")}
    posted = upsert_comment(body(), env=github.env(tmp_path))
    assert posted.action == "failed" and f"GET /user: more than {MAX_REDIRECTS} redirects" in posted.message
    assert github.requests == [("GET", "/user")] * (MAX_REDIRECTS + 1)


def test_a_chain_of_the_most_redirects_allowed_is_followed(github, tmp_path):
    hops = [f"/repos/acme/r{i}/" for i in range(MAX_REDIRECTS)] + ["/repos/acme/search/"]
    github.moved = {a: ({"GET": 301, "POST": 307}, b) for a, b in zip(hops, hops[1:])}
    posted = upsert_comment(body(), env={**github.env(tmp_path), "GITHUB_REPOSITORY": "acme/r0"})
    assert posted.action == "created" and len(github.comments) == 1


# -- the judge ---------------------------------------------------------------------------------------
@pytest.fixture
def fake():
    server = FakeOpenAI().start()
    yield server
    server.stop()


def judge_once(fake: FakeOpenAI, monkeypatch) -> str | None:
    monkeypatch.setenv("RG_REDIRECT_KEY", KEY)
    with open_judge("openai", url=fake.url, model="m", key_env="RG_REDIRECT_KEY", use_cache=False, retries=3,
                    backoff_s=0.001) as judge:
        out = judge.run("context_relevance", [JudgeItem("q1\x1fc1", {"question": "q", "passage": "p"})])
    return out[0].error


@pytest.mark.parametrize("code", REDIRECTS)
def test_the_judge_refuses_a_redirect_to_another_origin_and_the_key_never_reaches_it(fake, witness, monkeypatch,
                                                                                     code):
    fake.always = status(code, "moved", {"location": witness.url + "/v1/chat/completions"})
    error = judge_once(fake, monkeypatch)
    assert witness.requests == [] and fake.count == 1  # not followed, and not retried
    assert error == (f"HTTP {code}: the server redirects from {origin(fake.url)} to {origin(witness.url)}; not "
                     f"followed, so no request and no key goes to {origin(witness.url)} (if it is your judge's "
                     f"server, give its URL as --judge-url)")


@pytest.mark.parametrize("location, shown", [
    ("/v1/chat/completions/", "redirects to /v1/chat/completions/ on {here}; not followed"),
    ("chat/completions?x=1", "redirects to /v1/chat/chat/completions on {here}; not followed"),
    ("https://127.0.0.1:{port}/v1/chat/completions", "redirects from {here} to https://127.0.0.1:{port}; not followed"),
    ("http://u:{key}@localhost:{port}/v1?key={key}", "redirects from {here} to http://localhost:{port}; not followed"),
    ("", "a redirect with no Location; not followed"),
])
def test_the_judge_follows_no_redirect_at_all(fake, monkeypatch, location, shown):
    fill = {"port": port(fake.url), "key": KEY, "here": origin(fake.url)}
    fake.always = status(308, "moved", {"location": location.format(**fill)} if location else {})
    error = judge_once(fake, monkeypatch)
    assert fake.count == 1 and error is not None and shown.format(**fill) in error
    assert KEY[:6] not in error


def test_judge_relevance_reports_a_redirect_away_as_each_items_error(fake, witness, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("RG_REDIRECT_KEY", KEY)
    fake.always = status(307, "moved", {"location": f"{witness.url}/v1/chat/completions?key={KEY}"})
    queue = tmp_path / "queue.jsonl"
    queue.write_text("".join(json.dumps({"query_id": "q1", "query": "refund", "id": f"c{i}", "text": f"passage {i}"})
                             + "\n" for i in range(3)))
    labels = tmp_path / "labels.jsonl"
    code = main(["judge", "relevance", str(queue), "-o", str(labels), "--judge", "openai", "--judge-url", fake.url,
                 "--judge-model", "m", "--judge-key-env", "RG_REDIRECT_KEY", "--no-cache", "--retries", "2"])
    err = capsys.readouterr().err
    assert code == 0 and witness.requests == [] and fake.count == 3
    rows = [json.loads(line) for line in labels.read_text().splitlines()]
    assert all(r["grade"] is None and f"to {origin(witness.url)}; not followed" in r["judge_error"] for r in rows)
    assert "judge failed on 3 items" in err and KEY[:6] not in err + labels.read_text()
