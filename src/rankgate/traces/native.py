"""Items of rankgate trace Parquet files, left in the file for DuckDB to read in place.

A million requests with 35 retrieved items each are 35M item rows: as Arrow tables in this process
they cost about 3 GB and most of the reading time (DuckDB decodes the nested ``retrieved`` column
in about a second; turning it into Arrow strings takes five). When the analysis runs on DuckDB, the
reader (:func:`rankgate.traces.formats.jsonl.read_files` with ``engine_items``) therefore converts
only the request-level columns (``requests``, ``citations``, ``feedback``, through
:func:`rankgate.traces.columnar.convert`, as always) and describes the items with an
:class:`ItemSource`: the file, and one pass of checks over its items (:func:`read_items`: the items
decoded once with pyarrow and kept as compact columns, :mod:`.item_columns`, from which the analysis
takes every per-request aggregate; else made in DuckDB, :func:`check`). The analysis
then reads ``items`` as a view over the file (:func:`items_select`), which gives exactly the rows
:func:`~rankgate.traces.columnar.convert` would have built.

Exactly, because both start from DuckDB's reading of the same file, and every rule the columnar path
applies to items is checked here on the same values (:func:`inspect`): a stage in
:data:`~.model.STAGES`, a non-empty id, a rank in 1..2^31-1 (or none: the input position within the
request and stage), a finite score, an item status in :data:`~.model.ITEM_STATUSES` after ``''``
reads as missing. Types are stricter than the columnar path's (text fields must be text, the rank an
integer, the score floating point). Anything else gives ``None``, and the file takes the Arrow path,
which reproduces the result or names the offending row. A differential test runs both paths on the
same files. A file that changes between reading and analysis is an error, not a mixed result.

Other engines (Spark) get the same rows as an Arrow table from :func:`items_table`.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rankgate.errors import InputError
from rankgate.traces.model import ITEM_STATUSES, STAGES

__all__ = ["ItemSource", "check", "check_unchanged", "inspect", "item_fields", "items_select", "items_table",
           "items_view", "read_items"]

MAX_INT32 = 2**31 - 1
RANK1_STAGES = ("candidate", "reranked", "packed")  # the stages the top-1 score may come from
_STRING_FIELDS = ("stage", "id", "doc_id", "doc_version", "status", "source", "tenant")
_FIELDS = _STRING_FIELDS + ("rank", "score")


@dataclass(frozen=True)
class ItemSource:
    """The items of one Parquet file of rankgate trace records, checked and counted."""

    path: str  # what DuckDB reads
    label: str  # what messages name
    fields: tuple[str, ...]  # the item fields the file has (others read as missing)
    positions: bool  # some item has no rank: ranks come from input positions
    rows: int
    scored: int  # items with a score
    with_status: int  # items with a status
    stages: Mapping[str, int] = field(default_factory=dict)
    stat: tuple[int, int] = (0, 0)  # size and mtime_ns when read
    # when asked (``inspect(..., rank1=True)``): Arrow (request_id, one column per RANK1_STAGES stage),
    # the largest score of each request's rank-1 items in that stage, from the check pass (one decoding less)
    rank1: Any = None
    # the items decoded once by the check pass (item_columns.ItemPart values), from which the analysis takes
    # every per-request item aggregate without reading the file again; None: DuckDB's pass checked them
    # (the analysis reads the file), or only the rank-1 scores were asked for
    columns: Any = None

    @staticmethod
    def read_all(sources: Sequence[ItemSource]) -> Any:
        """The items of ``sources`` as one Arrow table (what ``TraceTables.all_items`` asks of its
        sources: the model reaches this module through its data, never by importing it)."""
        return items_table(sources)


def _lit(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _list(values: Sequence[str]) -> str:
    return ", ".join(_lit(v) for v in values)


def _stat(path: str) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_size, st.st_mtime_ns


def _field_types(con: Any, path: str) -> dict[str, Any] | None:
    """The item struct's fields and their Arrow types as DuckDB reads them, or None when ``retrieved``
    is absent or is not a list of structs of types this path takes."""
    import pyarrow as pa

    from rankgate.traces.columnar import RECORD_SCHEMA, _conform, _Decline

    schema = con.sql(f"SELECT * FROM read_parquet({_lit(path)}) LIMIT 0").to_arrow_table().schema
    if "retrieved" not in schema.names:
        return None
    t = schema.field("retrieved").type
    try:  # the columnar path's own type rules first
        _conform(pa.array([], type=t), RECORD_SCHEMA.field("retrieved").type)
    except _Decline:
        return None
    if not pa.types.is_list(t) or not pa.types.is_struct(t.value_type):
        return None
    types = {f.name: f.type for f in t.value_type}
    for name in _FIELDS:
        if name not in types:
            continue
        ft = types[name]
        ok = (pa.types.is_string(ft) if name in _STRING_FIELDS else
              pa.types.is_integer(ft) if name == "rank" else pa.types.is_floating(ft))
        if not ok:
            return None
    return {name: types[name] for name in _FIELDS if name in types}


def _u(fields: Sequence[str], name: str) -> str:
    """``u.<name>`` when the file has the field, else a typed NULL."""
    if name in fields:
        return f"u.{name}"
    return {"rank": "CAST(NULL AS BIGINT)", "score": "CAST(NULL AS DOUBLE)"}.get(name, "CAST(NULL AS VARCHAR)")


def inspect(con: Any, path: str, label: str, *, rank1: bool = False) -> ItemSource | None:
    """Check and count the items of ``path`` in one pass (module docs); None when the columnar path
    must decide. ``con``: a DuckDB connection. ``rank1``: also keep each request's rank-1 scores
    (:attr:`ItemSource.rank1`) from the same decoding of the items, when every item has a rank."""
    fields = item_fields(con, path)
    return None if fields is None else read_items(con, path, label, fields, rank1=rank1)


def read_items(con: Any, path: str, label: str, f: tuple[str, ...], *, rank1: bool = False) -> ItemSource | None:
    """The one pass over the items of :func:`inspect`, given their fields (:func:`item_fields`): read
    once into compact columns and checked (:func:`.item_columns.scan`); a file that pass does not take
    (items without a rank, a type pyarrow reads otherwise) is checked by DuckDB (:func:`check`)."""
    from rankgate.traces.item_columns import scan

    stat = _stat(path)
    got = scan(path, f, rank1=rank1)
    if got is None:
        return check(con, path, label, f, rank1=rank1)
    parts, c = got
    return ItemSource(path, label, f, False, c["rows"], c["scored"], c["with_status"], c["stages"], stat,
                      c.get("rank1"), None if rank1 else parts)


def item_fields(con: Any, path: str) -> tuple[str, ...] | None:
    """The item fields of ``path`` (its ``retrieved`` column), or None when its items cannot be left in
    the file (no such column, or types this path does not take): the quick half of :func:`inspect`."""
    fields = _field_types(con, path)
    return None if fields is None else tuple(fields)


def check(con: Any, path: str, label: str, f: tuple[str, ...], *, rank1: bool = False) -> ItemSource | None:
    """The pass over the items of :func:`inspect`, given their fields (:func:`item_fields`)."""
    stat = _stat(path)
    stage, rank, item, score, status = (_u(f, n) for n in ("stage", "rank", "id", "score", "status"))
    # plain aggregates per (stage, status) (cheaper than conditions on every row); every rule is a
    # comparison of these
    checks = (f"SELECT {stage}, nullif({status}, ''), count(*), count(u), count({item}), min(strlen({item})), "
              f"count({rank}), min({rank}), max({rank}), count({score}), min({score}), max({score}) FROM x GROUP BY ALL")
    top = None
    if rank1 and "rank" in f and "stage" in f:
        # the items are decoded once for both (a materialised CTE); the check rows have request_id NULL
        # (part 0), the rank-1 rows part 1 (ranks were checked to be integers, scores floating point)
        tops = ", ".join(f"max(CASE WHEN {stage} = {_lit(st)} THEN CAST({score} AS DOUBLE) END) AS {st}"
                         for st in RANK1_STAGES)
        cols = [f"c{i}" for i in range(12)]
        con.execute(f"""CREATE OR REPLACE TEMP TABLE rank1_check AS
WITH x AS MATERIALIZED (SELECT request_id, unnest(retrieved) AS u FROM read_parquet({_lit(path)}))
SELECT 1 AS part, request_id, {tops}, {", ".join(f"NULL AS {c}" for c in cols)}
FROM x WHERE {rank} = 1 AND {stage} IN ({_list(RANK1_STAGES)}) GROUP BY request_id
UNION ALL
SELECT 0, NULL, {", ".join(["NULL"] * len(RANK1_STAGES))}, * FROM ({checks}) c""")
        groups = con.execute(f"SELECT {', '.join(cols)} FROM rank1_check WHERE part = 0").fetchall()
        top = con.sql(f"SELECT request_id, {', '.join(RANK1_STAGES)} FROM rank1_check "
                      "WHERE part = 1").to_arrow_table()
        con.execute("DROP TABLE rank1_check")
    else:
        groups = con.execute(f"WITH x AS (SELECT unnest(retrieved) AS u FROM read_parquet({_lit(path)})) "
                             f"{checks}").fetchall()
    stages: dict[str, int] = {}
    n = ranked = scored = with_status = 0
    for st, status_, rows, structs, ids, shortest, n_ranked, low, high, n_scored, s_min, s_max in groups:
        if (st not in STAGES or (status_ is not None and status_ not in ITEM_STATUSES) or structs != rows
                or ids != rows or shortest < 1 or (n_ranked and (low < 1 or high > MAX_INT32))
                or (n_scored and not (math.isfinite(s_min) and math.isfinite(s_max)))):
            return None
        stages[st] = stages.get(st, 0) + rows
        n += rows
        ranked += n_ranked
        scored += n_scored
        with_status += rows if status_ is not None else 0
    return ItemSource(path, label, f, ranked < n, n, scored, with_status,
                      {s: stages[s] for s in STAGES if stages.get(s)}, stat,
                      top if ranked == n else None)


def items_select(src: ItemSource) -> str:
    """The DuckDB statement giving the canonical ``items`` rows of ``src`` (:data:`~.model.ITEMS_SCHEMA`)."""
    f = src.fields
    p = _lit(src.path)
    if src.positions:
        # the input position within the record and stage, as the columnar path numbers missing ranks
        inner = (f"SELECT request_id, u, CAST(coalesce({_u(f, 'rank')}, row_number() OVER "
                 f"(PARTITION BY file_row_number, {_u(f, 'stage')} ORDER BY ix)) AS INTEGER) AS rank "
                 f"FROM (SELECT request_id, file_row_number, unnest(retrieved) AS u, "
                 f"unnest(range(len(retrieved))) AS ix FROM read_parquet({p}, file_row_number = true))")
    else:
        inner = (f"SELECT request_id, u, CAST({_u(f, 'rank')} AS INTEGER) AS rank "
                 f"FROM (SELECT request_id, unnest(retrieved) AS u FROM read_parquet({p}))")
    text = {n: f"nullif({_u(f, n)}, '')" for n in ("doc_id", "doc_version", "status", "source", "tenant")}
    return (f"SELECT request_id, {_u(f, 'stage')} AS stage, rank, {_u(f, 'id')} AS item_id, "
            f"{text['doc_id']} AS doc_id, {text['doc_version']} AS doc_version, "
            f"CAST({_u(f, 'score')} AS DOUBLE) AS score, {text['status']} AS status, {text['source']} AS source, "
            f"{text['tenant']} AS tenant FROM ({inner}) t")


def check_unchanged(sources: Sequence[ItemSource]) -> None:
    """InputError when a file has changed (size or modification time) since its items were checked."""
    for s in sources:
        try:
            same = _stat(s.path) == s.stat
        except OSError:
            same = False
        if not same:
            raise InputError("changed or disappeared while it was being read", path=s.label,
                             hint="run the analysis again on a file that is not being written")


def items_view(sources: Sequence[ItemSource], arrow_part: str | None) -> str:
    """The statement uniting the Arrow-held items (registered as ``arrow_part``) with each file's."""
    check_unchanged(sources)
    parts = [f"SELECT * FROM {arrow_part}"] if arrow_part else []
    parts += [items_select(s) for s in sources]
    return "\nUNION ALL\n".join(parts)


def items_table(sources: Sequence[ItemSource]) -> Any:
    """The items of ``sources`` as one Arrow table (for engines that cannot read the files in place)."""
    import duckdb
    import pyarrow as pa

    from rankgate.traces.model import ITEMS_SCHEMA

    check_unchanged(sources)
    con = duckdb.connect()
    try:
        tables = [con.sql(items_select(s)).to_arrow_table() for s in sources]
    finally:
        con.close()
    return pa.concat_tables([t.cast(ITEMS_SCHEMA) for t in tables]) if tables else ITEMS_SCHEMA.empty_table()
