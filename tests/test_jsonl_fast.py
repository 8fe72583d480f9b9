"""The fast path for large JSONL runs gives exactly what the validating parser gives (see also
test_jsonl_differential.py, which generates hostile files)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rankgate import _native as accel
from rankgate.io import jsonl_fast
from rankgate.io.jsonl import iter_json_lines, json_lines, parse_run_records, read_text
from rankgate.io.load import load_run
from rankgate.errors import InputError

from .helpers import scan_closed

CASES = {
    "scores": [{"query_id": "q1", "topk": [{"chunk_id": "a", "score": 2.5, "text": "x", "doc_version": "2026-01-01"}, {"chunk_id": "b", "score": 1}]},
               {"query_id": "q2", "topk": []}, {"query_id": "7", "topk": [{"chunk_id": "12", "score": 0.5}]}],
    "integer ids": [{"query_id": 1, "topk": [{"chunk_id": 12, "score": 0.5}]}, {"query_id": 2, "topk": [{"chunk_id": 7, "score": 3}]}],
    "ranks": [{"query_id": "q1", "retrieved": [{"id": "a", "rank": 2}, {"id": "b", "rank": 1}]}],
    "bare ids": [{"qid": "q1", "retrieved": ["a", "b", "c"]}, {"qid": "q2", "retrieved": ["c"]}],
    "per-query fields": [{"query_id": "q1", "system": "bm25", "k_raw": 50, "topk": [{"chunk_id": "a", "score": 1.0}]},
                         {"query_id": "q2", "topk": [{"chunk_id": "a", "score": 1.0}], "tags": ["x", "y"]}],
    "ranks, some missing": [{"query_id": "q1", "retrieved": [{"id": "a", "rank": 2}, {"id": "b"}]}],
}
# Scores and ranks as producers write them: every item ranked, some items ranked, ranks that are
# floats, 0, -0 and -0.0, ranks against the scores' order. The compiled scanner reads these (below).
SCANNED = {
    "scores with ranks": [{"query_id": "q1", "topk": [{"rank": 1, "chunk_id": "a", "score": 2.5},
                                                     {"chunk_id": "b", "rank": 2, "score": 3}]},
                          {"query_id": "q2", "topk": [{"score": 1, "chunk_id": "c", "rank": 7.5}]}],
    "scores, some ranks": [{"query_id": "q1", "topk": [{"rank": 2, "chunk_id": "a", "score": 2.5}, {"chunk_id": "b", "score": 3}]},
                           {"query_id": "q2", "topk": [{"chunk_id": "c", "score": 1}]}],
    "zero ranks": [{"query_id": "q1", "topk": [{"rank": 0, "chunk_id": "a", "score": 1}, {"rank": -0, "chunk_id": "b", "score": 1},
                                              {"rank": -0.0, "chunk_id": "c", "score": 1}, {"rank": -3e2, "chunk_id": "d", "score": 0}]}],
    "scores, no rank": [{"query_id": "q1", "topk": [{"chunk_id": "a", "score": 2.5}]}],
    "null texts and versions": [{"query_id": "q1", "topk": [{"chunk_id": "a", "doc_version": None, "score": 2, "text": None,
                                                          "version": None, "content": None, "source": None}]},
                                {"query_id": "q2", "topk": [{"chunk_id": "b", "score": 1, "doc_version": None}]}],
    "logged per query": [{"latency_ms": {"retrieve": 35, "rerank": 22.5}, "query_id": "q1", "index_version": "v2",
                          "topk": [{"rank": 1, "chunk_id": "a", "score": 2.5}], "notes": {"x": [1, "a,\"}"], "y": None}},
                         {"query_id": "q2", "topk": [{"chunk_id": "b", "score": 1}], "latency_ms": 12.0, "errors": 0},
                         {"query_id": "q3", "topk": [], "index_version": "v1", "latency_ms": None}],
}
CASES.update(SCANNED)
# Objects and floats are read from the line's bytes, as json.loads gives them (key order, 3 vs 3.0).
CASES["object and float fields"] = [
    {"query_id": "q1", "latency_ms": {"retrieve": 3, "rerank": 1.5}, "w": 3.5, "topk": [{"chunk_id": "a", "score": 1.0}]},
    {"query_id": "q2", "latency_ms": {"rerank": 2.0, "retrieve": 0.125}, "w": 3, "topk": [{"chunk_id": "a", "score": 1.0}]},
    {"query_id": "q3", "topk": [{"chunk_id": "a", "score": 1.0}], "latency_ms": {"total": 9, "retrieve": 7}, "x": {"y": [1, 2], "z": "é"}},
    {"query_id": "q4", "topk": [{"chunk_id": "a", "score": 1.0}], "w": None}]
# Exact in the parser, not provable from a table: the fast path declines and the parser reads them.
DECLINED = {
    "object field also nested": [{"query_id": "q1", "latency_ms": {"retrieve": 3},
                                  "topk": [{"chunk_id": "a", "score": 1.0, "meta": {"latency_ms": 2}}]}],
    "mixed id types": [{"query_id": "q1", "topk": ["a"]}, {"query_id": 7, "topk": ["b"]}],
    "version and doc_version": [{"query_id": "q1", "topk": [{"chunk_id": "a", "doc_version": "1", "version": "2"}]}],
}
# A text or version with a value, beside nulls: the scanner declines (pyarrow's parse reads it).
TEXT_AFTER_NULLS = [{"query_id": "q1", "topk": [{"chunk_id": "a", "score": 2, "doc_version": None}]},
                    {"query_id": "q2", "topk": [{"chunk_id": "b", "score": 1, "doc_version": "v2"}]}]
BROKEN = {
    "missing id later": [{"query_id": "q1", "topk": [{"chunk_id": "a", "score": 1}]}, {"topk": [{"chunk_id": "b", "score": 1}]}],
    "repeated query": [{"query_id": "q1", "topk": ["a"]}, {"query_id": "q1", "topk": ["b"]}],
    "mixed scores": [{"query_id": "q1", "topk": [{"chunk_id": "a", "score": 1}]}, {"query_id": "q2", "topk": [{"chunk_id": "b"}]}],
    "item without id": [{"query_id": "q1", "topk": [{"chunk_id": "a", "score": 1}]}, {"query_id": "q2", "topk": [{"score": 1}]}],
    "rank beyond 2^53": [{"query_id": "q1", "topk": [{"chunk_id": "a", "score": 1, "rank": 1}]},
                         {"query_id": "q2", "topk": [{"chunk_id": "b", "score": 1, "rank": 2**53}]}],
}


@pytest.fixture(autouse=True)
def small_files_take_the_fast_path(monkeypatch):
    monkeypatch.setattr(jsonl_fast, "MIN_BYTES", 0)


def write(tmp_path, rows):
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


@pytest.mark.parametrize("case", sorted(CASES))
def test_same_run_as_the_validating_parser(case, tmp_path):
    path = write(tmp_path, CASES[case])
    fast = jsonl_fast.read_run_fast(path)
    if fast is None and accel.reader is None:
        pytest.skip("only the compiled scanner takes this file (pyarrow's path declines it); rankgate._native._reader is not loaded")
    assert fast is not None, "expected the fast path to take this file"
    slow = parse_run_records(iter_json_lines(json_lines(read_text(path)), path), path)
    assert fast.query_ids == slow.query_ids
    assert fast.r_query.tolist() == slow.r_query.tolist()
    assert fast.r_doc.to_pylist() == slow.r_doc.to_pylist()
    for a, b in ((fast.r_score, slow.r_score), (fast.r_order, slow.r_order)):
        assert (a is None) == (b is None)
        if a is not None:
            assert np.array_equal(a, b, equal_nan=True)
    assert {k: v for k, v in fast.items.items()} == {k: v for k, v in slow.items.items()}
    assert fast.fields == slow.fields
    assert fast.query_lines.tolist() == slow.query_lines.tolist()


@pytest.mark.parametrize("case", sorted(SCANNED))
def test_ranks_and_logged_fields_are_read_by_the_compiled_scanner(case, tmp_path):
    """Not left to pyarrow's parse (five times the CPU): the scanner's own read is the parser's."""
    from rankgate._native import reader

    if reader is None:
        pytest.skip("rankgate._native._reader is not built in this installation")
    path = write(tmp_path, SCANNED[case])
    scanned = scan_closed(path)
    assert scanned is not None
    slow = parse_run_records(iter_json_lines(json_lines(read_text(path)), path), path)
    assert (scanned.r_order is None) == (slow.r_order is None)
    if slow.r_order is not None:  # (NaN where an item gives no rank; -0.0 kept)
        assert scanned.r_order.tobytes() == slow.r_order.tobytes()
    assert scanned.r_score.tobytes() == slow.r_score.tobytes()
    assert list(scanned.fields.items()) == list(slow.fields.items())  # (also the columns' order)


@pytest.mark.parametrize("case", sorted(DECLINED))
def test_files_the_fast_path_cannot_prove_take_the_parser(case, tmp_path):
    path = write(tmp_path, DECLINED[case])
    assert jsonl_fast.read_run_fast(path) is None
    assert load_run(path).query_ids == ["q1"] + (["7"] if case == "mixed id types" else [])


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_irregular_files_fall_back_to_the_precise_error(case, tmp_path):
    path = write(tmp_path, BROKEN[case])
    assert jsonl_fast.read_run_fast(path) is None
    with pytest.raises(InputError, match=r"run.jsonl:2"):
        load_run(path)


GOLDS = {
    "graded": [{"query_id": "q1", "relevant_chunks": [{"chunk_id": "a", "grade": 2}, {"chunk_id": "b", "grade": 0}]},
               {"query_id": "5", "relevant_chunks": [{"chunk_id": "9", "grade": 1}]}],
}
BROKEN_GOLDS = {
    "non-integer grade": [{"query_id": "q1", "relevant_chunks": [{"chunk_id": "a", "grade": 1}]},
                          {"query_id": "q2", "relevant_chunks": [{"chunk_id": "a", "grade": 1.5}]}],
    "no relevant": [{"query_id": "q1", "relevant_chunks": [{"chunk_id": "a", "grade": 1}]},
                    {"query_id": "q2", "relevant_chunks": [{"chunk_id": "a", "grade": 0}]}],
    "empty list": [{"query_id": "q1", "relevant_chunks": [{"chunk_id": "a", "grade": 1}]},
                   {"query_id": "q2", "relevant_chunks": []}],
    "duplicate item": [{"query_id": "q1", "relevant_chunks": [{"chunk_id": "a", "grade": 1}]},
                       {"query_id": "q2", "relevant_chunks": [{"chunk_id": "a", "grade": 1}, {"chunk_id": "a", "grade": 2}]}],
    "repeated query": [{"query_id": "q1", "relevant_chunks": [{"chunk_id": "a", "grade": 1}]},
                       {"query_id": "q1", "relevant_chunks": [{"chunk_id": "b", "grade": 1}]}],
}


def test_gold_fast_path_matches(tmp_path):
    from rankgate.io.jsonl import parse_gold_records

    path = write(tmp_path, GOLDS["graded"])
    fast = jsonl_fast.read_gold_fast(path)
    assert fast is not None
    slow = parse_gold_records(iter_json_lines(json_lines(read_text(path)), path), path)
    assert fast.query_ids == slow.query_ids
    assert fast.j_query.tolist() == slow.j_query.tolist()
    assert fast.j_doc.to_pylist() == slow.j_doc.to_pylist()
    assert fast.j_grade.tolist() == slow.j_grade.tolist()


@pytest.mark.parametrize("case", sorted(BROKEN_GOLDS))
def test_irregular_gold_falls_back_to_the_precise_error(case, tmp_path):
    from rankgate.io.load import load_gold

    path = write(tmp_path, BROKEN_GOLDS[case])
    assert jsonl_fast.read_gold_fast(path) is None
    with pytest.raises(InputError, match=r"run.jsonl:2"):
        load_gold(path)


def test_lines_longer_than_a_parse_block_are_read(tmp_path, monkeypatch):
    monkeypatch.setattr(jsonl_fast, "BLOCK", 1024)
    rows = [{"query_id": f"q{q}", "topk": [{"chunk_id": f"d{i}", "score": 1.0 / (i + 1)} for i in range(300)]} for q in range(3)]
    path = write(tmp_path, rows)
    fast = jsonl_fast.read_run_fast(path)
    assert fast is not None
    slow = parse_run_records(iter_json_lines(json_lines(read_text(path)), path), path)
    assert fast.r_doc.to_pylist() == slow.r_doc.to_pylist() and np.array_equal(fast.r_score, slow.r_score)


def test_deep_nesting_is_declined_before_the_json_reader(tmp_path):
    """pyarrow's JSON reader crashes the process on very deep nesting: the fast path must never pass
    it such a line (Python's parser refuses it, so the validating path names the line)."""
    deep = "[" * 50_000 + "]" * 50_000
    path = tmp_path / "run.jsonl"
    path.write_text('{"query_id": "q1", "topk": ["a"]}\n{"query_id": "q2", "topk": ["b"], "x": ' + deep + "}\n")
    assert jsonl_fast.read_run_fast(str(path)) is None
    with pytest.raises(InputError, match=r"run.jsonl:2: nests deeper than 512 levels"):
        load_run(str(path))


# Lines that probe where a columnar reader and Python's json module could differ: duplicate and
# escaped keys, numbers at the edges of float64, ids of other types, fields a table cannot tell apart.
TRICKY_RUN = [
 '{"query_id": "q9", "topk": [{"chunk_id": "a", "chunk_id": "b", "score": 1}]}',
 '{"query_id": "q9", "query\\u005fid": "q10", "topk": []}',
 '{"query\\u005fid": "q9", "topk": [{"chunk_id": "a", "score": 1}]}',
 '{"query_id": "q9", "topk": [{"chunk_id": "a", "score": 1}], "topk": [{"chunk_id": "b", "score": 1}]}',
 '{"query_id": "q9", "topk": [{"chunk_id": "a", "score": -1e-400}]}',
 '{"query_id": "q9", "topk": [{"chunk_id": "a", "score": 1e-400}]}',
 '{"query_id": "q9", "topk": [{"chunk_id": "a", "score": 4.9e-324}]}',
 '{"query_id": "q9", "topk": [{"chunk_id": "a", "score": 9007199254740993}]}',
 '{"query_id": "q9", "topk": [{"chunk_id": "a", "score": 0.30000000000000004441}]}',
 '{"query_id": "q9", "topk": [{"chunk_id": "a", "score": 1E5}]}',
 '{"query_id": "q9", "topk": [{"chunk_id": "\\ud83d\\ude00", "score": 1}]}',
 '{"query_id": "q9", "topk": [{"chunk_id": "a\\u0000b", "score": 1}]}',
 '{"query_id": "q9", "topk": [{"chunk_id": "a", "score": 1, "text": "\\ud800"}]}',
 '{"query_id": "q9", "topk": [{"chunk_id": "a", "score": 1}], "system": "x", "System": "y"}',
 '{"query_id": "q9", "topk": [{"chunk_id": "a", "score": 1}], "": 1}',
 '{"query_id": "q9", "topk": [{"chunk_id": "a", "score": 1}], "t": [1, "a"]}',
 '{"query_id": "q9", "topk": [{"chunk_id": "a", "score": 1}], "t": [[1]]}',
 '{"query_id": "q9", "topk": [{"chunk_id": "a", "score": 1}], "t": -0}',
 '{"query_id": "q9", "topk": [{"chunk_id": "a", "score": 1}], "t": 9223372036854775807}',
 '{"query_id": "q9", "topk": [{"chunk_id": "a", "score": 1}], "t": 9223372036854775808}',
 '{"query_id": "q9", "topk": [{"chunk_id": "a", "score": 1}], "t": "2026-01-01"}',
 '{"query_id": "q9", "topk": [{"chunk_id": "a", "score": 1}], "t": true}',
 '{"query_id": "q9","topk":[{"chunk_id":"a","score":1}]}\t',
 '{"query_id":\t"q9", "topk": [{"chunk_id": "a", "score": 1}]}',
 '{"query_id": "q9", "topk": [{"chunk_id": -5, "score": 1}]}',
 '{"query_id": 5, "topk": [{"chunk_id": "z", "score": 1}]}',
 '{"query_id": "q9", "topk": [{"chunk_id": "a", "score": 1, "rank": -0}]}',
 '{"query_id": "q9", "topk": [{"chunk_id": "a", "rank": 2}]}',
 '{"query_id": "q9", "topk": [{"chunk_id": "a", "score": 1, "doc_version": null}]}',
 '{"query_id": "q9", "topk": [{"chunk_id": "a", "score": 1, "version": "v"}]}',
 '{"query_id": "q9", "topk": [{"chunk_id": "a", "score": 1, "source": 5}]}',
 '{"query_id": "q9", "hits": [{"chunk_id": "a", "score": 1}], "topk": [{"chunk_id": "a", "score": 1}]}',
 '{"query_id": "q9", "retrieved": [{"chunk_id": "a", "score": 1}]}',
 '{"qid": "q9", "topk": [{"chunk_id": "a", "score": 1}]}',
 '{"query_id": "q9", "qid": 7, "topk": [{"chunk_id": "a", "score": 1}]}',
 '{"query_id": "q9", "topk": [{"chunk_id": "a", "score": 1, "doc_id": {"x": NaN}}]}',
 '{"query_id": "q9", "topk": [{"chunk_id": "a", "score": 1}], "x": "\\u2028"}',
 # nesting around the limit (512), with and without backslashes, brackets inside strings
 '{"query_id": "q9", "topk": ["a"], "x": ' + "[" * 511 + "]" * 511 + "}",
 '{"query_id": "q9", "topk": ["a"], "x": ' + "[" * 512 + "]" * 512 + "}",
 '{"query_id": "q9", "topk": ["a"], "x": ' + "[" * 700 + "]" * 700 + "}",
 '{"query_id": "q9", "topk": ["a"], "x": ' + '["\\"]",' * 600 + "1" + "]" * 600 + "}",
 '{"query_id": "q9", "topk": ["a"], "x": ' + '["]",' * 600 + "1" + "]" * 600 + "}",
 '{"query_id": "q9", "topk": ["a"], "x": "' + "[" * 2000 + '"}',
]
TRICKY_GOLD = [
 '{"query_id": "q9", "relevant_chunks": [{"chunk_id": "a", "grade": 1, "grade": 0}]}',
 '{"query_id": "q9", "relevant_chunks": [{"chunk_id": "a", "grade": 9007199254740993}]}',
 '{"query_id": "q9", "relevant_chunks": [{"chunk_id": "a", "grade": 1e15}]}',
 '{"query_id": "q9", "relevant_chunks": [{"chunk_id": "a", "grade": -0.0}, {"chunk_id": "b", "grade": 1}]}',
 '{"query_id": "q9", "relevant_chunks": [{"chunk_id": "a", "relevance": 1}]}',
 '{"query_id": "q9", "relevant_chunks": [{"chunk_id": "a"}]}',
 '{"query_id": "q9", "relevant_chunks": [{"chunk_id": "a", "grade": 1, "note": null}]}',
 '{"query_id": "q9", "relevant_chunks": [{"chunk_id": "a", "grade": 1, "note": "n"}]}',
 '{"query_id": "q9", "relevant_chunks": [{"chunk_id": "a", "grade": 1, "extra": [1, {}]}]}',
 '{"query_id": "q9", "relevant": [{"chunk_id": "a", "grade": 1}], "relevant_chunks": [{"chunk_id": "b", "grade": 1}]}',
 '{"query_id": "q9", "relevant_chunks": [{"chunk_id": "a", "grade": 1}], "qid": "zz"}',
 '{"query_id": "q9", "relevant_chunks": [{"doc_id": "a", "grade": 1}]}',
 '{"query_id": "q9", "relevant_chunks": [{"chunk_id": "a", "doc_id": "b", "grade": 1}]}',
 '{"query_id": "q9", "relevant_chunks": [{"chunk_id": "a", "grade": 2.0}]}',
]


@pytest.mark.parametrize("where", ["first", "last"])
@pytest.mark.parametrize("kind,line", [("run", t) for t in TRICKY_RUN] + [("gold", t) for t in TRICKY_GOLD])
def test_tricky_lines_give_the_same_outcome(kind, line, where, tmp_path):
    from rankgate.io.load import load_gold

    from .test_jsonl_differential import _outcome

    base = [json.dumps({"query_id": f"q{i}", "topk": [{"chunk_id": f"d{i}", "score": 1.5}, {"chunk_id": "x", "score": 0.5}]})
            if kind == "run" else json.dumps({"query_id": f"q{i}", "relevant_chunks": [{"chunk_id": f"d{i}", "grade": 1}]})
            for i in range(5)]
    lines = base + [line] if where == "last" else [line] + base
    path = tmp_path / f"{kind}.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    load = load_run if kind == "run" else load_gold
    assert _outcome(load, str(path), fast=True) == _outcome(load, str(path), fast=False)


@pytest.mark.parametrize("line", TRICKY_RUN[-6:] + [
    '{"a": ' + '{"b": ' * 520 + "1" + "}" * 520 + "}",
    '{"a": "' + "]" * 600 + '", "b": ' + "[" * 600 + "]" * 600 + "}",
    '{"a": "\\\\\\"' + "}" * 600 + '", "b": ' + "[" * 520 + "]" * 520 + "}",
])
def test_nesting_limit_is_measured_as_the_parser_measures_it(line, tmp_path, monkeypatch):
    """The fast path declines exactly the lines the parser finds too deep: by the parsed table's type,
    and by counting brackets outside strings before the parse for lines with very many brackets."""
    import pyarrow as pa

    from rankgate.io.jsonl import MAX_DEPTH, json_depth

    too_deep = json_depth(json.loads(line)) > MAX_DEPTH
    path = tmp_path / "x.jsonl"
    path.write_text(line + "\n")
    assert (jsonl_fast._read_table(str(path), 0, lambda sample: None) is None) == too_deep
    monkeypatch.setattr(jsonl_fast, "_SAFE_DEPTH", 100)  # measure every line with over 100 brackets
    assert (jsonl_fast._line_count(pa.py_buffer(line.encode())) is None) == too_deep


def test_integer_literals_of_every_length_read_as_python_reads_them(tmp_path):
    """Integer scores and ranks of up to 15 digits are taken from their digits (exact as a double);
    longer ones, -0 and decimals go through the correctly rounded parse: each as float(json.loads)."""
    from rankgate._native import reader

    if reader is None:
        pytest.skip("rankgate._native._reader is not built in this installation")
    rng = np.random.default_rng(5)
    values = [("-" if rng.random() < 0.5 else "") + str(int(rng.integers(10 ** (d - 1) if d > 1 else 0, 10**d)))
              for d in range(1, 19) for _ in range(20)]
    values += ["0", "-0", "-0.0", "0.0", "999999999999999", "-999999999999999", "1000000000000000", "9007199254740993"]
    ranks = [v if len(v.lstrip("-")) <= 15 else "1" for v in values]  # (ranks stay below 2^53)
    path = tmp_path / "run.jsonl"
    path.write_text("".join(f'{{"query_id": "q{i}", "topk": [{{"chunk_id": "d1", "score": {v}, "rank": {r}}}]}}\n'
                            for i, (v, r) in enumerate(zip(values, ranks))))
    run = scan_closed(str(path))
    assert run is not None
    assert run.r_score.tobytes() == np.array([float(json.loads(v)) for v in values]).tobytes()
    assert run.r_order.tobytes() == np.array([float(json.loads(r)) for r in ranks]).tobytes()


def test_a_text_or_version_with_a_value_is_left_to_the_other_readers(tmp_path):
    """Null texts and versions are the scanner's (they make no column); one with a value is not: the
    file is read by pyarrow's parse, with the parser's columns."""
    path = write(tmp_path, TEXT_AFTER_NULLS)
    assert scan_closed(path) is None
    fast = jsonl_fast.read_run_fast(path)
    slow = parse_run_records(iter_json_lines(json_lines(read_text(path)), path), path)
    assert fast is not None and fast.items == slow.items == {"doc_version": [None, "v2"]}


def test_a_run_written_by_rankgate_retrieve_is_read_by_the_scanner(tmp_path):
    """The real producer: `rankgate retrieve` on the Cranfield collection (BEIR layout) writes ranks,
    `"doc_version": null` on every item and what it logs per query. The scanner reads it, exactly as
    the parser does."""
    from rankgate._native import reader
    from rankgate.cli.main import main

    from .conftest import shared_path

    if reader is None:
        pytest.skip("rankgate._native._reader is not built in this installation")
    beir = shared_path("datasets", "cranfield", "beir")
    out = tmp_path / "run.jsonl"
    assert main(["retrieve", "--beir", str(beir), "-o", str(out), "--depth", "20", "--texts", "none"]) == 0
    path = str(out)
    scanned = scan_closed(path)
    assert scanned is not None
    slow = parse_run_records(iter_json_lines(json_lines(read_text(path)), path), path)
    assert scanned.query_ids == slow.query_ids and scanned.r_doc.to_pylist() == slow.r_doc.to_pylist()
    assert scanned.r_score.tobytes() == slow.r_score.tobytes() and scanned.r_order.tobytes() == slow.r_order.tobytes()
    assert list(scanned.fields.items()) == list(slow.fields.items()) and scanned.items == slow.items == {}
    assert {"latency_ms", "index_version", "system"} <= set(scanned.fields)
