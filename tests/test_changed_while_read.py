"""A file another program shortens or rewrites while rankgate reads it (a producer rewriting it with
``>``, copytruncate rotation, a file still being synced) is an input error, exit 2, "FILE changed while
it was read": never a signal (the readers read pieces into buffers, no file is memory-mapped), never a
partial result, on every reading path and both formats. The change is made deterministic by a hook the
reader calls between two pieces (``source.after_read``): no timing is involved."""

from __future__ import annotations

import json
import os

import pytest

import rankgate._native as accel
from rankgate.cli.main import main
from rankgate.io import jsonl_fast, load, source, trec

QUERIES = 300
DOCS = 20


def _files(tmp_path, fmt: str) -> tuple[str, str]:
    gold = tmp_path / "gold.jsonl"
    gold.write_text("".join(json.dumps({"query_id": f"q{q:04d}", "relevant_chunks": [
        {"chunk_id": f"d{q}-{d}", "grade": 1 + d % 2} for d in range(0, 6, 2)]}) + "\n" for q in range(QUERIES)))
    if fmt == "trec":
        run = tmp_path / "run.trec"
        run.write_text("".join(f"q{q:04d} Q0 d{q}-{d} {d + 1} {1 - d / 100:.4f} sys\n"
                               for q in range(QUERIES) for d in range(DOCS)))
    else:
        run = tmp_path / "run.jsonl"
        run.write_text("".join(json.dumps({"query_id": f"q{q:04d}", "topk": [
            {"chunk_id": f"d{q}-{d}", "score": 1 - d / 100} for d in range(DOCS)]}) + "\n" for q in range(QUERIES)))
    return str(gold), str(run)


def _paths(monkeypatch, path: str) -> None:
    """Force the read ``path`` names: whole (in several pieces) or block by block (several blocks),
    small as the files are."""
    if path == "blocks":
        monkeypatch.setattr(load, "STREAM_FROM_BYTES", 0)
        monkeypatch.setattr(trec, "STREAM_BLOCK_BYTES", 20_000)
    else:
        monkeypatch.setattr(load, "STREAM_FROM_BYTES", 1 << 62)
        monkeypatch.setattr(trec, "_RELEASE_FROM", 0)
        monkeypatch.setattr(trec, "_RELEASE_PIECE", 20_000)
        monkeypatch.setattr(jsonl_fast, "MIN_BYTES", 1)
        monkeypatch.setattr(jsonl_fast, "_SPLIT", 1)


def _cut_when(monkeypatch, target: str, *, offset_at_least: int = 1, to: int | None = None, rewrite: bool = False):
    """After the first piece of ``target`` read from ``offset_at_least`` on, cut the file to ``to``
    bytes (default: half), or rewrite it the same size; returns the calls seen."""
    seen: list[tuple[int, int]] = []
    size = os.path.getsize(target)

    def hook(name: str, offset: int, nbytes: int) -> None:
        if name != target:
            return
        seen.append((offset, nbytes))
        if offset >= offset_at_least and len([s for s in seen if s[0] >= offset_at_least]) == 1:
            if rewrite:
                with open(target, "r+b") as fh:
                    data = fh.read()
                    fh.seek(0)
                    fh.write(data.replace(b"d1-", b"d9-"))
                os.utime(target, ns=(10**18, 10**18))
            else:
                os.truncate(target, size // 2 if to is None else to)

    monkeypatch.setattr(source, "after_read", hook)
    return seen


needs_reader = pytest.mark.skipif(accel.reader is None, reason="the compiled reader is not built (pieces are its reads)")


@needs_reader
@pytest.mark.parametrize("fmt", ["trec", "jsonl"])
@pytest.mark.parametrize("path", ["whole", "blocks"])
def test_a_run_cut_short_between_two_pieces_is_exit_2_naming_the_file(tmp_path, monkeypatch, capsys, fmt, path):
    gold, run = _files(tmp_path, fmt)
    _paths(monkeypatch, path)
    out = tmp_path / "out"
    seen = _cut_when(monkeypatch, run)
    rc = main(["evaluate", "--gold", gold, "--run", run, "-m", "ndcg@10", "--out", str(out), "--resamples", "0"])
    err = capsys.readouterr().err
    assert any(offset > 0 for offset, _ in seen), "the file was read in one piece: the test forces nothing"
    assert rc == 2, err
    assert "changed while it was read" in err and run in err
    assert not out.exists() or not any(out.iterdir())  # (no partial output)


@needs_reader
@pytest.mark.parametrize("fmt", ["trec", "jsonl"])
@pytest.mark.parametrize("path", ["whole", "blocks"])
def test_a_run_rewritten_the_same_size_while_read_is_exit_2(tmp_path, monkeypatch, capsys, fmt, path):
    """No short read shows it: the check once everything is read does (size, modification time)."""
    gold, run = _files(tmp_path, fmt)
    _paths(monkeypatch, path)
    _cut_when(monkeypatch, run, rewrite=True)
    rc = main(["evaluate", "--gold", gold, "--run", run, "-m", "ndcg@10", "--json", "--resamples", "0"])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert "changed while it was read" in err


@pytest.mark.parametrize("fmt", ["trec", "jsonl"])
def test_every_reader_checks_the_file_it_read(tmp_path, monkeypatch, capsys, fmt):
    """Without the compiled reader (the pyarrow and line-by-line paths read the file their own way),
    a file changed while it was read is still never a result: the loader compares the file before and
    after."""
    gold, run = _files(tmp_path, fmt)
    monkeypatch.setattr(accel, "reader", None)
    monkeypatch.setattr(load, "STREAM_FROM_BYTES", 1 << 62)
    real = load.call

    def read_then_cut(reader, p, *args, **kw):
        got = real(reader, p, *args, **kw)
        if p == run:
            os.truncate(run, os.path.getsize(run) // 2)
        return got

    monkeypatch.setattr(load, "call", read_then_cut)
    rc = main(["evaluate", "--gold", gold, "--run", run, "-m", "ndcg@10", "--json", "--resamples", "0"])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert "changed while it was read" in err and run in err


@needs_reader
def test_a_gold_set_cut_short_while_read_is_exit_2(tmp_path, monkeypatch, capsys):
    gold, run = _files(tmp_path, "trec")
    monkeypatch.setattr(jsonl_fast, "MIN_BYTES", 1)
    monkeypatch.setattr(jsonl_fast, "_SPLIT", 1)
    _cut_when(monkeypatch, gold)
    rc = main(["evaluate", "--gold", gold, "--run", run, "-m", "ndcg@10", "--json", "--resamples", "0"])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert "changed while it was read" in err and gold in err


def test_pread_refuses_a_short_piece_and_a_changed_file(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"x" * 10_000)
    with source.Pread(str(path)) as f:
        buf = bytearray(4000)
        f.read_into(buf, 0)
        os.truncate(path, 5000)
        with pytest.raises(source.InputError, match="changed while it was read: 10,000 bytes when opened"):
            f.read_into(buf, 4000)
        with pytest.raises(source.InputError, match="10,000 bytes when opened, 5,000 now"):
            f.check()
    with source.Pread(str(path)) as f:
        assert f.read(4990, 100) == b"x" * 10  # (fewer only where the file ends at its size when opened)
        f.check()
        whole = f.read_whole()
        assert bytes(whole[:5000]) == b"x" * 5000
        whole.close()


# ------------------------------------------------------------------------- the compiled reader's guard
# The compiled readers scan a map of the file (no copy); a page past the end of a file cut short after
# it was mapped raises SIGBUS, which their guard turns into _reader.FileCut (never the end of the
# process). These tests make the fault happen for certain and count the faults the guard caught.


def _faults() -> int:
    return accel.reader.faults()


@needs_reader
def test_each_scan_of_a_map_cut_short_raises_filecut_not_sigbus(tmp_path):
    import mmap

    import numpy as np

    from rankgate.io.jsonl_fast import ITEM_ID_KEYS, QUERY_ID_KEYS, RUN_LIST_KEYS

    reader = accel.reader
    path = tmp_path / "run.trec"
    line = b"q1 Q0 d1 1 0.5 tag\n"
    path.write_bytes(line * 100_000)  # 1.9 MB: hundreds of pages
    size = os.path.getsize(path)
    with open(path, "rb") as fh:
        mm = mmap.mmap(fh.fileno(), 0, prot=mmap.PROT_READ)
    os.truncate(path, 4096)  # every page but the first is past the end now
    before = _faults()
    with pytest.raises(reader.FileCut):
        reader.count_lines(mm, 0, size)
    rows = size // 12 + 1
    with pytest.raises(reader.FileCut):
        reader.read_lines(mm, 0, size, 6, 4, 0, b" ", np.empty(rows, np.int32), np.empty(rows), np.empty(rows + 1, np.int32),
                          np.empty(size + 16, np.uint8))
    jpath = tmp_path / "run.jsonl"
    jpath.write_bytes(b'{"query_id": "q1", "topk": [{"chunk_id": "d1", "score": 0.5}]}\n' * 30_000)
    jsize = os.path.getsize(jpath)
    with open(jpath, "rb") as fh:
        jm = mmap.mmap(fh.fileno(), 0, prot=mmap.PROT_READ)
    os.truncate(jpath, 4096)
    n = jsize // 20 + 1
    with pytest.raises(reader.FileCut):
        reader.read_jsonl(jm, 0, jsize, QUERY_ID_KEYS, RUN_LIST_KEYS, ITEM_ID_KEYS, ("score",), 0, np.empty(n),
                          np.empty(n + 1, np.int32), np.empty(jsize + 16, np.uint8))
    assert _faults() == before + 3
    # (the map is still usable where the file still is; a scan there is not a fault)
    assert reader.count_lines(mm, 0, 4096) == 4096 // len(line)
    mm.close()
    jm.close()


@needs_reader
@pytest.mark.parametrize("fmt", ["trec", "jsonl"])
@pytest.mark.parametrize("path", ["whole", "blocks"])
def test_a_run_cut_short_under_the_compiled_reader_is_exit_2(tmp_path, monkeypatch, capsys, fmt, path):
    """The file is cut to 100 bytes once the compiled reader has scanned its first piece: the pieces
    after it are read from pages past the new end (SIGBUS, caught by the guard): exit 2 naming the file."""
    gold, run = _files(tmp_path, fmt)
    _paths(monkeypatch, path)
    if fmt == "jsonl" and path == "whole":
        monkeypatch.setattr(load, "STREAM_FROM_BYTES", 1 << 62)
    monkeypatch.setattr(jsonl_fast, "MIN_BYTES", 1)
    import threading

    calls: list[int] = []
    cut, lock = threading.Event(), threading.Lock()

    def cut_after_first_piece(name: str, offset: int, nbytes: int) -> None:
        # The first piece scanned cuts the file; a piece scanned on the other thread meanwhile waits
        # here for the cut, so that the pieces after these two are scanned from pages past the end.
        if name == run:
            with lock:
                first = not calls
                calls.append(offset)
            if first:
                os.truncate(run, 100)
                cut.set()
            else:
                cut.wait(10)

    monkeypatch.setattr(trec if fmt == "trec" else jsonl_fast, "read_hook", cut_after_first_piece)
    if fmt == "jsonl" and path == "whole":
        monkeypatch.setattr(jsonl_fast, "_PIECE", 20_000)  # (many pieces: the later ones are past the cut)
    before = _faults()
    rc = main(["evaluate", "--gold", gold, "--run", run, "-m", "ndcg@10", "--json", "--resamples", "0"])
    err = capsys.readouterr().err
    assert calls, "the compiled reader did not read the run: the test forces nothing"
    assert rc == 2, err
    assert "changed while it was read" in err and run in err
    assert _faults() > before
