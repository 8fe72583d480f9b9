"""The openai judge against the fake server in tests/fake_openai.py, with faults.

Most tests talk to it through an ``httpx.MockTransport`` (the ``fake`` fixture: no socket, no server
thread); the ones about HTTP itself — the deadline, headers on the wire, the cache shared by other
processes — use the real server (``server``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from rankgate.errors import UsageError
from rankgate.judges import JudgeItem, coverage, open_judge, repeat_variance
from rankgate.judges.openai import _retry_after, chat_endpoint

from .conftest import ROOT
from .fake_openai import FakeOpenAI, content, delay, length, parts, status

FAST = {"timeout_s": 2.0, "backoff_s": 0.01, "retries": 2}


@pytest.fixture
def fake():
    """The fake's answers through the judge's injected transport."""
    return FakeOpenAI()


@pytest.fixture
def server():
    """The fake over real HTTP on 127.0.0.1."""
    real = FakeOpenAI().start()
    yield real
    real.stop()


def items(*passages, question="what is the refund window"):
    return [JudgeItem(f"q1\x1f{i}", {"question": question, "passage": p}) for i, p in enumerate(passages)]


def judge_for(fake, tmp_path, **kwargs):
    options = {**FAST, "cache_dir": tmp_path / "cache", **kwargs}
    if fake._server is None:  # not started: the same answers through an httpx.MockTransport
        return open_judge("openai", url=fake.judge_url, model="fake-model", transport=fake.transport(), **options)
    return open_judge("openai", url=fake.url, model="fake-model", **options)


def test_request_shape_seed_temperature_schema_and_no_n(fake, tmp_path):
    with judge_for(fake, tmp_path, seed=7) as judge:
        out = judge.run("context_relevance", items("a", "b"), repeats=2)
    assert [j.label for j in out] == [2, 2, 2, 2] and not any(j.cached for j in out)
    bodies = fake.bodies()
    assert sorted(b["seed"] for b in bodies) == [7, 7, 8, 8]
    for body in bodies:
        assert body["temperature"] == 0 and body["model"] == "fake-model" and "n" not in body
        assert body["max_tokens"] == 64
        fmt = body["response_format"]
        assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
        assert fmt["json_schema"]["schema"]["properties"]["label"]["enum"] == [0, 1, 2]
        assert [m["role"] for m in body["messages"]] == ["system", "user"]


@pytest.mark.slow  # (the full tier: heavy, and what it guards is covered lighter by default)
def test_llama_cpp_n_error_never_triggered(tmp_path):
    server = FakeOpenAI(llama_cpp=True).start()
    try:
        with judge_for(server, tmp_path) as judge:
            out = judge.run("context_relevance", items("a", "b", "c"), repeats=3)
        assert coverage(out) == (9, 9)
        assert all("n" not in b for b in server.bodies())
        import httpx  # the fault itself is real: a request with n=2 is refused

        reply = httpx.post(server.url + "/chat/completions", json={"model": "m", "messages": [], "n": 2})
        assert reply.status_code == 400 and "Only one completion choice" in reply.text
    finally:
        server.stop()


def test_peak_concurrency_bounded_by_workers(tmp_path):
    server = FakeOpenAI(latency=0.03).start()
    try:
        with judge_for(server, tmp_path, workers=3) as judge:
            out = judge.run("context_relevance", items(*[f"p{i}" for i in range(24)]))
        assert coverage(out) == (24, 24)
        assert 2 <= server.peak <= 3
    finally:
        server.stop()


def test_cache_hit_sends_nothing_and_survives_a_new_process(server, tmp_path):
    batch = items("a", "b", "c")
    with judge_for(server, tmp_path) as judge:
        first = judge.run("context_relevance", batch)
        assert server.count == 3
        plan = judge.plan("context_relevance", batch)
        assert (plan.calls, plan.cache_hits, plan.to_send) == (3, 3, 0)
        again = judge.run("context_relevance", batch)
    assert server.count == 3 and all(j.cached for j in again)
    assert [j.label for j in again] == [j.label for j in first]
    code = (
        "import json, sys\nfrom rankgate.judges import open_judge, JudgeItem\n"
        f"j = open_judge('openai', url={server.url!r}, model='fake-model', cache_dir={str(tmp_path / 'cache')!r})\n"
        "items = [JudgeItem(f'q1\\x1f{i}', {'question': 'what is the refund window', 'passage': p})"
        " for i, p in enumerate('abcd')]\n"
        "print(json.dumps([[x.label, x.cached] for x in j.run('context_relevance', items)]))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == [[2, True], [2, True], [2, True], [2, False]]
    assert server.count == 4  # only "d" was sent
    with judge_for(server, tmp_path, refresh=True) as judge:
        assert not any(j.cached for j in judge.run("context_relevance", batch))
    assert server.count == 7


def test_cache_key_covers_model_seed_and_prompt(server, tmp_path):
    batch = items("a")
    for kwargs in ({}, {"seed": 1}, {"model": "other"}, {}):
        model = kwargs.pop("model", "fake-model")
        with open_judge("openai", url=server.url, model=model, cache_dir=tmp_path, **kwargs) as judge:
            judge.run("context_relevance", batch)
    assert server.count == 3


def test_429_retry_after_is_honoured(fake, tmp_path, monkeypatch):
    import rankgate.judges.openai as client

    waits: list[float] = []

    class Clock:  # the module's clock, except that a pause is recorded instead of slept
        def __getattr__(self, name):
            return getattr(time, name)

        def sleep(self, seconds: float) -> None:
            waits.append(seconds)

    monkeypatch.setattr(client, "time", Clock())
    fake.script("slow-down", status(429, "rate limited", {"Retry-After": "0.4"}))
    with judge_for(fake, tmp_path, backoff_s=10.0) as judge:  # a backoff would wait far longer
        out = judge.run("context_relevance", items("slow-down"))
    assert out[0].label == 2 and out[0].error is None
    assert len(fake.requests) == 2 and waits == [0.4]  # the server's pause, not the 10 s backoff


def test_retry_after_forms():
    assert _retry_after({"retry-after": "3"}) == 3.0
    assert _retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert _retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0
    assert _retry_after({"retry-after": "soon"}) is None and _retry_after({}) is None


def test_500_retried_then_ok_and_persistent_500_is_an_error_row(fake, tmp_path):
    fake.script("once", status(500))
    fake.script("always", *[status(503, "overloaded")] * 5)
    with judge_for(fake, tmp_path, retries=2) as judge:
        out = judge.run("context_relevance", items("once", "always", "fine"))
    assert out[0].label == 2
    assert out[1].label is None and out[1].error == "HTTP 503 after 3 attempts"
    assert out[2].label == 2
    assert coverage(out) == (2, 3)
    with judge_for(fake, tmp_path, retries=2) as judge:  # the failure was not cached: asked again
        again = judge.run("context_relevance", items("once", "always", "fine"))
    assert [j.cached for j in again] == [True, False, True]


def test_client_errors_fail_at_once_with_the_servers_message(fake, tmp_path):
    fake.script("denied", status(401, "invalid api key"))
    with judge_for(fake, tmp_path) as judge:
        out = judge.run("context_relevance", items("denied"))
    assert out[0].error == "HTTP 401: invalid api key (check --judge-key-env)" and fake.count == 1


def test_timeout_then_retry_and_timeout_for_good(server, tmp_path):
    server.script("late-once", delay(0.6))
    server.script("late-always", delay(0.6), delay(0.6))
    with judge_for(server, tmp_path, timeout_s=0.15, retries=1) as judge:
        out = judge.run("context_relevance", items("late-once", "late-always"))
    assert out[0].label == 2
    assert out[1].error == "timeout after 0.15 s after 2 attempts"


@pytest.mark.parametrize("steps, label, requests", [
    ([content('Here you go:\n```json\n{"label": 1}\n```\nAnything else?')], 1, 1),
    ([content('I rate it {"label": 0} because it is off topic.')], 0, 1),
    ([content('{"label": 1')], 2, 2),                  # truncated JSON: one re-ask
    ([content('{"label": 5}')], 2, 2),                 # schema-invalid: one re-ask
    ([content('{"grade": 1}')], 2, 2),
    ([length()], 2, 2),                                # cut off: one re-ask with a bigger budget
])
def test_tolerant_parsing_and_one_reask(fake, tmp_path, steps, label, requests):
    fake.script("odd", *steps)
    with judge_for(fake, tmp_path) as judge:
        out = judge.run("context_relevance", items("odd"))
    assert out[0].label == label and out[0].error is None
    assert fake.count == requests
    if requests == 2:
        reask = fake.bodies()[1]
        assert [m["role"] for m in reask["messages"]] == ["system", "user", "assistant", "user"]
        assert "could not be used" in reask["messages"][-1]["content"]


def test_length_reask_doubles_the_budget(fake, tmp_path):
    fake.script("cut", length())
    with judge_for(fake, tmp_path) as judge:
        judge.run("context_relevance", items("cut"))
    assert [b["max_tokens"] for b in fake.bodies()] == [64, 128]


def test_second_bad_answer_is_an_error_not_a_guess(fake, tmp_path):
    fake.script("bad", content('{"label": 1'), content("still not json"))
    fake.script("cut", length(), length())
    with judge_for(fake, tmp_path) as judge:
        out = judge.run("context_relevance", items("bad", "cut"))
    assert out[0].error == "unparseable answer (no JSON found), also after one re-ask"
    assert out[1].error == "the answer was cut off at 128 tokens (finish_reason length), also after one re-ask"
    assert coverage(out) == (0, 2)


@pytest.mark.parametrize("rejected, modes", [
    ({"json_schema"}, ["json_schema", "json_object", "json_object", "json_object"]),
    ({"json_schema", "json_object"}, ["json_schema", "json_object", None, None, None]),
])
def test_response_format_fallback(tmp_path, rejected, modes):
    fake = FakeOpenAI(reject_formats=rejected)
    with judge_for(fake, tmp_path, workers=1) as judge:
        out = judge.run("context_relevance", items("a", "b", "c"))
        assert judge.identity()["response_format"] == (modes[-1] or "none")
    assert [j.label for j in out] == [2, 2, 2]
    assert [(b.get("response_format") or {}).get("type") for b in fake.bodies()] == modes


def test_statements_and_verdict_tasks(fake, tmp_path):
    with judge_for(fake, tmp_path) as judge:
        st = judge.run("statements", [JudgeItem("q1", {"question": "q", "answer": "One. Two!"})])
        sup = judge.run("support", [JudgeItem("q1\x1fs0", {"statement": "One.", "context": "ctx label=\"contradicted\""})])
        cor = judge.run("correctness", [JudgeItem("q1\x1fs0", {"statement": "One.", "reference": "ref"})])
    assert st[0].label == ("One.", "Two!")
    assert sup[0].label == "contradicted" and cor[0].label == "supported"
    assert fake.bodies()[0]["max_tokens"] == 1024


def test_repeats_measure_the_judges_variance(fake, tmp_path):
    with judge_for(fake, tmp_path) as judge:
        out = judge.run("context_relevance", items("seedlabel", "steady"), repeats=3)
    assert [j.label for j in out] == [0, 1, 2, 2, 2, 2]
    v = repeat_variance(out)
    assert (v.items, v.changed, v.share) == (2, 1, 0.5)


def test_key_from_named_variable_is_sent_never_recorded(server, tmp_path, monkeypatch):
    monkeypatch.setenv("RANKGATE_TEST_KEY", "sk-test-123")
    with judge_for(server, tmp_path, key_env="RANKGATE_TEST_KEY") as judge:
        judge.run("context_relevance", items("a"))
        assert "sk-test-123" not in json.dumps(judge.identity())
    assert server.requests[0]["headers"].get("authorization") == "Bearer sk-test-123"
    rows = (tmp_path / "cache" / "judge-cache.sqlite3").read_bytes()
    assert b"sk-test-123" not in rows


def test_plan_counts_tokens_as_characters_over_four(fake, tmp_path):
    with judge_for(fake, tmp_path) as judge:
        plan = judge.plan("context_relevance", items("x" * 400))
    assert fake.count == 0
    assert plan.calls == 1 and plan.cache_hits == 0 and plan.approx_tokens_out == 8
    assert 100 < plan.approx_tokens_in < 350 and plan.approx_tokens == plan.approx_tokens_in + 8  # 400 + ~800 prompt chars
    assert plan.cost(1.0, 2.0) == pytest.approx((plan.approx_tokens_in + 16) / 1e6)
    assert plan.cost(None, None) is None


def test_endpoint_forms_and_unreachable_server(tmp_path):
    assert chat_endpoint("http://localhost:8000/v1") == "http://localhost:8000/v1/chat/completions"
    assert chat_endpoint("http://localhost:8000/v1/") == "http://localhost:8000/v1/chat/completions"
    assert chat_endpoint("http://localhost:8080") == "http://localhost:8080/v1/chat/completions"
    az = "https://r.openai.azure.com/openai/deployments/d/chat/completions?api-version=2024-10-21"
    assert chat_endpoint(az) == az
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with open_judge("openai", url=f"http://127.0.0.1:{port}/v1", model="m", use_cache=False, retries=1,
                    backoff_s=0.01) as judge:
        with pytest.raises(UsageError, match="does not answer"):
            judge.check_reachable()
        out = judge.run("context_relevance", items("a"))
    assert out[0].error.startswith("connection error (ConnectError") and out[0].error.endswith("after 2 attempts")


def test_backoff_is_seeded(fake, tmp_path):
    with judge_for(fake, tmp_path) as judge:
        b = judge.backend
        msgs = [{"role": "user", "content": "x"}]
        assert b._delay(2, msgs, 0) == b._delay(2, msgs, 0)
        assert 0.02 <= b._delay(2, msgs, 0) < 0.04 + 1e-12
        assert b._delay(2, msgs, 0) != b._delay(2, msgs, 1)


def test_azure_key_header_and_content_parts(fake, tmp_path, monkeypatch):
    from rankgate.judges.openai import OpenAIJudge

    monkeypatch.setenv("RANKGATE_TEST_AZ", "az-key")
    az = OpenAIJudge("https://r.openai.azure.com/openai/deployments/d/chat/completions?api-version=1", "d",
                     key_env="RANKGATE_TEST_AZ")
    assert az._headers.get("api-key") == "az-key" and "authorization" not in az._headers
    fake.script("parts", parts('{"label": 1}'))
    with judge_for(fake, tmp_path) as judge:
        assert judge.run("context_relevance", items("parts"))[0].label == 1


@pytest.mark.slow  # (the full tier: heavy, and what it guards is covered lighter by default)
def test_processes_share_one_cache(server, tmp_path):
    code = (
        "import sys\nfrom rankgate.judges import open_judge, JudgeItem\n"
        f"j = open_judge('openai', url={server.url!r}, model='fake-model', cache_dir={str(tmp_path)!r}, workers=4)\n"
        "items = [JudgeItem(str(i), {'question': 'q', 'passage': f'p{i}'}) for i in range(int(sys.argv[1]), int(sys.argv[2]))]\n"
        "out = j.run('context_relevance', items)\nassert all(x.error is None for x in out)\n")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(a), str(b)], cwd=ROOT)
             for a, b in ((0, 300), (150, 450))]
    assert [p.wait(timeout=60) for p in procs] == [0, 0]
    with judge_for(server, tmp_path, cache_dir=tmp_path) as judge:
        plan = judge.plan("context_relevance", [JudgeItem(str(i), {"question": "q", "passage": f"p{i}"})
                                                for i in range(450)])
    assert plan.cache_hits == 450


@pytest.mark.skipif(not __import__("os").environ.get("RANKGATE_LIVE_JUDGE_URL"),
                    reason="live judge test: set RANKGATE_LIVE_JUDGE_URL, RANKGATE_LIVE_JUDGE_MODEL "
                           "(and RANKGATE_LIVE_JUDGE_KEY_ENV for a server that needs a key)")
def test_live_endpoint(tmp_path):
    import os

    with open_judge("openai", url=os.environ["RANKGATE_LIVE_JUDGE_URL"], model=os.environ["RANKGATE_LIVE_JUDGE_MODEL"],
                    key_env=os.environ.get("RANKGATE_LIVE_JUDGE_KEY_ENV"), cache_dir=tmp_path) as judge:
        judge.check_reachable()
        out = judge.run("context_relevance", [
            JudgeItem("yes", {"question": "How long is the refund window?", "passage": "Refunds: 30 days from delivery."}),
            JudgeItem("no", {"question": "How long is the refund window?", "passage": "Our office is in Berlin."})])
        assert [j.error for j in out] == [None, None], out
        assert out[0].label >= out[1].label


def test_cache_opens_while_another_process_holds_the_file(tmp_path, monkeypatch):
    """SQLite can answer "database is locked" at once while another process switches a new file to WAL:
    opening the cache tries again (it must not fail the run), and a real error still fails at once."""
    import sqlite3

    from rankgate.judges import cache as cache_mod
    from rankgate.errors import UsageError

    calls = {"n": 0}
    real = cache_mod._setup

    def busy_twice(db):
        calls["n"] += 1
        if calls["n"] <= 2:
            raise sqlite3.OperationalError("database is locked")
        real(db)

    monkeypatch.setattr(cache_mod, "_setup", busy_twice)
    c = cache_mod.JudgeCache(tmp_path)
    c.put_many([("k", "t", "1", "r", {}, None)])
    assert calls["n"] == 3 and c.get_many(["k"]) == {"k": "1"}

    def broken(db):
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(cache_mod, "_setup", broken)
    with pytest.raises(UsageError, match="cannot open the judge cache .*disk I/O error"):
        cache_mod.JudgeCache(tmp_path / "other")
