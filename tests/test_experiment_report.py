"""The HTML report shows the component experiments the options ask for, and nothing more without them."""

from __future__ import annotations

import json

from rankgate.cli.main import main

from .demo_runs import CORPUS, demo_run, gold_records, write_jsonl
from .hostile import assert_refused
from .test_experiment_rewrite import _log


def test_report_sections(tmp_path):
    lang_of = {json.loads(line)["chunk_id"]: json.loads(line)["lang"] for line in CORPUS.read_text().splitlines()}
    gold = write_jsonl(tmp_path / "gold.jsonl", [
        {**rec, "as_of": "2026-01-01", "expected_source": rec["tags"]["lang"]} for rec in gold_records()])
    raw = [json.loads(line) for line in demo_run(tmp_path).read_text().splitlines()]
    queries = {r["query_id"]: r for r in gold_records()}
    run = write_jsonl(tmp_path / "run.jsonl", [
        {**rec, "topk": [{**h, "source": lang_of[h["chunk_id"]]} for h in rec["topk"]],
         "linked_entities": [e for e in queries[rec["query_id"]].get("entities") or []
                             if e.lower() in queries[rec["query_id"]]["query"].lower()]} for rec in raw])
    plain = tmp_path / "plain.html"
    assert main(["report", "--gold", str(gold), "--run", str(run), "-o", str(plain), "--resamples", "100"]) == 0
    assert 'id="freshness"' not in plain.read_text()
    out = tmp_path / "all.html"
    assert main(["report", "--gold", str(gold), "--run", str(run), "-o", str(out), "--resamples", "100",
                 "--enforce-as-of", "--routing", "--entity-linking"]) == 0
    html = out.read_text()
    for anchor in ("freshness", "routing", "entity-linking"):
        assert f'<section id="{anchor}">' in html and f'href="#{anchor}"' in html
    assert "Misroute matrix" in html and "el_f1" in html and "enforced" in html


def test_report_rewrite_section(tmp_path, capsys):
    gold, log, a, _ = _log(tmp_path)
    run = write_jsonl(tmp_path / "orig.jsonl", a)
    out = tmp_path / "r.html"
    assert main(["report", "--gold", str(gold), "--run", str(run), "--rewrite", str(log), "-o", str(out),
                 "--resamples", "100"]) == 0
    html = out.read_text()
    assert '<section id="rewrite">' in html and "how to configure widget0" in html
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"query_id": "q1", "original": ["d1"]}])
    assert_refused(["report", "--gold", gold, "--run", run, "--rewrite", bad, "-o", tmp_path / "x.html"], tmp_path,
                   names=[bad], capsys=capsys)
