"""Parquet long tables: query ids read dictionary-encoded, in order of first appearance either way."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rankgate.io.parquet import _query_codes, read_parquet_gold, read_parquet_run


def _dictionary_column(chunks: list[tuple[list[int], list[str]]]) -> pa.Table:
    arrays = [pa.DictionaryArray.from_arrays(pa.array(idx, pa.int32()), pa.array(values)) for idx, values in chunks]
    return pa.table({"query_id": pa.chunked_array(arrays)})


@pytest.mark.parametrize(
    "chunks",
    [
        [([0, 0, 1, 1, 2], ["a", "b", "c"])],  # the usual: first-appearance order
        [([2, 2, 0, 1, 0], ["a", "b", "c"])],  # another order
        [([1, 1, 3], ["x", "b", "y", "c"])],  # unused values
        [([0, 1], ["a", "b"]), ([1, 0, 2], ["c", "a", "d"])],  # row groups with their own dictionaries
    ],
)
def test_query_codes_follow_first_appearance(chunks) -> None:
    table = _dictionary_column(chunks)
    rows = [values[i] for idx, values in chunks for i in idx]
    want_ids = list(dict.fromkeys(rows))
    qids, codes = _query_codes(table, "query_id", "t.parquet")
    assert qids == want_ids
    assert [qids[c] for c in codes.tolist()] == rows


def test_parquet_files_read_as_their_trec_copies(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    q = [f"q{i}" for i in rng.integers(0, 40, 500)]
    d = [f"d{i}" for i in rng.integers(0, 90, 500)]
    pq.write_table(pa.table({"query_id": q, "chunk_id": d, "score": rng.random(500)}), tmp_path / "run.parquet",
                   row_group_size=64)
    pairs = sorted({(a, b) for a, b in zip(q, d)})
    pq.write_table(pa.table({"query_id": [p[0] for p in pairs], "chunk_id": [p[1] for p in pairs],
                             "grade": rng.integers(0, 3, len(pairs))}), tmp_path / "gold.parquet", row_group_size=50)
    run = read_parquet_run(str(tmp_path / "run.parquet"))
    assert run.query_ids == list(dict.fromkeys(q))
    assert [run.query_ids[c] for c in run.r_query.tolist()] == q
    assert run.r_doc.to_pylist() == d
    gold = read_parquet_gold(str(tmp_path / "gold.parquet"))
    assert [gold.query_ids[c] for c in gold.j_query.tolist()] == [p[0] for p in pairs]
    # integer query ids are not dictionary-read; they become text
    pq.write_table(pa.table({"query_id": [int(x[1:]) for x in q], "chunk_id": d, "score": rng.random(500)}),
                   tmp_path / "int.parquet")
    assert read_parquet_run(str(tmp_path / "int.parquet")).query_ids == [x[1:] for x in dict.fromkeys(q)]


def test_reading_parquet_keeps_pandas_out(tmp_path: Path) -> None:
    pq.write_table(pa.table({"query_id": ["q1"], "chunk_id": ["d1"], "score": [1.0]}), tmp_path / "run.parquet")
    code = (f"import sys\nfrom rankgate.io.parquet import read_parquet_run\nread_parquet_run({str(tmp_path / 'run.parquet')!r})\n"
            "print('pandas' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def _damaged(path: Path, table: pa.Table) -> Path:
    """``table`` written with page checksums, then 64 bytes in the middle of its last column's values
    zeroed: the file still parses, and without the checksums it reads as other values."""
    pq.write_table(table, path, write_page_checksum=True, compression="none", use_dictionary=False)
    col = pq.ParquetFile(path).metadata.row_group(0).column(table.num_columns - 1)
    at = (col.dictionary_page_offset or col.data_page_offset) + col.total_compressed_size // 2
    data = bytearray(path.read_bytes())
    data[at:at + 64] = bytes(64)
    path.write_bytes(bytes(data))
    assert not pq.read_table(path).equals(table)  # read without the checksums: silently other values
    return path


def test_a_damaged_parquet_file_is_refused_not_read_as_other_numbers(tmp_path: Path, capsys) -> None:
    """Bytes changed after writing: pyarrow reads them as other scores unless the page checksums are
    checked, so every pyarrow reader checks them and the command names the file (exit 2, no output)."""
    from rankgate.corpus import load_manifest
    from rankgate.errors import InputError

    from .hostile import assert_refused

    n = 2000
    run = pa.table({"query_id": [f"q{i % 50}" for i in range(n)], "chunk_id": [f"d{i}" for i in range(n)],
                    "score": np.linspace(1.0, 0.0, n)})
    gold = tmp_path / "gold.jsonl"
    gold.write_text('{"query_id": "q1", "relevant_chunks": [{"chunk_id": "d1", "grade": 1}]}\n')
    bad = _damaged(tmp_path / "run.parquet", run)
    with pytest.raises(OSError, match="CRC"):  # the damage is real: pyarrow itself sees it when asked
        pq.read_table(bad, page_checksum_verification=True)
    out = tmp_path / "out"
    err = assert_refused(["evaluate", "--gold", str(gold), "--run", str(bad), "--out", str(out)], out,
                         names=[str(bad)], capsys=capsys)
    assert "is damaged: a page's checksum does not match its data" in err
    corpus = _damaged(tmp_path / "corpus.parquet", pa.table({"chunk_id": [f"d{i}" for i in range(n)],
                                                            "doc_id": [f"doc{i}" for i in range(n)],
                                                            "text": [f"text {i} " + "x" * 500 for i in range(n)]}))
    with pytest.raises(InputError, match="is damaged"):
        load_manifest(str(corpus))
