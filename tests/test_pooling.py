"""Pooling, Rogan–Gladen and the precision/nDCG bounds (hand-computed), and their commands."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from rankgate.io import load_gold, load_run
from rankgate.stats.pooling import Calibration, bounds, pool_queue, read_judged, rogan_gladen

from .hostile import assert_refused


def jl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize("p, se, sp, expected", [
    (0.3, 0.8, 0.9, 0.2 / 0.7),
    (0.5, 0.9, 0.8, 0.3 / 0.7),
    (0.05, 0.8, 0.9, 0.0),  # p < 1 - Sp: clipped to 0
    (0.95, 0.8, 0.9, 1.0),  # p > Se: clipped to 1
    (1.0, 1.0, 1.0, 1.0),  # a perfect judge changes nothing
    (0.4, 1.0, 1.0, 0.4),
])
def test_rogan_gladen_hand_computed(p, se, sp, expected):
    assert rogan_gladen(p, se, sp) == pytest.approx(expected)


def test_rogan_gladen_chance_judge_is_nan():
    assert math.isnan(rogan_gladen(0.4, 0.5, 0.5))
    assert math.isnan(rogan_gladen(0.4, 0.3, 0.6))


def cal(se: float, sp: float, **kw) -> Calibration:
    return Calibration(se, sp, kw.get("se_ci"), kw.get("sp_ci"), kw.get("pos"), kw.get("neg"), 200, 1, None,
                       "context_relevance", "cal.json")


@pytest.fixture
def small(tmp_path):
    gold = load_gold(str(jl(tmp_path / "g.jsonl", [
        {"query_id": "q1", "query": "Q one", "relevant_chunks": [{"chunk_id": "a", "grade": 2}, {"chunk_id": "b", "grade": 0}]},
    ])))
    run = load_run(str(jl(tmp_path / "r.jsonl", [{"query_id": "q1", "topk": ["a", "c", "d", "b"]}])))
    return gold, run


def test_bounds_hand_computed(small):
    gold, run = small
    judged = {("q1", "c"): 2, ("q1", "d"): 0}
    b = bounds(gold, run, judged, k=3, calibration=cal(0.9, 0.8), resamples=0)
    assert b.lower["precision@3"] == pytest.approx(1 / 3)  # only a
    assert b.upper["precision@3"] == pytest.approx(2 / 3)  # a and c
    # p = 1/2, pi = (0.5 + 0.8 - 1)/(0.9 + 0.8 - 1) = 3/7; c counts 0.9*(3/7)/0.5, d counts 0.1*(3/7)/0.5
    pi = 3 / 7
    assert b.prevalence["corrected"] == pytest.approx(pi)
    expected = (1 + 0.9 * pi / 0.5 + 0.1 * pi / 0.5) / 3
    assert b.corrected["precision@3"] == pytest.approx(expected)
    assert b.lower["precision@3"] < b.corrected["precision@3"] < b.upper["precision@3"]
    assert b.above_upper == []
    # nDCG: gains a=2, c=2 -> upper DCG 2 + 2/log2(3); ideal from a(2), c(2)
    assert b.upper["ndcg@3"] == pytest.approx(1.0)
    assert b.lower["ndcg@3"] == pytest.approx(1.0)


def test_low_sensitivity_is_flagged(small):
    gold, run = small
    b = bounds(gold, run, {("q1", "c"): 2, ("q1", "d"): 0}, k=3, calibration=cal(0.8, 0.9), resamples=0)
    assert b.corrected["precision@3"] > b.upper["precision@3"]
    assert "precision@3" in b.above_upper


def test_lower_and_upper_match_the_engine(tmp_path):
    """gold only == evaluate(gold); gold + judge == evaluate(gold with the judge's labels added)."""
    from rankgate import evaluate

    rng = np.random.default_rng(3)
    gold_rows, run_rows, judged, merged = [], [], {}, []
    for q in range(30):
        qid = f"q{q}"
        docs = [f"d{i}" for i in range(12)]
        rel = {d: int(rng.integers(0, 3)) for d in rng.choice(docs, 4, replace=False).tolist()}
        if not any(g >= 1 for g in rel.values()):
            rel[docs[0]] = 1
        gold_rows.append({"query_id": qid, "relevant_chunks": [{"chunk_id": d, "grade": g} for d, g in rel.items()]})
        order = rng.permutation(docs).tolist()
        run_rows.append({"query_id": qid, "topk": order})
        extra = {d: int(rng.integers(0, 3)) for d in docs if d not in rel and rng.random() < 0.5}
        judged.update({(qid, d): g for d, g in extra.items()})
        merged.append({"query_id": qid, "relevant_chunks": [{"chunk_id": d, "grade": g} for d, g in {**rel, **extra}.items()]})
    gp, rp, mp = jl(tmp_path / "g.jsonl", gold_rows), jl(tmp_path / "r.jsonl", run_rows), jl(tmp_path / "m.jsonl", merged)
    b = bounds(load_gold(str(gp)), load_run(str(rp)), judged, k=5, resamples=0)
    low = evaluate(gp, rp, ["precision@5", "ndcg@5"])
    up = evaluate(mp, rp, ["precision@5", "ndcg@5"])
    assert b.lower["precision@5"] == pytest.approx(low.summary("precision@5").mean)
    assert b.lower["ndcg@5"] == pytest.approx(low.summary("ndcg@5").mean)
    assert b.upper["precision@5"] == pytest.approx(up.summary("precision@5").mean)
    assert b.upper["ndcg@5"] == pytest.approx(up.summary("ndcg@5").mean)
    with_cal = bounds(load_gold(str(gp)), load_run(str(rp)), judged, k=5, calibration=cal(0.95, 0.9, pos=60, neg=140),
                      resamples=200, seed=1)
    lo, hi = with_cal.corrected_ci["precision@5"]
    assert lo <= with_cal.corrected["precision@5"] <= hi
    again = bounds(load_gold(str(gp)), load_run(str(rp)), judged, k=5, calibration=cal(0.95, 0.9, pos=60, neg=140),
                   resamples=200, seed=1)
    assert again.to_dict() == with_cal.to_dict()


def test_pool_order_and_texts(tmp_path):
    gold = load_gold(str(jl(tmp_path / "g.jsonl", [
        {"query_id": "q1", "query": "Q1", "relevant_chunks": ["a"]},
        {"query_id": "q2", "query": "Q2", "relevant_chunks": ["z"]},
    ])))
    r1 = load_run(str(jl(tmp_path / "r1.jsonl", [{"query_id": "q1", "topk": [{"chunk_id": "a"}, {"chunk_id": "y", "text": "Y!"},
                                                                              {"chunk_id": "x"}]}])))
    r2 = load_run(str(jl(tmp_path / "r2.jsonl", [{"query_id": "q1", "topk": ["x", "w"]}, {"query_id": "q2", "topk": ["z", "v"]}])))
    from rankgate.corpus import load_manifest

    corpus = load_manifest(jl(tmp_path / "c.jsonl", [{"chunk_id": c, "text": f"text {c}"} for c in "avwxyz"]))
    items = pool_queue(gold, [r1, r2], ["r1", "r2"], depth=3, corpus=corpus)
    assert [(i.query_id, i.id, i.best_rank, i.runs) for i in items] == [
        ("q1", "x", 1, ("r1", "r2")), ("q1", "y", 2, ("r1",)), ("q1", "w", 2, ("r2",)), ("q2", "v", 2, ("r2",))]
    assert items[1].text == "Y!" and items[0].text == "text x"
    assert pool_queue(gold, [r1, r2], ["r1", "r2"], depth=1, corpus=corpus)[0].id == "x"


def test_pool_cli_and_evaluate_judged(tmp_path, capsys):
    from rankgate.cli.main import main

    g = jl(tmp_path / "g.jsonl", [{"query_id": "q1", "query": "Q1", "relevant_chunks": ["a"]},
                                  {"query_id": "q2", "query": "Q2", "relevant_chunks": ["b"]}])
    r = jl(tmp_path / "r.jsonl", [{"query_id": "q1", "topk": [{"chunk_id": c, "text": c.upper()} for c in "acd"]},
                                  {"query_id": "q2", "topk": [{"chunk_id": c, "text": c.upper()} for c in "eb"]}])
    out = tmp_path / "queue.jsonl"
    assert main(["pool", "--gold", str(g), "--runs", str(r), "--depth", "3", "-o", str(out)]) == 0
    queue = [json.loads(x) for x in out.read_text().splitlines()]
    assert [(x["query_id"], x["id"], x["text"]) for x in queue] == [("q1", "c", "C"), ("q1", "d", "D"), ("q2", "e", "E")]
    labels = jl(tmp_path / "labels.jsonl", [{"query_id": "q1", "id": "c", "grade": 2}, {"query_id": "q1", "id": "d", "grade": 0},
                                            {"query_id": "q2", "id": "e", "grade": None, "judge_error": "timeout after 60 s"}])
    calib = tmp_path / "cal.json"
    calib.write_text(json.dumps({"calibration": {"task": "context_relevance", "n": 150, "sensitivity": 0.9,
                                                 "sensitivity_ci": [0.8, 0.95], "specificity": 0.85,
                                                 "specificity_ci": [0.75, 0.9], "relevant_at": 1}}))
    capsys.readouterr()
    assert main(["evaluate", "--gold", str(g), "--run", str(r), "--judged", str(labels), "--calibration", str(calib),
                 "--k", "3", "--json", "--resamples", "100"]) == 0
    summary = json.loads(capsys.readouterr().out)
    b = summary["bounds"]
    assert b["lower"]["precision@3"] == pytest.approx(1 / 3)
    assert b["upper"]["precision@3"] == pytest.approx(1 / 2)
    assert b["judge_failed"] == 1 and b["unlabelled_in_topk"] == 1
    assert b["lower"]["precision@3"] <= b["corrected"]["precision@3"] <= b["upper"]["precision@3"]
    assert main(["evaluate", "--gold", str(g), "--run", str(r), "--judged", str(labels), "--k", "3"]) == 0
    text = capsys.readouterr().out
    assert "lower: gold only" in text and "upper: gold + judge" in text


@pytest.mark.parametrize("row, words", [
    ({"query_id": "q9", "id": "c", "grade": 1}, ["not in the gold set"]),
    ({"query_id": "q1", "id": "c", "grade": 3}, ["grade", "0, 1 or 2"]),
    ({"query_id": "q1", "grade": 1}, ["'id'"]),
])
def test_hostile_labels(tmp_path, capsys, row, words):
    g = jl(tmp_path / "g.jsonl", [{"query_id": "q1", "relevant_chunks": ["a"]}])
    r = jl(tmp_path / "r.jsonl", [{"query_id": "q1", "topk": ["a", "c"]}])
    labels = jl(tmp_path / "labels.jsonl", [row])
    out = tmp_path / "out"
    out.mkdir()
    assert_refused(["evaluate", "--gold", g, "--run", r, "--judged", labels, "--out", out], out, names=[labels],
                   capsys=capsys, contains=words)


def test_pool_without_texts_is_refused(tmp_path, capsys):
    g = jl(tmp_path / "g.jsonl", [{"query_id": "q1", "relevant_chunks": ["a"]}])
    r = jl(tmp_path / "r.jsonl", [{"query_id": "q1", "topk": ["a", "c"]}])
    out = tmp_path / "o"
    out.mkdir()
    assert_refused(["pool", "--gold", g, "--runs", r, "-o", out / "q.jsonl"], out, names=[r], capsys=capsys,
                   contains=["--corpus"])


def test_read_judged_duplicates(tmp_path):
    gold = load_gold(str(jl(tmp_path / "g.jsonl", [{"query_id": "q1", "relevant_chunks": ["a"]}])))
    labels = jl(tmp_path / "l.jsonl", [{"query_id": "q1", "id": "c", "grade": 1}, {"query_id": "q1", "id": "c", "grade": 2}])
    from rankgate.errors import InputError

    with pytest.raises(InputError, match=r"l.jsonl:2: labels \('q1', 'c'\) again \(first at line 1\)"):
        read_judged(str(labels), gold)


def test_corrected_table_matches_the_per_query_formula():
    """The vectorised corrected scores equal the plain per-query formula for any weights."""
    from rankgate.stats.pooling import _CorrectedTable, _query_scores

    rng = np.random.default_rng(5)
    qids, tops, gold, judge = [], {}, {}, {}
    for q in range(40):
        qid = f"q{q}"
        docs = [f"d{i}" for i in range(15)]
        gold[qid] = {d: int(rng.integers(-1, 4)) for d in rng.choice(docs, 4, replace=False).tolist()}
        judge[qid] = {d: int(rng.integers(0, 3)) for d in docs if rng.random() < 0.6}
        tops[qid] = rng.permutation(docs).tolist()[: int(rng.integers(0, 15))]
        qids.append(qid)
    for rel_at in (1, 2):
        table = _CorrectedTable(qids, tops, gold, judge, 7, rel_at)
        for w in ((0.9, 0.1), (0.5, 0.0), (1.0, 0.7), (0.2, 0.3)):
            slow = np.array([_query_scores(tops[q], gold[q], {d: g for d, g in judge[q].items() if d not in gold[q]},
                                           7, w, rel_at)[:2] for q in qids])
            np.testing.assert_allclose(table.scores(*w), slow, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("content, words", [
    ("not json", ["not a JSON calibration file"]),
    (json.dumps({"calibration": {"n": 150, "sensitivity": 1.4, "specificity": 0.9}}), ["calibration.sensitivity"]),
    (json.dumps({"calibration": {"sensitivity": 0.9, "specificity": 0.9}}), ["calibration.n"]),
    (json.dumps({"other": 1}), ["no 'calibration' object"]),
])
def test_hostile_calibration(tmp_path, capsys, content, words):
    g = jl(tmp_path / "g.jsonl", [{"query_id": "q1", "relevant_chunks": ["a"]}])
    r = jl(tmp_path / "r.jsonl", [{"query_id": "q1", "topk": ["a", "c"]}])
    labels = jl(tmp_path / "labels.jsonl", [{"query_id": "q1", "id": "c", "grade": 1}])
    cal = tmp_path / "cal.json"
    cal.write_text(content, encoding="utf-8")
    out = tmp_path / "out"
    out.mkdir()
    assert_refused(["evaluate", "--gold", g, "--run", r, "--judged", labels, "--calibration", cal, "--out", out], out,
                   names=[cal], capsys=capsys, contains=words)


def test_calibration_without_judged_is_a_usage_error(tmp_path, capsys):
    g = jl(tmp_path / "g.jsonl", [{"query_id": "q1", "relevant_chunks": ["a"]}])
    r = jl(tmp_path / "r.jsonl", [{"query_id": "q1", "topk": ["a", "c"]}])
    assert_refused(["evaluate", "--gold", g, "--run", r, "--calibration", tmp_path / "c.json"], None, capsys=capsys,
                   contains=["--calibration needs --judged"])
