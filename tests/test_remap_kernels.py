"""The compiled remap kernels (``rankgate._native._remap``: ascii_tokens, shingle_scan, pair_hits, pick_greedy)
against the arrow/numpy/Python paths they replace: the same tokens, shingle keys, candidates and
picks on random texts (ASCII and not, punctuation, digits, underscores, case), and the same remap
with the kernels, without them, and by the plain reference."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rankgate._native as accel
from rankgate.corpus import manifest_from_records
from rankgate.goldset import remap_gold
from rankgate.goldset import remap as R

from .conftest import examples

kernels = accel.remap
needs_kernels = pytest.mark.skipif(kernels is None, reason="rankgate._native._remap is not loaded (not built, or "
                                                           "RANKGATE_NATIVE=off)")

# ASCII of every class (letters of both cases, digits, underscore, punctuation, spaces, controls) and
# characters whose Unicode rules differ from ASCII's: letters and digits outside ASCII, a sign that
# lower-cases to ASCII (KELVIN SIGN -> k), one that lower-cases to two code points (İ), marks, emoji
_ascii = st.characters(min_codepoint=0, max_codepoint=127)
_other = st.sampled_from(["é", "ß", "\u212a", "İ", "Σ", "ς", "٣", "²", "中", "\u0301", "🙂", "\u00a0", "ǅ"])
_word = st.sampled_from(["alpha", "Beta", "GAMMA", "d3lta", "x_y", "7", "42", "a", "b", "c", "under_score"])
_ascii_text = st.one_of(st.text(_ascii, max_size=40), st.lists(_word, max_size=12).map(" ".join),
                        st.lists(_word, max_size=12).map(", ".join), st.sampled_from(["", " ", "__", "a-b_c", "A.B"]))
_any_text = st.one_of(_ascii_text, st.text(st.one_of(_ascii, _other), max_size=30),
                      st.lists(st.one_of(_word, _other), max_size=10).map(" ".join))


def _arrow_tokens(texts: list[str | None]) -> tuple[list[str], list[int]]:
    lists = R._token_lists(texts).to_pylist()
    toks = [[t for t in x if t] for x in lists]
    return [t for x in toks for t in x], [len(x) for x in toks]


@needs_kernels
@settings(max_examples=examples(300), deadline=None)
@given(texts=st.lists(st.one_of(st.none(), _any_text), max_size=12))
def test_ascii_tokens_are_arrows_tokens(texts: list[str | None]) -> None:
    arr = R._string_array(pa.array(texts, pa.string()))
    counts = np.empty(len(arr), dtype=np.int64)
    t_off, t_data = kernels.ascii_tokens(*R._buffers(arr), counts)
    flat = pa.StringArray.from_buffers(len(t_off) // 4 - 1, pa.py_buffer(t_off), pa.py_buffer(t_data)).to_pylist()
    at = 0
    for text, n in zip(texts, counts.tolist()):
        if text is not None and not text.isascii():
            assert n == -1  # left to arrow
            continue
        want, _ = _arrow_tokens([text])
        assert flat[at:at + n] == want
        at += n
    assert at == len(flat)
    # and _tokens, whichever path it takes, gives arrow's tokens
    got, got_counts = R._tokens(texts)
    assert (got.to_pylist(), got_counts.tolist()) == _arrow_tokens(texts)


def _vocab_keys(old: list[str | None], new: list[str | None]) -> tuple[object, int, np.ndarray, np.ndarray]:
    """The old texts' vocabulary and V, and the arrow/numpy keys of the new texts (with their text)."""
    import pyarrow.compute as pc

    o_flat, _ = _arrow_tokens(old)
    vocab = pa.array(o_flat, pa.string()).dictionary_encode().dictionary
    V = len(vocab) + 2
    flat, counts = _arrow_tokens(new)
    ids = pc.index_in(pa.array(flat, pa.string()), value_set=vocab).fill_null(V - 2).to_numpy(
        zero_copy_only=False).astype(np.int64)
    key, text_of = R._keys(ids, np.array(counts, dtype=np.int64), V)
    return vocab, V, key, text_of


@needs_kernels
@settings(max_examples=examples(300), deadline=None)
@given(old=st.lists(st.one_of(st.none(), _any_text), max_size=6), new=st.lists(st.one_of(st.none(), _any_text), max_size=10))
def test_shingle_scan_keys_and_finds_are_the_numpy_ones(old: list[str | None], new: list[str | None]) -> None:
    vocab, V, key, text_of = _vocab_keys(old, new)
    arr = R._string_array(pa.array(new, pa.string()))
    n_tokens, per_text = np.empty(len(arr), dtype=np.int64), np.empty(len(arr), dtype=np.int64)
    got = np.frombuffer(kernels.shingle_scan(*R._buffers(arr), *R._buffers(vocab), V, None, n_tokens, per_text, None),
                        dtype=np.int64)
    ascii_ = np.array([t is None or t.isascii() for t in new], dtype=bool)
    assert (n_tokens < 0).tolist() == (~ascii_).tolist()
    want = key[ascii_[text_of]] if len(key) else key
    assert got.tolist() == want.tolist()
    assert per_text[ascii_].tolist() == np.bincount(text_of, minlength=len(new))[ascii_].tolist()
    # finds: each key's place among some of the keys, and how often each was found
    uniq = np.unique(np.concatenate((want[::2], np.array([V ** 3 - 1], dtype=np.int64))))
    df = np.zeros(len(uniq), dtype=np.int64)
    pos = np.frombuffer(kernels.shingle_scan(*R._buffers(arr), *R._buffers(vocab), V, uniq, n_tokens, per_text, df),
                        dtype=np.int64)
    found = np.searchsorted(uniq, want)
    hit = (found < len(uniq)) & (uniq[np.minimum(found, len(uniq) - 1)] == want)
    assert pos.tolist() == found[hit].tolist()
    assert df.tolist() == np.bincount(found[hit], minlength=len(uniq)).tolist()


_prose = st.sampled_from(["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta", "Beta", "7", "Größe", "ǅx"])
_prose_text = st.one_of(st.none(), st.lists(_prose, max_size=9).map(" ".join), st.sampled_from(["", "!!", "a, b"]))


@pytest.mark.slow  # (the full tier: heavy, and what it guards is covered lighter by default)
@settings(max_examples=examples(80), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(old=st.lists(_prose_text, min_size=1, max_size=6), new=st.lists(_prose_text, min_size=1, max_size=12),
       repeat=st.integers(0, R.MAX_DF + 2), batch=st.sampled_from([None, 1, 3]))
def test_candidates_and_picks_with_and_without_kernels(old: list, new: list, repeat: int, batch: int | None,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Texts with and without non-ASCII words: the compiled path (C for ASCII texts, arrow for the
    rest), the numpy/arrow path and the reference give the same candidates and the same remap."""
    new = new + ["alpha beta gamma"] * repeat  # a shingle around the boilerplate limit
    ref = R.candidates_reference(old, new)
    with_kernels = R.candidates_fast(old, pa.array(new, pa.string()), batch=batch)
    rows = [{"chunk_id": f"o{i}", "doc_id": f"d{i % 2}", "text": t} for i, t in enumerate(old)]
    new_rows = [{"chunk_id": f"n{j}", "doc_id": f"d{j % 3}", "text": t} for j, t in enumerate(new)]
    a, b = manifest_from_records(rows), manifest_from_records(new_rows)
    from rankgate.goldset import GoldFile, GoldQuery, Label

    gold = GoldFile("<gold>", "0" * 64, (GoldQuery("q1", 1, tuple(Label(r["chunk_id"], 1) for r in rows)),), ())
    compiled = remap_gold(gold, a, b).labels
    monkeypatch.setattr(accel, "remap", None)
    without = R.candidates_fast(old, pa.array(new, pa.string()), batch=batch)
    assert with_kernels[2] == without[2] == ref[2]
    assert sorted(with_kernels[1]) == sorted(without[1]) == sorted(ref[1])
    for x, y in zip(with_kernels[0], without[0]):
        assert x == y  # the same integer codes either way
    for j in with_kernels[1]:
        assert with_kernels[1][j] == without[1][j]
    assert compiled == remap_gold(gold, a, b).labels == remap_gold(gold, a, b, fast=False).labels


@needs_kernels
def test_picking_on_splits_and_merges_matches_python(monkeypatch: pytest.MonkeyPatch) -> None:
    """A chunk split in three, two merged, one edited, half of one inside a bigger chunk of other text,
    one whose words appear in two documents (the same document wins a tie)."""
    words = [f"w{i}" for i in range(400)]
    old = [" ".join(words[0:30]), " ".join(words[30:40]), " ".join(words[40:52]), " ".join(words[60:90]),
           " ".join(words[100:124]), "Short", " ".join(words[200:212])]
    new = [" ".join(words[0:10]), " ".join(words[10:20]), " ".join(words[20:30]), " ".join(words[30:52]),
           " ".join(words[60:75] + ["edited"] + words[75:90]), " ".join(words[100:112] + words[300:340]),
           "short", " ".join(words[200:212]), " ".join(words[200:212])]
    rows = [{"chunk_id": f"o{i}", "doc_id": "dA" if i != 6 else "dB", "text": t} for i, t in enumerate(old)]
    new_rows = [{"chunk_id": f"n{j}", "doc_id": "dB" if j == 8 else "dA", "text": t} for j, t in enumerate(new)]
    a, b = manifest_from_records(rows), manifest_from_records(new_rows)
    from rankgate.goldset import GoldFile, GoldQuery, Label

    gold = GoldFile("<gold>", "0" * 64, (GoldQuery("q1", 1, tuple(Label(r["chunk_id"], 1) for r in rows)),), ())
    compiled = remap_gold(gold, a, b).labels
    assert [compiled[f"o{i}"].kind for i in range(7)] == ["split", "merged", "merged", "edited", "merged", "moved",
                                                          "moved"]
    assert [m.chunk_id for m in compiled["o6"].mappings] == ["n8"]  # its own document's copy
    monkeypatch.setattr(accel, "remap", None)
    assert compiled == remap_gold(gold, a, b).labels == remap_gold(gold, a, b, fast=False).labels
