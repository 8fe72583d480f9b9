"""``rankgate gold remap``: after a re-chunking, which new chunks carry each labelled chunk's text?
Pure: a gold file and two corpus manifests in, a :class:`Remap` out; the command writes the files.

**Text.** A chunk's text is lower-cased and cut into tokens at every run of characters that are not
letters or digits (Unicode); its *shingles* are its runs of :data:`SHINGLE` consecutive tokens (a text
of one or two tokens has one shingle, itself). Two chunks share text when they share shingles; case,
punctuation and spacing do not matter, word order does.

**Candidates** come from an inverted index over shingles, never from all pairs. A shingle that occurs
more than :data:`MAX_DF` times in the new corpus (boilerplate) suggests nothing; a new chunk is a
candidate for an old one when the pairs of their positions holding the same rarer shingle, ``hits``,
could carry enough text to be picked (below): ``3·hits ≥ PIECE·tokens(o)`` or ``3·hits ≥
PURE·tokens(n)``. Then, for an old chunk ``o`` with shingle set ``S(o)`` and a candidate ``n``:

``covers(n)   = |S(o) ∩ S(n)| / |S(o)|``   the share of the old text that ``n`` carries
``from_old(n) = |S(o) ∩ S(n)| / |S(n)|``   the share of ``n`` that is old text

Candidates are picked greedily by how much old text not yet carried they add (ties: the same document
first, then corpus order); one is kept when it adds at least :data:`PIECE` of the old text or is at
least :data:`PURE` old text, so a chunk split in three maps to its three pieces and a chunk merged into
a bigger one maps to that one. ``carried`` is the share of ``S(o)`` in the kept chunks, and each
mapping's ``confidence = min(carried, max(covers, from_old))``: 1 for a clean move, split or merge,
lower when text was lost or a piece mixes in much other text.

**Kinds** per old chunk: ``unchanged`` (same id, same content hash: no text needed), ``moved`` (one new
chunk with the same shingles), ``edited`` (one, both shares ≥ 0.8), ``merged`` (one, which holds more
than the old text), ``partial`` (one, which holds part of it), ``split`` (several), ``unmapped`` (none;
also when the old corpus has no text for it or does not hold it).

Mappings below ``min_confidence`` are not applied: the label keeps its old chunk id and goes to the
review list with its best candidates. Grades and notes are carried to every new chunk; when two
labels of a query land on one new chunk it keeps the higher grade and both notes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterator, Sequence
from collections.abc import Mapping as Mapping_
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NamedTuple

from rankgate.corpus import CorpusManifest
from rankgate.errors import InputError
from rankgate.goldset.records import GoldFile

__all__ = ["MAX_DF", "PIECE", "PURE", "SHINGLE", "LabelRemap", "Mapping", "Remap", "remap_gold", "tokenize"]

SHINGLE = 3
MAX_DF = 100
PIECE = 0.25
PURE = 0.5
KINDS = ("unchanged", "moved", "edited", "merged", "partial", "split", "unmapped")


@dataclass(frozen=True, slots=True)  # slots: a remap holds hundreds of thousands of these
class Mapping:
    chunk_id: str
    confidence: float
    covers: float
    from_old: float


@dataclass(frozen=True, slots=True)
class LabelRemap:
    """What became of one old chunk that the gold set labels."""

    chunk_id: str
    kind: str
    carried: float
    mappings: tuple[Mapping, ...]  # kept, in new-corpus order
    rejected: tuple[Mapping, ...] = ()  # best other candidates (for the review list)
    detail: str = ""

    def applied(self, min_confidence: float) -> tuple[Mapping, ...]:
        """The mappings to apply: all of them when each reaches ``min_confidence``, else none."""
        if self.kind == "unmapped":
            return ()
        for m in self.mappings:  # a loop, not any(): called for every label by propose and the reports
            if m.confidence < min_confidence:
                return ()
        return self.mappings


@dataclass(frozen=True)
class Remap:
    gold_path: str
    old_path: str
    new_path: str
    min_confidence: float
    labels: dict[str, LabelRemap]  # old chunk id -> its remap, for every labelled chunk id
    uses: dict[str, int]  # old chunk id -> labels using it (relevant and must-not entries)

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(KINDS, 0)
        for r in self.labels.values():
            out[r.kind] += 1
        return out

    def to_review(self) -> list[LabelRemap]:
        """Old chunks whose labels keep their old id: unmapped, or mapped below ``min_confidence``."""
        return [r for r in self.labels.values() if r.kind != "unchanged" and not r.applied(self.min_confidence)]


# -- text ----------------------------------------------------------------------------------------
_SPLIT = r"[^\p{L}\p{N}]+"


def _string_array(texts: Any) -> Any:
    """``texts`` as one arrow string array (int32 offsets), nulls read as ``""``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    arr = texts if isinstance(texts, (pa.Array, pa.ChunkedArray)) else pa.array(texts, pa.string())
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_large_string(arr.type):
        arr = arr.cast(pa.string())
    return pc.fill_null(arr, "") if arr.null_count else arr


def _token_lists(texts: Any) -> Any:
    """Arrow list array of the tokens of each text (see module docs), empty strings removed."""
    import pyarrow.compute as pc

    return pc.split_pattern_regex(pc.utf8_lower(_string_array(texts)), pattern=_SPLIT)


def _kernels() -> Any:
    """The compiled remap kernels (``rankgate._native._remap``), or None: then arrow and numpy do the same work."""
    from rankgate._native import remap

    return remap


def _buffers(arr: Any) -> tuple[Any, Any]:
    """The int32 offsets (numpy, one more than texts) and the data buffer of an arrow string array
    without nulls, for the kernels."""
    import numpy as np

    _, offsets, data = arr.buffers()
    off = np.frombuffer(offsets, dtype=np.int32, count=arr.offset + len(arr) + 1)[arr.offset:] if len(arr) else \
        np.zeros(1, dtype=np.int32)
    return off, (data if data is not None else b"")


def tokenize(texts: Sequence[str | None]) -> list[list[str]]:
    """The tokens of each text, as remapping sees them."""
    return [[t for t in toks if t] for toks in _token_lists(list(texts)).to_pylist()]


def shingles(tokens: Sequence[str]) -> list[tuple[str, ...]]:
    """The shingles of a token list, in text order."""
    if len(tokens) < SHINGLE:
        return [tuple(tokens)] if tokens else []
    return [tuple(tokens[i:i + SHINGLE]) for i in range(len(tokens) - SHINGLE + 1)]


Text = tuple[list[Hashable], int]  # a text's shingles in order, and its number of tokens


def covered(text: Text, present: set[Hashable] | frozenset[Hashable]) -> int:
    """How many tokens of ``text`` lie in at least one of its shingles that is in ``present``."""
    seq, n_tokens = text
    if len(seq) == 1 and n_tokens < SHINGLE:
        return n_tokens if seq[0] in present else 0
    at = [i for i, sh in enumerate(seq) if sh in present]
    if not at:
        return 0
    if at[-1] - at[0] + 1 == len(at):  # one run of neighbouring shingles (the usual case)
        return len(at) - 1 + SHINGLE
    # equal-length spans in start order: each adds what lies before the next one starts
    return sum(b - a if b - a < SHINGLE else SHINGLE for a, b in zip(at, at[1:])) + SHINGLE


# -- candidates: a plain reference and the arrow/numpy path used on real corpora -------------------
Found = tuple[list[Text], dict[int, Text], list[list[int]]]


def _enough(hits: Any, old_tokens: Any, new_tokens: Any) -> Any:
    """Whether ``hits`` shared rare shingle positions could carry a share of the old text or of the
    new chunk big enough to be picked (each covers at most SHINGLE tokens); works on numpy arrays too."""
    return (SHINGLE * hits >= PIECE * old_tokens) | (SHINGLE * hits >= PURE * new_tokens)


def candidates_reference(old_texts: Sequence[str | None], new_texts: Sequence[str | None]) -> Found:
    """The old texts, every candidate new chunk's text (by position in the new corpus), and each old
    text's candidate new chunks (sorted): the rule of the module docs, in plain Python."""
    old_tokens = tokenize(old_texts)
    new_tokens = tokenize(new_texts)
    df: Counter[Hashable] = Counter()
    postings: dict[Hashable, list[int]] = {}
    for j, toks in enumerate(new_tokens):
        for g in shingles(toks):
            df[g] += 1
            postings.setdefault(g, []).append(j)
    olds: list[Text] = [(list(shingles(t)), len(t)) for t in old_tokens]
    cands = []
    for seq, n_tokens in olds:
        hits: Counter[int] = Counter(j for g in seq if df[g] <= MAX_DF for j in postings.get(g, ()))
        cands.append(sorted(j for j, r in hits.items() if _enough(r, n_tokens, len(new_tokens[j]))))
    news: dict[int, Text] = {j: (list(shingles(new_tokens[j])), len(new_tokens[j])) for c in cands for j in c}
    return olds, news, cands


def _tokens(texts: Any) -> tuple[Any, Any]:
    """The non-empty tokens of ``texts`` (one arrow string array) and each text's number of them.
    With the kernels, texts that are all ASCII are cut in C (the same tokens: ``_remap.ascii_tokens``); if
    any text is not, all of them go through arrow's Unicode rules."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    kern = _kernels()
    if kern is not None:
        arr = _string_array(texts)
        counts = np.empty(len(arr), dtype=np.int64)
        t_off, t_data = kern.ascii_tokens(*_buffers(arr), counts)
        if not len(counts) or counts.min() >= 0:
            flat = pa.StringArray.from_buffers(len(t_off) // 4 - 1, pa.py_buffer(t_off), pa.py_buffer(t_data))
            return flat, counts
    lists = _token_lists(texts)
    flat = pc.list_flatten(lists)
    parent = pc.list_parent_indices(lists).to_numpy()
    keep = pc.not_equal(flat, "")
    flat, parent = flat.filter(keep), parent[keep.to_numpy(zero_copy_only=False)]
    return flat, np.bincount(parent, minlength=len(lists)).astype(np.int64)


def _keys(ids: Any, counts: Any, V: int) -> tuple[Any, Any]:
    """Every shingle's integer key (``V`` token codes per place; ``V - 1`` pads a short text) and
    the text it belongs to, in text order."""
    import numpy as np

    n_texts = len(counts)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1])) if n_texts else np.zeros(0, dtype=np.int64)
    # shingle i of text t starts at token starts[t] + i; short texts get one padded shingle
    n_sh = np.where(counts >= SHINGLE, counts - SHINGLE + 1, (counts > 0).astype(np.int64))
    text_of = np.repeat(np.arange(n_texts, dtype=np.int64), n_sh)
    # where shingles start: every token but the last SHINGLE-1 of a text; a short text's first token
    starts_here = np.ones(len(ids), dtype=bool)
    long = counts >= SHINGLE
    for k in range(1, SHINGLE):
        starts_here[(starts + counts)[long] - k] = False
        starts_here[starts[~long & (counts > k)] + k] = False
    first = np.flatnonzero(starts_here)
    del starts_here
    pad = np.concatenate((ids, np.full(SHINGLE, V - 1, dtype=np.int64)))
    # the shingles of short texts, whose later tokens are the pad (not the next text's tokens)
    short_text = np.flatnonzero(~long & (counts > 0))
    short_at = (np.cumsum(n_sh) - n_sh)[short_text]
    short_len = counts[short_text]

    def part(k: int) -> Any:  # token k of every shingle (the pad past a short text's end)
        tok = pad[first + k]
        if k and len(short_at):
            tok[short_at[short_len <= k]] = V - 1
        return tok

    key = part(0)
    for k in range(1, SHINGLE):
        if V ** SHINGLE < _INT64_KEYS:
            key *= V
            key += part(k)
        else:  # too many distinct tokens for one int64: number the pairs first (still exact)
            _, key = np.unique(key * V + part(k), return_inverse=True)
            key = key.astype(np.int64).reshape(-1)
    return key, text_of


class _Arrays(NamedTuple):
    """:data:`Found` as flat arrays (numpy int64): text ``i``'s items are ``x[start[i]:start[i + 1]]``."""

    old_code: Any  # the old texts' shingles, in text order
    old_start: Any
    old_tokens: Any
    wanted: Any  # the candidate new texts (positions in the new corpus, ascending)
    new_code: Any  # their shingles
    new_start: Any
    new_tokens: Any
    cand_start: Any  # each old text's candidates, as positions in ``wanted``, ascending
    cand: Any


def candidates_fast(old_texts: Sequence[str | None], new_texts: Any, *, batch: int | None = None) -> Found:
    """:func:`candidates_reference` with shingles as integers, tokenised by arrow and indexed by
    numpy (see :func:`_candidate_arrays`). Same candidates; the shingles are integer codes instead of
    token tuples."""
    a = _candidate_arrays(old_texts, new_texts, batch=batch)
    olds = _split(a.old_code, a.old_start, a.old_tokens)
    news = _split(a.new_code, a.new_start, a.new_tokens)
    wanted = a.wanted.tolist()
    cand_j = a.wanted[a.cand].tolist() if len(a.cand) else []
    bounds = a.cand_start.tolist()
    cands = [cand_j[bounds[i]:bounds[i + 1]] for i in range(len(bounds) - 1)]
    return olds, dict(zip(wanted, news)), cands


def _split(codes: Any, start: Any, n_tokens: Any) -> list[Text]:
    """Flat shingle codes cut into one :data:`Text` per text."""
    flat, bounds = codes.tolist(), start.tolist()
    return [(flat[a:b], t) for a, b, t in zip(bounds, bounds[1:], n_tokens.tolist())]


def _csr(counts: Any) -> Any:
    """Start offsets (n + 1) of consecutive runs of the given lengths."""
    import numpy as np

    out = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=out[1:])
    return out


def _candidate_arrays(old_texts: Any, new_texts: Any, *, batch: int | None = None) -> _Arrays:
    """The candidate search of :func:`candidates_fast`, as arrays.

    Tokens are numbered by the old texts' vocabulary; a new token outside it gets one shared code
    (``foreign``), since a shingle holding it can equal no old shingle (two new shingles that differ
    only there get one code: that only loosens an upper bound the picking uses to skip candidates).
    The new corpus is read in batches of ``batch`` texts (default :data:`BATCH`), keeping only its
    shingles that are old shingles, so memory follows the batch and the labelled texts, not the
    corpus. (Past ~1.6M distinct old tokens the keys number token pairs, which needs every text at
    once: one batch.) With the compiled kernels the corpus is read in one pass instead, which keeps
    only the shingles found in old texts (:func:`_pairs_compiled`). The candidate new texts are
    tokenised again at the end for their own shingles."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    n_old = len(old_texts)
    if not isinstance(new_texts, (pa.Array, pa.ChunkedArray)):
        new_texts = pa.array(list(new_texts), pa.string())
    n_new = len(new_texts)
    o_flat, o_counts = _tokens(old_texts if isinstance(old_texts, (pa.Array, pa.ChunkedArray)) else list(old_texts))
    enc = o_flat.dictionary_encode()
    vocab = enc.dictionary
    V = len(vocab) + 2  # V - 2: a token the old texts do not have; V - 1: the pad
    foreign = V - 2
    whole = V ** SHINGLE >= _INT64_KEYS  # pair numbering: old and new texts must be keyed together
    old_ids = enc.indices.to_numpy().astype(np.int64)
    del o_flat, enc

    def codes(texts: Any) -> tuple[Any, Any]:
        flat, counts = _tokens(texts)
        ids = pc.index_in(flat, value_set=vocab).fill_null(foreign).to_numpy(zero_copy_only=False).astype(np.int64)
        return ids, counts

    batches: list[tuple[Any, Any]] = []
    if whole:
        new_ids, n_counts = codes(new_texts)
        key, text_of = _keys(np.concatenate((old_ids, new_ids)), np.concatenate((o_counts, n_counts)), V)
        is_old = text_of < n_old
        old_code, old_text = key[is_old], text_of[is_old]
        batches.append((key[~is_old], text_of[~is_old] - n_old))
        del key, text_of, is_old, new_ids
    else:
        old_code, old_text = _keys(old_ids, o_counts, V)
        n_counts = np.zeros(n_new, dtype=np.int64)
    del old_ids
    enc = pa.array(old_code, pa.int64()).dictionary_encode()  # the distinct old shingles (any order will do)
    uniq = enc.dictionary.to_numpy(zero_copy_only=False)
    old_inv = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    del enc
    # A bit table of the old shingles' hashes rules most new shingles out with one memory read each;
    # only those that pass are looked up in ``uniq``, by a hash join (a binary search over millions
    # of keys per shingle, at random places in memory, took most of the run at 1M chunks). Built when
    # first needed (the compiled scan has its own).
    bits = _HASH_BITS if len(uniq) > 1 << 16 else 20
    lookup: list[Any] = []  # the bit table and the arrow value set

    def found_in_old(new_code: Any, new_text: Any) -> tuple[Any, Any]:
        """The new shingles that are old shingles: their text, and their place in ``uniq``."""
        if not lookup:
            table = np.zeros(1 << bits, dtype=bool)
            table[_slot(uniq, bits)] = True
            lookup.extend((table, pa.array(uniq)))
        table, value_set = lookup
        maybe = np.flatnonzero(table[_slot(new_code, bits)])
        if not len(uniq) or not len(maybe):
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        pos = pc.index_in(pa.array(new_code[maybe]), value_set=value_set).fill_null(-1)
        pos = pos.to_numpy(zero_copy_only=False).astype(np.int64)
        ok = pos >= 0
        return new_text[maybe[ok]], pos[ok]

    kern = None if whole else _kernels()
    if kern is not None:  # the compiled scan: no batches (it keeps only the shingles found in old texts)
        pairs, n_counts = _pairs_compiled(kern, new_texts, vocab, V, uniq, old_inv, old_text, o_counts, codes,
                                          found_in_old, max(1, batch or BATCH))
    else:
        pairs = _pairs_batched(new_texts, V, uniq, old_inv, old_text, o_counts, n_counts, codes, found_in_old,
                               batches, whole, max(1, batch or BATCH))
    lookup.clear()  # the bit table's memory back (found_in_old is done)
    po, pn = pairs
    wanted = np.unique(pn)
    cand = np.searchsorted(wanted, pn)
    cand_start = _csr(np.bincount(po, minlength=n_old))
    old_start = _csr(np.bincount(old_text, minlength=n_old))
    # the candidate texts' own shingles, keyed as above
    if whole:  # pair numbers hold only within one keying: take them from it
        key, text_of = batches[0]
        mark = np.zeros(max(n_new, 1), dtype=bool)
        mark[wanted] = True
        sel = mark[text_of]
        new_code = key[sel]
        new_start = _csr(np.bincount(np.searchsorted(wanted, text_of[sel]), minlength=len(wanted)))
        new_tokens = n_counts[wanted]
    elif kern is not None:
        new_code, new_start, new_tokens = _own_shingles_compiled(kern, _string_array(new_texts).take(pa.array(wanted)),
                                                                 vocab, V, codes)
    else:
        ids, new_tokens = codes(new_texts.take(pa.array(wanted)))
        new_code, text_of = _keys(ids, new_tokens, V)
        new_start = _csr(np.bincount(text_of, minlength=len(wanted)))
    return _Arrays(old_code, old_start, o_counts, wanted, new_code, new_start, new_tokens, cand_start, cand)


def _pairs_batched(new_texts: Any, V: int, uniq: Any, old_inv: Any, old_text: Any, o_counts: Any, n_counts: Any,
                   codes: Any, found_in_old: Any, batches: list[tuple[Any, Any]], whole: bool, step: int
                   ) -> tuple[Any, Any]:
    """The candidate pairs, numpy and arrow only: the new corpus keyed ``step`` texts at a time (or
    already keyed, in ``batches``), each batch's shingles found among the old ones, then the hits on
    rare shingles joined with the old postings. Fills ``n_counts``."""
    import numpy as np

    n_new = len(n_counts)
    hit_text, hit_at = [], []
    for b0 in range(0, 0 if whole else n_new, step):
        ids, counts = codes(new_texts.slice(b0, min(step, n_new - b0)))
        n_counts[b0:b0 + len(counts)] = counts
        key, text_of = _keys(ids, counts, V)
        t, at = found_in_old(key, text_of + b0)
        hit_text.append(t)
        hit_at.append(at)
    for key, text_of in batches:
        t, at = found_in_old(key, text_of)
        hit_text.append(t)
        hit_at.append(at)
    df = np.zeros(len(uniq), dtype=np.int64)  # occurrences in the new corpus of each old shingle
    for at in hit_at:
        df += np.bincount(at, minlength=len(uniq))
    # join the hits with the old postings: the old positions of each distinct shingle lie together
    order = np.argsort(old_inv, kind="stable")
    ot = old_text[order]
    start = np.concatenate(([0], np.cumsum(np.bincount(old_inv, minlength=len(uniq)))))
    width = max(n_new, 1)
    found_old, found_new = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int64)]
    # batch by batch: the batches hold different new texts, so their (old, new) pairs never meet
    for f_text, f_at in zip(hit_text, hit_at):
        rare = df[f_at] <= MAX_DF
        h_at, h_new = f_at[rare], f_text[rare]
        lo, hi = start[h_at], start[h_at + 1]
        reps = hi - lo
        pair_old = ot[np.repeat(lo, reps) + (np.arange(int(reps.sum()), dtype=np.int64) - np.repeat(np.cumsum(reps) - reps, reps))]
        pairs, hits = np.unique(pair_old * width + np.repeat(h_new, reps), return_counts=True)
        del pair_old
        po, pn = pairs // width, pairs % width
        ok = _enough(hits, o_counts[po], n_counts[pn])
        found_old.append(po[ok])
        found_new.append(pn[ok])
    del hit_text, hit_at
    po, pn = np.concatenate(found_old), np.concatenate(found_new)
    order = np.lexsort((pn, po))  # by old text, then new text
    return po[order], pn[order]


def _pairs_compiled(kern: Any, new_texts: Any, vocab: Any, V: int, uniq: Any, old_inv: Any, old_text: Any,
                    o_counts: Any, codes: Any, found_in_old: Any, step: int) -> tuple[tuple[Any, Any], Any]:
    """:func:`_pairs_batched` with the kernels: one pass over the new corpus in C tokenises, keys and
    looks up every shingle of each ASCII text (``shingle_scan``), and ``pair_hits`` joins the rare
    ones with the old postings. Texts holding non-ASCII bytes are tokenised by arrow, as in the
    batched path, and join the same counts. Returns the pairs (old texts, new texts; sorted) and every
    new text's number of tokens."""
    import numpy as np
    import pyarrow as pa

    arr = _string_array(new_texts)
    n_new = len(arr)
    n_counts = np.empty(n_new, dtype=np.int64)
    found = np.empty(n_new, dtype=np.int64)
    df = np.zeros(len(uniq), dtype=np.int64)  # occurrences in the new corpus of each old shingle
    vocab_buffers = _buffers(vocab)
    hit_pos = np.frombuffer(kern.shingle_scan(*_buffers(arr), *vocab_buffers, V, uniq, n_counts, found, df),
                            dtype=np.int64)
    odd = np.flatnonzero(n_counts < 0)  # not ASCII: arrow's Unicode rules, as in the batched path
    others = []
    for b0 in range(0, len(odd), step):
        idx = odd[b0:b0 + step]
        ids, counts = codes(arr.take(pa.array(idx)))
        n_counts[idx] = counts
        t, at = found_in_old(*_keys(ids, counts, V))
        df += np.bincount(at, minlength=len(uniq))
        others.append((idx, np.bincount(t, minlength=len(idx)), at))
    rare = (df <= MAX_DF).view(np.uint8)

    def pairs(per_text: Any, at: Any, n_tokens: Any) -> tuple[Any, Any]:  # the rule of _enough, in C
        po, pn = kern.pair_hits(per_text, at, rare, old_inv, old_text, o_counts, n_tokens, SHINGLE, PIECE, PURE)
        return np.frombuffer(po, dtype=np.int64), np.frombuffer(pn, dtype=np.int64)

    parts = [pairs(found, hit_pos, n_counts)]
    del hit_pos
    for idx, per_text, at in others:
        po, pn = pairs(per_text, at, np.ascontiguousarray(n_counts[idx]))
        parts.append((po, idx[pn]))
    po, pn = (np.concatenate(x) for x in zip(*parts))
    order = np.lexsort((pn, po))
    return (po[order], pn[order]), n_counts


def _own_shingles_compiled(kern: Any, texts: Any, vocab: Any, V: int, codes: Any) -> tuple[Any, Any, Any]:
    """Every shingle of each text (flat, with start offsets) and each text's number of tokens, keyed by
    ``shingle_scan``, or by arrow and :func:`_keys` for texts that are not ASCII."""
    import numpy as np

    n_tokens = np.empty(len(texts), dtype=np.int64)
    per_text = np.empty(len(texts), dtype=np.int64)
    keys = np.frombuffer(kern.shingle_scan(*_buffers(texts), *_buffers(vocab), V, None, n_tokens, per_text, None),
                         dtype=np.int64)
    odd = np.flatnonzero(n_tokens < 0)
    if not len(odd):
        return keys, _csr(per_text), n_tokens
    import pyarrow as pa

    ids, counts = codes(texts.take(pa.array(odd)))
    key, text_of = _keys(ids, counts, V)
    n_tokens[odd] = counts
    per_odd = np.bincount(text_of, minlength=len(odd))
    per_text[odd] = per_odd
    start = _csr(per_text)
    flat = np.empty(int(start[-1]), dtype=np.int64)
    mine = np.ones(len(texts), dtype=bool)
    mine[odd] = False
    c_start = start[:-1][mine]  # the texts read in C, in order: their keys go to their own places
    c_count = per_text[mine]
    flat[np.repeat(c_start - _csr(c_count)[:-1], c_count) + np.arange(len(keys), dtype=np.int64)] = keys
    flat[np.repeat(start[odd] - _csr(per_odd)[:-1], per_odd) + np.arange(len(key), dtype=np.int64)] = key
    return flat, start, n_tokens


BATCH = 100_000  # new-corpus texts tokenised at once by candidates_fast
_HASH_BITS = 26
_INT64_KEYS = 2 ** 62  # below this many possible shingles, one int64 holds a shingle's tokens


def _slot(keys: Any, bits: int) -> Any:
    """A multiplicative hash of int64 keys into ``bits`` bits (a prefilter: equal keys, equal slots)."""
    import numpy as np

    with np.errstate(over="ignore"):
        return (keys.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(64 - bits)


@contextmanager
def _cycles_unchecked() -> Iterator[None]:
    """Pause Python's cycle collector (and restore it). Remapping builds a few hundred thousand
    small objects that hold no reference cycles, next to a gold set and two corpora already in
    memory: at 100k labels the collector's full passes over that heap took ~1 s and found nothing."""
    import gc

    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


# -- picking ---------------------------------------------------------------------------------------
def _pick(old_id: str, old_doc: str | None, old: Text, cands: list[int], news: dict[int, Text],
          new_ids: Mapping_[int, str], new_docs: Mapping_[int, str | None]) -> LabelRemap:
    if not old[0]:
        return LabelRemap(old_id, "unmapped", 0.0, (), (), "no words in its text")
    n_old = old[1]
    s_old = frozenset(old[0])
    sets = {j: frozenset(news[j][0]) for j in cands}
    shared = {j: len(s_old & sets[j]) for j in cands}
    # Cheap upper bounds on the tokens a candidate can carry (each shared shingle position covers at
    # most SHINGLE tokens) rule out most candidates without measuring them: they could never be picked.
    dup_old = len(old[0]) - len(s_old)
    viable = [j for j in cands if SHINGLE * (shared[j] + dup_old) >= PIECE * n_old
              or SHINGLE * (shared[j] + len(news[j][0]) - len(sets[j])) >= PURE * news[j][1]]
    covers = {j: covered(old, sets[j]) for j in viable}
    from_old = {j: covered(news[j], s_old) for j in viable}
    union: frozenset[Hashable] = frozenset()
    have = 0  # old tokens carried by the chunks picked so far
    picked: list[int] = []
    pool = [j for j in viable if covers[j] >= PIECE * n_old or from_old[j] >= PURE * news[j][1]]
    while pool and have < n_old:
        gains = {j: covered(old, union | sets[j]) - have for j in pool} if picked else {j: covers[j] for j in pool}
        j = max(pool, key=lambda c: (gains[c], new_docs[c] == old_doc, -c))
        g = gains[j]
        if g <= 0 or not (g >= PIECE * n_old or from_old[j] >= PURE * news[j][1]):
            break
        picked.append(j)
        union |= sets[j]
        have += g
        pool.remove(j)

    def measured(j: int) -> tuple[int, int, int, int]:
        cov = covers[j] if j in covers else covered(old, sets[j])
        return j, cov, from_old[j] if j in from_old else covered(news[j], s_old), news[j][1]

    others = sorted((j for j in cands if j not in picked), key=lambda c: (-shared[c], c))[:3]
    return _label(old_id, n_old, have, [measured(j) for j in sorted(picked)], [measured(j) for j in others], new_ids)


def _label(old_id: str, n_old: int, have: int, kept: list[tuple[int, int, int, int]],
           others: list[tuple[int, int, int, int]], new_ids: Mapping_[int, str] | Sequence[str]) -> LabelRemap:
    """The remap of one old chunk of ``n_old`` tokens, ``have`` of them carried by the ``kept`` new
    chunks (in new-corpus order); ``others`` are the best of the rest. Each chunk comes as (its place
    in the new corpus, old tokens it covers, its tokens that are old text, its tokens)."""
    carried = have / n_old
    maps = tuple(Mapping(new_ids[j], round(min(carried, max(c / n_old, f / t)), 4), round(c / n_old, 4), round(f / t, 4))
                 for j, c, f, t in kept)
    rejected = tuple(Mapping(new_ids[j], 0.0, round(c / n_old, 4), round(f / t, 4)) for j, c, f, t in others)
    if not maps:
        return LabelRemap(old_id, "unmapped", 0.0, (), rejected, "no new chunk carries its text")
    if len(maps) > 1:
        kind = "split"
    else:
        m = maps[0]
        if m.covers == 1 and m.from_old == 1:
            kind = "moved"
        elif m.covers >= 0.8 and m.from_old >= 0.8:
            kind = "edited"
        elif m.covers >= m.from_old:
            kind = "merged"
        else:
            kind = "partial"
    return LabelRemap(old_id, kind, round(carried, 4), maps, rejected)


def remap_gold(gold: GoldFile, old: CorpusManifest, new: CorpusManifest, *, min_confidence: float = 0.8,
               fast: bool = True, require_texts: bool = False) -> Remap:
    """Map every chunk the gold set labels (relevant and ``must_not_retrieve``) from ``old`` to ``new``
    (see module docs). ``fast=False`` finds candidates with the plain-Python reference.
    ``require_texts``: raise InputError when a labelled chunk needs its texts compared and the old
    or the new corpus holds no text at all (instead of calling every such chunk unmapped)."""
    with _cycles_unchecked():
        return _remap_gold(gold, old, new, min_confidence, fast, require_texts)


def _remap_gold(gold: GoldFile, old: CorpusManifest, new: CorpusManifest, min_confidence: float, fast: bool,
                require_texts: bool = False) -> Remap:
    import pyarrow as pa

    uses: Counter[str] = Counter()
    for q in gold.queries:
        uses.update(label.chunk_id for label in q.labels)
        uses.update(q.must_not_retrieve)
    out: dict[str, LabelRemap] = {}
    need: list[tuple[str, int]] = []  # (old id, index in old)
    labelled = list(uses)
    for cid, i, j in zip(labelled, old.positions(labelled).tolist(), new.positions(labelled).tolist()):
        if i < 0:
            out[cid] = LabelRemap(cid, "unmapped", 0.0, (), (), "not in the old corpus")
            continue
        if j >= 0:
            h_old, h_new = old.hash_at(i), new.hash_at(j)
            if h_old is not None and h_old == h_new:
                out[cid] = LabelRemap(cid, "unchanged", 1.0, (Mapping(cid, 1.0, 1.0, 1.0),))
                continue
        need.append((cid, i))
    for manifest, which in ((old, "old"), (new, "new")):
        if require_texts and need and not _has_text(manifest):
            raise InputError(f"is missing from every chunk: {len(need):,} labelled chunk(s) changed or moved, and "
                             "remap maps them by comparing the old and the new texts", path=manifest.source, field="text",
                             hint=f"give the {which} corpus with each chunk's text")
    kern = _kernels() if fast and need else None
    if kern is not None:
        new_texts = new._texts.array if hasattr(new._texts, "array") else pa.array(list(new._texts), pa.string())
        out.update(_pick_compiled(kern, need, old._texts_taken([i for _, i in need]), new_texts, old, new))
        need = []
    texts = [old.text_at(i) for _, i in need]
    if need:
        new_texts = new._texts.array if hasattr(new._texts, "array") else pa.array(list(new._texts), pa.string())
        find = candidates_fast if fast else candidates_reference
        olds, news, cands = find(texts, new_texts if fast else new_texts.to_pylist())
        wanted = sorted(news)
        docs = dict(zip(wanted, new.take("doc_ids", wanted)))
        ids = dict(zip(wanted, new.take("chunk_ids", wanted)))
        old_docs = old.take("doc_ids", [i for _, i in need])
        for (cid, _), text, o, c, doc in zip(need, texts, olds, cands, old_docs):
            if text is None:
                out[cid] = LabelRemap(cid, "unmapped", 0.0, (), (), "the old corpus has no text for it")
                continue
            out[cid] = _pick(cid, doc, o, c, news, ids, docs)
    ordered = {cid: out[cid] for cid in uses}
    return Remap(gold.path, old.source, new.source, min_confidence, ordered, dict(uses))


def _has_text(manifest: CorpusManifest) -> bool:
    texts = manifest._texts
    if hasattr(texts, "array"):
        return bool(texts.array.null_count < len(texts.array))
    return any(t is not None for t in texts)


def _pick_compiled(kern: Any, need: list[tuple[str, int]], texts: Any, new_texts: Any,
                   old: CorpusManifest, new: CorpusManifest) -> dict[str, LabelRemap]:
    """:func:`_pick` for every old chunk in ``need`` at once (``texts``: theirs, an arrow string
    array), by the kernel ``pick_greedy`` on the arrays of :func:`_candidate_arrays` (the same rule;
    the tests compare the two)."""
    import numpy as np

    a = _candidate_arrays(texts, new_texts)
    wanted = a.wanted.tolist()
    ids = new.take("chunk_ids", wanted)  # by position in wanted
    docs = new.take("doc_ids", wanted)
    old_docs = old.take("doc_ids", [i for _, i in need])
    cand, bounds = a.cand.tolist(), a.cand_start.tolist()
    per_old = np.repeat(np.arange(len(need), dtype=np.int64), np.diff(a.cand_start)).tolist()
    same_doc = np.array([docs[w] == old_docs[o] for o, w in zip(per_old, cand)], dtype=np.uint8)
    n = len(cand)
    shared, covers, from_old, picked = (np.zeros(n, dtype=np.int64) for _ in range(4))
    have = np.zeros(len(need), dtype=np.int64)
    kern.pick_greedy(a.old_code, a.old_start, a.old_tokens, a.new_code, a.new_start, a.new_tokens, a.cand_start,
                     a.cand, a.cand, same_doc, SHINGLE, PIECE, PURE, shared, covers, from_old, picked, have)
    shared_l, covers_l, from_l, picked_l = shared.tolist(), covers.tolist(), from_old.tolist(), picked.tolist()
    new_tokens, old_tokens = a.new_tokens.tolist(), a.old_tokens.tolist()
    n_shingles = np.diff(a.old_start).tolist()
    out: dict[str, LabelRemap] = {}
    missing = texts.is_null().to_pylist()
    for o, ((cid, _), no_text) in enumerate(zip(need, missing)):
        if no_text:
            out[cid] = LabelRemap(cid, "unmapped", 0.0, (), (), "the old corpus has no text for it")
            continue
        if not n_shingles[o]:
            out[cid] = LabelRemap(cid, "unmapped", 0.0, (), (), "no words in its text")
            continue
        mine = range(bounds[o], bounds[o + 1])
        kept = [(cand[p], covers_l[p], from_l[p], new_tokens[cand[p]]) for p in mine if picked_l[p]]
        rest = sorted((p for p in mine if not picked_l[p]), key=lambda p: (-shared_l[p], cand[p]))[:3]
        others = [(cand[p], covers_l[p], from_l[p], new_tokens[cand[p]]) for p in rest]
        out[cid] = _label(cid, old_tokens[o], int(have[o]), kept, others, ids)
    return out


# -- the proposed gold set ---------------------------------------------------------------------------
def propose(records: Sequence[dict[str, Any]], gold: GoldFile, remap: Remap
            ) -> tuple[list[dict[str, Any]], int, list[tuple[str, str]]]:
    """The gold records with the applied mappings (see module docs), how many queries changed, and
    the ``(query id, chunk id)`` of must-not-retrieve entries that landed on a relevant chunk of their
    query (kept in both lists, for a person to decide).

    A changed query's judged items are written as ``relevant_chunks`` objects (``chunk_id``, ``grade``,
    ``note``, and for a remapped item ``remapped_from`` and ``confidence``); its ``remap`` field lists
    each old chunk that moved (``from``, ``to``, ``kind``, ``confidence``). Unchanged queries are
    copied as they are; every other field is kept in its place."""
    with _cycles_unchecked():
        return _propose(records, gold, remap)


def _propose(records: Sequence[dict[str, Any]], gold: GoldFile, remap: Remap
             ) -> tuple[list[dict[str, Any]], int, list[tuple[str, str]]]:
    from rankgate.io.jsonl import QUERY_ID_KEYS, RELEVANT_KEYS

    by_id = {q.query_id: q for q in gold.queries}
    applied = {cid: r.applied(remap.min_confidence) for cid, r in remap.labels.items() if r.kind != "unchanged"}
    out: list[dict[str, Any]] = []
    changed = 0
    conflicts: list[tuple[str, str]] = []
    for obj in records:
        key = next((k for k in QUERY_ID_KEYS if k in obj), None)
        q = None if key is None else by_id.get(str(obj[key]))
        moves = {} if q is None else {cid: ms for cid in [lab.chunk_id for lab in q.labels] + list(q.must_not_retrieve)
                                      if (ms := applied.get(cid))}
        if q is None or not moves:
            out.append(obj)
            continue
        changed += 1
        relevant: dict[str, dict[str, Any]] = {}
        for lab in q.labels:
            for m in moves.get(lab.chunk_id) or (None,):
                cid = lab.chunk_id if m is None else m.chunk_id
                item: dict[str, Any] = {"chunk_id": cid, "grade": lab.grade}
                if lab.note is not None:
                    item["note"] = lab.note
                if m is not None:
                    item |= {"remapped_from": lab.chunk_id, "confidence": m.confidence}
                have = relevant.get(cid)
                if have is None:
                    relevant[cid] = item
                    continue
                have["grade"] = max(have["grade"], lab.grade)  # two labels landed on one chunk
                notes = [n for n in (have.get("note"), lab.note) if n]
                if notes:
                    have["note"] = "; ".join(dict.fromkeys(notes))
                if m is not None:
                    have["remapped_from"] = "; ".join(dict.fromkeys(filter(None, (have.get("remapped_from"),
                                                                                  lab.chunk_id))))
        must_not: list[str] = []
        for cid in q.must_not_retrieve:
            for new_id in [m.chunk_id for m in moves.get(cid) or ()] or [cid]:
                if new_id not in must_not:
                    must_not.append(new_id)
                    if new_id in relevant:
                        conflicts.append((q.query_id, new_id))
        row: dict[str, Any] = {}
        for key, value in obj.items():
            if key in RELEVANT_KEYS:
                row["relevant_chunks"] = list(relevant.values())
            elif key == "must_not_retrieve":
                row[key] = must_not
            else:
                row[key] = value
        if must_not and "must_not_retrieve" not in row:
            row["must_not_retrieve"] = must_not
        row["remap"] = [{"from": cid, "to": [m.chunk_id for m in ms], "kind": remap.labels[cid].kind,
                         "confidence": min(m.confidence for m in ms)} for cid, ms in moves.items()]
        out.append(row)
    return out, changed, conflicts
