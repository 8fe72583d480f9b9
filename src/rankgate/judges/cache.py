"""The judge's persistent cache: one SQLite file shared by every run on the machine.

Where: ``--cache DIR`` (``cache_dir=``), else ``$RANKGATE_CACHE_DIR``, else
``$XDG_CACHE_HOME/rankgate``, else ``~/.cache/rankgate``; the file is ``judge-cache.sqlite3``.
The key is the sha256 of the canonical JSON of the whole request (endpoint, model, messages,
temperature, seed, answer schema, prompt version and hash, sample index), so a second run in another
output folder, or another process, reuses every answer whose request is byte-for-byte the same,
and a changed prompt, model or seed never does. Only answers that parsed into a valid label are
stored; errors never are. WAL journal and a busy timeout make concurrent processes safe; within a
process one connection is shared behind a lock (the client writes from its calling thread).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import sys
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from rankgate.errors import F, UsageError

__all__ = ["CACHE_ENV", "CACHE_FILE", "JudgeCache", "default_cache_dir", "request_key"]

CACHE_ENV = "RANKGATE_CACHE_DIR"
OPEN_TIMEOUT = 30.0  # seconds another process may hold the file while this one opens it
CACHE_FILE = "judge-cache.sqlite3"
_BATCH = 500


def _setup(db: sqlite3.Connection) -> None:
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("CREATE TABLE IF NOT EXISTS judgements (key TEXT PRIMARY KEY, task TEXT NOT NULL, "
               "label TEXT NOT NULL, raw TEXT, usage TEXT, fingerprint TEXT, created REAL NOT NULL)")


def _until_free(db: sqlite3.Connection, timeout: float) -> None:
    """:func:`_setup`, tried again while another process holds the file. Switching a new file to WAL
    needs it to itself, and SQLite may answer "database is locked" at once instead of waiting its
    busy timeout (seen with two processes opening one new cache together)."""
    deadline = time.monotonic() + timeout
    pause = 0.01
    while True:
        try:
            _setup(db)
            return
        except sqlite3.OperationalError as exc:
            text = str(exc).lower()
            if ("locked" not in text and "busy" not in text) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.5)


def default_cache_dir() -> Path:
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "rankgate"


def canonical(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def request_key(request: Mapping[str, Any]) -> str:
    """sha256 hex of the canonical JSON of ``request``."""
    return hashlib.sha256(canonical(request)).hexdigest()


class JudgeCache:
    """Labels by request key. Thread-safe (one connection behind a lock); processes may share the file."""

    def __init__(self, folder: str | os.PathLike[str] | None = None) -> None:
        self.folder = Path(folder) if folder is not None else default_cache_dir()
        self.path = self.folder / CACHE_FILE
        self._lock = threading.Lock()
        self.broken = False
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=OPEN_TIMEOUT, isolation_level=None, check_same_thread=False)
            _until_free(self._db, OPEN_TIMEOUT)
        except (OSError, sqlite3.Error) as exc:
            raise UsageError(
                f"cannot open the judge cache {self.path}: {exc} "
                f"(choose a writable folder with {F.cache} or {CACHE_ENV}, or pass {F(use_cache=False)})") from None

    def get_many(self, keys: Iterable[str]) -> dict[str, str]:
        """Stored label JSON for each key found."""
        wanted = list(dict.fromkeys(keys))
        found: dict[str, str] = {}
        with self._lock:
            try:
                self._get(wanted, found)
            except sqlite3.Error as exc:
                print(f"rankgate: warning: the judge cache {self.path} cannot be read ({exc}); asking the judge",
                      file=sys.stderr)
                return {}
        return found

    def _get(self, wanted: list[str], found: dict[str, str]) -> None:
        for start in range(0, len(wanted), _BATCH):
            part = wanted[start:start + _BATCH]
            marks = ",".join("?" * len(part))
            for key, label in self._db.execute(f"SELECT key, label FROM judgements WHERE key IN ({marks})", part):
                found[key] = label

    def put_many(self, rows: Iterable[tuple[str, str, str, str, Mapping[str, int], str | None]]) -> None:
        """Store ``(key, task, label_json, raw, usage, fingerprint)`` rows in one transaction."""
        now = time.time()
        data = [(k, t, lab, raw, json.dumps(dict(u), sort_keys=True), fp, now) for k, t, lab, raw, u, fp in rows]
        if not data:
            return
        with self._lock:
            if self.broken:
                return
            try:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    self._db.executemany("INSERT OR REPLACE INTO judgements VALUES (?, ?, ?, ?, ?, ?, ?)", data)
                    self._db.execute("COMMIT")
                except BaseException:
                    if self._db.in_transaction:
                        self._db.execute("ROLLBACK")
                    raise
            except sqlite3.Error as exc:
                # A cache that cannot be written (full disk, locked too long) must not cost the labels
                # already paid for: say so once and carry on without writing.
                self.broken = True
                print(f"rankgate: warning: the judge cache {self.path} cannot be written ({exc}); "
                      f"this run's labels are not cached", file=sys.stderr)

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM judgements").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()
