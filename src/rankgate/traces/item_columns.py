"""The items of a rankgate trace Parquet file decoded once, and every per-request item aggregate from them.

``traces analyze`` needs three things from a file's items: the reader's checks (whether the items may
stay in the file, :mod:`.native`), the per-request item facts (top-1 and top-2 score, item count,
context items with a known and with a bad status) and two per-request lists (the top-k ids of the
list stage, the context items' sources). Each used to be a pass of its own over the file's
``retrieved`` column, and DuckDB decodes every field of that list of structs each time (0.25 s per
100k requests before any work is done). :func:`scan` reads the six item fields the analysis uses
(``stage``, ``rank``, ``id``, ``score``, ``status``, ``source``) once, with pyarrow, text fields as
dictionary indices (a Parquet dictionary page is read as it is, not expanded into strings), checks
them by the rules of :func:`.native.check` and keeps them as compact columns (:class:`ItemPart`, about
10 bytes an item: the scores only as each request's rank-1 and rank-2 maxima per stage).
:func:`req_tables` then gives the rows of :meth:`.queries.Plan.req_items` and
:meth:`.queries.Plan.topk_lists` for any plan (its stages are chosen only after every file has been
read) with numpy, where each request's items are one slice; :func:`rank1_table` gives
:attr:`.native.ItemSource.rank1`.

Exactly the same rows: both read the same values of the same file (DuckDB and pyarrow decode Parquet
to the same values for the types :func:`.native.item_fields` admits; a type pyarrow reads otherwise
sends the file to DuckDB's pass), every aggregate is a count, a maximum or an order of whole numbers
and strings (strings compare byte by byte in both). A differential test runs both on the same files.
Anything this pass does not take (an item without a rank, whose rank is its input position; a null
item; a value the checks refuse; an unreadable file) gives ``None``, and DuckDB's pass decides, as
before. ``doc_id``, ``doc_version`` and ``tenant`` are not read here: no signal reads them (the
item rows of :func:`.native.items_select` still hold them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rankgate.traces.model import ITEM_STATUSES, STAGES
from rankgate.traces.queries import BAD_STATUSES

__all__ = ["ItemPart", "rank1_table", "req_tables", "scan"]

MAX_INT32 = 2**31 - 1
BATCH_ROWS = 8_192  # rows per part: what is decoded at a time (a request's items never span two parts)
_READ = ("stage", "rank", "id", "score", "status", "source")


@dataclass(frozen=True, eq=False)
class ItemPart:
    """The items of consecutive rows of one file, in file order: row i's items are
    ``offsets[i]:offsets[i + 1]`` of the item columns. Text columns are indices into a dictionary of
    this part (which may hold a value twice or a value no item uses)."""

    request_id: Any  # Arrow strings, one per row
    offsets: Any  # numpy int64, rows + 1
    top: Any  # numpy float64 (rows, stages, 2): per row and stage, the largest score of its rank-1 and of
    #           its rank-2 items (NaN: none with a score); the only scores a signal reads
    scored: int  # items with a score
    stage: Any  # numpy int8: the index in model.STAGES
    rank: Any  # numpy int16 or int32 (every item of this pass has a rank)
    item: Any  # numpy int16 or int32: the index in ``ids``
    ids: Any  # Arrow strings
    status: Any  # numpy int8: the index in model.ITEM_STATUSES; -1: none ('' reads as none)
    source: Any  # numpy int16 or int32: the index in ``sources``; -1: none ('' reads as none)
    sources: Any  # Arrow strings


class _Decline(Exception):
    """This pass does not decide; DuckDB's (:func:`.native.check`) does."""


def scan(path: str, fields: Sequence[str], *, rank1: bool = False) -> tuple[tuple[ItemPart, ...], dict[str, Any]] | None:
    """The items of ``path`` read once and checked: (its parts, its counts) or None (module docs).
    ``fields``: the item fields the file has (:func:`.native.item_fields`). The counts are those of
    :class:`.native.ItemSource`: ``rows``, ``scored``, ``with_status``, ``stages``, and ``rank1``
    (:func:`rank1_table` of the parts) when asked."""
    import pyarrow as pa

    if not {"stage", "rank", "id"} <= set(fields):
        return None
    try:
        parts = tuple(_parts(path, [f for f in _READ if f in fields]))
    except (_Decline, pa.ArrowException, OSError, ValueError, TypeError, IndexError, KeyError):
        return None
    if not parts:
        return None
    import numpy as np

    stages = np.zeros(len(STAGES), np.int64)
    rows = scored = with_status = 0
    for p in parts:
        rows += len(p.stage)
        scored += p.scored
        with_status += int(np.count_nonzero(p.status >= 0))
        stages += np.bincount(p.stage, minlength=len(STAGES))
    counts: dict[str, Any] = {"rows": rows, "scored": scored, "with_status": with_status,
                              "stages": {s: int(c) for s, c in zip(STAGES, stages) if c}}
    if rank1:
        counts["rank1"] = rank1_table(parts)
    return parts, counts


def _leaves(pf: Any, names: Sequence[str]) -> list[str]:
    """The Parquet column paths of ``retrieved``'s item fields ``names`` (``retrieved.list.element.id``)."""
    found: dict[str, str] = {}
    for i in range(len(pf.schema)):
        path = pf.schema.column(i).path
        parts = path.split(".")
        if parts[0] == "retrieved" and len(parts) >= 3 and parts[-1] in names:
            if parts[-1] in found:
                raise _Decline  # a field name twice (a nested struct): not this pass's shape
            found[parts[-1]] = path
    if set(found) != set(names):
        raise _Decline
    return [found[n] for n in names]


def _parts(path: str, names: list[str]) -> Any:
    import pyarrow as pa
    import pyarrow.parquet as pq

    with pq.ParquetFile(path) as probe:
        leaves = _leaves(probe, names)
    text = [leaf for leaf, n in zip(leaves, names) if n not in ("rank", "score")]
    with pq.ParquetFile(path, read_dictionary=text) as pf:
        rid = pf.schema_arrow.field("request_id").type  # (KeyError: no such column)
        if not (pa.types.is_string(rid) or pa.types.is_large_string(rid)):
            raise _Decline
        # a row group at a time: each has its own dictionaries, which pyarrow does not join inside a list
        for group in range(pf.metadata.num_row_groups):
            for batch in pf.iter_batches(batch_size=BATCH_ROWS, row_groups=[group],
                                         columns=["request_id", *leaves], use_threads=True):
                yield _part(batch, names)


def _dictionary(arr: Any) -> tuple[Any, Any]:
    """(indices as numpy int32 with -1 for null, the dictionary as Arrow strings) of a text column."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if not pa.types.is_dictionary(arr.type):
        if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
            raise _Decline
        arr = pc.dictionary_encode(arr)
    values = arr.dictionary
    if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
        raise _Decline
    values = values.cast(pa.string())
    values.validate(full=True)  # UTF-8, as DuckDB's reader requires (ArrowInvalid otherwise: DuckDB decides)
    idx = arr.indices
    if idx.null_count:
        idx = pc.fill_null(idx, -1)
    return np.asarray(idx.to_numpy(zero_copy_only=False), dtype=np.int32), values


def _used(idx: Any, size: int) -> Any:
    """Per dictionary entry: whether some item uses it (``idx``: indices, -1 for none)."""
    import numpy as np

    return np.bincount(idx + 1, minlength=size + 1)[1:] > 0


def _vocabulary(values: Any, vocab: Sequence[str]) -> Any:
    """Per dictionary entry: its index in ``vocab``, -1 for '' (none), -2 for anything else."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    pos = np.asarray(pc.fill_null(pc.index_in(values, value_set=pa.array(list(vocab), pa.string())), -2)
                     .to_numpy(zero_copy_only=False), dtype=np.int64)
    empty = np.asarray(pc.equal(pc.binary_length(values), 0).to_numpy(zero_copy_only=False), dtype=bool)
    pos[empty] = -1
    return pos


def _part(batch: Any, names: list[str]) -> ItemPart:
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    rid = batch.column(0).cast(pa.string())
    ret = batch.column(1)
    if not pa.types.is_list(ret.type) or not pa.types.is_struct(ret.type.value_type):
        raise _Decline
    offsets = np.asarray(ret.offsets.to_numpy(zero_copy_only=False), dtype=np.int64)
    offsets = offsets - offsets[0]
    lengths = np.diff(offsets)
    if ret.null_count:  # a null list has no items (DuckDB's unnest gives none): its slot must be empty
        valid = np.asarray(ret.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        if lengths[~valid].any():
            raise _Decline
    items = ret.flatten()
    if items.null_count or len(items) != offsets[-1]:
        raise _Decline  # a null item: the checks refuse it
    col = {n: items.field(n) for n in names}
    n = len(items)

    # stage: one of STAGES
    if col["stage"].null_count:
        raise _Decline
    idx, values = _dictionary(col["stage"])
    codes = _vocabulary(values, STAGES)
    if len(values) and codes.min() < 0 and (codes[_used(idx, len(values))] < 0).any():
        raise _Decline
    stage = codes.astype(np.int8)[idx] if n else np.zeros(0, np.int8)
    # id: present and not empty
    ids_col = col["id"]
    if ids_col.null_count:
        raise _Decline
    item, ids = _dictionary(ids_col)
    if n:
        empty = np.asarray(pc.equal(pc.binary_length(ids), 0).to_numpy(zero_copy_only=False), dtype=bool)
        if empty.any() and empty[_used(item, len(ids))].any():
            raise _Decline
    # rank: every item has one (else input positions decide: DuckDB's pass), in 1..2^31-1
    r = col["rank"]
    if not pa.types.is_integer(r.type) or r.null_count:
        raise _Decline
    rank64 = np.asarray(r.to_numpy(zero_copy_only=False))
    if n and (rank64.min() < 1 or rank64.max() > MAX_INT32):
        raise _Decline
    rank = rank64.astype(_width(rank64.max() if n else 0))
    # score: finite where logged; kept as each row's largest rank-1 and rank-2 score per stage
    rows = len(offsets) - 1
    top = np.full((rows, len(STAGES), 2), np.nan)
    scored = 0
    if "score" in col:
        s = col["score"]
        if not pa.types.is_floating(s.type):
            raise _Decline
        score = np.asarray(pc.fill_null(s.cast(pa.float64()), np.nan).to_numpy(zero_copy_only=False), dtype=np.float64)
        scored = n - s.null_count
        if np.count_nonzero(np.isfinite(score)) != scored:
            raise _Decline
        parent = _parent(offsets)
        head = np.flatnonzero(rank64 <= 2)
        for i in range(len(STAGES)):
            for r in (1, 2):
                sel = head[(stage[head] == i) & (rank64[head] == r)]
                value, has = _max_by(parent[sel], score[sel], rows)
                top[has, i, r - 1] = value[has]
    # status: none ('' too) or one of ITEM_STATUSES
    if "status" in col:
        sidx, svalues = _dictionary(col["status"])
        scodes = _vocabulary(svalues, ITEM_STATUSES)
        if (scodes == -2).any() and (scodes[_used(sidx, len(svalues))] == -2).any():
            raise _Decline
        status = np.append(scodes, -1).astype(np.int8)[sidx]  # (index -1, none: the -1 appended)
    else:
        status = np.full(n, -1, np.int8)
    # source: none ('' too) or a value
    if "source" in col:
        oidx, sources = _dictionary(col["source"])
        blank = np.asarray(pc.equal(pc.binary_length(sources), 0).to_numpy(zero_copy_only=False), dtype=bool)
        table = np.where(blank, -1, np.arange(len(sources)))
        source = np.append(table, -1).astype(_width(len(sources)))[oidx]  # (index -1, none: the -1 appended)
    else:
        source, sources = np.full(n, -1, np.int16), pa.array([], pa.string())
    return ItemPart(rid, offsets, top, scored, stage, rank, item.astype(_width(len(ids))), ids, status, source,
                    sources)


def _width(largest: int) -> Any:
    """The narrowest of int16/int32 holding 0..largest (and -1)."""
    import numpy as np

    return np.int16 if largest < 2**15 else np.int32


# -- per-request aggregates ---------------------------------------------------------------------------------
def _parent(offsets: Any) -> Any:
    """The row of each item."""
    import numpy as np

    return np.repeat(np.arange(len(offsets) - 1, dtype=np.int64), np.diff(offsets))


def _max_by(parent: Any, values: Any, rows: int) -> tuple[Any, Any]:
    """Per row: the largest of ``values`` (items in row order; NaN: none), and whether it has one."""
    import numpy as np

    keep = ~np.isnan(values)
    parent, values = parent[keep], values[keep]
    out = np.zeros(rows, np.float64)
    has = np.zeros(rows, bool)
    if len(values):
        starts = np.flatnonzero(np.r_[True, parent[1:] != parent[:-1]])
        out[parent[starts]] = np.maximum.reduceat(values, starts)
        has[parent[starts]] = True
    return out, has


def _any_by(parent: Any, rows: int) -> Any:
    import numpy as np

    has = np.zeros(rows, bool)
    has[parent] = True
    return has


def _text_order(values: Any) -> Any:
    """Per dictionary entry: its place among the distinct values in byte order (equal values, equal places)."""
    import numpy as np
    import pyarrow.compute as pc

    if not len(values):
        return np.zeros(0, np.int64)
    order = np.asarray(pc.sort_indices(values).to_numpy(zero_copy_only=False), dtype=np.int64)
    ordered = values.take(order)
    step = np.r_[0, ~np.asarray(pc.equal(ordered[1:], ordered[:-1]).to_numpy(zero_copy_only=False), dtype=bool)]
    dense = np.empty(len(values), np.int64)
    dense[order] = np.cumsum(step)
    return dense


def _lists(rows: int, parent: Any, values: Any) -> Any:
    """An Arrow list per row of ``values`` (whose rows are ``parent``, ascending); NULL for a row with none."""
    import numpy as np
    import pyarrow as pa

    counts = np.bincount(parent, minlength=rows)
    offsets = np.r_[0, np.cumsum(counts)].astype(np.int32)
    mask = pa.array(counts == 0)
    return pa.ListArray.from_arrays(pa.array(offsets), values, mask=mask)


def _topk(p: ItemPart, parent: Any, list_stage: int, k: int) -> tuple[Any, bool]:
    """The rows of :meth:`.queries.Plan.topk_lists` for this part: per row, its list-stage ids within
    the first k ranks in (rank, id) order, each id where it first occurs, the first k of them (NULL for
    a row with none); and whether one of those ids holds the list separator U+001F."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    rows = len(p.offsets) - 1
    sel = np.flatnonzero((p.stage == list_stage) & (p.rank <= k))
    par, rank, dense = parent[sel], p.rank[sel].astype(np.int64), _text_order(p.ids)[p.item[sel]]
    if len(sel):
        rb, db = int(rank.max()).bit_length(), int(dense.max()).bit_length()
        if rows.bit_length() + rb + db <= 63:
            key = (par << (rb + db)) | (rank << db) | dense
            if (key[1:] < key[:-1]).any():
                o = np.argsort(key, kind="stable")
                sel, par, dense = sel[o], par[o], dense[o]
        else:
            o = np.lexsort((dense, rank, par))
            sel, par, dense = sel[o], par[o], dense[o]
        # an id listed twice counts where it first occurs: the first of each (row, id) in list order
        if rows.bit_length() + db <= 63:
            o = np.argsort((par << db) | dense, kind="stable")
        else:
            o = np.lexsort((dense, par))
        first = np.r_[True, (par[o][1:] != par[o][:-1]) | (dense[o][1:] != dense[o][:-1])]
        if not first.all():
            keep = np.zeros(len(sel), bool)
            keep[o[first]] = True
            sel, par = sel[keep], par[keep]
        # the first k of each row
        starts = np.r_[0, np.flatnonzero(par[1:] != par[:-1]) + 1]
        place = np.arange(len(par)) - np.repeat(starts, np.diff(np.r_[starts, len(par)]))
        if (place >= k).any():
            sel, par = sel[place < k], par[place < k]
    item = p.item[sel]
    separator = bool(len(item)) and bool(np.asarray(pc.match_substring(p.ids, "\x1f").to_numpy(
        zero_copy_only=False), dtype=bool)[item].any())
    return _lists(rows, par, p.ids.take(pa.array(item))), separator


def _ctx(p: ItemPart, parent: Any, context_stage: int) -> Any:
    """Per row: (item_id, source) of its context items with a source, in item order; NULL for none."""
    import numpy as np
    import pyarrow as pa

    sel = np.flatnonzero((p.stage == context_stage) & (p.source >= 0))
    pairs = pa.StructArray.from_arrays([p.ids.take(pa.array(p.item[sel])), p.sources.take(pa.array(p.source[sel]))],
                                       names=["item_id", "source"])
    return _lists(len(p.offsets) - 1, parent[sel], pairs)


def _manifest_status(p: ItemPart, manifest: Any) -> tuple[Any, Any]:
    """Per dictionary entry of ``p.ids``: whether the manifest gives it a status, and whether that one is bad."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    pos = pc.index_in(p.ids, value_set=manifest.column("item_id").combine_chunks())
    status = manifest.column("status").combine_chunks().take(pos)
    has = np.asarray(status.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    bad = np.asarray(pc.fill_null(pc.is_in(status, value_set=pa.array(list(BAD_STATUSES), pa.string())), False)
                     .to_numpy(zero_copy_only=False), dtype=bool)
    return has, bad


def req_tables(parts: Sequence[ItemPart], *, score_stage: str, context_stage: str, list_stage: str, k: int,
               facts: bool = True, lists: Sequence[str] = (), manifest: Any = None) -> dict[str, Any]:
    """What DuckDB's statements make of the items, for these items: ``req_items``, the rows of
    :meth:`.queries.Plan.req_items` without its list of top-k ids (one per request with an item,
    ``request_id`` then, with ``facts``, ``top1``, ``top2``, ``n_items``, ``n_ctx_known``,
    ``n_ctx_bad``, and with ``"ctx"`` in ``lists`` ``ctx``); with ``"tk"`` in ``lists`` also
    ``topk_lists``, the rows of :meth:`.queries.Plan.topk_lists`, and ``separator``, whether a listed
    id holds the list separator (:meth:`.queries.Plan.separator_in_ids`). ``manifest``: Arrow
    (item_id, doc_id, status), whose status comes before the item's."""
    import numpy as np
    import pyarrow as pa

    sc, cx, ls = (STAGES.index(s) for s in (score_stage, context_stage, list_stage))
    bad = np.array([s in BAD_STATUSES for s in ITEM_STATUSES] + [False])  # (index -1: none)
    req, top, separator = [], [], False
    for p in parts:
        rows = len(p.offsets) - 1
        parent = _parent(p.offsets)
        with_items = np.diff(p.offsets) > 0
        cols: dict[str, Any] = {"request_id": p.request_id}
        if facts:
            for name, r in (("top1", 0), ("top2", 1)):
                value = p.top[:, sc, r]
                cols[name] = pa.array(value, mask=np.isnan(value))
            cols["n_items"] = pa.array(np.diff(p.offsets))
            ctx = p.stage == cx
            if manifest is not None:
                m_has, m_bad = _manifest_status(p, manifest)
                listed = m_has[p.item]
                known = listed | (p.status >= 0)
                is_bad = np.where(listed, m_bad[p.item], bad[p.status])
            else:
                known, is_bad = p.status >= 0, bad[p.status]
            cols["n_ctx_known"] = pa.array(np.bincount(parent[ctx & known], minlength=rows).astype(np.int64))
            cols["n_ctx_bad"] = pa.array(np.bincount(parent[ctx & is_bad], minlength=rows).astype(np.int64))
        if "ctx" in lists:
            cols["ctx"] = _ctx(p, parent, cx)
        t = pa.table(cols)
        req.append(t.filter(pa.array(with_items)) if not with_items.all() else t)
        if "tk" in lists:
            ids, sep = _topk(p, parent, ls, k)
            separator |= sep
            top.append(pa.table({"request_id": p.request_id, "ids": ids}).filter(ids.is_valid()))
    out: dict[str, Any] = {"req_items": pa.concat_tables(req)}
    if "tk" in lists:
        out["topk_lists"] = pa.concat_tables(top)
        out["separator"] = separator
    return out


def rank1_table(parts: Sequence[ItemPart]) -> Any:
    """:attr:`.native.ItemSource.rank1`: per request with a rank-1 item in some stage, each stage's
    largest rank-1 score (NULL where the stage has none, or none with a score)."""
    import numpy as np
    import pyarrow as pa

    tables = []
    for p in parts:
        rows = len(p.offsets) - 1
        cols: dict[str, Any] = {"request_id": p.request_id}
        for i, s in enumerate(STAGES):
            value = p.top[:, i, 0]
            cols[s] = pa.array(value, mask=np.isnan(value))
        t = pa.table(cols)
        tables.append(t.filter(pa.array(_any_by(_parent(p.offsets)[p.rank == 1], rows))))
    schema = pa.schema([("request_id", pa.string()), *((s, pa.float64()) for s in STAGES)])
    return pa.concat_tables(tables) if tables else schema.empty_table()
