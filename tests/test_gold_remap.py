"""``rankgate gold remap`` on the demo corpus re-chunked two ways (sentences; neighbours joined), on
slightly edited texts, and the fast candidate search against the plain reference."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rankgate.corpus import load_manifest, manifest_from_records
from rankgate.goldset import read_gold_file, remap_gold
from rankgate.goldset.remap import MAX_DF, candidates_fast, candidates_reference, covered, shingles, tokenize

from .hostile import assert_refused
from .test_gold import DEMO, _lines, _run, _write, check
from .conftest import examples

GOLD = DEMO / "gold.jsonl"
CORPUS = DEMO / "corpus.jsonl"


def _split(rows: list[dict]) -> list[dict]:
    """Smaller chunks: each chunk cut into its sentences (doc#c1 -> doc#c1-s1, doc#c1-s2, ...)."""
    out = []
    for r in rows:
        for k, sentence in enumerate(s for s in re.split(r"(?<=[.!?])\s+", r["text"]) if s):
            out.append({**r, "chunk_id": f"{r['chunk_id']}-s{k + 1}", "text": sentence})
    return out


def _merge(rows: list[dict]) -> list[dict]:
    """Bigger chunks: neighbours of a document joined two by two (doc#m1 = c1 + c2, ...)."""
    by_doc: dict[str, list[dict]] = {}
    for r in rows:
        by_doc.setdefault(r["doc_id"], []).append(r)
    out = []
    for doc, rs in by_doc.items():
        for k in range(0, len(rs), 2):
            out.append({**rs[k], "chunk_id": f"{doc}#m{k // 2 + 1}", "text": " ".join(x["text"] for x in rs[k:k + 2])})
    return out


def _remap(tmp_path: Path, rows: list[dict], capsys: pytest.CaptureFixture[str], *extra: object
           ) -> tuple[str, list[dict], str]:
    new = _write(tmp_path / "corpus_new.jsonl", rows)
    out = tmp_path / "proposed.jsonl"
    code, stdout = _run(["gold", "remap", "--gold", GOLD, "--old-corpus", CORPUS, "--new-corpus", new, "-o", out,
                         *extra], capsys)
    assert code == 0, stdout
    return stdout, _lines(out), (tmp_path / "proposed.review.md").read_text(encoding="utf-8")


def _by_id(rows: list[dict]) -> dict[str, dict]:
    return {r["query_id"]: r for r in rows}


def test_split_chunks_map_to_their_sentences_with_grades(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = _lines(CORPUS)
    new_rows = _split(old)
    stdout, proposed, review = _remap(tmp_path, new_rows, capsys)
    assert "0 to review" in stdout
    q1 = _by_id(proposed)["q_0001"]
    pieces = [r["chunk_id"] for r in new_rows if r["chunk_id"].startswith("doc_export#c2-")]
    assert len(pieces) >= 2
    got = [i for i in q1["relevant_chunks"] if i.get("remapped_from") == "doc_export#c2"]
    assert [i["chunk_id"] for i in got] == pieces  # every piece, in corpus order
    assert {i["grade"] for i in got} == {3} and got[0]["note"] == "states the Free plan export allowance"
    assert all(i["confidence"] == 1.0 for i in got)
    assert {"from": "doc_export#c2", "to": pieces, "kind": "split", "confidence": 1.0} in q1["remap"]
    # the proposal is a clean gold set for the new corpus
    code, out = _run(["gold", "validate", "--gold", tmp_path / "proposed.jsonl", "--corpus",
                      tmp_path / "corpus_new.jsonl", "--as-of", "2026-06-01"], capsys)
    assert code == 0, out
    assert "unknown\\_chunk" not in out and "| split |" in review
    # other fields kept in place; the original gold set is untouched
    original = _by_id([json.loads(x) for x in GOLD.read_text(encoding="utf-8").splitlines() if x.strip()])["q_0001"]
    assert list(q1)[:5] == list(original)[:5] == ["query_id", "query", "conversation_id", "turn", "relevant_chunks"]
    assert q1["tags"] == {"lang": "en", "tenant": "shared"} and q1["conversation_id"] == original["conversation_id"]
    assert read_gold_file(GOLD).sha256 == read_gold_file(GOLD).sha256


def test_merged_chunks_map_to_the_bigger_chunk(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stdout, proposed, _ = _remap(tmp_path, _merge(_lines(CORPUS)), capsys)
    assert "0 to review" in stdout
    q1 = _by_id(proposed)["q_0001"]
    # doc_export#c1 (grade 1) and #c2 (grade 3) were joined into doc_export#m1: one item, the higher grade
    assert q1["relevant_chunks"][0] == {
        "chunk_id": "doc_export#m1", "grade": 3,
        "note": "states the Free plan export allowance; how CSV export works in general",
        "remapped_from": "doc_export#c2; doc_export#c1", "confidence": 1.0}
    assert len(q1["relevant_chunks"]) == 1
    kinds = {m["kind"] for r in proposed for m in r.get("remap", ())}
    assert kinds == {"merged", "moved"}  # the last chunk of an odd-sized document stays alone under a new id
    q3 = _by_id(proposed)["q_0003"]
    assert q3["must_not_retrieve"] == ["doc_pricing_2023#m1"]  # negative labels follow their text too


def test_edited_texts_and_a_lost_chunk_golden(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Chunk ids renamed (v2 ids), texts edited slightly, one chunk rewritten, one gone: the review
    file lists what was not applied (golden)."""
    rows = []
    for r in _lines(CORPUS):
        cid, text = r["chunk_id"], r["text"]
        if cid == "doc_export#c1":
            continue  # gone: its labels cannot be carried
        if cid == "doc_export#c3":
            text = text.replace("7 days", "14 days")
        if cid == "doc_export#c2":
            text = text.upper().replace(",", " ;")  # case and punctuation do not matter
        if cid == "doc_pricing_2026#c1":
            text = " ".join(text.split()[: len(text.split()) // 2]) + " Prices below are new."  # half rewritten
        rows.append({**r, "chunk_id": cid.replace("#c", "#v2-c"), "text": text})
    _, proposed, review = _remap(tmp_path, rows, capsys)
    q = _by_id(proposed)
    assert q["q_0002"]["relevant_chunks"][0]["chunk_id"] == "doc_export#v2-c3"
    assert 0.9 < q["q_0002"]["relevant_chunks"][0]["confidence"] < 1
    assert q["q_0002"]["remap"][0]["kind"] == "edited"
    assert q["q_0001"]["relevant_chunks"][0] == {"chunk_id": "doc_export#v2-c2", "grade": 3,
                                                 "note": "states the Free plan export allowance",
                                                 "remapped_from": "doc_export#c2", "confidence": 1.0}
    assert q["q_0001"]["relevant_chunks"][1]["chunk_id"] == "doc_export#c1"  # kept: nothing carries it
    assert q["q_0003"]["relevant_chunks"][0]["chunk_id"] == "doc_pricing_2026#c1"  # below 0.8: kept for review
    assert "doc\\_export\\#c1 |" in review and "no new chunk carries its text" in review
    assert "doc\\_pricing\\_2026\\#c1 |" in review and "below the confidence floor" in review
    check("gold_remap_review.md", review)
    # a lower floor applies the partial mapping
    _, proposed, _ = _remap(tmp_path, rows, capsys, "--min-confidence", "0.3")
    assert _by_id(proposed)["q_0003"]["relevant_chunks"][0]["chunk_id"] == "doc_pricing_2026#v2-c1"


def test_unchanged_corpus_changes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gold = tmp_path / "gold_spaced.jsonl"  # unusual spacing survives: unchanged lines are copied
    gold.write_text("".join(json.dumps(r, indent=None, separators=(",", ":")) + "\n" for r in _lines(GOLD)))
    code, stdout = _run(["gold", "remap", "--gold", gold, "--old-corpus", CORPUS, "--new-corpus", CORPUS, "-o",
                         tmp_path / "p.jsonl"], capsys)
    assert code == 0 and "unchanged 150" in stdout and "0 remapped" in stdout
    assert (tmp_path / "p.jsonl").read_bytes() == gold.read_bytes()


def test_remap_refuses_to_write_over_its_inputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gold = _write(tmp_path / "gold.jsonl", _lines(GOLD))
    new = _write(tmp_path / "new.jsonl", _split(_lines(CORPUS)))
    folder = tmp_path / "out"
    folder.mkdir()
    base = ["gold", "remap", "--gold", gold, "--old-corpus", CORPUS, "--new-corpus", new]
    before = gold.read_bytes()
    assert_refused([*base, "-o", gold], tmp_path, names=[gold], capsys=capsys, contains=["also an input"])
    assert gold.read_bytes() == before
    assert_refused([*base, "-o", folder / "p.jsonl", "--review", new], folder, names=[new], capsys=capsys)
    assert_refused([*base, "-o", folder / "p.jsonl", "--review", folder / "p.jsonl"], folder, capsys=capsys,
                   contains=["same file"])
    assert_refused([*base, "-o", folder / "p.jsonl", "--min-confidence", "2"], folder, capsys=capsys)
    no_text = _write(tmp_path / "bad.jsonl", [{"chunk_id": "a", "status": "archived"}])
    assert_refused(["gold", "remap", "--gold", gold, "--old-corpus", CORPUS, "--new-corpus", no_text, "-o",
                    folder / "p.jsonl"], folder, names=[no_text], capsys=capsys, contains=["field 'status'"])


def test_remap_writes_both_files_or_neither(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    new = _write(tmp_path / "new.jsonl", _split(_lines(CORPUS)))
    out = tmp_path / "out"
    out.mkdir()
    (out / "p.jsonl").write_text("old proposal\n")
    real_replace = os.replace
    calls = []

    def failing(src: str, dst: str) -> None:
        if os.path.basename(src).startswith(".rankgate-") and not os.path.basename(src).startswith(".rankgate-old-"):
            calls.append(dst)
            if len(calls) == 2:
                raise OSError(errno.ENOSPC, "No space left on device")  # the second file cannot be moved in
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", failing)
    assert_refused(["gold", "remap", "--gold", GOLD, "--old-corpus", CORPUS, "--new-corpus", new, "-o",
                    out / "p.jsonl"], out, capsys=capsys)
    assert sorted(p.name for p in out.iterdir()) == ["p.jsonl"]
    assert (out / "p.jsonl").read_text() == "old proposal\n"


# -- the text rules and the fast candidate search ---------------------------------------------------
def test_tokens_shingles_and_coverage_by_hand() -> None:
    assert tokenize(["Invitations expire after 7 days; RESEND it!", None, "Straße-Größe"]) == [
        ["invitations", "expire", "after", "7", "days", "resend", "it"], [], ["straße", "größe"]]
    seq = shingles(["a", "b", "c", "d", "e"])  # abc bcd cde
    assert covered((seq, 5), {("a", "b", "c"), ("c", "d", "e")}) == 5
    assert covered((seq, 5), {("b", "c", "d")}) == 3
    assert covered((seq, 5), {("a", "b", "c"), ("b", "c", "d")}) == 4
    assert covered((shingles(["x", "y"]), 2), {("x", "y")}) == 2


_words = st.sampled_from(["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta", "Beta", "7"])
_text = st.one_of(st.none(), st.lists(_words, max_size=9).map(" ".join), st.sampled_from(["", "!!", "a, b"]))


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(old=st.lists(_text, min_size=1, max_size=6), new=st.lists(_text, min_size=1, max_size=12),
       repeat=st.integers(0, MAX_DF + 2))
def test_fast_candidates_equal_reference(old: list, new: list, repeat: int) -> None:
    import pyarrow as pa

    new = new + ["alpha beta gamma"] * repeat  # a shingle around the boilerplate limit
    ref_old, ref_new, ref_c = candidates_reference(old, new)
    fast_old, fast_new, fast_c = candidates_fast(old, pa.array(new, pa.string()))
    assert fast_c == ref_c
    assert candidates_fast(old, pa.array(new, pa.string()), batch=2)[2] == ref_c  # the corpus read in batches
    assert sorted(fast_new) == sorted(ref_new)
    assert [t for _, t in fast_old] == [t for _, t in ref_old]
    for (fs, _), (rs, _) in zip(fast_old, ref_old):  # same shingles, coded as integers
        assert len(fs) == len(rs) and len(set(fs)) == len(set(rs))
    # the same picks either way
    rows = [{"chunk_id": f"o{i}", "text": t} for i, t in enumerate(old)]
    gold = _gold_for([r["chunk_id"] for r in rows])
    new_rows = [{"chunk_id": f"n{j}", "text": t} for j, t in enumerate(new)]
    a, b = manifest_from_records(rows), manifest_from_records(new_rows)
    assert remap_gold(gold, a, b, fast=True).labels == remap_gold(gold, a, b, fast=False).labels


def test_fast_candidates_with_pair_numbering_equal_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past ~1.6M distinct tokens a shingle's tokens do not fit one int64; the keys are then built by
    numbering token pairs: the same candidates."""
    import pyarrow as pa

    import rankgate.goldset.remap as remap

    monkeypatch.setattr(remap, "_INT64_KEYS", 0)
    old = ["Invitations expire after 7 days", "the team plan costs 9 dollars", "x y", None]
    new = ["Invitations expire after 7 days; resend them", "The team plan costs 9 dollars per member", "x y", "z"]
    assert candidates_fast(old, pa.array(new)) == candidates_fast(old, pa.array(new)) != ([], {}, [])
    fast = candidates_fast(old, pa.array(new))
    assert fast[2] == candidates_reference(old, new)[2] == [[0], [1], [2], []]
    # the candidates' own shingles are numbered as the old texts' are (a shared shingle is one code)
    olds, news = fast[0], fast[1]
    assert set(olds[0][0]) <= set(news[0][0]) and set(olds[2][0]) == set(news[2][0])


def _gold_for(ids: list[str]):
    from rankgate.goldset import GoldFile, GoldQuery, Label

    return GoldFile("<gold>", "0" * 64, (GoldQuery("q1", 1, tuple(Label(c, 1) for c in ids)),), ())


def test_remap_on_a_folder_and_parquet_corpus_equals_jsonl(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = _split(_lines(CORPUS))
    folder = tmp_path / "c"
    folder.mkdir()
    pq.write_table(pa.Table.from_pylist(rows[:200]), folder / "a.parquet")
    _write(folder / "b.jsonl", rows[200:])
    gold, old = read_gold_file(GOLD), load_manifest(CORPUS)
    a = remap_gold(gold, old, load_manifest(folder))
    b = remap_gold(gold, old, load_manifest(_write(tmp_path / "c.jsonl", rows)))
    assert a.labels == b.labels


def test_must_not_entry_landing_on_a_relevant_chunk_is_kept_and_listed(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """q_0003 counts doc_pricing_2026#c1 as relevant and must not get doc_pricing_2023#c1; a corpus that
    joins the two pages' chunks into one leaves a contradiction for a person to resolve."""
    rows, joined = [], {}
    for r in _lines(CORPUS):
        if r["chunk_id"] in ("doc_pricing_2026#c1", "doc_pricing_2023#c1"):
            joined[r["chunk_id"]] = r
            continue
        rows.append(r)
    rows.append({**joined["doc_pricing_2026#c1"], "chunk_id": "doc_pricing#all",
                 "text": joined["doc_pricing_2026#c1"]["text"] + " " + joined["doc_pricing_2023#c1"]["text"]})
    _, proposed, review = _remap(tmp_path, rows, capsys)
    q3 = _by_id(proposed)["q_0003"]
    assert q3["relevant_chunks"][0]["chunk_id"] == "doc_pricing#all"
    assert q3["must_not_retrieve"] == ["doc_pricing#all"]
    assert "### Must-not-retrieve entries that landed on a relevant chunk" in review
    assert "| q\\_0003 | doc\\_pricing\\#all |" in review


def test_remap_reads_a_piped_gold_set_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--gold <(zcat gold.jsonl.gz)``: the gold lines are kept from the one read, so the proposal
    from a pipe is the proposal from the file."""
    import threading

    new = _write(tmp_path / "new.jsonl", _split(_lines(CORPUS)))
    _, from_file, _ = _remap(tmp_path, _split(_lines(CORPUS)), capsys)
    fifo = tmp_path / "gold.pipe"
    os.mkfifo(fifo)
    data = GOLD.read_bytes()

    def feed() -> None:
        with open(fifo, "wb") as fh:
            fh.write(data)

    writer = threading.Thread(target=feed)
    writer.start()
    out = tmp_path / "piped.jsonl"
    code, stdout = _run(["gold", "remap", "--gold", fifo, "--old-corpus", CORPUS, "--new-corpus", new, "-o", out],
                        capsys)
    writer.join(10)
    assert code == 0, stdout
    assert _lines(out) == from_file


def test_remap_refuses_a_corpus_without_texts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """remap maps changed chunks by their texts: a new (or old) corpus without any text is exit 2 naming
    it, not exit 0 with every label unmapped; when every labelled chunk is unchanged by content hash,
    no text is needed."""
    rows = _lines(CORPUS)
    bare = _write(tmp_path / "bare.jsonl", [{k: v for k, v in r.items() if k != "text"} for r in _split(rows)])
    bare_old = _write(tmp_path / "bare_old.jsonl", [{k: v for k, v in r.items() if k != "text"} for r in rows])
    hashed = _write(tmp_path / "hashed.jsonl", [{**{k: v for k, v in r.items() if k != "text"},
                                                 "content_hash": hashlib.sha256(r["text"].encode()).hexdigest()}
                                                for r in rows])
    folder = tmp_path / "out"
    folder.mkdir()
    for old, new, bad in ((CORPUS, bare, bare), (bare_old, bare, bare_old), (bare_old, _write(
            tmp_path / "split.jsonl", _split(rows)), bare_old)):
        assert_refused(["gold", "remap", "--gold", GOLD, "--old-corpus", old, "--new-corpus", new, "-o",
                        folder / "p.jsonl"], folder, names=[bad], capsys=capsys,
                       contains=["field 'text' is missing from every chunk", "comparing the old and the new texts"])
    code, stdout = _run(["gold", "remap", "--gold", GOLD, "--old-corpus", CORPUS, "--new-corpus", hashed, "-o",
                         folder / "p.jsonl"], capsys)
    assert code == 0 and "unchanged 150" in stdout
