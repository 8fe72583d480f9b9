"""A run whose ids never meet the gold set's (a RAGAS run matched by text against a gold set of chunk
ids, doc ids against chunk ids) scores 0 everywhere: every command says why, with ids of each side."""

from __future__ import annotations

import json

import rankgate
from rankgate.cli.main import main

RUN_BY_TEXT = [{"user_input": "How do I reset my password?", "retrieved_contexts": ["Go to Settings.", "Passwords."]},
               {"user_input": "What is the refund window?", "retrieved_contexts": ["Refunds: 30 days."]}]
GOLD_BY_ID = [{"user_input": "How do I reset my password?", "retrieved_context_ids": ["d1"], "reference_context_ids": ["d1"]},
              {"user_input": "What is the refund window?", "retrieved_context_ids": ["d4"], "reference_context_ids": ["d4"]}]


def _files(tmp_path):
    run, gold = tmp_path / "ragas_run.jsonl", tmp_path / "gold.jsonl"
    run.write_text("".join(json.dumps(r) + "\n" for r in RUN_BY_TEXT))
    gold.write_text("".join(json.dumps(r) + "\n" for r in GOLD_BY_ID))
    return str(gold), str(run)


def test_every_command_warns_when_no_retrieved_id_is_a_gold_id(tmp_path, capsys):
    gold, run = _files(tmp_path)
    result = rankgate.evaluate(gold, run, "recall@5")
    assert result.info["id_mismatch"]["gold"] == ["d1", "d4"]
    assert all(x.startswith("t:") for x in result.info["id_mismatch"]["run"])

    assert main(["evaluate", "--gold", gold, "--run", run]) == 0
    out = capsys.readouterr().out
    assert "no retrieved id matches any id in the gold set" in " ".join(out.split())
    assert main(["compare", "--gold", gold, run, gold]) == 0
    err = capsys.readouterr().err
    assert err.count("no retrieved id matches") == 1 and "ragas_run.jsonl" in err and "d1, d4" in err
    crit = tmp_path / "crit.yaml"
    crit.write_text("gates:\n  - metric: recall@5\n    threshold: 0.5\n")
    comment = tmp_path / "c.md"
    assert main(["gate", "--config", str(crit), "--gold", gold, "--candidate", run, "--comment", str(comment)]) == 1
    assert "no retrieved id matches" in capsys.readouterr().err
    assert "the gold set has d1, d4. Name items the same way" in comment.read_text()


def test_no_warning_when_ids_meet_even_if_nothing_relevant_is_found(tmp_path, capsys):
    gold = [{"query_id": "q1", "relevant_chunks": [{"chunk_id": "a", "grade": 1}, {"chunk_id": "b", "grade": 0}]}]
    run = [{"query_id": "q1", "topk": ["b", "c"]}]  # b is judged (not relevant): the ids do meet
    assert "id_mismatch" not in rankgate.evaluate(gold, run, "recall@5").info
    assert "id_mismatch" not in rankgate.evaluate(gold, [{"query_id": "q1", "topk": ["a"]}], "recall@5").info
    assert "id_mismatch" in rankgate.evaluate(gold, [{"query_id": "q1", "topk": ["x"]}], "recall@5").info
