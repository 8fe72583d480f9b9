"""Cost per query (issue 37, item 2): the ``cost`` object of run records, its summary with intervals, cost gates
decided on intervals with owners, and the judge's recorded spend beside its dry-run estimate."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from rankgate.cli.main import main
from rankgate.errors import InputError

from .fake_openai import FakeOpenAI
from .helpers import write_jsonl

N = 300


def _records(mult: float = 1.0, jitter: float = 0.0, seed: int = 7, cost: bool = True) -> list[dict]:
    """Runs of one retriever over N queries; ``usd`` per query times ``mult`` (a regression) or moved by a few
    per cent of noise (``jitter``), the same queries each time."""
    rng = random.Random(seed)
    noise = random.Random(seed + 1)
    out = []
    for i in range(N):
        usd = 0.0015 + rng.random() * 0.001
        rec: dict = {"query_id": f"q{i}", "topk": [{"chunk_id": f"d{i}", "score": 1.0}, {"chunk_id": "x", "score": 0.5}]}
        if cost:
            rec["cost"] = {"tokens_in": 1500 + rng.randint(0, 600), "tokens_out": 200,
                           "usd": round(usd * mult * (1 + noise.gauss(0, jitter)), 7), "rerank_ms": 30.5, "gpu_ms": 2}
        out.append(rec)
    return out


@pytest.fixture
def files(tmp_path):
    gold = write_jsonl(tmp_path / "gold.jsonl", [{"query_id": f"q{i}", "relevant": {f"d{i}": 1},
                                                  "lang": ("en", "de", "pt-BR")[i % 3]} for i in range(N)])
    base = write_jsonl(tmp_path / "base.jsonl", _records())
    worse = write_jsonl(tmp_path / "worse.jsonl", _records(mult=1.4))  # +40% per query: a clear regression
    noise = write_jsonl(tmp_path / "noise.jsonl", _records(jitter=0.02))  # the same cost, give or take 2%
    ship = tmp_path / "ship.yaml"
    ship.write_text("gates:\n  - metric: recall@5\n    threshold: 0.5\n"
                    "cost:\n  - key: usd\n    mean_max: 0.004\n    p95_max: 0.005\n    regression_max: 0.0001\n"
                    "    owner: platform-team\n")
    return gold, base, worse, noise, ship


def test_evaluate_summarises_cost_per_query_with_intervals(files, tmp_path, capsys):
    gold, base, *_ = files
    out = tmp_path / "out"
    assert main(["evaluate", "--gold", str(gold), "--run", str(base), "--by", "lang", "--out", str(out)]) == 0
    terminal = capsys.readouterr().out
    assert "Cost per query" in terminal and "usd" in terminal and "gpu_ms" in terminal  # unknown keys kept
    summary = json.loads((out / "summary.json").read_text())
    rows = {(r["key"], r["stat"], r["segment"]): r for r in summary["cost"]["rows"]}
    usd = np.asarray([r["cost"]["usd"] for r in _records()])
    mean = rows[("usd", "mean", None)]
    assert mean["n"] == N and mean["value"] == pytest.approx(usd.mean(), abs=1e-9)
    assert mean["ci"][0] < usd.mean() < mean["ci"][1]
    assert rows[("usd", "p95", None)]["value"] == pytest.approx(float(np.quantile(usd, 0.95)), abs=1e-9)
    assert rows[("usd", "mean", "lang=de")]["n"] == N // 3
    assert rows[("rerank_ms", "mean", None)]["ci"] == [30.5, 30.5]  # every query the same: no spread
    # the named keys first, then the others as logged
    assert [k for k, s, seg in rows if s == "mean" and seg is None] == ["tokens_in", "tokens_out", "usd", "rerank_ms",
                                                                          "gpu_ms"]
    assert main(["evaluate", "--gold", str(gold), "--run", str(base), "--markdown"]) == 0
    md = capsys.readouterr().out
    assert "### Cost per query" in md and "| usd | all queries | 300 | $0.00" in md


def test_a_run_without_cost_has_no_cost_section(files, tmp_path, capsys):
    gold, *_ = files
    run = write_jsonl(tmp_path / "plain.jsonl", _records(cost=False))
    assert main(["evaluate", "--gold", str(gold), "--run", str(run), "--json"]) == 0
    assert "cost" not in json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("value, field, what", [
    ({"usd": -0.1}, "cost.usd", "must be a number >= 0; got -0.1"),
    ({"usd": "0.1"}, "cost.usd", "must be a number; got '0.1'"),
    ({"tokens_in": True}, "cost.tokens_in", "must be a number; got True"),
    ({"gpu_ms": [1]}, "cost.gpu_ms", "must be a number; got [1]"),
    (0.002, "cost", "must be an object of numbers; got 0.002"),
])
def test_a_bad_cost_names_file_line_and_field(files, tmp_path, capsys, value, field, what):
    gold, *_ = files
    records = _records()
    records[4]["cost"] = value
    run = write_jsonl(tmp_path / "bad.jsonl", records)
    assert main(["evaluate", "--gold", str(gold), "--run", str(run)]) == 2
    err = capsys.readouterr().err
    assert f"bad.jsonl:5: field '{field}'" in err and what in err


def test_a_bad_cost_in_a_large_run_read_by_the_fast_path(tmp_path, monkeypatch):
    """A run the compiled scanner reads (in blocks) is refused with the line too: the whole read names it."""
    import rankgate.io.jsonl_fast as fast
    from rankgate import evaluate

    monkeypatch.setattr(fast, "MIN_BYTES", 0, raising=False)
    gold = write_jsonl(tmp_path / "gold.jsonl", [{"query_id": f"q{i}", "relevant": {f"d{i}": 1}} for i in range(N)])
    records = _records()
    records[250]["cost"]["usd"] = -1
    run = write_jsonl(tmp_path / "run.jsonl", records)
    with pytest.raises(InputError, match=r"run.jsonl:251: field 'cost.usd' must be a number >= 0"):
        evaluate(str(gold), str(run))


def test_cost_gate_fails_on_a_clear_regression_and_passes_on_noise(files, tmp_path, capsys):
    gold, base, worse, noise, ship = files
    argv = ["gate", "--config", str(ship), "--gold", str(gold), "--baseline", str(base)]
    assert main([*argv, "--candidate", str(worse), "--comment", str(tmp_path / "c.md"),
                 "--json-out", str(tmp_path / "g.json")]) == 1
    terminal = capsys.readouterr().out
    assert "cost_usd" in terminal and "(owner: platform-team)" in terminal
    assert "Cost gate cost usd failed: mean usd per query grew by +$0.000" in terminal
    outcome = json.loads((tmp_path / "g.json").read_text())
    [gate] = outcome["cost"]
    assert gate["status"] == "fail" and gate["owner"] == "platform-team"
    failed = [c for c in gate["checks"] if c["status"] == "fail"]
    assert {(c["kind"], c["stat"]) for c in failed} == {("regression", "mean"), ("regression", "p95")}
    assert all(c["ci_low"] > 0 for c in failed)  # the paired interval excludes zero
    assert all(c["status"] == "pass" for c in gate["checks"] if c["kind"] == "max")  # under the ceilings
    comment = (tmp_path / "c.md").read_text()
    assert "### Cost gates" in comment and "fail (owner: platform-team)" in comment
    assert "Retrieval gate failed: 1 of 2 blocking gates" in comment

    assert main([*argv, "--candidate", str(noise), "--json-out", str(tmp_path / "n.json")]) == 0
    capsys.readouterr()
    [gate] = json.loads((tmp_path / "n.json").read_text())["cost"]
    assert gate["status"] == "pass"
    assert all(c["status"] == "pass" for c in gate["checks"])


def test_cost_ceiling_is_decided_on_the_lower_bound(files, tmp_path, capsys):
    """A mean whose interval straddles the ceiling passes with a note (on: ci_lower), fails under on: estimate."""
    gold, base, *_ = files
    mean = float(np.mean([r["cost"]["usd"] for r in _records()]))
    for on, code in (("ci_lower", 0), ("estimate", 1)):
        ship = tmp_path / f"{on}.yaml"
        ship.write_text(f"gates:\n  - metric: recall@5\n    threshold: 0.5\ncost:\n  - key: usd\n"
                        f"    mean_max: {mean * 0.995!r}\n    on: {on}\n    owner: finops\n")
        assert main(["gate", "--config", str(ship), "--gold", str(gold), "--candidate", str(base),
                     "--json-out", str(tmp_path / f"{on}.json")]) == code
        capsys.readouterr()
        [check] = json.loads((tmp_path / f"{on}.json").read_text())["cost"][0]["checks"]
        assert check["status"] == ("pass" if code == 0 else "fail")
        if code == 0:
            assert "but within noise" in check["note"]


def test_cost_gate_config_errors(files, tmp_path, capsys):
    gold, base, *_ = files
    for body, message in (("cost:\n  - mean_max: 1\n", "cost[0].key"),
                          ("cost:\n  - key: usd\n", "checks nothing for cost key 'usd'"),
                          ("cost:\n  - key: usd\n    mean_max: -1\n", "must be a number >= 0"),
                          ("cost:\n  - key: usd\n    mean_max: 1\n    colour: red\n", "colour")):
        ship = tmp_path / "bad.yaml"
        ship.write_text("gates:\n  - metric: recall@5\n    threshold: 0.5\n" + body)
        assert main(["gate", "--config", str(ship), "--gold", str(gold), "--candidate", str(base)]) == 2
        assert message in capsys.readouterr().err


def test_a_cost_key_the_run_does_not_log_warns(files, tmp_path, capsys):
    gold, base, *_ = files
    ship = tmp_path / "ship.yaml"
    ship.write_text("gates:\n  - metric: recall@5\n    threshold: 0.5\ncost:\n  - key: embed_ms\n    mean_max: 5\n")
    assert main(["gate", "--config", str(ship), "--gold", str(gold), "--candidate", str(base),
                 "--json-out", str(tmp_path / "g.json")]) == 0
    capsys.readouterr()
    [gate] = json.loads((tmp_path / "g.json").read_text())["cost"]
    assert gate["status"] == "warn" and "logs no cost.embed_ms" in gate["checks"][0]["note"]


def test_report_shows_cost(files, tmp_path, capsys):
    gold, base, *_ = files
    assert main(["report", "--gold", str(gold), "--run", str(base), "--out", str(tmp_path / "rep.html")]) == 0
    capsys.readouterr()
    page = (tmp_path / "rep.html").read_text()
    assert 'id="cost"' in page and "Cost per query" in page and "$0.00" in page


# -- the judge's spend, beside its dry-run estimate ---------------------------------------------------
def test_judge_relevance_records_spend_beside_the_estimate(tmp_path, capsys):
    queue = write_jsonl(tmp_path / "queue.jsonl", [{"query_id": f"q{i}", "id": f"c{i}", "query": "what is x",
                                                    "text": "x is a thing"} for i in range(4)])
    fake = FakeOpenAI().start()
    try:
        argv = ["judge", "relevance", str(queue), "--judge", "openai", "--judge-url", fake.url, "--judge-model", "m",
                "--cache", str(tmp_path / "c"), "--price-in", "1", "--price-out", "10"]
        assert main([*argv, "-o", str(tmp_path / "l.jsonl")]) == 0
        err = capsys.readouterr().err
        spend = json.loads((tmp_path / "l.judge.json").read_text())["spend"]
        assert spend["calls_sent"] == 4 == fake.count
        assert spend["tokens"] == {"prompt": 40, "completion": 12}  # what the fake server reported
        assert spend["usd"] == pytest.approx((40 * 1 + 12 * 10) / 1e6)
        assert spend["estimate"]["tokens_in"] > 0 and spend["estimate"]["usd"] > 0
        assert "judge spend:" in err and "the dry run's estimate" in err
        assert main([*argv, "-o", str(tmp_path / "l2.jsonl")]) == 0  # from the cache: nothing sent, nothing spent
        capsys.readouterr()
        again = json.loads((tmp_path / "l2.judge.json").read_text())["spend"]
        assert again["calls_sent"] == 0 and again["usd"] == 0 and again["estimate"]["usd"] == 0
    finally:
        fake.stop()


def test_answers_records_spend_only_when_priced(tmp_path, capsys):
    gold = write_jsonl(tmp_path / "gold.jsonl", [{"query_id": "q1", "query": "What is the capital of France?",
                                                  "relevant_chunks": ["c1"]}])
    answers = write_jsonl(tmp_path / "answers.jsonl", [{"query_id": "q1", "answer": "Paris is the capital.",
                                                        "contexts": [{"id": "c1", "text": "Paris is the capital."}]}])
    fake = FakeOpenAI().start()
    try:
        argv = ["answers", "--answers", str(answers), "--gold", str(gold), "--judge", "openai", "--judge-url", fake.url,
                "--judge-model", "m", "--no-cache"]
        assert main([*argv, "--json"]) == 0
        assert "spend" not in json.loads(capsys.readouterr().out)["answers"]["judge"]
        sent = fake.count
        assert main([*argv, "--json", "--price-in", "2", "--price-out", "8"]) == 0
        spend = json.loads(capsys.readouterr().out)["answers"]["judge"]["spend"]
        assert spend["calls_sent"] == fake.count - sent > 0
        assert spend["tokens"] == {"prompt": 10 * spend["calls_sent"], "completion": 3 * spend["calls_sent"]}
        assert spend["usd"] == pytest.approx((spend["tokens"]["prompt"] * 2 + spend["tokens"]["completion"] * 8) / 1e6)
        assert spend["estimate"]["tokens_in"] > 0 and spend["prices_per_1m_tokens"] == {"in": 2.0, "out": 8.0}
    finally:
        fake.stop()


def test_the_compiled_scanner_reads_cost_and_conversations_as_the_parser_does(tmp_path):
    """Runs with a cost object and a conversation id keep the JSONL fast path (issue 37): the compiled scanner takes
    them (it does not decline), with the parser's values."""
    from rankgate._native import reader
    from rankgate.io import jsonl_fast
    from rankgate.io.jsonl import parse_run_records

    if reader is None:
        pytest.skip("compiled reader not built")
    records = [{**r, "conversation_id": f"c{i // 3}"} for i, r in enumerate(_records())]
    path = str(write_jsonl(tmp_path / "run.jsonl", records))
    found = jsonl_fast._opened(path, 0)
    try:
        scanned = jsonl_fast._scan_run(found, path)
    finally:
        found.close()
    assert scanned is not None
    parsed = parse_run_records(enumerate(records, start=1), path)
    assert scanned.fields["cost"] == parsed.fields["cost"] and scanned.fields["cost"][0]["gpu_ms"] == 2
    assert scanned.fields["conversation_id"] == parsed.fields["conversation_id"]


# -- the compiled scanner's cost columns against the parser, conversations, metrics.csv ---------------------------
def _both(path, monkeypatch):
    """``load_run`` of ``path`` with the fast path forced on and off."""
    import rankgate.io.jsonl_fast as fast
    from rankgate.io.load import load_run

    out = []
    for threshold in (0, 1 << 62):
        monkeypatch.setattr(fast, "MIN_BYTES", threshold)
        out.append(load_run(str(path)))
    return out


def _evaluated(gold, path, monkeypatch, threshold):
    """What ``evaluate`` gives a user for ``path``: the cost rows and metrics.csv, or the error."""
    import rankgate.io.jsonl_fast as fast
    from rankgate.experiments.cost import cost_summary
    from rankgate.render.exports import metrics_csv
    from rankgate.stats.options import Statistics
    from rankgate import evaluate

    monkeypatch.setattr(fast, "MIN_BYTES", threshold)
    try:
        result = evaluate(str(gold), str(path))
    except InputError as exc:
        return ("error", str(exc))
    return ("ok", cost_summary(result, by=["lang"], statistics=Statistics(resamples=200)).to_dict(), metrics_csv(result))


COSTED_VARIANTS = {  # line 5's cost (None: as the others), and whether the scanner's columns take the run
    "as the others": (None, True),
    "a key left out": ({"tokens_in": 10, "usd": 0.5}, True),
    "an unknown key": ({"tokens_in": 10, "usd": 0.5, "gpu_ms": 3.25}, True),
    "a whole number in a key of decimals": ({"tokens_in": 10, "usd": 1, "rerank_ms": 30.5, "gpu_ms": 2}, True),
    "an empty object": ({}, True),
    "keys in another order": ({"usd": 0.25, "gpu_ms": 1, "tokens_in": 7, "tokens_out": 3, "rerank_ms": 0.0}, True),
    "no cost on that line": ("drop", True),
    "a null key": ({"usd": None}, False),
    "a null cost": ("null", False),
    "a negative": ({"usd": -0.1}, False),
    "a string": ({"usd": "0.1"}, False),
    "a boolean": ({"tokens_in": True}, False),
    "a list": ({"gpu_ms": [1]}, False),
    "a nested object": ({"gpu_ms": {"a": 1}}, False),
    "not an object": (0.002, False),
    "too large a number": ("1e400", False),
    "an integer beyond 2**53": ("9007199254740993", False),
    "an escaped key": ("escaped", False),
}


@pytest.mark.parametrize("variant", list(COSTED_VARIANTS))
def test_the_scanners_cost_columns_give_what_the_parser_gives(variant, tmp_path, monkeypatch):
    """The compiled scanner decodes a run's cost objects as columns (pyarrow, checked column by column) where that
    is proven the same as the parser's reading, and otherwise each value as the parser does: a user sees the same
    cost rows, metrics.csv and errors (file, line, field) either way."""
    from rankgate._native import reader
    from rankgate.model.costs import CostColumn

    if reader is None:
        pytest.skip("compiled reader not built")
    gold = write_jsonl(tmp_path / "gold.jsonl", [{"query_id": f"q{i}", "relevant": {f"d{i}": 1},
                                                  "lang": ("en", "de")[i % 2]} for i in range(N)])
    records = [{**r, "conversation_id": f"c{i // 3}"} for i, r in enumerate(_records())]
    value, columns = COSTED_VARIANTS[variant]
    lines = [json.dumps(r) for r in records]
    if value == "drop":
        del records[4]["cost"]
    elif value == "null":
        records[4]["cost"] = None
    elif value in ("1e400", "9007199254740993"):
        lines[4] = lines[4].replace('"usd": ', f'"usd": {value}, "was": ')
    elif value == "escaped":
        lines[4] = lines[4].replace('"usd"', '"\\u0075sd"')
    elif value is not None:
        records[4]["cost"] = value
    if value not in ("1e400", "9007199254740993", "escaped"):
        lines = [json.dumps(r) for r in records]
    path = tmp_path / "run.jsonl"
    path.write_text("\n".join(lines) + "\n")
    fast_run, slow_run = _both(path, monkeypatch)
    assert isinstance(fast_run.fields["cost"], CostColumn) is columns  # (the columns' path, or not: not vacuous)
    assert not isinstance(slow_run.fields["cost"], CostColumn)
    assert fast_run.fields["cost"] == slow_run.fields["cost"]
    assert fast_run.fields["conversation_id"] == slow_run.fields["conversation_id"]
    fast, slow = _evaluated(gold, path, monkeypatch, 0), _evaluated(gold, path, monkeypatch, 1 << 62)
    assert fast == slow
    if variant in ("a negative", "a string", "a boolean", "a list", "a nested object", "not an object",
                   "too large a number"):
        assert fast[0] == "error" and "run.jsonl:5: field 'cost" in fast[1]
    else:
        assert fast[0] == "ok" and "cost.usd" in fast[2].splitlines()[0]


def test_metrics_csv_gives_a_column_per_cost_key(files, tmp_path):
    gold, base, *_ = files
    out = tmp_path / "out"
    assert main(["evaluate", "--gold", str(gold), "--run", str(base), "--out", str(out)]) == 0
    rows = (out / "metrics.csv").read_text().splitlines()
    header = rows[0].split(",")
    cost_cols = [h for h in header if h.startswith("cost.")]
    assert cost_cols == ["cost.tokens_in", "cost.tokens_out", "cost.usd", "cost.rerank_ms", "cost.gpu_ms"]
    first = dict(zip(header, rows[1].split(",")))
    record = _records()[0]["cost"]
    assert float(first["cost.usd"]) == record["usd"] and first["cost.gpu_ms"] == "2.0"
    plain = write_jsonl(tmp_path / "plain.jsonl", _records(cost=False))
    assert main(["evaluate", "--gold", str(gold), "--run", str(plain), "--out", str(tmp_path / "o2")]) == 0
    assert "cost." not in (tmp_path / "o2" / "metrics.csv").read_text()


def test_cost_intervals_resample_conversations(tmp_path):
    """A constructed case whose answer is known by hand: 20 conversations of two identical turns, costs 1..20.
    The mean's interval is the bootstrap of the 20 conversations' values (each drawn with both its turns: the
    sums and counts double, the means do not), wider than the per-turn interval that takes 40 independent
    values; the p95's is Woodruff's, worked out below."""
    from rankgate import evaluate
    from rankgate.experiments.cost import cost_summary, woodruff_p95_ci
    from rankgate.stats.bootstrap import bootstrap_ci, exact_quantile_ci

    K = 20
    gold = write_jsonl(tmp_path / "gold.jsonl", [{"query_id": f"q{i}", "relevant": {f"d{i}": 1}} for i in range(2 * K)])
    records = [{"query_id": f"q{i}", "topk": [{"chunk_id": f"d{i}", "score": 1.0}], "conversation_id": f"c{i // 2}",
                "cost": {"usd": float(i // 2 + 1)}} for i in range(2 * K)]
    run = write_jsonl(tmp_path / "run.jsonl", records)
    summary = cost_summary(evaluate(str(gold), str(run)))
    mean, p95 = summary.get("usd", "mean"), summary.get("usd", "p95")
    assert summary.conversations and "conversations as the unit" in summary.to_dict()["method"]
    per_conversation = np.arange(1.0, K + 1)
    assert mean.ci == bootstrap_ci(per_conversation, rng=0, resamples=2000, confidence=0.95)
    naive = bootstrap_ci(np.repeat(per_conversation, 2), rng=0, resamples=2000, confidence=0.95)
    assert mean.ci[1] - mean.ci[0] > naive[1] - naive[0]
    # p95 by hand: sorted 1,1,2,2,…,20,20 (n = 40); numpy's p95 at 0.95·39 = 37.05 is 19.05; 38 values are at or
    # below it (share p = 0.95); per conversation S_c − p·N_c is 2 − 1.9 = 0.1 (19 of them) and 0 − 1.9 (the
    # last): Σ = 19·0.01 + 3.61 = 3.8, so the share's standard error is √3.8 / 40 = 0.04873 and its interval
    # 0.95 ∓ 1.96·0.04873 = [0.8545, 1.0455]: ranks ceil(40·0.8545) = 35 and ceil(40·1.0455) = 42 → 40, the
    # values 18 and 20.
    assert p95.value == pytest.approx(19.05) and p95.ci == (18.0, 20.0)
    x = np.repeat(per_conversation, 2)
    assert woodruff_p95_ci(x, np.repeat(np.arange(K), 2), 0.95) == (18.0, 20.0)
    # one turn per conversation: the exact interval of the order statistic, as without conversation ids
    singles = [{**r, "conversation_id": f"s{i}"} for i, r in enumerate(records)]
    alone = cost_summary(evaluate(str(gold), str(write_jsonl(tmp_path / "singles.jsonl", singles))))
    assert not alone.conversations and alone.get("usd", "p95").ci == exact_quantile_ci(x, 0.95)


@pytest.mark.parametrize("native", ["auto", "off"])
def test_a_run_naming_too_many_cost_keys_is_refused_at_the_line_of_the_first_over_the_limit(tmp_path, capsys,
                                                                                            monkeypatch, native):
    """Each key is a column, a summary row and a gate's subject: a run writing a new key per query (an id as a
    key) is refused at the line of the 65th key, the same with and without the compiled scanner."""
    from rankgate.io.cost import MAX_COST_KEYS

    monkeypatch.setenv("RANKGATE_NATIVE", native)
    gold = tmp_path / "gold.jsonl"
    run = tmp_path / "run.jsonl"
    n = MAX_COST_KEYS + 10
    gold.write_text("".join(json.dumps({"query_id": f"q{i}", "relevant_chunks": [{"chunk_id": "a", "grade": 1}]}) + "\n"
                            for i in range(n)), encoding="utf-8")
    run.write_text("".join(json.dumps({"query_id": f"q{i}", "topk": [{"chunk_id": "a", "score": 1.0}],
                                       "cost": {"usd": 0.1, f"k{i}": 1.0}}) + "\n" for i in range(n)), encoding="utf-8")
    assert main(["evaluate", "--gold", str(gold), "--run", str(run)]) == 2
    err = capsys.readouterr().err
    assert f"run.jsonl:{MAX_COST_KEYS}: field 'cost.k{MAX_COST_KEYS - 1}' is the {MAX_COST_KEYS + 1}th distinct cost key" in err


def test_an_integer_beyond_the_float_range_is_refused_not_an_internal_error(tmp_path, capsys):
    """1e400 written out as an integer: json keeps it exact, the summaries would fail converting it."""
    gold = tmp_path / "gold.jsonl"
    run = tmp_path / "run.jsonl"
    gold.write_text(json.dumps({"query_id": "q0", "relevant_chunks": [{"chunk_id": "a", "grade": 1}]}) + "\n",
                    encoding="utf-8")
    run.write_text(json.dumps({"query_id": "q0", "topk": [{"chunk_id": "a", "score": 1.0}],
                               "cost": {"usd": 0.1, "tokens_in": 10**400}}) + "\n", encoding="utf-8")
    assert main(["evaluate", "--gold", str(gold), "--run", str(run), "--out", str(tmp_path / "out")]) == 2
    assert "run.jsonl:1: field 'cost.tokens_in' must be a finite number; got 1000" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
