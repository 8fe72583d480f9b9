"""``rankgate judge relevance|calibrate`` on real files, through the lexical judge and the fake server."""

from __future__ import annotations

import json

import pytest

from rankgate.cli.main import main

from .fake_openai import FakeOpenAI, status
from .hostile import assert_refused

QUESTIONS = {"q1": "how long is the refund window", "q2": "do you ship to canada"}
TEXTS = ["The refund window is 30 days.", "Refunds go to the original card.", "We ship to Canada and Mexico.",
         "Shipping costs are listed at checkout.", "Our office is in Berlin."]


def write_queue(folder, extra=()):
    rows = [{"query_id": q, "query": text, "id": f"c{i}", "text": t, "runs": ["a"], "best_rank": i + 1}
            for q, text in QUESTIONS.items() for i, t in enumerate(TEXTS)]
    rows += list(extra)
    path = folder / "queue.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def lines(path):
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_relevance_lexical_labels_and_sidecar(tmp_path, capsys):
    queue = write_queue(tmp_path)
    out = tmp_path / "labels.jsonl"
    assert main(["judge", "relevance", str(queue), "-o", str(out), "--cache", str(tmp_path / "c")]) == 0
    rows = lines(out)
    assert [(r["query_id"], r["id"], r["grade"]) for r in rows] == [
        ("q1", "c0", 2), ("q1", "c1", 1), ("q1", "c2", 0), ("q1", "c3", 0), ("q1", "c4", 0),
        ("q2", "c0", 0), ("q2", "c1", 0), ("q2", "c2", 2), ("q2", "c3", 0), ("q2", "c4", 0)]
    meta = json.loads((tmp_path / "labels.judge.json").read_text())
    assert meta["judge"]["model"] == "lexical (token overlap baseline)" and meta["coverage"] == 1.0
    assert "10 of 10 items labelled" in capsys.readouterr().err


@pytest.mark.slow  # (the full tier: heavy, and what it guards is covered lighter by default)
def test_relevance_openai_with_failures_repeats_and_identical_reruns(tmp_path, capsys):
    fake = FakeOpenAI().start()
    try:
        fake.script("Berlin", *[status(500)] * 20)  # both c4 items fail for good
        queue = write_queue(tmp_path)
        argv = ["judge", "relevance", str(queue), "--judge", "openai", "--judge-url", fake.url, "--judge-model", "m",
                "--cache", str(tmp_path / "c"), "--retries", "1", "--timeout", "2"]
        out1, out2, out3 = (tmp_path / f"l{i}.jsonl" for i in (1, 2, 3))
        assert main([*argv, "-o", str(out1)]) == 0
        err = capsys.readouterr().err
        assert "8 of 10 items labelled" in err and "judge failed on 2 items" in err and "HTTP 500 after 2" in err
        rows = lines(out1)
        failed = [r for r in rows if r["grade"] is None]
        assert [(r["query_id"], r["id"]) for r in failed] == [("q1", "c4"), ("q2", "c4")]
        assert failed[0]["judge_error"] == "HTTP 500 after 2 attempts"
        meta = json.loads((tmp_path / "l1.judge.json").read_text())
        assert meta["coverage"] == 0.8 and meta["failed_calls"] == 2 and meta["judge"]["url"].startswith(fake.url)
        sent = fake.count
        fake.script("Berlin", *[status(500)] * 20)
        assert main([*argv, "-o", str(out2)]) == 0   # from the cache: only the failures are asked again
        assert fake.count - sent == 4
        assert out2.read_bytes() == out1.read_bytes()
        assert main([*argv, "--no-cache", "-o", str(out3)]) == 0  # a fresh run gives the same bytes
        assert out3.read_bytes() == out1.read_bytes()
        rep = tmp_path / "rep.jsonl"
        assert main([*argv, "--repeats", "3", "-o", str(rep)]) == 0
        assert lines(rep)[0]["grades"] == [2, 2, 2]
        assert "repeat variance: 0 of 8 items changed" in capsys.readouterr().err
    finally:
        fake.stop()


def test_dry_run_counts_and_prices(tmp_path, capsys):
    fake = FakeOpenAI().start()
    try:
        queue = write_queue(tmp_path)
        argv = ["judge", "relevance", str(queue), "--judge", "openai", "--judge-url", fake.url, "--judge-model", "m",
                "--cache", str(tmp_path / "c")]
        assert main([*argv, "--dry-run", "--price-in", "0.15", "--price-out", "0.6"]) == 0
        text = capsys.readouterr().out
        assert fake.count == 0 and not (tmp_path / "labels.jsonl").exists()
        assert "dry run: nothing was called" in text and "10 calls" in text and "10 to send" in text
        assert "approximate: characters / 4" in text and "cost (approximate):" in text
        assert main([*argv, "-o", str(tmp_path / "l.jsonl"), "--price-in", "1", "--price-out", "10"]) == 0
        assert "cost: 0.0004 for 100 prompt and 30 completion tokens" in capsys.readouterr().err
        assert json.loads((tmp_path / "l.judge.json").read_text())["cost"] == 0.0004
        assert main([*argv, "--dry-run"]) == 0
        text = capsys.readouterr().out
        assert "10 cached" in text and "0 to send" in text and "give --price-in" in text
    finally:
        fake.stop()


def test_calibrate_writes_the_agreed_file(tmp_path, capsys):
    queue = write_queue(tmp_path)
    labels = tmp_path / "labels.jsonl"
    assert main(["judge", "relevance", str(queue), "-o", str(labels), "--no-cache"]) == 0
    human = tmp_path / "human.jsonl"
    grades = [2, 1, 0, 0, 0, 0, 0, 2, 1, 0]
    human.write_text("".join(json.dumps({"query_id": r["query_id"], "id": r["id"], "grade": g}) + "\n"
                             for r, g in zip(lines(labels), grades)))
    cal_path = tmp_path / "cal.json"
    assert main(["judge", "calibrate", "--human", str(human), "--judge-labels", str(labels), "-o", str(cal_path),
                 "--when", "2025-05-01"]) == 0
    out = capsys.readouterr().out
    assert "kappa" in out and "q2 / c3: 1 vs 0" in out and "fewer than 100" in out
    cal = json.loads(cal_path.read_text())["calibration"]
    assert cal["task"] == "context_relevance" and cal["n"] == 10 and cal["weights"] == "linear"
    assert cal["agreement"] == 0.9 and cal["sensitivity"] == 0.75 and cal["specificity"] == 1.0
    assert cal["judge"]["model"] == "lexical (token overlap baseline)"
    assert cal["human"].startswith("sha256:") and len(cal["kappa_ci"]) == 2
    for key in ("kappa", "sensitivity_ci", "specificity_ci", "relevant_at", "spearman", "positives", "negatives"):
        assert key in cal
    assert cal["made"] == "2025-05-01T00:00:00Z" and cal["made_from"] == "given" and cal["human_labels"]["items"] == 10
    first = cal_path.read_bytes()
    assert main(["judge", "calibrate", "--human", str(human), "--judge-labels", str(labels), "-o", str(cal_path),
                 "--when", "2025-05-01"]) == 0
    assert cal_path.read_bytes() == first


@pytest.mark.parametrize("bad, message", [
    ('{"query_id": "q1", "query": "x", "id": "c9"}\n', "text"),
    ("not json\n", "not valid JSON"),
    ('{"query_id": "q1", "query": "x", "id": "c0", "text": "dup"}\n', "again"),
    ('[1, 2]\n', "JSON object"),
    ('{"query_id": "q1", "query": "x", "id": "c\\ud800", "text": "t"}\n', "surrogate"),
])
def test_bad_queue_is_refused(tmp_path, capsys, bad, message):
    queue = write_queue(tmp_path)
    queue.write_text(queue.read_text() + bad)
    out = tmp_path / "out"
    out.mkdir()
    line = assert_refused(["judge", "relevance", str(queue), "-o", str(out / "labels.jsonl"), "--no-cache"], out,
                          names=[str(queue)], capsys=capsys)
    assert message in line and ":11:" in line


def test_bad_options_are_usage_errors(tmp_path, capsys, monkeypatch):
    queue = write_queue(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.delenv("RANKGATE_TEST_NOKEY", raising=False)
    for extra in (["--judge", "openai", "--judge-model", "m"],
                  ["--judge", "openai", "--judge-url", "http://127.0.0.1:9/v1", "--judge-model", "m",
                   "--judge-key-env", "RANKGATE_TEST_NOKEY"],
                  ["--judge", "gpt4"], ["--no-cache", "--refresh"], ["--repeats", "0"]):
        code = main(["judge", "relevance", str(queue), "-o", str(out / "l.jsonl"), *extra])
        err = capsys.readouterr().err
        assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not list(out.iterdir())


def test_unreachable_judge_url_writes_nothing(tmp_path, capsys):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    queue = write_queue(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    code = main(["judge", "relevance", str(queue), "-o", str(out / "l.jsonl"), "--judge", "openai",
                 "--judge-url", f"http://127.0.0.1:{port}/v1", "--judge-model", "m", "--no-cache"])
    err = capsys.readouterr().err
    assert code == 2 and "does not answer" in err and not list(out.iterdir())


def test_bad_human_labels_are_refused(tmp_path, capsys):
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"query_id": "q1", "id": "c0", "grade": 2}\n')
    human = tmp_path / "human.jsonl"
    human.write_text('{"query_id": "q1", "id": "c0", "grade": 3}\n')
    out = tmp_path / "out"
    out.mkdir()
    assert_refused(["judge", "calibrate", "--human", str(human), "--judge-labels", str(labels), "-o",
                    str(out / "cal.json")], out, names=[str(human)], capsys=capsys)
    human.write_text('{"query_id": "q9", "id": "c0", "grade": 1}\n')
    assert_refused(["judge", "calibrate", "--human", str(human), "--judge-labels", str(labels), "-o",
                    str(out / "cal.json")], out, names=[str(labels)], capsys=capsys)


def test_judge_settings_from_the_environment(tmp_path, capsys, monkeypatch):
    fake = FakeOpenAI().start()
    try:
        monkeypatch.setenv("RANKGATE_JUDGE", "openai")
        monkeypatch.setenv("RANKGATE_JUDGE_URL", fake.url)
        monkeypatch.setenv("RANKGATE_JUDGE_MODEL", "env-model")
        queue = write_queue(tmp_path)
        assert main(["judge", "relevance", str(queue), "-o", str(tmp_path / "l.jsonl"), "--no-cache"]) == 0
        assert fake.count == 10 and {b["model"] for b in fake.bodies()} == {"env-model"}
        assert main(["judge", "relevance", str(queue), "-o", str(tmp_path / "l2.jsonl"),
                     "--judge", "lexical"]) == 0  # options win over the environment
        assert fake.count == 10
    finally:
        fake.stop()


def test_dry_run_of_a_users_judge_says_tokens_are_unknown(tmp_path, capsys):
    queue = write_queue(tmp_path)
    assert main(["judge", "relevance", str(queue), "--judge", "tests.judge_plugins:CountingJudge", "--dry-run",
                 "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert "10 calls" in out and "not known for judge tests.judge_plugins:CountingJudge" in out
