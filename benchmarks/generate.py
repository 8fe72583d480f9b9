"""Seeded synthetic gold sets and runs for the benchmark, in TREC, JSONL and Parquet.

Only the standard library, numpy and pyarrow are used, so the data does not depend on rankgate or on
any tool being measured. The same parameters and seed always give byte-identical files; files that
already exist for the same parameters are reused (each dataset lives in a directory named after a hash
of its parameters, and every file is written to a temporary name and renamed when complete).

Datasets
  graded ("1k", "10k", "100k", "300k", "1m"): N queries x 100 retrieved docs, 5-20 judged docs per query graded 0-3
    (at least one grade >= 1, so every query counts for every tool), some judged docs retrieved and
    some not; higher grades are retrieved more often and nearer the top.
  msmarco: 7,000 queries x 1,000 retrieved docs, binary relevance with 1-2 relevant docs per query
    (qrels list positives only, as MS MARCO's do); about 85% of them retrieved.
Scores are decimals with 4 places (written identically in every format, so TREC, JSONL and Parquet
hold the same float64 values); about 3% of rows tie with the row above. Run rows are grouped by query
and score-descending, in the order the "system" produced them, which inside a tie is not the doc-id
order trec_eval ranks by; "run.shuffled.trec" holds the same lines in random order.
"""

from __future__ import annotations

import hashlib
import json
import os
import zlib
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

GENERATOR_VERSION = 1
SEED = 20260501
TIE_RATE = 0.03
SCORE_SCALE = 10_000  # scores are integer ticks / 10_000: exactly 4 decimals in every format
RUN_TAG = "bench"

# file name of every output, by format; "trec-shuffled" shares the qrels of "trec"
FILES = {
    "trec": ("qrels.trec", "run.trec"),
    "trec-shuffled": ("qrels.trec", "run.shuffled.trec"),
    "trec-untied": ("qrels.trec", "run.untied.trec"),
    "jsonl": ("gold.jsonl", "run.jsonl"),
    "jsonl-logged": ("gold.jsonl", "run.logged.jsonl"),
    "parquet": ("gold.parquet", "run.parquet"),
    "jsonl-texts": ("gold.texts.jsonl", "run.texts.jsonl"),
}
CONTROL = "trec-untied"
TEXTS = "jsonl-texts"  # for the report benchmark (report_cost.py): texts make the report's examples real
FORMATS = tuple(f for f in FILES if f not in (CONTROL, TEXTS))  # the benchmarked formats


@dataclass(frozen=True)
class Spec:
    name: str
    kind: str  # "graded" | "msmarco"
    n_queries: int
    docs_per_query: int

    @property
    def rows(self) -> int:
        return self.n_queries * self.docs_per_query


SPECS = {
    "1k": Spec("1k", "graded", 1_000, 100),
    "10k": Spec("10k", "graded", 10_000, 100),
    "100k": Spec("100k", "graded", 100_000, 100),
    "300k": Spec("300k", "graded", 300_000, 100),  # scaling runs (1m: the 10^8-row, block-by-block case)
    "1m": Spec("1m", "graded", 1_000_000, 100),
    "msmarco": Spec("msmarco", "msmarco", 7_000, 1_000),
}


@dataclass
class Tables:
    """The generated data as flat numpy columns (run rows in file order)."""

    run_q: np.ndarray  # query index per run row
    run_doc: np.ndarray  # doc number per run row
    run_rank: np.ndarray  # 1-based rank as the system wrote it
    run_ticks: np.ndarray  # score * SCORE_SCALE
    gold_q: np.ndarray
    gold_doc: np.ndarray
    gold_grade: np.ndarray
    n_queries: int
    doc_digits: int


def dataset_dir(root: Path, spec: Spec) -> Path:
    params = {**asdict(spec), "seed": SEED, "version": GENERATOR_VERSION, "tie_rate": TIE_RATE}
    digest = hashlib.sha1(json.dumps(params, sort_keys=True).encode()).hexdigest()[:10]
    return root / f"{spec.name}-{digest}"


def paths(root: Path, spec: Spec, fmt: str) -> tuple[Path, Path]:
    d = dataset_dir(root, spec)
    gold, run = FILES[fmt]
    return d / gold, d / run


def ensure(root: Path, spec: Spec, formats: list[str], log=print) -> Path:
    """Make sure the files of `formats` exist for `spec`; generate only what is missing."""
    d = dataset_dir(root, spec)
    wanted = {p for fmt in formats for p in paths(root, spec, fmt)}
    missing = sorted(p for p in wanted if not p.exists())
    if not missing:
        return d
    d.mkdir(parents=True, exist_ok=True)
    params = {**asdict(spec), "seed": SEED, "version": GENERATOR_VERSION, "tie_rate": TIE_RATE}
    (d / "params.json").write_text(json.dumps(params, indent=2, sort_keys=True) + "\n")
    log(
        f"generating {spec.name} ({spec.n_queries:,} queries x {spec.docs_per_query} docs): "
        + ", ".join(p.name for p in missing)
    )
    t = make_tables(spec)
    writers = {
        "qrels.trec": write_trec_qrels,
        "run.trec": write_trec_run,
        "run.shuffled.trec": write_trec_run_shuffled,
        "run.untied.trec": write_trec_run_untied,
        "gold.jsonl": write_jsonl_gold,
        "run.jsonl": write_jsonl_run,
        "run.logged.jsonl": write_jsonl_run_logged,
        "gold.parquet": write_parquet_gold,
        "run.parquet": write_parquet_run,
        "gold.texts.jsonl": write_jsonl_gold_texts,
        "run.texts.jsonl": write_jsonl_run_texts,
    }
    for p in missing:
        tmp = p.with_name(p.name + ".tmp")
        writers[p.name](t, tmp)
        os.replace(tmp, p)
    return d


# ---------------------------------------------------------------------------------------------------
# the numbers


def _rng(spec: Spec) -> np.random.Generator:
    return np.random.default_rng([SEED, zlib.crc32(spec.name.encode())])


def _unique_rows(rng: np.random.Generator, nrows: int, ncols: int, high: int) -> np.ndarray:
    """Random ids, distinct within each row (rows with a collision are drawn again)."""
    ids = rng.integers(0, high, size=(nrows, ncols))
    while True:
        s = np.sort(ids, axis=1)
        bad = np.flatnonzero((s[:, 1:] == s[:, :-1]).any(axis=1))
        if bad.size == 0:
            return ids
        ids[bad] = rng.integers(0, high, size=(bad.size, ncols))


def make_tables(spec: Spec) -> Tables:
    rng = _rng(spec)
    nq, depth = spec.n_queries, spec.docs_per_query
    if spec.kind == "graded":
        max_judged, doc_digits = 20, 6
        n_judged = rng.integers(5, max_judged + 1, size=nq)
        grades = rng.choice(4, p=[0.4, 0.3, 0.2, 0.1], size=(nq, max_judged))
        judged = np.arange(max_judged)[None, :] < n_judged[:, None]
        no_rel = ~((grades >= 1) & judged).any(axis=1)
        grades[no_rel, 0] = rng.integers(1, 4, size=int(no_rel.sum()))
        p_retrieved = np.array([0.5, 0.55, 0.7, 0.85])[grades]
        top_bias = np.array([1.5, 2.0, 3.0, 4.0])[grades]
        top_score = rng.integers(15 * SCORE_SCALE, 40 * SCORE_SCALE, size=nq)
    else:
        max_judged, doc_digits = 2, 7
        n_judged = 1 + (rng.random(nq) < 0.07)
        grades = np.ones((nq, max_judged), dtype=np.int64)
        judged = np.arange(max_judged)[None, :] < n_judged[:, None]
        p_retrieved = np.full((nq, max_judged), 0.85)
        top_bias = np.full((nq, max_judged), 4.0)
        top_score = rng.integers(20 * SCORE_SCALE, 30 * SCORE_SCALE, size=nq)

    ids = _unique_rows(rng, nq, max_judged + depth, 10**doc_digits)
    retrieved = judged & (rng.random((nq, max_judged)) < p_retrieved)
    n_fill = depth - retrieved.sum(axis=1)
    fill = np.arange(depth)[None, :] < n_fill[:, None]
    include = np.concatenate([retrieved, fill], axis=1)
    # rank order: judged docs drawn towards the top (more so for higher grades), fillers uniform
    priority = rng.random((nq, max_judged + depth))
    priority[:, :max_judged] **= top_bias
    priority[~include] = 2.0
    order = np.argsort(priority, axis=1, kind="stable")[:, :depth]
    run_doc = np.take_along_axis(ids, order, axis=1)

    # scores descend by random gaps; a gap of 0 makes a tie with the row above
    mean_gap = 10 * SCORE_SCALE / depth
    gaps = rng.geometric(1.0 / mean_gap, size=(nq, depth))
    gaps[rng.random((nq, depth)) < TIE_RATE] = 0
    gaps[:, 0] = 0
    ticks = top_score[:, None] - np.cumsum(gaps, axis=1)
    assert ticks.min() > 0

    gq, gj = np.nonzero(judged)
    return Tables(
        run_q=np.repeat(np.arange(nq), depth),
        run_doc=run_doc.ravel(),
        run_rank=np.tile(np.arange(1, depth + 1), nq),
        run_ticks=ticks.ravel(),
        gold_q=gq,
        gold_doc=ids[gq, gj],
        gold_grade=grades[gq, gj].astype(np.int64),
        n_queries=nq,
        doc_digits=doc_digits,
    )


# ---------------------------------------------------------------------------------------------------
# text columns (pyarrow string kernels: the 10M-row files take seconds, not minutes)


def _zero_pad(values: np.ndarray, width: int) -> pa.Array:
    return pc.utf8_lpad(pc.cast(pa.array(values), pa.string()), width=width, padding="0")


def _query_ids(t: Tables, q: np.ndarray) -> pa.Array:
    return pc.take(pc.binary_join_element_wise("q", _zero_pad(np.arange(1, t.n_queries + 1), 6), ""), q)


def _doc_ids(t: Tables, docs: np.ndarray) -> pa.Array:
    return pc.binary_join_element_wise("d", _zero_pad(docs, t.doc_digits), "")


def _scores(ticks: np.ndarray) -> pa.Array:
    whole = pc.cast(pa.array(ticks // SCORE_SCALE), pa.string())
    return pc.binary_join_element_wise(whole, _zero_pad(ticks % SCORE_SCALE, 4), ".")


def _write(f, lines: pa.Array) -> None:
    """Append a string array whose values end in '\\n' to `f`, straight from its data buffer."""
    offsets = np.frombuffer(lines.buffers()[1], dtype=np.int32, count=len(lines) + 1, offset=lines.offset * 4)
    f.write(memoryview(lines.buffers()[2])[offsets[0] : offsets[-1]])


def _query_blocks(n_queries: int, per_query: int, target_rows: int = 2_000_000):
    """Query ranges of about `target_rows` rows: keeps every string array far below 2 GB."""
    step = max(1, target_rows // per_query)
    for lo in range(0, n_queries, step):
        yield lo, min(n_queries, lo + step)


def _write_trec_run(t: Tables, path: Path, order: np.ndarray) -> None:
    with open(path, "wb") as f:
        for lo in range(0, order.size, 2_000_000):
            rows = order[lo : lo + 2_000_000]
            _write(
                f,
                pc.binary_join_element_wise(
                    _query_ids(t, t.run_q[rows]),
                    "Q0",
                    _doc_ids(t, t.run_doc[rows]),
                    pc.cast(pa.array(t.run_rank[rows]), pa.string()),
                    _scores(t.run_ticks[rows]),
                    RUN_TAG + "\n",
                    " ",
                ),
            )


def write_trec_run(t: Tables, path: Path) -> None:
    _write_trec_run(t, path, np.arange(t.run_q.size))


def write_trec_run_shuffled(t: Tables, path: Path) -> None:
    perm = np.random.default_rng([SEED, t.run_q.size]).permutation(t.run_q.size)
    _write_trec_run(t, path, perm)


def write_trec_run_untied(t: Tables, path: Path) -> None:
    depth = t.run_q.size // t.n_queries
    untied = Tables(**{**t.__dict__, "run_ticks": (depth + 1 - t.run_rank) * SCORE_SCALE})
    _write_trec_run(untied, path, np.arange(t.run_q.size))


def write_trec_qrels(t: Tables, path: Path) -> None:
    grades = pc.cast(pa.array(t.gold_grade), pa.string())
    with open(path, "wb") as f:
        _write(
            f,
            pc.binary_join_element_wise(
                _query_ids(t, t.gold_q),
                "0",
                _doc_ids(t, t.gold_doc),
                pc.binary_join_element_wise(grades, "\n", ""),
                " ",
            ),
        )


def _json_lines(qids: pa.Array, counts: np.ndarray, entries: pa.Array, key: str) -> pa.Array:
    """One object per query, `{"query_id": ..., key: [entries]}`; entries grouped by query, `counts` each."""
    offsets = pa.array(np.concatenate([[0], np.cumsum(counts)]).astype(np.int32))
    joined = pc.binary_join(pa.ListArray.from_arrays(offsets, entries), ", ")
    return pc.binary_join_element_wise('{"query_id": "', qids, f'", "{key}": [', joined, "]}\n", "")


def write_jsonl_run(t: Tables, path: Path, *, logged: bool = False) -> None:
    """``{"query_id", "topk": [{"chunk_id", "score"}]}`` per query; ``logged``: as DESIGN.md's run line
    writes it (texts aside), each item's rank before its id, and what a retriever logs per query
    (``latency_ms`` per stage, ``index_version``) after the list."""
    depth = t.run_q.size // t.n_queries
    with open(path, "wb") as f:
        for lo, hi in _query_blocks(t.n_queries, depth):
            rows = slice(lo * depth, hi * depth)
            rank = ['{"rank": ', pa.array(np.tile(np.arange(1, depth + 1), hi - lo)).cast(pa.string()),
                    ', "chunk_id": "'] if logged else ['{"chunk_id": "']
            entries = pc.binary_join_element_wise(
                *rank, _doc_ids(t, t.run_doc[rows]), '", "score": ', _scores(t.run_ticks[rows]), "}", ""
            )
            counts = np.full(hi - lo, depth)
            lines = _json_lines(_query_ids(t, np.arange(lo, hi)), counts, entries, "topk")
            if logged:
                q = np.arange(lo, hi)
                lines = pc.binary_join_element_wise(
                    pc.utf8_slice_codeunits(lines, 0, -2),  # (before the closing "}\n")
                    ', "latency_ms": {"retrieve": ', pa.array(20 + q * 7 % 41).cast(pa.string()),
                    ', "rerank": ', pa.array((q * 13 % 97) / 4).cast(pa.string()),
                    '}, "index_version": "v2026_11_01"}\n', "",
                )
            _write(f, lines)


def write_jsonl_run_logged(t: Tables, path: Path) -> None:
    write_jsonl_run(t, path, logged=True)


def write_jsonl_gold(t: Tables, path: Path) -> None:
    """Every judged doc, grade-0 ones included (they say "judged, not relevant")."""
    entries = pc.binary_join_element_wise(
        '{"chunk_id": "',
        _doc_ids(t, t.gold_doc),
        '", "grade": ',
        pc.cast(pa.array(t.gold_grade), pa.string()),
        "}",
        "",
    )
    counts = np.bincount(t.gold_q, minlength=t.n_queries)
    with open(path, "wb") as f:
        _write(f, _json_lines(_query_ids(t, np.arange(t.n_queries)), counts, entries, "relevant_chunks"))


_WORDS = np.array("retrieval ranking index chunk query answer document vector lexical dense rerank corpus token "
                  "embedding passage score cutoff recall precision gold label release gate segment".split())


def _texts(numbers: np.ndarray, words: int, salt: int) -> pa.Array:
    """A deterministic sentence per number (``words`` words chosen by a hash of the number)."""
    h = (numbers.astype(np.uint64)[:, None] * np.uint64(0x9E3779B97F4A7C15) + np.uint64(salt)
         + np.arange(words, dtype=np.uint64)[None, :] * np.uint64(0xBF58476D1CE4E5B9))
    picks = (h >> np.uint64(33)) % np.uint64(_WORDS.size)
    cols = [pa.array(_WORDS[picks[:, j].astype(np.int64)]) for j in range(words)]
    return pc.binary_join_element_wise(*cols, " ")


def write_jsonl_run_texts(t: Tables, path: Path) -> None:
    """The JSONL run with each item's text (about 30 words), as a RAG pipeline logs its retrievals."""
    depth = t.run_q.size // t.n_queries
    with open(path, "wb") as f:
        for lo, hi in _query_blocks(t.n_queries, depth):
            rows = slice(lo * depth, hi * depth)
            entries = pc.binary_join_element_wise(
                '{"chunk_id": "',
                _doc_ids(t, t.run_doc[rows]),
                '", "score": ',
                _scores(t.run_ticks[rows]),
                ', "text": "',
                _texts(t.run_doc[rows], 30, 1),
                '"}',
                "",
            )
            counts = np.full(hi - lo, depth)
            qids = _query_ids(t, np.arange(lo, hi))
            offsets = pa.array(np.concatenate([[0], np.cumsum(counts)]).astype(np.int32))
            joined = pc.binary_join(pa.ListArray.from_arrays(offsets, entries), ", ")
            _write(f, pc.binary_join_element_wise('{"query_id": "', qids, '", "query": "',
                                                  _texts(np.arange(lo, hi), 8, 2), '", "topk": [', joined, "]}\n", ""))


def write_jsonl_gold_texts(t: Tables, path: Path) -> None:
    """The JSONL gold set with a query text and an intent (a segment field) per query."""
    entries = pc.binary_join_element_wise(
        '{"chunk_id": "', _doc_ids(t, t.gold_doc), '", "grade": ', pc.cast(pa.array(t.gold_grade), pa.string()), "}", "")
    q = np.arange(t.n_queries)
    counts = np.bincount(t.gold_q, minlength=t.n_queries)
    offsets = pa.array(np.concatenate([[0], np.cumsum(counts)]).astype(np.int32))
    joined = pc.binary_join(pa.ListArray.from_arrays(offsets, entries), ", ")
    intents = pa.array(np.array(["lookup", "howto", "compare", "debug"])[q % 4])
    with open(path, "wb") as f:
        _write(f, pc.binary_join_element_wise('{"query_id": "', _query_ids(t, q), '", "query": "', _texts(q, 8, 2),
                                              '", "intent": "', intents, '", "relevant_chunks": [', joined, "]}\n", ""))


def write_parquet_run(t: Tables, path: Path) -> None:
    table = pa.table(
        {
            "query_id": _query_ids(t, t.run_q),
            "chunk_id": _doc_ids(t, t.run_doc),
            "score": pa.array(t.run_ticks / SCORE_SCALE, pa.float64()),
        }
    )
    pq.write_table(table, path, write_page_checksum=True)


def write_parquet_gold(t: Tables, path: Path) -> None:
    table = pa.table(
        {
            "query_id": _query_ids(t, t.gold_q),
            "chunk_id": _doc_ids(t, t.gold_doc),
            "grade": pa.array(t.gold_grade, pa.int64()),
        }
    )
    pq.write_table(table, path, write_page_checksum=True)
