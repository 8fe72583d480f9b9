"""The readers' fuzz tier (slow): thousands of generated hostile files, each read by every path a build
or a file's size can take, which must give the same rows or the same error.

TREC runs and qrels: the compiled reader (one piece and many),
pyarrow's CSV reader (no compiled reader), the line-by-line reader (neither), and for runs the block
reader (:func:`rankgate.io.trec.trec_run_blocks`, whose blocks, when it takes the file, hold the whole
read's rows in order) and ``--trec``'s reading (trec_eval's rule for text after the sixth field, which
changes nothing else). JSONL runs and gold sets: the compiled scanner (item shapes on and off), pyarrow's
path alone, and the validating parser. A sample of each goes through ``rankgate evaluate`` with and
without the compiled reader: the same exit code and the same stderr.

Files are regular ones of a few lines, then edited from fixed seeds (no randomness between runs): extra
and missing fields, lines run together (``cat`` of a file without its last newline), CR-only and mixed
line ends, bytes that are not UTF-8 or not ASCII in each column, control bytes, spaces of other kinds,
comment and blank lines, numbers in other notations, a byte-order mark, a file cut anywhere. Every
outcome is an InputError (exit 2) or a result: anything else escaping fails the test.
"""

from __future__ import annotations

import json
import random
import struct
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import rankgate._native as accel
from rankgate.cli.main import main
from rankgate.io import jsonl_fast, trec
from rankgate.io.load import load_gold, load_run
from rankgate.errors import InputError

from .test_jsonl_differential import (BAD_VALUES, EXTRA_FIELDS, ITEM_EXTRAS, STRUCTURAL, _apply, _canonical,
                                      _gold_line, _run_line)
from .test_trec_reader import READING_PATHS as TREC_PATHS
from .test_trec_reader import reading_path as _path

pytestmark = pytest.mark.slow

READER = accel.reader
FILES = {"run": 2500, "qrels": 2000, "jsonl run": 1200, "jsonl gold": 1200}  # files per reader
CLI_SAMPLE = 100  # of them, through `rankgate evaluate` with and without the compiled reader


# ------------------------------------------------------------------------------------------ reading


def _bits(values: Any) -> list[bytes]:
    return [struct.pack("<d", v) for v in values.tolist()]


def _run_rows(r: Any) -> tuple:
    codes = r.r_query.tolist()
    return ([r.query_ids[c] for c in codes], r.r_doc.to_pylist(), _bits(r.r_score))


def _outcome(read: Callable[[], Any]) -> tuple:
    """("ok", what was read) or ("error", the message); any other exception propagates (a crash)."""
    try:
        got = read()
    except InputError as exc:
        return ("error", str(exc))
    return ("ok", got)


def _read_run(path: str) -> tuple:
    def read() -> tuple:
        r = trec.read_trec_run(path)
        return (r.query_ids, *_run_rows(r))

    return _outcome(read)


def _read_qrels(path: str) -> tuple:
    def read() -> tuple:
        g = trec.read_trec_qrels(path)
        return g.query_ids, g.j_query.tolist(), g.j_doc.to_pylist(), g.j_grade.tolist()

    return _outcome(read)


def _block_rows(path: str) -> tuple | None:
    """("ok", the rows of the run's blocks, in order) or ("error", the message); None when the block
    reader does not take the file or gives up on a block (the file is then read whole)."""
    try:
        blocks = trec.trec_run_blocks(path, 48)
        if blocks is None:
            return None
        rows: tuple[list, list, list] = ([], [], [])
        try:
            for block in blocks:
                if block is None:
                    return None
                for have, more in zip(rows, _run_rows(block)):
                    have.extend(more)
        finally:
            close = getattr(blocks, "close", None)
            if close is not None:
                close()
    except InputError as exc:  # (the first line, read to find the delimiter, names its own error)
        return ("error", str(exc))
    return ("ok", rows) if rows[0] else None


# -------------------------------------------------------------------------------------- TREC files

_ODD_BYTES = [b"\x00", b"\t", b"\x0b", b"\x0c", b"\r", b"\x1c", b"\x1f", b" ", b"\x7f", b"\x80", b"\xa0", b"\xff",
              b"#", b"\n", b"\r\n"]
_NOT_UTF8 = [b"\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\xe2\x82", b"\xf4\x90\x80\x80", b"\x80"]
_NOT_ASCII = ["é", "\u00a0", "\u2028", "\u3000", "\u0085", "\ufeff", "\U0001f600"]
_SCORES = ["nan", "NaN", "inf", "-inf", "Infinity", "1e400", "-1e400", "1_0", "0x10", "١", "+1.5", ".5", "5.", "-0",
           "1e-400", "123456789012345678901234567890", "1e", "1.2.3", "", "NA", "null", "4.9e-324", "9007199254740993",
           "0.30000000000000004", "1E5", "--1", "1,5"]
_GRADES = ["1.0", "+1", "01", "-0", "1_0", "١", "99999999999999999999", "9223372036854775807",
           "-9223372036854775809", "x", "", "0x1", "1e2", "NA"]


def _trec_lines(rng: random.Random, qrels: bool) -> list[list[str]]:
    """A regular file's lines as fields: queries grouped (usually) or not, ids of many lengths."""
    lines = []
    for q in range(rng.randint(1, 4)):
        qid = rng.choice(["q", "3", "query-", "Q#", "x" * rng.randint(1, 70)]) + str(q)
        for i in range(rng.randint(1, 8)):
            doc = rng.choice(["d", "FBIS3-", "clueweb12-0000tw-", "y" * rng.randint(1, 40)]) + str(rng.randint(0, 99))
            if qrels:
                lines.append([qid, rng.choice(["0", "Q0", "1"]), doc, str(rng.randint(-2, 4))])
            else:
                score = rng.choice([repr(rng.uniform(-50, 50)), str(rng.randint(-5, 5)), f"{rng.random():.4f}",
                                    f"{rng.random():e}", str(20 - i)])
                lines.append([qid, "Q0", doc, str(i + 1), score, rng.choice(["run", "bm25_tag", "t" * rng.randint(1, 30)])])
    if rng.random() < 0.2:
        rng.shuffle(lines)
    return lines


def _edit_fields(rng: random.Random, lines: list[list[str]], qrels: bool) -> None:
    """One field-level edit of a random line."""
    if not lines:
        return
    i = rng.randrange(len(lines))
    line = lines[i]
    kind = rng.choice(["extra", "extra", "missing", "empty", "number", "number", "comment", "blank", "not ascii",
                       "duplicate", "space inside"])
    if kind == "extra":
        line.extend(rng.choice(["x", "more junk", "1", "Q0 d9 3 0.5 run", "q Q0 d 1 2 t"]).split()[: rng.randint(1, 5)])
    elif kind == "missing" and len(line) > 1:
        del line[rng.randrange(len(line))]
    elif kind == "empty":
        line[rng.randrange(len(line))] = ""
    elif kind == "number":
        line[min(len(line), 4 if qrels else 5) - 1] = rng.choice(_GRADES if qrels else _SCORES)
    elif kind == "comment":
        lines.insert(i, rng.choice([["#", "a", "comment"], ["#q", "Q0", "d", "1", "2", "t"], ["#"], ["#q", "0", "d", "1"]]))
    elif kind == "blank":
        lines.insert(i, [rng.choice(["", " ", "\t", "\x0c", " \t "])])
    elif kind == "not ascii":
        f = rng.randrange(len(line))
        line[f] = line[f][:1] + rng.choice(_NOT_ASCII) + line[f][1:]
    elif kind == "duplicate":
        lines.insert(i, list(line))
    elif kind == "space inside":
        f = rng.randrange(len(line))
        line[f] = line[f][:1] + rng.choice([" ", "\t", "\x0b", "\x0c", "  "]) + line[f][1:]


def _trec_bytes(rng: random.Random, lines: list[list[str]]) -> bytes:
    delim = rng.choice([" ", " ", "\t"])
    end = rng.choice(["\n", "\n", "\r\n", "\r"])
    text = "".join(delim.join(f) + end for f in lines)
    if rng.random() < 0.2:
        text = text[: -len(end)]  # no last line end
    return text.encode()


def _edit_bytes(rng: random.Random, data: bytes) -> bytes:
    """One byte-level edit."""
    kind = rng.choice(["odd byte", "not utf8", "join lines", "join lines", "cr only", "cut", "bom", "delete",
                       "double delimiter", "mixed ends", "lead space"])
    at = rng.randrange(len(data) + 1)
    if kind == "odd byte":
        return data[:at] + rng.choice(_ODD_BYTES) + data[at:]
    if kind == "not utf8":
        return data[:at] + rng.choice(_NOT_UTF8) + data[at:]
    if kind == "join lines":  # `cat` of a file that lacks its last newline (with a space before it, or not)
        ends = [i for i, b in enumerate(data) if b == 0x0A]
        if ends:
            e = rng.choice(ends)
            start = e - 1 if e > 0 and data[e - 1] == 0x0D else e
            return data[:start] + rng.choice([b"", b" ", b"\t"]) + data[e + 1:]
        return data
    if kind == "cr only":
        return data.replace(b"\r\n", b"\n").replace(b"\n", b"\r")
    if kind == "mixed ends":
        ends = [i for i, b in enumerate(data) if b == 0x0A]
        if ends:
            e = rng.choice(ends)
            return data[:e] + rng.choice([b"\r", b"\r\r\n", b"\n\r", b"\x0b", b"\x0c", b"\xc2\x85"]) + data[e + 1:]
        return data
    if kind == "cut":
        return data[:at]
    if kind == "bom":
        return b"\xef\xbb\xbf" + data
    if kind == "delete" and data:
        at = min(at, len(data) - 1)
        return data[:at] + data[at + 1:]
    if kind == "double delimiter":
        seps = [i for i, b in enumerate(data) if b in (0x20, 0x09)]
        if seps:
            s = rng.choice(seps)
            return data[:s] + data[s:s + 1] + data[s:]
        return data
    if kind == "lead space":
        ends = [0] + [i + 1 for i, b in enumerate(data) if b == 0x0A]
        s = rng.choice(ends)
        return data[:s] + rng.choice([b" ", b"\t", b"\x0c"]) + data[s:]
    return data


def trec_file(seed: int, qrels: bool) -> bytes:
    rng = random.Random(seed)
    lines = _trec_lines(rng, qrels)
    for _ in range(rng.choice([0, 1, 1, 2, 3])):
        _edit_fields(rng, lines, qrels)
    data = _trec_bytes(rng, lines)
    for _ in range(rng.choice([0, 0, 1, 1, 2])):
        data = _edit_bytes(rng, data)
    return data


def _seeds(kind: str) -> range:
    base = {"run": 10**6, "qrels": 2 * 10**6, "jsonl run": 3 * 10**6, "jsonl gold": 4 * 10**6}[kind]
    return range(base, base + FILES[kind])


# ------------------------------------------------------------------------------------------ TREC tests

def test_trec_runs_read_alike_by_every_path(tmp_path: Path) -> None:
    path = tmp_path / "run"
    tally = {"ok": 0, "error": 0, "compiled": 0, "blocks": 0, "trec rule": 0}
    for seed in _seeds("run"):
        path.write_bytes(trec_file(seed, qrels=False))
        outcomes = {}
        for name in TREC_PATHS:
            with _path(name):
                outcomes[name] = _read_run(str(path))
        want = outcomes["lines"]
        assert all(got == want for got in outcomes.values()), (seed, path.read_bytes(), outcomes)
        tally[want[0]] += 1
        if READER is not None:
            tally["compiled"] += want[0] == "ok" and trec._mapped_lines(str(path), 6, 4, 0) is not None
            blocks = _block_rows(str(path))
            if blocks is not None:  # every block read: the whole file's rows, in order (or its error)
                got = blocks if blocks[0] == "error" else ("ok", tuple(blocks[1]))
                assert got == (want if want[0] == "error" else ("ok", tuple(want[1][1:]))), \
                    (seed, path.read_bytes(), want, blocks)
                tally["blocks"] += blocks[0] == "ok"
        with _path("lines"), trec.trec_eval_lines():  # --trec: text after the sixth field, and nothing else
            lenient = _read_run(str(path))
        if want[0] == "ok" or "columns; expected 6" not in want[1]:
            assert lenient == want, (seed, path.read_bytes(), want, lenient)
        else:
            tally["trec rule"] += lenient[0] == "ok"
    # (the files are hostile, not hopeless: many still read, and each kind of path is met)
    assert tally["ok"] > FILES["run"] // 5 and tally["error"] > FILES["run"] // 3, tally
    assert READER is None or (tally["compiled"] > FILES["run"] // 10 and tally["blocks"] > 50), tally
    assert tally["trec rule"] > 10, tally


def test_trec_qrels_read_alike_by_every_path(tmp_path: Path) -> None:
    path = tmp_path / "qrels"
    tally = {"ok": 0, "error": 0}
    for seed in _seeds("qrels"):
        path.write_bytes(trec_file(seed, qrels=True))
        outcomes = {}
        for name in TREC_PATHS:
            with _path(name):
                outcomes[name] = _read_qrels(str(path))
        want = outcomes["lines"]
        assert all(got == want for got in outcomes.values()), (seed, path.read_bytes(), outcomes)
        tally[want[0]] += 1
    assert tally["ok"] > FILES["qrels"] // 5 and tally["error"] > FILES["qrels"] // 3, tally


# ------------------------------------------------------------------------------------------- JSONL

def _jsonl_lines(rng: random.Random, gold: bool) -> list[bytes]:
    n = rng.randint(jsonl_fast.SAMPLE_LINES + 2, jsonl_fast.SAMPLE_LINES + 30)
    if gold:
        shape = rng.choice(["graded", "ids"])
        lines = [json.dumps(_gold_line(i, 1 + i % 3, shape)).encode() for i in range(n)]
    else:
        shape = rng.choice(["scored", "ranked", "ids", "numbers", "timed"])
        lines = [json.dumps(_run_line(i, 1 + i % 4, shape)).encode() for i in range(n)]
    for _ in range(rng.choice([0, 1, 1, 2, 3])):
        at = rng.choice([n - 1, rng.randrange(n), rng.randrange(jsonl_fast.SAMPLE_LINES, n)])
        change = rng.choice([
            ("value", rng.choice(["query", "list", "item id", "item score", "grade", "item"]), rng.choice(BAD_VALUES)),
            ("field", rng.choice(EXTRA_FIELDS), None),
            ("item field", rng.choice(ITEM_EXTRAS), None),
            ("structure", rng.choice(STRUCTURAL), None),
        ])
        _apply(lines, min(at, len(lines) - 1), change)
    return lines


@contextmanager
def _jsonl_path(name: str) -> Iterator[None]:
    """``parser`` (the validating parser alone), ``scan`` / ``scan by key`` (the compiled scanner first,
    item shapes on or off), ``arrow`` (the fast path without the compiled scanner)."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(jsonl_fast, "SAMPLE_LINES", 20)  # (files of a few dozen lines: the sample is not all of them)
        m.setattr(jsonl_fast, "MIN_BYTES", 1 << 62 if name == "parser" else 0)
        if name == "arrow":
            m.setattr(accel, "reader", None)
        if name.startswith("scan"):
            assert READER is not None
            before = READER.item_shapes(name == "scan")
            try:
                yield
            finally:
                READER.item_shapes(before)
            return
        yield


JSONL_PATHS = (["scan", "scan by key"] if READER is not None else []) + ["arrow", "parser"]


@pytest.mark.parametrize("kind", ["jsonl run", "jsonl gold"])
def test_jsonl_files_read_alike_by_every_path(kind: str, tmp_path: Path) -> None:
    gold = kind == "jsonl gold"
    load = load_gold if gold else load_run
    path = tmp_path / ("gold.jsonl" if gold else "run.jsonl")
    tally = {"ok": 0, "error": 0}
    for seed in _seeds(kind):
        with _jsonl_path("parser"):  # (SAMPLE_LINES as the readers will see it)
            lines = _jsonl_lines(random.Random(seed), gold)
        path.write_bytes(b"\n".join(lines) + b"\n")
        outcomes = {}
        for name in JSONL_PATHS:
            with _jsonl_path(name):
                outcomes[name] = _outcome(lambda: _canonical(load(str(path))))
        want = outcomes["parser"]
        assert all(got == want for got in outcomes.values()), (seed, outcomes)
        tally[want[0]] += 1
    assert tally["ok"] > FILES[kind] // 5 and tally["error"] > FILES[kind] // 5, tally


# ---------------------------------------------------------------------------------------------- CLI

QRELS = b"".join(b"q%d 0 d%d %d\n" % (q, d, (q + d) % 3) for q in range(4) for d in range(20))
RUN = b"".join(b"q%d Q0 d%d %d %d.5 t\n" % (q, d, d + 1, 30 - d) for q in range(4) for d in range(20))


@pytest.mark.parametrize("which", ["run", "qrels"])
def test_evaluate_answers_alike_with_and_without_the_compiled_reader(which: str, tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """A sample of the files above as `rankgate evaluate` reads them: exit 0 or 2 (never a crash, exit
    3), the same code and the same stderr whether the compiled reader is there or not."""
    bad = tmp_path / ("run.trec" if which == "run" else "qrels.trec")
    other = tmp_path / ("qrels.trec" if which == "run" else "run.trec")
    other.write_bytes(QRELS if which == "run" else RUN)
    gold, run = (other, bad) if which == "run" else (bad, other)
    codes = set()
    for seed in list(_seeds(which))[::FILES[which] // CLI_SAMPLE][:CLI_SAMPLE]:
        bad.write_bytes(trec_file(seed, qrels=which == "qrels"))
        said = []
        for name in ("compiled", "lines") if READER is not None else ("arrow", "lines"):
            with _path(name):
                capsys.readouterr()
                code = main(["evaluate", "--gold", str(gold), "--run", str(run), "--resamples", "0", "--json",
                             "-m", "ndcg@10,recall@5"])
                out, err = capsys.readouterr()
            assert code in (0, 2), (seed, bad.read_bytes(), code, err)
            said.append((code, err, json.loads(out)["metrics"] if code == 0 else None))
        assert said[0] == said[1], (seed, bad.read_bytes(), said)
        codes.add(said[0][0])
    assert codes == {0, 2}
