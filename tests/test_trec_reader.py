"""The compiled TREC line reader against the general readers: same rows, same ids, same bits.

The reader only takes files it can read in full; everything else must come back as None so that the
general readers (which name a bad line) take the file. Numbers must equal Python's float() bit for bit.
"""

from __future__ import annotations

import os
import re
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rankgate._native as accel
from rankgate.io import trec
from rankgate.errors import InputError

from .conftest import examples

reader = accel.reader
needs_reader = pytest.mark.skipif(reader is None, reason="rankgate._native._reader is not built in this installation")


def test_ci_builds_the_reader() -> None:
    if os.environ.get("CI") and accel.mode != "off":
        assert reader is not None, "rankgate._native._reader did not build; see the pip install log"


def _bits(values: np.ndarray) -> list[bytes]:
    return [struct.pack("<d", v) for v in values.tolist()]


def _read_numbers(texts: list[str]) -> tuple[np.ndarray, object]:
    """Parse each text as the score column of a one-line-per-text run (reader only)."""
    body = "".join(f"q{i % 3} Q0 d{i} {i + 1} {t} run\n" for i, t in enumerate(texts)).encode()
    n = len(texts)
    codes = np.empty(n, np.int32)
    values = np.empty(n)
    offsets = np.empty(n + 1, np.int32)
    data = np.empty(len(body) + 16, np.uint8)  # the reader copies short ids 16 bytes at a time
    got = reader.read_lines(body, 0, len(body), 6, 4, 0, b" ", codes, values, offsets, data)
    return values, got


def _columns(path: Path, kind: str, monkeypatch: pytest.MonkeyPatch, *, general: bool) -> tuple[list, ...]:
    """Everything a reader returns for the file, by this reader or (``general``) by the others."""
    with monkeypatch.context() as m:
        if general:
            m.setattr(accel, "reader", None)
        if kind == "run":
            r = trec.read_trec_run(str(path))
            return r.query_ids, r.r_query.tolist(), r.r_doc.to_pylist(), _bits(r.r_score)
        g = trec.read_trec_qrels(str(path))
        return g.query_ids, g.j_query.tolist(), g.j_doc.to_pylist(), g.j_grade.tolist()


@needs_reader
@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False, width=64), min_size=1, max_size=60))
def test_python_reprs_read_back_exactly(xs: list[float]) -> None:
    values, got = _read_numbers([repr(x) for x in xs])
    assert got is not None
    assert _bits(values) == _bits(np.asarray(xs))


decimals = st.builds(
    lambda sign, whole, frac, exp: f"{sign}{whole}{'.' + frac if frac is not None else ''}{exp}",
    st.sampled_from(["", "-", "+"]),
    st.text("0123456789", min_size=1, max_size=24),
    st.none() | st.text("0123456789", min_size=0, max_size=24),
    st.sampled_from([""]) | st.builds(lambda e, x: f"{e}{x}", st.sampled_from(["e", "E", "e-", "e+", "E-"]),
                                      st.integers(0, 340).map(str)),
)


@needs_reader
@settings(max_examples=examples(500), deadline=None)
@given(st.lists(decimals, min_size=1, max_size=40))
def test_decimal_text_rounds_like_python(texts: list[str]) -> None:
    """Every branch of the conversion: short (one IEEE operation), up to 19 digits (128-bit
    division), longer or far exponents (Python's own conversion); ties, zeros, signs."""
    values, got = _read_numbers(texts)
    assert got is not None
    assert _bits(values) == _bits(np.asarray([float(t) for t in texts]))


@needs_reader
@pytest.mark.parametrize(
    "text",
    [
        "9007199254740993",  # 2**53 + 1: a tie, to even
        "9007199254740995",
        "0.30000000000000004",
        "123456789012345678.9",
        "1.0000000000000002220446049250313080847263336181640625",  # exactly halfway, long
        "2.2250738585072011e-308",
        "4.9e-324",
        "1e23",
        "8.98846567431158e307",
        "1.7976931348623157e308",
        "1e400",
        "-0.0",
        "0e999",
        "00000000000000000000000001.5",
        "0.000000000000000000000000000000123",
        "9999999999999999999",
        "18446744073709551615e-27",
    ],
)
def test_hard_numbers(text: str) -> None:
    values, got = _read_numbers([text])
    assert got is not None
    assert _bits(values) == _bits(np.asarray([float(text)]))


@needs_reader
@pytest.mark.parametrize("text", ["nan", "inf", "-inf", "1_000", "0x10", "1e", "1.2.3", ".", "-", "1e+", "1,5", "١"])
def test_other_notations_go_to_the_general_reader(text: str) -> None:
    _, got = _read_numbers([text])
    assert got is None


lines = st.tuples(
    st.sampled_from(["q1", "q2", "301", "query-7", "Q9"]),
    st.sampled_from(["d1", "d2", "d10", "doc#3", "FBIS3-10082", "d000123"]),
    st.floats(-1e6, 1e6, allow_nan=False) | st.integers(-5, 5),
)


@needs_reader
@settings(max_examples=examples(150), deadline=None)
@given(
    rows=st.lists(lines, min_size=1, max_size=80),
    delim=st.sampled_from([" ", "\t"]),
    crlf=st.booleans(),
    blank=st.booleans(),
    piece=st.sampled_from([1 << 30, 64, 200]),
    last_newline=st.booleans(),
    release=st.booleans(),
)
def test_runs_read_as_the_general_reader_reads_them(tmp_path_factory, rows, delim, crlf, blank, piece, last_newline,
                                                    release) -> None:
    """Also in pieces whose pages are let go once read (``release``: as a large file is read)."""
    nl = "\r\n" if crlf else "\n"
    text = "".join(delim.join([q, "Q0", d, str(i + 1), repr(s) if isinstance(s, float) else str(s), "tag"]) + nl
                   + (nl if blank and i % 7 == 3 else "") for i, (q, d, s) in enumerate(rows))
    if not last_newline:  # the last line is read from a copy with a newline added
        text = text.rstrip("\r\n")
    path = tmp_path_factory.mktemp("run") / "run.trec"
    path.write_bytes(text.encode())
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(trec, "_PIECE", piece)  # small pieces: several calls, codes merged across them
        if release:
            monkeypatch.setattr(trec, "_RELEASE_FROM", 0)
            monkeypatch.setattr(trec, "_RELEASE_PIECE", 100)
        assert trec._mapped_lines(str(path), 6, 4, 0) is not None
        assert _columns(path, "run", monkeypatch, general=False) == _columns(path, "run", monkeypatch, general=True)


@needs_reader
@pytest.mark.parametrize("last_newline", [True, False])
@pytest.mark.parametrize("n", [1, 2, 7, 40])
def test_the_shortest_lines_fit_the_rows_a_piece_is_given(tmp_path, monkeypatch, n, last_newline) -> None:
    """A piece read without counting its lines first is given room for one row per 2 * ncols bytes:
    exactly enough for lines of one-byte fields (also without the last newline), and none declined."""
    text = "".join(f"{i % 10} Q {i % 7} {i % 3} {i % 9} t\n".replace(" Q ", " 0 ") for i in range(n))
    path = tmp_path / "run.trec"
    path.write_bytes((text if last_newline else text[:-1]).encode())
    got = trec._mapped_lines(str(path), 6, 4, 0)
    assert got is not None and len(got[1]) == n
    assert _columns(path, "run", monkeypatch, general=False) == _columns(path, "run", monkeypatch, general=True)
    qrels = tmp_path / "qrels.trec"
    qrels.write_bytes("".join(f"{i % 10} 0 {i % 7} {i % 3}\n" for i in range(n)).encode()[: None if last_newline else -1])
    got = trec._mapped_lines(str(qrels), 4, 3, 1)
    assert got is not None and len(got[1]) == n


_ODD_BYTES = [bytes([b]) for b in (0x00, 0x09, 0x0b, 0x0d, 0x1f, 0x20, 0x21, 0x7e, 0x7f, 0x80, 0xa0, 0xff)] + [b"\xc3\xa9"]


@needs_reader
@settings(max_examples=examples(200), deadline=None)
@given(rows=st.lists(st.tuples(st.integers(0, 14), st.integers(0, 10**12)), min_size=1, max_size=6),
       edits=st.lists(st.tuples(st.integers(0, 400), st.sampled_from(_ODD_BYTES), st.booleans()), max_size=2))
def test_ids_and_fields_of_any_length_with_odd_bytes_anywhere(tmp_path_factory, rows, edits) -> None:
    """The reader finds a field's end eight bytes at a time: ids of every length (so every byte of a
    word), with control, space, DEL, high and UTF-8 bytes put anywhere, are read as the general reader
    reads them, or left to it (never read differently; the same error when there is one)."""
    text = "".join(f"q{'x' * pad}{i} Q0 d{doc} {i + 1} {1.5 - i} tag{'g' * pad}\n" for i, (pad, doc) in enumerate(rows)).encode()
    for at, byte, replace in edits:
        at %= len(text) + 1
        text = text[:at] + byte + text[at + (1 if replace else 0):]
    path = tmp_path_factory.mktemp("run") / "run.trec"
    path.write_bytes(text)

    def outcome(general: bool) -> object:
        with pytest.MonkeyPatch.context() as monkeypatch:
            try:
                return _columns(path, "run", monkeypatch, general=general)
            except InputError as exc:
                return str(exc)

    assert outcome(general=False) == outcome(general=True)
    if not edits:
        assert trec._mapped_lines(str(path), 6, 4, 0) is not None


@needs_reader
def test_qrels_read_as_the_general_reader_reads_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(5)
    lines = [f"q{q} 0 d{d} {g}" for q in rng.permutation(50) for d, g in zip(rng.choice(999, 9, replace=False),
                                                                           rng.integers(-2, 4, 9))]
    path = tmp_path / "qrels.txt"
    path.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(trec, "_PIECE", 300)
    assert trec._mapped_lines(str(path), 4, 3, 1) is not None
    assert _columns(path, "qrels", monkeypatch, general=False) == _columns(path, "qrels", monkeypatch, general=True)


@needs_reader
@pytest.mark.parametrize(
    "text",
    [
        "q1 Q0 d1 1 0.5 run\n# a comment b c d\n",
        "q1 Q0 d1 1 0.5 run\nq1 Q0 d2 2 0.4\n",  # five columns
        "q1 Q0 d1 1 0.5 run extra\n",
        "q1 Q0 d1 1 0.5 run \n",  # trailing delimiter: an empty seventh field
        "q1  Q0 d1 1 0.5 run\n",  # two delimiters
        "q1 Q0 d1 1 0.5 run\nq1 Qé d2 2 0.4 run\n",  # non-ASCII in a column not kept: checked all the same
        "q1 Q0 d1 1 0.5 run\nq1 Q0 d2 2\u00a0 0.4 run\n",
        "q1 Q0 d1 1 0.5 run\nq1 Q0 d2 2 0.4 rün\n",
        "q1 Q0 dé 1 0.5 run\n",  # a non-ASCII id (the general reader checks the encoding)
        "q1 Q0 d\t1 1 0.5 run\n",  # a tab in a space-separated file
        "q1 Q0 d1 1 nan run\n",
        "\ufeffq1 Q0 d1 1 0.5 run\n",
    ],
)
def test_irregular_files_are_left_to_the_general_reader(tmp_path: Path, text: str) -> None:
    path = tmp_path / "run.trec"
    path.write_bytes(text.encode())
    assert trec._mapped_lines(str(path), 6, 4, 0) is None


@needs_reader
def test_bad_files_still_get_their_messages(tmp_path: Path) -> None:
    path = tmp_path / "run.trec"
    path.write_text("q1 Q0 d1 1 0.5 run\nq1 Q0 d2 2 high run\n")
    with pytest.raises(InputError, match=r"run.trec:2: field .score \(column 5\). must be a number"):
        trec.read_trec_run(str(path))
    path.write_text("\n\n")
    with pytest.raises(InputError, match="is empty"):
        trec.read_trec_run(str(path))
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\nq1 0 d1 2\n")
    with pytest.raises(InputError, match=r"qrels.txt:2: judges 'd1' for query 'q1' again \(first on line 1\)"):
        trec.read_trec_qrels(str(qrels))


@needs_reader
def test_inconsistent_buffers_are_refused() -> None:
    body = b"q Q0 d 1 2 r\n"
    with pytest.raises(ValueError):
        reader.read_lines(body, 0, 99, 6, 4, 0, b" ", np.empty(2, np.int32), np.empty(2), np.empty(3, np.int32),
                          np.empty(20, np.uint8))
    with pytest.raises(ValueError):
        reader.read_lines(body, 0, len(body), 6, 4, 0, b" ", np.empty(2, np.int32), np.empty(3), np.empty(3, np.int32),
                          np.empty(20, np.uint8))
    with pytest.raises(ValueError):  # no room for a 16-byte copy
        reader.read_lines(body, 0, len(body), 6, 4, 0, b" ", np.empty(2, np.int32), np.empty(2), np.empty(3, np.int32),
                          np.empty(15, np.uint8))
    # too little room for the rows or the ids: the file is left to the general reader, nothing is
    # written past the end
    assert reader.read_lines(body * 3, 0, 39, 6, 4, 0, b" ", np.empty(2, np.int32), np.empty(2), np.empty(3, np.int32),
                             np.empty(55, np.uint8)) is None
    assert reader.read_lines(body * 3, 0, 39, 6, 4, 0, b" ", np.empty(3, np.int32), np.empty(3), np.empty(4, np.int32),
                             np.empty(18, np.uint8)) is None
    assert reader.count_lines(body * 3, 0, 39) == 3
    assert reader.count_lines(body * 3, 0, 38) == 2


@needs_reader
@settings(max_examples=examples(300), deadline=None)
@given(st.binary(max_size=200).map(lambda b: b.replace(b"x", b"\n")), st.integers(0, 199), st.integers(0, 199))
def test_count_lines_counts_every_newline_in_any_range(body: bytes, a: int, b: int) -> None:
    """The count (eight bytes at a time) is bytes.count's, at every alignment and length, bytes >= 0x80
    and neighbours of a newline (0x09, 0x0b, 0x8a) included."""
    assert reader is not None
    body += b"\x0b\n\x8a\x09\n\xff" * (a % 3)
    lo, hi = sorted((min(a, len(body)), min(b, len(body))))
    assert reader.count_lines(body, lo, hi) == body[lo:hi].count(b"\n")


@pytest.mark.parametrize("kind", ["run", "qrels", "beir"])
def test_bytes_that_are_not_utf8_are_named_by_line(tmp_path: Path, kind: str) -> None:
    """Whichever reader takes the file, undecodable bytes are an input error on their own line."""
    lines = {"run": [b"q1 Q0 d1 1 0.5 run", b"q1 Q0 d\xff2 2 0.4 run"],
             "qrels": [b"q1 0 d1 1", b"q1 0 d\xff2 1"],
             "beir": [b"query-id\tcorpus-id\tscore", b"q1\td\xff2\t1"]}[kind]
    path = tmp_path / "file.txt"
    path.write_bytes(b"\n".join(lines) + b"\n")
    read = {"run": trec.read_trec_run, "qrels": trec.read_trec_qrels, "beir": trec.read_beir_qrels}[kind]
    with pytest.raises(InputError, match=r"file.txt:2: is not UTF-8 text \(byte 0xff at column"):
        read(str(path))


@pytest.mark.skipif(__import__("rankgate._native", fromlist=["reader"]).reader is None, reason="compiled reader not built")
def test_the_compiled_reader_still_takes_regular_files_and_declines_the_rest(tmp_path: Path) -> None:
    """Pipes, gzip (by content, whatever the name) and a byte-order mark go to the other readers, which
    give the same result; a plain regular file is still read by the compiled reader."""
    import gzip

    body = b"".join(b"q%d Q0 d%d %d %d.5 t\n" % (i // 10, i, i, 100 - i) for i in range(100))
    plain = tmp_path / "run.txt"
    plain.write_bytes(body)
    assert trec._mapped_lines(str(plain), 6, 4, 0) is not None
    want = trec.read_trec_run(str(plain))
    for name, data in [("packed", gzip.compress(body)), ("bom.txt", b"\xef\xbb\xbf" + body)]:
        other = tmp_path / name
        other.write_bytes(data)
        assert trec._mapped_lines(str(other), 6, 4, 0) is None
        got = trec.read_trec_run(str(other))
        assert got.query_ids == want.query_ids and got.r_query.tolist() == want.r_query.tolist()
        assert got.r_doc.to_pylist() == want.r_doc.to_pylist() and got.r_score.tolist() == want.r_score.tolist()


def _read_direct(text: bytes, ncols: int, value_col: int, value_kind: int, delim: bytes) -> object:
    """read_lines on the whole of ``text``: its verdict and every output it wrote."""
    assert reader is not None
    rows = reader.count_lines(text, 0, len(text)) + 1
    codes = np.zeros(rows, dtype=np.int32)
    values = np.zeros(rows, dtype=np.float64 if value_kind == 0 else np.int64)
    offsets = np.zeros(rows + 1, dtype=np.int32)
    data = np.zeros(len(text) + 16, dtype=np.uint8)
    got = reader.read_lines(text, 0, len(text), ncols, value_col, value_kind, delim, codes, values, offsets, data)
    if got is None:
        return None
    n, nbytes, qids = got
    return n, qids, codes[:n].tolist(), values[:n].view(np.int64).tolist(), offsets[: n + 1].tolist(), bytes(data[:nbytes])


def _read_model(text: bytes, ncols: int, value_col: int, value_kind: int, delim: bytes) -> object:
    """What :func:`_read_direct` gives, from the rule the reader states (for the numbers this file's
    lines hold: digits, a point, a sign): lines end in \\n, \\r\\n or a lone \\r, empty ones are skipped,
    each of exactly ``ncols`` non-empty fields of bytes 0x21-0x7f (ids 0x21-0x7e) split by one ``delim``;
    a comment line, or more lines than newlines + 1 (the outputs' room), is None."""
    lines = [line for line in text.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n") if line]
    if len(lines) > text.count(b"\n") + 1:
        return None
    qids: list[str] = []
    codes, values, offsets, data = [], [], [0], b""
    for line in lines:
        fields = line.split(delim)
        if line.startswith(b"#") or len(fields) != ncols:
            return None
        for c, field in enumerate(fields):
            if not field or any(not 0x21 <= byte <= (0x7e if c in (0, 2) else 0x7f) for byte in field):
                return None
        number = fields[value_col]
        if value_kind == 0:
            if number.strip(b"0123456789.-+eE"):
                return None
            try:
                value = struct.unpack("<q", struct.pack("<d", float(number)))[0]
            except ValueError:
                return None
        else:
            if re.fullmatch(rb"-?[0-9]{1,18}", number) is None:
                return None
            value = int(number)
        qid = fields[0].decode()
        if qid not in qids:
            qids.append(qid)
        codes.append(qids.index(qid))
        values.append(value)
        data += fields[2]
        offsets.append(len(data))
    return len(lines), qids, codes, values, offsets, data


# One flaw at most in a file of regular lines (a file with one bad line anywhere is declined whole):
# in field f of a line, or after it (D: the file's delimiter).
_FLAWS = ["empty", "DD", " \t", "\t ", "\r", "\x0b", "\x7f", "\x80", "\xff", "~", "end \r", "end \r\r\n", "end  \n",
          "end D\n", "end \r \n"]


def _flawed_line(lens: list[int], ncols: int, crlf: bool, delim: bytes, i: int, flaw: tuple[int, str] | None) -> bytes:
    fields = [b"q" * lens[0], b"Q0"[: lens[1]], b"d" + b"7" * lens[2], str(i % 3).encode()[: lens[3]],
              f"{i}.{'5' * lens[4]}".encode()[: lens[4] + 2], b"t" * lens[5]][:ncols]
    if ncols == 4:
        fields[1] = b"0"
    seps = [delim] * (ncols - 1) + [b"\r\n" if crlf else b"\n"]
    if flaw is not None:
        f, kind = flaw
        f %= ncols
        if kind == "empty":
            fields[f] = b""
        elif kind.startswith("end "):
            seps[-1] = kind[4:].replace("D", delim.decode()).encode()
        elif len(kind) == 1 and kind not in " \t\r\x0b":  # a byte put into the field (an id's must be printable ASCII)
            fields[f] = fields[f][:1] + kind.encode("latin-1") + fields[f][1:]
        else:
            seps[min(f, ncols - 2)] = kind.replace("D", delim.decode()).encode()
    return b"".join(field + sep for field, sep in zip(fields, seps))


@needs_reader
@settings(max_examples=examples(500), deadline=None)
@given(
    lines=st.lists(st.tuples(st.lists(st.integers(1, 33), min_size=6, max_size=6), st.booleans()),
                   min_size=1, max_size=6),
    qrels=st.booleans(),
    delim=st.sampled_from([b" ", b"\t"]),
    flaw=st.none() | st.tuples(st.integers(0, 5), st.integers(0, 5), st.sampled_from(_FLAWS)),
)
def test_lines_read_as_the_stated_rule_reads_them(lines, qrels, delim, flaw) -> None:
    """The compiled split (fields' ends found eight bytes at a time) against :func:`_read_model`.
    Fields of every length across the word boundaries, an empty field, a doubled or wrong separator, an
    odd line end or a byte outside printable ASCII in any field: the same rows, ids, numbers and
    verdicts."""
    ncols, value_col, value_kind = (4, 3, 1) if qrels else (6, 4, 0)
    text = b"".join(_flawed_line(lens, ncols, crlf, delim, i, flaw[1:] if flaw and flaw[0] % len(lines) == i else None)
                    for i, (lens, crlf) in enumerate(lines))
    text += (delim.join([b"q", b"0", b"d", b"1", b"2.5", b"t"][:ncols]) + b"\n") * 8  # (a regular tail)
    got = _read_direct(text, ncols, value_col, value_kind, delim)
    assert got == _read_model(text, ncols, value_col, value_kind, delim)
    if flaw is None:
        assert got is not None


@needs_reader
@pytest.mark.parametrize("qrels", [False, True])
@pytest.mark.parametrize("delim", [b" ", b"\t"])
def test_every_flaw_in_every_field_at_every_length_of_the_line(qrels: bool, delim: bytes) -> None:
    """Each flaw of the property test above, in each field, with the line's length swept over 32 bytes
    (every alignment of its fields to the eight-byte words), after a regular line and before the regular
    tail: the compiled reader gives :func:`_read_model`'s answer."""
    ncols, value_col, value_kind = (4, 3, 1) if qrels else (6, 4, 0)
    regular = (delim.join([b"q", b"0", b"d", b"1", b"2.5", b"t"][:ncols]) + b"\n")
    checked = read = 0
    for kind in [None, *_FLAWS]:
        for field in range(ncols if kind else 1):
            for pad in range(40, 72):  # the line's length: about pad + 10 bytes
                for crlf in (False, True):
                    lens = [pad - 30, 2, 9, 1, 3, 18] if not qrels else [pad - 20, 1, 18, 1]
                    line = _flawed_line(lens + [1] * (6 - len(lens)), ncols, crlf, delim, 1,
                                        None if kind is None else (field, kind))
                    text = regular + line + regular * 8
                    got = _read_direct(text, ncols, value_col, value_kind, delim)
                    assert got == _read_model(text, ncols, value_col, value_kind, delim), (kind, field, pad, crlf)
                    assert kind is not None or got is not None
                    read += got is not None
                    checked += 1
    assert checked > 1000 and 0 < read < checked


@needs_reader
def test_count_lines_at_every_start_and_end_of_a_dense_text() -> None:
    """Newlines on a third of 300 bytes, counted over every range that starts in the first 70 bytes:
    each eight-byte word's first and last byte, and the bytes left after the last word, are counted."""
    assert reader is not None
    rng = np.random.default_rng(11)
    body = bytes(np.where(rng.random(300) < 0.33, 10, rng.integers(11, 256, 300)).astype(np.uint8))
    for lo in range(70):
        for hi in range(lo, len(body) + 1):
            assert reader.count_lines(body, lo, hi) == body[lo:hi].count(b"\n"), (lo, hi)


# ------------------------------------------------------------------ every reading path, one answer

@contextmanager
def reading_path(name: str) -> Iterator[None]:
    """Force one reading path of the TREC readers: ``compiled`` (the compiled reader), ``pieces`` (the
    compiled reader in pieces of ~40 bytes, on two threads), ``arrow`` (no compiled reader: pyarrow's),
    ``lines`` (neither: the line-by-line reader)."""
    with pytest.MonkeyPatch.context() as m:
        if name in ("compiled", "pieces"):
            assert reader is not None
            if name == "pieces":
                m.setattr(trec, "_PIECE", 40)
            yield
            return
        m.setattr(accel, "reader", None)
        if name == "lines":
            m.setattr(trec, "_fast_table", lambda *a, **k: None)
        yield


READING_PATHS = (["compiled", "pieces"] if reader is not None else []) + ["arrow", "lines"]


def _every_path(path: Path, kind: str) -> object:
    """What each reading path gives for the file (its columns or its error), checked to be one answer."""
    outcomes = {}
    for name in READING_PATHS:
        with reading_path(name), pytest.MonkeyPatch.context() as m:
            try:
                outcomes[name] = _columns(path, kind, m, general=False)
            except InputError as exc:
                outcomes[name] = str(exc)
    assert len({repr(v) for v in outcomes.values()}) == 1, outcomes
    return outcomes["lines"]


_RUN = b"q1 Q0 d1 1 0.5 run\nq1 Q0 d2 2 0.25 run\nq2 Q0 d3 1 2.5 run\n"

# (content, line, what the message says): lines of another field count, from any reader
_WRONG_FIELDS = {
    "seven fields": (_RUN + b"q2 Q0 d4 2 1.5 run v2\n", 4, "has 7 columns; expected 6 (qid Q0 docno rank score tag)"),
    "nine fields": (b"q0 Q0 d0 1 9 run\t# a b\n" + _RUN, 1, "has 9 columns; expected 6"),
    "seven, in the middle": (_RUN.replace(b"d2 2", b"d2 x 2"), 2, "has 7 columns; expected 6"),
    "an id with a space": (_RUN.replace(b"d3", b"doc 3"), 3, "has 7 columns"),
    "cat without the last newline": (_RUN[:-1] + _RUN.replace(b"q", b"p"), 3, "has 11 columns; expected 6"),
    "cat, a space before": (_RUN[:-1] + b" " + _RUN.replace(b"q", b"p"), 3, "has 12 columns; expected 6"),
    "five fields": (_RUN.replace(b" run\nq2", b"\nq2"), 2, "has 5 columns; expected 6"),
    "a no-break space is no separator": (_RUN.replace(b"d2 2", "d2\u00a02".encode()), 2, "has 5 columns"),
}


@pytest.mark.parametrize("case", sorted(_WRONG_FIELDS))
@pytest.mark.parametrize("delim", [b" ", b"\t"])
def test_a_run_line_has_exactly_six_fields_whichever_path_reads_it(case, delim, tmp_path: Path) -> None:
    """Never the first six of more (two lines run together lose no row unsaid), never a shorter line:
    every path gives the line-by-line reader's error, naming the line and the count."""
    content, line, message = _WRONG_FIELDS[case]
    path = tmp_path / "run.trec"
    path.write_bytes(content.replace(b" ", delim) if delim == b"\t" and case != "an id with a space" else content)
    got = _every_path(path, "run")
    assert isinstance(got, str) and f"run.trec:{line}: {message}" in got, got
    if "cat" in case:
        assert "two lines run together" in got


_NOT_UTF8_COLUMNS = {  # line 2, where the first line's check (which finds the delimiter) does not look
    "Q0": (b"q1 Q0 d1 1 0.5 run\nq1 Q\xff0 d2 2 0.4 run\n", "byte 0xff at column 5"),
    "rank": (b"q1 Q0 d1 1 0.5 run\nq1 Q0 d2 2\xc0\xaf 0.4 run\n", "byte 0xc0 at column 11"),
    "tag": (b"q1 Q0 d1 1 0.5 run\nq1 Q0 d2 2 0.4 r\xed\xa0\x80un\n", "byte 0xed at column 17"),
    "iter (qrels)": (b"q1 0 d1 1\nq1 0\xe2\x82 d2 1\n", "byte 0xe2 at column 5"),
}


@pytest.mark.parametrize("column", sorted(_NOT_UTF8_COLUMNS))
def test_bytes_that_are_not_utf8_in_a_column_not_kept_are_refused_by_every_path(column, tmp_path: Path) -> None:
    """The compiled reader and pyarrow's read the Q0, rank and tag columns (qrels: iter) too: a byte
    that is not UTF-8 there is the same error as in an id, whichever build reads the file."""
    content, where = _NOT_UTF8_COLUMNS[column]
    path = tmp_path / "file.trec"
    path.write_bytes(content)
    got = _every_path(path, "qrels" if "qrels" in column else "run")
    assert got == f"{path}:2: is not UTF-8 text ({where}) (save the file as UTF-8)"


@pytest.mark.parametrize("end", [b"\r", b"\r\n", b"\n"])
@pytest.mark.parametrize("kind", ["run", "qrels"])
def test_a_lone_carriage_return_ends_a_line_in_every_path(end, kind, tmp_path: Path) -> None:
    """A file written with CR-only line ends (or some of them) is read line by line, never as one line
    of its first fields; a bad line in it is named by its number counted so."""
    lines = ([b"q1 Q0 d1 1 0.5 run", b"q1 Q0 d2 2 0.25 run", b"q2 Q0 d3 1 2.5 run"] if kind == "run"
             else [b"q1 0 d1 1", b"q1 0 d2 0", b"q2 0 d3 2"])
    want_path, path = tmp_path / "want.trec", tmp_path / "file.trec"
    want_path.write_bytes(b"\n".join(lines) + b"\n")
    want = _every_path(want_path, kind)
    path.write_bytes(lines[0] + b"\r" + lines[1] + end + b"\r" + lines[2])  # (a blank line between)
    assert _every_path(path, kind) == want
    path.write_bytes(lines[0] + b"\r" + lines[1] + b"\r\r\n" + lines[2] + b" x\r")
    got = _every_path(path, kind)
    assert isinstance(got, str) and got.startswith(f"{path}:4: has {len(lines[2].split()) + 1} columns"), got


def test_beir_qrels_lines_end_at_a_lone_carriage_return_too(tmp_path: Path) -> None:
    path = tmp_path / "test.tsv"
    path.write_bytes(b"query-id\tcorpus-id\tscore\rq1\td1\t1\rq1\td2\t0\rq2\td1\t2\r")
    gold = trec.read_beir_qrels(str(path))
    assert gold.query_ids == ["q1", "q2"] and gold.j_doc.to_pylist() == ["d1", "d2", "d1"]
    path.write_bytes(b"query-id\tcorpus-id\tscore\rq1\td1\t1\rq1\td2\t0\tx\r")
    with pytest.raises(InputError, match=r"test.tsv:3: has 4 tab-separated columns; expected 3"):
        trec.read_beir_qrels(str(path))


@pytest.mark.parametrize("notation", ["0x1", "0X10", "1_0", "+0x1"])
def test_grades_pyarrow_reads_otherwise_are_named_by_every_path(notation, tmp_path: Path) -> None:
    """(Found by the fuzz tier: pyarrow reads "0x1" in an integer column as 1.)"""
    path = tmp_path / "qrels"
    path.write_bytes(b"q1 0 d1 1\nq1 0 d2 " + notation.encode() + b"\n")
    got = _every_path(path, "qrels")
    assert isinstance(got, str) and f"qrels:2: field 'grade' must be an integer grade; got '{notation}'" in got


@pytest.mark.parametrize("text", [b"q1 Q0 d1 1 0.5 run\n#c Q0 d2 2 0.4 run\n",  # a comment line of six fields
                                  b"q1\tQ0\td1\t1\t0.5\trun\nq1 \tQ0\td2\t2\t0.4\trun\n",  # a space by a tab
                                  b"q1 Q0 d1 1 0.5 run\n q1 Q0 d2 2 0.4\n",  # a leading space for a missing field
                                  b"q1 Q0 d1 1 0.5 run\nq1 Q0 d2  0.4 run\n",  # two delimiters, one field less
                                  b"q1 Q0 d1 1 0.5 run\nq1 Q0 d\x0b2 2 0.4 run\n",  # a vertical tab in an id
                                  b"q1 Q0 d1 1 0.5 run\nq1 Q0 d2 2 1_0 run\n",  # a score float() takes, trec_eval not
                                  "q1 Q0 d1 1 0.5 run\nq1 Q0 d\u00a02 2 0.4 run\n".encode()])  # (one id)
def test_pyarrows_single_delimiter_reads_what_the_line_by_line_reader_reads(text, tmp_path: Path) -> None:
    """pyarrow splits at one delimiter and reads a comment as a row: its table is checked (whitespace
    inside a field, an empty field, a first field starting with '#') and declined where the line-by-line
    reader reads otherwise. (Each was a different answer with and without the compiled reader.)"""
    path = tmp_path / "run"
    path.write_bytes(text)
    _every_path(path, "run")


def test_trec_eval_rule_for_text_after_the_sixth_field(tmp_path: Path) -> None:
    """``evaluate --trec`` reads run lines as trec_eval does: text after the sixth field is ignored (its
    own test suite has such lines); a line long enough to hold a second line is refused all the same."""
    path = tmp_path / "run"
    path.write_bytes(_RUN.replace(b"0.25 run", b"0.25 run more junk at end") + b"q2 Q0 d4 2 1.5 run\tx\n")
    with pytest.raises(InputError, match="run:2: has 10 columns"):
        trec.read_trec_run(str(path))
    with trec.trec_eval_lines():
        lenient = trec.read_trec_run(str(path))
    assert lenient.r_doc.to_pylist() == ["d1", "d2", "d3", "d4"] and lenient.r_score.tolist() == [0.5, 0.25, 2.5, 1.5]
    path.write_bytes(_RUN[:-1] + _RUN.replace(b"q", b"p"))
    with trec.trec_eval_lines(), pytest.raises(InputError, match="run:3: has 11 columns.*two lines run together"):
        trec.read_trec_run(str(path))
    with pytest.raises(InputError, match="run:2: has 10 columns"):  # (only within)
        path.write_bytes(_RUN.replace(b"0.25 run", b"0.25 run more junk at end"))
        trec.read_trec_run(str(path))
