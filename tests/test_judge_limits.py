"""The judge client against hostile servers: huge replies, gzip bombs, drip-fed replies, deep nesting.

Every one of them must end as that call's ``judge_error`` (the rest of the run labelled as usual),
with the process's memory bounded by the reply cap and each request by its deadline. The memory test
runs the real CLI in a child process and reads the child's own peak RSS from ``os.wait4``.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import zlib

import pytest

from rankgate.cli.main import main
from rankgate.io.jsonl import MAX_DEPTH
from rankgate.judges import JudgeItem, open_judge
from rankgate.judges import transport

from .conftest import ROOT
from .fake_openai import FakeOpenAI, bomb, content, drip, huge, nested, reply, status
from .hostile import assert_refused

FAST = {"timeout_s": 5.0, "backoff_s": 0.01, "retries": 1}


@pytest.fixture
def fake():
    server = FakeOpenAI().start()
    yield server
    server.stop()


def items(*passages):
    return [JudgeItem(f"q1\x1f{i}", {"question": "how long is the refund window", "passage": p})
            for i, p in enumerate(passages)]


def run(fake, tmp_path, passages, **kwargs):
    options = {**FAST, "cache_dir": tmp_path / "cache", **kwargs}
    with open_judge("openai", url=fake.url, model="fake-model", **options) as judge:
        return judge.run("context_relevance", items(*passages))


# -- the reply cap -----------------------------------------------------------------------------------
@pytest.mark.parametrize("step", [huge(64 << 20), huge(64 << 20, content_length=True), bomb(1 << 30)],
                         ids=["64MB-streamed", "64MB-content-length", "gzip-bomb-1GB"])
def test_a_reply_over_the_cap_is_that_calls_error_and_is_not_retried(fake, tmp_path, step):
    fake.script("hostile", step)
    out = run(fake, tmp_path, ["fine", "hostile", "also fine"])
    assert [j.label for j in out] == [2, None, 2]
    assert out[1].error == "reply larger than 1,000,000 bytes (--max-reply-bytes; a chat completion is a few KB)"
    assert fake.count == 3  # over the cap is final: no retry, no re-ask


def test_an_error_body_over_the_cap_is_read_no_further(fake, tmp_path):
    fake.script("hostile", huge(5 << 20, code=400))
    out = run(fake, tmp_path, ["hostile"])
    assert out[0].error.startswith("HTTP 400: reply larger than 1,000,000 bytes")


def test_the_cap_counts_bytes_after_decompression_and_can_be_raised(fake, tmp_path):
    body = json.dumps({"choices": [{"message": {"content": '{"label": 1}'}, "finish_reason": "stop"}],
                       "pad": " " * 3000}).encode()
    packed = gzip.compress(body)
    assert len(packed) < 1024 < len(body)
    fake.script("gz", reply(packed, "gzip"), reply(packed, "gzip"))
    out = run(fake, tmp_path, ["gz"], max_reply_bytes=1024, use_cache=False)
    assert out[0].error == "reply larger than 1,024 bytes (--max-reply-bytes; a chat completion is a few KB)"
    assert run(fake, tmp_path, ["gz"], max_reply_bytes=4096, use_cache=False)[0].label == 1


@pytest.mark.parametrize("coding", ["gzip", "deflate", "raw-deflate", "gzip, gzip", "identity"])
def test_read_body_decodes_what_it_asks_for_piece_by_piece(coding):
    body = json.dumps({"pad": "ab" * 100_000}).encode()
    data, header = body, coding
    if coding == "gzip":
        data = gzip.compress(body)
    elif coding == "deflate":
        data = zlib.compress(body)
    elif coding == "raw-deflate":
        z = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
        data, header = z.compress(body) + z.flush(), "deflate"
    elif coding == "gzip, gzip":
        data = gzip.compress(gzip.compress(body))
    chunks = [data[i:i + 333] for i in range(0, len(data), 333)]
    assert transport.read_body(_Response(header, chunks), 1 << 20) == body
    with pytest.raises(transport.ReplyTooLarge):
        transport.read_body(_Response(header, chunks), len(body) - 1)


@pytest.mark.parametrize("header, message", [
    ("br", "encoded as 'br', which was not asked for"),
    ("gzip, gzip, gzip, gzip, gzip", "encoded 5 times over"),
])
def test_read_body_refuses_encodings_it_did_not_ask_for(header, message):
    with pytest.raises(transport.BadReply, match=message):
        transport.read_body(_Response(header, [b"xx"]), 1 << 20)


def test_a_corrupt_gzip_body_is_that_calls_error(fake, tmp_path):
    with pytest.raises(transport.BadReply, match="gzip body is corrupt"):
        transport.read_body(_Response("gzip", [b"\x1f\x8b\x08\x00garbage-garbage"]), 1 << 20)


class _Response:
    def __init__(self, encoding: str, chunks: list[bytes]) -> None:
        self.headers = {"content-encoding": encoding}
        self._chunks = chunks

    def iter_raw(self):
        yield from self._chunks


# -- the deadline ------------------------------------------------------------------------------------
@pytest.mark.parametrize("headers", [False, True], ids=["body-dripped", "headers-dripped"])
def test_a_dripping_server_is_cut_off_at_the_deadline(fake, tmp_path, headers):
    # about 300 bytes at 0.05 s each: 15 s if only each wait were bounded; the deadline is 0.3 s
    fake.script("drip", drip(0.05, headers=headers))
    out = run(fake, tmp_path, ["drip", "fine"], timeout_s=0.3, retries=0)
    assert out[0].label is None and out[0].error == "timeout after 0.3 s after 1 attempt"
    assert out[1].label == 2


def test_an_injected_http_transport_is_cut_off_at_the_deadline_too(fake, tmp_path):
    import httpx

    fake.script("drip", drip(0.05, headers=True))  # the headers: only the deadline under the pool cuts them off
    out = run(fake, tmp_path, ["drip", "fine"], timeout_s=0.3, retries=0, transport=httpx.HTTPTransport())
    assert out[0].label is None and out[0].error == "timeout after 0.3 s after 1 attempt"
    assert out[1].label == 2


def test_a_dripped_reply_that_times_out_is_retried_with_a_fresh_deadline(fake, tmp_path):
    fake.script("drip", drip(0.05))
    out = run(fake, tmp_path, ["drip"], timeout_s=0.3, retries=1)
    assert out[0].label == 2 and fake.count == 2


# -- unparseable replies -----------------------------------------------------------------------------
@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 200_000])
def test_a_deeply_nested_reply_is_that_calls_error(fake, tmp_path, depth):
    fake.script("deep", nested(depth))
    out = run(fake, tmp_path, ["fine", "deep", "fine too"])
    assert [j.label for j in out] == [2, None, 2]
    assert f"not a chat completion (nested deeper than {MAX_DEPTH} levels)" in out[1].error


def test_a_deeply_nested_answer_inside_a_completion_is_unparseable_not_a_crash(fake, tmp_path):
    deep = "[" * 200_000 + "]" * 200_000
    fake.script("deep", content(deep), content(deep))
    out = run(fake, tmp_path, ["deep", "fine"])
    assert out[0].error == "the reply's JSON nests deeper than 512 levels" and out[1].label == 2


@pytest.mark.parametrize("body", [
    b'{"choices": [{"message": {"content": "{\\"label\\": 2}"}, "finish_reason": "stop"}], '
    b'"usage": {"prompt_tokens": "many", "completion_tokens": 1e400}, "system_fingerprint": ["x"]}',
    b'{"choices": [{"message": {"content": "{\\"label\\": 2}"}}], "usage": [1, 2]}',
])
def test_odd_usage_and_fingerprint_fields_do_not_crash_the_run(fake, tmp_path, body):
    fake.script("odd", reply(body))
    out = run(fake, tmp_path, ["odd", "fine"])
    assert [j.label for j in out] == [2, 2]


def test_a_reply_that_is_not_json_is_that_calls_error(fake, tmp_path):
    fake.script("bad", reply(b"\xff\xfe not json"), status(200))
    out = run(fake, tmp_path, ["bad", "fine"])
    assert out[0].error.startswith("the server's reply is not a chat completion:") and out[1].label == 2


# -- options -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("value", ["0", "1023", "2000000000", "-5"])
def test_max_reply_bytes_out_of_range_is_a_usage_error(tmp_path, capsys, value):
    queue = tmp_path / "queue.jsonl"
    queue.write_text(json.dumps({"query_id": "q1", "query": "q", "id": "c1", "text": "t"}) + "\n")
    out = tmp_path / "out"
    out.mkdir()
    assert_refused(["judge", "relevance", queue, "-o", out / "labels.jsonl", "--judge", "openai", "--judge-url",
                    "http://127.0.0.1:9/v1", "--judge-model", "m", "--max-reply-bytes", value], out, capsys=capsys,
                   contains=["--max-reply-bytes must be a whole number of bytes from 1024"])


def timeout_argv(command: str, tmp_path, value: str, url: str = "http://127.0.0.1:9/v1") -> list[object]:
    """A ``judge relevance`` or ``answers`` run with ``--timeout=value`` (the = keeps argparse from reading -inf
    as an option)."""
    from .test_answers import CLI_ANSWERS, CLI_GOLD
    from .helpers import write_jsonl

    judge = ["--judge", "openai", "--judge-url", url, "--judge-model", "m", "--no-cache", f"--timeout={value}"]
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    if command == "judge":
        queue = write_jsonl(tmp_path / "queue.jsonl", [{"query_id": "q1", "query": "q", "id": "c1", "text": "t"}])
        return ["judge", "relevance", queue, "-o", out / "labels.jsonl", *judge]
    gold, answers = write_jsonl(tmp_path / "gold.jsonl", CLI_GOLD), write_jsonl(tmp_path / "answers.jsonl", CLI_ANSWERS)
    return ["answers", "--answers", answers, "--gold", gold, "--out", out, "--resamples", "0", *judge]


@pytest.mark.parametrize("command", ["judge", "answers"])
@pytest.mark.parametrize("value", ["inf", "1e10", "-inf", "nan", "1e309", "0", "-2", "0.0001", "86400.5"])
def test_timeout_out_of_its_range_is_a_usage_error_naming_the_flag_and_the_range(tmp_path, capsys, command, value):
    argv = timeout_argv(command, tmp_path, value)
    assert_refused(argv, tmp_path / "out", capsys=capsys,
                   contains=["--timeout must be a float in the range [0.001, 86,400]; got "])


def test_the_longest_timeout_is_a_working_one(fake, tmp_path, capsys):
    from rankgate._util.constraints import MAX_TIMEOUT_S

    assert main([str(a) for a in timeout_argv("judge", tmp_path, f"{MAX_TIMEOUT_S:g}", fake.url)]) == 0, \
        capsys.readouterr().err
    assert json.loads((tmp_path / "out" / "labels.jsonl").read_text())["grade"] == 2
    out = run(fake, tmp_path, ["fine"], timeout_s=MAX_TIMEOUT_S)
    assert [j.label for j in out] == [2]


@pytest.mark.parametrize("value", [float("inf"), 1e10, 0.0, "60", None])
def test_the_python_api_refuses_a_timeout_out_of_range_naming_the_parameter(value):
    from rankgate.errors import UsageError
    from rankgate.flows.judge import JudgeSpec

    with pytest.raises(UsageError, match=r"The 'timeout_s' parameter of open_judge must be a float in the range "
                                         r"\[0\.001, 86,400\]; got "):
        open_judge("lexical", timeout_s=value)
    with pytest.raises(UsageError, match=r"^(timeout|The 'timeout' parameter of JudgeSpec) must be a float"):
        JudgeSpec(timeout=value)


# -- memory, measured on the real command in a child process -----------------------------------------
# On Linux a child's ru_maxrss starts from the memory of the process that forked it, and a pytest worker
# holds hundreds of MB after a few hundred tests: the command is forked from this tiny launcher instead.
_LAUNCH = """import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.executable, [sys.executable, "-m", "rankgate", *sys.argv[1:]])
_, status, usage = os.wait4(pid, 0)
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss)
"""


def _peak_rss_mb(argv: list[str], tmp_path) -> tuple[int, float, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    with open(tmp_path / "stderr", "wb") as err:
        done = subprocess.run([sys.executable, "-S", "-c", _LAUNCH, *argv], stdout=subprocess.PIPE, stderr=err,
                              env=env, check=False)
    code, maxrss_kb = (int(x) for x in done.stdout.split()[-2:])
    return code, maxrss_kb / 1024.0, (tmp_path / "stderr").read_text()


@pytest.mark.parametrize("step", [huge(64 << 20), bomb(1 << 30)], ids=["64MB", "gzip-bomb"])
def test_hostile_replies_at_eight_workers_keep_the_peak_rss_low(fake, tmp_path, step):
    fake.always = step
    queue = tmp_path / "queue.jsonl"
    queue.write_text("".join(json.dumps({"query_id": f"q{i}", "query": "refund window", "id": f"c{i}",
                                         "text": f"passage {i}"}) + "\n" for i in range(16)))
    labels = tmp_path / "labels.jsonl"
    code, peak_mb, err = _peak_rss_mb(["judge", "relevance", str(queue), "-o", str(labels), "--judge", "openai",
                                       "--judge-url", fake.url, "--judge-model", "m", "--workers", "8",
                                       "--no-cache", "--retries", "0"], tmp_path)
    assert code == 0, err
    rows = [json.loads(line) for line in labels.read_text().splitlines()]
    assert len(rows) == 16 and all(r["grade"] is None for r in rows)
    assert all(r["judge_error"].startswith("reply larger than 1,000,000 bytes") for r in rows)
    assert fake.count == 16 and fake.peak >= 2
    print(f"peak RSS {peak_mb:.0f} MB")
    assert peak_mb < 500, f"peak RSS {peak_mb:.0f} MB"
    assert "Traceback" not in err


def test_the_cli_reports_a_capped_reply_as_a_failed_item(fake, tmp_path, capsys):
    fake.script("Berlin", huge(3 << 20))
    queue = tmp_path / "queue.jsonl"
    queue.write_text("".join(json.dumps({"query_id": "q1", "query": "where", "id": f"c{i}", "text": t}) + "\n"
                             for i, t in enumerate(["Our office is in Berlin.", "We ship to Canada."])))
    labels = tmp_path / "labels.jsonl"
    assert main(["judge", "relevance", str(queue), "-o", str(labels), "--judge", "openai", "--judge-url", fake.url,
                 "--judge-model", "m", "--no-cache", "--max-reply-bytes", "2000000"]) == 0
    rows = [json.loads(line) for line in labels.read_text().splitlines()]
    assert rows[0]["judge_error"].startswith("reply larger than 2,000,000 bytes") and rows[1]["grade"] == 2
    err = capsys.readouterr().err
    assert "judge failed on 1 items" in err and "Traceback" not in err


def test_a_deeply_nested_reply_through_the_cli_keeps_every_other_label(fake, tmp_path, capsys):
    fake.script("Berlin", nested(300_000))
    queue = tmp_path / "queue.jsonl"
    queue.write_text("".join(json.dumps({"query_id": "q1", "query": "where", "id": f"c{i}", "text": t}) + "\n"
                             for i, t in enumerate(["We ship to Canada.", "Our office is in Berlin.", "Hours: 9-5."])))
    labels, cache = tmp_path / "labels.jsonl", tmp_path / "cache"
    assert main(["judge", "relevance", str(queue), "-o", str(labels), "--judge", "openai", "--judge-url", fake.url,
                 "--judge-model", "m", "--cache", str(cache)]) == 0
    err = capsys.readouterr().err
    rows = [json.loads(line) for line in labels.read_text().splitlines()]
    assert [r["grade"] for r in rows] == [2, None, 2]
    assert rows[1]["judge_error"].startswith(f"the server's reply is not a chat completion (nested deeper than {MAX_DEPTH}")
    assert "Traceback" not in err and "judge failed on 1 items" in err
    # the labels paid for are in the cache: a second run asks only for the failed item
    before = fake.count
    assert main(["judge", "relevance", str(queue), "-o", str(labels), "--judge", "openai", "--judge-url", fake.url,
                 "--judge-model", "m", "--cache", str(cache)]) == 0
    assert fake.count == before + 1
