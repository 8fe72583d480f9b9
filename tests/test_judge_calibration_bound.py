"""Judge calibrations bound to the judge and to time (issue 35, part 3).

A judge gate refuses a calibration made with another model or prompt than the judge whose labels it gates, one
older than ``judge.max_age_days``, and one that does not record its judge, label set or date (exit 2, the
reason and how to recalibrate); a fresh matching one passes. ``rankgate judge recalibrate`` samples fresh items
(stratified, from answers or recent traces), ``rankgate judge drift`` compares two calibrations, and
``judge calibrate`` names what is missing instead of printing "calibration of None".
"""

from __future__ import annotations

import datetime as dt
import json
import math
from pathlib import Path

import pytest

from rankgate.cli.main import main
from rankgate.errors import ConfigError

from .helpers import write_jsonl

DEMO = Path(__file__).resolve().parents[1] / "src" / "rankgate" / "demo" / "data"
NOW = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.timezone.utc)
LEXICAL = {"backend": "lexical", "model": "lexical (token overlap baseline)", "version": "1"}


def _openai(model: str = "gpt-4o-mini", support: str = "support@1 sha256:" + "9c" * 32) -> dict:
    return {"backend": "openai", "model": model, "url": "http://judge.local/v1",
            "prompts": {"statements": "statements@1 sha256:" + "11" * 32, "support": support,
                        "context_relevance": "context_relevance@1 sha256:" + "22" * 32}}


def _cal(path: Path, *, judge=LEXICAL, made: str | None = "2026-02-20T00:00:00Z", labels: bool = True,
         task: str = "faithfulness", n: int = 140, agreement: float = 0.9) -> Path:
    body: dict = {"task": task, "n": n, "agreement": agreement, "sensitivity": 0.9, "specificity": 0.85}
    if judge is not None:
        body["judge"] = judge
    if labels:
        body["human_labels"] = {"sha256": "sha256:" + "ab" * 32, "items": n}
    if made is not None:
        body["made"] = made
    path.write_text(json.dumps({"calibration": body}), encoding="utf-8")
    return path


def _config(tmp_path: Path, extra: str = "", threshold: float = 0.1) -> Path:
    cfg = tmp_path / "ship.yaml"
    cfg.write_text(f"{extra}gates:\n  - metric: faithfulness\n    threshold: {threshold}\n    calibration: cal.json\n",
                   encoding="utf-8")
    return cfg


def _load(cfg: Path, now: dt.datetime = NOW):
    from rankgate.gating.config import load_config

    return load_config(str(cfg), now=now)


# -- age and what binds a calibration: refused where the ship criteria are read ------------------------------
def test_a_calibration_past_its_age_is_refused_with_its_age_and_the_limit(tmp_path):
    _cal(tmp_path / "cal.json", made="2025-11-01T12:00:00Z")  # 120 days before NOW
    with pytest.raises(ConfigError) as info:
        _load(_config(tmp_path))
    text = str(info.value)
    assert "ship.yaml:4" in text and "gates[0].calibration" in text
    assert "made 120 days ago (2025-11-01T12:00:00Z), limit 90" in text
    assert "rankgate judge recalibrate" in text and "--calibration-out" in text  # how to make a new one
    # the limit is the ship criteria's: 150 days lets the same file through; 119 does not
    assert _load(_config(tmp_path, "judge: {max_age_days: 150}\n")).gates[0].calibration["made"] == "2025-11-01T12:00:00Z"
    with pytest.raises(ConfigError, match="limit 119"):
        _load(_config(tmp_path, "judge: {max_age_days: 119}\n"))


def test_the_age_is_measured_against_the_gates_clock(tmp_path, monkeypatch):
    import rankgate.gating.config as config

    _cal(tmp_path / "cal.json", made="2026-02-20T00:00:00Z")
    cfg = _config(tmp_path)
    monkeypatch.setattr(config, "clock", lambda: NOW)
    assert config.load_config(str(cfg)).gates[0].calibration["made"] == "2026-02-20T00:00:00Z"  # 9.5 days: fresh
    monkeypatch.setattr(config, "clock", lambda: NOW + dt.timedelta(days=85))
    with pytest.raises(ConfigError, match="made 94 days ago"):
        config.load_config(str(cfg))
    monkeypatch.setattr(config, "clock", lambda: dt.datetime(2026, 2, 1, tzinfo=dt.timezone.utc))
    with pytest.raises(ConfigError, match="after the gate's clock"):  # dated in the future
        config.load_config(str(cfg))


@pytest.mark.parametrize("missing, said", [
    ({"judge": None}, "the judge's identity"),
    ({"labels": False}, "the hash of its human labels"),
    ({"made": None}, "its date"),
    ({"judge": None, "labels": False, "made": None}, "the judge's identity, the hash of its human labels or its date"),
])
def test_a_calibration_without_its_binding_is_refused_naming_judge_recalibrate(tmp_path, missing, said):
    _cal(tmp_path / "cal.json", **missing)
    with pytest.raises(ConfigError) as info:
        _load(_config(tmp_path))
    text = str(info.value)
    assert f"does not record {said}:" in text and "rankgate judge recalibrate" in text


@pytest.mark.parametrize("key, value, words", [
    ("made", "last tuesday", "calibration.made"),
    ("human_labels", {"sha256": "ab", "items": 3}, "calibration.human_labels.sha256"),
    ("judge", "gpt-4o", "calibration.judge"),
    ("max_age_days", 0, "judge.max_age_days"),
])
def test_malformed_binding_and_limit_name_their_field(tmp_path, key, value, words):
    cal = _cal(tmp_path / "cal.json")
    extra = ""
    if key == "max_age_days":
        extra = f"judge: {{max_age_days: {value}}}\n"
    else:
        body = json.loads(cal.read_text())
        body["calibration"][key] = value
        cal.write_text(json.dumps(body))
    with pytest.raises(ConfigError, match=words.replace(".", r"\.")):
        _load(_config(tmp_path, extra))


# -- the judge in use: refused before any judge call --------------------------------------------------------
def test_identity_problem_names_model_and_prompt_versions():
    from rankgate.gating.calibration import identity_problem

    assert identity_problem(_openai(), _openai(), "support") is None
    assert identity_problem(_openai(), dict(_openai(), url="http://elsewhere/v1"), "support") is None  # the URL is not the judge
    said = identity_problem(_openai("gpt-4o-mini"), _openai("gpt-4.1-mini"), "support")
    assert said == "model gpt-4o-mini (calibration) vs gpt-4.1-mini (judge in use)"
    said = identity_problem(_openai(), _openai(support="support@2 sha256:" + "44" * 32), "support")
    assert said == ("prompt support@1 sha256:9c9c9c9c9c9c… (calibration) vs support@2 sha256:444444444444… "
                    "(judge in use)")
    # a prompt the metric's labels do not come from does not matter
    other = _openai()
    other["prompts"] = dict(other["prompts"], context_relevance="context_relevance@9 sha256:" + "33" * 32)
    assert identity_problem(_openai(), other, "support") is None
    assert identity_problem(_openai(), other, "context_relevance").startswith("prompt context_relevance@1")


def test_check_judge_refuses_a_gate_calibrated_on_another_prompt(tmp_path):
    from rankgate.gating.calibration import check_judge

    _cal(tmp_path / "cal.json", judge=_openai())
    config = _load(_config(tmp_path))
    check_judge(config, _openai())  # the same judge: nothing to say
    with pytest.raises(ConfigError) as info:
        check_judge(config, _openai(support="support@2 sha256:" + "44" * 32))
    text = str(info.value)
    assert "ship.yaml:4" in text and "gates[0].calibration" in text and "support@2" in text
    assert "rankgate judge recalibrate" in text


def _answers_argv(cfg: Path) -> list[str]:
    return ["answers", "--answers", str(DEMO / "answers.jsonl"), "--gold", str(DEMO / "gold.jsonl"), "--corpus",
            str(DEMO / "corpus.jsonl"), "--no-cache", "--resamples", "0", "--config", str(cfg)]


def test_cli_gate_refuses_another_model_and_passes_a_fresh_match(tmp_path, capsys, monkeypatch):
    import rankgate.gating.config as config

    monkeypatch.setattr(config, "clock", lambda: NOW)
    cfg = _config(tmp_path)
    _cal(tmp_path / "cal.json", judge=_openai("gpt-4o-mini"))
    assert main(_answers_argv(cfg)) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "model gpt-4o-mini (calibration) vs lexical (token overlap baseline) (judge in use)" in err
    assert "rankgate judge recalibrate" in err and err.rstrip().endswith("(docs/judges.md))")  # the whole line fits
    _cal(tmp_path / "cal.json", judge=LEXICAL, made="2025-10-01T00:00:00Z")
    assert main(_answers_argv(cfg)) == 2
    assert "made 151 days ago" in " ".join(capsys.readouterr().err.split())
    _cal(tmp_path / "cal.json", judge=LEXICAL)  # fresh, of the judge in use
    assert main(_answers_argv(cfg)) == 0
    capsys.readouterr()


def test_answers_calibration_out_is_bound_and_feeds_a_gate(tmp_path, capsys, monkeypatch):
    """The file ``answers --calibration-out`` writes carries what the gate checks, so it passes as written."""
    import rankgate.gating.config as config

    cal = tmp_path / "cal.json"
    base = ["answers", "--answers", str(DEMO / "answers.jsonl"), "--gold", str(DEMO / "gold.jsonl"), "--corpus",
            str(DEMO / "corpus.jsonl"), "--no-cache", "--resamples", "50"]
    assert main(base + ["--human", str(DEMO / "answer-labels.jsonl"), "--calibration-out", str(cal), "--when",
                        "2026-02-27", "--json"]) == 0
    body = json.loads(cal.read_text())["calibration"]
    assert body["made"] == "2026-02-27T00:00:00Z" and body["made_from"] == "given"
    assert body["judge"]["model"] == LEXICAL["model"] and body["human_labels"]["items"] == body["n"] == 23
    from rankgate.stats.calibration import label_set_sha256

    labels = [json.loads(line) for line in (DEMO / "answer-labels.jsonl").read_text().splitlines()]
    assert body["human_labels"]["sha256"] == label_set_sha256(
        (r["query_id"], "answer", int(r["faithful"])) for r in labels if r["faithful"] is not None)
    monkeypatch.setattr(config, "clock", lambda: NOW)
    cfg = _config(tmp_path, "judge: {min_calibration_items: 20, min_agreement: 0.7}\n")
    capsys.readouterr()
    assert main(base + ["--config", str(cfg)]) == 0
    capsys.readouterr()
    assert main(base + ["--when", "2026-02-27"]) == 2  # --when dates a calibration: it needs --calibration-out
    assert "--when goes with --calibration-out" in capsys.readouterr().err


# -- judge calibrate: the binding, the date's source, and no "calibration of None" -------------------------
def _relevance_files(tmp_path: Path, *, sidecar: bool, times: bool = False) -> tuple[Path, Path]:
    items = [("q1", "a", 2, 2), ("q1", "b", 0, 0), ("q2", "c", 1, 2), ("q2", "d", 0, 1)]
    judge = write_jsonl(tmp_path / "labels.jsonl", [{"query_id": q, "id": d, "grade": g} for q, d, _, g in items])
    human = write_jsonl(tmp_path / "human.jsonl", [
        dict({"query_id": q, "id": d, "grade": h},
             **({"provenance": {"annotator": "ann", "time": f"2026-01-0{i + 1}T08:00:00Z"}} if times else {}))
        for i, (q, d, h, _) in enumerate(items)])
    if sidecar:
        (tmp_path / "labels.judge.json").write_text(json.dumps({"judge": _openai()}))
    return human, judge


def test_calibrate_without_judge_identity_names_what_is_missing(tmp_path, capsys):
    human, judge = _relevance_files(tmp_path, sidecar=False)
    out = tmp_path / "cal.json"
    assert main(["judge", "calibrate", "--human", str(human), "--judge-labels", str(judge), "-o", str(out),
                 "--when", "2026-02-01"]) == 0
    text = capsys.readouterr().out
    assert "None" not in text
    assert "calibration of a judge of unknown identity (the judge labels have no <name>.judge.json beside them" in text
    assert "a judge gate refuses this calibration until the judge is named" in text
    assert json.loads(out.read_text())["calibration"]["judge"] is None


def test_calibrate_binds_the_judge_the_label_set_and_the_date(tmp_path, capsys):
    from rankgate.stats.calibration import label_set_sha256

    human, judge = _relevance_files(tmp_path, sidecar=True, times=True)
    out = tmp_path / "cal.json"
    assert main(["judge", "calibrate", "--human", str(human), "--judge-labels", str(judge), "-o", str(out)]) == 0
    text = capsys.readouterr().out
    cal = json.loads(out.read_text())["calibration"]
    assert cal["judge"] == _openai() and "openai-compatible model gpt-4o-mini" in text
    assert cal["made"] == "2026-01-04T08:00:00Z" and cal["made_from"] == "labels"  # the newest label's time
    # the canonical hash: the sorted [query_id, id, grade] lines, whatever the file's order or spacing
    assert cal["human_labels"] == {"items": 4, "sha256": label_set_sha256(
        [("q2", "d", 0), ("q1", "a", 2), ("q2", "c", 1), ("q1", "b", 0)])}
    import hashlib

    canonical = '["q1","a",2]\n["q1","b",0]\n["q2","c",1]\n["q2","d",0]'
    assert cal["human_labels"]["sha256"] == "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()
    assert f"bound to     4 human labels sha256:{cal['human_labels']['sha256'][7:19]}…, made 2026-01-04T08:00:00Z " \
           "(the newest label's time)" in text
    assert main(["judge", "calibrate", "--human", str(human), "--judge-labels", str(judge), "-o", str(out),
                 "--when", "2026-02-03T10:00:00+02:00"]) == 0
    cal = json.loads(out.read_text())["calibration"]
    assert (cal["made"], cal["made_from"]) == ("2026-02-03T08:00:00Z", "given")  # given wins, written in UTC
    capsys.readouterr()
    assert main(["judge", "calibrate", "--human", str(human), "--judge-labels", str(judge), "--when", "soon"]) == 2
    assert "--when must be an ISO 8601 time or date" in capsys.readouterr().err


# -- recalibrate: stratified, deterministic, from answers and from traces -----------------------------------
def _answers_and_gold(tmp_path: Path) -> tuple[Path, Path]:
    langs = ["en"] * 6 + ["de"] * 3 + ["fr"]
    gold = write_jsonl(tmp_path / "gold.jsonl", [
        {"query_id": f"q{i}", "query": f"question {i}", "relevant_chunks": [{"chunk_id": f"c{i}", "grade": 1}],
         "tags": {"lang": lang}} for i, lang in enumerate(langs)])
    answers = write_jsonl(tmp_path / "answers.jsonl", [
        {"query_id": f"q{i}", "answer": f"answer {i}", "contexts": [{"id": f"c{i}", "text": f"chunk text {i}"}],
         **({"reference": "ref"} if i == 0 else {})} for i in range(len(langs))])
    return answers, gold


def test_recalibrate_from_answers_keeps_stratum_quotas_and_the_queue_shape(tmp_path, capsys):
    from rankgate.judges.files import read_queue

    answers, gold = _answers_and_gold(tmp_path)
    out = tmp_path / "queue.jsonl"
    argv = ["judge", "recalibrate", "--answers", str(answers), "--gold", str(gold), "--stratify", "lang", "--n", "6",
            "-o", str(out)]
    assert main([*argv, "--seed", "1"]) == 0
    text = capsys.readouterr().out
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    # 10 items: en 6, de 3, fr 1; n = 6: one each, the other 3 by the sizes left (5, 2, 0) with largest remainders:
    # en 1 + floor(15/7) = 3, de 1 + floor(6/7) = 1, then de's remainder .857 > en's .143: de 2; fr 1
    counts = {lang: sum(1 for r in rows if r["segment"]["lang"] == lang) for lang in ("en", "de", "fr")}
    assert counts == {"en": 3, "de": 2, "fr": 1}
    assert "wrote 6 items" in text and "sampled from 10" in text and "en       3 of 6" in text
    assert [q.query_id for q in read_queue(str(out))] == [r["query_id"] for r in rows]  # the pooling queue's shape
    assert rows[0].keys() >= {"query_id", "query", "id", "text", "source", "sample_reason", "segment"}
    assert rows[0]["sample_reason"] == "judge_recalibration" and rows[0]["source"] == "answers.jsonl"
    first = out.read_bytes()
    assert main([*argv, "--seed", "1"]) == 0 and out.read_bytes() == first  # same seed, same bytes
    others = []
    for seed in (2, 3, 4):
        assert main([*argv, "--seed", str(seed)]) == 0
        others.append(out.read_bytes())
    assert any(o != first for o in others)  # another seed draws other items
    capsys.readouterr()


def test_recalibrate_answers_for_faithfulness_feeds_answers_human(tmp_path, capsys):
    from rankgate.answers.score import read_human_verdicts

    answers, gold = _answers_and_gold(tmp_path)
    out = tmp_path / "queue.jsonl"
    assert main(["judge", "recalibrate", "--answers", str(answers), "--task", "faithfulness", "--n", "4", "-o",
                 str(out)]) == 0  # without --gold the answers have no question: nothing to offer, and it says so
    assert "wrote 0 items" in capsys.readouterr().out
    assert main(["judge", "recalibrate", "--answers", str(answers), "--gold", str(gold), "--task", "faithfulness",
                 "--n", "4", "-o", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 4 and all({"query_id", "query", "answer", "contexts"} <= r.keys() for r in rows)
    for r in rows:  # what people add; the queue itself then is the --human file
        r.update(faithful=True, correct=None)
    write_jsonl(tmp_path / "human.jsonl", rows)
    got = read_human_verdicts(str(tmp_path / "human.jsonl"), [f"q{i}" for i in range(10)])
    assert len(got) == 4 and all(v["faithful"] is True for v in got.values())
    assert "add \"faithful\"" in capsys.readouterr().out


def _trace(i: int, *, tenant: str, day: str = "2026-02-27", status: str = "ok") -> dict:
    return {"request_id": f"r{i}", "timestamp": f"{day}T10:00:{i % 60:02d}Z", "query": f"query {i}", "tenant": tenant,
            "status": status, "retrieved": [{"stage": "candidate", "rank": 1, "id": f"x{i}", "source": "s"},
                                            {"stage": "packed", "rank": 1, "id": f"c{i}", "source": "s"},
                                            {"stage": "packed", "rank": 2, "id": f"d{i}", "source": "s"}]}


def test_recalibrate_from_recent_traces(tmp_path, capsys):
    recs = [_trace(i, tenant="big") for i in range(12)] + [_trace(20 + i, tenant="small") for i in range(2)]
    recs += [_trace(40, tenant="big", day="2025-12-01"), _trace(41, tenant="big", status="error")]
    traces = write_jsonl(tmp_path / "traces.jsonl", recs)
    corpus = write_jsonl(tmp_path / "corpus.jsonl", [{"chunk_id": f"{p}{i}", "text": f"text of {p}{i}"}
                                                      for i in [*range(12), 20, 21, 40, 41] for p in "cd"
                                                      if f"{p}{i}" != "d21"])
    out = tmp_path / "queue.jsonl"
    argv = ["judge", "recalibrate", "--traces", str(traces), "--corpus", str(corpus), "--n", "5", "--depth", "2",
            "-o", str(out)]
    assert main(argv) == 0
    text = capsys.readouterr().out
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    # 14 recent usable requests, 2 packed items each, d21 not in the corpus: 24 big + 3 small items
    assert "sampled from 27" in text and "1 not in the corpus" in text and "1 older" in text
    assert "1 failed or without text" in text
    tenants = [r["segment"]["tenant"] for r in rows]
    assert tenants.count("big") == 4 and tenants.count("small") == 1  # 1 each, then 3 by (23, 2): 3 to big
    assert all(r["id"][0] in "cd" and r["source"] == "production_log" and r["query_id"].startswith("prod-r")
               for r in rows)  # the packed items, never the candidates the model did not read
    assert all(r["request_id"] not in ("r40", "r41") for r in rows)
    first = out.read_bytes()
    assert main(argv) == 0 and out.read_bytes() == first
    capsys.readouterr()
    assert main(["judge", "recalibrate", "--traces", str(traces), "--n", "5", "-o", str(out)]) == 2
    assert "--traces needs --corpus" in capsys.readouterr().err


@pytest.mark.parametrize("n, sizes, quotas", [
    (5, {"a": 6, "b": 3, "c": 1}, {"a": 2, "b": 2, "c": 1}),
    (2, {"a": 6, "b": 3, "c": 1}, {"a": 1, "b": 1, "c": 0}),  # fewer than the strata: by size alone
    (20, {"a": 6, "b": 3, "c": 1}, {"a": 6, "b": 3, "c": 1}),  # more than there are: all of them
    (4, {"a": 2, "b": 2}, {"a": 2, "b": 2}),
])
def test_stratified_quotas_by_hand(n, sizes, quotas):
    from rankgate.stats.calibration import stratified_sample

    strata = [(k,) for k, size in sizes.items() for _ in range(size)]
    picked, got = stratified_sample(strata, n, seed=0)
    assert {k[0]: q for k, (_, q) in got.items()} == quotas
    assert len(picked) == len(set(picked)) == sum(quotas.values())
    assert sorted(strata[i][0] for i in picked) == sorted(k for k, q in quotas.items() for _ in range(q))


# -- drift -------------------------------------------------------------------------------------------------------
def _drift_file(path: Path, *, agreement: float, kappa: float, kappa_ci, n: int = 100, confusion=None,
                made: str = "2026-01-01T00:00:00Z", judge=LEXICAL, weights: str | None = "linear") -> Path:
    body = {"task": "context_relevance", "n": n, "agreement": agreement, "kappa": kappa, "kappa_ci": kappa_ci,
            "weights": weights, "confidence": 0.95, "sensitivity": 0.9, "specificity": 0.9, "judge": judge,
            "human_labels": {"sha256": "sha256:" + "cd" * 32, "items": n}, "made": made}
    if confusion is not None:
        body["confusion"] = confusion
    path.write_text(json.dumps({"calibration": body}))
    return path


def test_drift_normal_approximation_by_hand(tmp_path, capsys):
    old = _drift_file(tmp_path / "old.json", agreement=0.9, kappa=0.8, kappa_ci=[0.7, 0.9])
    new = _drift_file(tmp_path / "new.json", agreement=0.8, kappa=0.6, kappa_ci=[0.5, 0.7], made="2026-03-01T00:00:00Z")
    assert main(["judge", "drift", str(old), str(new), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)["drift"]
    z = 1.959963984540054
    se_a = math.sqrt(0.9 * 0.1 / 100 + 0.8 * 0.2 / 100)  # = 0.05
    assert d["agreement"]["delta"] == pytest.approx(-0.1)
    assert d["agreement"]["ci"] == pytest.approx([-0.1 - z * se_a, -0.1 + z * se_a], abs=1e-6)
    se_k = math.sqrt(2) * 0.2 / (2 * z)  # each interval 0.2 wide at 95%
    assert d["kappa"]["delta"] == pytest.approx(-0.2)
    assert d["kappa"]["ci"] == pytest.approx([-0.2 - z * se_k, -0.2 + z * se_k], abs=1e-6)
    assert d["agreement"]["verdict"] == "worse" and d["kappa"]["verdict"] == "worse"
    assert d["method"].startswith("normal approximation") and d["same_labels"] is True
    assert d["old"]["made"] == "2026-01-01T00:00:00Z" and d["new"]["made"] == "2026-03-01T00:00:00Z"
    assert main(["judge", "drift", str(old), str(new)]) == 0
    text = capsys.readouterr().out
    assert "agreement  0.900 -> 0.800  change \u22120.100" in text and "worse" in text
    assert "agrees with people less than it did" in text
    same = _drift_file(tmp_path / "same.json", agreement=0.89, kappa=0.79, kappa_ci=[0.69, 0.89])
    assert main(["judge", "drift", str(old), str(same), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)["drift"]
    assert d["agreement"]["verdict"] == "within noise" and d["kappa"]["verdict"] == "within noise"


def test_drift_bootstraps_items_when_the_files_hold_their_confusion_tables(tmp_path, capsys):
    from rankgate.stats.agreement import cohen_kappa

    def table(agree: int, n: int) -> list[list[int]]:  # binary grades, the disagreements split evenly
        off = (n - agree) // 2
        return [[agree // 2, off, 0], [n - agree - off, agree - agree // 2, 0], [0, 0, 0]]

    def kappa_of(t):
        h = [i for i, row in enumerate(t) for j, c in enumerate(row) for _ in range(c)]
        j = [j for i, row in enumerate(t) for j, c in enumerate(row) for _ in range(c)]
        return cohen_kappa(h, j, weights="linear", categories=3)

    t_old, t_new = table(360, 400), table(300, 400)
    k_old, k_new = kappa_of(t_old), kappa_of(t_new)
    old = _drift_file(tmp_path / "old.json", agreement=0.9, kappa=k_old, kappa_ci=None, n=400, confusion=t_old)
    new = _drift_file(tmp_path / "new.json", agreement=0.75, kappa=k_new, kappa_ci=None, n=400, confusion=t_new)
    assert main(["judge", "drift", str(old), str(new), "--json", "--resamples", "4000", "--seed", "3"]) == 0
    d = json.loads(capsys.readouterr().out)["drift"]
    assert d["method"].startswith("percentile bootstrap over items")
    assert d["agreement"]["delta"] == pytest.approx(-0.15) and d["kappa"]["delta"] == pytest.approx(k_new - k_old)
    se = math.sqrt(0.9 * 0.1 / 400 + 0.75 * 0.25 / 400)  # the bootstrap's interval is near the normal one
    lo, hi = d["agreement"]["ci"]
    assert lo == pytest.approx(-0.15 - 1.96 * se, abs=0.01) and hi == pytest.approx(-0.15 + 1.96 * se, abs=0.01)
    assert d["agreement"]["verdict"] == "worse" and d["kappa"]["verdict"] == "worse"
    assert main(["judge", "drift", str(old), str(new), "--json", "--resamples", "4000", "--seed", "3"]) == 0
    assert json.loads(capsys.readouterr().out)["drift"] == d  # the seed fixes the interval


def test_drift_of_two_tasks_is_refused_and_judge_changes_are_said(tmp_path, capsys):
    old = _drift_file(tmp_path / "old.json", agreement=0.9, kappa=0.8, kappa_ci=[0.7, 0.9], judge=_openai("m1"))
    new = _drift_file(tmp_path / "new.json", agreement=0.9, kappa=0.8, kappa_ci=[0.7, 0.9], judge=_openai("m2"))
    assert main(["judge", "drift", str(old), str(new)]) == 0
    assert "the judge changed: model m1 (old) vs m2 (new)" in capsys.readouterr().out
    body = json.loads(new.read_text())
    body["calibration"]["task"] = "faithfulness"
    new.write_text(json.dumps(body))
    assert main(["judge", "drift", str(old), str(new)]) == 2
    assert "cannot be compared" in capsys.readouterr().err
