"""Hostile JSONL (and number) inputs: each is refused with exit 2 and one line naming the file and the
line, or, when it is valid JSON Lines, read as written. Files are generated here, small; every JSONL
case runs with the fast path forced on (threshold 0) and off, and both must refuse it alike."""

from __future__ import annotations

import json

import pytest

from rankgate.io import jsonl_fast
from rankgate.io.load import load_gold, load_run

from .hostile import assert_refused

GOLD = '{"query_id": "q1", "relevant_chunks": [{"chunk_id": "a", "grade": 1}]}\n'
RUN_OK = '{"query_id": "q1", "topk": [{"chunk_id": "a", "score": 2}, {"chunk_id": "b", "score": 1}]}\n'


def _run(item: str) -> bytes:
    return ('{"query_id": "q0", "topk": [{"chunk_id": "a", "score": 1}]}\n'
            '{"query_id": "q1", "topk": [{"chunk_id": "b", "score": 1}, ' + item + "]}\n").encode()


def _ranked(rank: str) -> bytes:
    return ('{"query_id": "q0", "topk": [{"chunk_id": "a", "rank": 1}]}\n'
            '{"query_id": "q1", "topk": [{"chunk_id": "b", "rank": 1}, {"chunk_id": "a", "rank": ' + rank + "}]}\n").encode()


# name -> (run file bytes, text the one stderr line must hold)
BAD_RUNS = {
    "rank NaN": (_ranked("NaN"), ":2: field 'topk[1].rank' must be a finite number; got nan"),
    "rank Infinity": (_ranked("Infinity"), ":2: field 'topk[1].rank' must be a finite number; got inf"),
    "rank 1e400": (_ranked("1e400"), ":2: field 'topk[1].rank' must be a finite number; got inf"),
    "score Infinity": (_run('{"chunk_id": "a", "score": Infinity}'), ":2: field 'topk[1].score' must be a finite number; got inf"),
    "score -Infinity": (_run('{"chunk_id": "a", "score": -Infinity}'), "must be a finite number; got -inf"),
    "score 1e400": (_run('{"chunk_id": "a", "score": 1e400}'), "must be a finite number; got inf"),
    "score NaN": (_run('{"chunk_id": "a", "score": NaN}'), "must be a finite number; got nan"),
    "score integer beyond float": (_run('{"chunk_id": "a", "score": 1' + "0" * 400 + "}"), "an integer too large for a float"),
    "score of 5000 digits": (_run('{"chunk_id": "a", "score": 1' + "0" * 5000 + "}"), ":2: holds a number too long to read"),
    "score as text": (_run('{"chunk_id": "a", "score": "2"}'), "must be a number; got '2'"),
    "id listed twice in one ranking": (_run('{"chunk_id": "b", "score": 0.5}'), ":2: lists 'b' more than once for query 'q1'"),
    "not UTF-8 on line 2": (_run('{"chunk_id": "\xff", "score": 0.5}').replace("\xff".encode(), b"\xff"),
                            ":2: is not UTF-8 text (byte 0xff at column 74, byte offset 133)"),
    "deep nesting": (_run('{"chunk_id": "c", "score": 0.5, "x": ' + "[" * 100_000 + "]" * 100_000 + "}"), ":2: nests deeper than 512 levels"),
    "unpaired surrogate id": (_run('{"chunk_id": "\\ud800", "score": 0.5}'), "unpaired surrogate"),
    "summary.json on one line": (b'{"metrics": []}\n', "looks like a rankgate summary.json, not a run (pass a summary as --baseline"),
    "summary.json pretty-printed": (json.dumps({"metrics": {"recall@5": {"mean": 0.5, "n": 3}}}, indent=2).encode() + b"\n",
                                    "looks like a rankgate summary.json, not a run"),
}
BAD_GOLDS = {
    "grade beyond 64 bits": ('{"query_id": "q1", "relevant_chunks": [{"chunk_id": "a", "grade": 1' + "0" * 30 + "}]}\n",
                             ":1: field 'relevant_chunks[0].grade' must be an integer grade that fits in 64 bits"),
    "k beyond 64 bits": ('{"query_id": "q1", "relevant_chunks": ["a"], "k": 1' + "0" * 30 + "}\n", "field 'k' must be a positive integer up to 1,000,000,000"),
    "integral float grade beyond 64 bits": ('{"query_id": "q1", "relevant": {"a": 1e30}}\n', "fits in 64 bits"),
    "summary.json as gold": ('{"metrics": {}}\n', "looks like a rankgate summary.json, not a gold set"),
}
BAD_SPECS = {
    "@k beyond 64 bits": ("recall@99999999999999999999999", "must be at most 1,000,000,000"),
    "novelty overlap NaN": ("novelty(overlap=nan)", "must be a number; got 'nan'"),
    "false_evidence min_score inf": ("false_evidence(min_score=inf)", "must be a finite number; got 'inf'"),
    "min_score 1e400": ("false_evidence(min_score=1e400)", "must be a finite number"),
}


@pytest.fixture(params=["fast", "validating"])
def path_taken(request, monkeypatch):
    monkeypatch.setattr(jsonl_fast, "MIN_BYTES", 0 if request.param == "fast" else 1 << 62)
    return request.param


@pytest.mark.parametrize("case", sorted(BAD_RUNS))
def test_bad_run_is_refused(case, path_taken, tmp_path, capsys):
    data, text = BAD_RUNS[case]
    gold, run, out = tmp_path / "gold.jsonl", tmp_path / "run.jsonl", tmp_path / "out"
    gold.write_text(GOLD)
    run.write_bytes(data)
    assert_refused(["evaluate", "--gold", gold, "--run", run, "--out", out], out, names=[run], contains=[text], capsys=capsys)


@pytest.mark.parametrize("case", sorted(BAD_GOLDS))
def test_bad_gold_is_refused(case, path_taken, tmp_path, capsys):
    text, expected = BAD_GOLDS[case]
    gold, run, out = tmp_path / "gold.jsonl", tmp_path / "run.jsonl", tmp_path / "out"
    gold.write_text(text)
    run.write_text(RUN_OK)
    assert_refused(["evaluate", "--gold", gold, "--run", run, "--out", out], out, names=[gold], contains=[expected], capsys=capsys)


@pytest.mark.parametrize("case", sorted(BAD_SPECS))
def test_bad_metric_parameter_is_refused(case, tmp_path, capsys):
    spec, expected = BAD_SPECS[case]
    gold, run, out = tmp_path / "gold.jsonl", tmp_path / "run.jsonl", tmp_path / "out"
    gold.write_text(GOLD)
    run.write_text(RUN_OK)
    assert_refused(["evaluate", "--gold", gold, "--run", run, "-m", spec, "--out", out], out, contains=[expected], capsys=capsys)


NON_FINITE_TREC = {"inf": "inf", "1e400": "1e400", "Infinity": "Infinity", "nan": "nan", "-inf": "-inf"}


@pytest.mark.parametrize("value", sorted(NON_FINITE_TREC))
def test_non_finite_trec_score_is_refused(value, tmp_path, capsys):
    gold, run, out = tmp_path / "gold.jsonl", tmp_path / "run.trec", tmp_path / "out"
    gold.write_text(GOLD)
    run.write_text(f"q1 Q0 a 1 2.5 t\nq1 Q0 b 2 {value} t\n")
    assert_refused(["evaluate", "--gold", gold, "--run", run, "--out", out], out, names=[run],
                   contains=[":2: field 'score (column 5)' must be a finite number"], capsys=capsys)


@pytest.mark.parametrize("column", ["score", "rank"])
@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan")])
def test_non_finite_parquet_value_is_refused(column, value, tmp_path, capsys):
    import pyarrow as pa
    import pyarrow.parquet as pq

    gold, run, out = tmp_path / "gold.jsonl", tmp_path / "run.parquet", tmp_path / "out"
    gold.write_text(GOLD)
    pq.write_table(pa.table({"query_id": ["q1", "q1"], "chunk_id": ["a", "b"], column: [1.0, value]}), run)
    assert_refused(["evaluate", "--gold", gold, "--run", run, "--out", out], out, names=[run],
                   contains=[f"field '{column}' must hold finite numbers"], capsys=capsys)


# Valid JSON Lines that must be read as written.
SEPARATORS = {"U+2028": "\u2028", "U+2029": "\u2029", "U+0085": "\u0085"}


@pytest.mark.parametrize("name", sorted(SEPARATORS))
def test_line_separators_inside_strings_are_text(name, path_taken, tmp_path):
    char = SEPARATORS[name]
    run = tmp_path / "run.jsonl"
    rows = [{"query_id": f"q{char}1", "topk": [{"chunk_id": f"a{char}b", "score": 1.0, "text": f"x{char}y"}]},
            {"query_id": "q2", "topk": [{"chunk_id": "c", "score": 0.5}]}]
    run.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    got = load_run(str(run))
    assert got.query_ids == [f"q{char}1", "q2"]
    assert got.r_doc.to_pylist() == [f"a{char}b", "c"]
    assert got.items["text"] == [f"x{char}y", None]


def test_line_separator_in_a_doc_map_is_text(tmp_path):
    from rankgate.cli.evaluate import load_doc_map

    path = tmp_path / "map.tsv"
    path.write_text("c\u20281\td1\r\nc2\td2\n", encoding="utf-8")
    assert load_doc_map(str(path)) == {"c\u20281": "d1", "c2": "d2"}


@pytest.mark.parametrize("kind", ["run", "gold"])
def test_bom_and_crlf_are_read(kind, path_taken, tmp_path):
    path = tmp_path / f"{kind}.jsonl"
    text = RUN_OK if kind == "run" else GOLD
    path.write_bytes(b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode())
    got = load_run(str(path)) if kind == "run" else load_gold(str(path))
    assert got.query_ids == ["q1"]


def test_summary_with_a_malformed_metrics_value_is_read_as_a_summary(tmp_path):
    from rankgate.gating.baseline import is_summary_file

    path = tmp_path / "summary.json"
    path.write_text('{"metrics": []}\n')
    assert is_summary_file(str(path))
    path.write_text('{"query_id": "q1", "metrics": []}\n')
    assert not is_summary_file(str(path))


@pytest.mark.parametrize("k", ["99999999999999999999999", "1000000001", "0"])
def test_command_k_beyond_the_cutoff_limit_is_refused(k, tmp_path, capsys):
    gold, run, out = tmp_path / "gold.jsonl", tmp_path / "run.jsonl", tmp_path / "out"
    gold.write_text(GOLD)
    run.write_text(RUN_OK)
    assert_refused(["evaluate", "--gold", gold, "--run", run, "-m", "recall", "--k", k, "--out", out], out,
                   contains=["--k must be an integer between 1 and 1,000,000,000"], capsys=capsys)


def test_the_two_cutoff_limits_agree():
    from rankgate.io.jsonl import MAX_K as DATA_MAX_K
    from rankgate.metrics.spec import MAX_K

    assert DATA_MAX_K == MAX_K
