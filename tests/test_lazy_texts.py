"""A report reads a large JSONL run's item texts from the file's lines only when a page shows one
(``jsonl_fast.read_run_lazy_texts``, ``LineTexts``): the values must be the line-by-line parser's, row
for row, the report's HTML byte for byte the one of reading every text, and anything the lazy read
cannot prove (two text keys in one item, a version or source with a value, a text that is not a
string) must make it decline, so that the usual readers read the file."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rankgate._native as accel
from rankgate.scoring import engine
from rankgate.cli.main import main
from rankgate.io import jsonl_fast, load
from rankgate.io.jsonl_fast import LineTexts, read_run_lazy_texts
from rankgate.errors import InputError
from rankgate.flows import report as flow

from .conftest import examples

pytestmark = pytest.mark.skipif(accel.reader is None, reason="rankgate._native._reader is not built in this installation")

TEXTS = st.one_of(st.none(), st.text(max_size=30), st.sampled_from(["", "a \"quote\"", "tab\there", "é 中文 😀",
                                                                        "line\nbreak", "back\\slash"]))


def _write_run(path, rows: list[list[tuple[str, float, dict]]], *, ascii_only: bool = True, crlf: bool = False,
               blank_every: int = 0) -> None:
    lines = []
    for i, items in enumerate(rows):
        obj = {"query_id": f"q{i}", "topk": [{"chunk_id": d, "score": s, **extra} for d, s, extra in items]}
        lines.append(json.dumps(obj, ensure_ascii=ascii_only) + ("\r" if crlf else ""))
        if blank_every and i % blank_every == 0:
            lines.append("")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _spy(monkeypatch, owner: object, name: str) -> list:
    """What ``owner.name`` gives from now on, call by call (the calls themselves go through)."""
    seen: list = []
    real = getattr(owner, name)
    monkeypatch.setattr(owner, name, lambda *a, **k: seen.append(real(*a, **k)) or seen[-1])
    return seen


@st.composite
def text_runs(draw):
    nq = draw(st.integers(1, 12))
    rows = []
    for _ in range(nq):
        items = []
        for j in range(draw(st.integers(0, 6))):
            extra: dict = {}
            kind = draw(st.sampled_from(["text", "content", "none", "null_version"]))
            if kind in ("text", "content"):
                extra[kind] = draw(TEXTS)
            elif kind == "null_version":
                extra["doc_version"] = None
            items.append((f"d{j}", float(draw(st.integers(0, 9))), extra))
        rows.append(items)
    return rows, draw(st.booleans()), draw(st.booleans()), draw(st.integers(0, 3))


@settings(max_examples=examples(150), deadline=None)
@given(text_runs())
def test_lazy_texts_are_the_parsers_row_for_row(tmp_path_factory, case) -> None:
    rows, ascii_only, crlf, blank_every = case
    path = tmp_path_factory.mktemp("lazy") / "run.jsonl"
    _write_run(path, rows, ascii_only=ascii_only, crlf=crlf, blank_every=blank_every)
    parsed = load.load_run(str(path))  # (a small file: the line-by-line parser)
    lazy = read_run_lazy_texts(str(path), min_bytes=0)
    if not sum(len(items) for items in rows):
        assert lazy is None  # (no item at all: the parser's run has no scores)
        return
    assert lazy is not None
    assert lazy.query_ids == parsed.query_ids and lazy.r_doc.to_pylist() == parsed.r_doc.to_pylist()
    assert lazy.r_score.tolist() == parsed.r_score.tolist() and lazy.query_lines.tolist() == parsed.query_lines.tolist()
    assert list(lazy.items) == list(parsed.items.keys() & {"text"})  # a column only where the parser has one
    if "text" in parsed.items:
        texts = lazy.items["text"]
        assert isinstance(texts, LineTexts) and len(texts) == len(parsed)
        want = parsed.items["text"]
        order = np.random.default_rng(len(want)).permutation(len(want)).tolist()  # (any order of asking)
        assert [texts[i] for i in order] == [want[i] for i in order]
        assert texts == want and list(texts) == want and texts[-1] == want[-1] and texts[1:3] == want[1:3]
        with pytest.raises(IndexError):
            texts[len(want)]


@pytest.mark.parametrize("item", [
    {"text": "a", "content": "b"},  # two text keys: which one counts is the parser's to say
    {"text": "a", "text ": "b"},  # (an unknown key)
    {"doc_version": "2026-01-01"},  # a version with a value: a column the lazy read does not make
    {"version": "v1"},
    {"source": "wiki"},
    {"text": 12},  # not a string
    {"text": ["a"]},
    {"text": "\ud800"},  # a lone surrogate half
])
def test_what_the_lazy_read_declines(item, tmp_path) -> None:
    path = tmp_path / "run.jsonl"
    _write_run(path, [[("d1", 1.0, {}), ("d2", 0.5, item)]])
    assert read_run_lazy_texts(str(path), min_bytes=0) is None


def test_a_text_key_given_twice_declines(tmp_path) -> None:
    path = tmp_path / "run.jsonl"
    path.write_text('{"query_id": "q1", "topk": [{"chunk_id": "d1", "score": 1, "text": "a", "text": null}]}\n')
    assert read_run_lazy_texts(str(path), min_bytes=0) is None
    assert load.load_run(str(path)).items == {}  # (the parser keeps the last: null, no column)


def _texts_case(tmp_path, *, notes: bool = False):
    """A gold set and a JSONL run with texts on the top items, as `rankgate retrieve` writes it."""
    rng = np.random.default_rng(5)
    gold, rows = [], []
    for q in range(60):
        judged = rng.choice(40, size=4, replace=False).tolist()
        rel = [{"chunk_id": f"d{d}", "grade": int(rng.integers(0 if i else 1, 3))} for i, d in enumerate(judged)]
        if notes:
            rel = [{"chunk_id": f"t:d{d}", "grade": 1, "note": f"the reference text of d{d}"} for d in judged]
        gold.append({"query_id": f"q{q}", "relevant_chunks": rel})
        docs = rng.choice(40, size=12, replace=False).tolist()
        rows.append([(f"t:d{d}" if notes else f"d{d}", float(20 - r),
                      {"doc_version": None, **({"text": f"the reference text of d{d}!"} if r < 5 else {})})
                     for r, d in enumerate(docs)])
    gold_path, run_path = tmp_path / "gold.jsonl", tmp_path / "run.jsonl"
    gold_path.write_text("".join(json.dumps(g) + "\n" for g in gold))
    _write_run(run_path, rows)
    return gold_path, run_path


def _report(tmp_path, gold, run, monkeypatch, *, lazy: bool, name: str, extra: tuple[str, ...] = ()) -> bytes:
    out = tmp_path / f"{name}.html"
    calls: list[object] = []
    real = flow._run_with_lazy_texts

    def spy(run_arg, req):
        got = real(run_arg, req) if lazy else None
        calls.append(got)
        return got

    monkeypatch.setattr(jsonl_fast, "MIN_BYTES", 0)
    monkeypatch.setattr(flow, "_run_with_lazy_texts", spy)
    assert main(["report", "--gold", str(gold), "--run", str(run), "-o", str(out), "--generated-at",
                 "2026-01-01T00:00:00Z", *extra]) in (0, 1)
    monkeypatch.undo()
    return out.read_bytes(), calls


@pytest.mark.slow  # (the full tier: heavy, and what it guards is covered lighter by default)
def test_the_report_reads_shown_texts_from_their_lines_with_the_same_page(tmp_path, monkeypatch) -> None:
    gold, run = _texts_case(tmp_path)
    lazy, calls = _report(tmp_path, gold, run, monkeypatch, lazy=True, name="lazy")
    assert calls and isinstance(calls[0].items["text"], LineTexts)
    whole, _ = _report(tmp_path, gold, run, monkeypatch, lazy=False, name="whole")
    assert lazy == whole
    assert b"the reference text of d" in lazy  # (snippets are shown)


def test_reference_texts_in_the_gold_set_read_every_text(tmp_path, monkeypatch) -> None:
    """The near-miss check compares every retrieved text with the reference texts: the run is read
    whole, and the page is the one of reading it whole."""
    gold, run = _texts_case(tmp_path, notes=True)
    lazy, calls = _report(tmp_path, gold, run, monkeypatch, lazy=True, name="lazy")
    whole, _ = _report(tmp_path, gold, run, monkeypatch, lazy=False, name="whole")
    assert lazy == whole and b"from a reference text only slightly" in lazy


def test_a_metric_that_reads_texts_reads_them_all(tmp_path) -> None:
    gold, run = _texts_case(tmp_path)
    req = flow.ReportRequest(str(gold), str(run), metrics=("novelty@5",))
    assert flow._run_with_lazy_texts(str(run), req) is None
    req = flow.ReportRequest(str(gold), str(run), enforce_as_of=True)
    assert flow._run_with_lazy_texts(str(run), req) is None
    req = flow.ReportRequest(str(gold), str(run), metrics=("ndcg@5",))
    assert flow._run_with_lazy_texts(str(run), req) is None  # (a small file: read as usual)
    assert read_run_lazy_texts(str(run), min_bytes=0) is not None


def test_a_loaded_run_with_texts_no_metric_reads_is_scored_in_blocks(tmp_path, monkeypatch) -> None:
    """The texts travel with the run, not with its blocks: scored in blocks when no metric reads
    them, whole when one does; the same values either way."""
    gold, run = _texts_case(tmp_path)
    r = load.load_run(str(run))
    assert "text" in r.items
    calls: list[object] = []
    inner = engine._evaluate_blocks
    monkeypatch.setattr(engine, "_evaluate_blocks", lambda *a, **k: calls.append(1) or inner(*a, **k))
    monkeypatch.setattr(engine, "MEMORY_BLOCK_ROWS", 50)
    monkeypatch.setattr(engine, "FULL_DEPTH_ROWS", 3)
    blocked = engine.evaluate(str(gold), r, "ndcg@5,recall@10")
    assert calls
    monkeypatch.setattr(engine, "MEMORY_BLOCK_ROWS", 1 << 62)
    whole = engine.evaluate(str(gold), r, "ndcg@5,recall@10")
    for m in whole.metric_names:
        assert blocked[m].tobytes() == whole[m].tobytes()
    calls.clear()
    monkeypatch.setattr(engine, "MEMORY_BLOCK_ROWS", 50)
    engine.evaluate(str(gold), r, "novelty@5,ndcg@5")
    assert not calls


@pytest.mark.parametrize("notes", [False, True])
def test_evaluate_reads_a_whole_run_without_its_texts_with_the_same_result(tmp_path, monkeypatch, notes) -> None:
    """A JSONL run read whole (below the block size) whose texts no metric reads: its texts stay in
    the file; the near-miss check reads every one from its line when the gold set has reference
    texts. The result is the one of reading every text."""
    gold, run = _texts_case(tmp_path, notes=notes)
    monkeypatch.setattr(jsonl_fast, "MIN_BYTES", 0)
    monkeypatch.setattr(load, "STREAM_FROM_BYTES", 1 << 62)
    seen = _spy(monkeypatch, jsonl_fast, "read_run_lazy_texts")
    lazy = engine.evaluate(str(gold), str(run), "ndcg@5,recall@10,distinct_docs@5")
    assert seen and seen[0] is not None and isinstance(seen[0].items["text"], LineTexts)
    monkeypatch.setattr(jsonl_fast, "read_run_lazy_texts", lambda *a, **k: None)
    whole = engine.evaluate(str(gold), str(run), "ndcg@5,recall@10,distinct_docs@5")
    for m in whole.metric_names:
        assert lazy[m].tobytes() == whole[m].tobytes()
    assert lazy.info == whole.info and ("near_misses" in lazy.info) == notes


def test_a_file_changed_after_it_was_read_is_named_not_misread(tmp_path) -> None:
    """The texts are read from the file when asked: a file rewritten meanwhile (other lines, cut short)
    is an input error naming it, never another line's texts or a crash."""
    path = tmp_path / "run.jsonl"
    _write_run(path, [[("d1", 1.0, {"text": "one"}), ("d2", 0.5, {"text": "two"})], [("d3", 1.0, {"text": "three"})]])
    lazy = read_run_lazy_texts(str(path), min_bytes=0)
    assert lazy is not None and lazy.items["text"][2] == "three"
    _write_run(path, [[("d1", 1.0, {"text": "one"})], [("d3", 1.0, {"text": "three"}), ("d4", 0.5, {"text": "x"})]])
    with pytest.raises(InputError, match="changed while it was read") as err:
        lazy.items["text"][0]
    assert str(path) in str(err.value)
    path.write_bytes(b"")
    with pytest.raises(InputError, match="changed while it was read"):
        lazy.items["text"][1]


def _rewrite_in_place(path, rows, *, keep_time: bool, later_ns: int = 0) -> None:
    """``path`` written again in place (the same file, as a producer's ``>`` does). ``keep_time``: its
    modification time put back, as a rewrite within the file system's timestamp granularity leaves it;
    ``later_ns``: set that much past the one before."""
    before = path.stat()
    _write_run(path, rows)
    if keep_time or later_ns:
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + later_ns))


_THREE = [[("d1", 1.0, {"text": "one"}), ("d2", 0.5, {"text": "two"})], [("d3", 1.0, {"text": "three"})]]


@pytest.mark.parametrize("rows", [
    # the audit's case: the same shape (items per line, bytes), other ids and texts
    [[("e1", 1.0, {"text": "uno"}), ("e2", 0.5, {"text": "dos"})], [("e3", 1.0, {"text": "tres!"})]],
    # the same ids, moved between two lines of the same shape
    [[("d3", 1.0, {"text": "owt"}), ("d1", 0.5, {"text": "eno"})], [("d2", 1.0, {"text": "eerht"})]],
])
def test_a_same_shaped_rewrite_with_other_ids_is_named_not_served(tmp_path, rows) -> None:
    """Each line keeps its item count and the file its size and modification time: the ids tell."""
    path = tmp_path / "run.jsonl"
    _write_run(path, _THREE)
    lazy = read_run_lazy_texts(str(path), min_bytes=0)
    assert lazy is not None
    size, mtime = path.stat().st_size, path.stat().st_mtime_ns
    _rewrite_in_place(path, rows, keep_time=True)
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (size, mtime)  # (only the ids can tell)
    for row in range(3):
        with pytest.raises(InputError, match="changed while it was read: a line's items") as err:
            lazy.items["text"][row]
        assert str(path) in str(err.value)


@pytest.mark.parametrize(("rows", "later_ns"), [
    ([[("d1", 1.0, {"text": "uno"}), ("d2", 0.5, {"text": "dos"})], [("d3", 1.0, {"text": "tres!"})]], 10**9),
    ([[("d1", 1.0, {"text": "one"}), ("d2", 0.5, {"text": "two"})], [("d3", 1.0, {"text": "three+"})]], 0),
])
def test_a_rewrite_with_the_same_ids_is_named_by_the_files_size_or_time(tmp_path, rows, later_ns) -> None:
    """The same ids on every line, other texts: the ids cannot tell, the file's size or modification
    time (recorded before the scan) can."""
    path = tmp_path / "run.jsonl"
    _write_run(path, _THREE)
    lazy = read_run_lazy_texts(str(path), min_bytes=0)
    assert lazy is not None
    _rewrite_in_place(path, rows, keep_time=False, later_ns=later_ns)
    with pytest.raises(InputError, match="changed while it was read: its size or modification time") as err:
        lazy.items["text"][0]
    assert str(path) in str(err.value)


def test_a_file_replaced_by_a_rename_keeps_serving_the_texts_read(tmp_path) -> None:
    """A producer that writes a new file and renames it over the old one (what the error's hint asks
    for) does not disturb a read under way: the texts come from the file that was scanned."""
    path = tmp_path / "run.jsonl"
    _write_run(path, _THREE)
    lazy = read_run_lazy_texts(str(path), min_bytes=0)
    assert lazy is not None
    new = tmp_path / "run.jsonl.new"
    _write_run(new, [[("x1", 1.0, {"text": "new"})]])
    os.replace(new, path)
    assert list(lazy.items["text"]) == ["one", "two", "three"]


def test_report_on_a_run_rewritten_in_the_same_shape_is_exit_2(tmp_path, monkeypatch, capsys) -> None:
    """Through the CLI: the run is rewritten after its scan and before the page reads its texts (other
    ids, the same size and time): exit 2 naming the file, no page."""
    gold, run = _texts_case(tmp_path)
    original = run.read_text()
    real = flow._run_with_lazy_texts

    def scan_then_rewrite(run_arg, req):
        got = real(run_arg, req)
        assert got is not None and isinstance(got.items["text"], LineTexts)
        before = run.stat()
        run.write_text(original.replace('"chunk_id": "d', '"chunk_id": "e'))  # (ids of the same length)
        os.utime(run, ns=(before.st_atime_ns, before.st_mtime_ns))
        assert run.stat().st_size == before.st_size
        return got

    monkeypatch.setattr(jsonl_fast, "MIN_BYTES", 0)
    monkeypatch.setattr(flow, "_run_with_lazy_texts", scan_then_rewrite)
    out = tmp_path / "report.html"
    assert main(["report", "--gold", str(gold), "--run", str(run), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{run}: changed while it was read" in err and len(err.strip().splitlines()) == 1, err
    assert not out.exists()


def test_a_run_rankgate_retrieve_writes_with_its_texts(tmp_path, monkeypatch) -> None:
    """The real producer: `rankgate retrieve` on Cranfield (BEIR layout) with its default texts (on the
    top 10 items). The lazy read gives the parser's texts row for row; evaluate through blocks that
    leave the texts out gives the result of reading them all."""
    from .conftest import shared_path

    beir = shared_path("datasets", "cranfield", "beir")
    run = tmp_path / "run.jsonl"
    assert main(["retrieve", "--beir", str(beir), "-o", str(run), "--depth", "20"]) == 0
    monkeypatch.setattr(jsonl_fast, "MIN_BYTES", 1 << 62)  # (the parser reads the file)
    parsed = load.load_run(str(run))
    monkeypatch.undo()
    assert "text" in parsed.items and any(t is None for t in parsed.items["text"])  # (texts on the top items only)
    lazy = read_run_lazy_texts(str(run), min_bytes=0)
    assert lazy is not None and lazy.items["text"] == parsed.items["text"]
    assert list(lazy.fields.items()) == list(parsed.fields.items())
    gold = beir / "qrels.trec"
    whole = engine.evaluate(str(gold), str(run), "ndcg@10,recall@20")
    monkeypatch.setattr(load, "STREAM_FROM_BYTES", 0)
    monkeypatch.setattr(jsonl_fast, "MIN_BYTES", 0)
    monkeypatch.setattr(engine, "FULL_DEPTH_ROWS", 3)
    import rankgate.io.trec as trec

    monkeypatch.setattr(trec, "STREAM_BLOCK_BYTES", 1 << 16)
    calls = _spy(monkeypatch, engine, "_evaluate_blocks")
    blocks = engine.evaluate(str(gold), str(run), "ndcg@10,recall@20")
    assert calls and calls[0] is not None and calls[0].result is not None  # (scored block by block)
    for m in whole.metric_names:
        assert blocks[m].tobytes() == whole[m].tobytes()
