"""rankgate retrieve --texts: which hits keep their chunk text (a 100-hit run with every text is tens of MB)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rankgate.cli.main import main
from rankgate.cli.retrieve import DEFAULT_TEXTS

DEMO = Path(__file__).resolve().parents[1] / "src" / "rankgate" / "demo" / "data"


def _retrieve(tmp_path, *extra: str) -> list[dict]:
    out = tmp_path / "run.jsonl"
    code = main(["retrieve", "--corpus", str(DEMO / "corpus.jsonl"), "--gold", str(DEMO / "gold.jsonl"), "--depth", "30",
                 "--no-latency", "-o", str(out), *extra])
    assert code == 0
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


def _texts_kept(records: list[dict], limit: int) -> bool:
    """Each query's first ``limit`` hits have their text, the others none."""
    return all(["text" in h for h in r["topk"]] == [i < limit for i in range(len(r["topk"]))] for r in records)


def test_default_keeps_the_text_of_the_first_ten_hits_only(tmp_path):
    records = _retrieve(tmp_path)
    assert DEFAULT_TEXTS == 10
    for r in records:
        hits = r["topk"]
        assert all({"chunk_id", "score", "rank"} <= set(h) for h in hits)
    assert _texts_kept(records, 10)
    assert max(len(r["topk"]) for r in records) == 30


@pytest.mark.parametrize(("value", "kept"), [("none", 0), ("top-3", 3), ("7", 7), ("all", 30), ("top-100", 30)])
def test_texts_option(tmp_path, value, kept):
    assert _texts_kept(_retrieve(tmp_path, "--texts", value), kept)


def test_a_smaller_run_gives_the_same_numbers_and_the_report_still_shows_the_texts(tmp_path):
    small, full = tmp_path / "small", tmp_path / "full"
    small.mkdir(), full.mkdir()
    _retrieve(small)
    _retrieve(full, "--texts", "all")
    assert (small / "run.jsonl").stat().st_size < 0.7 * (full / "run.jsonl").stat().st_size
    from rankgate.render.build import build_report

    reps = [build_report(str(DEMO / "gold.jsonl"), str(d / "run.jsonl"), resamples=0) for d in (small, full)]
    assert [r.mean for r in reps[0].panel] == [r.mean for r in reps[1].panel]
    assert reps[0].misses == reps[1].misses and reps[0].misses  # top-10 lists with their snippets


@pytest.mark.parametrize("value", ["top-0", "some", "-1", "top-x", "top-1.5"])
def test_a_bad_value_is_one_line(tmp_path, capsys, value):
    from .hostile import assert_refused

    out = tmp_path / "out"
    out.mkdir()
    assert_refused(["retrieve", "--corpus", str(DEMO / "corpus.jsonl"), "--gold", str(DEMO / "gold.jsonl"),
                    "--texts", value, "-o", str(out / "run.jsonl")], out, capsys=capsys, contains=["--texts"])
