"""The formats users already have: RAGAS, DeepEval, LlamaIndex, CSV/TSV with a header, Hugging Face
``save_to_disk`` folders. Each is written in the shape the tool documents, read through the CLI and
through ``rankgate.evaluate``, and must give exactly what the same data gives as rankgate JSONL."""

from __future__ import annotations

import csv
import hashlib
import json
import math
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import rankgate
from rankgate.cli.main import main
from rankgate.io import load_gold, load_run
from rankgate.io.shapes import normalise_text, text_id
from rankgate.errors import InputError

from .hostile import assert_refused
from .helpers import write_jsonl
from .conftest import examples

METRICS = "hit@1,hit@3,mrr,ndcg@10,precision@3,recall@3"

# RAGAS SingleTurnSample fields (EvaluationDataset.to_jsonl): contexts known by text only.
C_PARIS = "Paris is the capital and most populous city of France."
C_LYON = "Lyon is a city in France."
C_BERLIN = "Berlin is the capital of Germany."
C_BONN = "Bonn was the capital of West Germany."
RAGAS = [
    {"user_input": "What is the capital of France?",
     "retrieved_contexts": [C_LYON, "  paris IS the capital and most   populous city of france. "],
     "reference_contexts": [C_PARIS], "response": "Paris", "reference": "Paris"},
    {"user_input": "What is the capital of Germany?",
     "retrieved_contexts": [C_BERLIN, C_BONN, C_LYON],
     "reference_contexts": [C_BERLIN, C_BONN], "response": "Berlin", "reference": "Berlin"},
    {"user_input": "Capital of Spain?", "retrieved_contexts": [C_LYON],
     "reference_contexts": ["Madrid is the capital of Spain."], "response": "?", "reference": "Madrid"},
]


def expected_by_text(samples, q_key, gold_key, run_key):
    """The same data as rankgate JSONL records, ids by the documented text rule."""
    gold, run = [], []
    for s in samples:
        qid = "q:" + hashlib.sha256(normalise_text(s[q_key]).encode()).hexdigest()[:16]
        gold.append({"query_id": qid, "relevant": list(dict.fromkeys(text_id(t) for t in s[gold_key]))})
        run.append({"query_id": qid, "topk": [text_id(t) for t in s[run_key]]})
    return gold, run


def values(result):
    return {m: [None if math.isnan(v) else v for v in result.values[m].tolist()] for m in result.metric_names}


def cli_json(capsys, *argv) -> dict:
    assert main(["evaluate", *map(str, argv), "-m", METRICS, "--resamples", "0", "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def write_csv(path: Path, rows, *, lists=repr, delimiter=",") -> Path:
    """As pandas' to_csv writes a frame with list columns: each list as its Python repr."""
    names = list(dict.fromkeys(k for r in rows for k in r))
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh, delimiter=delimiter)
        w.writerow(names)
        for r in rows:
            w.writerow([lists(r[n]) if isinstance(r.get(n), list) else r.get(n, "") for n in names])
    return path


def write_hf(folder: Path, rows) -> Path:
    """The layout of datasets' Dataset.save_to_disk: Arrow stream file(s) named in state.json."""
    folder.mkdir()
    table = pa.Table.from_pylist(rows)
    with pa.OSFile(str(folder / "data-00000-of-00001.arrow"), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    (folder / "state.json").write_text(json.dumps({
        "_data_files": [{"filename": "data-00000-of-00001.arrow"}], "_fingerprint": "0", "_format_columns": None,
        "_format_kwargs": {}, "_format_type": None, "_output_all_columns": False, "_split": None}))
    (folder / "dataset_info.json").write_text(json.dumps({"citation": "", "description": "", "features": {}}))
    return folder


# -- RAGAS ---------------------------------------------------------------------------------------

def test_ragas_text_matching_is_whitespace_and_case_blind_and_ids_are_stable():
    assert text_id(" Paris  is\nTHE capital ") == text_id("paris is the capital")
    assert text_id("paris is the capital") == "t:" + hashlib.sha256(b"paris is the capital").hexdigest()[:16]
    assert text_id("AFL–NFL") != text_id("AFL-NFL")  # only whitespace and case are normalised


@pytest.mark.parametrize("container", ["jsonl", "json", "samples", "csv", "parquet", "hf"])
def test_ragas_file_is_gold_and_run_in_every_container(tmp_path, capsys, container):
    if container == "jsonl":
        path = write_jsonl(tmp_path / "ragas.jsonl", RAGAS)
    elif container == "json":
        path = tmp_path / "ragas.json"
        path.write_text(json.dumps(RAGAS, indent=2))
    elif container == "samples":
        path = tmp_path / "ragas.json"
        path.write_text(json.dumps({"samples": RAGAS}, indent=4))
    elif container == "csv":
        path = write_csv(tmp_path / "ragas.csv", RAGAS)
    elif container == "parquet":
        path = tmp_path / "ragas.parquet"
        pq.write_table(pa.Table.from_pylist(RAGAS), path)
    else:
        path = write_hf(tmp_path / "ragas_ds", RAGAS)
    gold, run = expected_by_text(RAGAS, "user_input", "reference_contexts", "retrieved_contexts")
    want = rankgate.evaluate(gold, run, METRICS)
    got = rankgate.evaluate(path, path, METRICS)
    assert got.query_ids == want.query_ids and values(got) == values(want)
    # q1 finds Paris at rank 2 (matched by text), q2 both at 1-2, q3 nothing
    assert values(got)["mrr"] == [0.5, 1.0, 0.0]
    summary = cli_json(capsys, "--gold", path, "--run", path)
    assert summary["metrics"]["mrr"]["mean"] == pytest.approx(0.5)


def test_ragas_ids_are_used_when_both_sides_have_them(tmp_path):
    rows = [
        {"user_input": "q one", "retrieved_context_ids": ["d3", "d1"], "reference_context_ids": ["d1"],
         "retrieved_contexts": ["x", "y"], "reference_contexts": ["y"]},
        {"user_input": "q two", "retrieved_context_ids": ["d2"], "reference_context_ids": ["d2", "d9"]},
    ]
    path = write_jsonl(tmp_path / "ids.jsonl", rows)
    gold, run = load_gold(path), load_run(path)
    assert gold.judgements() == {gold.query_ids[0]: {"d1": 1}, gold.query_ids[1]: {"d2": 1, "d9": 1}}
    assert run.r_doc.to_pylist() == ["d3", "d1", "d2"]
    assert run.items["text"] == ["x", "y", None]  # texts kept for the report where they line up
    assert gold.field("query") == ["q one", "q two"]
    r = rankgate.evaluate(path, path, "mrr,recall@5")
    assert values(r) == {"mrr": [0.5, 1.0], "recall@5": [1.0, 0.5]}


def test_ragas_query_ids_line_up_across_files_in_any_order(tmp_path):
    gold = write_jsonl(tmp_path / "gold.jsonl", RAGAS)
    shuffled = [dict(RAGAS[2]), dict(RAGAS[0]), dict(RAGAS[1])]
    shuffled[1]["user_input"] = "  what is the CAPITAL of france?"
    run = write_jsonl(tmp_path / "run.jsonl", shuffled)
    r = rankgate.evaluate(gold, run, "mrr")
    assert values(r)["mrr"] == [0.5, 1.0, 0.0] and not r.missing_from_run


def test_ragas_explicit_query_id_field_is_used(tmp_path):
    rows = [dict(RAGAS[0], query_id="fr"), dict(RAGAS[1], query_id="de")]
    path = write_jsonl(tmp_path / "r.jsonl", rows)
    assert load_gold(path).query_ids == ["fr", "de"]


def test_ragas_expected_answer_is_kept_never_relevance(tmp_path):
    path = write_jsonl(tmp_path / "r.jsonl", RAGAS)
    g = load_gold(path)
    assert g.field("expected_answer") == ["Paris", "Berlin", "Madrid"]
    assert "t:" + "" not in g.judgements()  # relevance only from reference_contexts
    assert all(d.startswith("t:") for q in g.judgements().values() for d in q)
    # a reference known only by its text keeps it as the note, for the report's top misses
    assert g.notes == [C_PARIS, C_BERLIN, C_BONN, "Madrid is the capital of Spain."]


def test_ragas_legacy_columns_are_a_run_but_not_a_gold_set(tmp_path, capsys):
    legacy = [{"question": "When was the first super bowl?", "answer": "1967",
               "contexts": ["The first AFL-NFL game was played on January 15, 1967."],
               "ground_truth": "January 15, 1967"}]
    path = write_jsonl(tmp_path / "legacy.jsonl", legacy)
    run = load_run(path)
    assert run.r_doc.to_pylist() == [text_id(legacy[0]["contexts"][0])]
    out = tmp_path / "out"
    line = assert_refused(["evaluate", "--gold", path, "--run", path, "--out", out], out, names=[path], capsys=capsys)
    assert "no gold set" in line and "ground_truth" in line and "reference_contexts" in line


def test_ragas_empty_reference_names_line_and_no_answer_is_accepted(tmp_path, capsys):
    rows = [RAGAS[0], dict(RAGAS[1], reference_contexts=[])]
    path = write_jsonl(tmp_path / "r.jsonl", rows)
    out = tmp_path / "out"
    line = assert_refused(["evaluate", "--gold", path, "--run", path, "--out", out], out, names=[path], capsys=capsys)
    assert "r.jsonl:2:" in line and "reference_contexts" in line and "no_answer" in line
    rows[1] = dict(rows[1], no_answer=True)
    write_jsonl(path, rows)
    r = rankgate.evaluate(path, path, "mrr")
    assert len(r.no_answer) == 1 and values(r)["mrr"][0] == 0.5


def test_ragas_sample_with_nothing_logged_is_missing_from_run(tmp_path):
    rows = [RAGAS[0], dict(RAGAS[1], retrieved_contexts=None)]
    path = write_jsonl(tmp_path / "r.jsonl", rows)
    r = rankgate.evaluate(path, path, "mrr")
    assert len(r.missing_from_run) == 1 and values(r)["mrr"] == [0.5, 0.0]


def test_ragas_repeated_question_names_first_line(tmp_path):
    path = write_jsonl(tmp_path / "r.jsonl", [RAGAS[0], RAGAS[1], dict(RAGAS[0], user_input="what is THE capital of France?")])
    with pytest.raises(InputError, match=r"r\.jsonl:3: field 'user_input' repeats .* of line 1"):
        load_gold(path)


# -- DeepEval ------------------------------------------------------------------------------------

DEEPEVAL = [
    {"input": "What if these shoes don't fit?", "actual_output": "We offer a 30-day full refund.",
     "expected_output": "You are eligible for a 30 day full refund at no extra cost.",
     "context": ["All customers are eligible for a 30 day full refund at no extra cost."],
     "retrieval_context": ["Shipping takes 5 days.", "All customers are eligible for a 30 day full refund at no extra cost."]},
    {"input": "Do you ship abroad?", "actual_output": "Yes.", "expected_output": "Yes, to 40 countries.",
     "context": ["We ship to 40 countries."], "retrieval_context": ["We ship to 40 countries.", "Shipping takes 5 days."]},
]


SAVE_AS = ("name", "comments", "source_file", "tools_called", "expected_tools", "additional_metadata",
           "custom_column_key_values")


@pytest.mark.parametrize("container", ["json", "csv", "save_as_csv", "save_as_jsonl"])
def test_deepeval_context_is_relevance_and_expected_output_is_not(tmp_path, capsys, container):
    saved = [{**s, **{k: None for k in SAVE_AS}} for s in DEEPEVAL]  # every column save_as writes
    if container == "json":  # save_as("json"): lists stay lists
        path = tmp_path / "dataset.json"
        path.write_text(json.dumps(saved, indent=4))
    elif container == "csv":  # a CSV for add_goldens_from_csv_file: lists joined by its default '|'
        path = write_csv(tmp_path / "dataset.csv", DEEPEVAL, lists="|".join)
    elif container == "save_as_csv":  # save_as("csv") joins lists with '|'
        path = write_csv(tmp_path / "dataset.csv", saved, lists="|".join)
    else:  # save_as("jsonl") writes the '|'-joined text too
        path = write_jsonl(tmp_path / "dataset.jsonl", [
            {**s, "context": "|".join(s["context"]), "retrieval_context": "|".join(s["retrieval_context"])} for s in saved])
    gold, run = expected_by_text(DEEPEVAL, "input", "context", "retrieval_context")
    want = rankgate.evaluate(gold, run, METRICS)
    got = rankgate.evaluate(path, path, METRICS)
    assert values(got) == values(want) and values(got)["mrr"] == [0.5, 1.0]
    g = load_gold(path)
    assert g.field("expected_answer") == [s["expected_output"] for s in DEEPEVAL]
    assert cli_json(capsys, "--gold", path, "--run", path, "--gold-format", "deepeval",
                    "--run-format", "deepeval")["metrics"]["mrr"]["mean"] == 0.75


def test_deepeval_without_context_says_expected_output_is_no_judgement(tmp_path, capsys):
    rows = [{k: v for k, v in s.items() if k != "context"} for s in DEEPEVAL]
    path = tmp_path / "d.json"
    path.write_text(json.dumps(rows))
    out = tmp_path / "out"
    line = assert_refused(["evaluate", "--gold", path, "--run", path, "--out", out], out, names=[path], capsys=capsys)
    assert "expected_output" in line and "context" in line


# -- LlamaIndex ----------------------------------------------------------------------------------

LLAMA = {"queries": {"7b1c": "What was Lyft's revenue growth?", "9f2e": "Who audits Uber?"},
         "corpus": {"node-1": "Revenue grew 36%.", "node-2": "PwC is the auditor.", "node-3": "Other."},
         "relevant_docs": {"7b1c": ["node-1"], "9f2e": ["node-2"]}, "mode": "text"}


def test_llamaindex_dataset_is_a_gold_set(tmp_path, capsys):
    gold = tmp_path / "val_dataset.json"
    gold.write_text(json.dumps(LLAMA, indent=4))  # as save_json writes it
    run = tmp_path / "run.trec"
    run.write_text("7b1c Q0 node-3 1 2.0 x\n7b1c Q0 node-1 2 1.0 x\n9f2e Q0 node-2 1 3.0 x\n")
    g = load_gold(gold)
    assert g.query_ids == ["7b1c", "9f2e"] and g.field("query") == list(LLAMA["queries"].values())
    assert g.judgements() == {"7b1c": {"node-1": 1}, "9f2e": {"node-2": 1}}
    assert values(rankgate.evaluate(gold, run, "mrr"))["mrr"] == [0.5, 1.0]
    assert cli_json(capsys, "--gold", gold, "--run", run)["metrics"]["mrr"]["mean"] == 0.75
    out = tmp_path / "out"
    line = assert_refused(["evaluate", "--gold", gold, "--run", gold, "--out", out], out, names=[gold], capsys=capsys)
    assert "gold set, not a run" in line


def test_llamaindex_relevant_doc_outside_corpus_is_named(tmp_path):
    bad = json.loads(json.dumps(LLAMA))
    bad["relevant_docs"]["9f2e"] = ["node-9"]
    path = tmp_path / "ds.json"
    path.write_text(json.dumps(bad))
    with pytest.raises(InputError, match=r"field 'relevant_docs\.9f2e' names 'node-9', which is not in corpus"):
        load_gold(path)


# -- CSV / TSV with a header ---------------------------------------------------------------------

def test_csv_with_header_is_a_table_not_trec(tmp_path, capsys):
    """Regression: a CSV run was read as a TREC file (its header line refused or misread)."""
    gold = tmp_path / "qrels.csv"
    gold.write_text("query_id,chunk_id,grade\nq1,d1,2\nq1,d2,0\nq2,d3,1\n")
    run = tmp_path / "run.csv"
    run.write_text("query_id,chunk_id,score\nq1,d2,0.9\nq2,d3,0.3\nq1,d1,0.5\n")
    r = rankgate.evaluate(gold, run, "mrr,ndcg@10")
    assert values(r)["mrr"] == [0.5, 1.0]
    assert cli_json(capsys, "--gold", gold, "--run", run)["metrics"]["mrr"]["mean"] == 0.75
    assert load_gold(gold).judgements() == {"q1": {"d1": 2, "d2": 0}, "q2": {"d3": 1}}


def test_tsv_and_column_map(tmp_path, capsys):
    gold = tmp_path / "gold.tsv"
    gold.write_text("qid\tdoc\trel\tquestion\nq1\td1\t1\tfirst question\nq2\td3\t1\tsecond\n")
    run = tmp_path / "run.tsv"
    run.write_text("qid\tdoc\ts\nq1\td2\t0.9\nq1\td1\t0.5\nq2\td3\t0.3\n")
    cols = "query_id=qid,chunk_id=doc,score=s,grade=rel"
    summary = cli_json(capsys, "--gold", gold, "--run", run, "--columns", cols)
    assert summary["metrics"]["mrr"]["mean"] == 0.75
    g = load_gold(gold, columns={"query_id": "qid", "chunk_id": "doc", "grade": "rel"})
    assert g.field("query") == ["first question", "second"]
    r = rankgate.evaluate(gold, run, "mrr", columns={"query_id": "qid", "chunk_id": "doc", "score": "s", "grade": "rel"})
    assert values(r)["mrr"] == [0.5, 1.0]


def test_csv_rank_column_orders_a_run_without_scores(tmp_path):
    gold = tmp_path / "g.csv"
    gold.write_text("query_id,chunk_id,grade\nq1,a,1\n")
    run = tmp_path / "r.csv"
    run.write_text("query_id,chunk_id,rank\nq1,b,2\nq1,a,1\n")
    assert values(rankgate.evaluate(gold, run, "mrr"))["mrr"] == [1.0]


@pytest.mark.parametrize("content, expect", [
    ("query_id,chunk_id,grade\nq1,d1,2\nq1,d2,high\n", r"g\.csv:3: field 'grade' must be an integer grade; got 'high'"),
    ("query_id,chunk_id,grade\nq1,d1,2\n\nq1,d1,1\n", r"g\.csv:4: field 'chunk_id' judges 'd1' for query 'q1' again \(first on line 2\)"),
    ("query_id,chunk_id,grade\nq1,,2\n", r"g\.csv:2: field 'chunk_id' must be a non-empty id"),
    ("qid,passage,grade\nq1,d1,2\n", r"g\.csv: has fields qid, passage, grade: none rankgate knows .*--columns"),
    ("query_id,chunk_id,grade\nq1,d1\n", r"g\.csv:2: has 2 columns; the header has 3"),
])
def test_csv_errors_name_line_and_field(tmp_path, capsys, content, expect):
    gold = tmp_path / "g.csv"
    gold.write_text(content)
    run = tmp_path / "r.jsonl"
    write_jsonl(run, [{"query_id": "q1", "topk": ["d1"]}])
    out = tmp_path / "out"
    line = assert_refused(["evaluate", "--gold", gold, "--run", run, "--out", out], out, names=[gold], capsys=capsys)
    import re

    assert re.search(expect, line), line


def test_csv_run_with_a_non_finite_score_names_its_line(tmp_path, capsys):
    gold = tmp_path / "g.csv"
    gold.write_text("query_id,chunk_id,grade\nq1,d1,1\n")
    run = tmp_path / "r.csv"
    run.write_text("query_id,chunk_id,score\nq1,d1,2\nq1,d2,-inf\n")
    out = tmp_path / "out"
    line = assert_refused(["evaluate", "--gold", gold, "--run", run, "--out", out], out, names=[run], capsys=capsys)
    assert "r.csv:3: field 'score' must be a finite number; got '-inf'" in line


def test_column_map_naming_a_missing_column(tmp_path, capsys):
    gold = tmp_path / "g.csv"
    gold.write_text("qid,doc,rel\nq1,d1,1\n")
    out = tmp_path / "out"
    line = assert_refused(["evaluate", "--gold", gold, "--run", gold, "--columns", "query_id=qid,chunk_id=doc,grade=relevance",
                           "--out", out], out, names=[gold], capsys=capsys)
    assert "has no column 'relevance' (mapped to grade by --columns)" in line
    line = assert_refused(["evaluate", "--gold", gold, "--run", gold, "--columns", "qid=query_id", "--out", out], out,
                          capsys=capsys)
    assert "unknown field 'qid'" in line
    # a file that names the field itself needs no entry: one map for a gold set and a run
    std = tmp_path / "std.csv"
    std.write_text("query_id,chunk_id,score\nq1,d1,0.5\n")
    r = rankgate.evaluate(gold, std, "mrr", columns={"query_id": "qid", "chunk_id": "doc", "grade": "rel", "score": "s"})
    assert values(r)["mrr"] == [1.0]


# -- detection -----------------------------------------------------------------------------------

def test_forced_wrong_format_names_the_shape_seen_and_the_format_that_fits(tmp_path, capsys):
    path = write_jsonl(tmp_path / "ragas.jsonl", RAGAS)
    out = tmp_path / "out"
    line = assert_refused(["evaluate", "--gold", path, "--gold-format", "jsonl", "--run", path, "--out", out], out,
                          names=[path], capsys=capsys)
    assert "this looks like a RAGAS dataset: use --gold-format ragas" in line
    line = assert_refused(["evaluate", "--gold", path, "--gold-format", "deepeval", "--run", path, "--out", out], out,
                          names=[path], capsys=capsys)
    assert "does not look like a DeepEval dataset" in line and "use --gold-format ragas" in line


def test_rankgate_jsonl_and_existing_formats_are_detected_as_before(tmp_path):
    gold = write_jsonl(tmp_path / "g.jsonl", [{"query_id": "q1", "question": "x", "relevant_chunks": ["a"]}])
    run = write_jsonl(tmp_path / "r.jsonl", [{"query_id": "q1", "input": "x", "topk": ["b", "a"]}])
    assert values(rankgate.evaluate(gold, run, "mrr"))["mrr"] == [0.5]
    qrels = tmp_path / "qrels.tsv"  # BEIR qrels keep their reader
    qrels.write_text("query-id\tcorpus-id\tscore\nq1\ta\t1\n")
    assert load_gold(qrels).judgements() == {"q1": {"a": 1}}


def test_hf_dataset_dict_folder_asks_for_a_split(tmp_path, capsys):
    root = tmp_path / "dsdict"
    root.mkdir()
    (root / "dataset_dict.json").write_text(json.dumps({"splits": ["train", "test"]}))
    write_hf(root / "test", RAGAS)
    out = tmp_path / "out"
    line = assert_refused(["evaluate", "--gold", root, "--run", root, "--out", out], out, names=[root], capsys=capsys)
    assert "splits test" in line
    assert values(rankgate.evaluate(root / "test", root / "test", "mrr"))["mrr"] == [0.5, 1.0, 0.0]


def test_hf_long_table_with_ids(tmp_path):
    gold = write_hf(tmp_path / "gold_ds", [{"query_id": "q1", "chunk_id": "a", "grade": 1}])
    run = write_hf(tmp_path / "run_ds", [{"query_id": "q1", "chunk_id": "b", "score": 2.0},
                                          {"query_id": "q1", "chunk_id": "a", "score": 1.0}])
    assert values(rankgate.evaluate(gold, run, "mrr"))["mrr"] == [0.5]


def test_every_command_reads_the_new_formats(tmp_path, capsys):
    """compare, gate and report take the same inputs as evaluate (formats, --columns, --ties)."""
    ragas = write_jsonl(tmp_path / "ragas.jsonl", RAGAS)
    ragas_csv = write_csv(tmp_path / "ragas.csv", RAGAS)
    assert main(["compare", "--gold", str(ragas), str(ragas), str(ragas_csv), "--resamples", "50"]) == 0
    cfg = tmp_path / "c.yaml"
    cfg.write_text("gates:\n  - {name: mrr, metric: mrr, threshold: 0.4}\n")
    assert main(["gate", "--config", str(cfg), "--gold", str(ragas), "--candidate", str(ragas_csv)]) == 0
    gold = tmp_path / "g.tsv"
    gold.write_text("qid\tdoc\trel\nq1\td1\t1\n")
    run = tmp_path / "r.csv"
    run.write_text("qid,doc,s\nq1,d1,0.9\nq1,d2,0.9\n")
    cols = "query_id=qid,chunk_id=doc,score=s,grade=rel"
    html = tmp_path / "r.html"
    assert main(["report", "--gold", str(gold), "--run", str(run), "--columns", cols, "--ties", "input",
                 "--resamples", "0", "-o", str(html)]) == 0
    cfg.write_text("gates:\n  - {name: mrr, metric: mrr, threshold: 0.9}\n")
    argv = ["gate", "--config", str(cfg), "--gold", str(gold), "--candidate", str(run), "--columns", cols]
    assert main([*argv, "--ties", "input"]) == 0  # d1 first as given: mrr 1
    assert main(argv) == 0  # the default for a CSV: its rows' order
    assert main([*argv, "--ties", "id"]) == 1  # d2 first (id descending): mrr 0.5
    cfg.write_text("evaluate: {ties: id}\ngates:\n  - {name: mrr, metric: mrr, threshold: 0.9}\n")
    assert main(argv) == 1  # the ship criteria's rule
    assert main([*argv, "--ties", "input"]) == 0  # the option overrides it
    capsys.readouterr()


# -- the CSV fast path gives exactly the line-by-line reader's result ------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

CELL_ID = st.sampled_from(["q1", "q2", "d1", "d2", " d3", "d4 ", "", "x,y", "é"])
CELL_NUM = st.sampled_from(["1", "0", "-1", "2.0", "0.5", "nan", "", "high", "1e3", " 3", "inf", "1e400"])


@settings(max_examples=examples(150), deadline=None)
@given(st.lists(st.tuples(CELL_ID, CELL_ID, CELL_NUM), min_size=1, max_size=12), st.sampled_from(["gold", "run"]),
       st.sampled_from([",", "\t"]))
def test_csv_fast_path_equals_line_by_line(tmp_path_factory, rows, kind, delimiter):
    from rankgate.io.csvtable import read_table_gold, read_table_run
    from rankgate.io.tools.records import read_records

    path = tmp_path_factory.mktemp("csv") / ("t.tsv" if delimiter == "\t" else "t.csv")
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh, delimiter=delimiter)
        w.writerow(["query_id", "chunk_id", "grade" if kind == "gold" else "score"])
        w.writerows(rows)

    def outcome(fn):
        try:
            obj = fn()
        except InputError as exc:
            return ("error", str(exc))
        if kind == "gold":
            return (obj.query_ids, obj.j_query.tolist(), obj.j_doc.to_pylist(), obj.j_grade.tolist(), obj.fields, obj.notes)
        return (obj.query_ids, obj.r_query.tolist(), obj.r_doc.to_pylist(),
                None if obj.r_score is None else obj.r_score.tolist(), obj.items)

    slow = outcome(lambda: (read_table_gold if kind == "gold" else read_table_run)(read_records(str(path), "csv")))
    fast = outcome(lambda: (load_gold if kind == "gold" else load_run)(path))
    assert fast == slow


def test_csv_fast_path_takes_a_clean_file(tmp_path):
    from rankgate.io.tools.read import _csv_fast

    run = tmp_path / "r.csv"
    run.write_text("query_id,chunk_id,score,text\nq1,d1,0.5,hello\nq2,d2,1,\n")
    fast = _csv_fast(str(run), "csv", "run", None)
    assert fast is not None and fast.r_score.tolist() == [0.5, 1.0] and fast.items["text"] == ["hello", None]


@pytest.mark.parametrize("name, content, expect", [
    ("bad.csv", "user_input,retrieved_contexts,reference_contexts\nq,\"['a', 'b'\",['a']\n",
     r"bad\.csv:2: field 'retrieved_contexts' is not a list literal"),
    ("bad.jsonl", '{"user_input": "q", "retrieved_contexts": [{"page_content": "a"}], "reference_contexts": ["a"]}\n',
     r"bad\.jsonl:1: field 'retrieved_contexts' must be a list of strings"),
    ("bad.jsonl", ('{"user_input": "q", "retrieved_contexts": ["a"], "reference_contexts": ["a"]}\n{"user_input": 3, '
                   '"retrieved_contexts": ["a"], "reference_contexts": ["a"]}\n'),
     r"bad\.jsonl:2: field 'user_input' must be a string"),
    ("bad.json", '[\n {"user_input": "q", "retrieved_contexts": ["a"], "reference_contexts": ["a"]},\n {"user_input": "r",\n',
     r"bad\.json:\d+: is not valid JSON"),
    ("bad.json", '{"queries": {"q": "x"}, "corpus": {"d": "t"}, "relevant_docs": {"q": []}}',
     r"bad\.json: field 'relevant_docs\.q' must list at least one node id"),
])
def test_hostile_tool_files_are_refused_with_line_and_field(tmp_path, capsys, name, content, expect):
    import re

    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    out = tmp_path / "out"
    out.mkdir()
    (out / "metrics.csv").write_text("old\n")
    line = assert_refused(["evaluate", "--gold", path, "--run", path, "--out", out], out, names=[path], capsys=capsys)
    assert re.search(expect, line), line


def test_ragas_ids_on_one_side_match_by_text_on_both(tmp_path):
    rows = [{"user_input": "q", "retrieved_context_ids": ["d9", "d1"], "retrieved_contexts": ["other", "The answer."],
             "reference_contexts": ["the  answer."]}]
    path = write_jsonl(tmp_path / "r.jsonl", rows)
    assert load_run(path).r_doc.to_pylist() == [text_id("other"), text_id("The answer.")]
    assert values(rankgate.evaluate(path, path, "mrr"))["mrr"] == [0.5]
    gold_only = write_jsonl(tmp_path / "g.jsonl", [{"user_input": "q", "reference_context_ids": ["d1"]}])
    assert values(rankgate.evaluate(gold_only, path, "mrr"))["mrr"] == [0.0]  # ids against texts: documented
    ids_run = write_jsonl(tmp_path / "ids.jsonl", [{"user_input": "q", "retrieved_context_ids": ["d9", "d1"]}])
    assert values(rankgate.evaluate(gold_only, ids_run, "mrr"))["mrr"] == [0.5]


def test_ragas_fields_null_in_every_sample_count_as_absent(tmp_path):
    """An export writes unset fields as null (JSON) or empty cells (CSV): they must not switch on ids."""
    rows = [{**s, "retrieved_context_ids": None, "reference_context_ids": None} for s in RAGAS]
    for path in (write_jsonl(tmp_path / "n.jsonl", rows), write_csv(tmp_path / "n.csv", rows)):
        assert values(rankgate.evaluate(path, path, "mrr"))["mrr"] == [0.5, 1.0, 0.0]


def test_in_memory_tool_data_through_the_python_api():
    """What users hold in a notebook: RAGAS samples as dicts (EvaluationDataset.to_list()), an object
    with to_list(), a LlamaIndex dataset as a dict, a DataFrame-like table."""
    gold, run = expected_by_text(RAGAS, "user_input", "reference_contexts", "retrieved_contexts")
    want = values(rankgate.evaluate(gold, run, METRICS))
    assert values(rankgate.evaluate(RAGAS, RAGAS, METRICS)) == want

    class Dataset:  # the to_list() protocol of RAGAS' and Hugging Face's datasets
        def to_list(self):
            return [dict(s) for s in RAGAS]

    class Frame:  # a pandas DataFrame as to_pandas() gives it, lists as numpy arrays
        columns = tuple(RAGAS[0])

        def to_dict(self, orient):
            assert orient == "records"
            return [{k: (np.array(v) if isinstance(v, list) else v) for k, v in s.items()} for s in RAGAS]

    import numpy as np

    assert values(rankgate.evaluate(Dataset(), Frame(), METRICS)) == want
    assert load_gold(LLAMA).judgements() == {"7b1c": {"node-1": 1}, "9f2e": {"node-2": 1}}
    with pytest.raises(InputError, match="holds a gold set, not a run"):
        load_run(LLAMA)
    with pytest.raises(InputError, match=r"<gold>:1: field 'query_id' is missing"):  # a forced format is obeyed
        load_gold(RAGAS, format="jsonl")
    # rankgate's own in-memory shapes are unchanged
    assert values(rankgate.evaluate({"q1": {"a": 1}}, {"q1": ["b", "a"]}, "mrr"))["mrr"] == [0.5]


def test_tool_formats_import_neither_pandas_nor_datasets(tmp_path):
    """Stand-in pandas and datasets packages record any attempt to import them (and then fail as
    if absent), so the check holds whether or not the real ones are installed."""
    import os
    import subprocess
    import sys

    pq.write_table(pa.Table.from_pylist(RAGAS), tmp_path / "r.parquet")
    write_hf(tmp_path / "ds", RAGAS)
    write_csv(tmp_path / "r.csv", RAGAS)
    fake = tmp_path / "fake"
    for name in ("pandas", "datasets"):
        (fake / name).mkdir(parents=True)
        (fake / name / "__init__.py").write_text(
            "import os\n"
            f"open(os.environ['IMPORT_LOG'], 'a').write('{name}\\n')\n"
            f"raise ImportError('{name} is not wanted here')\n")
    log = tmp_path / "imports.log"
    code = ("import rankgate\n"
            f"for p in ({str(tmp_path / 'r.parquet')!r}, {str(tmp_path / 'ds')!r}, {str(tmp_path / 'r.csv')!r}):\n"
            "    rankgate.evaluate(p, p, 'mrr')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(fake), os.environ.get("PYTHONPATH", "")]),
           "IMPORT_LOG": str(log)}
    subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert not log.exists(), log.read_text()


@settings(max_examples=examples(200), deadline=None)
@given(st.text(min_size=1, max_size=40), st.lists(st.sampled_from([" ", "\t", "\n", "\r\n", "\u00a0", "\u2003"]), min_size=1, max_size=4))
def test_text_ids_ignore_whitespace_runs_and_ends(text, spaces):
    pad = "".join(spaces)
    assert text_id(pad + pad.join(text.split()) + pad) == text_id(text)
    assert text_id(text.upper().casefold()) == text_id(text.casefold())


def test_errors_in_a_pretty_printed_array_name_the_samples_line(tmp_path):
    rows = [RAGAS[0], dict(RAGAS[1], reference_contexts=[])]
    path = tmp_path / "d.json"
    path.write_text(json.dumps(rows, indent=2))
    start = [i for i, ln in enumerate(path.read_text().splitlines(), 1) if ln == "  {"][1]  # the second sample
    with pytest.raises(InputError, match=rf"d\.json:{start}: field 'reference_contexts' is empty"):
        load_gold(path)


def test_tables_by_content_gzip_and_pipes(tmp_path, capsys):
    """A CSV that is gzip by content, and CSV or RAGAS data through a pipe (no extension to go by)."""
    import gzip

    from .test_hostile_readers import _fifo

    gold = tmp_path / "g.csv"
    gold.write_text("query_id,chunk_id,grade\nq1,d1,1\nq2,d3,1\n")
    text = "query_id,chunk_id,score\nq1,d2,0.9\nq1,d1,0.5\nq2,d3,0.3\n"
    zipped = tmp_path / "run.csv"  # gzip, though not named so
    zipped.write_bytes(gzip.compress(text.encode()))
    assert values(rankgate.evaluate(gold, zipped, "mrr"))["mrr"] == [0.5, 1.0]
    with _fifo(tmp_path / "63", text.encode()) as pipe:
        assert cli_json(capsys, "--gold", gold, "--run", pipe)["metrics"]["mrr"]["mean"] == 0.75
    ragas = "".join(json.dumps(s) + "\n" for s in RAGAS).encode()
    with _fifo(tmp_path / "62", ragas) as pipe:
        assert cli_json(capsys, "--gold", pipe, "--run", write_jsonl(tmp_path / "r.jsonl", RAGAS))["metrics"]["mrr"]["mean"] \
            == pytest.approx(0.5)


def test_hf_folder_inputs_are_hashed_by_their_arrow_files(tmp_path):
    """summary.json hashes the files actually read: a save_to_disk folder's Arrow data, in order."""
    ds = write_hf(tmp_path / "ds", RAGAS)
    data = (ds / "data-00000-of-00001.arrow").read_bytes()
    r = rankgate.evaluate(ds, ds, "mrr")
    assert r.inputs["gold"]["sha256"] == r.inputs["run"]["sha256"] == hashlib.sha256(data).hexdigest()
    # two shards, listed in state.json: read and hashed in that order
    two = write_hf(tmp_path / "two", RAGAS[2:])
    (two / "data-00000-of-00001.arrow").rename(two / "data-00001-of-00002.arrow")
    first = write_hf(tmp_path / "first", RAGAS[:2]) / "data-00000-of-00001.arrow"
    first.rename(two / "data-00000-of-00002.arrow")
    state = json.loads((two / "state.json").read_text())
    state["_data_files"] = [{"filename": "data-00000-of-00002.arrow"}, {"filename": "data-00001-of-00002.arrow"}]
    (two / "state.json").write_text(json.dumps(state))
    r = rankgate.evaluate(two, two, "mrr")
    assert values(r)["mrr"] == [0.5, 1.0, 0.0]
    shards = (two / "data-00000-of-00002.arrow").read_bytes() + (two / "data-00001-of-00002.arrow").read_bytes()
    assert r.inputs["gold"]["sha256"] == hashlib.sha256(shards).hexdigest()


@pytest.mark.parametrize("name, content, forced", [
    ("deep.json", "[" * 100_000 + "]" * 100_000, False),
    ("deep.json", "[" * 100_000 + "]" * 100_000, True),
    ("deep.jsonl", '{"user_input": "q", "retrieved_contexts": ' + "[" * 100_000 + "]" * 100_000 + "}\n", True),
    ("deep.csv", "user_input,retrieved_contexts,reference_contexts\nq," + "[" * 5_000 + "]" * 5_000 + ",['a']\n", False),
])
def test_deeply_nested_json_is_an_input_error(tmp_path, capsys, name, content, forced):
    """Regression: nesting past Python's recursion limit was an internal error (exit 3)."""
    path = tmp_path / name
    path.write_text(content)
    out = tmp_path / "out"
    formats = ["--gold-format", "ragas", "--run-format", "ragas"] if forced else []
    line = assert_refused(["evaluate", "--gold", path, "--run", path, *formats, "--out", out], out,
                          names=[path], capsys=capsys)
    assert "too deep" in line, line
