"""The fast paths of ``gold stale`` and ``gold remap`` give exactly what the slower code gave.

* Golden: the benchmark's generators (benchmarks/gold_stale.py, seeded) at a small size, and the
  sha256 of ``stale.csv`` and of the remap proposal and review list as written by rankgate at commit
  e50b14b, before the hash joins and the vectorised stale checks.
* Differential: ``stale_labels`` against its plain reference on generated corpora (statuses,
  versions, texts and given hashes mixed; manifests from the arrow reader and from the row reader).
"""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rankgate.cli.main import main
from rankgate.corpus import load_manifest, manifest_from_records
from rankgate.goldset import GoldFile, GoldQuery, Label
from rankgate.goldset.stale import stale_labels, stale_labels_reference

from .test_gold import _write
from .conftest import examples

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "gold_stale.py"

# written by e50b14b (the build before the fast paths) on the same generated files
STALE_CSV = "3bec80bff6807b42d2550d3a968c06ccb2cbc3e04525f2123cec375f572e671e"
REMAP_JSONL = "930f7157ff4b7c4dc10086208c45f5e59ca8a36c7634d14abfdc49ba3d97a985"
REMAP_REVIEW = "0916f2f9ef91d47f33061c32cfcf96bd491324afc574567b97438aeaf6070c2c"


def _bench():
    spec = importlib.util.spec_from_file_location("gold_stale_bench", BENCH)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_stale_and_remap_outputs_are_byte_identical_to_the_slow_build(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    import rankgate.goldset.remap as remap_module

    monkeypatch.setattr(remap_module, "BATCH", 1000)  # the new corpus in 8 batches
    bench = _bench()
    stale, remap = tmp_path / "stale", tmp_path / "remap"
    planted = bench.generate(stale, 20000, 4000, 3)
    bench.generate_remap(remap, 8000, 1600, 3)
    assert main(["gold", "stale", "--gold", str(stale / "gold.jsonl"), "--corpus", str(stale / "corpus_new.jsonl"),
                 "--since", str(stale / "corpus_old.jsonl"), "-o", str(tmp_path / "out")]) == 0
    csv = tmp_path / "out" / "stale.csv"
    assert csv.read_text(encoding="utf-8").count("\n") - 1 == planted
    assert _sha(csv) == STALE_CSV
    assert main(["gold", "remap", "--gold", str(remap / "gold.jsonl"), "--old-corpus", str(remap / "corpus_old.jsonl"),
                 "--new-corpus", str(remap / "corpus_new.jsonl"), "-o", str(tmp_path / "p.jsonl")]) == 0
    assert _sha(tmp_path / "p.jsonl") == REMAP_JSONL
    assert _sha(tmp_path / "p.review.md") == REMAP_REVIEW
    capsys.readouterr()


_ids = [f"d{d}#c{c}" for d in range(3) for c in range(3)]
_chunk = st.fixed_dictionaries(
    {"chunk_id": st.sampled_from(_ids)},
    optional={"status": st.sampled_from(["current", "deprecated", "superseded", "retired"]),
              "superseded_by": st.sampled_from(["d9#c1", ""]),
              "doc_version": st.sampled_from(["v1", "v2", "v10", "2026-01-02"]),
              "text": st.sampled_from(["alpha", "beta", "", "Alpha"]),
              "content_hash": st.sampled_from(["h1", "h2"])})
_corpus = st.lists(_chunk, max_size=9, unique_by=lambda r: r["chunk_id"])


def _doc_fix(rows: list[dict]) -> list[dict]:
    return [{**r, "doc_id": r["chunk_id"].split("#")[0]} for r in rows]


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(new=_corpus, old=st.one_of(st.none(), _corpus),
       labels=st.lists(st.lists(st.tuples(st.sampled_from(_ids + ["zz#1"]), st.integers(0, 3)), max_size=3,
                                unique_by=lambda t: t[0]), min_size=1, max_size=4),
       must_not=st.lists(st.sampled_from(_ids + ["zz#2"]), max_size=3, unique=True), files=st.booleans())
def test_stale_fast_path_equals_reference(tmp_path: Path, new: list, old: list | None, labels: list, must_not: list,
                                          files: bool) -> None:
    queries = tuple(GoldQuery(f"q{i}", i + 1, tuple(Label(c, g) for c, g in ls), tuple(must_not) if i == 0 else ())
                    for i, ls in enumerate(labels))
    gold = GoldFile("<gold>", "0" * 64, queries, ())

    def manifests():
        if files:  # the arrow reader (chunk ids kept in arrow, looked up by a hash join)
            a = load_manifest(_write(tmp_path / "new.jsonl", _doc_fix(new))) if new else manifest_from_records([])
            b = None if old is None else (load_manifest(_write(tmp_path / "old.jsonl", _doc_fix(old))) if old
                                          else manifest_from_records([]))
            return a, b
        return manifest_from_records(_doc_fix(new)), None if old is None else manifest_from_records(_doc_fix(old))

    fast = stale_labels(gold, *manifests(), max_stale_labels=1)
    slow = stale_labels_reference(gold, *manifests(), max_stale_labels=1)
    assert fast == slow
