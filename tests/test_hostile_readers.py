"""Hostile inputs for the non-JSONL readers, through the CLI as a user runs it.

Every refused file is generated here (small, by code) and checked with ``assert_refused``: exit 2,
one stderr line naming the file (and its line, field or row), no traceback, output folder untouched.
Also: pipes (FIFOs with a writer thread) are read like files, a UTF-8 byte-order mark is never part
of an id, and ``evaluate --gold DIR`` and ``retrieve --beir DIR`` read the same qrels file and refuse
the same bad ones.
"""

from __future__ import annotations

import gzip
import json
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rankgate.cli.main import main

from .hostile import assert_refused
from .conftest import examples

QRELS = b"".join(b"q%d 0 d%d %d\n" % (i % 40, i, i % 3) for i in range(400))
RUN = b"".join(b"q%d Q0 d%d %d %d.25 tag\n" % (i % 40, i, i, 1000 - i) for i in range(2000))


def _out(tmp_path: Path) -> Path:
    """An output folder holding old outputs, which a refused run must leave as they are."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "metrics.csv").write_text("old\n")
    return out


def _evaluate(gold: Path, run: Path, out: Path, *extra: object) -> list[object]:
    return ["evaluate", "--gold", gold, "--run", run, "--out", out, "--resamples", "0", *extra]


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


# --------------------------------------------------------------------------------------------- gzip

_GZ_RUN = gzip.compress(RUN)
_GZ_DAMAGE: dict[str, Callable[[bytes], bytes]] = {
    "header-only": lambda b: b[:10],
    "cut-in-half": lambda b: b[: len(b) // 2],
    "no-size": lambda b: b[:-4],  # the CRC is there, the length is not
    "last-byte": lambda b: b[:-1],
    "bad-crc": lambda b: b[:-8] + bytes([b[-8] ^ 1]) + b[-7:],
    "zeroed-middle": lambda b: b[:40] + b"\0" * 64 + b[104:],
    "trailing-garbage": lambda b: b + b"garbage",
}


@pytest.mark.parametrize("damage", sorted(_GZ_DAMAGE))
@pytest.mark.parametrize("kind", ["run", "gold"])
def test_damaged_gzip_is_refused_never_read_short(damage, kind, tmp_path, capsys) -> None:
    good = _write(tmp_path / "qrels.txt", QRELS) if kind == "run" else _write(tmp_path / "run.txt", RUN)
    raw = gzip.compress(QRELS if kind == "gold" else RUN)
    bad = _write(tmp_path / f"{kind}.txt.gz", _GZ_DAMAGE[damage](raw))
    gold, run = (good, bad) if kind == "run" else (bad, good)
    line = assert_refused(_evaluate(gold, run, _out(tmp_path)), _out_dir(tmp_path), names=[bad], capsys=capsys)
    assert "gzip" in line


def _out_dir(tmp_path: Path) -> Path:
    return tmp_path / "out"


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("run.jsonl.gz", json.dumps({"query_id": "q1", "topk": ["d1"]}).encode() + b"\n"),
        ("run.trec.gz", RUN),
        ("run.parquet.gz", b"PAR1"),
    ],
)
def test_a_file_named_gz_that_is_not_gzip_is_refused(name, content, tmp_path, capsys) -> None:
    gold = _write(tmp_path / "qrels.txt", QRELS)
    bad = _write(tmp_path / name, content)
    assert_refused(_evaluate(gold, bad, _out(tmp_path)), _out_dir(tmp_path), names=[bad], capsys=capsys,
                   contains=["is named *.gz but is not gzip-compressed"])


@pytest.mark.parametrize("name", ["gold.jsonl.gz", "qrels.tsv.gz", "qrels.gz"])
def test_truncated_gzip_gold_in_every_text_format(name, tmp_path, capsys) -> None:
    body = {
        "gold.jsonl.gz": b"".join(json.dumps({"query_id": f"q{i}", "relevant": [f"d{i}"]}).encode() + b"\n"
                                  for i in range(3000)),
        "qrels.tsv.gz": b"query-id\tcorpus-id\tscore\n" + b"".join(b"q%d\td%d\t1\n" % (i, i) for i in range(3000)),
        "qrels.gz": QRELS * 10,
    }[name]
    raw = gzip.compress(body)
    bad = _write(tmp_path / name, raw[: len(raw) * 2 // 3])
    run = _write(tmp_path / "run.txt", RUN)
    assert_refused(_evaluate(bad, run, _out(tmp_path)), _out_dir(tmp_path), names=[bad], capsys=capsys,
                   contains=["is truncated"])


_ZSTD_FRAME = bytes.fromhex("28b52ffd0458b100007b227265736f757263655370616e73223a205b5d7d0a2eb5a7ab")  # zstd of a line


@pytest.mark.parametrize("name", ["run.trec.zst", "run.jsonl", "qrels.txt.zst", "gold.jsonl"])
def test_zstd_input_is_named_as_such_not_as_bytes_that_are_not_utf8(name, tmp_path, capsys) -> None:
    bad = _write(tmp_path / name, _ZSTD_FRAME)
    gold = bad if name.startswith(("qrels", "gold")) else _write(tmp_path / "qrels.txt", QRELS)
    run = bad if name.startswith("run") else _write(tmp_path / "run.txt", RUN)
    line = assert_refused(_evaluate(gold, run, _out(tmp_path)), _out_dir(tmp_path), names=[bad], capsys=capsys,
                          contains=["is zstd-compressed", "zstd -d"])
    assert "UTF-8" not in line


def test_gzip_is_recognised_by_content_not_name(tmp_path, capsys) -> None:
    """A gzip file without .gz in its name (as a pipe delivers it) is read, and gives the same numbers."""
    gold = _write(tmp_path / "qrels.txt", QRELS)
    plain = _write(tmp_path / "run.txt", RUN)
    packed = _write(tmp_path / "run-packed", gzip.compress(RUN))
    assert _metrics(gold, plain, tmp_path / "a", capsys) == _metrics(gold, packed, tmp_path / "b", capsys)


# ------------------------------------------------------------------------------------------ Parquet


def _parquet(path: Path, columns: dict[str, pa.Array | list] | pa.Table, row_group_size: int | None = None) -> Path:
    pq.write_table(columns if isinstance(columns, pa.Table) else pa.table(columns), path, row_group_size=row_group_size)
    return path


def _bad_utf8_strings(values: list[bytes]) -> pa.Array:
    """A string array holding bytes that are not UTF-8 (as a careless writer can produce)."""
    offsets = np.concatenate(([0], np.cumsum([len(v) for v in values]))).astype(np.int32)
    return pa.Array.from_buffers(pa.string(), len(values), [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(values))])


_PARQUET_RUNS: dict[str, tuple[Callable[[], dict], list[str]]] = {
    "list-chunk-ids": (lambda: {"query_id": ["q1", "q1"], "chunk_id": [["d1", "d2"], ["d3"]], "score": [1.0, 0.5]},
                       ["field 'chunk_id'", "list", "explode"]),
    "struct-chunk-ids": (lambda: {"query_id": ["q1"], "chunk_id": [{"id": "d1"}], "score": [1.0]},
                         ["field 'chunk_id'", "struct"]),
    "list-query-ids": (lambda: {"query_id": [["q1"], ["q2"]], "chunk_id": ["d1", "d2"], "score": [1.0, 0.5]},
                       ["field 'query_id'", "list"]),
    "float-chunk-ids": (lambda: {"query_id": ["q1"], "chunk_id": [1.0], "score": [1.0]},
                        ["field 'chunk_id'", "double"]),
    "binary-chunk-ids-not-utf8": (lambda: {"query_id": ["q1"] * 3, "chunk_id": pa.array([b"d1", b"d2", b"d\xff3"]),
                                           "score": [3.0, 2.0, 1.0]},
                                  ["field 'chunk_id'", "row 3 (row group 1, counted from 0)", "0xff"]),
    "binary-query-ids-not-utf8": (lambda: {"query_id": pa.array([b"q1", b"q\xc3"]), "chunk_id": ["d1", "d2"],
                                           "score": [1.0, 0.5]},
                                  ["field 'query_id'", "row 2", "0xc3"]),
    "string-chunk-ids-not-utf8": (lambda: {"query_id": ["q1", "q1"], "chunk_id": _bad_utf8_strings([b"d1", b"\xfed2"]),
                                           "score": [1.0, 0.5]},
                                  ["field 'chunk_id'", "row 2", "0xfe"]),
    "string-query-ids-not-utf8": (lambda: {"query_id": _bad_utf8_strings([b"q1", b"q\x80"]), "chunk_id": ["d1", "d2"],
                                           "score": [1.0, 0.5]},
                                  ["field 'query_id'", "row 2", "0x80"]),
    "text-not-utf8": (lambda: {"query_id": ["q1"], "chunk_id": ["d1"], "score": [1.0],
                               "text": _bad_utf8_strings([b"caf\xe9"])},
                      ["field 'text'", "row 1", "0xe9"]),
    "null-query-ids": (lambda: {"query_id": pa.array([None], pa.null()), "chunk_id": ["d1"], "score": [1.0]},
                       ["field 'query_id'", "null"]),
    "date-chunk-ids": (lambda: {"query_id": ["q1"], "chunk_id": pa.array([1], pa.date32()), "score": [1.0]},
                       ["field 'chunk_id'", "date32"]),
    "nan-score": (lambda: {"query_id": ["q1"] * 3, "chunk_id": ["d1", "d2", "d3"], "score": [1.0, 0.5, float("nan")]},
                  ["field 'score' must hold finite numbers; holds nan in row 3"]),
    "inf-score": (lambda: {"query_id": ["q1"] * 2, "chunk_id": ["d1", "d2"], "score": [1.0, float("inf")]},
                  ["field 'score' must hold finite numbers; holds inf in row 2"]),
    "two-chunk-id-columns": (lambda: pa.Table.from_arrays([pa.array(["q1"]), pa.array(["d1"]), pa.array(["d2"]),
                                                           pa.array([1.0])], names=["query_id", "chunk_id", "chunk_id",
                                                                                    "score"]),
                             ["has 2 columns named 'chunk_id'"]),
    "no-columns": (dict, ["has no query id column; columns: (none)"]),
    "no-score-or-rank": (lambda: {"query_id": ["q1"], "chunk_id": ["d1"]}, ["neither a score nor a rank"]),
    "score-as-text": (lambda: {"query_id": ["q1"], "chunk_id": ["d1"], "score": ["high"]}, ["field 'score'"]),
}


@pytest.mark.parametrize("case", sorted(_PARQUET_RUNS))
def test_bad_parquet_runs_name_column_and_row(case, tmp_path, capsys) -> None:
    columns, expect = _PARQUET_RUNS[case]
    bad = _parquet(tmp_path / "run.parquet", columns(), row_group_size=2)
    gold = _write(tmp_path / "qrels.txt", QRELS)
    assert_refused(_evaluate(gold, bad, _out(tmp_path)), _out_dir(tmp_path), names=[bad], capsys=capsys,
                   contains=expect)


_PARQUET_GOLDS: dict[str, tuple[Callable[[], dict], list[str]]] = {
    "list-query-ids": (lambda: {"query_id": [["q1"]], "chunk_id": ["d1"], "grade": [1]}, ["field 'query_id'", "list"]),
    "struct-chunk-ids": (lambda: {"query_id": ["q1"], "chunk_id": [{"a": 1}], "grade": [1]}, ["field 'chunk_id'"]),
    "binary-chunk-ids-not-utf8": (lambda: {"query_id": ["q1", "q2"], "chunk_id": pa.array([b"ok", b"\xff"]),
                                           "grade": [1, 2]}, ["row 2", "0xff"]),
    "dictionary-query-ids-not-utf8": (
        lambda: {"query_id": pa.DictionaryArray.from_arrays(pa.array([0, 1, 1], pa.int32()), pa.array([b"q1", b"q\xff"])),
                 "chunk_id": ["d1", "d2", "d3"], "grade": [1, 1, 1]},
        ["field 'query_id'", "row 2", "0xff"]),
    "grade-beyond-int64": (lambda: {"query_id": ["q1"], "chunk_id": ["d1"], "grade": pa.array([2**63], pa.uint64())},
                           ["field 'grade'", "64-bit"]),
    "float-grades": (lambda: {"query_id": ["q1"], "chunk_id": ["d1"], "grade": [1.5]}, ["field 'grade'"]),
}


@pytest.mark.parametrize("case", sorted(_PARQUET_GOLDS))
def test_bad_parquet_gold_sets_name_column_and_row(case, tmp_path, capsys) -> None:
    columns, expect = _PARQUET_GOLDS[case]
    bad = _parquet(tmp_path / "gold.parquet", columns())
    run = _write(tmp_path / "run.txt", RUN)
    assert_refused(_evaluate(bad, run, _out(tmp_path)), _out_dir(tmp_path), names=[bad], capsys=capsys,
                   contains=expect)


@pytest.mark.parametrize("cut", [8, 0.5, -5])
def test_truncated_parquet_is_refused(cut, tmp_path, capsys) -> None:
    good = _parquet(tmp_path / "whole.parquet", {"query_id": ["q1"] * 50, "chunk_id": [f"d{i}" for i in range(50)],
                                                "score": np.linspace(0, 1, 50)})
    raw = good.read_bytes()
    end = cut if isinstance(cut, int) and cut > 0 else (len(raw) + cut if isinstance(cut, int) else int(len(raw) * cut))
    bad = _write(tmp_path / "run.parquet", raw[:end])
    gold = _write(tmp_path / "qrels.txt", QRELS)
    assert_refused(_evaluate(gold, bad, _out(tmp_path)), _out_dir(tmp_path), names=[bad], capsys=capsys,
                   contains=["Parquet"])


def test_gzip_compressed_parquet_is_named_as_such(tmp_path, capsys) -> None:
    bad = _write(tmp_path / "run.parquet.gz", gzip.compress(_run_parquet(tmp_path / "run.parquet").read_bytes()))
    gold = _write(tmp_path / "qrels.txt", QRELS)
    assert_refused(_evaluate(gold, bad, _out(tmp_path)), _out_dir(tmp_path), names=[bad], capsys=capsys,
                   contains=["is gzip-compressed Parquet", "gunzip"])


def test_parquet_binary_ids_in_utf8_are_read_as_text(tmp_path, capsys) -> None:
    gold = _write(tmp_path / "qrels.txt", b"q1 0 d1 1\nq1 0 d2 1\n")
    text = _parquet(tmp_path / "text.parquet", {"query_id": ["q1", "q1"], "chunk_id": ["d1", "x"], "score": [2.0, 1.0]})
    binary = _parquet(tmp_path / "binary.parquet", {"query_id": pa.array([b"q1", b"q1"]),
                                                    "chunk_id": pa.array([b"d1", b"x"]), "score": [2.0, 1.0]})
    assert _metrics(gold, text, tmp_path / "a", capsys) == _metrics(gold, binary, tmp_path / "b", capsys)


# ------------------------------------------------------------------------- bytes that are not UTF-8

_NOT_UTF8: dict[str, tuple[str, bytes, int]] = {
    # (which argument, content, line of the bad byte); names without an extension: detected by content
    "trec-run": ("run", b"q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\nq2 Q0 d\xe93 1 1.0 t\n", 3),
    "trec-run-latin1-first-line": ("run", b"q\xe91 Q0 d1 1 2.0 t\n", 1),
    "trec-qrels": ("gold", b"q1 0 d1 1\nq2 0 d\xff2 1\n", 2),
    "beir-tsv": ("gold", b"query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td\xc02\t1\n", 3),
}


@pytest.mark.parametrize("case", sorted(_NOT_UTF8))
@pytest.mark.parametrize("packed", [False, True], ids=["plain", "gz"])
def test_bytes_that_are_not_utf8_are_named_by_line_and_byte(case, packed, tmp_path, capsys) -> None:
    which, content, line = _NOT_UTF8[case]
    name = ("qrels.tsv" if case == "beir-tsv" else which) + (".gz" if packed else "")
    bad = _write(tmp_path / name, gzip.compress(content) if packed else content)
    other = _write(tmp_path / ("run.txt" if which == "gold" else "qrels.txt"), RUN if which == "gold" else QRELS)
    gold, run = (bad, other) if which == "gold" else (other, bad)
    err = assert_refused(_evaluate(gold, run, _out(tmp_path)), _out_dir(tmp_path), names=[bad], capsys=capsys,
                         contains=[f"{name}:{line}: is not UTF-8 text (byte 0x"])
    assert "Parquet" not in err


def test_utf16_text_is_named_as_such(tmp_path, capsys) -> None:
    bad = _write(tmp_path / "run", "q1 Q0 d1 1 2.0 t\n".encode("utf-16"))
    gold = _write(tmp_path / "qrels.txt", QRELS)
    assert_refused(_evaluate(gold, bad, _out(tmp_path)), _out_dir(tmp_path), names=[bad], capsys=capsys,
                   contains=["run:1: is UTF-16 text, not UTF-8"])


def test_a_parquet_file_read_as_text_is_named_as_parquet(tmp_path, capsys) -> None:
    bad = _run_parquet(tmp_path / "run.parquet")
    gold = _write(tmp_path / "qrels.txt", QRELS)
    assert_refused(_evaluate(gold, bad, _out(tmp_path), "--run-format", "trec"), _out_dir(tmp_path), names=[bad],
                   capsys=capsys, contains=["run.parquet:1: is a Parquet file, not text"])


def test_a_parquet_file_without_extension_is_detected_by_content(tmp_path, capsys) -> None:
    gold = _write(tmp_path / "qrels.txt", QRELS)
    named = _run_parquet(tmp_path / "run.parquet")
    bare = _write(tmp_path / "run-export", named.read_bytes())
    assert _metrics(gold, named, tmp_path / "a", capsys) == _metrics(gold, bare, tmp_path / "b", capsys)


@pytest.mark.parametrize("content", [b"d1\tdoc1\nd\xff2\tdoc2\n", b'{"d1": "doc1",\n "d2": "d\xff"}\n'],
                         ids=["tsv", "json"])
def test_doc_map_that_is_not_utf8_names_the_line(content, tmp_path, capsys) -> None:
    gold = _write(tmp_path / "qrels.txt", QRELS)
    run = _write(tmp_path / "run.txt", RUN)
    bad = _write(tmp_path / "docs.map", content)
    assert_refused(_evaluate(gold, run, _out(tmp_path), "--level", "doc", "--doc-map", bad), _out_dir(tmp_path),
                   names=[bad], capsys=capsys, contains=["docs.map:2: is not UTF-8 text (byte 0xff"])


def test_corpus_that_is_not_utf8_names_the_line(tmp_path, capsys) -> None:
    corpus = _write(tmp_path / "corpus.jsonl", b'{"chunk_id": "a", "text": "x"}\n{"chunk_id": "b", "text": "caf\xe9"}\n')
    gold = _write(tmp_path / "gold.jsonl", b'{"query_id": "q1", "query": "x", "relevant": ["a"]}\n')
    out = tmp_path / "out"
    out.mkdir()
    assert_refused(["retrieve", "--corpus", corpus, "--gold", gold, "-o", out / "run.jsonl"], out, names=[corpus],
                   capsys=capsys, contains=["corpus.jsonl:2: is not UTF-8 text (byte 0xe9 at column"])


def test_a_grade_beyond_64_bits_is_refused_in_trec_qrels(tmp_path, capsys) -> None:
    bad = _write(tmp_path / "qrels.txt", b"q1 0 d1 1\nq1 0 d2 99999999999999999999\n")
    run = _write(tmp_path / "run.txt", RUN)
    assert_refused(_evaluate(bad, run, _out(tmp_path)), _out_dir(tmp_path), names=[bad], capsys=capsys,
                   contains=["qrels.txt:2: field 'grade' must be an integer grade"])


# ---------------------------------------------------------------------------------- byte-order mark

_BOM = b"\xef\xbb\xbf"


@pytest.mark.parametrize(
    ("gold_name", "gold_body"),
    [("qrels", QRELS), ("qrels.tsv", b"query-id\tcorpus-id\tscore\n" + QRELS.replace(b" 0 ", b"\t").replace(b" ", b"\t")),
     ("gold", b"".join(json.dumps({"query_id": f"q{i}", "relevant": [f"d{i}", f"d{i + 40}"]}).encode() + b"\n"
                       for i in range(40)))],
    ids=["trec-qrels", "beir-tsv", "jsonl"],
)
@pytest.mark.parametrize(("run_name", "run_body"), [("run", RUN), ("run.trec", RUN),
                                                     ("run-mixed-whitespace", RUN.replace(b" Q0 ", b"\tQ0  "))])
def test_a_byte_order_mark_is_never_part_of_the_first_id(gold_name, gold_body, run_name, run_body, tmp_path,
                                                         capsys) -> None:
    """Decided: a UTF-8 BOM at the start of a text file is skipped, by format detection and by every
    reader (the first query id is 'q0', not '\\ufeffq0'); files without an extension are detected by
    the first byte after it. Mixed whitespace sends the run to the line-by-line reader."""
    plain_gold = _write(tmp_path / f"plain-{gold_name}", gold_body)
    plain_run = _write(tmp_path / f"plain-{run_name}", run_body)
    bom_gold, bom_run = _write(tmp_path / gold_name, _BOM + gold_body), _write(tmp_path / run_name, _BOM + run_body)
    want = _metrics(plain_gold, plain_run, tmp_path / "a", capsys)
    assert want[1][0] == "q0"
    assert _metrics(bom_gold, bom_run, tmp_path / "b", capsys) == want


# ------------------------------------------------------------------------------------------- pipes


@contextmanager
def _fifo(path: Path, data: bytes) -> Iterator[Path]:
    """A named pipe at ``path`` that a thread fills with ``data`` once a reader opens it."""
    os.mkfifo(path)

    def write() -> None:
        try:
            with open(path, "wb") as fh:
                fh.writelines(data[i : i + 4096] for i in range(0, len(data), 4096))  # as zcat delivers
        except BrokenPipeError:  # the reader stopped early: what the test checks is its answer
            pass

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    try:
        yield path
    finally:
        if writer.is_alive():  # never opened: open it ourselves so the writer ends
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
                os.close(fd)
            except OSError:
                pass
        writer.join(timeout=5)


def _metrics(gold: Path, run: Path, out: Path, capsys, *extra: object) -> list[list[str]]:
    capsys.readouterr()
    code = main([str(a) for a in _evaluate(gold, run, out, *extra)])
    err = capsys.readouterr().err
    assert code == 0, err
    rows = (out / "metrics.csv").read_text().splitlines()
    return [row.split(",") for row in rows]


def _run_parquet(path: Path) -> Path:
    rows = [line.split() for line in RUN.decode().splitlines()]
    return _parquet(path, {"query_id": [r[0] for r in rows], "chunk_id": [r[2] for r in rows],
                           "score": [float(r[4]) for r in rows]})


@pytest.mark.parametrize("form", ["trec", "trec-gz", "jsonl", "parquet"])
def test_a_run_from_a_pipe_reads_like_the_file(form, tmp_path, capsys) -> None:
    gold = _write(tmp_path / "qrels.txt", QRELS)
    if form == "parquet":
        regular = _run_parquet(tmp_path / "run.parquet")
    elif form == "jsonl":
        rows = [line.split() for line in RUN.decode().splitlines()]
        by_query: dict[str, list] = {}
        for r in rows:
            by_query.setdefault(r[0], []).append({"chunk_id": r[2], "score": float(r[4])})
        regular = _write(tmp_path / "run.jsonl", b"".join(json.dumps({"query_id": q, "topk": t}).encode() + b"\n"
                                                           for q, t in by_query.items()))
    else:
        regular = _write(tmp_path / "run.txt", RUN)
    want = _metrics(gold, regular, tmp_path / "a", capsys)
    data = regular.read_bytes()
    if form == "trec-gz":
        data = gzip.compress(data)
    # named like process substitution's /dev/fd/63: no extension, so the format comes from the content
    with _fifo(tmp_path / "63", data) as pipe:
        assert _metrics(gold, pipe, tmp_path / "b", capsys) == want
    summary = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert summary["inputs"]["run"]["path"] == str(pipe)  # the pipe is named, not a temporary copy


def test_a_gold_set_from_a_pipe_reads_like_the_file(tmp_path, capsys) -> None:
    gold = _write(tmp_path / "qrels.txt", QRELS)
    run = _write(tmp_path / "run.txt", RUN)
    want = _metrics(gold, run, tmp_path / "a", capsys)
    with _fifo(tmp_path / "gold-pipe", gzip.compress(QRELS)) as pipe:
        assert _metrics(pipe, run, tmp_path / "b", capsys) == want


@pytest.mark.parametrize(
    ("data", "expect"),
    [(b"", "is empty"), (b"  \n\n", "is empty"), (gzip.compress(RUN)[:200], "is truncated"),
     (b"q1 Q0 d1 1 2.0 t\nq1 Q0 d\xff 2 1.0 t\n", ":2: is not UTF-8 text")],
    ids=["empty", "blank", "truncated-gz", "not-utf8"],
)
def test_a_bad_pipe_is_refused_naming_the_pipe(data, expect, tmp_path, capsys) -> None:
    gold = _write(tmp_path / "qrels.txt", QRELS)
    out = _out(tmp_path)
    with _fifo(tmp_path / "run-pipe", data) as pipe:
        err = assert_refused(_evaluate(gold, pipe, out), out, names=[pipe], capsys=capsys, contains=[expect])
    assert "rankgate-pipe-" not in err  # the temporary copy is never what the message names
    assert not list(Path(os.environ.get("TMPDIR", "/tmp")).glob("rankgate-pipe-*/run-pipe"))


def test_pipes_are_read_once_when_the_command_evaluates_twice(tmp_path, capsys) -> None:
    """--sweep evaluates a second time and --doc-map is used by both evaluations: each pipe is still
    read once, and the numbers equal those of regular files."""
    gold = _write(tmp_path / "qrels.txt", QRELS)
    run = _write(tmp_path / "run.txt", RUN)
    doc_map = _write(tmp_path / "docs.tsv", b"".join(b"d%d\tdoc%d\n" % (i, i // 3) for i in range(2000)))
    extra = ("--sweep", "recall,ndcg", "--level", "doc")
    want = _metrics(gold, run, tmp_path / "a", capsys, *extra, "--doc-map", doc_map)
    want_sweep = json.loads((tmp_path / "a" / "summary.json").read_text())["sweep"]
    with _fifo(tmp_path / "gold-pipe", QRELS) as g, _fifo(tmp_path / "run-pipe", gzip.compress(RUN)) as r, \
            _fifo(tmp_path / "map-pipe", doc_map.read_bytes()) as m:
        assert _metrics(g, r, tmp_path / "b", capsys, *extra, "--doc-map", m) == want
    assert json.loads((tmp_path / "b" / "summary.json").read_text())["sweep"] == want_sweep


def test_an_empty_doc_map_pipe_is_refused(tmp_path, capsys) -> None:
    gold = _write(tmp_path / "qrels.txt", QRELS)
    run = _write(tmp_path / "run.txt", RUN)
    out = _out(tmp_path)
    with _fifo(tmp_path / "map-pipe", b"") as m:
        assert_refused(_evaluate(gold, run, out, "--level", "doc", "--doc-map", m), out, names=[m], capsys=capsys,
                       contains=["is empty"])


def test_a_pipe_with_no_room_for_its_copy_is_refused(tmp_path, capsys, monkeypatch) -> None:
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "no-such-folder"))
    gold = _write(tmp_path / "qrels.txt", QRELS)
    out = _out(tmp_path)
    with _fifo(tmp_path / "run-pipe", RUN) as pipe:
        assert_refused(_evaluate(gold, pipe, out), out, names=[pipe], capsys=capsys,
                       contains=["cannot be copied to a temporary file", "TMPDIR"])


def test_a_corpus_from_a_pipe_is_read(tmp_path, capsys) -> None:
    corpus = b'{"chunk_id": "a", "text": "wing lift"}\n{"chunk_id": "b", "text": "heat flow"}\n'
    gold = _write(tmp_path / "gold.jsonl", b'{"query_id": "q1", "query": "heat", "relevant": ["b"]}\n')
    with _fifo(tmp_path / "corpus-pipe", corpus) as pipe:
        assert main(["retrieve", "--corpus", str(pipe), "--gold", str(gold), "-o", str(tmp_path / "run.jsonl"),
                     "--no-latency"]) == 0
    assert json.loads((tmp_path / "run.jsonl").read_text().splitlines()[0])["query_id"] == "q1"


# ----------------------------------------------------------------- one BEIR qrels reader, one folder rule


def _beir_folder(tmp_path: Path, test_tsv: bytes | None, top_tsv: bytes | None = None, **splits: bytes) -> Path:
    folder = tmp_path / "beir"
    folder.mkdir()
    (folder / "corpus.jsonl").write_text("".join(json.dumps({"_id": f"d{i}", "text": f"word{i} common"}) + "\n"
                                                 for i in range(6)))
    (folder / "queries.jsonl").write_text("".join(json.dumps({"_id": f"q{i}", "text": f"word{i}"}) + "\n"
                                                  for i in range(6)))
    if top_tsv is not None:
        (folder / "qrels.tsv").write_bytes(top_tsv)
    for name, body in ({"test": test_tsv} if test_tsv is not None else {}).items() | splits.items():
        (folder / "qrels").mkdir(exist_ok=True)
        (folder / "qrels" / f"{name}.tsv").write_bytes(body)
    return folder


def _retrieve_queries(folder: Path, out: Path, *extra: str) -> list[str]:
    assert main(["retrieve", "--beir", str(folder), "-o", str(out), "--no-latency", *extra]) == 0
    return [json.loads(line)["query_id"] for line in out.read_text().splitlines()]


def test_evaluate_and_retrieve_read_the_same_qrels_file(tmp_path, capsys) -> None:
    """qrels/test.tsv wins over qrels.tsv in both commands; --split (retrieve) and the file's own path
    (evaluate) pick another split."""
    header = b"query-id\tcorpus-id\tscore\n"
    folder = _beir_folder(tmp_path, header + b"q1\td1\t1\nq2\td2\t1\n", top_tsv=header + b"q3\td3\t1\n",
                          dev=b"q4\td4\t2\nq5\td5\t1\n")  # (dev without a header: it is optional)
    run_path = tmp_path / "run.jsonl"
    assert _retrieve_queries(folder, run_path) == ["q1", "q2"]
    assert [row[0] for row in _metrics(folder, run_path, tmp_path / "out", capsys)[1:]] == ["q1", "q2"]
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["inputs"]["gold"]["path"] == str(folder / "qrels" / "test.tsv")
    assert _retrieve_queries(folder, tmp_path / "dev.jsonl", "--split", "dev") == ["q4", "q5"]
    # without qrels/, both read qrels.tsv
    import shutil

    shutil.rmtree(folder / "qrels")
    assert _retrieve_queries(folder, run_path) == ["q3"]
    assert [row[0] for row in _metrics(folder, run_path, tmp_path / "out", capsys)[1:]] == ["q3"]
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["inputs"]["gold"]["path"] == str(folder / "qrels.tsv")


_BAD_BEIR: dict[str, tuple[bytes, str]] = {
    "judged-twice": (b"query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td1\t2\n", "test.tsv:3: judges 'd1' for query 'q1' again (first on line 2)"),
    "not-utf8": (b"query-id\tcorpus-id\tscore\nq1\td\xff1\t1\n", "test.tsv:2: is not UTF-8 text (byte 0xff"),
    "grade-not-integer": (b"query-id\tcorpus-id\tscore\nq1\td1\thigh\n", "test.tsv:2: field 'score' must be an integer grade"),
    "grade-beyond-64-bits": (b"q1\td1\t1\nq1\td2\t18446744073709551616\n", "test.tsv:2: field 'score' must be an integer grade"),
    "two-columns": (b"query-id\tcorpus-id\tscore\nq1\td1\n", "test.tsv:2: has 2 tab-separated columns; expected 3"),
    "spaces-not-tabs": (b"query-id\tcorpus-id\tscore\nq1 d1 1\n", "test.tsv:2: has 1 tab-separated columns"),
    "header-only": (b"query-id\tcorpus-id\tscore\n", "test.tsv: is empty"),
    "utf16": ("query-id\tcorpus-id\tscore\nq1\td1\t1\n".encode("utf-16"), "test.tsv:1: is UTF-16 text"),
}


@pytest.mark.parametrize("case", sorted(_BAD_BEIR))
def test_evaluate_and_retrieve_refuse_the_same_bad_qrels(case, tmp_path, capsys) -> None:
    body, expect = _BAD_BEIR[case]
    folder = _beir_folder(tmp_path, body)
    bad = folder / "qrels" / "test.tsv"
    out = _out(tmp_path)
    run = _write(tmp_path / "run.txt", RUN)
    from_evaluate = assert_refused(_evaluate(folder, run, out), out, names=[bad], capsys=capsys, contains=[expect])
    from_retrieve = assert_refused(["retrieve", "--beir", folder, "-o", out / "run.jsonl"], out, names=[bad],
                                   capsys=capsys, contains=[expect])
    assert from_evaluate.split("error: ", 1)[1] == from_retrieve.split("error: ", 1)[1]


def test_a_missing_split_is_refused_naming_the_splits_there_are(tmp_path, capsys) -> None:
    folder = _beir_folder(tmp_path, None, top_tsv=b"q1\td1\t1\n", dev=b"q1\td1\t1\n", train=b"q2\td2\t1\n")
    out = _out(tmp_path)
    run = _write(tmp_path / "run.txt", RUN)
    for argv in (_evaluate(folder, run, out), ["retrieve", "--beir", folder, "-o", out / "r.jsonl"]):
        assert_refused(argv, out, names=[folder], capsys=capsys,
                       contains=["has no qrels/test.tsv", "available splits: dev, train"])
    assert_refused(["retrieve", "--beir", folder, "--split", "validation", "-o", out / "r.jsonl"], out,
                   names=[folder], capsys=capsys, contains=["has no qrels/validation.tsv"])
    (tmp_path / "top").mkdir()
    only_top = _beir_folder(tmp_path / "top", None, top_tsv=b"q1\td1\t1\n")
    assert_refused(["retrieve", "--beir", only_top, "--split", "dev", "-o", out / "r.jsonl"], out, names=[only_top],
                   capsys=capsys, contains=["has no qrels/dev.tsv", "qrels.tsv is read only when no split is asked for"])


# ------------------------------------------------------------------------ text_lines as a property

@settings(max_examples=examples(100), deadline=None)
@given(data=st.lists(st.sampled_from([b"a", b"q1 ", b"\n", b"\r\n", b"\r", b"\xc3\xa9", b"\xff", b"\xe2\x80\xa8",
                                      b"\xef\xbb\xbf", b"\xc3", b"\t"]), max_size=30).map(b"".join),
       packed=st.booleans())
def test_text_lines_splits_at_newlines_and_names_the_first_bad_line(tmp_path_factory, data, packed) -> None:
    """Lines end at \\n only (\\r\\n given as \\n); a leading BOM is dropped; the first line that is not
    UTF-8 is named with the byte, whether or not the file is gzip, and no line after it is given."""
    from rankgate.io.source import text_lines
    from rankgate.errors import InputError

    path = tmp_path_factory.getbasetemp() / "text-lines-property"
    path.write_bytes(gzip.compress(data) if packed else data)
    body = data[3:] if data.startswith(_BOM) else data
    want: list[tuple[int, str]] = []
    bad = None
    pieces = body.split(b"\n")
    for number, raw in enumerate(pieces, start=1):
        last = number == len(pieces)
        if last and raw == b"":
            break  # nothing after the last newline
        try:
            text = raw.decode("utf-8") + ("" if last else "\n")
        except UnicodeDecodeError as exc:
            bad = (number, raw[exc.start])
            break
        want.append((number, text[:-2] + "\n" if text.endswith("\r\n") else text))
    got: list[tuple[int, str]] = []
    if bad is None:
        got = list(text_lines(str(path)))
        assert got == want
    else:
        with pytest.raises(InputError) as info:
            got.extend(text_lines(str(path)))
        assert got == want and info.value.line == bad[0] and f"byte {bad[1]:#04x}" in str(info.value)


# -- ranks that a double cannot keep apart (a silent tie, so a wrong order) ------------------------
def _parquet_file(path: Path, columns: dict) -> Path:
    pq.write_table(pa.table(columns), path)
    return path


_HUGE_RANK_RUNS: dict[str, Callable[[Path], Path]] = {
    "jsonl": lambda d: _write(d / "r.jsonl", b'{"query_id": "q1", "topk": [{"chunk_id": "b", "rank": 9007199254740993},'
                                             b' {"chunk_id": "a", "rank": 9007199254740992}]}\n'),
    "csv": lambda d: _write(d / "r.csv", b"query_id,chunk_id,rank\nq1,b,9007199254740993\nq1,a,9007199254740992\n"),
    "csv_with_score": lambda d: _write(d / "r.csv", b"query_id,chunk_id,score,rank\nq1,b,2,1\nq1,a,1,nan\n"),
    "parquet_int64": lambda d: _parquet_file(d / "r.parquet", {"query_id": ["q1", "q1"], "chunk_id": ["b", "a"],
                                                          "rank": pa.array([2**53 + 1, 2**53], pa.int64())}),
    "parquet_uint64": lambda d: _parquet_file(d / "r.parquet", {"query_id": ["q1", "q1"], "chunk_id": ["b", "a"],
                                                           "rank": pa.array([2**64 - 1, 2**64 - 2], pa.uint64())}),
    "parquet_nan_rank_beside_scores": lambda d: _parquet_file(d / "r.parquet", {
        "query_id": ["q1", "q1"], "chunk_id": ["b", "a"], "score": [2.0, 1.0], "rank": [float("nan"), 1.0]}),
}


@pytest.mark.parametrize("case", sorted(_HUGE_RANK_RUNS))
def test_ranks_a_double_cannot_order_are_refused_in_every_format(case, tmp_path, capsys) -> None:
    gold = _write(tmp_path / "gold.jsonl", b'{"query_id": "q1", "relevant_chunks": [{"chunk_id": "a", "grade": 1}]}\n')
    run = _HUGE_RANK_RUNS[case](tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    assert_refused(["evaluate", "--gold", gold, "--run", run, "--out", out], out, names=[run], capsys=capsys,
                   contains=["rank"])


def test_ranks_below_2_to_the_53_keep_their_exact_order(tmp_path, capsys) -> None:
    gold = _write(tmp_path / "gold.jsonl", b'{"query_id": "q1", "relevant_chunks": [{"chunk_id": "a", "grade": 1}]}\n')
    run = _write(tmp_path / "r.jsonl", b'{"query_id": "q1", "topk": [{"chunk_id": "b", "rank": 9007199254740991},'
                                       b' {"chunk_id": "a", "rank": 9007199254740990}]}\n')
    assert main(["evaluate", "--gold", str(gold), "--run", str(run), "-m", "mrr", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["metrics"]["mrr"]["mean"] == 1.0


# -- numbers no reader can hold ----------------------------------------------------------------------
def test_a_csv_grade_beyond_64_bits_is_an_input_error(tmp_path, capsys) -> None:
    gold = _write(tmp_path / "gold.csv", b"query_id,chunk_id,grade\nq1,a,1000000000000000000000000000000\n")
    run = _write(tmp_path / "run.jsonl", b'{"query_id": "q1", "topk": ["a"]}\n')
    assert_refused(["evaluate", "--gold", gold, "--run", run], None, names=[gold], capsys=capsys, contains=[":2:"])


@pytest.mark.parametrize("name", ["run.jsonl", "run.json"])
def test_an_integer_of_thousands_of_digits_is_an_input_error(name, tmp_path, capsys) -> None:
    gold = _write(tmp_path / "gold.jsonl", b'{"query_id": "q1", "relevant_chunks": [{"chunk_id": "a", "grade": 1}]}\n')
    digits = b"9" * 5000
    if name.endswith(".jsonl"):
        run = _write(tmp_path / name, b'{"query_id": "q1", "topk": [{"chunk_id": "a", "rank": ' + digits + b"}]}\n")
        argv = ["evaluate", "--gold", gold, "--run", run]
    else:
        run = _write(tmp_path / name, b'[{"user_input": "q", "retrieved_contexts": ["a"], "rank": ' + digits + b"}]")
        argv = ["evaluate", "--gold", gold, "--run", run, "--run-format", "ragas"]
    assert_refused(argv, None, names=[run], capsys=capsys)


def test_exp_gain_refuses_grades_whose_gain_is_no_number(tmp_path, capsys) -> None:
    gold = _write(tmp_path / "gold.jsonl", b'{"query_id": "q1", "relevant_chunks": [{"chunk_id": "a", "grade": 2000}]}\n')
    run = _write(tmp_path / "run.jsonl", b'{"query_id": "q1", "topk": ["a", "b"]}\n')
    assert_refused(["evaluate", "--gold", gold, "--run", run, "-m", "ndcg(gain=exp)@5"], None, names=[gold],
                   capsys=capsys, contains=["grade 2000", "up to 64"])
    # linear gain takes the same grade; exp gain takes grades up to the limit
    assert main(["evaluate", "--gold", str(gold), "--run", str(run), "-m", "ndcg@5", "--json"]) == 0
    _write(gold, b'{"query_id": "q1", "relevant_chunks": [{"chunk_id": "a", "grade": 64}]}\n')
    capsys.readouterr()
    assert main(["evaluate", "--gold", str(gold), "--run", str(run), "-m", "ndcg(gain=exp)@5", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["metrics"]["ndcg(gain=exp)@5"]["mean"] == 1.0


# -- unpaired surrogates: legal JSON escapes that no UTF-8 output can hold ---------------------------
_SURROGATE_CASES = {
    "run_text": ("run", b'{"query_id": "q1", "topk": [{"chunk_id": "a", "score": 1, "text": "x\\ud800y"}]}\n'),
    "run_chunk_id": ("run", b'{"query_id": "q1", "topk": [{"chunk_id": "a\\udc80", "score": 1}]}\n'),
    "gold_tag": ("gold", b'{"query_id": "q1", "relevant_chunks": [{"chunk_id": "a", "grade": 1}], "tags": {"t": "\\ud800"}}\n'),
    "gold_note": ("gold", b'{"query_id": "q1", "relevant_chunks": [{"chunk_id": "a", "grade": 1, "note": "\\udfff"}]}\n'),
}


@pytest.mark.parametrize("case", sorted(_SURROGATE_CASES))
def test_unpaired_surrogates_are_refused_when_read(case, tmp_path, capsys) -> None:
    kind, data = _SURROGATE_CASES[case]
    gold = _write(tmp_path / "gold.jsonl", b'{"query_id": "q1", "relevant_chunks": [{"chunk_id": "a", "grade": 1}]}\n')
    run = _write(tmp_path / "run.jsonl", b'{"query_id": "q1", "topk": [{"chunk_id": "a", "score": 1}]}\n')
    bad = _write(tmp_path / f"bad_{kind}.jsonl", data)
    out = tmp_path / "out"
    out.mkdir()
    argv = ["evaluate", "--gold", bad if kind == "gold" else gold, "--run", bad if kind == "run" else run,
            "--by", "tags.t", "--out", out]
    assert_refused(argv, out, names=[bad], capsys=capsys, contains=[":1:", "surrogate"])


def test_surrogate_pairs_written_as_escapes_are_read(tmp_path, capsys) -> None:
    gold = _write(tmp_path / "gold.jsonl", b'{"query_id": "q\\ud83d\\ude00", "relevant_chunks": [{"chunk_id": "a", "grade": 1}]}\n')
    run = _write(tmp_path / "run.jsonl", b'{"query_id": "q\\ud83d\\ude00", "topk": [{"chunk_id": "a", "score": 1}]}\n')
    assert main(["evaluate", "--gold", str(gold), "--run", str(run), "--out", str(tmp_path / "out")]) == 0
    assert "q\U0001f600" in (tmp_path / "out" / "metrics.csv").read_text(encoding="utf-8")


def test_unpaired_surrogates_in_a_corpus_and_a_report_run(tmp_path, capsys) -> None:
    gold = _write(tmp_path / "gold.jsonl", b'{"query_id": "q1", "query": "free plan", "relevant_chunks": [{"chunk_id": "a", "grade": 1}]}\n')
    corpus = _write(tmp_path / "corpus.jsonl", b'{"chunk_id": "a", "text": "free \\ud800 plan"}\n')
    assert_refused(["retrieve", "--corpus", corpus, "--gold", gold, "--retriever", "bm25", "-o", tmp_path / "o.jsonl"],
                   tmp_path, names=[corpus], capsys=capsys)
    run = _write(tmp_path / "run.jsonl", b'{"query_id": "q1", "topk": [{"chunk_id": "a", "score": 1, "text": "\\ud800"}]}\n')
    assert_refused(["report", "--gold", gold, "--run", run, "-o", tmp_path / "r.html"], tmp_path, names=[run],
                   capsys=capsys)


# -- pipes everywhere a file is read --------------------------------------------------------------
def test_gold_validate_and_diff_read_pipes(tmp_path, capsys) -> None:
    data = b'{"query_id": "q1", "relevant_chunks": [{"chunk_id": "a", "grade": 1}]}\n'
    with _fifo(tmp_path / "gold_pipe", data) as pipe:
        assert main(["gold", "validate", "--gold", str(pipe)]) == 0
    assert "has no queries" not in capsys.readouterr().err
    with _fifo(tmp_path / "old_pipe", data) as old, _fifo(tmp_path / "new_pipe", data.replace(b'"a"', b'"b"')) as new:
        assert main(["gold", "diff", str(old), str(new)]) in (0, 1)
    captured = capsys.readouterr()
    assert "q1" in captured.out and not captured.err


def test_a_manifest_that_is_not_utf8_names_its_line(tmp_path, capsys) -> None:
    gold = _write(tmp_path / "gold.jsonl", b'{"query_id": "q1", "relevant_chunks": [{"chunk_id": "a", "grade": 1}]}\n')
    manifest = _write(tmp_path / "manifest.jsonl", b'{"chunk_id": "a"}\n{"chunk_id": "\xff"}\n')
    assert_refused(["gold", "stale", "--gold", gold, "--corpus", manifest], None, names=[manifest], capsys=capsys,
                   contains=[":2:"])


def test_an_id_of_megabytes_is_shown_cut_short(tmp_path, capsys) -> None:
    big = "a" * 3_000_000
    gold = _write(tmp_path / "gold.jsonl", json.dumps({"query_id": "q" * 3_000_000, "relevant_chunks": [
        {"chunk_id": "x", "grade": 1}]}).encode() + b'\n{"query_id": "q1", "relevant_chunks": [{"chunk_id": "x", "grade": 1}]}\n')
    run = _write(tmp_path / "run.jsonl", json.dumps({"query_id": "q1", "topk": [big]}).encode() + b"\n")
    assert main(["evaluate", "--gold", str(gold), "--run", str(run), "--resamples", "20"]) == 0
    captured = capsys.readouterr()
    assert len(captured.out) + len(captured.err) < 20_000  # the ids are named, cut to 80 characters
    assert "a" * 79 + "…" in captured.out + captured.err


@pytest.mark.parametrize(("name", "data", "contains"), [
    ("empty_doc.tsv", b"c1\tdoc1\nc2\t\n", ":2:"),
    ("empty_chunk.tsv", b"\tdoc1\n", ":1:"),
    ("two_docs.tsv", b"c1\tdoc1\nc1\tdoc2\n", ":2:"),
    ("null_doc.json", b'{"c1": null}', "c1"),
    ("deep.json", b"{" + b'"a": [' * 50_000 + b"]" * 50_000 + b"}", "deep.json"),
])
def test_bad_doc_maps_are_refused(name, data, contains, tmp_path, capsys) -> None:
    gold = _write(tmp_path / "gold.jsonl", b'{"query_id": "q1", "relevant_chunks": [{"chunk_id": "c1", "grade": 1}]}\n')
    run = _write(tmp_path / "run.jsonl", b'{"query_id": "q1", "topk": ["c1", "c2"]}\n')
    doc_map = _write(tmp_path / name, data)
    assert_refused(["evaluate", "--gold", gold, "--run", run, "--level", "doc", "--doc-map", doc_map], None,
                   names=[doc_map], capsys=capsys, contains=[contains])


def test_a_crlf_doc_map_maps_to_the_same_documents(tmp_path, capsys) -> None:
    gold = _write(tmp_path / "gold.jsonl", b'{"query_id": "q1", "relevant_chunks": [{"chunk_id": "c1", "grade": 1}]}\n')
    run = _write(tmp_path / "run.jsonl", b'{"query_id": "q1", "topk": ["c2", "c1"]}\n')
    outs = []
    for name, data in (("lf.tsv", b"c1\tdoc1\nc2\tdoc1\n"), ("crlf.tsv", b"c1\tdoc1\r\nc2\tdoc1\r\n")):
        doc_map = _write(tmp_path / name, data)
        assert main(["evaluate", "--gold", str(gold), "--run", str(run), "--level", "doc", "--doc-map", str(doc_map),
                     "-m", "mrr", "--json"]) == 0
        outs.append(json.loads(capsys.readouterr().out)["metrics"]["mrr"]["mean"])
    assert outs == [1.0, 1.0]


def test_line_separators_inside_strings_of_sample_jsonl_do_not_split_lines(tmp_path, capsys) -> None:
    rows = [{"user_input": "q\u2028one", "retrieved_contexts": ["a\u2029x", "b"], "reference_contexts": ["b\x85"]},
            {"user_input": "q two", "retrieved_contexts": ["c"], "reference_contexts": ["c"]}]
    data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode()
    samples = _write(tmp_path / "samples.jsonl", data)
    assert main(["evaluate", "--gold", str(samples), "--gold-format", "ragas", "--run", str(samples),
                 "--run-format", "ragas", "-m", "hit@5", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["metrics"]["hit@5"]["n"] == 2


# ----------------------------------------------------------------------------- TREC lines that do not fit

@pytest.fixture(params=["compiled", "none"])
def build(request, monkeypatch) -> str:
    """Each test below runs with the compiled reader and without it (a build without a C compiler)."""
    import rankgate._native as accel

    if request.param == "compiled" and accel.reader is None:
        pytest.skip("rankgate._native._reader is not built in this installation")
    if request.param == "none":
        monkeypatch.setattr(accel, "reader", None)
    return request.param


_TREC_LINES: dict[str, tuple[bytes, str]] = {
    # (the run's content, what the one stderr line says); RUN has 2000 lines
    "seven fields": (RUN + b"q1 Q0 dx 7 0.5 tag extra\n", "run.trec:2001: has 7 columns; expected 6 (qid Q0 docno rank"),
    "nine fields": (RUN.replace(b"d17 17 983.25 tag", b"d17 17 983.25 tag a b c"), "run.trec:18: has 9 columns; expected 6"),
    "cat of two runs": (RUN[:-1] + RUN, "run.trec:2000: has 11 columns; expected 6 (qid Q0 docno rank score tag) "
                                        "(a line is 'qid Q0 docno rank score tag'; were two lines run together"),
    "Q0 not UTF-8": (RUN + b"q1 Q\xe90 dx 7 0.5 tag\n", "run.trec:2001: is not UTF-8 text (byte 0xe9 at column 5)"),
    "rank not UTF-8": (RUN + b"q1 Q0 dx 7\xff 0.5 tag\n", "run.trec:2001: is not UTF-8 text (byte 0xff at column 11)"),
    "tag not UTF-8": (RUN + b"q1 Q0 dx 7 0.5 t\xc3g\n", "run.trec:2001: is not UTF-8 text (byte 0xc3 at column 17)"),
}


@pytest.mark.parametrize("case", sorted(_TREC_LINES))
def test_trec_run_lines_that_do_not_fit_are_refused_by_every_build(case, build, tmp_path, capsys) -> None:
    """H3/L1: a line of another field count is never read as its first six fields (a row lost unsaid), and
    a byte that is not UTF-8 in a column rankgate does not keep is refused as in an id: exit 2 naming
    the line, with the compiled reader and without it."""
    content, says = _TREC_LINES[case]
    gold = _write(tmp_path / "qrels.txt", QRELS)
    bad = _write(tmp_path / "run.trec", content)
    assert_refused(_evaluate(gold, bad, _out(tmp_path)), _out_dir(tmp_path), names=[bad], capsys=capsys,
                   contains=[says])


def test_cr_only_line_ends_read_line_by_line_in_every_build(build, tmp_path, capsys) -> None:
    """A run and qrels written with CR-only line ends (or CRLF) give the metrics their LF files give."""
    want = _metrics(_write(tmp_path / "qrels.txt", QRELS), _write(tmp_path / "run.trec", RUN), tmp_path / "a", capsys)
    assert len(want) > 40
    for i, end in enumerate([b"\r", b"\r\n"]):
        gold = _write(tmp_path / f"qrels{i}.txt", QRELS.replace(b"\n", end))
        run = _write(tmp_path / f"run{i}.trec", RUN.replace(b"\n", end))
        assert _metrics(gold, run, tmp_path / f"b{i}", capsys) == want


def test_trec_mode_ignores_text_after_the_sixth_field_as_trec_eval(build, tmp_path, capsys) -> None:
    """`--trec` reads run lines as trec_eval does (its test suite's results.trunc has such lines): text
    after the sixth field is ignored; without --trec the line is refused; --trec still refuses two lines
    run together."""
    gold = _write(tmp_path / "qrels.txt", QRELS)
    want = _metrics(gold, _write(tmp_path / "run.trec", RUN), tmp_path / "a", capsys, "--trec")
    junk = _write(tmp_path / "junk.trec", RUN.replace(b" tag\n", b" tag reserved for later use\n", 5))
    assert _metrics(gold, junk, tmp_path / "b", capsys, "--trec") == want
    assert_refused(_evaluate(gold, junk, _out(tmp_path)), _out_dir(tmp_path), names=[junk], capsys=capsys,
                   contains=["junk.trec:1: has 10 columns; expected 6"])
    cat = _write(tmp_path / "cat.trec", RUN[:-1] + RUN)
    assert_refused(_evaluate(gold, cat, tmp_path / "c", "--trec"), None, names=[cat], capsys=capsys,
                   contains=["cat.trec:2000: has 11 columns"])


def test_trec_mode_reads_run_lines_the_same_way_in_every_command(tmp_path, capsys) -> None:
    """`--trec` means one reading of TREC run lines in every command that takes it: compare (also its
    fused runs) and report read the trec_eval-style line evaluate --trec reads; without --trec each
    refuses it the same way."""
    gold = _write(tmp_path / "qrels.txt", QRELS)
    plain = _write(tmp_path / "run.trec", RUN)
    junk = _write(tmp_path / "junk.trec", RUN.replace(b" tag\n", b" tag reserved for later use\n", 5))
    for extra in ([], ["--fuse", "rrf"]):
        assert main(["compare", "--gold", str(gold), str(plain), str(junk), "-m", "ndcg@10", "--resamples", "0",
                     "--json", "--trec", *extra]) == 0, capsys.readouterr().err
        capsys.readouterr()
        assert main(["compare", "--gold", str(gold), str(plain), str(junk), "-m", "ndcg@10", "--resamples", "0",
                     "--json", *extra]) == 2
        assert "junk.trec:1: has 10 columns; expected 6" in capsys.readouterr().err
    page = tmp_path / "report.html"
    assert main(["report", "--gold", str(gold), "--run", str(junk), "-o", str(page), "--resamples", "0",
                 "--trec"]) == 0, capsys.readouterr().err
    assert page.exists()
    capsys.readouterr()
    assert main(["report", "--gold", str(gold), "--run", str(junk), "-o", str(tmp_path / "r2.html"),
                 "--resamples", "0"]) == 2
    assert "junk.trec:1: has 10 columns; expected 6" in capsys.readouterr().err
