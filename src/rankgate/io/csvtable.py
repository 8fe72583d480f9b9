"""Long tables with a header: one row per (query, item). CSV/TSV, and Parquet or Hugging Face tables
read through :mod:`rankgate.io.tools.records` when a column map is given.

Gold: ``query_id``, ``chunk_id``, ``grade`` (optional ``query``, ``note``). Run: ``query_id``,
``chunk_id`` and ``score`` or ``rank`` (optional ``doc_version``, ``text``). Each field is found by
its usual names (``qid``, ``doc_id``, ``relevance`` …) or by ``--columns FIELD=COLUMN,...``; a mapped
column must exist unless the file names the field itself (``query_id``), so one map serves a gold set
and a run that name their columns differently. Rows of one query need not be adjacent. Numbers in a CSV are read as text and
checked per line: a grade is an integer, a score a finite number.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from rankgate._util.constraints import plain
from rankgate.errors import InputError
from rankgate.model.ranking import MAX_RANK
from rankgate._util.arrow import strings_of
from rankgate.model.gold_run import Gold, Run
from rankgate.io.tools.records import Record, Records, fail

__all__ = ["read_table_gold", "read_table_run"]

ALIASES: dict[str, tuple[str, ...]] = {
    "query_id": ("query_id", "qid", "query-id", "queryid"),
    "chunk_id": ("chunk_id", "doc_id", "docid", "corpus_id", "corpus-id", "docno", "id", "passage_id"),
    "grade": ("grade", "relevance", "rel", "label", "score"),
    "score": ("score", "similarity"),
    "rank": ("rank",),
    "query": ("query", "question", "query_text"),
    "note": ("note",),
    "doc_version": ("doc_version",),
    "text": ("text", "content"),
}
GOLD_USES = ("query_id", "chunk_id", "grade", "query", "note")
RUN_USES = ("query_id", "chunk_id", "score", "rank", "doc_version", "text")


def _resolve(records: Records, uses: tuple[str, ...], columns: Mapping[str, str] | None) -> dict[str, str]:
    """Field -> column name for the fields this kind of table uses and the file has."""
    out: dict[str, str] = {}
    for name in uses:
        if columns and name in columns and (columns[name] in records.columns or name not in records.columns):
            col = columns[name]
            if col not in records.columns:
                raise fail(records.path, None, f"has no column {col!r} (mapped to {name} by --columns); "
                           f"columns: {', '.join(records.columns)}", hint="check the --columns map")
            out[name] = col
            continue
        taken = set(out.values()) | set((columns or {}).values())
        alias = next((c for c in ALIASES[name] if c in records.columns and c not in taken), None)
        if alias is not None:
            out[name] = alias
    return out


def _require(records: Records, found: dict[str, str], names: tuple[str, ...], kind: str) -> None:
    missing = [n for n in names if n not in found]
    if missing:
        example = ",".join(f"{n}=COLUMN" for n in missing)
        flag = "--columns "
        if records.container == "objects":  # (a table in memory: the Python argument)
            example, flag = "{" + ", ".join(f"{n!r}: COLUMN" for n in missing) + "}", "columns="
            example += "; a DataFrame's index is not read: reset_index() first"
        raise fail(records.path, None, f"has no {' or '.join(missing)} column for a {kind}; columns: {', '.join(records.columns)}",
                   hint=f"name the columns {', '.join(names)}, or map yours with {flag}{example}")
    if not records.items:
        raise fail(records.path, None, "has no rows" if records.container == "objects" else "has a header but no rows",
                   hint=f"a {kind} needs at least one row")


def _text(records: Records, rec: Record, col: str, field: str) -> str:
    value = rec.data.get(col)
    if value is None or isinstance(value, bool) or not isinstance(value, (str, int)) or str(value).strip() == "":
        value = plain(value)  # (a table in memory: numpy's integer or string is an id)
        if value is None or isinstance(value, bool) or not isinstance(value, (str, int)) or str(value).strip() == "":
            raise fail(records.path, rec, f"must be a non-empty id; got {value!r}"[:120], field=col,
                       hint=f"every row needs its {field}")
    return str(value).strip()


def _number(records: Records, rec: Record, col: str) -> float:
    value = rec.data.get(col)
    try:
        if isinstance(value, str):  # (a CSV cell)
            x, ok = float(value.strip()), True
        else:
            value = plain(value)  # (a table in memory: numpy's float32 0.9 is 0.9)
            x = math.nan if isinstance(value, bool) else float(value)
            ok = not isinstance(value, bool)
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise fail(records.path, rec, f"must be a number; got {value!r}"[:120], field=col)
    if not math.isfinite(x):  # one rule in every format: NaN and infinite values cannot be ranked
        raise fail(records.path, rec, f"must be a finite number; got {value!r}"[:120], field=col,
                   hint="NaN and infinite values cannot be ranked; drop the item or give it a finite value")
    return x


def _whole(value: Any) -> int:
    """A cell's integer grade: an integer, a whole float (2.0; a column with a gap is a float column) or
    their text, a numpy integer; never a cut one (2.5) nor True. ValueError (or TypeError) otherwise."""
    if isinstance(value, str):
        text = value.strip()
        try:
            return int(text)  # exactly, however many digits
        except ValueError:
            x = float(text)  # "2.0"
            if not x.is_integer():
                raise ValueError from None
            return int(x)
    if isinstance(value, bool):  # (Python counts True as 1; it is not a grade)
        raise ValueError
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError
        return int(value)
    if plain(value) is not value:  # a numpy scalar
        return _whole(plain(value))
    raise TypeError


def _grade(records: Records, rec: Record, col: str) -> int:
    value = rec.data.get(col)
    try:
        try:
            grade = int(value.strip()) if isinstance(value, str) else _whole(value)  # (a CSV cell: at once)
        except ValueError:
            grade = _whole(value)  # ("2.0")
    except (TypeError, ValueError, OverflowError):
        raise fail(records.path, rec, f"must be an integer grade; got {value!r}"[:120], field=col,
                   hint="grades are integers; 0 or less means judged not relevant") from None
    if not -(2**63) <= grade < 2**63:
        raise fail(records.path, rec, f"must be a grade within 64-bit range; got {value!r}"[:120], field=col,
                   hint="grades are small integers such as 0-3")
    return grade


def _missing(value: Any) -> bool:
    """No value: None, an empty string, or a table's gap (NaN; pandas' NA and NaT, known by their type's
    name: pandas is not imported)."""
    if value is None:
        return True
    if isinstance(value, float):
        return math.isnan(value)
    if isinstance(value, str):
        return value == ""
    return type(value).__name__ in ("NAType", "NaTType")


def _opt(rec: Record, col: str | None) -> str | None:
    if col is None:
        return None
    value = rec.data.get(col)
    if value is None or value == "":
        return None
    if isinstance(value, str):
        return value
    value = plain(value)  # (a table's gap, NaN, is no value: never the text "nan")
    return None if _missing(value) else str(value)


def read_table_gold(records: Records, columns: Mapping[str, str] | None = None, *, query_fields: bool = False) -> Gold:
    """A gold set from a long table's records. ``query_fields`` (a table in memory, such as a pandas
    DataFrame): the other columns are per-query fields, as a JSONL gold line's (see :func:`_query_fields`)."""
    found = _resolve(records, GOLD_USES, columns)
    _require(records, found, ("query_id", "chunk_id", "grade"), "gold set")
    q, d, g = found["query_id"], found["chunk_id"], found["grade"]
    index: dict[str, int] = {}
    seen: dict[tuple[int, str], Record] = {}
    jq: list[int] = []
    jd: list[str] = []
    jg: list[int] = []
    notes: list[str | None] = []
    texts: list[str | None] = []
    # (the names a JSONL line's query text goes by are the table's query column, or the rows' texts)
    others = [c for c in records.columns if c not in found.values() and c not in _QUERY_TEXT] if query_fields else []
    per_query: list[dict[str, tuple[Any, Record]]] = []
    for rec in records.items:
        qid = _text(records, rec, q, "query id")
        doc = _text(records, rec, d, "item id")
        grade = _grade(records, rec, g)
        qi = index.get(qid)
        if qi is None:
            qi = index[qid] = len(index)
            texts.append(None)
            per_query.append({})
        if others:
            _collect(records, rec, others, per_query[qi], qid)
        if (qi, doc) in seen:
            first = seen[(qi, doc)]
            where = f"line {first.line}" if first.line else f"row {first.row}"
            raise fail(records.path, rec, f"judges {doc!r} for query {qid!r} again (first on {where})", field=d,
                       hint="keep one judgement per query and item")
        seen[(qi, doc)] = rec
        if texts[qi] is None:
            texts[qi] = _opt(rec, found.get("query"))
        jq.append(qi)
        jd.append(doc)
        jg.append(grade)
        notes.append(_opt(rec, found.get("note")))
    fields: dict[str, list[Any]] = {}
    if any(t is not None for t in texts):
        fields["query"] = texts
    if others:
        relevant = np.zeros(len(index), dtype=bool)
        relevant[np.asarray(jq, dtype=np.int64)[np.asarray(jg, dtype=np.int64) >= 1]] = True
        _query_fields(records, per_query, relevant.tolist(), fields)
    return Gold(list(index), np.asarray(jq, dtype=np.int64), strings_of(jd), np.asarray(jg, dtype=np.int64),
                fields=fields, notes=notes if any(n is not None for n in notes) else None, source=records.path)


# Per-query fields of a table in memory: the JSONL gold line's own (k, intent, segment, as_of, tags, …),
# which must hold one value per query; any other column whose value is the same on every row of its
# query is kept, as a JSONL line's other scalar fields are (a segment, ``by=``), and one whose values
# differ within a query is about the rows (a chunk's text, a doc id beside the chunk id) and is left out.
_ONE_PER_QUERY = frozenset({"k", "no_answer", "metadata", "tags", "intent", "segment", "source_of_query", "created",
                            "corpus_version", "as_of", "expected_answer", "must_not_retrieve", "entities",
                            "conversation_id", "turn", "depends_on_turns"})
_VARIES = object()  # a column whose values differ within a query
_QUERY_TEXT = ("query", "question", "text", "input", "query_text")


def _collect(records: Records, rec: Record, columns: list[str], kept: dict[str, tuple[Any, Record]], qid: str) -> None:
    """The values of ``rec``'s other columns into ``kept`` (its query's: column -> (value, first row));
    a named per-query field with two values in one query is an error naming both rows."""
    for col in columns:
        value = plain(rec.data.get(col))
        if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
            value = value.tolist()  # a list cell that pandas holds as a numpy array
        if not isinstance(value, (list, dict)) and _missing(value):
            continue
        first = kept.get(col)
        if first is None:
            kept[col] = (value, rec)
        elif first[0] is not _VARIES and first[0] != value:
            if col in _ONE_PER_QUERY:
                raise fail(records.path, rec, f"is {value!r} for query {qid!r}, but row {first[1].row} gives "
                           f"{first[0]!r}"[:200], field=col, hint=f"{col} is a per-query field: give one value per query")
            kept[col] = (_VARIES, rec)


def _query_fields(records: Records, per_query: list[dict[str, tuple[Any, Record]]], relevant: list[bool],
                  fields: dict[str, list[Any]]) -> None:
    """Each query's fields, checked and kept by the JSONL gold's rules (:func:`~rankgate.io.jsonl.gold_query_fields`)."""
    from rankgate.io.jsonl import gold_query_fields

    varies = {col for kept in per_query for col, (value, _) in kept.items() if value is _VARIES}
    n = len(per_query)

    def put(name: str, qi: int, value: Any) -> None:
        fields.setdefault(name, [None] * n)[qi] = value

    for qi, kept in enumerate(per_query):
        obj = {col: value for col, (value, _) in kept.items() if col not in varies}
        if not obj:
            continue
        rec = next(iter(kept.values()))[1]
        if isinstance(obj.get("k"), float) and obj["k"].is_integer():
            obj["k"] = int(obj["k"])  # (an integer column with a gap is a float column)
        no_answer = obj.get("no_answer", False)
        if not isinstance(no_answer, bool):
            raise fail(records.path, kept["no_answer"][1], f"must be true or false; got {no_answer!r}"[:120], field="no_answer")
        if no_answer and relevant[qi]:
            raise fail(records.path, kept["no_answer"][1], "is true but the query has a row with grade >= 1",
                       field="no_answer", hint="a no-answer query has no item with grade >= 1")
        try:
            gold_query_fields(obj, qi, no_answer, put, records.path, rec.row)  # type: ignore[arg-type]
        except InputError as exc:  # (named by the query's first row, not a line)
            raise fail(records.path, rec, exc.detail, field=exc.field, hint=exc.hint) from None


def read_table_run(records: Records, columns: Mapping[str, str] | None = None) -> Run:
    found = _resolve(records, RUN_USES, columns)
    if "score" not in found and "rank" not in found:
        _require(records, found, ("query_id", "chunk_id", "score"), "run")
    _require(records, found, ("query_id", "chunk_id"), "run")
    q, d = found["query_id"], found["chunk_id"]
    key = found.get("score") or found["rank"]
    index: dict[str, int] = {}
    rq: list[int] = []
    rd: list[str] = []
    values: list[float] = []
    ranks: list[float] = []  # a rank column beside scores orders equal scores under ties="input"
    both = "score" in found and "rank" in found
    extra: dict[str, list[Any]] = {name: [] for name in ("doc_version", "text") if name in found}
    for rec in records.items:
        qid = _text(records, rec, q, "query id")
        rq.append(index.setdefault(qid, len(index)))
        rd.append(_text(records, rec, d, "item id"))
        values.append(_number(records, rec, key))
        if both:
            ranks.append(_number(records, rec, found["rank"]))
            if abs(ranks[-1]) >= MAX_RANK:
                raise fail(records.path, rec, f"must be below 2^53 ({MAX_RANK:,}); got {rec.data.get(found['rank'])!r}"[:120],
                           field=found["rank"], hint="beyond 2^53 neighbouring ranks cannot be told apart; number the items 1, 2, 3, …")
        elif key == found.get("rank") and abs(values[-1]) >= MAX_RANK:
            raise fail(records.path, rec, f"must be below 2^53 ({MAX_RANK:,}); got {rec.data.get(key)!r}"[:120],
                       field=key, hint="beyond 2^53 neighbouring ranks cannot be told apart; number the items 1, 2, 3, …")
        for name, col in extra.items():
            col.append(_opt(rec, found[name]))
    arr = np.asarray(values, dtype=np.float64)
    run = Run(list(index), np.asarray(rq, dtype=np.int64), strings_of(rd), source=records.path)
    if "score" in found:
        run.r_score = arr
        if both:
            run.r_order = np.asarray(ranks, dtype=np.float64)
    else:
        run.r_order = arr
    run.items = {name: col for name, col in extra.items() if any(v is not None for v in col)}
    return run


class _Header:
    """The column names of a table, for :func:`_resolve` before any row is read."""

    def __init__(self, path: str, columns: list[str]) -> None:
        self.path = path
        self.columns = columns
        self.items: list[Record] = []


def read_csv_fast(path: str, header: list[str], delimiter: str, kind: str,
                  columns: Mapping[str, str] | None = None) -> Gold | Run | None:
    """A regular CSV long table read by pyarrow's parallel reader; None when anything is irregular
    (a gap, a number that is not plain, an id with spaces around it, a repeated judgement, a BOM),
    and the caller reads the file line by line, which names the bad line. Same result either way."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pacsv

    found = _resolve(_Header(path, header), GOLD_USES if kind == "gold" else RUN_USES, columns)  # type: ignore[arg-type]
    need = ("query_id", "chunk_id", "grade") if kind == "gold" else ("query_id", "chunk_id")
    if any(n not in found for n in need) or (kind == "run" and "score" not in found and "rank" not in found):
        return None
    with open(path, "rb") as fh:
        head = fh.read(3)
    if head == b"\xef\xbb\xbf" or (head[:2] == b"\x1f\x8b" and not path.endswith(".gz")):
        return None  # a BOM, or gzip by content (pyarrow goes by the name): the line reader takes it
    text_cols = [found[n] for n in found if n not in ("grade", "score", "rank")]
    try:
        table = pacsv.read_csv(
            path,
            parse_options=pacsv.ParseOptions(delimiter=delimiter),
            convert_options=pacsv.ConvertOptions(column_types={c: pa.string() for c in text_cols},
                                                 strings_can_be_null=False, quoted_strings_can_be_null=False),
        )
    except (pa.ArrowInvalid, OSError, UnicodeDecodeError):
        return None
    if table.num_rows == 0 or table.column_names != header:
        return None
    q, d = table.column(found["query_id"]), table.column(found["chunk_id"])
    for col in (q, d):
        if col.null_count or pc.any(pc.match_substring_regex(col, r"^\s|\s$|^$")).as_py():
            return None
    qcodes = pc.dictionary_encode(q.combine_chunks())
    qids = qcodes.dictionary.to_pylist()
    codes = np.asarray(qcodes.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
    docs = d.combine_chunks()

    def optional(name: str) -> list[str | None] | None:
        if name not in found:
            return None
        values = table.column(found[name]).to_pylist()
        return [None if v == "" else v for v in values]

    if kind == "gold":
        g = table.column(found["grade"])
        if not pa.types.is_integer(g.type) or g.null_count:
            return None
        gold = Gold(qids, codes, docs, np.asarray(g.to_numpy(), dtype=np.int64), source=path)
        from rankgate.io.trec import check_unique_judgements

        try:
            check_unique_judgements(gold)
        except InputError:  # the line-by-line reader names both lines
            return None
        texts = optional("query")
        if texts is not None:
            first: list[str | None] = [None] * len(qids)
            for qi, t in zip(codes.tolist(), texts):
                if first[qi] is None:
                    first[qi] = t
            if any(t is not None for t in first):
                gold.fields["query"] = first
        notes = optional("note")
        if notes is not None and any(n is not None for n in notes):
            gold.notes = notes
        return gold
    numbers: dict[str, np.ndarray] = {}
    for name in ("score", "rank"):
        if name not in found:
            continue
        v = table.column(found[name])
        if not (pa.types.is_integer(v.type) or pa.types.is_floating(v.type)) or v.null_count:
            return None
        numbers[name] = np.asarray(v.to_numpy(), dtype=np.float64)
        if not np.isfinite(numbers[name]).all() or (name == "rank" and not (np.abs(numbers[name]) < MAX_RANK).all()):
            return None
    run = Run(qids, codes, docs, source=path)
    if "score" in numbers:
        run.r_score = numbers["score"]
        run.r_order = numbers.get("rank")  # orders equal scores under ties="input"
    else:
        run.r_order = numbers["rank"]
    for name in ("doc_version", "text"):
        col = optional(name)
        if col is not None and any(x is not None for x in col):
            run.items[name] = col
    return run
