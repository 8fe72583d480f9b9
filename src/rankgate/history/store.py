"""The history store: a folder of Parquet files, one per entry, queried with DuckDB.

Layout of a store folder::

    rankgate-history.json      {"format": "rankgate history", "schema": 1}: what the folder is, and its schema
    entries/<id>.parquet       one entry: its rows (metric means, gates, checks) and its per-query values
    .lock                      the writers' lock (flock); not data
    .gitignore                 keeps the lock and temporary files out of a git branch

One file per entry keeps a store friendly to git branches and CI artifacts: an entry never rewrites another's
file, so two branches that each added entries merge without a conflict. The file is named by the entry's id
(:func:`~rankgate.history.entries.entry_id` of its key), so recording the same key again writes the same file:
an unchanged summary is left as it is, a changed one replaces it.

Writers take an exclusive lock on ``.lock`` (``flock``) for the whole add, write the entry to a temporary file in
``entries/`` and rename it into place: a reader sees the old file or the whole new one, never a torn one, and
writers in parallel processes lose nothing. Readers take no lock.

Every file carries the schema version in a column (``schema``) and in its key-value metadata; the store's marker
file carries it too. A store or an entry of another schema version, a file in ``entries/`` that is not a whole
Parquet file (torn by something other than rankgate, or not Parquet), or a Parquet file rankgate did not write,
is an :class:`~rankgate.errors.InputError` naming the file: nothing is read around it and nothing is written.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rankgate.errors import InputError, OutputError
from rankgate.history.entries import Entry, entry_id

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

    from rankgate.gating.baseline import PerQuery

__all__ = ["MARKER", "SCHEMA", "Added", "Snapshot", "Store", "open_store"]

#: The schema version this rankgate reads and writes.
SCHEMA = 1
FORMAT = "rankgate history"
MARKER = "rankgate-history.json"
ENTRIES = "entries"
LOCK = ".lock"
META_KEY = b"rankgate.history.schema"
FILE_NAME = re.compile(r"^[0-9a-f]{12}\.parquet$")
BATCH_NAME = re.compile(r"^b-[0-9a-f]{16}\.parquet$")
#: Entry files from which an add gathers them into one batch file (a store of 10,000 entries is then ~160 files:
#: each file read costs about the same, whatever it holds).
COMPACT_AT = 64
TEMP_PREFIX = ".rankgate-"

#: The columns of every entry file: the entry's own (the same on each of its rows), then the row's.
ENTRY_COLUMNS = ("schema", "entry", "kind", "commit", "branch", "when_us", "added_us", "gold_sha256", "inputs_sha256",
                 "content_sha256", "corpus_version", "label", "source")
ROW_TEXT = ("row", "metric", "field", "segment", "gate", "status", "owner", "severity", "check", "verdict")
ROW_FLOAT = ("mean", "ci_low", "ci_high", "limit", "value")
PER_QUERY_ROWS = ("pq", "pqv", "pqr")  # the per-query header, one metric's values, the first relevant ranks


@dataclass(frozen=True)
class Added:
    """What one add did: ``added``, ``replaced`` (same key, another file) or ``unchanged`` (the same file again)."""

    entry: str
    kind: str
    commit: str
    status: str
    source: str


def _schema() -> pa.Schema:
    import pyarrow as pa

    fields = [pa.field("schema", pa.int32())]
    fields += [pa.field(c, pa.int64() if c.endswith("_us") else pa.string()) for c in ENTRY_COLUMNS[1:]]
    fields += [pa.field(c, pa.string()) for c in ROW_TEXT]
    fields += [pa.field(c, pa.float64()) for c in ROW_FLOAT]
    fields += [pa.field("n", pa.int64()), pa.field("text", pa.string()), pa.field("data", pa.large_binary())]
    return pa.schema(fields, metadata={META_KEY: str(SCHEMA).encode()})


def open_store(path: str, *, create: bool = False) -> Store:
    """The store at ``path``; with ``create``, a missing or empty folder becomes one. Refused, naming the folder: a
    path that is no folder, a folder that is not a store (or a store of another schema version)."""
    shown = os.fspath(path)
    if not os.path.exists(shown):
        if not create:
            raise InputError("does not exist", path=shown, hint="record an entry first: rankgate history add FILE --store DIR")
    elif not os.path.isdir(shown):
        raise InputError("is not a folder (a history store is a folder)", path=shown)
    marker = os.path.join(shown, MARKER)
    if os.path.isfile(marker):
        _check_marker(marker)
    elif not create:
        raise InputError(f"is not a rankgate history store (it has no {MARKER})", path=shown,
                         hint="give the folder history add wrote into")
    elif os.path.isdir(shown) and any(not n.startswith(".") and n != ENTRIES for n in os.listdir(shown)):
        # (an entries folder alone is a store another writer is making now: its marker comes under the lock)
        raise InputError(f"is a folder that is not a rankgate history store (it has files but no {MARKER})", path=shown,
                         hint="give an empty or new folder, or the folder history add wrote into")
    return Store(shown)


def _check_marker(marker: str) -> None:
    try:
        with open(marker, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot be read as the store's marker ({type(exc).__name__})", path=marker) from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise InputError(f"is not a rankgate history marker (expected format {FORMAT!r})", path=marker)
    version = data.get("schema")
    if version != SCHEMA:
        newer = isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA
        raise InputError(f"is a history store of schema {version!r}; this rankgate reads schema {SCHEMA}", path=marker,
                         hint="use a newer rankgate" if newer else "record its summaries again into a new store")


class Store:
    """A history store folder (:func:`open_store`)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.entries = os.path.join(path, ENTRIES)

    # -- writing ------------------------------------------------------------------------------------
    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """The writers' lock on the store (exclusive; held by one process at a time), the store made if new."""
        import fcntl

        try:
            os.makedirs(self.entries, exist_ok=True)
            fd = os.open(os.path.join(self.path, LOCK), os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as exc:
            raise OutputError(f"cannot be written ({exc.strerror or exc})", path=self.path,
                              hint="give a folder this user may write") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if not os.path.isfile(os.path.join(self.path, MARKER)):
                from rankgate._util.atomic import write_files

                write_files({os.path.join(self.path, MARKER): json.dumps({"format": FORMAT, "schema": SCHEMA}) + "\n",
                             os.path.join(self.path, ".gitignore"): f"{LOCK}\n{TEMP_PREFIX}*\n"})
            else:
                _check_marker(os.path.join(self.path, MARKER))
            yield
        finally:
            os.close(fd)  # (closing the descriptor lets go of the lock)

    def add(self, entry: Entry, *, commit: str, branch: str, when_us: int, added_us: int) -> Added:
        """Record ``entry`` (under the lock): its file written whole and renamed into place."""
        key = entry.key(commit)
        eid = entry_id(key)
        target = os.path.join(self.entries, f"{eid}.parquet")
        with self.locked():
            old = self._content_of(eid)
            if old == (entry.content_sha256, commit, branch, when_us):
                return Added(eid, entry.kind, commit, "unchanged", entry.source)
            table = _table(entry, eid, commit, branch, when_us, added_us)
            self._write(table, target)
            self._compact()
        return Added(eid, entry.kind, commit, "added" if old is None else "replaced", entry.source)

    def _content_of(self, eid: str) -> tuple[str, str, str, int] | None:
        """(content sha256, commit, branch, time) of the newest recording of the entry ``eid``, or None."""
        cols = ["content_sha256", "commit", "branch", "when_us", "added_us"]
        target = self.file_of(eid)
        if os.path.exists(target):
            t = self._read_file(target, ["schema", *cols])
            rows = [tuple(r.values()) for r in t.select(cols).slice(0, 1).to_pylist()]
        else:
            batches = [p for p in self.files() if BATCH_NAME.match(os.path.basename(p))]
            rows = self._in_batches(batches, cols, eid)
        if not rows:
            return None
        newest = max(rows, key=lambda r: r[4])
        return (newest[0], newest[1], newest[2], newest[3])

    def _in_batches(self, batches: Sequence[str], cols: Sequence[str], eid: str) -> list[tuple[Any, ...]]:
        """The distinct values of ``cols`` (``filename`` among them if wanted) of the entry ``eid`` in the batches."""
        if not batches:
            return []
        import duckdb

        listing = "[" + ", ".join(_sql_text(p) for p in batches) + "]"
        select = ", ".join(f'"{c}"' for c in cols)
        con = duckdb.connect(config={"threads": 2})
        try:
            return con.execute(f"SELECT DISTINCT {select} FROM read_parquet({listing}, filename = true) WHERE entry = ?",
                               [eid]).fetchall()
        except duckdb.Error:
            self._find_bad(batches)
            raise
        finally:
            con.close()

    def _compact(self) -> None:
        """Under the lock: from :data:`COMPACT_AT` entry files on, gather them into one batch file (written whole and
        renamed into place, then the entry files removed). A reader that lists the folder between the two sees an
        entry twice, which every read resolves (the newest recording of each entry is read)."""
        import hashlib

        import pyarrow as pa

        loose = [p for p in self.files() if FILE_NAME.match(os.path.basename(p))]
        if len(loose) < COMPACT_AT:
            return
        tables = [self._read_file(p, list(_schema().names)) for p in loose]
        digest = hashlib.sha256()
        for t in tables:
            first = t.slice(0, 1).to_pylist()[0]
            digest.update(f"{first['entry']} {first['content_sha256']} {first['added_us']}\n".encode())
        target = os.path.join(self.entries, f"b-{digest.hexdigest()[:16]}.parquet")
        self._write(pa.concat_tables(tables).cast(_schema()), target)
        for p in loose:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(p)

    def _write(self, table: pa.Table, target: str) -> None:
        import tempfile

        import pyarrow.parquet as pq

        from rankgate._util.atomic import held_signals

        fd, tmp = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=".tmp", dir=self.entries)
        try:
            with os.fdopen(fd, "wb") as fh:
                pq.write_table(table, fh, compression="zstd", write_statistics=False)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp, 0o644)
            with held_signals():
                os.replace(tmp, target)
        except BaseException as exc:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            if isinstance(exc, OSError):
                raise OutputError(f"cannot be written ({exc.strerror or exc})", path=target,
                                  hint="check the free space and the folder's permissions") from None
            raise

    # -- reading ------------------------------------------------------------------------------------
    def files(self) -> list[str]:
        """The entry files, sorted; anything else in ``entries/`` that is Parquet is named as foreign."""
        try:
            names = sorted(os.listdir(self.entries))
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise InputError(f"cannot be read ({exc.strerror or exc})", path=self.entries) from None
        out = []
        for name in names:
            if FILE_NAME.match(name) or BATCH_NAME.match(name):
                out.append(os.path.join(self.entries, name))
            elif name.endswith(".parquet"):
                raise InputError("is not an entry of this store (entry files are named <12 hex digits>.parquet, "
                                 "batches b-<16 hex digits>.parquet)",
                                 path=os.path.join(self.entries, name),
                                 hint="move it out of the store's entries folder; rankgate history add writes the entries")
        return out

    def snapshot(self) -> Snapshot:
        """Every entry and every row but the per-query arrays, read once (one pass over the files) into DuckDB
        tables: ``e`` (one row per entry) and ``r`` (the rows: metric means, gates, checks, per-query headers).
        Every file is checked for the schema version."""
        import duckdb

        paths = self.files()
        con = duckdb.connect(config={"threads": 2})
        entry_cols = ", ".join(f'"{c}"' for c in ENTRY_COLUMNS)
        row_cols = ", ".join(f'"{c}"' for c in (*ROW_TEXT, *ROW_FLOAT, "n"))
        if not paths:
            types = {c: "INTEGER" if c == "schema" else "BIGINT" if c.endswith("_us") else "VARCHAR" for c in ENTRY_COLUMNS}
            types.update({c: "VARCHAR" for c in ROW_TEXT} | {c: "DOUBLE" for c in ROW_FLOAT} | {"n": "BIGINT"})
            types["filename"] = "VARCHAR"
            con.execute("CREATE TEMP TABLE r (" + ", ".join(f'"{c}" {t}' for c, t in types.items()) + ")")
        else:
            listing = "[" + ", ".join(_sql_text(p) for p in paths) + "]"
            try:
                con.execute(f"CREATE TEMP TABLE r AS SELECT {entry_cols}, {row_cols}, filename FROM read_parquet("
                            f"{listing}, filename = true) WHERE row <> 'pqv' AND row <> 'pqr'")
            except duckdb.Error as exc:
                con.close()
                self._find_bad(paths)
                raise InputError(f"cannot be read: {str(exc).splitlines()[0][:200]}", path=self.entries,
                                 hint="is a file in the store torn or foreign? move it out") from None
            bad = con.execute("SELECT count(*) FROM r WHERE schema IS DISTINCT FROM ?", [SCHEMA]).fetchone()
            if bad and bad[0]:
                con.close()
                self._find_bad(paths)
            # An entry in two files (a batch being made, a branch merged): the newest recording is read.
            twice = con.execute("SELECT count(*) FROM (SELECT entry FROM r GROUP BY entry HAVING count(DISTINCT filename) "
                                "> 1)").fetchone()
            if twice and twice[0]:
                con.execute("CREATE TEMP TABLE pick AS SELECT entry, arg_max(filename, added_us) AS f FROM (SELECT "
                            "DISTINCT entry, filename, added_us FROM r) GROUP BY entry")
                con.execute("DELETE FROM r WHERE NOT EXISTS (SELECT 1 FROM pick WHERE pick.entry = r.entry AND "
                            "pick.f = r.filename)")
        con.execute(f"CREATE TEMP TABLE e AS SELECT DISTINCT {entry_cols}, filename FROM r")
        return Snapshot(self, con)

    def _find_bad(self, paths: Sequence[str]) -> None:
        """Raise the InputError of the first file that is not a whole entry file of this schema."""
        for path in paths:
            self._read_file(path, ["schema"])

    def _read_file(self, path: str, columns: list[str]) -> pa.Table:
        """The columns of one entry file, or an InputError naming it (torn, foreign, another schema)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            f = pq.ParquetFile(path)
            meta = f.schema_arrow.metadata or {}
        except (OSError, pa.ArrowException) as exc:
            raise InputError(f"is not a whole Parquet file ({str(exc).splitlines()[0][:120]})", path=path,
                             hint="rankgate writes each entry whole, so something else wrote or cut this file: move it out "
                                  "of the store, or restore it from the store's git history") from None
        version = meta.get(META_KEY)
        if version is None or "schema" not in f.schema_arrow.names:
            raise InputError("is a Parquet file rankgate history did not write (no schema version)", path=path,
                             hint="move it out of the store's entries folder")
        if version != str(SCHEMA).encode():
            raise InputError(f"is an entry of schema {version.decode('ascii', 'replace')}; this rankgate reads schema "
                             f"{SCHEMA}", path=path, hint="use the rankgate that wrote it, or record the summary again")
        try:
            return f.read(columns=columns)
        except (OSError, pa.ArrowException) as exc:
            raise InputError(f"is not a whole Parquet file ({str(exc).splitlines()[0][:120]})", path=path) from None

    def file_of(self, entry: str) -> str:
        return os.path.join(self.entries, f"{entry}.parquet")

    def per_query(self, entry: str) -> PerQuery | None:
        """The per-query values of an entry (None when its summary carried none)."""
        import numpy as np

        from rankgate.gating.baseline import PerQuery

        path = self.file_of(entry)
        if not os.path.exists(path):  # gathered into a batch: its newest recording
            batches = [p for p in self.files() if BATCH_NAME.match(os.path.basename(p))]
            found = self._in_batches(batches, ["filename", "added_us"], entry)
            if not found:
                raise InputError(f"holds no entry {entry}", path=self.entries, hint="rankgate history show --json lists them")
            path = max(found, key=lambda r: (r[1], r[0]))[0]
        t = self._read_file(path, ["entry", "row", "metric", "text", "data"])
        rows = [r for r in t.to_pylist() if r["entry"] == entry]
        head = next((r for r in rows if r["row"] == "pq"), None)
        if head is None:
            return None
        info = json.loads(head["text"])
        n = int(info["n"])
        raw_ids = head["data"] or b""
        ids = tuple(raw_ids.hex()[i:i + 16] for i in range(0, 16 * (len(raw_ids) // 8), 16))
        values = {r["metric"]: np.frombuffer(r["data"], dtype="<f8") for r in rows if r["row"] == "pqv"}
        for m, v in values.items():
            if v.size != n:
                raise InputError(f"holds {v.size} values of {m} for {n} queries", path=path,
                                 hint="restore the file from the store's git history, or record the summary again")
        ranks = next((np.frombuffer(r["data"], dtype="<i8") for r in rows if r["row"] == "pqr"), None)
        missing_at = frozenset(info["missing_at"]) if info.get("missing_at") is not None else None
        return PerQuery(info.get("gold_sha256"), ids, values, ranks, frozenset(info.get("missing_ids") or ()),
                        ids_sha256=info.get("ids_sha256"), n=n, missing_at=missing_at)


class Snapshot:
    """The store's rows, read once (:meth:`Store.snapshot`): query them with :meth:`fetch` (DuckDB SQL over the
    tables ``e`` and ``r``)."""

    def __init__(self, store: Store, con: Any) -> None:
        self.store = store
        self._con = con

    def fetch(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self._con.execute(sql, list(params)).fetchall()

    def close(self) -> None:
        self._con.close()


def _sql_text(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _table(entry: Entry, eid: str, commit: str, branch: str, when_us: int, added_us: int) -> pa.Table:
    """The entry as one Arrow table in the store's schema."""
    import numpy as np
    import pyarrow as pa

    records: list[dict[str, Any]] = []
    for r in entry.rows:
        rec: dict[str, Any] = {c: getattr(r, c) for c in ROW_TEXT}
        rec.update({c: None if math.isnan(getattr(r, c)) else getattr(r, c) for c in ROW_FLOAT})
        rec["n"] = None if r.n < 0 else r.n
        records.append(rec)
    pq_ = entry.per_query
    if pq_ is not None:
        n = pq_.n if pq_.n is not None else len(pq_.ids)
        info = {"gold_sha256": pq_.gold_sha256, "ids_sha256": pq_.ids_sha256, "n": n,
                "missing_at": None if pq_.missing_at is None else sorted(pq_.missing_at),
                "missing_ids": sorted(pq_.missing_from_run)}
        records.append({"row": "pq", "text": json.dumps(info, sort_keys=True),
                        "data": bytes.fromhex("".join(pq_.ids)) if pq_.ids else b""})
        for m, v in pq_.values.items():
            records.append({"row": "pqv", "metric": m, "data": np.ascontiguousarray(v, dtype="<f8").tobytes()})
        if pq_.first_relevant_rank is not None:
            records.append({"row": "pqr", "data": np.ascontiguousarray(pq_.first_relevant_rank, dtype="<i8").tobytes()})
    if not records:
        records.append({"row": "entry"})  # an entry with no number still says it was recorded
    schema = _schema()
    constant = {"schema": SCHEMA, "entry": eid, "kind": entry.kind, "commit": commit, "branch": branch,
                "when_us": when_us, "added_us": added_us, "gold_sha256": entry.gold_sha256,
                "inputs_sha256": entry.inputs_sha256, "content_sha256": entry.content_sha256,
                "corpus_version": entry.corpus_version, "label": entry.label, "source": os.path.basename(entry.source)}
    columns = {}
    for f in schema:
        if f.name in constant:
            columns[f.name] = pa.array([constant[f.name]] * len(records), f.type)
        else:
            default = "" if pa.types.is_string(f.type) else None
            columns[f.name] = pa.array([rec.get(f.name, default) for rec in records], f.type)
    return pa.table(columns, schema=schema)
