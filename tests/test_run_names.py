"""Runs are named by the ``system`` their file gives when it gives one (the comment and the tables then
say "bm25-english", not "candidate.jsonl"), by file name otherwise, and never two runs alike."""

from __future__ import annotations

import json

from rankgate.cli.main import main
from rankgate.model.results import run_names

GOLD = [{"query_id": f"q{i}", "query": f"question {i}", "relevant_chunks": [f"d{i}"]} for i in range(6)]


def _run(path, system, hits=6):
    with open(path, "w") as f:
        for i in range(6):
            top = [f"d{i}", "x"] if i < hits else ["x", f"d{i}"]
            rec = {"query_id": f"q{i}", "topk": [{"chunk_id": c} for c in top]}
            if system is not None:
                rec["system"] = system
            f.write(json.dumps(rec) + "\n")
    return str(path)


def test_the_rule() -> None:
    assert run_names(["a/main.jsonl", "b/pr.jsonl"], ["bm25", "hybrid"]) == ["bm25", "hybrid"]
    # same system on both sides: the files tell them apart
    assert run_names(["main.jsonl", "pr.jsonl"], ["bm25", "bm25"]) == ["main.jsonl", "pr.jsonl"]
    # one run without a system keeps its file name; a system equal to another run's name is not used
    assert run_names(["main.jsonl", "pr.jsonl"], [None, "hybrid"]) == ["main.jsonl", "hybrid"]
    assert run_names(["main.jsonl", "pr.jsonl"], ["pr.jsonl", None]) == ["main.jsonl", "pr.jsonl"]
    assert run_names(["main.jsonl", "pr.jsonl"]) == ["main.jsonl", "pr.jsonl"]


def _gate(tmp_path, base_system, cand_system):
    gold = tmp_path / "gold.jsonl"
    gold.write_text("".join(json.dumps(r) + "\n" for r in GOLD))
    cfg = tmp_path / "criteria.yaml"
    cfg.write_text("gates:\n  - name: hits\n    metric: recall@1\n    threshold: 0.1\n")
    base = _run(tmp_path / "main.jsonl", base_system)
    cand = _run(tmp_path / "pr.jsonl", cand_system, hits=4)
    comment = tmp_path / "comment.md"
    code = main(["gate", "--config", str(cfg), "--gold", str(gold), "--baseline", base, "--candidate", cand,
                 "--comment", str(comment)])
    assert code in (0, 1)
    return comment.read_text()


def test_the_comment_names_runs_by_system(tmp_path) -> None:
    text = _gate(tmp_path, "bm25-multilingual", "bm25-english")
    assert "bm25-english" in text and "bm25-multilingual" in text
    assert "pr.jsonl" not in text and "main.jsonl" not in text


def test_the_same_system_on_both_sides_goes_by_file(tmp_path) -> None:
    text = _gate(tmp_path, "bm25", "bm25")
    assert "pr.jsonl" in text and "main.jsonl" in text


def test_no_system_goes_by_file(tmp_path) -> None:
    text = _gate(tmp_path, None, None)
    assert "pr.jsonl" in text and "main.jsonl" in text
