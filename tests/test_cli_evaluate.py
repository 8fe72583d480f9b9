"""`rankgate evaluate` as a user runs it: real files in every format, clear errors, atomic outputs."""

from __future__ import annotations

import csv
import gzip
import json
import subprocess
import sys

import pytest

from rankgate.cli.main import main

from .conftest import shared_path
from .helpers import write_jsonl

GOLD = [
    {"query_id": "q1", "query": "export on free plan", "relevant_chunks": [{"chunk_id": "doc_export#c2", "grade": 3, "note": "says so"}],
     "intent": "how_to", "tags": {"lang": "en"}, "must_not_retrieve": ["doc_old#c1"]},
    {"query_id": "q2", "query": "refund", "relevant_chunks": [{"chunk_id": "doc_refund#c1", "grade": 2}, {"chunk_id": "doc_refund#c2", "grade": 1}],
     "intent": "billing", "tags": {"lang": "de"}},
    {"query_id": "q3", "query": "weather tomorrow", "relevant_chunks": [], "no_answer": True, "intent": "chitchat"},
]
RUN = [
    {"query_id": "q1", "topk": [{"chunk_id": "doc_old#c1", "score": 3.0}, {"chunk_id": "doc_export#c2", "score": 2.0}]},
    {"query_id": "q2", "topk": [{"chunk_id": "doc_refund#c2", "score": 1.5}, {"chunk_id": "x#c1", "score": 1.0}]},
    {"query_id": "q9", "topk": [{"chunk_id": "a", "score": 1.0}]},
]


@pytest.fixture
def files(tmp_path):
    return write_jsonl(tmp_path / "gold.jsonl", GOLD), write_jsonl(tmp_path / "run.jsonl", RUN)


def run_cli(*args, capsys=None):
    code = main([str(a) for a in args])
    return code


def test_writes_csv_and_summary(files, tmp_path, capsys):
    gold, run = files
    out = tmp_path / "out"
    code = main(["evaluate", "--gold", str(gold), "--run", str(run), "-m", "recall@5,mrr,ndcg@10,forbidden@5",
                 "--out", str(out), "--resamples", "200"])
    assert code == 0
    shown = capsys.readouterr().out
    assert "recall@5" in shown and "missing from the run (counted as retrieving nothing): q3" in shown
    assert "1 run queries not in the gold set were ignored: q9" in shown
    rows = list(csv.DictReader((out / "metrics.csv").open()))
    assert [r["query_id"] for r in rows] == ["q1", "q2", "q3"]
    assert list(rows[0])[:5] == ["query_id", "recall@5", "mrr", "ndcg@10", "forbidden@5"]
    assert rows[0]["tags.lang"] == "en" and rows[0]["intent"] == "how_to"
    assert rows[2]["recall@5"] == ""  # no-answer query: ranking metrics do not apply
    summary = json.loads((out / "summary.json").read_text())
    assert summary["metrics"]["recall@5"]["n"] == 2
    assert summary["metrics"]["recall@5"]["mean"] == pytest.approx(0.75)
    assert summary["metrics"]["forbidden@5"]["mean"] == 1.0
    assert "ci_low" in summary["metrics"]["recall@5"]
    assert summary["queries"]["not_in_gold"] == ["q9"] and summary["queries"]["no_answer"] == ["q3"]
    assert len(summary["inputs"]["gold"]["sha256"]) == 64
    assert "recall@k = |D_k ∩ G| / |G|" in summary["definitions"]["recall@5"]


def test_outputs_are_byte_identical(files, tmp_path):
    gold, run = files
    outs = []
    for name in ("a", "b"):
        out = tmp_path / name
        assert main(["evaluate", "--gold", str(gold), "--run", str(run), "--out", str(out), "--seed", "3"]) == 0
        outs.append(((out / "metrics.csv").read_bytes(), (out / "summary.json").read_bytes()))
    assert outs[0] == outs[1]


def test_every_format_gives_the_same_numbers(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    d = shared_path("fixtures", "trec_eval")
    qrels, run = d / "qrels.test", d / "results.test"
    rows_q = [line.split() for line in qrels.read_text().splitlines() if line.strip()]
    rows_r = [line.split() for line in run.read_text().splitlines() if line.strip()]
    # gzip
    gz = tmp_path / "run.trec.gz"
    gz.write_bytes(gzip.compress(run.read_bytes()))
    # BEIR tsv
    tsv = tmp_path / "qrels.tsv"
    tsv.write_text("query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d_}\t{g}\n" for q, _, d_, g in rows_q))
    # Parquet
    pq.write_table(pa.table({"query_id": [r[0] for r in rows_q], "chunk_id": [r[2] for r in rows_q],
                             "grade": [int(r[3]) for r in rows_q]}), tmp_path / "gold.parquet")
    pq.write_table(pa.table({"query_id": [r[0] for r in rows_r], "chunk_id": [r[2] for r in rows_r],
                             "score": [float(r[4]) for r in rows_r]}), tmp_path / "run.parquet")
    # JSONL (gold with graded relevant_chunks; run with topk)
    by_q: dict = {}
    for q, _, d_, g in rows_q:
        by_q.setdefault(q, []).append({"chunk_id": d_, "grade": int(g)})
    write_jsonl(tmp_path / "gold.jsonl", [{"query_id": q, "relevant_chunks": v} for q, v in by_q.items()])
    by_r: dict = {}
    for r in rows_r:
        by_r.setdefault(r[0], []).append({"chunk_id": r[2], "score": float(r[4])})
    write_jsonl(tmp_path / "run.jsonl", [{"query_id": q, "topk": v} for q, v in by_r.items()])

    import rankgate

    metrics = ["map", "ndcg@10", "recall@100", "precision@5", "mrr"]
    expected = rankgate.evaluate(str(qrels), str(run), metrics).means
    # The TREC file's tied scores: trec_eval's rule there, the rows' order in the converted files
    # unless --ties id asks for trec_eval's rule everywhere.
    for g, r in [(tsv, gz), (tmp_path / "gold.parquet", tmp_path / "run.parquet"),
                 (tmp_path / "gold.jsonl", tmp_path / "run.jsonl"), (qrels, tmp_path / "run.jsonl")]:
        got = rankgate.evaluate(str(g), str(r), metrics, ties="id").means
        assert got == pytest.approx(expected, abs=1e-12), (g.name, r.name)
        default = rankgate.evaluate(str(g), str(r), metrics)
        assert default.info["ties"] == ("id" if r == gz else "input")
        if r != gz:
            assert default.info["ties_differ"] > 0  # results.test has tied scores that its line order breaks


BAD_CASES = {
    "malformed json": ('{"query_id": "q1", "relevant": ["a"]}\n{"query_id": "q2", "relevant": [\n', None,
                       "gold.jsonl:2: is not valid JSON"),
    "missing query id": ('{"relevant": ["a"]}\n', None, "gold.jsonl:1: field 'query_id' is missing"),
    "non-integer grade": ('{"query_id": "q1", "relevant_chunks": [{"chunk_id": "a", "grade": "high"}]}\n', None,
                          "field 'relevant_chunks[0].grade' must be an integer grade; got 'high'"),
    "empty relevant": ('{"query_id": "q1", "relevant_chunks": []}\n', None, 'set "no_answer": true'),
    "duplicate query": ('{"query_id": "q1", "relevant": ["a"]}\n{"query_id": "q1", "relevant": ["b"]}\n', None,
                        "gold.jsonl:2: field 'query_id' repeats query id 'q1'"),
    "empty gold": ("", None, "gold.jsonl: is empty"),
    "duplicate doc in run": (None, '{"query_id": "q1", "topk": [{"id": "a", "score": 2}, {"id": "b", "score": 1}, {"id": "a", "score": 0.5}]}\n',
                             "lists 'a' more than once for query 'q1'"),
    "run item without id": (None, '{"query_id": "q1", "topk": [{"score": 2}]}\n', "run.jsonl:1: field 'topk[0]' item"),
    "run with no ranking": (None, '{"query_id": "q1"}\n', "run.jsonl:1: field 'topk' has no ranking"),
    "no shared query id": (None, '{"query_id": "1", "topk": ["a"]}\n',
                           "run.jsonl: shares no query id with the gold set (gold ids look like 'q1', run ids like '1')"),
}


@pytest.mark.parametrize("case", sorted(BAD_CASES))
def test_bad_input_is_one_clear_line_and_no_output(case, tmp_path, capsys):
    gold_text, run_text, message = BAD_CASES[case]
    gold = tmp_path / "gold.jsonl"
    run = tmp_path / "run.jsonl"
    gold.write_text('{"query_id": "q1", "relevant": ["a"]}\n' if gold_text is None else gold_text)
    run.write_text('{"query_id": "q1", "topk": ["a", "b"]}\n' if run_text is None else run_text)
    out = tmp_path / "out"
    code = main(["evaluate", "--gold", str(gold), "--run", str(run), "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2
    assert message in err, err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not out.exists()


def test_wrong_trec_column_count(tmp_path, capsys):
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 a 1 2.0 tag\nq1 Q0 b 2\n")
    gold = tmp_path / "qrels"
    gold.write_text("q1 0 a 1\n")
    assert main(["evaluate", "--gold", str(gold), "--run", str(run)]) == 2
    assert "run.trec:2: has 4 columns; expected 6" in capsys.readouterr().err
    gold.write_text("q1 0 a 1\nq1 a 1\n")
    run.write_text("q1 Q0 a 1 2.0 tag\n")
    assert main(["evaluate", "--gold", str(gold), "--run", str(run)]) == 2
    assert "qrels:2: has 3 columns; expected 4" in capsys.readouterr().err


def test_unknown_metric_suggests(files, capsys):
    gold, run = files
    assert main(["evaluate", "--gold", str(gold), "--run", str(run), "-m", "ndgc@10"]) == 2
    assert "did you mean 'ndcg@10'?" in capsys.readouterr().err


def test_missing_file(tmp_path, capsys):
    assert main(["evaluate", "--gold", str(tmp_path / "nope.jsonl"), "--run", str(tmp_path / "r.jsonl")]) == 2
    assert "nope.jsonl: does not exist" in capsys.readouterr().err


def test_dedupe_first_keeps_best_rank_and_reports(tmp_path, capsys):
    gold = write_jsonl(tmp_path / "gold.jsonl", [{"query_id": "q1", "relevant": ["a"]}])
    run = write_jsonl(tmp_path / "run.jsonl", [{"query_id": "q1", "topk": [{"id": "b", "score": 3}, {"id": "a", "score": 2}, {"id": "b", "score": 1}]}])
    assert main(["evaluate", "--gold", str(gold), "--run", str(run), "-m", "mrr,precision@2", "--dedupe", "first",
                 "--json", "--resamples", "0"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["metrics"]["mrr"]["mean"] == 0.5
    assert summary["options"]["duplicates_dropped"] == 1


def test_trec_mode_matches_trec_eval_query_set(capsys):
    d = shared_path("fixtures", "trec_eval")
    assert main(["evaluate", "--gold", str(d / "qrels.test"), "--run", str(d / "results.trunc"), "-m", "map",
                 "--trec", "--json", "--resamples", "0"]) == 0
    assert json.loads(capsys.readouterr().out)["metrics"]["map"]["n"] == 2  # topic 302 is not in the run
    assert main(["evaluate", "--gold", str(d / "qrels.test"), "--run", str(d / "results.trunc"), "-m", "map",
                 "--trec", "-c", "--json", "--resamples", "0"]) == 0
    assert json.loads(capsys.readouterr().out)["metrics"]["map"]["n"] == 3


def test_python_dash_m_and_console_script(files, tmp_path):
    gold, run = files
    out = subprocess.run([sys.executable, "-m", "rankgate", "evaluate", "--gold", str(gold), "--run", str(run),
                          "--json", "--resamples", "0"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["metrics"]["hit@5"]["mean"] == 1.0
    help_ = subprocess.run([sys.executable, "-m", "rankgate", "--help"], capture_output=True, text=True)
    assert help_.returncode == 0 and "evaluate" in help_.stdout


def test_doc_level_from_cli(tmp_path, capsys):
    gold = write_jsonl(tmp_path / "gold.jsonl", [{"query_id": "q", "relevant": ["d1#c1"]}])
    run = write_jsonl(tmp_path / "run.jsonl", [{"query_id": "q", "retrieved": ["d2#c1", "d2#c2", "d1#c7"]}])
    assert main(["evaluate", "--gold", str(gold), "--run", str(run), "-m", "mrr", "--level", "doc", "--json", "--resamples", "0"]) == 0
    assert json.loads(capsys.readouterr().out)["metrics"]["mrr"]["mean"] == 0.5
    mapping = tmp_path / "map.tsv"
    mapping.write_text("d1#c1\tD\nd1#c7\tD\nd2#c1\tE\nd2#c2\tE\n")
    assert main(["evaluate", "--gold", str(gold), "--run", str(run), "-m", "mrr", "--level", "doc", "--doc-map", str(mapping),
                 "--json", "--resamples", "0"]) == 0
    assert json.loads(capsys.readouterr().out)["metrics"]["mrr"]["mean"] == 0.5
    mapping.write_bytes(b"d1#c1\tD\xff\n")
    assert main(["evaluate", "--gold", str(gold), "--run", str(run), "-m", "mrr", "--level", "doc", "--doc-map", str(mapping),
                 "--resamples", "0"]) == 2
    assert "map.tsv:1: is not UTF-8 text (byte 0xff at column 8)" in capsys.readouterr().err


@pytest.mark.parametrize(
    "qrels, line, doc",
    [
        ("q1 0 d01 1\nq1 0 d02 0\nq2 0 d01 1\nq1 0 d03 1\nq2 0 d01 2\n", 5, "d01"),  # queries interleaved
        ("q1 0 d01 1\nq1 0 d02 0\nq1 0 d01 2\nq2 0 d01 1\n", 3, "d01"),  # grouped by query
        ("q1 0 a-1 1\nq1 0 b 0\nq2 0 b 1\nq2 0 b 1\n", 4, "b"),  # ids that are not numbers
    ],
)
def test_a_pair_judged_twice_in_qrels_names_the_repeating_line(qrels, line, doc, tmp_path, capsys):
    (tmp_path / "qrels.txt").write_text(qrels)
    (tmp_path / "run.txt").write_text("q1 Q0 d01 1 1.0 t\nq2 Q0 d01 1 1.0 t\n")
    code = main(["evaluate", "--gold", str(tmp_path / "qrels.txt"), "--run", str(tmp_path / "run.txt")])
    err = capsys.readouterr().err
    assert code == 2
    # (whichever reader took the file, the message names both lines: the line-by-line reader's words)
    assert f"qrels.txt:{line}: judges '{doc}' for query" in err and "again (first on line" in err, err


@pytest.mark.parametrize("command", ["evaluate", "report"])
def test_both_inputs_bad_the_gold_set_is_named_first(tmp_path, capsys, command):
    """The gold set is read on a thread beside the run: its error still comes first, as if read first."""
    gold, run = tmp_path / "gold.jsonl", tmp_path / "run.jsonl"
    gold.write_text('{"query_id": "q1", "relevant_chunks": [{"chunk_id": "d1", "grade": "high"}]}\n')
    run.write_text('{"query_id": "q1", "topk": [{"chunk_id": "d1", "score": "x"}]}\n')
    out = ["--out", str(tmp_path / "o")] if command == "evaluate" else ["-o", str(tmp_path / "r.html")]
    assert main([command, "--gold", str(gold), "--run", str(run), *out]) == 2
    err = capsys.readouterr().err
    assert str(gold) in err and str(run) not in err
    gold.write_text('{"query_id": "q1", "relevant_chunks": [{"chunk_id": "d1", "grade": 1}]}\n')  # then the run's
    assert main([command, "--gold", str(gold), "--run", str(run), *out]) == 2
    assert str(run) in capsys.readouterr().err
