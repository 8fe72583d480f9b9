"""Routing (expected_source vs items' source) and entity linking (gold entities vs linked_entities)."""

from __future__ import annotations

import json
import math

import pytest

from rankgate.cli.main import main
from rankgate.io import load_gold, load_run
from rankgate.scoring.engine import evaluate
from rankgate.experiments.linking import linking_analysis
from rankgate.experiments.routing import routing_analysis

from .demo_runs import CORPUS, GOLD, demo_run, gold_records, write_jsonl
from .hostile import assert_refused


def _routing_case():
    gold, run = [], []
    for i in range(10):
        lang = "de" if i >= 6 else "en"
        gold.append({"query_id": f"q{i}", "relevant_chunks": [f"{lang}_{i}"], "expected_source": lang,
                     "tags": {"lang": lang}})
        # The router sends every query to the English index; a web source fills two slots and never helps.
        items = [{"chunk_id": f"en_{i}" if lang == "en" else f"en_x{i}", "score": 5, "source": "en"},
                 {"chunk_id": f"en_y{i}", "score": 4, "source": "en"},
                 {"chunk_id": f"en_z{i}", "score": 3, "source": "en"},
                 {"chunk_id": f"web_{i}", "score": 2, "source": "web"},
                 {"chunk_id": f"web2_{i}", "score": 1, "source": "web"}]
        run.append({"query_id": f"q{i}", "topk": items})
    return gold, run


def test_german_queries_sent_to_the_english_index_show_in_the_matrix():
    gold, run = _routing_case()
    g, r = load_gold(gold), load_run(run)
    rt = routing_analysis(g, r, evaluate(g, r, "recall@5"), k=5, resamples=200)
    assert {(e, c): n for e, c, n in rt.matrix} == {("de", "en"): 4, ("en", "en"): 6}
    assert rt.routed == 6 and rt.coverage == 0.6
    by = {s.source: s for s in rt.per_source}
    assert by["de"].coverage == 0.0 and by["de"].recall == 0.0 and by["en"].recall == 1.0
    assert rt.expected_share == pytest.approx((6 * 3 / 5) / 10)
    slots = {s.source: s for s in rt.slots}
    assert slots["web"].share_of_slots == pytest.approx(0.4) and slots["web"].share_of_found == 0.0
    assert [f.rule for f in rt.findings] == ["router_skew"] and "web" in rt.findings[0].title
    assert [q for q, _, _ in rt.misrouted] == ["q6", "q7", "q8", "q9"]


def test_routing_cli_on_the_demo_data(tmp_path, capsys):
    lang_of = {}
    for line in CORPUS.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        lang_of[rec["chunk_id"]] = rec["lang"]
    gold = write_jsonl(tmp_path / "gold.jsonl",
                       [{**rec, "expected_source": rec["tags"]["lang"]} for rec in gold_records()])
    raw = [json.loads(line) for line in demo_run(tmp_path, "bm25-english").read_text().splitlines()]
    run = write_jsonl(tmp_path / "routed.jsonl", [
        {**rec, "topk": [{**h, "source": lang_of[h["chunk_id"]]} for h in rec["topk"]]} for rec in raw])
    capsys.readouterr()
    assert main(["evaluate", "--gold", str(gold), "--run", str(run), "--routing", "--json", "--resamples", "100"]) == 0
    rt = json.loads(capsys.readouterr().out)["routing"]
    assert rt["queries"] == len(gold_records()) and 0 < rt["coverage"] <= 1
    assert {m["expected"] for m in rt["matrix"]} == {"de", "en", "es"}
    assert sum(m["queries"] for m in rt["matrix"]) == rt["queries"]
    assert main(["evaluate", "--gold", str(gold), "--run", str(run), "--routing", "--markdown", "--resamples", "0"]) == 0
    assert "Misroute matrix" in capsys.readouterr().out


def test_entity_linking_by_hand():
    g = load_gold([{"query_id": "q1", "relevant_chunks": ["a"], "entities": ["Free plan", "CSV"]},
                   {"query_id": "q2", "relevant_chunks": ["b"], "entities": ["JSON", "ZIP"]},
                   {"query_id": "q3", "relevant_chunks": ["c"], "entities": ["Team"]},
                   {"query_id": "q4", "relevant_chunks": ["d"]}])
    r = load_run([{"query_id": "q1", "topk": ["a"], "linked_entities": ["free  plan"]},
                  {"query_id": "q2", "topk": ["x"], "linked_entities": ["JSON", "ZIP", "Team"]},
                  {"query_id": "q3", "topk": ["c"]},
                  {"query_id": "q4", "topk": ["d"], "linked_entities": ["Other"]}])
    el = linking_analysis(g, r, evaluate(g, r, "recall@1"), k=1, resamples=100)
    per = {q: (p, rr, f, rc) for q, p, rr, f, rc in el.per_query}
    assert per["q1"][:3] == (1.0, 0.5, pytest.approx(2 / 3)) and per["q1"][3] == 1.0
    assert per["q2"][:3] == (pytest.approx(2 / 3), 1.0, pytest.approx(0.8)) and per["q2"][3] == 0.0
    assert math.isnan(per["q3"][0]) and per["q3"][1:3] == (0.0, 0.0)
    assert "q4" not in per and el.queries == 3 and el.unlinked == 1
    means = {r_.metric: r_.mean for r_ in el.rows if r_.segment is None}
    assert means["el_precision"] == pytest.approx((1 + 2 / 3) / 2)  # q3 linked nothing: no precision
    assert means["el_recall"] == pytest.approx(0.5) and means["el_f1"] == pytest.approx((2 / 3 + 0.8) / 3)
    assert [m[0] for m in el.missed] == ["q1", "q3"]


def test_entity_linking_cli_on_the_demo_data(tmp_path, capsys):
    records = gold_records()
    run_path = demo_run(tmp_path)
    raw = {json.loads(line)["query_id"]: json.loads(line) for line in run_path.read_text().splitlines()}
    # A naive linker: the gold entities whose name appears in the query text.
    linked = write_jsonl(tmp_path / "linked.jsonl", [
        {**raw[rec["query_id"]], "linked_entities": [e for e in rec.get("entities") or [] if e.lower() in rec["query"].lower()]}
        for rec in records])
    capsys.readouterr()
    assert main(["evaluate", "--gold", str(GOLD), "--run", str(linked),
                 "--entity-linking", "--by", "lang", "--json", "--resamples", "100"]) == 0
    el = json.loads(capsys.readouterr().out)["entity_linking"]
    rows = {(r["metric"], r["segment"]): r for r in el["metrics"]}
    assert rows[("el_precision", None)]["mean"] == 1.0  # the naive linker only names gold entities
    assert 0 < rows[("el_recall", None)]["mean"] < 1 and ("el_f1", "lang=de") in rows
    assert ("recall@5", None) in rows


def test_bad_inputs_are_refused(tmp_path, capsys):
    gold, run = _routing_case()
    g = write_jsonl(tmp_path / "gold.jsonl", gold)
    plain = write_jsonl(tmp_path / "plain.jsonl", [{"query_id": "q1", "topk": ["a"]}])
    assert_refused(["evaluate", "--gold", g, "--run", plain, "--routing"], tmp_path, names=[plain], capsys=capsys,
                   contains=["source"])
    assert_refused(["evaluate", "--gold", g, "--run", plain, "--entity-linking"], tmp_path, names=[plain],
                   capsys=capsys, contains=["linked_entities"])
    bad = write_jsonl(tmp_path / "bad.jsonl", [{**gold[0], "expected_source": ["en", "de"]}])
    r = write_jsonl(tmp_path / "run.jsonl", run)
    assert_refused(["evaluate", "--gold", bad, "--run", r, "--routing"], tmp_path, names=[bad], capsys=capsys,
                   contains=["expected_source"])
    badl = write_jsonl(tmp_path / "badl.jsonl", [{"query_id": "q0", "topk": ["a"], "linked_entities": 3}])
    ge = write_jsonl(tmp_path / "ge.jsonl", [{"query_id": "q0", "relevant_chunks": ["a"], "entities": ["X"]}])
    assert_refused(["evaluate", "--gold", ge, "--run", badl, "--entity-linking"], tmp_path, names=[badl],
                   capsys=capsys, contains=["linked_entities"])
