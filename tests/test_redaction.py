"""Secrets never leave the process: the redaction step, and every output of runs where servers echo them.

The CLI runs here talk to fake servers that echo the credentials they were sent (in error messages
and inside answers, as some gateways and proxies do, whole or as a prefix and suffix). Afterwards
stdout, stderr, every output file and the judge cache's files are searched for the secret, each run
of 6 of its characters, and its Basic-auth (base64) form.
"""

from __future__ import annotations

import base64
import json
import socket
import string
import urllib.parse
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from rankgate._util import redact as redaction
from rankgate.cli.main import main
from rankgate._util.redact import MASK, MIN_RUN, redact, redact_line, register, register_url, registered, restore
from rankgate.render.github import upsert_comment, workflow_command

from .fake_github import FakeGitHub
from .fake_openai import FakeOpenAI, echo, status
from .hostile import assert_refused
from .test_answers import CLI_ANSWERS, CLI_GOLD, write_jsonl
from .conftest import examples

KEY = "sk-rg-Zq8xW3vB7nK2mP5tL9cQ4"
PASSWORD = "Pa55word-sekrit"
TOKEN = "ghp_Yt6rE2wQ9uI1oP0aS3dF5gH7jK"


@pytest.fixture(autouse=True)
def _forget_secrets():
    before = registered()
    yield
    restore(before)


def pieces(secret: str) -> set[str]:
    """What must not show: every run of MIN_RUN characters of the secret and of its base64 forms."""
    raw = secret.encode()
    forms = [secret] + [base64.b64encode(raw[k:k + (len(raw) - k) // 3 * 3]).decode() for k in range(3)]
    return {f[i:i + MIN_RUN] for f in forms for i in range(len(f) - MIN_RUN + 1)}


def assert_clean(secret: str, texts: dict[str, str | bytes]) -> None:
    bad = pieces(secret)
    for name, text in texts.items():
        text = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
        found = sorted(p for p in bad if p in text)
        assert not found, f"{name} shows {found[:3]} of the secret:\n{text[:2000]}"


def files_under(*folders: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for folder in folders for p in Path(folder).rglob("*") if p.is_file()}


# -- the step itself --------------------------------------------------------------------------------
def test_value_runs_basic_auth_and_userinfo_are_masked():
    register(KEY)
    text = (f"Authorization: Bearer {KEY}; key {KEY[:8]}...{KEY[-6:]}; "
            f"Basic {base64.b64encode(f'svc:{KEY}'.encode()).decode()}; "
            f"proxy http://me:{PASSWORD}@proxy.local:3128/x and https://tok@host/")
    out = redact(text)
    assert_clean(KEY, {"out": out})
    assert PASSWORD not in out and "http://***@proxy.local:3128/x" in out and "https://***@host/" in out
    assert out.startswith("Authorization: Bearer ***; key ***...***; Basic ")


def test_a_short_secret_is_masked_only_as_a_whole_word():
    register("abc")
    assert redact("abc abcd xabc (abc) key=abc") == "*** abcd xabc (***) key=***"


def test_a_password_in_a_url_is_registered_decoded_too():
    register_url("https://user:p%40ss-w0rd!@gw.example/v1")
    assert redact("rejected p@ss-w0rd! for user") == f"rejected {MASK} for user"


def test_nothing_registered_changes_nothing_but_userinfo():
    text = "HTTP 500: upstream sk-abc123 failed at 10:42 (see https://status.example/x?a=b@c)"
    assert redact(text) == text


@settings(max_examples=examples(60), deadline=None)
@given(secret=st.text(string.ascii_letters + string.digits + "-_", min_size=MIN_RUN, max_size=60),
       user=st.text(string.ascii_letters + string.digits, max_size=12),
       before=st.text(max_size=40), after=st.text(max_size=40))
def test_property_no_run_of_a_secret_or_its_basic_auth_form_survives(secret, user, before, after):
    saved = registered()
    try:
        register(secret)
        basic = base64.b64encode(f"{user}:{secret}".encode()).decode()
        for text in (before + secret + after, before + basic + after, secret[1:] + " " + secret[:-1]):
            out = redact(text)
            assert not any(secret[i:i + MIN_RUN] in out for i in range(len(secret) - MIN_RUN + 1))
            assert_clean(secret, {"out": out})
    finally:
        restore(saved)


# -- a secret echoed in another layout: split across lines, percent-encoded ---------------------------
def folded(text: str) -> str:
    """``text`` as an echo may hide a secret in it: whitespace out, percent-escapes decoded (written here
    apart from rankgate._util.redact's own folding, so the two check each other)."""
    return "".join("".join(urllib.parse.unquote(part) for part in text.split()).split())


def assert_hidden(secret: str, out: str) -> None:
    assert_clean(secret, {"out": out})
    found = sorted(p for p in pieces(secret) if p in folded(out))
    assert not found, f"{out!r} shows {found[:3]} of the secret once folded"


def layout(secret: str, every: int | None, breaks: list[str], encoded: list[bool], upper: bool) -> str:
    """``secret`` with the characters ``encoded`` says percent-encoded, split every ``every`` characters by
    the line breaks in ``breaks`` (in turn)."""
    chars = [(f"%{ord(c):02X}" if upper else f"%{ord(c):02x}") if enc else c
             for c, enc in zip(secret, encoded + [False] * len(secret))]
    if not every:
        return "".join(chars)
    lines = ["".join(chars[i:i + every]) for i in range(0, len(chars), every)]
    return lines[0] + "".join(breaks[i % len(breaks)] + line for i, line in enumerate(lines[1:]))


@pytest.mark.parametrize("every", [3, 5, 7])
@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_a_key_echoed_in_short_lines_is_masked_and_the_line_stays_one(every, newline):
    register(KEY)
    text = f"Incorrect API key provided: {layout(KEY, every, [newline], [], True)}. You can find your key at x"
    assert redact_line(text) == "Incorrect API key provided: ***. You can find your key at x"
    assert_hidden(KEY, redact(text))


@pytest.mark.parametrize("encoded", [
    [True] * len(KEY),                                  # every character
    [c in "-_" for c in KEY],                           # what quote() would
    [i % 2 == 0 for i in range(len(KEY))],              # every other one
    [i >= len(KEY) - 6 for i in range(len(KEY))],       # the end only
], ids=["all", "quote", "alternate", "tail"])
def test_a_percent_encoded_key_is_masked(encoded):
    register(KEY)
    for upper in (True, False):
        text = f"denied: key={layout(KEY, None, [], encoded, upper)}&user=ci"
        out = redact(text)
        assert out == "denied: ***&user=ci"
        assert_hidden(KEY, out)


@settings(max_examples=examples(150), deadline=None)
@given(secret=st.text(string.ascii_letters + string.digits + "-_", min_size=MIN_RUN, max_size=60),
       every=st.sampled_from([None, 1, 3, 5, 7, 11]),
       breaks=st.lists(st.sampled_from(["\n", "\r\n", " ", "\t", "\n  "]), min_size=1, max_size=4),
       encoded=st.lists(st.booleans(), max_size=60), upper=st.booleans(),
       before=st.text(max_size=30), after=st.text(max_size=30))
@example(secret=KEY, every=5, breaks=["\n"], encoded=[], upper=True, before="Incorrect key: ", after=".")  # the audit's
@example(secret=KEY, every=None, breaks=["\n"], encoded=[True] * len(KEY), upper=True, before="key=", after="")
@example(secret=KEY, every=7, breaks=["\r\n", "\n"], encoded=[False, True] * 14, upper=False, before="", after="")
def test_property_no_run_of_a_secret_survives_in_any_layout(secret, every, breaks, encoded, upper, before, after):
    saved = registered()
    try:
        register(secret)
        text = before + layout(secret, every, breaks, encoded, upper) + after
        assert_hidden(secret, redact(text))
        line = redact_line(text)
        assert_hidden(secret, line)
        assert len(line.splitlines()) <= 1
    finally:
        restore(saved)


def test_folding_does_not_mask_what_only_looks_alike():
    register(KEY)
    text = "HTTP 401: the key you sent\r\nis not valid (100% sure); see https://example.test/a%20b"
    assert redact(text) == text and redact_line(text) == " ".join(text.split())


def test_restore_forgets_what_was_registered_after():
    before = registered()
    register("another-secret-value")
    assert redact("x another-secret-value y") == "x *** y"
    restore(before)
    assert redact("x another-secret-value y") == "x another-secret-value y"
    assert redaction.registered() == before


# -- the judge: every output of a run whose server echoes the key ------------------------------------
@pytest.fixture
def fake():
    server = FakeOpenAI().start()
    yield server
    server.stop()


def queue_file(folder: Path) -> Path:
    rows = [{"query_id": "q1", "query": "refund window", "id": f"c{i}", "text": t}
            for i, t in enumerate(["echo-401 here", "echo-403 here", "echo-200 here", "plain passage"])]
    path = folder / "queue.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def script_echoes(fake: FakeOpenAI, secret: str) -> None:
    fake.script("echo-401", echo(401, "Incorrect API key provided: {auth}"))
    fake.script("echo-403", status(403, f"key {secret[:8]}...{secret[-6:]} may not use this model"))
    fake.script("echo-200", echo(200, "authorised by {auth}"))


def test_judge_relevance_never_shows_the_key(fake, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("RG_TEST_KEY", KEY)
    script_echoes(fake, KEY)
    out, cache = tmp_path / "out", tmp_path / "cache"
    out.mkdir()
    code = main(["--debug", "judge", "relevance", str(queue_file(tmp_path)), "-o", str(out / "labels.jsonl"),
                 "--judge", "openai", "--judge-url", fake.url, "--judge-model", "m", "--judge-key-env", "RG_TEST_KEY",
                 "--cache", str(cache), "--retries", "0"])
    got = capsys.readouterr()
    assert code == 0
    rows = [json.loads(line) for line in (out / "labels.jsonl").read_text().splitlines()]
    assert rows[0]["judge_error"] == "HTTP 401: Incorrect API key provided: Bearer *** (check --judge-key-env)"
    assert rows[1]["judge_error"] == "HTTP 403: key ***...*** may not use this model (check --judge-key-env)"
    assert rows[2]["grade"] == 2 and rows[3]["grade"] == 2
    assert any(r["headers"].get("authorization") == f"Bearer {KEY}" for r in fake.requests)  # it was sent
    assert_clean(KEY, {"stdout": got.out, "stderr": got.err, **files_under(out, cache)})
    assert b"authorised by Bearer ***" in b"".join(files_under(cache).values())  # the reply was cached, redacted


def test_a_key_echoed_split_or_percent_encoded_never_shows_and_each_error_is_one_line(fake, tmp_path, capsys,
                                                                                      monkeypatch):
    monkeypatch.setenv("RG_TEST_KEY", KEY)
    fake.script("echo-401", status(401, "Incorrect API key provided:\n" + layout(KEY, 5, ["\n"], [], True)))
    fake.script("echo-403", status(403, "key\r\n" + layout(KEY, 3, ["\r\n"], [], True) + "\r\nmay not"))
    fake.script("echo-200", status(400, "bad key=" + urllib.parse.quote(KEY, safe="") + " in\nrequest"))
    out = tmp_path / "out"
    out.mkdir()
    code = main(["judge", "relevance", str(queue_file(tmp_path)), "-o", str(out / "labels.jsonl"), "--judge", "openai",
                 "--judge-url", fake.url, "--judge-model", "m", "--judge-key-env", "RG_TEST_KEY", "--no-cache",
                 "--retries", "0"])
    got = capsys.readouterr()
    assert code == 0
    rows = [json.loads(line) for line in (out / "labels.jsonl").read_text().splitlines()]
    assert [r.get("judge_error") for r in rows] == [
        "HTTP 401: Incorrect API key provided: *** (check --judge-key-env)",
        "HTTP 403: key *** may not (check --judge-key-env)",
        "HTTP 400: bad *** in request", None]
    failed = [line for line in got.err.splitlines() if line.startswith("judge failed on")]
    assert len(failed) == 1 and failed[0].endswith("HTTP 401: Incorrect API key provided: *** (check --judge-key-env)")
    for text in [got.err, got.out, *files_under(out).values()]:
        assert_hidden(KEY, text.decode() if isinstance(text, bytes) else text)


def test_answers_never_shows_the_key(fake, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("RG_TEST_KEY", KEY)
    fake.script("Paris", echo(401, "bad key {auth}"))
    fake.script("founded", echo(200, "authorised by {auth}"))
    fake.script("I don't know", status(403, f"key {KEY[:7]}…{KEY[-7:]} is disabled"))
    gold, answers = write_jsonl(tmp_path / "gold.jsonl", CLI_GOLD), write_jsonl(tmp_path / "answers.jsonl", CLI_ANSWERS)
    out, cache = tmp_path / "out", tmp_path / "cache"
    code = main(["answers", "--answers", str(answers), "--gold", str(gold), "--judge", "openai", "--judge-url",
                 fake.url, "--judge-model", "m", "--judge-key-env", "RG_TEST_KEY", "--cache", str(cache),
                 "--out", str(out), "--resamples", "0"])
    got = capsys.readouterr()
    assert code == 0, got.err
    csv_text = (out / "answers.csv").read_text()
    assert "Bearer ***" in csv_text and "***…***" in csv_text
    assert_clean(KEY, {"stdout": got.out, "stderr": got.err, **files_under(out, cache)})


def test_a_password_in_the_judge_url_never_shows(fake, tmp_path, capsys):
    fake.script("echo-401", echo(401, "Basic auth refused: {auth}"))
    fake.script("echo-403", status(403, f"user judge-user ({PASSWORD[:6]}…) may not"))
    url = fake.url.replace("http://", f"http://judge-user:{PASSWORD}@")
    out, cache = tmp_path / "out", tmp_path / "cache"
    out.mkdir()
    code = main(["judge", "relevance", str(queue_file(tmp_path)), "-o", str(out / "labels.jsonl"), "--judge",
                 "openai", "--judge-url", url, "--judge-model", "m", "--cache", str(cache), "--retries", "0"])
    got = capsys.readouterr()
    assert code == 0
    sent = base64.b64encode(f"judge-user:{PASSWORD}".encode()).decode()
    assert any({k.lower(): v for k, v in r["headers"].items()}.get("authorization") == f"Basic {sent}"
               for r in fake.requests)
    meta = json.loads((out / "labels.judge.json").read_text())
    assert meta["judge"]["url"].startswith("http://***@127.0.0.1:")
    assert_clean(PASSWORD, {"stdout": got.out, "stderr": got.err, **files_under(out, cache)})
    assert sent[:16] not in got.err + (out / "labels.jsonl").read_text()


def test_does_not_answer_names_the_url_without_its_password(tmp_path, capsys):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = tmp_path / "out"
    out.mkdir()
    line = assert_refused(["judge", "relevance", queue_file(tmp_path), "-o", out / "labels.jsonl", "--judge", "openai",
                           "--judge-url", f"http://judge-user:{PASSWORD}@127.0.0.1:{port}/v1", "--judge-model", "m",
                           "--no-cache"], out, capsys=capsys, contains=["does not answer", "http://***@127.0.0.1"])
    assert_clean(PASSWORD, {"stderr": line})


def test_debug_tracebacks_are_redacted(capsys):
    from rankgate.cli.main import _traceback

    register(KEY)
    try:
        raise RuntimeError(f"upstream said {KEY}")
    except RuntimeError:
        _traceback(True)
    err = capsys.readouterr().err
    assert "RuntimeError: upstream said ***" in err
    assert_clean(KEY, {"stderr": err})


# -- GitHub: the token echoed by the API, and GITHUB_API_URL with userinfo ----------------------------
@pytest.fixture
def github():
    gh = FakeGitHub()
    yield gh
    gh.close()


def test_a_token_echoed_by_the_api_is_not_printed(github, tmp_path, monkeypatch, capsys):
    from .test_github_comment import run_gate

    github.echo = True
    env = github.env(tmp_path, token=TOKEN)  # an unknown token: 401 "Bad credentials (Authorization: Bearer …)"
    code, out, step = run_gate(tmp_path, env, monkeypatch, capsys)
    assert code == 0 and "::warning::comment not posted: HTTP 401" in out.out
    assert "Authorization: Bearer ***" in out.out
    assert_clean(TOKEN, {"stdout": out.out, "stderr": out.err, "step": step.read_text(),
                         "comment": (tmp_path / "c.md").read_text()})


def test_a_token_fragment_in_a_message_is_not_returned(github, tmp_path):
    github.read_only = True
    github.echo = True
    posted = upsert_comment("body\n", env=github.env(tmp_path, token="pat-token"))
    assert posted.action == "failed" and "Authorization: Bearer ***" in posted.message
    assert_clean("pat-token", {"message": posted.message, "line": workflow_command(posted)})


def test_userinfo_in_the_api_url_is_not_printed(github, tmp_path, monkeypatch, capsys):
    from .test_github_comment import run_gate

    env = github.env(tmp_path, token=TOKEN)
    env["GITHUB_API_URL"] = github.url.replace("http://", f"http://x-access-token:{PASSWORD}@")
    code, out, _ = run_gate(tmp_path, env, monkeypatch, capsys)
    assert code == 0 and "comment not posted" in out.out
    assert_clean(PASSWORD, {"stdout": out.out, "stderr": out.err})
    assert_clean(TOKEN, {"stdout": out.out, "stderr": out.err})
