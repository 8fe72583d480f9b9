"""The compiled JSONL scanner (``_reader.read_jsonl``, the first step of the JSONL fast path) against
pyarrow's path and the validating line parser.

It takes only the common shape (a query id and a list of ``{item id, score}`` objects; a gold set's
``{item id, grade}``) and must give exactly what the parser gives, or decline. Files are generated in
that shape with everything the shape allows (key orders and aliases, JSON whitespace anywhere, CRLF,
blank lines, numbers in every notation) and then edited into what it must decline (escapes, non-ASCII,
duplicate keys, two aliases, other keys, numbers outside JSON or float range, nesting, trailing
bytes…). Each file is read three ways, scanner, pyarrow path (scanner off) and parser, and the
outcomes must be identical; where a file is of the shape, the scanner must be the one that read it.
"""

from __future__ import annotations

import gzip
import json
import math
import re
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rankgate._native as accel
from rankgate.io import jsonl_fast
from rankgate.io.jsonl import GRADE_KEYS, ITEM_ID_KEYS, QUERY_ID_KEYS, RELEVANT_KEYS, RUN_LIST_KEYS
from rankgate.io.load import load_gold, load_run
from rankgate.errors import InputError

from .conftest import examples
from .test_jsonl_differential import _outcome

pytestmark = pytest.mark.skipif(accel.reader is None, reason="rankgate._native._reader is not built in this installation")

SETTINGS = settings(max_examples=examples(150), deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

WS = st.sampled_from(["", "", " ", " ", "\t", "  ", "\r", " \r\t "])
ID_TEXT = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E, exclude_characters='"\\'), min_size=1, max_size=8)

# Numbers the scanner converts itself (every JSON notation, the edges of float64) ...
EDGE_NUMBERS = ["-0", "-0.0", "0", "0.0", "0e5", "-0e-5", "1E5", "1e+5", "1.5E-5", "4.9e-324", "5e-324", "2e-324",
                "-1e-400", "1e-400", "2.2250738585072011e-308", "2.2250738585072014e-308", "1.7976931348623157e308",
                "9007199254740993", "-9007199254740993", "18446744073709551616", "123456789012345678901234567890",
                "0.30000000000000004441", "0.1000000000000000055511151231257827021181583404541015625",
                "1.00000000000000011102230246251565404236316680908203125", "7.2057594037927933e16",
                "9.999999999999999e22", "1e23", "8.98846567431158e307", "0.000001", "1e-7", "100000000000000000000"]
# ... and texts it must decline (the parser refuses them, or reads them in a way a number cannot say).
BAD_NUMBERS = ["1e400", "-1e400", "1.7976931348623159e308", "NaN", "Infinity", "-Infinity", "01", "-01", "1.", ".5",
               "+1", "1e", "1e+", "-", "0x10", "1_000", '"1"', "true", "null", "[1]", '{"v": 1}', "1 2", "1" * 80]


def _number() -> st.SearchStrategy[str]:
    floats = st.floats(allow_nan=False, allow_infinity=False, width=64)
    return st.one_of(
        floats.map(repr),
        floats.map(lambda v: f"{v:.17g}".replace("inf", "1e400")),
        floats.map(lambda v: f"{v:.25e}"),
        floats.map(lambda v: f"{v:.3E}"),
        st.integers(-(2**80), 2**80).map(str),
        st.integers(-1000, 1000).map(str),
        st.sampled_from(EDGE_NUMBERS),
    )


@st.composite
def _item(draw, value: st.SearchStrategy[str], value_keys: tuple[str, ...], i: int) -> str:
    ws = lambda: draw(WS)  # noqa: E731
    members = [(draw(st.sampled_from(ITEM_ID_KEYS)), json.dumps(f"d{i % 7}{draw(ID_TEXT)}")),
               (draw(st.sampled_from(value_keys)), draw(value))]
    if draw(st.booleans()):
        members.reverse()
    return "{" + ws() + ("," + ws()).join(f'"{k}"{ws()}:{ws()}{v}{ws()}' for k, v in members) + "}"


@st.composite
def _line(draw, i: int, kind: str) -> str:
    ws = lambda: draw(WS)  # noqa: E731
    if kind == "run":
        list_keys, value_keys, value = RUN_LIST_KEYS, ("score",), _number()
    else:
        list_keys, value_keys, value = RELEVANT_KEYS, GRADE_KEYS, st.integers(-3, 4).map(str)
    n = draw(st.integers(0 if kind == "run" else 1, 4))
    items = [draw(_item(value, value_keys, j)) for j in range(n)]
    if kind == "gold":  # one relevant item at least (else the parser asks for no_answer)
        items.append(f'{{"chunk_id": "rel{i}", "grade": {draw(st.integers(1, 3))}}}')
    listed = "[" + ws() + ("," + ws()).join(f"{it}{ws()}" for it in items) + "]"
    members = [(draw(st.sampled_from(QUERY_ID_KEYS)), json.dumps(f"q{i}-{draw(ID_TEXT)}")),
               (draw(st.sampled_from(list_keys)), listed)]
    if draw(st.booleans()):
        members.reverse()
    return ws() + "{" + ws() + ("," + ws()).join(f'"{k}"{ws()}:{ws()}{v}{ws()}' for k, v in members) + "}" + ws()


@st.composite
def common_files(draw, kind: str) -> list[str]:
    """Lines of the common shape: every line one the scanner must read."""
    lines = [draw(_line(i, kind)) for i in range(draw(st.integers(1, 12)))]
    for _ in range(draw(st.integers(0, 3))):  # blank lines, as both readers skip them
        lines.insert(draw(st.integers(0, len(lines))), draw(st.sampled_from(["", " ", "\t", "\r", " \t\r"])))
    if draw(st.booleans()):
        lines = [line + "\r" for line in lines]
    return lines


# Edits into what the scanner must decline: a pattern (the opening quote of a query id value QV or of an
# item id value IV, a line's first "{" or first item, its end) and what replaces its first match
# (``<ws>``: the spaces the pattern matched).
QV, IV, ITEM, END = r'"(?=q\d)', r'"(?=d\d)', r"\[([ \t\r]*)\{", r"\}([ \t\r]*)$"
HOSTILE = [
    (QV, '"\\u0071'), (IV, '"\\u0064'), (QV, '"\\"'), (QV, '"\\/'), (IV, '"\\t'), (QV, '"é'), (IV, '"\u2028'),
    (IV, '"\x7f'), (IV, '"\t'), (QV, '"\\ud83d\\ude00'), (IV, '"\\ud800'), (QV + r'q[^"]*"', "5"),
    (QV + r'q[^"]*"', '""'), (IV + r'd[^"]*"', "7"), (IV + r'd[^"]*"', '""'), (IV + r'd[^"]*"', "null"),
    (IV + r'd[^"]*"', '{"a": 1}'),
    (r"\{", '{"query_id": "dup", '), (r"\{", '{"qid": "other", '), (r"\{", '{"system": "bm25", '),
    (r"\{", '{"k": 3, '), (r"\{", '{"topk": [], '), (r"\{", '{"hits": [{"chunk_id": "z", "score": 1}], '),
    (r"\{", '{"latency_ms": {"r": 1}, '), (r"\{", '{"relevant": ["z"], '), (r"\{", '{"no_answer": false, '),
    (ITEM, '[<ws>{"rank": 1, '), (ITEM, '[<ws>{"doc_id": "y", '), (ITEM, '[<ws>{"score": 1, '), (ITEM, '[<ws>{"grade": 1, '),
    (ITEM, '[<ws>{"note": "n", '), (ITEM, '[<ws>{"text": "t", '), (ITEM, '[<ws>{"score": 2, "score": 1, '),
    (ITEM, '[<ws>{"relevance": 2, '),
    (r"\[", "[1, "), (r"\[", '["x", '), (r"\[", "[[], "), (r"\[", "[null, "), (r"\[", '[{"chunk_id": "x"}, '),
    (r"\[", '[{"score": 1}, '), (r"\[", "[{}, "), (r"\[", '[{"chunk_id": "x", "score": 1, "grade": 1}, '),
    (END, "} x"), (END, "}}"), (END, "},"), (END, "} {}"), (END, "}\x00"), (END, "}\x0c"), (END, "}\x1f"),
    (END, "}\u00a0"), (r"\]", ",]"), (":", "::"), ('"', "'"), (r"\{", "{{"), (",", ",,"), (r"\{", "[{"),
]


# Edits that are still a run line of the scanner's shape: another key of the line (not an id or a
# list), an item's rank.
RUN_SCANNER_READS = {'{"system": "bm25", ', '{"k": 3, ', '{"latency_ms": {"r": 1}, ', '{"relevant": ["z"], ',
                     '{"no_answer": false, ', '[<ws>{"rank": 1, '}


def _edit(line: str, pattern: str, new: str) -> str:
    return re.sub(pattern, lambda m: new.replace("<ws>", m.group(1) if m.groups() else ""), line, count=1)


def _hostile_number(line: str, bad: str, kind: str) -> str:
    key = '"score"' if kind == "run" else '"grade"'
    at = line.find(key)
    if at < 0:
        return line
    start = line.index(":", at) + 1
    while line[start] in " \t\r":
        start += 1
    end = start
    while end < len(line) and line[end] not in ",} \t\r":
        end += 1
    return line[:start] + bad + line[end:]


@st.composite
def hostile_files(draw, kind: str) -> list[str]:
    lines = draw(common_files(kind))
    for _ in range(draw(st.integers(1, 2))):
        at = draw(st.sampled_from([i for i, line in enumerate(lines) if line.strip()]))
        how = draw(st.sampled_from(["edit", "number", "repeat", "line", "empty lists"]))
        if how == "edit":
            pattern, new = draw(st.sampled_from(HOSTILE))
            lines[at] = _edit(lines[at], pattern, new)
        elif how == "number":
            bad = BAD_NUMBERS + (["2.0", "1.5", "1e2", "-0.0", "9223372036854775808", "1234567890123456789"]
                                 if kind == "gold" else [])
            lines[at] = _hostile_number(lines[at], draw(st.sampled_from(bad)), kind)
        elif how == "repeat":  # a query id on two lines
            lines.append(lines[at])
        elif how == "line":
            lines.insert(at, draw(st.sampled_from(["{}", "[]", "null", "\x0c", "\x0b", " x", "{", "}",
                                                   '{"query_id": "q"}', '{"topk": []}', "\ufeff"])))
        else:  # no item anywhere (a run); no relevant item (a gold set)
            lines = [json.dumps({"query_id": f"e{i}", ("topk" if kind == "run" else "relevant_chunks"): []})
                     for i in range(3)]
    return lines


def _write(tmp_path, lines: list[str], name: str, *, newline_at_end: bool = True, gz: bool = False) -> str:
    body = ("\n".join(lines) + ("\n" if newline_at_end else "")).encode("utf-8", errors="surrogatepass")
    path = tmp_path / name
    path.write_bytes(gzip.compress(body, mtime=0) if gz else body)
    return str(path)


def _scanned(path: str, kind: str):
    """What the scanner alone gives (None: it declines)."""
    found = jsonl_fast._opened(path, 0)
    assert found is not None
    try:
        return (jsonl_fast._scan_run if kind == "run" else jsonl_fast._scan_gold)(found, path)
    finally:
        found.close()  # (as the readers do: a test left open one file per example, hundreds over the tier)


def _three(path: str, kind: str, monkeypatch) -> tuple:
    """(scanner first, pyarrow path only, parser only): the outcome of loading the file each way."""
    load = load_run if kind == "run" else load_gold
    with_scanner = _outcome(load, path, fast=True)
    with monkeypatch.context() as m:
        m.setattr(accel, "reader", None)
        arrow = _outcome(load, path, fast=True)
    return with_scanner, arrow, _outcome(load, path, fast=False)


@SETTINGS
@given(lines=common_files("run"), end=st.booleans(), gz=st.integers(0, 4))
def test_runs_of_the_common_shape_are_read_by_the_scanner_exactly(lines, end, gz, tmp_path, monkeypatch):
    path = _write(tmp_path, lines, "run.jsonl", newline_at_end=end, gz=gz == 0)
    scanned = _scanned(path, "run")
    outcomes = _three(path, "run", monkeypatch)
    if outcomes[2] == ("ok", outcomes[2][1]) and outcomes[2][1]["r_score"] is not None:
        assert scanned is not None, "a file of the common shape must be read by the scanner"
    assert outcomes[0] == outcomes[1] == outcomes[2]


@SETTINGS
@given(lines=common_files("gold"), end=st.booleans(), gz=st.integers(0, 4))
def test_gold_sets_of_the_common_shape_are_read_by_the_scanner_exactly(lines, end, gz, tmp_path, monkeypatch):
    path = _write(tmp_path, lines, "gold.jsonl", newline_at_end=end, gz=gz == 0)
    scanned = _scanned(path, "gold")
    outcomes = _three(path, "gold", monkeypatch)
    # (a query may judge one id twice: then the parser names it and the scanner declines)
    if outcomes[2][0] == "ok":
        assert scanned is not None, "a gold set of the common shape must be read by the scanner"
    else:
        assert scanned is None
    assert outcomes[0] == outcomes[1] == outcomes[2]


@settings(SETTINGS, max_examples=examples(250))
@given(lines=hostile_files("run"))
def test_hostile_runs_give_the_parsers_outcome(lines, tmp_path, monkeypatch):
    path = _write(tmp_path, lines, "run.jsonl")
    outcomes = _three(path, "run", monkeypatch)
    assert outcomes[0] == outcomes[1] == outcomes[2]


@settings(SETTINGS, max_examples=examples(200))
@given(lines=hostile_files("gold"))
def test_hostile_gold_sets_give_the_parsers_outcome(lines, tmp_path, monkeypatch):
    path = _write(tmp_path, lines, "gold.jsonl")
    outcomes = _three(path, "gold", monkeypatch)
    assert outcomes[0] == outcomes[1] == outcomes[2]


def _bits(values) -> list[bytes]:
    return [struct.pack("<d", v) for v in values]


@SETTINGS
@given(texts=st.lists(_number(), min_size=1, max_size=40))
def test_scores_are_converted_as_python_converts_them(texts, tmp_path):
    """Bit for bit what ``float(json.loads(text))`` gives, for every notation; a text whose value
    is not finite is declined (the parser refuses it)."""
    items = ", ".join(f'{{"chunk_id": "d{i}", "score": {t}}}' for i, t in enumerate(texts))
    path = _write(tmp_path, [f'{{"query_id": "q", "topk": [{items}]}}'], "run.jsonl")
    expected = []
    for t in texts:
        try:
            expected.append(float(json.loads(t)))
        except OverflowError:
            expected.append(math.inf)
    run = _scanned(path, "run")
    if not all(math.isfinite(v) for v in expected):
        assert run is None
        return
    assert run is not None and _bits(run.r_score.tolist()) == _bits(expected)


@pytest.mark.parametrize("text", BAD_NUMBERS + ["1.0", "2.5e0"])
def test_grades_other_than_short_integer_literals_are_declined(text, tmp_path):
    path = _write(tmp_path, [f'{{"query_id": "q", "relevant_chunks": [{{"chunk_id": "a", "grade": {text}}}]}}'],
                  "gold.jsonl")
    assert _scanned(path, "gold") is None


@pytest.mark.parametrize("pieces", [2, 3, 7])
def test_a_file_in_pieces_reads_as_one(pieces, tmp_path, monkeypatch):
    """Large files are scanned in pieces on two threads: line numbers, query order and ids run on
    across the cuts, and a query id repeated in another piece is declined (the parser names it)."""
    lines = []
    for i in range(40):
        lines.append(json.dumps({"query_id": f"q{i}", "topk": [{"chunk_id": f"d{i}-{j}", "score": j / 3}
                                                                for j in range(i % 4)]}))
        if i % 5 == 0:
            lines.append(" \r")
    path = _write(tmp_path, lines, "run.jsonl", newline_at_end=False)
    size = len("\n".join(lines))
    monkeypatch.setattr(jsonl_fast, "_SPLIT", 0)
    monkeypatch.setattr(jsonl_fast, "_PIECE", size // pieces + 1)
    run = _scanned(path, "run")
    assert run is not None and run.r_doc.num_chunks == pieces
    with monkeypatch.context() as m:
        m.setattr(accel, "reader", None)
        arrow = _outcome(load_run, path, fast=True)
    assert _outcome(load_run, path, fast=True) == arrow == _outcome(load_run, path, fast=False)
    lines.append(lines[0])  # q0 again, in the last piece
    path = _write(tmp_path, lines, "run.jsonl")
    assert _scanned(path, "run") is None
    assert _outcome(load_run, path, fast=True) == _outcome(load_run, path, fast=False)
    assert _outcome(load_run, path, fast=True)[0] == "error"


def test_the_benchmark_shape_takes_the_scanner_and_says_nothing(tmp_path, capsys):
    """The shape ``rankgate retrieve`` and the benchmarks write: read by the scanner, no note."""
    lines = [json.dumps({"query_id": f"q{i:06d}", "topk": [{"chunk_id": f"d{(i * 31 + j) % 999:06d}",
                                                            "score": round(20 - j * 0.0371, 4)} for j in range(20)]})
             for i in range(200)]
    path = _write(tmp_path, lines, "run.jsonl")
    why: list[str] = []
    run = jsonl_fast.read_run_fast(path, min_bytes=0, why=why)
    assert run is not None and why == [] and run.r_order is None and run.items == {} and run.fields == {}
    assert _scanned(path, "run") is not None
    assert len(run) == 4000 and run.query_lines.tolist() == list(range(1, 201))


@pytest.mark.parametrize("extra", ['"text": "a chunk"', '"doc_version": "2026-01-01"'])
def test_a_file_the_scanner_declines_and_pyarrow_reads_says_nothing(extra, tmp_path, capsys):
    lines = [json.dumps({"query_id": f"q{i}", "topk": [{"chunk_id": "a", "score": 1.5}]}) for i in range(30)]
    lines[-1] = lines[-1][:-3] + ", " + extra + "}]}"  # (an item's text or version: pyarrow's parse reads it)
    path = _write(tmp_path, lines, "run.jsonl")
    assert _scanned(path, "run") is None
    why: list[str] = []
    run = jsonl_fast.read_run_fast(path, min_bytes=0, why=why)
    assert run is not None and why == []
    assert _outcome(load_run, path, fast=True) == _outcome(load_run, path, fast=False)
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("line, scanned", [
    ('{"query_id": "q1", "query_id": "q2", "topk": [{"chunk_id": "a", "score": 1}]}', False),
    ('{"query_id": "q1", "id": "q2", "topk": [{"chunk_id": "a", "score": 1}]}', False),
    ('{"id": "q1", "query_id": "q2", "topk": [{"chunk_id": "a", "score": 1}]}', False),
    ('{"qid": "q1", "topk": [{"chunk_id": "a", "doc_id": "b", "score": 1}]}', False),
    ('{"qid": "q1", "topk": [{"chunk_id": "a", "chunk_id": "b", "score": 1}]}', False),
    ('{"qid": "q1", "topk": [{"chunk_id": "a", "score": 1}], "results": []}', False),
    ('{"qid": "q1", "results": [], "topk": [{"chunk_id": "a", "score": 1}]}', False),
    ('{"qid": "q1", "topk": [{"chunk_id": "a", "score": 1}], "topk": []}', False),
    ('{"qid": "q1", "topk": [{"chunk_id": "a", "score": -0}]}', True),
    ('{"qid": "q1", "topk": [{"chunk_id": "a", "score": -0.0}]}', True),
    ('{"qid": "q1", "topk": [{"chunk_id": "a", "score": -0e3}]}', True),
    ('{"qid": "q1", "topk": [{"chunk_id": "a", "score": -1e-400}]}', True),
    ('{"qid": "q1", "topk": []}', True),
    (' \t{"retrieved":[{"score":1,"_id":"a"}],"query-id":"q1"}\t\r', True),
])
def test_the_key_the_parser_reads_is_the_one_read(line, scanned, tmp_path, monkeypatch):
    """Two query-id or item-id aliases, two lists, a key twice: declined (which one the parser reads
    is not the scanner's to guess). ``-0`` is the integer 0, so +0.0; ``-0.0`` is -0.0, as the parser has it."""
    lines = [json.dumps({"query_id": f"x{i}", "topk": [{"chunk_id": "a", "score": 1.5}]}) for i in range(3)] + [line]
    path = _write(tmp_path, lines, "run.jsonl")
    run = _scanned(path, "run")
    assert (run is not None) == scanned
    outcomes = _three(path, "run", monkeypatch)
    assert outcomes[0] == outcomes[1] == outcomes[2]
    if run is not None and line.count("score") == 1:
        assert bool(np.signbit(run.r_score[-1])) == ("-0." in line or "-0e" in line or "-1e" in line)


def _base(kind: str) -> list[str]:
    if kind == "run":
        return [json.dumps({"query_id": f"q{i}", "topk": [{"chunk_id": f"d{i}", "score": 1.5}, {"chunk_id": "d9", "score": 0.5}]})
                for i in range(4)]
    return [json.dumps({"query_id": f"q{i}", "relevant_chunks": [{"chunk_id": f"d{i}", "grade": 1}, {"chunk_id": "d9", "grade": 0}]})
            for i in range(4)]


@pytest.mark.parametrize("kind", ["run", "gold"])
@pytest.mark.parametrize("pattern, new", HOSTILE + [("number", bad) for bad in BAD_NUMBERS])
def test_each_hostile_edit_is_declined_by_the_scanner(kind, pattern, new, tmp_path, monkeypatch):
    """Every edit the generated files draw from, on its own: the scanner declines and the outcome
    (a result or the error naming the line) is the parser's. (A run's line may hold other keys and
    its items a rank: those edits the scanner reads, with the parser's outcome.)"""
    lines = _base(kind)
    if pattern == "number":
        lines[2] = _hostile_number(lines[2], new, kind)
    else:
        lines[2] = _edit(lines[2], pattern, new)
    assert lines[2] != _base(kind)[2]
    path = _write(tmp_path, lines, f"{kind}.jsonl")
    assert (_scanned(path, kind) is not None) == (kind == "run" and new in RUN_SCANNER_READS)
    outcomes = _three(path, kind, monkeypatch)
    assert outcomes[0] == outcomes[1] == outcomes[2]


@pytest.mark.parametrize("kind", ["run", "gold"])
@pytest.mark.parametrize("form", ["gzip", "bom", "bom gzip", "crlf, no final newline"])
def test_compressed_and_marked_files_take_the_scanner(kind, form, tmp_path, monkeypatch):
    lines = _base(kind)
    if "bom" in form:
        lines[0] = "\ufeff" + lines[0]
    if "crlf" in form:
        lines = [line + "\r" for line in lines]
    path = _write(tmp_path, lines, f"{kind}.jsonl", gz="gzip" in form, newline_at_end="crlf" not in form)
    assert _scanned(path, kind) is not None
    outcomes = _three(path, kind, monkeypatch)
    assert outcomes[0][0] == "ok" and outcomes[0] == outcomes[1] == outcomes[2]


@pytest.mark.parametrize("lines", [["", " ", "\r", "\t "], ["", ""] * 20 + _base("run") + [""] * 40])
def test_blank_lines_alone_or_a_piece_of_them(lines, tmp_path, monkeypatch):
    """No query at all is the parser's to refuse; a piece of blank lines between others reads as none."""
    path = _write(tmp_path, lines, "run.jsonl")
    monkeypatch.setattr(jsonl_fast, "_SPLIT", 0)
    monkeypatch.setattr(jsonl_fast, "_PIECE", 20)
    assert (_scanned(path, "run") is None) == (len(lines) == 4)
    outcomes = _three(path, "run", monkeypatch)
    assert outcomes[0] == outcomes[1] == outcomes[2]


# -- item texts and versions left out (runs whose item columns no metric reads) -------------------
UNKEPT_VALUES = [
    '"a chunk"', '""', '"2026-01-01"', '"tab\\there, \\"quoted\\", back\\\\slash, \\/ \\b\\f\\n\\r"',
    '"\\u00e9\\u4e2d\\uFFFF\\u0000"', '"é ✓ 中文 😀"', '"\\ud83d\\ude00"', '"\\uD83D\\uDE00"', '"\\ud800"',
    '"\\uDFFF x"', '"\\ud83d\\u0041"', '"\\ud83d x"', '"\\ud83d\\ud83d"', '"\\ude00\\ud83d"', '"\\ud83d\\ude0"', '"\\u12"',
    '"\\u12g4"', '"\\x41"', '"\\a"', '"line\nbreak"', '"nul\x00byte"', '"del\x7fbyte"', '"open', '"two" "strings"',
    '5', '5.5', 'true', '[]', '{}', '["t"]', 'null', 'nul', '"a" ,', '"' + "x" * 5000 + '"', '"' + "é" * 3000 + '"',
]
BAD_UTF8 = [b"\xc0\xaf", b"\xc1\xbf", b"\xc2", b"\xe0\x80\x80", b"\xe0\x9f\xbf", b"\xed\xa0\x80", b"\xed\xbf\xbf",
            b"\xf0\x80\x80\x80", b"\xf0\x8f\xbf\xbf", b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80", b"\xff", b"\x80",
            b"\xe2\x82", b"\xe2\x28\xa1", b"\xf0\x9f\x98"]
GOOD_UTF8 = [b"\xc2\x80", b"\xdf\xbf", b"\xe0\xa0\x80", b"\xed\x9f\xbf", b"\xee\x80\x80", b"\xef\xbf\xbf",
             b"\xf0\x90\x80\x80", b"\xf4\x8f\xbf\xbf", b"\xe2\x82\xac"]


def _unkept_outcome(line: bytes, tmp_path) -> tuple[object, object]:
    """(what the scanner gives with item columns left out, what the parser gives) for one file."""
    data = line + b"\n" + json.dumps({"query_id": "q2", "topk": [{"chunk_id": "z", "score": 2}]}).encode() + b"\n"
    got = jsonl_fast._scan_span(__import__("pyarrow").py_buffer(data), 0, len(data), RUN_LIST_KEYS, ("score",), 0,
                                ranks=True, extras=True, items=False)
    path = tmp_path / "run.jsonl"
    path.write_bytes(data)
    try:
        parsed: object = load_run(str(path))  # (a small file: the validating parser)
    except InputError as exc:
        parsed = exc
    return got, parsed


def _check_unkept(value: bytes, tmp_path) -> bool:
    line = b'{"query_id": "q1", "topk": [{"chunk_id": "a", "score": 1.5, "text": ' + value + \
        b', "rank": 1}, {"doc_version": ' + value + b', "chunk_id": "b", "score": 0.5}]}'
    got, parsed = _unkept_outcome(line, tmp_path)
    try:  # a string of characters UTF-8 can hold (no half of a surrogate pair left alone)
        decoded = json.loads(value.decode("utf-8"))
        plain = isinstance(decoded, str) and bool(decoded.encode("utf-8") or True)
    except (ValueError, UnicodeError):
        plain = False
    if value == b"null":
        plain = True
    if got is None:
        assert not plain, value  # a string the parser reads as it is (or null) is taken
        return False
    assert plain, value  # anything else is declined: the parser decides what it is
    assert not isinstance(parsed, Exception)
    scanned, _ = got
    assert scanned.query_ids == parsed.query_ids and scanned.ids.to_pylist() == parsed.r_doc.to_pylist()
    assert scanned.values.tolist() == parsed.r_score.tolist() and scanned.counts.tolist() == [2, 1]
    assert np.array_equal(scanned.ranks, parsed.r_order, equal_nan=True)
    return True


@pytest.mark.parametrize("value", [v.encode("utf-8", "surrogatepass") for v in UNKEPT_VALUES]
                         + [b'"a' + b + b'z"' for b in BAD_UTF8 + GOOD_UTF8])
def test_unkept_item_strings_are_checked_as_the_parser_reads_them(value, tmp_path):
    """With item columns left out, an item's text or version may be any string the parser reads as it
    is (escapes, UTF-8 of every length): passed over, not kept; anything else (a surrogate escape, bad
    UTF-8 or escape, a control byte, a number or list, a string cut short) is declined for the parser."""
    taken = _check_unkept(value, tmp_path)
    if value in (b'"a' + b + b'z"' for b in GOOD_UTF8):
        assert taken


@SETTINGS
@given(text=st.text(max_size=60), ascii_only=st.booleans())
def test_unkept_texts_of_any_characters(text, ascii_only, tmp_path):
    try:
        value = json.dumps(text, ensure_ascii=ascii_only).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate written as itself: no UTF-8 file holds it
        return
    taken = _check_unkept(value, tmp_path)
    # (json.dumps escapes a character past U+FFFF as a surrogate pair when writing ASCII only: taken)
    assert taken == (not any(0xD800 <= ord(c) <= 0xDFFF for c in text))


def test_item_columns_are_kept_unless_left_out(tmp_path):
    """Without ``items=False`` a string text still declines (the parser keeps the column)."""
    data = b'{"query_id": "q1", "topk": [{"chunk_id": "a", "score": 1, "text": "t"}]}\n'
    buf = __import__("pyarrow").py_buffer(data)
    assert jsonl_fast._scan_span(buf, 0, len(data), RUN_LIST_KEYS, ("score",), 0, ranks=True, extras=True) is None
    assert jsonl_fast._scan_span(buf, 0, len(data), RUN_LIST_KEYS, ("score",), 0, ranks=True, extras=True,
                                 items=False) is not None


def _shapes_both_ways(path: str, kind: str, monkeypatch) -> tuple[tuple, object, int]:
    """(:func:`_three` with item shapes on, the scanner's outcome with every item read key by key, the
    items the scanner's own read (the first of the three) read by their shape)."""
    reader = accel.reader
    before = reader.item_shapes(True)
    try:
        reader.shaped_items()
        outcomes = _three(path, kind, monkeypatch)
        shaped = reader.shaped_items()  # (the first plain item shows the shape; the others are read by it)
        reader.item_shapes(False)
        return outcomes, _outcome(load_run if kind == "run" else load_gold, path, fast=True), shaped
    finally:
        reader.item_shapes(before)


# One way of writing an item, then the same items written that way with one written otherwise: the
# scanner reads an item written as its scan's first one by matching the bytes around its values
# (``item_shapes``), and any other item key by key; both must give the parser's outcome.
_SHAPES = ['{{"chunk_id": "{id}", "score": {v}}}', '{{"rank": {r}, "chunk_id": "{id}", "score": {v}}}',
           '{{ "doc_id":"{id}" ,"score" :{v} }}', '{{"score": {v}, "chunk_id": "{id}"}}',
           '{{"chunk_id": "{id}", "rank": {r}, "score": {v}}}', '{{"id":"{id}","score":{v}}}',
           '{{"chunk_id":  "{id}",   "score":    {v}   ,"rank" : {r}}}',
           '{{"rank": {r}, "doc_version": null, "text": null, "chunk_id": "{id}", "score": {v}}}',
           '{{"chunk_id": "{id}", "content": null, "score": {v}, "source": null}}']
_ODD_ITEMS = ['{{"chunk_id": "{id}", "score": {v}, "rank": {r}}}', '{{"chunk_id": "{id}",  "score": {v}}}',
              '{{"doc_id": "{id}", "score": {v}}}', '{{"chunk_id": "\\u0064{id}", "score": {v}}}',
              '{{"chunk_id": "{id}", "score": {v}, "note": 1}}', '{{"chunk_id": "{id}", "score": {v}, "score": 1}}',
              '{{"chunk_id": "{id}", "chunk_id": "x", "score": {v}}}', '{{"chunk_id": "", "score": {v}}}',
              '{{"chunk_id": "{id}", "score": "1"}}', '{{"chunk_id": "{id}", "score": 1e400}}',
              '{{"chunk_id": "{id}é", "score": {v}}}', '{{"chunk_id": "{id}", "score": {v}}} ',
              '{{"chunk_id": "{id}", "score": -0}}', '{{"chunk_id": "{id}", "score": 01}}',
              '{{"chunk_id": "{id}", "text": null, "score": {v}}}', '{{"chunk_id": "{id}", "rank": 1.5e0, "score": {v}}}',
              '{{"score": {v}, "chunk_id": "{id}"}}', '{{"chunk_id": "{id}"}}', '{{"chunk_id": "{id}", "score": {v}',
              '{{"chunk_id": "{id}", "text": null, "content": null, "score": {v}}}',
              '{{"chunk_id": "{id}", "doc_version": nul, "score": {v}}}', '{{"chunk_id": "{id}", "version": "v2", "score": {v}}}']


@settings(SETTINGS, max_examples=examples(300))
@given(shape=st.sampled_from(_SHAPES), odd=st.none() | st.sampled_from(_ODD_ITEMS),
       where=st.tuples(st.integers(0, 5), st.integers(0, 7)), sizes=st.lists(st.integers(0, 7), min_size=1, max_size=6),
       values=st.lists(_number(), min_size=1, max_size=8), ids=st.lists(ID_TEXT, min_size=1, max_size=8),
       end=st.booleans(), lead=st.booleans())
def test_items_written_alike_are_read_by_their_values_as_key_by_key(shape, odd, where, sizes, values, ids, end, lead,
                                                                      tmp_path, monkeypatch):
    """``lead``: the first item is written with more spaces than a shape keeps: the next one gives it."""
    lines = []
    first = True
    for q, n in enumerate(sizes):
        items = [shape.format(id=json.dumps(f"d{ids[i % len(ids)]}")[1:-1], v=values[i % len(values)], r=i + 1)
                 for i in range(n)]
        if odd is not None and q == where[0] % len(sizes) and n:
            at = where[1] % n
            items[at] = odd.format(id=f"d{ids[at % len(ids)]}".replace('"', "").replace("\\", ""),
                                   v=values[at % len(values)], r=at + 1)
        if lead and first and n:
            items.insert(0, '{"chunk_id": "lead",' + " " * 80 + '"score": 1}')
            first = False
        lines.append(f'{{"query_id": "q{q}", "topk": [{", ".join(items)}]}}')
    path = _write(tmp_path, lines, "run.jsonl", newline_at_end=end)
    scanned = _scanned(path, "run") is not None
    outcomes, key_by_key, shaped = _shapes_both_ways(path, "run", monkeypatch)
    assert outcomes[0] == key_by_key
    assert outcomes[0] == outcomes[1] == outcomes[2]
    if odd is None and sum(sizes) and outcomes[2][0] == "ok":  # (a number past float range: the parser's error)
        assert scanned and shaped == sum(sizes) - 1  # (with a lead item: one more item, and one more read key by key)


@pytest.mark.parametrize("odd", [None, '{"chunk_id": "x9", "grade": 1.0}', '{"chunk_id": "x9", "grade": "2"}',
                                 '{"chunk_id": "x9", "grade": 2, "grade": 1}', '{"chunk_id": "x9",  "grade": 2}',
                                 '{"doc_id": "x9", "grade": 3}', '{"grade": 3, "chunk_id": "x9"}',
                                 '{"chunk_id": "x9", "grade": -0}', '{"chunk_id": "x9", "grade": 12345678901234567890}'])
def test_gold_items_written_alike_are_read_by_their_values_as_key_by_key(odd, tmp_path, monkeypatch):
    items = [", ".join(f'{{"chunk_id": "d{q}-{i}", "grade": {1 + (q + i) % 3}}}' for i in range(5)) for q in range(6)]
    lines = [f'{{"query_id": "q{q}", "relevant_chunks": [{listed}]}}' for q, listed in enumerate(items)]
    if odd is not None:
        lines[3] = lines[3].replace('{"chunk_id": "d3-2", "grade": 3}', odd)
    path = _write(tmp_path, lines, "gold.jsonl")
    outcomes, key_by_key, shaped = _shapes_both_ways(path, "gold", monkeypatch)
    assert outcomes[0] == key_by_key
    assert outcomes[0] == outcomes[1] == outcomes[2]
    if odd is None:
        assert outcomes[0][0] == "ok" and shaped == 6 * 5 - 1


# Items with a text string (passed over, not kept) beside items without one, as `rankgate retrieve`
# writes them: a scan learns a shape from each, and reads the rest by them.
_TEXT_SHAPES = ['{{"rank": {r}, "doc_version": null, "text": {t}, "chunk_id": "{id}", "score": {v}}}',
                '{{"chunk_id": "{id}", "content": {t}, "score": {v}}}',
                '{{"chunk_id": "{id}", "score": {v}, "text": {t}, "source": null}}']
_TEXTS_PASSED = ['"a chunk of text"', '""', '"tab\\there \\"quoted\\""', '"caf\\u00e9"', '"\\ud83d\\ude00"', "null"]
_TEXTS = [*_TEXTS_PASSED, '"\\ud800"', '"bad \\x escape"', "12", '["a"]', '"naïve"', '"\\\\ud800"']


@pytest.mark.parametrize("items", [False, "lazy"])
@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shape=st.sampled_from(_TEXT_SHAPES), texts=st.lists(st.sampled_from(_TEXTS), min_size=1, max_size=6),
       sizes=st.lists(st.integers(0, 12), min_size=1, max_size=5), top=st.integers(0, 12),
       values=st.lists(_number(), min_size=1, max_size=5))
def test_items_with_texts_are_read_by_shape_as_key_by_key(items, shape, texts, sizes, top, values, tmp_path):
    """``top``: the items at a query's first ``top`` places carry a text (from ``texts``, some of them
    not what the scanner passes over), the others a null; both ways give the same scan, field for field."""
    lines = []
    for q, n in enumerate(sizes):
        listed = [shape.format(r=i + 1, t=texts[i % len(texts)] if i < top else "null", id=f"d{q}-{i}",
                               v=values[i % len(values)]) for i in range(n)]
        lines.append(f'{{"query_id": "q{q}", "topk": [{", ".join(listed)}]}}')
    path = _write(tmp_path, lines, "run.jsonl")
    found = jsonl_fast._opened(path, 0)
    assert found is not None
    reader = accel.reader

    def scan() -> object:
        got = jsonl_fast._scan(found, RUN_LIST_KEYS, ("score",), 0, ranks=True, extras=True, items=items)
        if got is None:
            return None
        return (got.query_ids, got.counts.tolist(), got.lines.tolist(), _bits(got.values), got.ids.to_pylist(),
                None if got.ranks is None else _bits(got.ranks), got.fields, got.texts,
                None if got.spans is None else got.spans.tolist())

    before = reader.item_shapes(True)
    try:
        reader.shaped_items()
        by_shape = scan()
        shaped = reader.shaped_items()
        reader.item_shapes(False)
        key_by_key = scan()
    finally:
        reader.item_shapes(before)
        found.close()
    assert by_shape == key_by_key
    if all(t in _TEXTS_PASSED for t in texts) and sum(sizes) > 2 and all(math.isfinite(float(v)) for v in values):
        assert by_shape is not None and shaped >= sum(sizes) - 2  # (two shapes learned: with a text, without)


_PRODUCED = ["producers/llamaindex_bm25_run.jsonl", "producers/llamaindex_mock_ties_run.jsonl", "gate/base.jsonl",
             "gate/cand.jsonl"]


@pytest.mark.parametrize("name", _PRODUCED)
def test_runs_real_producers_wrote_read_by_shape_as_key_by_key(name, monkeypatch):
    """Runs LlamaIndex wrote (tests/data/producers, with the script that made them) and the gate's
    example runs, read by the scanner: by item shape and key by key, the same run, most items by shape."""
    import pathlib

    path = str(pathlib.Path(__file__).parent / "data" / name)
    monkeypatch.setattr(jsonl_fast, "MIN_BYTES", 0)
    outcomes, key_by_key, shaped = _shapes_both_ways(path, "run", monkeypatch)
    assert outcomes[0] == key_by_key == outcomes[1] == outcomes[2]
    assert outcomes[0][0] == "ok" and shaped > 0
