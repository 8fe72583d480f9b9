"""The labels database: one SQLite file in WAL mode, every label committed as it is given.

Tables (schema :data:`SCHEMA`, recorded in ``meta``):

``meta``      the schema version, what the database labels (the queue's file name and sha256, its shape, the
              kind of item), the scale, the overlap share, and the server that has it open
``items``     what is labelled, in queue order (``pos``); ``need``: how many annotators should label it (1, or 2 for
              an overlap item; 0 for an item labelled from the browse view, which no card shows); ``taken``: the
              annotators who labelled it or have it on their screen now; ``labelled``: who labelled it
``labels``    every action as given, never deleted: a grade (or the verdicts), a skip; with the annotator, the time,
              how it was given (``card`` or ``browse``) and a note. Undo and a second grade for the same item end a
              row (``ended_at``, ``ended_by``) instead of removing it, so the history is kept
``holds``     the card each annotator has on screen: where they resume
``strata``    items and items done per stratum (the progress bar), kept as labels come in

Who gets which card: the first item, in queue order, that still needs an annotator (``taken < need``) and that this
annotator has not labelled or skipped. Two annotators working at once get different items, except an overlap item,
which both get, neither seeing the other's label. Which items overlap is decided once, when the queue is read: the
share ``overlap`` of the items whose sha256 of ``query_id, id`` is smallest (a fixed, even spread).

One server at a time: ``rankgate label serve`` holds an advisory lock on the file (``flock``) while it runs, and a
second server on the same database is refused with the first one's address. ``label export`` and ``label
agreement`` read while a server writes (WAL readers see the last committed label).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from rankgate.errors import F, InputError, UsageError
from rankgate.labels.queue import Queue, QueueItem
from rankgate.labels.scales import SCALES, Scale

__all__ = ["SCHEMA", "Card", "LabelRow", "LabelStore", "Progress", "now"]

#: The schema version this rankgate reads and writes.
SCHEMA = 1
APP = "rankgate-labels"
BUSY_MS = 3000  # how long a write waits for another writer before the database is said to be locked

_DDL = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE items (
    pos INTEGER PRIMARY KEY,
    query_id TEXT NOT NULL,
    item_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    source TEXT NOT NULL,
    stratum TEXT NOT NULL,
    need INTEGER NOT NULL,
    taken INTEGER NOT NULL DEFAULT 0,
    labelled INTEGER NOT NULL DEFAULT 0,
    payload TEXT NOT NULL,
    UNIQUE (query_id, item_id)
);
CREATE INDEX open_items ON items(pos) WHERE taken < need;
CREATE TABLE labels (
    seq INTEGER PRIMARY KEY,
    pos INTEGER NOT NULL REFERENCES items(pos),
    annotator TEXT NOT NULL,
    action TEXT NOT NULL,
    grade INTEGER,
    faithful INTEGER,
    correct INTEGER,
    note TEXT,
    at TEXT NOT NULL,
    via TEXT NOT NULL,
    ended_at TEXT,
    ended_by TEXT
);
CREATE INDEX labels_active ON labels(annotator, pos) WHERE ended_at IS NULL;
CREATE INDEX labels_of_item ON labels(pos) WHERE ended_at IS NULL;
CREATE TABLE holds (annotator TEXT PRIMARY KEY, pos INTEGER NOT NULL, since TEXT NOT NULL);
CREATE TABLE strata (stratum TEXT PRIMARY KEY, total INTEGER NOT NULL, done INTEGER NOT NULL);
"""


def now() -> str:
    """The time a label is given: UTC, to the millisecond (``2026-05-01T09:30:12.345Z``)."""
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class Progress:
    done: int                                  # items with all the labels they need
    total: int                                 # items of the queue
    mine: int                                  # labels this annotator gave (cards and browse)
    strata: tuple[tuple[str, int, int], ...]   # (stratum, done, total), by name


@dataclass(frozen=True)
class Card:
    pos: int
    item: QueueItem
    overlap: bool                              # a second annotator labels it too


@dataclass(frozen=True)
class LabelRow:
    """One label in force (the last given by its annotator for its item), with its item."""

    seq: int
    item: QueueItem
    annotator: str
    grade: int | None
    faithful: bool | None
    correct: bool | None
    note: str | None
    at: str
    via: str


def _bool(v: int | None) -> bool | None:
    return None if v is None else bool(v)


def _item(row: Sequence[Any]) -> QueueItem:
    """An item from ``query_id, item_id, kind, source, stratum, payload``."""
    return QueueItem(row[0], row[1], row[2], row[3], row[4], json.loads(row[5]))


class LabelStore:
    """The database at ``path`` (module docs). Safe to share between threads: every call takes one lock and runs in
    one transaction."""

    def __init__(self, path: str, conn: sqlite3.Connection) -> None:
        self.path = path
        self._conn = conn
        self._lock = threading.RLock()
        self._server_fd: int | None = None

    # -- opening ---------------------------------------------------------------------------------------------------
    @classmethod
    def open(cls, path: str, *, create: bool = False) -> LabelStore:
        """Open the database; with ``create``, a missing file is made. Another schema version, a file that is no
        rankgate labels database, or a locked one is an :class:`InputError` naming the file."""
        path = os.fspath(path)
        exists = os.path.exists(path) and os.path.getsize(path) > 0
        if not exists and not create:
            raise InputError("does not exist", path=path,
                             hint="give the database rankgate label serve wrote (--db)")
        if os.path.isdir(path):
            raise InputError("is a folder, not a labels database", path=path, hint="give a file path to --db")
        try:
            conn = sqlite3.connect(path, timeout=BUSY_MS / 1000, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise InputError(f"cannot be opened: {exc}", path=path) from None
        store = cls(path, conn)
        try:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_MS}")
            if not exists:
                store._create()
            store._check()
            conn.execute("PRAGMA synchronous = FULL")  # a label acknowledged is on disk
            conn.execute("PRAGMA foreign_keys = ON")
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise _database_error(path, exc) from None
        except BaseException:
            conn.close()
            raise
        return store

    def _create(self) -> None:
        mode = self._conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise InputError(f"cannot be kept in WAL mode (the file system gave {mode!r})", path=self.path,
                             hint="put the database on a local disk")
        with self._lock:  # (one script, one transaction: a database is made whole or not at all)
            self._conn.executescript("BEGIN IMMEDIATE;\n" + _DDL + "COMMIT;\n")
        with self._write():
            self._set({"app": APP, "schema": str(SCHEMA), "created": now()})

    def _check(self) -> None:
        try:
            rows = dict(self._conn.execute("SELECT key, value FROM meta").fetchall())
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                raise InputError("is an SQLite database, but not one of rankgate label", path=self.path,
                                 hint="give --db a new file or one rankgate label serve wrote") from None
            raise
        if rows.get("app") != APP:
            raise InputError("is an SQLite database, but not one of rankgate label", path=self.path,
                             hint="give --db a new file or one rankgate label serve wrote")
        if rows.get("schema") != str(SCHEMA):
            raise InputError(f"has labels database schema {rows.get('schema')}; this rankgate reads schema {SCHEMA}",
                             path=self.path, hint="use the rankgate version that wrote it (its labels are kept as "
                                                  "they are), or export them with it and start a new database")

    def close(self) -> None:
        with self._lock:
            self.release_server()
            self._conn.close()

    # -- helpers ---------------------------------------------------------------------------------------------------
    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (``BEGIN IMMEDIATE``): committed when the block ends, rolled back on an error. A
        database another program holds locked longer than :data:`BUSY_MS` is an InputError saying so."""
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                raise _database_error(self.path, exc) from None
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            try:
                self._conn.execute("COMMIT")
            except sqlite3.OperationalError as exc:
                self._conn.execute("ROLLBACK")
                raise _database_error(self.path, exc) from None

    def _set(self, values: Mapping[str, str]) -> None:
        self._conn.executemany("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", list(values.items()))

    @property
    def meta(self) -> dict[str, str]:
        with self._lock:
            return dict(self._conn.execute("SELECT key, value FROM meta").fetchall())

    @property
    def scale(self) -> Scale:
        name = self.meta.get("scale")
        if name not in SCALES:
            raise InputError("holds no labels yet (no scale was set)", path=self.path,
                             hint="label with rankgate label serve first")
        return SCALES[name]

    # -- binding a queue -------------------------------------------------------------------------------------------
    def bind_queue(self, queue: Queue, scale: Scale, overlap: float) -> None:
        """Import ``queue`` into a new database, or check that the database labels this very queue (same sha256),
        on the same scale and with the same overlap; each difference is an InputError saying which."""
        meta = self.meta
        name = os.path.basename(queue.path)
        if "queue_sha256" in meta:
            if meta["queue_sha256"] != queue.sha256:
                raise InputError(f"holds the labels of another queue ({meta.get('queue')}, sha256 "
                                 f"{meta['queue_sha256'][:12]}…), not of {name} (sha256 {queue.sha256[:12]}…)",
                                 path=self.path, hint="give each queue its own --db; a queue is not edited once labelling "
                                                      "started")
            self._same(meta, scale, overlap)
            return
        if meta.get("kind") and meta["kind"] != _kind_of(queue):
            raise InputError(f"holds {meta['kind']} labels; {name} is a queue of {_kind_of(queue)} items", path=self.path,
                             hint="give this queue its own --db")
        if "scale" in meta and meta["scale"] != scale.name:
            self._same(meta, scale, overlap)
        needs = _overlap_needs(queue.items, overlap)
        with self._write() as c:
            first = c.execute("SELECT COALESCE(MAX(pos), 0) FROM items").fetchone()[0]
            existing = {(q, d): p for p, q, d in c.execute("SELECT pos, query_id, item_id FROM items")}
            rows = []
            for i, (item, need) in enumerate(zip(queue.items, needs), start=first + 1):
                if (item.query_id, item.item_id) in existing:  # labelled from the browse view before: now a card too
                    c.execute("UPDATE items SET need = ?, stratum = ?, source = ?, payload = ? WHERE pos = ?",
                              (need, item.stratum, item.source, _payload(item), existing[(item.query_id, item.item_id)]))
                    continue
                rows.append((i, item.query_id, item.item_id, item.kind, item.source, item.stratum, need, _payload(item)))
            c.executemany("INSERT INTO items(pos, query_id, item_id, kind, source, stratum, need, payload) "
                          "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
            for pos, in c.execute("SELECT pos FROM items WHERE need > 0 AND pos IN (SELECT pos FROM labels)").fetchall():
                self._recount(pos)
            c.execute("DELETE FROM strata")
            c.execute("INSERT INTO strata(stratum, total, done) SELECT stratum, COUNT(*), SUM(labelled >= need) "
                      "FROM items WHERE need > 0 GROUP BY stratum")
            self._set({"queue": name, "queue_sha256": queue.sha256, "shape": queue.shape, "kind": _kind_of(queue),
                       "scale": scale.name, "overlap": repr(float(overlap)), "queue_items": str(len(queue.items))})

    def _same(self, meta: Mapping[str, str], scale: Scale, overlap: float) -> None:
        if meta.get("scale") and meta["scale"] != scale.name:
            raise UsageError(f"{self.path}: is labelled on the {meta['scale']} scale, not {scale.name}; give {F.scale} "
                             f"{meta['scale']} (labels on two scales cannot be compared), or another {F.db}")
        if "overlap" in meta and float(meta["overlap"]) != float(overlap):
            raise UsageError(f"{self.path}: was started with overlap {float(meta['overlap']):g}, not {float(overlap):g}; "
                             f"give {F.overlap} {float(meta['overlap']):g} (the items shared were chosen with it)")

    def bind_browse(self, scale: Scale) -> None:
        """Use the database for labels given in the browse view (relevance); a database of answers is refused."""
        meta = self.meta
        if meta.get("kind") == "answer":
            raise InputError("holds verdicts on answers; the browse view labels retrieved items", path=self.path,
                             hint="give the browse view its own --db")
        if meta.get("scale") and meta["scale"] != scale.name:
            self._same(meta, scale, float(meta.get("overlap", 0)))
        with self._write():
            self._set({"kind": "relevance", "scale": scale.name})

    # -- the server's lock -----------------------------------------------------------------------------------------
    def claim_server(self, url: str) -> None:
        """Hold the database for one server (module docs); a second one is an InputError naming the first."""
        try:
            import fcntl
        except ImportError:  # (no advisory locks here: one server per database is on the user)
            return
        fd = os.open(self.path, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            meta = self.meta
            raise InputError(f"is open in another rankgate label serve (pid {meta.get('server_pid', '?')}, "
                             f"{meta.get('server_url', 'address unknown')})", path=self.path,
                             hint="label in that one (several annotators can share it), or stop it first") from None
        self._server_fd = fd
        with self._write():
            self._set({"server_pid": str(os.getpid()), "server_url": url, "server_started": now()})

    def release_server(self) -> None:
        if self._server_fd is not None:
            os.close(self._server_fd)
            self._server_fd = None

    # -- cards -----------------------------------------------------------------------------------------------------
    def _recount(self, pos: int) -> None:
        """``labelled`` and ``taken`` of one item from its labels and holds, and its stratum's count done."""
        c = self._conn
        row = c.execute("SELECT need, labelled, stratum FROM items WHERE pos = ?", (pos,)).fetchone()
        if row is None:
            return
        need, was, stratum = row
        labelled = c.execute("SELECT COUNT(DISTINCT annotator) FROM labels WHERE pos = ? AND ended_at IS NULL "
                             "AND action = 'label'", (pos,)).fetchone()[0]
        holding = c.execute("SELECT COUNT(*) FROM holds h WHERE h.pos = ? AND NOT EXISTS (SELECT 1 FROM labels l "
                            "WHERE l.pos = h.pos AND l.annotator = h.annotator AND l.ended_at IS NULL "
                            "AND l.action = 'label')", (pos,)).fetchone()[0]
        c.execute("UPDATE items SET labelled = ?, taken = ? WHERE pos = ?", (labelled, labelled + holding, pos))
        if need > 0 and (was >= need) != (labelled >= need):
            c.execute("UPDATE strata SET done = done + ? WHERE stratum = ?", (1 if labelled >= need else -1, stratum))

    def _card(self, pos: int) -> Card:
        row = self._conn.execute("SELECT query_id, item_id, kind, source, stratum, payload, need FROM items "
                                 "WHERE pos = ?", (pos,)).fetchone()
        return Card(pos, _item(row), row[6] > 1)

    def _hold(self, annotator: str, pos: int | None) -> None:
        old = self._conn.execute("SELECT pos FROM holds WHERE annotator = ?", (annotator,)).fetchone()
        self._conn.execute("DELETE FROM holds WHERE annotator = ?", (annotator,))
        if pos is not None:
            self._conn.execute("INSERT INTO holds(annotator, pos, since) VALUES (?, ?, ?)", (annotator, pos, now()))
        for p in {old[0] if old else None, pos} - {None}:
            self._recount(p)  # type: ignore[arg-type]

    def next_card(self, annotator: str) -> Card | None:
        """The card ``annotator`` has on screen, else the next one they should label (held for them), else None
        when nothing is left for them."""
        annotator = _annotator(annotator)
        with self._write() as c:
            held = c.execute("SELECT pos FROM holds WHERE annotator = ?", (annotator,)).fetchone()
            if held is not None:
                return self._card(held[0])
            row = c.execute("SELECT pos FROM items INDEXED BY open_items WHERE taken < need AND NOT EXISTS "
                            "(SELECT 1 FROM labels l WHERE l.annotator = ? AND l.pos = items.pos AND l.ended_at IS NULL) "
                            "ORDER BY pos LIMIT 1", (annotator,)).fetchone()
            if row is None:
                return None
            self._hold(annotator, row[0])
            return self._card(row[0])

    def give(self, annotator: str, pos: int, *, grade: int | None = None, faithful: bool | None = None,
             correct: bool | None = None, note: str | None = None, via: str = "card") -> None:
        """Record ``annotator``'s label of item ``pos`` (a grade, or the two verdicts), committed before this
        returns. A grade again for the same item ends the earlier one."""
        annotator = _annotator(annotator)
        scale = self.scale
        if scale.kind == "grade":
            if not scale.accepts(grade):
                raise UsageError(f"grade must be one of {', '.join(str(g) for g, _ in scale.grades)} on the "
                                 f"{scale.name} scale; got {grade!r}")
        elif not (faithful is None or isinstance(faithful, bool)) or not (correct is None or isinstance(correct, bool)):
            raise UsageError("faithful and correct must each be true, false or null")
        note = (note or "").strip()[:2000] or None
        with self._write() as c:
            self._exists(pos)
            at = now()
            c.execute("UPDATE labels SET ended_at = ?, ended_by = 'replaced' WHERE annotator = ? AND pos = ? "
                      "AND ended_at IS NULL", (at, annotator, pos))
            c.execute("INSERT INTO labels(pos, annotator, action, grade, faithful, correct, note, at, via) "
                      "VALUES (?, ?, 'label', ?, ?, ?, ?, ?, ?)",
                      (pos, annotator, grade if scale.kind == "grade" else None,
                       None if faithful is None else int(faithful), None if correct is None else int(correct), note,
                       at, via))
            held = c.execute("SELECT pos FROM holds WHERE annotator = ?", (annotator,)).fetchone()
            if held is not None and held[0] == pos:
                self._hold(annotator, None)
            else:
                self._recount(pos)

    def skip(self, annotator: str, pos: int) -> None:
        """``annotator`` passes on item ``pos``: it goes to someone else, and not to them again (undo brings it back)."""
        annotator = _annotator(annotator)
        with self._write() as c:
            self._exists(pos)
            c.execute("INSERT INTO labels(pos, annotator, action, at, via) VALUES (?, ?, 'skip', ?, 'card')",
                      (pos, annotator, now()))
            self._hold(annotator, None)

    def undo(self, annotator: str) -> int | None:
        """End ``annotator``'s last label or skip still in force; its item becomes their card again. The position,
        or None when there is nothing to undo."""
        annotator = _annotator(annotator)
        with self._write() as c:
            row = c.execute("SELECT seq, pos FROM labels WHERE annotator = ? AND ended_at IS NULL ORDER BY seq DESC "
                            "LIMIT 1", (annotator,)).fetchone()
            if row is None:
                return None
            seq, pos = row
            c.execute("UPDATE labels SET ended_at = ?, ended_by = 'undo' WHERE seq = ?", (now(), seq))
            need = c.execute("SELECT need FROM items WHERE pos = ?", (pos,)).fetchone()[0]
            if need > 0:
                self._hold(annotator, pos)
            else:
                self._recount(pos)
            return int(pos)

    def _exists(self, pos: int) -> None:
        if self._conn.execute("SELECT 1 FROM items WHERE pos = ?", (pos,)).fetchone() is None:
            raise UsageError(f"no item {pos} in {self.path}")

    def item_at(self, query_id: str, item_id: str, payload: Mapping[str, Any]) -> int:
        """The position of ``(query_id, item_id)``, added as a browse item (no card shows it) when the database does
        not hold it yet."""
        with self._write() as c:
            row = c.execute("SELECT pos FROM items WHERE query_id = ? AND item_id = ?", (query_id, item_id)).fetchone()
            if row is not None:
                return int(row[0])
            cur = c.execute("INSERT INTO items(query_id, item_id, kind, source, stratum, need, payload) "
                            "VALUES (?, ?, 'relevance', 'browse', '', 0, ?)",
                            (query_id, item_id, json.dumps(dict(payload), ensure_ascii=False)))
            return int(cur.lastrowid or 0)

    # -- reading ---------------------------------------------------------------------------------------------------
    def progress(self, annotator: str | None = None) -> Progress:
        with self._lock:
            c = self._conn
            strata = tuple((s, d, t) for s, t, d in c.execute("SELECT stratum, total, done FROM strata ORDER BY stratum"))
            mine = 0
            if annotator:
                mine = c.execute("SELECT COUNT(*) FROM labels INDEXED BY labels_active WHERE annotator = ? "
                                 "AND ended_at IS NULL AND action = 'label'", (annotator,)).fetchone()[0]
            return Progress(sum(d for _, d, _ in strata), sum(t for _, _, t in strata), mine, strata)

    def mine(self, annotator: str, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], int]:
        """``annotator``'s grades in force on the given ``(query_id, item_id)`` (the browse view shows one's own)."""
        out: dict[tuple[str, str], int] = {}
        with self._lock:
            for q, d in keys:
                row = self._conn.execute(
                    "SELECT l.grade FROM labels l JOIN items i ON i.pos = l.pos WHERE i.query_id = ? AND i.item_id = ? "
                    "AND l.annotator = ? AND l.ended_at IS NULL AND l.action = 'label' ORDER BY l.seq DESC LIMIT 1",
                    (q, d, annotator)).fetchone()
                if row is not None and row[0] is not None:
                    out[(q, d)] = int(row[0])
        return out

    def annotators(self) -> list[str]:
        with self._lock:
            return [r[0] for r in self._conn.execute("SELECT DISTINCT annotator FROM labels ORDER BY annotator")]

    def labels(self, *, payloads: bool = False) -> Iterator[LabelRow]:
        """Every label in force, by item (queue order, then browse items as added), then time; the items' payloads
        (texts, candidate records) only with ``payloads`` (an export of 100,000 labels does not parse 100,000 texts)."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT l.seq, i.query_id, i.item_id, i.kind, i.source, i.stratum, "
                + ("i.payload" if payloads else "'{}'") + ", l.annotator, l.grade, "
                "l.faithful, l.correct, l.note, l.at, l.via FROM labels l JOIN items i ON i.pos = l.pos "
                "WHERE l.ended_at IS NULL AND l.action = 'label' ORDER BY l.pos, l.seq").fetchall()
        for r in rows:
            yield LabelRow(r[0], _item(r[1:7]), r[7], r[8], _bool(r[9]), _bool(r[10]), r[11], r[12], r[13])

    def payloads(self, keys: Iterator[tuple[str, str]] | Sequence[tuple[str, str]]) -> dict[tuple[str, str], Any]:
        """The queue payload of each ``(query_id, item_id)`` asked for."""
        out: dict[tuple[str, str], Any] = {}
        with self._lock:
            for q, d in keys:
                row = self._conn.execute("SELECT payload FROM items WHERE query_id = ? AND item_id = ?", (q, d)).fetchone()
                if row is not None:
                    out[(q, d)] = json.loads(row[0])
        return out

    def history(self) -> list[dict[str, Any]]:
        """Every row ever written, ended ones too (for audits and tests)."""
        with self._lock:
            cur = self._conn.execute("SELECT l.seq, i.query_id, i.item_id, l.annotator, l.action, l.grade, l.faithful, "
                                     "l.correct, l.at, l.via, l.ended_at, l.ended_by FROM labels l JOIN items i "
                                     "ON i.pos = l.pos ORDER BY l.seq")
            names = [d[0] for d in cur.description]
            return [dict(zip(names, r)) for r in cur.fetchall()]


def _annotator(name: str) -> str:
    name = (name or "").strip()
    if not name or len(name) > 64 or any(ch in name for ch in "\r\n\t\0"):
        raise UsageError(f"annotator must be a name of 1 to 64 characters on one line; got {name[:70]!r}")
    return name


def _kind_of(queue: Queue) -> str:
    return queue.kind


def _payload(item: QueueItem) -> str:
    return json.dumps(dict(item.payload), ensure_ascii=False)


def _overlap_needs(items: Sequence[QueueItem], overlap: float) -> list[int]:
    """1 for each item, 2 for the share ``overlap`` whose sha256 of ``query_id, id`` is smallest."""
    shared = round(len(items) * overlap)
    if not shared:
        return [1] * len(items)
    keys = [hashlib.sha256(f"{it.query_id}\0{it.item_id}".encode()).digest() for it in items]
    chosen = set(sorted(range(len(items)), key=keys.__getitem__)[:shared])
    return [2 if i in chosen else 1 for i in range(len(items))]


def _database_error(path: str, exc: BaseException) -> InputError:
    text = str(exc)
    if "locked" in text or "busy" in text:
        return InputError(f"is locked by another program (waited {BUSY_MS / 1000:g} s)", path=path,
                          hint="close the program that holds it (an sqlite3 shell in a transaction?) and try again; "
                               "nothing was written")
    if "not a database" in text or "malformed" in text or "encrypted" in text:
        return InputError("is not an SQLite database", path=path, hint="give --db a new file or one rankgate label wrote")
    return InputError(f"cannot be used: {text}", path=path)
