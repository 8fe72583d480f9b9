"""The judge's injectable transport, the replay judge users test with, and the judge's place in the error tree."""

from __future__ import annotations

import gzip
import json
import re

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rankgate.cli.main import main
from rankgate.errors import InputError, JudgeError, RankgateError, UsageError
from rankgate.judges import TASK_FIELDS, TASKS, JudgeCallError, JudgeItem, open_judge
from rankgate.judges import base as judges_base
from rankgate.judges import transport as wire
from rankgate.judges.openai import OpenAIJudge, failure
from rankgate.judges.prompts import prompt, read_messages
from rankgate.judges.testing import ReplayJudge

from . import judge_plugins
from .conftest import ROOT, examples

URL = "http://judge.test/v1"
CAPPED = "reply larger than 1,000,000 bytes (--max-reply-bytes; a chat completion is a few KB)"


def completion(answer: object) -> dict:
    return {"choices": [{"index": 0, "message": {"role": "assistant", "content": json.dumps(answer)},
                         "finish_reason": "stop"}]}


def items(*passages: str) -> list[JudgeItem]:
    return [JudgeItem(f"q1\x1f{i}", {"question": "how long is the refund window", "passage": p})
            for i, p in enumerate(passages)]


def mocked(handler, **options):
    return open_judge("openai", url=URL, model="m", use_cache=False, backoff_s=0.0,
                      transport=httpx.MockTransport(handler), **{"retries": 1, **options})


# -- injection -------------------------------------------------------------------------------------
def test_the_handler_sees_the_request_the_judge_sends(monkeypatch):
    monkeypatch.setenv("RANKGATE_TEST_MOCK_KEY", "sk-mock-0123456789")
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=completion({"label": 1}))

    with mocked(handler, seed=5, key_env="RANKGATE_TEST_MOCK_KEY") as judge:
        out = judge.run("context_relevance", items("Refunds: 30 days."))
    assert [j.label for j in out] == [1]
    [request] = seen
    assert str(request.url) == URL + "/chat/completions" and request.method == "POST"
    body = json.loads(request.content)
    assert (body["model"], body["seed"], body["temperature"], body["max_tokens"]) == ("m", 5, 0, 64)
    assert body["response_format"]["json_schema"]["name"] == "context_relevance"
    assert read_messages(body["messages"]) == ("context_relevance", dict(items("Refunds: 30 days.")[0].fields))
    assert request.headers["authorization"] == "Bearer sk-mock-0123456789"
    assert request.headers["accept-encoding"] == wire.ACCEPT_ENCODING


@pytest.mark.parametrize("reply", [
    lambda: httpx.Response(200, content=b"x" * 2_000_000),                              # content-length says so
    lambda: httpx.Response(200, content=(b"x" * 65536 for _ in range(40))),             # streamed, no length
    lambda: httpx.Response(200, content=gzip.compress(b" " * 20_000_000), headers={"content-encoding": "gzip"}),
], ids=["sized", "streamed", "gzip-bomb"])
def test_the_reply_cap_holds_on_an_injected_transport(reply):
    calls = {"big": 0}

    def handler(request: httpx.Request) -> httpx.Response:
        if b"hostile" in request.content:
            calls["big"] += 1
            return reply()
        return httpx.Response(200, json=completion({"label": 2}))

    with mocked(handler) as judge:
        out = judge.run("context_relevance", items("fine", "hostile", "also fine"))
    assert [j.label for j in out] == [2, None, 2]
    assert out[1].error == CAPPED
    assert calls["big"] == 1  # over the cap is final: not retried, not re-asked


def test_a_small_cap_counts_the_bytes_after_decompression():
    packed = gzip.compress(json.dumps({**completion({"label": 1}), "pad": " " * 3000}).encode())
    assert len(packed) < 1024

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=packed, headers={"content-encoding": "gzip"})

    with mocked(handler, max_reply_bytes=1024) as judge:
        assert judge.run("context_relevance", items("a"))[0].error.startswith("reply larger than 1,024 bytes")
    with mocked(handler, max_reply_bytes=8192) as judge:
        assert judge.run("context_relevance", items("a"))[0].label == 1


def test_what_a_mocked_server_echoes_is_redacted(monkeypatch):
    monkeypatch.setenv("RANKGATE_TEST_MOCK_KEY", "sk-echoed-abcdef123456")

    def handler(request: httpx.Request) -> httpx.Response:
        auth = request.headers["authorization"]
        if b"denied" in request.content:
            return httpx.Response(401, json={"error": {"message": f"bad credentials {auth}"}})
        return httpx.Response(200, json=completion({"label": 2, "note": auth}))

    with mocked(handler, key_env="RANKGATE_TEST_MOCK_KEY") as judge:
        out = judge.run("context_relevance", items("denied", "fine"))
        raw = judge.backend.judge("context_relevance", items("fine")[0].fields, seed=0).raw
    assert out[0].error == "HTTP 401: bad credentials Bearer *** (check --judge-key-env)"
    assert out[1].label == 2
    assert "abcdef123456" not in raw and "***" in raw


def test_a_reply_after_the_deadline_is_a_timeout_on_a_transport_without_sockets(monkeypatch):
    now = [1000.0]
    monkeypatch.setattr(wire, "time", type("Clock", (), {"monotonic": staticmethod(lambda: now[0])}))
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        if b"slow" in request.content:
            now[0] += 61.0  # the handler took longer than the whole request may
        return httpx.Response(200, json=completion({"label": 2}))

    # one worker: the fake clock is shared, so a quick call running beside the slow one would see its jump
    with mocked(handler, timeout_s=60.0, workers=1) as judge:
        out = judge.run("context_relevance", items("slow", "quick"))
    assert out[0].error == "timeout after 60 s after 2 attempts" and out[1].label == 2
    assert len(calls) == 3  # the slow one was retried once, each attempt with its own deadline


def test_an_injected_http_transport_keeps_the_deadline_under_its_pool():
    http = wire.client(5.0, 2, httpx.HTTPTransport(retries=0))
    try:
        backend = http._transport._pool._network_backend
        assert type(backend).__name__ == "Backend" and type(backend).__module__ == wire.__name__
    finally:
        http.close()


def test_a_fake_transport_is_in_the_identity_and_the_cache_key(tmp_path):
    replay = ReplayJudge({"context_relevance": {"a": 1}})
    real = OpenAIJudge(URL, "m")
    fake = OpenAIJudge(URL, "m", transport=replay.transport())
    via_http = OpenAIJudge(URL, "m", transport=httpx.HTTPTransport())
    fields = {"question": "q", "passage": "a"}
    assert "transport" not in real.identity() and "transport" not in via_http.identity()
    assert fake.identity()["transport"] == "httpx.MockTransport"
    assert real.request("context_relevance", fields, seed=0) == via_http.request("context_relevance", fields, seed=0)
    assert fake.request("context_relevance", fields, seed=0)["transport"] == "httpx.MockTransport"
    with open_judge("openai", url=URL, model="m", cache_dir=tmp_path, transport=replay.transport()) as judge:
        assert judge.run("context_relevance", [JudgeItem("k", fields)])[0].label == 1
    with open_judge("openai", url=URL, model="m", cache_dir=tmp_path) as judge:  # the real server's cache
        assert judge.plan("context_relevance", [JudgeItem("k", fields)]).cache_hits == 0
    for judge in (real, fake, via_http):
        judge.close()


def test_a_transport_is_refused_where_it_cannot_work():
    with pytest.raises(UsageError, match="transport is for the openai judge"):
        open_judge("lexical", transport=httpx.MockTransport(lambda r: httpx.Response(200)))
    with pytest.raises(UsageError, match=r"must be an httpx\.BaseTransport .*got str"):
        open_judge("openai", url=URL, model="m", transport="http://proxy:3128")


def test_http_failures_map_through_one_table():
    assert failure(httpx.ConnectTimeout("slow"), 2.0) == ("timeout after 2 s", True)
    assert failure(httpx.ReadTimeout("slow"), 0.5) == ("timeout after 0.5 s", True)
    assert failure(httpx.ConnectError("refused"), 2.0) == ("connection error (ConnectError: refused)", True)
    assert failure(httpx.RemoteProtocolError("eof"), 2.0)[1] is True
    assert failure(wire.BadReply("corrupt gzip"), 2.0) == ("corrupt gzip", False)
    assert failure(ValueError("a bug"), 2.0) is None


def test_a_transport_error_from_a_handler_is_retried_then_that_calls_error():
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        raise httpx.ConnectError("connection refused", request=request)

    with mocked(handler, retries=2) as judge:
        out = judge.run("context_relevance", items("a"))
        with pytest.raises(UsageError, match="does not answer"):
            judge.check_reachable()
    assert out[0].error == "connection error (ConnectError: connection refused) after 3 attempts"
    assert len(calls) == 3 + 1


# -- the replay judge ------------------------------------------------------------------------------
def _doc_examples() -> list[str]:
    text = (ROOT / "docs" / "judges.md").read_text(encoding="utf-8")
    section = text.split("## Testing your pipeline: the replay judge", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def test_the_docs_replay_examples_run_as_written():
    examples = _doc_examples()
    ran = []
    for code in examples:
        compiled = compile(code, "docs/judges.md", "exec")
        if "def test_" not in code:  # a recording against a live server: only compiled
            continue
        namespace: dict[str, object] = {"__name__": "docs_example"}
        exec(compiled, namespace)  # noqa: S102 - the docs' own example
        tests = [v for k, v in namespace.items() if k.startswith("test_") and callable(v)]
        for test in tests:
            test()
            ran.append(test.__name__)
    assert len(examples) == 3
    assert ran == ["test_keep_relevant_drops_off_topic_and_unjudged_passages",
                   "test_the_openai_client_against_a_replayed_server"]


def test_replay_precedence_whole_key_then_subject_then_handler_then_default():
    replay = ReplayJudge({"context_relevance": {"p": 1, ("special q", "p"): 0}},
                         handler=lambda task, fields: 2 if "handled" in fields["passage"] else None,
                         default={"context_relevance": 1})
    got = [replay.lookup("context_relevance", {"question": q, "passage": p})
           for q, p in [("q", "p"), ("special q", "p"), ("q", "handled"), ("q", "other")]]
    assert got == [1, 0, 2, 1]
    assert replay.asked == [] and ReplayJudge().lookup("support", {"statement": "s", "context": "c"}) is None


def test_replay_misses_are_failed_calls_and_are_listed():
    replay = ReplayJudge({"support": {"Refunds take 30 days.": "contradicted"}})
    with replay.client() as judge:
        out = judge.run("support", [JudgeItem("s0", {"statement": "Refunds take 30 days.", "context": "c"}),
                                    JudgeItem("s1", {"statement": "Shipping is free.", "context": "c"})], repeats=2)
    assert [(j.label, j.error) for j in out] == [
        ("contradicted", None), ("contradicted", None),
        (None, "no replay label for support of statement 'Shipping is free.'"),
        (None, "no replay label for support of statement 'Shipping is free.'")]
    assert len(replay.asked) == 4 and replay.misses == [("support", {"statement": "Shipping is free.",
                                                                    "context": "c"})] * 2


@pytest.mark.parametrize("kwargs, message", [
    ({"labels": {"suport": {"x": "supported"}}}, "names the task 'suport'; expected one of"),
    ({"labels": {"support": {"x": "yes"}}}, "replay label for support 'x': 'label' must be one of"),
    ({"labels": {"statements": {"a": "one statement"}}}, "'statements' must be a list of strings"),
    ({"labels": {"support": {("only one",): "supported"}}}, "must be the statement text or a tuple of the task's 2"),
    ({"labels": {"support": ["x"]}}, "must map keys to labels"),
    ({"default": {"answer_relevance": 3}}, "the answer_relevance default: 'label' must be 0, 1 or 2"),
    ({"handler": "not callable"}, "must be a function"),
])
def test_a_bad_replay_table_is_refused_when_built(kwargs, message):
    with pytest.raises(UsageError, match=re.escape(message)):
        ReplayJudge(**kwargs)


def test_a_broken_handler_fails_the_test_loudly():
    def handler(task, fields):
        raise KeyError("typo in my handler")

    with ReplayJudge(handler=handler).client() as judge, pytest.raises(KeyError, match="typo"):
        judge.run("context_relevance", items("a"))
    with ReplayJudge(handler=lambda task, fields: 7).client() as judge, pytest.raises(UsageError, match="0, 1 or 2"):
        judge.run("context_relevance", items("a"))


def test_replay_through_the_cli_as_a_module_class_judge(tmp_path, capsys):
    queue = tmp_path / "queue.jsonl"
    queue.write_text("".join(json.dumps({"query_id": "q1", "query": "refund window?", "id": f"c{i}", "text": t}) + "\n"
                             for i, t in enumerate(["Refunds: 30 days.", "Our office is in Berlin.", "Unlisted."])))
    labels = tmp_path / "labels.jsonl"
    argv = ["judge", "relevance", str(queue), "-o", str(labels), "--judge", "tests.judge_plugins:Replay",
            "--cache", str(tmp_path / "cache")]
    before = judge_plugins.Replay.instances
    assert main(argv) == 0
    rows = [json.loads(line) for line in labels.read_text().splitlines()]
    assert [r["grade"] for r in rows] == [2, 0, None]
    assert rows[2]["judge_error"] == "no replay label for context_relevance of passage 'Unlisted.'"
    assert "2 of 3 items labelled by replay (0 from the cache)" in capsys.readouterr().err
    assert main(argv) == 0  # never cached: asked again
    assert "2 of 3 items labelled by replay (0 from the cache)" in capsys.readouterr().err
    assert judge_plugins.Replay.instances == before + 2
    assert [json.loads(line)["grade"] for line in labels.read_text().splitlines()] == [2, 0, None]


def test_labels_recorded_from_a_real_judge_replay_from_a_file(tmp_path):
    batch = items("The refund window is 30 days.", "Our office is in Berlin.")
    answer = [JudgeItem("q1", {"question": "refund window?", "answer": "Refunds take 30 days. Shipping is free."})]
    recorder = ReplayJudge()
    with open_judge("lexical") as judge:
        relevance = judge.run("context_relevance", batch, repeats=2)
        statements = judge.run("statements", answer)
        assert recorder.learn("context_relevance", batch, relevance) == 2
        assert recorder.learn("statements", answer, statements) == 1
        assert recorder.learn("context_relevance", batch, relevance) == 0  # nothing new
    path = tmp_path / "judge-labels.jsonl"
    path.write_text(recorder.dumps(), encoding="utf-8")
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(r["task"], r["label"]) for r in rows] == [
        ("statements", ["Refunds take 30 days.", "Shipping is free."]), ("context_relevance", 2),
        ("context_relevance", 0)]
    replay = ReplayJudge.from_file(str(path))
    with replay.client() as judge:
        assert [j.label for j in judge.run("context_relevance", batch)] == [j.label for j in relevance[::2]]
        assert judge.run("statements", answer)[0].label == statements[0].label
    assert replay.misses == [] and replay.dumps() == recorder.dumps()


@pytest.mark.parametrize("row, message", [
    ('{"task": "suport", "fields": {}, "label": 1}', "field 'task' must be one of statements"),
    ('{"task": "support", "fields": ["x"], "label": "supported"}', "field 'fields' must be an object"),
    ('{"task": "support", "fields": {"statement": "x"}, "label": "supported"}', "field 'fields.context' must be a str"),
    ('{"task": "support", "fields": {"statement": "x", "context": "c"}, "label": "yes"}', "field 'label' must be one"),
    ('{"task": "support", "fields": {"statement": "s", "context": "c"}, "label": "supported"}',
     "the same support item again (first at line 1)"),
    ("not json", "is not valid JSON"),
])
def test_a_bad_recorded_row_names_its_line_and_field(tmp_path, row, message):
    path = tmp_path / "labels.jsonl"
    path.write_text('{"task": "support", "fields": {"statement": "s", "context": "c"}, "label": "supported"}\n'
                    + row + "\n")
    with pytest.raises(InputError) as caught:
        ReplayJudge.from_file(str(path))
    assert str(caught.value).startswith(f"{path}:2: ") and message in str(caught.value)


@settings(max_examples=examples(60), deadline=None)
@given(task=st.sampled_from(TASKS), texts=st.lists(st.text(max_size=40), min_size=2, max_size=2))
def test_read_messages_inverts_the_prompt(task, texts):
    fields = dict(zip(TASK_FIELDS[task], texts))
    assert read_messages(prompt(task).messages(fields)) == (task, fields)


def test_read_messages_refuses_what_no_prompt_made():
    assert read_messages([{"role": "system", "content": "be nice"}, {"role": "user", "content": "<q>\nx\n</q>"}]) is None
    assert read_messages([{"role": "user", "content": "hi"}]) is None
    assert read_messages("not a list") is None


# -- the error tree --------------------------------------------------------------------------------
def test_judge_call_error_is_in_the_tree_and_still_importable_from_base():
    assert judges_base.JudgeCallError is JudgeCallError
    assert issubclass(JudgeCallError, JudgeError) and issubclass(JudgeError, RankgateError)
    assert not issubclass(JudgeError, UsageError)


def test_an_escaped_judge_error_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    import rankgate.cli.judge as command

    def run(args):
        raise JudgeCallError("HTTP 401: invalid api key")

    monkeypatch.setattr(command, "run", run)
    assert main(["judge", "relevance", str(tmp_path / "queue.jsonl"), "-o", str(tmp_path / "l.jsonl")]) == 2
    err = capsys.readouterr().err
    assert err == "rankgate judge: error: HTTP 401: invalid api key\n"
