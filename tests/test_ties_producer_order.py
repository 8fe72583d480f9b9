"""Ties follow the producer's order wherever it gave one; TREC files keep trec_eval's rule.

Every list-shaped format (JSONL, JSON, CSV with and without a rank column, Parquet with and without
ranks, a Hugging Face save_to_disk folder) is checked against the same rule spelled out in Python,
through the whole evaluation: the reference ranks the items itself and is scored as a list without
scores, which keeps its order whatever the rule.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import rankgate
from rankgate.cli.main import main
from rankgate.io import load_run
from rankgate.io.jsonl import iter_json_lines, json_lines, parse_run_records, read_text
from rankgate.io.jsonl_fast import read_run_fast
from rankgate.model.ranking import rank_rows

from .test_formats import write_hf
from .conftest import examples

METRICS = ["ndcg", "map", "mrr", "precision@2", "recall@3"]
IDS = ["a", "b", "c", "d", "e", "f"]


@st.composite
def tied_runs(draw):
    """Queries with few distinct scores (many ties), each with no ranks, a rank on every item, or (JSONL
    only) ranks on some items; and a graded gold set over the same ids."""
    n_queries = draw(st.integers(1, 4))
    queries = []
    for qi in range(n_queries):
        ids = draw(st.permutations(IDS))[: draw(st.integers(1, len(IDS)))]
        scores = [draw(st.sampled_from([0.0, 0.5, 1.0])) for _ in ids]
        ranking = draw(st.sampled_from(["none", "all", "some"]))
        ranks: list[int | None] = [None] * len(ids)
        if ranking != "none":
            order = draw(st.permutations(range(1, len(ids) + 1)))
            ranks = [r if ranking == "all" or draw(st.booleans()) else None for r in order]
        grades = {d: draw(st.integers(0, 3)) for d in IDS}
        grades[draw(st.sampled_from(IDS))] = 3  # at least one relevant item
        queries.append({"qid": f"q{qi}", "ids": ids, "scores": scores, "ranks": ranks, "grades": grades})
    return queries


def gold_of(queries):
    return [{"query_id": q["qid"], "relevant_chunks": [{"chunk_id": d, "grade": g} for d, g in q["grades"].items()]}
            for q in queries]


def expected_order(q, rule):
    """The rule in plain Python (positions of the items as the file lists them)."""
    n = len(q["ids"])
    if rule == "id":
        by_id = sorted(range(n), key=lambda i: q["ids"][i].encode(), reverse=True)
        return sorted(by_id, key=lambda i: -q["scores"][i])
    if all(r is not None for r in q["ranks"]):
        return sorted(range(n), key=lambda i: q["ranks"][i])
    return sorted(range(n), key=lambda i: -q["scores"][i])


def reference(queries, rule):
    """Per-query values of the lists ranked by ``rule``, scored as plain ordered lists."""
    run = [{"query_id": q["qid"], "retrieved": [q["ids"][i] for i in expected_order(q, rule)]} for q in queries]
    return rankgate.evaluate(gold_of(queries), run, METRICS)


def rows_of(queries, *, ranks: bool):
    out = []
    for q in queries:
        for d, s, r in zip(q["ids"], q["scores"], q["ranks"]):
            out.append({"query_id": q["qid"], "chunk_id": d, "score": s, **({"rank": r} if ranks else {})})
    return out


def write_run(queries, fmt, folder: Path) -> Path | None:
    """The run in ``fmt``, or None when the format cannot hold these ranks (a table's rank column has
    no gaps)."""
    some = any(any(r is None for r in q["ranks"]) and any(r is not None for r in q["ranks"]) for q in queries)
    ranked = any(r is not None for q in queries for r in q["ranks"])
    table_ranks = fmt.endswith("+rank")
    if table_ranks and (some or not all(all(r is not None for r in q["ranks"]) for q in queries)):
        return None
    if fmt in ("jsonl", "json"):
        records = [{"query_id": q["qid"], "topk": [
            {"chunk_id": d, "score": s, **({"rank": r} if r is not None else {})}
            for d, s, r in zip(q["ids"], q["scores"], q["ranks"])]} for q in queries]
        path = folder / f"run.{fmt}"
        text = json.dumps(records) if fmt == "json" else "".join(json.dumps(r) + "\n" for r in records)
        path.write_text(text)
        return path
    if ranked and not table_ranks:
        # a table without a rank column: the file's order is its rows' order (ranks are not written)
        queries = [dict(q, ranks=[None] * len(q["ids"])) for q in queries]
    rows = rows_of(queries, ranks=table_ranks)
    base = fmt.removesuffix("+rank")
    if base == "csv":
        path = folder / "run.csv"
        names = list(rows[0])
        path.write_text(",".join(names) + "\n" + "".join(",".join(str(r[n]) for n in names) + "\n" for r in rows))
        return path
    if base == "parquet":
        path = folder / "run.parquet"
        pq.write_table(pa.Table.from_pylist(rows), path)
        return path
    return write_hf(folder / "run_ds", rows)


LIST_FORMATS = ["jsonl", "json", "csv", "csv+rank", "parquet", "parquet+rank", "hf", "hf+rank"]


def same_values(got, want):
    for m in METRICS:
        assert np.array_equal(got[m], want[m], equal_nan=True), (m, got[m], want[m])


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tied_runs(), st.sampled_from(LIST_FORMATS))
def test_list_formats_rank_ties_by_the_producers_order(tmp_path_factory, queries, fmt):
    folder = tmp_path_factory.mktemp("run")
    path = write_run(queries, fmt, folder)
    if path is None:
        return
    if not fmt.endswith("+rank") and fmt not in ("jsonl", "json"):
        queries = [dict(q, ranks=[None] * len(q["ids"])) for q in queries]
    gold = gold_of(queries)
    default = rankgate.evaluate(gold, str(path), METRICS)
    assert default.info["ties"] == "input"
    same_values(default, reference(queries, "input"))
    by_id = rankgate.evaluate(gold, str(path), METRICS, ties="id")
    assert by_id.info["ties"] == "id"
    same_values(by_id, reference(queries, "id"))
    # the note's count: queries whose lists differ between the two rules (no cutoff: ndcg, map, mrr)
    differ = sum(expected_order(q, "id") != expected_order(q, "input") for q in queries)
    assert default.info["ties_differ"] == by_id.info["ties_differ"] == differ


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tied_runs())
def test_trec_runs_keep_trec_eval_rule(tmp_path_factory, queries):
    path = tmp_path_factory.mktemp("trec") / "run.trec"
    lines = [f"{q['qid']} Q0 {d} {r or 0} {s} tag\n" for q in queries
             for d, s, r in zip(q["ids"], q["scores"], q["ranks"])]
    path.write_text("".join(lines))
    trec_queries = [dict(q, ranks=[None] * len(q["ids"])) for q in queries]  # the rank column is ignored
    gold = gold_of(queries)
    default = rankgate.evaluate(gold, str(path), METRICS)
    assert default.info["ties"] == "id"
    same_values(default, reference(trec_queries, "id"))
    same_values(rankgate.evaluate(gold, str(path), METRICS, ties="input"), reference(trec_queries, "input"))


@settings(max_examples=examples(60), deadline=None)
@given(tied_runs(), st.sampled_from(["id", "input"]))
def test_fast_and_slow_jsonl_readers_rank_alike(queries, rule):
    """The columnar reader carries the same ranks (NaN where an item has none) as the line parser, so
    both rules give the same order from either."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = write_run(queries, "jsonl", Path(d))
        assert path is not None
        slow = parse_run_records(iter_json_lines(json_lines(read_text(str(path))), str(path)), str(path))
        fast = read_run_fast(str(path), min_bytes=0)
    assert fast is not None
    assert (fast.r_order is None) == (slow.r_order is None)
    if fast.r_order is not None:
        assert np.array_equal(fast.r_order, slow.r_order, equal_nan=True)
    for run in (fast, slow):
        perm = rank_rows(run.r_query, run.r_doc, run.r_score, run.r_order, ties=rule)
        got = [(run.query_ids[int(run.r_query[i])], run.r_doc[int(i)].as_py()) for i in perm]
        want = [(q["qid"], q["ids"][i]) for q in queries for i in expected_order(q, rule)]
        assert got == want


# -- a LlamaIndex run: every score 1.0, explicit ranks ---------------------------------------------

LLAMA_GOLD = [{"query_id": "q1", "relevant": ["n1"]}, {"query_id": "q2", "relevant": ["a7"]}]
# As a LlamaIndex retriever with MockEmbedding returns it (every score 1.0), written out with each
# node's rank; the list happens to be in node-id order, not rank order.
LLAMA_RUN = [
    {"query_id": "q1", "topk": [{"chunk_id": "a2", "score": 1.0, "rank": 2}, {"chunk_id": "b9", "score": 1.0, "rank": 3},
                                {"chunk_id": "c4", "score": 1.0, "rank": 4}, {"chunk_id": "n1", "score": 1.0, "rank": 1}]},
    {"query_id": "q2", "topk": [{"chunk_id": "a7", "score": 1.0, "rank": 3}, {"chunk_id": "x1", "score": 1.0, "rank": 1},
                                {"chunk_id": "y2", "score": 1.0, "rank": 2}]},
]


def test_llamaindex_ranks_decide_when_every_score_is_one(tmp_path, capsys):
    gold = tmp_path / "gold.jsonl"
    gold.write_text("".join(json.dumps(r) + "\n" for r in LLAMA_GOLD))
    run = tmp_path / "run.jsonl"
    run.write_text("".join(json.dumps(r) + "\n" for r in LLAMA_RUN))
    result = rankgate.evaluate(str(gold), str(run), ["mrr"])
    assert result["mrr"].tolist() == [1.0, 1 / 3]  # n1 at rank 1; a7 at rank 3
    assert "rank_vs_score" not in result.info  # equal scores never disagree with a rank
    # trec_eval's rule: score, then id descending -> n1 first (1.0) in q1... by id: n1, c4, b9, a2; q2: y2, x1, a7
    assert rankgate.evaluate(str(gold), str(run), ["mrr"], ties="id")["mrr"].tolist() == [1.0, 1 / 3]
    shuffled = [dict(r, topk=list(reversed(r["topk"]))) for r in LLAMA_RUN]
    run.write_text("".join(json.dumps(r) + "\n" for r in shuffled))
    assert rankgate.evaluate(str(gold), str(run), ["mrr"])["mrr"].tolist() == [1.0, 1 / 3]  # ranks, not lines
    # ids that trec_eval's rule puts the other way round: the numbers the issue reported (1.0 -> 0.25, 1/3 -> 1)
    flipped = [{"query_id": "q1", "topk": [dict(it, chunk_id={"n1": "a0"}.get(it["chunk_id"], it["chunk_id"]))
                                          for it in LLAMA_RUN[0]["topk"]]},
               {"query_id": "q2", "topk": [dict(it, chunk_id={"a7": "z9"}.get(it["chunk_id"], it["chunk_id"]))
                                          for it in LLAMA_RUN[1]["topk"]]}]
    gold.write_text("".join(json.dumps(r) + "\n" for r in [{"query_id": "q1", "relevant": ["a0"]},
                                                            {"query_id": "q2", "relevant": ["z9"]}]))
    run.write_text("".join(json.dumps(r) + "\n" for r in flipped))
    assert rankgate.evaluate(str(gold), str(run), ["mrr"])["mrr"].tolist() == [1.0, 1 / 3]
    assert rankgate.evaluate(str(gold), str(run), ["mrr"], ties="id")["mrr"].tolist() == [0.25, 1.0]
    assert main(["evaluate", "--gold", str(gold), "--run", str(run), "-m", "mrr", "--resamples", "0"]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert ("note: 2 queries have tied scores or explicit ranks that the two tie rules order differently; "
            "ranked by the file's order (--ties id ranks them by score, then id, as trec_eval)") in err


def test_ranks_that_disagree_with_scores_warn_once(tmp_path, capsys):
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"query_id": "q1", "relevant": ["b"]}) + "\n")
    run = tmp_path / "run.jsonl"
    run.write_text(json.dumps({"query_id": "q1", "topk": [{"chunk_id": "a", "score": 0.2, "rank": 1},
                                                          {"chunk_id": "b", "score": 0.9, "rank": 2}]}) + "\n")
    out = tmp_path / "out"
    assert main(["evaluate", "--gold", str(gold), "--run", str(run), "-m", "mrr", "--resamples", "0", "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "warning: in 1 query with a rank on every item, the ranks put a higher score below a lower one" in err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["options"]["ties"] == "input" and summary["options"]["rank_vs_score"] == 1
    assert summary["options"]["ties_differ"] == 1 and summary["metrics"]["mrr"]["mean"] == 0.5


# -- the note and summary.json ----------------------------------------------------------------------

def _files(tmp_path, topk):
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"query_id": "q1", "relevant": ["a"]}) + "\n"
                    + json.dumps({"query_id": "q2", "relevant": ["x"]}) + "\n")
    run = tmp_path / "run.jsonl"
    run.write_text(json.dumps({"query_id": "q1", "topk": topk}) + "\n"
                   + json.dumps({"query_id": "q2", "topk": [{"chunk_id": "x", "score": 2.0}]}) + "\n")
    return gold, run


def test_note_counts_only_differences_within_the_deepest_cutoff(tmp_path, capsys):
    tied_tail = [{"chunk_id": "a", "score": 3.0}, {"chunk_id": "b", "score": 2.0}, {"chunk_id": "c", "score": 1.0},
                 {"chunk_id": "d", "score": 1.0}]
    gold, run = _files(tmp_path, tied_tail)
    argv = ["evaluate", "--gold", str(gold), "--run", str(run), "--resamples", "0", "--json"]
    assert main([*argv, "-m", "recall@2,precision@2"]) == 0  # ties at ranks 3-4 only: no note
    captured = capsys.readouterr()
    assert captured.err == "" and "ties_differ" not in json.loads(captured.out)["options"]
    assert main([*argv, "-m", "recall@2,ndcg@4"]) == 0
    captured = capsys.readouterr()
    assert "note: 1 query has tied scores" in captured.err
    assert json.loads(captured.out)["options"]["ties_differ"] == 1


def test_summary_bytes_without_ties_keep_every_other_field(tmp_path):
    """A run without ties: its summary.json differs from one ranked by trec_eval's rule only in the
    recorded rule."""
    gold, run = _files(tmp_path, [{"chunk_id": "a", "score": 3.0}, {"chunk_id": "b", "score": 2.0}])
    texts = []
    for rule in ("input", "id"):
        out = tmp_path / rule
        assert main(["evaluate", "--gold", str(gold), "--run", str(run), "--resamples", "50", "-o", str(out),
                     "--ties", rule]) == 0
        texts.append(((out / "metrics.csv").read_bytes(), (out / "summary.json").read_text()))
    assert texts[0][0] == texts[1][0]
    assert texts[0][1].replace('"ties": "input"', '"ties": "id"') == texts[1][1]
    default = tmp_path / "default"
    assert main(["evaluate", "--gold", str(gold), "--run", str(run), "--resamples", "50", "-o", str(default)]) == 0
    assert (default / "summary.json").read_text() == texts[0][1]


# -- every command that ranks takes --ties ------------------------------------------------------------

TIED = [{"chunk_id": "a", "score": 1.0}, {"chunk_id": "c", "score": 1.0}, {"chunk_id": "b", "score": 1.0}]


def test_pool_takes_the_rule(tmp_path, capsys):
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"query_id": "q1", "relevant": ["z"]}) + "\n")
    run = tmp_path / "run.jsonl"
    run.write_text(json.dumps({"query_id": "q1", "topk": [dict(t, text=t["chunk_id"]) for t in TIED]}) + "\n")
    out = tmp_path / "queue.jsonl"
    pooled = {}
    for rule in (None, "id", "input"):
        assert main(["pool", "--gold", str(gold), "--runs", str(run), "--depth", "1", "-o", str(out),
                     *(["--ties", rule] if rule else [])]) == 0
        pooled[rule] = [json.loads(line)["id"] for line in out.read_text().splitlines()]
    capsys.readouterr()
    assert pooled == {None: ["a"], "id": ["c"], "input": ["a"]}


def test_compare_report_stress_answers_accept_the_option(tmp_path, capsys):
    gold, run = _files(tmp_path, TIED)
    for argv in (["compare", "--gold", str(gold), str(run), str(run), "--resamples", "0"],
                 ["report", "--gold", str(gold), "--run", str(run), "--resamples", "0", "-o", str(tmp_path / "r.html")]):
        for rule in ("id", "input"):
            assert main([*argv, "--ties", rule]) == 0
        with pytest.raises(SystemExit) as exit_:
            main([*argv, "--ties", "score"])
        assert exit_.value.code == 2
    for command in ("stress", "answers", "gate", "evaluate", "pool"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        assert "--ties {id,input}" in capsys.readouterr().out
    capsys.readouterr()


def test_retrieve_outputs_read_back_the_same_under_both_rules(tmp_path):
    """rankgate retrieve writes a rank on every item, in trec_eval's order: both rules read it back alike."""
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"chunk_id": f"d{i}", "text": "same words here"}) + "\n" for i in range(5)))
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"query_id": "q1", "query": "same words", "relevant": ["d1"]}) + "\n")
    out = tmp_path / "run.jsonl"
    assert main(["retrieve", "--corpus", str(corpus), "--gold", str(gold), "-o", str(out), "--no-latency"]) == 0
    items = json.loads(out.read_text().splitlines()[0])["topk"]
    assert len({it["score"] for it in items}) == 1 and all("rank" in it for it in items)  # all tied
    by_input = rankgate.evaluate(str(gold), str(out), ["mrr"])
    assert by_input["mrr"].tolist() == rankgate.evaluate(str(gold), str(out), ["mrr"], ties="id")["mrr"].tolist()
    assert by_input.info["ties_differ"] == 0


# -- comparability: baseline and candidate ranked by different rules ---------------------------------

#: What compare and the gate say when cand.jsonl (the file's order) is compared with base.trec (trec_eval's rule).
RULES_DIFFER = ("cand.jsonl was ranked by the file's order (--ties input), the baseline base.trec by score, then id "
                "descending (trec_eval's rule) (--ties id); part of any change may come from how equal scores were "
                "ordered, not the retriever")


def _gate_files(tmp_path):
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"query_id": "q1", "relevant": ["a"]}) + "\n")
    cand = tmp_path / "cand.jsonl"
    cand.write_text(json.dumps({"query_id": "q1", "topk": TIED}) + "\n")
    base = tmp_path / "base.trec"
    base.write_text("".join(f"q1 Q0 {t['chunk_id']} {i + 1} {t['score']} tag\n" for i, t in enumerate(TIED)))
    cfg = tmp_path / "ship.yaml"
    cfg.write_text("gates:\n  - {name: mrr, metric: mrr, threshold: 0.1, regression_max: 0.9}\n")
    return gold, cand, base, cfg


def test_gate_says_when_the_rules_differ(tmp_path, capsys):
    gold, cand, base, cfg = _gate_files(tmp_path)
    comment, outcome = tmp_path / "c.md", tmp_path / "o.json"
    argv = ["gate", "--config", str(cfg), "--gold", str(gold), "--candidate", str(cand), "--comment", str(comment),
            "--json-out", str(outcome)]
    assert main([*argv, "--baseline", str(base)]) == 0
    err = capsys.readouterr().err
    assert "warning: " + RULES_DIFFER in err
    text = comment.read_text()
    assert ("**Different ranking rules:** cand.jsonl was ranked by the file's order (`--ties input`), the baseline "
            "base.trec by score, then id descending (trec\\_eval's rule) (`--ties id`); part of any change") in text
    assert json.loads(outcome.read_text())["tie_rules"] == {"baseline": "id", "candidate": "input", "differ": True}
    # the outcome, as the next baseline, carries its candidate's rule
    rolled = tmp_path / "rolled.json"
    rolled.write_bytes(outcome.read_bytes())
    assert main(["gate", "--config", str(cfg), "--gold", str(gold), "--candidate", str(base), "--comment", str(comment),
                 "--baseline", str(rolled)]) == 0
    capsys.readouterr()
    assert ("base.trec was ranked by score, then id descending (trec\\_eval's rule) (`--ties id`), the baseline "
            "rolled.json by the file's order (`--ties input`)") in comment.read_text()
    # one rule forced on both sides: no note
    assert main([*argv, "--baseline", str(base), "--ties", "id"]) == 0
    capsys.readouterr()
    assert "Different ranking rules" not in comment.read_text()
    assert json.loads(outcome.read_text())["tie_rules"]["differ"] is False


def test_gate_reads_baseline_summaries_with_and_without_a_rule(tmp_path, capsys):
    gold, cand, base, cfg = _gate_files(tmp_path)
    out = tmp_path / "out"
    assert main(["evaluate", "--gold", str(gold), "--run", str(base), "-m", "mrr", "--resamples", "0", "-o", str(out)]) == 0
    summary = out / "summary.json"
    assert json.loads(summary.read_text())["options"]["ties"] == "id"
    comment = tmp_path / "c.md"
    argv = ["gate", "--config", str(cfg), "--gold", str(gold), "--candidate", str(cand), "--comment", str(comment)]
    assert main([*argv, "--baseline", str(summary)]) == 0
    assert "Different ranking rules" in comment.read_text()
    old = json.loads(summary.read_text())
    del old["options"]["ties"]  # a summary written before the rule was recorded
    summary.write_text(json.dumps(old))
    assert main([*argv, "--baseline", str(summary)]) == 0
    assert "Different ranking rules" not in comment.read_text()
    old["options"]["ties"] = "score"
    summary.write_text(json.dumps(old))
    assert main([*argv, "--baseline", str(summary)]) == 2
    assert "field 'options.ties' must be one of: id, input; got 'score'" in capsys.readouterr().err


def test_compare_warns_when_the_rules_differ(tmp_path, capsys):
    gold, cand, base, _ = _gate_files(tmp_path)
    assert main(["compare", "--gold", str(gold), str(base), str(cand), "--resamples", "0"]) == 0
    err = capsys.readouterr().err
    assert "warning: " + RULES_DIFFER in err
    assert main(["compare", "--gold", str(gold), str(base), str(cand), "--resamples", "0", "--ties", "input"]) == 0
    assert "warning" not in capsys.readouterr().err


def test_gate_and_compare_say_the_same_sentence_when_the_rules_differ(tmp_path, capsys):
    """One sentence, written once (rankgate.gating.alike), whichever command compares the two runs."""
    gold, cand, base, cfg = _gate_files(tmp_path)
    assert main(["compare", "--gold", str(gold), str(base), str(cand), "--resamples", "0"]) == 0
    said_by_compare = [line.partition("warning: ")[2] for line in capsys.readouterr().err.splitlines() if "warning: " in line]
    assert main(["gate", "--config", str(cfg), "--gold", str(gold), "--candidate", str(cand), "--baseline", str(base),
                 "--comment", str(tmp_path / "c.md")]) == 0
    said_by_gate = [line.partition("warning: ")[2] for line in capsys.readouterr().err.splitlines() if "warning: " in line]
    assert said_by_compare == said_by_gate == [RULES_DIFFER + " (score both with the same --ties to compare like with like)"]
    # the PR comment says it too (its flags in code spans, markdown escaped)
    comment = (tmp_path / "c.md").read_text().replace("`", "").replace("\\_", "_")
    assert f"**Different ranking rules:** {said_by_gate[0]}." in comment


def test_html_report_names_the_rule(tmp_path, capsys):
    gold, cand, base, cfg = _gate_files(tmp_path)
    html = tmp_path / "r.html"
    assert main(["report", "--gold", str(gold), "--run", str(cand), "--baseline", str(base), "--config", str(cfg),
                 "--resamples", "0", "-o", str(html)]) == 0
    capsys.readouterr()
    text = html.read_text()
    assert "<dt>ranking rule</dt><dd>the file&#x27;s order; 1 query" in text
    assert ("Different ranking rules: cand.jsonl was ranked by the file&#x27;s order (<code>--ties input</code>), "
            "the baseline base.trec by score, then id descending (trec_eval&#x27;s rule) (<code>--ties id</code>)") in text


def test_dict_of_scores_is_trec_eval_shaped():
    run = {"q1": {"a": 1.0, "c": 1.0, "b": 1.0}}
    res = rankgate.evaluate({"q1": {"a": 1}}, run, ["mrr"])
    assert res.info["ties"] == "id" and math.isclose(res["mrr"][0], 1 / 3)
    assert rankgate.evaluate({"q1": {"a": 1}}, run, ["mrr"], ties="input")["mrr"].tolist() == [1.0]
    assert load_run(run).ties == "id" and load_run({"q1": ["a", "b"]}).ties == "input"


@settings(max_examples=examples(150), deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.sampled_from([0.0, 1.0, 2.0]), st.one_of(st.none(), st.integers(1, 4))),
                min_size=1, max_size=30),
       st.booleans(), st.sampled_from([None, 1, 2, 3]), st.sampled_from(["id", "input"]))
# Found by this test: under trec_eval's rule (which ignores ranks) ranks that put a lower score first
# were counted as disagreeing with the scores.
@example(rows=[(0, 0.0, 1), (0, 1.0, 2)], presorted=False, depth=None, rule="id")
def test_tie_effect_counts_what_the_two_rules_order_differently(rows, presorted, depth, rule):
    """Against both rankings built in full: queries whose top ``depth`` differ, and fully ranked queries
    whose ranks put a higher score below a lower one. ``presorted`` lays rows out grouped and by score,
    as most runs come, where only runs of tied scores move."""
    from rankgate.model.ranking import rank_order, tie_effect

    if presorted:
        rows = sorted(rows, key=lambda r: (r[0], -r[1]))
    query = np.array([r[0] for r in rows], np.int64)
    score = np.array([r[1] for r in rows])
    order = np.array([np.nan if r[2] is None else r[2] for r in rows]) if any(r[2] is not None for r in rows) else None
    doc = pa.array([f"d{i % 7}{i}" for i in range(len(rows))])
    used = rank_order(query, doc, score, order, ties=rule)
    effect = tie_effect(query, doc, score, order, used, rule, depth=depth)
    ranked = {t: rank_rows(query, doc, score, order, ties=t) for t in ("id", "input")}
    lists = {t: {} for t in ranked}
    for t, perm in ranked.items():
        for i in perm.tolist():
            lists[t].setdefault(int(query[i]), []).append(i)
    cut = depth or len(rows)
    assert effect.differ == sum(lists["id"][q][:cut] != lists["input"][q][:cut] for q in lists["id"])
    clash = 0
    if rule == "input" and order is not None:
        for items in lists["input"].values():
            if all(not np.isnan(order[i]) for i in items):
                clash += any(score[b] > score[a] for a, b in zip(items, items[1:]))
    assert effect.rank_vs_score == clash


def test_report_says_the_note_once_for_a_run_scored_several_times(tmp_path, capsys):
    gold, run = _files(tmp_path, TIED)
    assert main(["report", "--gold", str(gold), "--run", str(run), "--baseline", str(run), "--resamples", "0",
                 "-o", str(tmp_path / "r.html")]) == 0
    err = capsys.readouterr().err
    assert err.count("note: 1 query has tied scores") == 1
