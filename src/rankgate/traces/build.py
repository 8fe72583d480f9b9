"""Collecting validated requests into the canonical tables, and the value checks every reader shares.

Readers parse and check one input row (a JSONL line, an OTLP trace, an export row) into plain
values, then hand it to :class:`Builder` as one request with its items, citations and feedback. The
builder enforces unique request ids across all inputs, applies the skip policy, assigns input-order
ranks where none were logged, and builds the Arrow tables at the end.
"""

from __future__ import annotations

import calendar
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

import pyarrow as pa

from rankgate.corpus.schema import STATUS_SYNONYMS  # the corpus manifest's words for a chunk's status
from rankgate.errors import InputError
from rankgate.traces.model import (
    CITATIONS_SCHEMA,
    FEEDBACK_SCHEMA,
    ITEM_STATUSES,
    ITEMS_SCHEMA,
    REQUESTS_SCHEMA,
    STAGES,
    Skipped,
    TraceTables,
    check_tables,
    duplicate_error,
    query_key,
)

__all__ = ["ABORT_ERROR_TYPES", "NEGATIVE_BELOW", "ON_ERROR", "RESOURCE_FIELDS", "Builder", "check_end", "parse_iso",
           "skip_reason"]

ON_ERROR = ("error", "skip")
MAX_SKIPPED_LISTED = 20
NEGATIVE_BELOW = 0.5  # a numeric feedback value under this is negative (thumbs 1/0 or 1/-1, scores in [0, 1])
NEGATIVE_LABELS = frozenset({"thumbs_down", "thumbsdown", "down", "negative", "bad", "dislike", "no", "false",
                             "👎"})
POSITIVE_LABELS = frozenset({"thumbs_up", "thumbsup", "up", "positive", "good", "like", "yes", "true", "👍"})
# error.type / status values that mean "the client went away", not a server failure (case-insensitive)
ABORT_ERROR_TYPES = frozenset({"client_abort", "client_aborted", "client_disconnect", "client_disconnected",
                               "clientdisconnect", "clientdisconnected", "cancelled", "canceled", "499"})

_ISO = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,9}))?\s*(Z|z|[+-]\d{2}(?::?\d{2})?)?)?"
)
MAX_INT32 = 2**31 - 1
#: The optional per-request process samples every reader takes (non-negative numbers): the CPU time the
#: process spent on the request, in ms, and its resident memory (RSS) at the request, in MB.
RESOURCE_FIELDS = ("cpu_ms", "memory_mb")


def skip_reason(exc: InputError) -> str:
    """The reason a skipped row is counted under: the field and what was wrong, without the value."""
    what = exc.detail.split(";")[0].split(" (")[0].strip()
    return f"field '{exc.field}' {what}" if exc.field else what


def parse_iso(value: Any, path: str, line: int | None, field: str) -> int:
    """ISO 8601 date-time -> microseconds since the epoch, UTC. A time without an offset is UTC;
    fractions beyond microseconds are truncated (nanosecond exports). A timezone-aware datetime (a
    Parquet timestamp column) is taken as is."""
    import datetime as dt

    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        u = value.astimezone(dt.timezone.utc)
        return calendar.timegm(u.utctimetuple()) * 1_000_000 + u.microsecond
    if not isinstance(value, str):
        raise InputError(f"must be an ISO 8601 date-time string; got {json.dumps(value)[:40]}",
                         path=path, line=line, field=field, hint="e.g. 2026-05-29T13:46:19.963Z")
    m = _ISO.fullmatch(value.strip())
    if m is None:
        raise InputError(f"is not an ISO 8601 date-time; got {value[:40]!r}", path=path, line=line, field=field,
                         hint="e.g. 2026-05-29T13:46:19.963Z (no offset means UTC)")
    y, mo, d, h, mi, s = (int(m.group(i) or 0) for i in range(1, 7))  # a date alone is its midnight, UTC
    if not (1 <= mo <= 12 and 1 <= d <= calendar.monthrange(y, mo)[1] and h < 24 and mi < 60 and s < 61) or y < 1:
        raise InputError(f"is not a valid date-time; got {value[:40]!r}", path=path, line=line, field=field)
    frac = (m.group(7) or "").ljust(6, "0")[:6]
    secs = calendar.timegm((y, mo, d, h, mi, min(s, 59), 0, 0, 0))
    off = m.group(8)
    if off and off not in ("Z", "z"):
        digits = off[1:].replace(":", "")
        oh, om = int(digits[:2]), int(digits[2:4] or 0)
        if oh > 23 or om > 59:
            raise InputError(f"has an invalid UTC offset; got {value[:40]!r}", path=path, line=line, field=field)
        secs -= (1 if off[0] == "+" else -1) * (oh * 3600 + om * 60)
    return secs * 1_000_000 + int(frac)


def check_end(chk: Check, start_us: int, end_us: int | None, start_field: str, end_field: str) -> None:
    """Refuse a span or observation that ends before it starts (every span/observation reader
    applies it; the JSONL reader refuses negative timings the same way)."""
    if end_us is not None and end_us < start_us:
        raise chk.fail(end_field, f"is before {start_field} (by {(start_us - end_us) / 1000:g} ms)",
                       hint="a span cannot end before it starts; check the exporter's clock or the file")


class Check:
    """Typed accessors on one row that raise InputError naming the file, line and field."""

    def __init__(self, path: str, line: int | None) -> None:
        self.path = path
        self.line = line

    def fail(self, field: str | None, message: str, hint: str | None = None) -> InputError:
        return InputError(message, path=self.path, line=self.line, field=field, hint=hint)

    def string(self, v: Any, field: str, *, required: bool = False, ids: bool = False) -> str | None:
        """A string (an integer too when ``ids``: numeric ids are common); "" counts as missing."""
        if v is None or v == "":
            if required:
                raise self.fail(field, "is missing")
            return None
        if isinstance(v, str):
            if not v.isascii():
                try:
                    v.encode("utf-8")
                except UnicodeEncodeError:
                    raise self.fail(field, "holds an unpaired surrogate escape (\\ud800-\\udfff), not text",
                                    hint="write the character itself or a valid surrogate pair") from None
            return v
        if ids and isinstance(v, int) and not isinstance(v, bool):
            return str(v)
        raise self.fail(field, f"must be a string; got {json.dumps(v)[:40]}")

    def integer(self, v: Any, field: str, *, low: int = 0, high: int = 2**63 - 1, strings: bool = False) -> int | None:
        """An integer in [low, high]; a decimal string too when ``strings`` (OTLP writes int64 as text)."""
        if v is None:
            return None
        if strings and isinstance(v, str) and re.fullmatch(r"-?\d{1,19}", v.strip()):
            v = int(v)
        if isinstance(v, float) and v.is_integer() and abs(v) < 2**53 and strings:
            v = int(v)
        if isinstance(v, bool) or not isinstance(v, int):
            raise self.fail(field, f"must be an integer; got {json.dumps(v)[:40]}")
        if not low <= v <= high:
            raise self.fail(field, f"must be between {low} and {high}; got {v}")
        return v

    def number(self, v: Any, field: str, *, nonneg: bool = False, strings: bool = False) -> float | None:
        if v is None:
            return None
        if strings and isinstance(v, str):
            try:
                v = float(v)
            except ValueError:
                raise self.fail(field, f"must be a number; got {v[:40]!r}") from None
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise self.fail(field, f"must be a number; got {json.dumps(v)[:40]}")
        try:
            f = float(v)
        except OverflowError:  # (an integer beyond the float range: 1e400 written out)
            f = math.inf
        if not math.isfinite(f):
            raise self.fail(field, f"must be a finite number; got {repr(v)[:40]}")
        if nonneg and f < 0:
            raise self.fail(field, f"must not be negative; got {v!r}")
        return f

    def boolean(self, v: Any, field: str) -> bool | None:
        if v is None:
            return None
        if not isinstance(v, bool):
            raise self.fail(field, f"must be true or false; got {json.dumps(v)[:40]}")
        return v

    def citations(self, raw: Any, field: str, what: str = "a list") -> list[dict[str, Any]]:
        """Citation rows from a list of ``{id, doc_id, version}`` objects (one of the ids required)."""
        if not isinstance(raw, list):
            raise self.fail(field, f"must be {what} of {{id, doc_id, version}}")
        rows = []
        for i, x in enumerate(raw):
            w = f"{field}[{i}]."
            if not isinstance(x, dict):
                raise self.fail(w[:-1], f"must be an object; got {json.dumps(x)[:40]}")
            row = {"item_id": self.string(x.get("id"), w + "id", ids=True),
                   "doc_id": self.string(x.get("doc_id"), w + "doc_id", ids=True),
                   "version": self.string(x.get("version"), w + "version")}
            if row["item_id"] is None and row["doc_id"] is None:
                raise self.fail(w + "id", "is missing", hint="a citation names the cited chunk (id) or document (doc_id)")
            rows.append(row)
        return rows

    def stage(self, v: Any, field: str) -> str:
        s = self.string(v, field, required=True)
        if s not in STAGES:
            raise self.fail(field, f"must be one of {', '.join(STAGES)}; got {s!r}")
        return s

    def item_status(self, v: Any, field: str) -> str | None:
        """A corpus status; the corpus manifest's synonyms (current, live, deleted, removed) are mapped."""
        s = self.string(v, field)
        if s is None:
            return None
        st = STATUS_SYNONYMS.get(s.strip().lower())
        if st is None:
            raise self.fail(field, f"must be one of {', '.join(ITEM_STATUSES)}; got {s[:40]!r}",
                            hint="current/live mean active, deleted/removed mean retired")
        return st

    def feedback(self, value: Any, field: str, negative_below: float = NEGATIVE_BELOW,
                 negative_labels: Iterable[str] = NEGATIVE_LABELS,
                 positive_labels: Iterable[str] = POSITIVE_LABELS) -> tuple[float | None, bool]:
        """(value, negative) of a feedback value: a number (negative under ``negative_below``) or a
        label (thumbs_down/negative/… = 0.0 and negative; thumbs_up/positive/… = 1.0)."""
        if isinstance(value, str):
            label = value.strip().lower()
            if label in negative_labels:
                return 0.0, True
            if label in positive_labels:
                return 1.0, False
            try:
                number = float(label)  # a number written as text ("0", "4.5")
            except ValueError:
                number = math.nan
            if math.isfinite(number):
                return number, number < negative_below
            raise self.fail(field, f"is not a known feedback label; got {value[:40]!r}",
                            hint="use a number, or a label such as thumbs_up/thumbs_down; "
                                 "a field map can name more labels (negative_labels)")
        f = self.number(value, field)
        if f is None:
            raise self.fail(field, "is missing")
        return f, f < negative_below


def derive_abort(http_status: int | None, error_type: str | None, status_message: str | None = None,
                 abort_types: frozenset[str] = ABORT_ERROR_TYPES) -> bool | None:
    """HTTP 499, or an error type / status message naming a client abort; None when nothing says."""
    if http_status == 499:
        return True
    for text in (error_type, status_message):
        if text is not None and text.strip().lower() in abort_types:
            return True
    if http_status is None and error_type is None:
        return None
    return False


class Builder:
    """Accumulates checked requests; :meth:`finish` returns the :class:`TraceTables`."""

    def __init__(self, on_error: str = "error") -> None:
        if on_error not in ON_ERROR:
            from rankgate.errors import UsageError

            raise UsageError(f"on_error must be one of {', '.join(ON_ERROR)}; got {on_error!r}")
        self.on_error = on_error
        self._req: dict[str, list[Any]] = {n: [] for n in REQUESTS_SCHEMA.names}
        self._items: dict[str, list[Any]] = {n: [] for n in ITEMS_SCHEMA.names}
        self._cit: dict[str, list[Any]] = {n: [] for n in CITATIONS_SCHEMA.names}
        self._fb: dict[str, list[Any]] = {n: [] for n in FEEDBACK_SCHEMA.names}
        self._seen: dict[str, tuple[str, int]] = {}
        self._counts: Counter[str] = Counter()
        self._first: list[tuple[str, int | None, str]] = []
        self._parts: list[TraceTables] = []
        self._fast_ids: list[tuple[pa.Array, Any, Any]] = []
        self.formats: list[str] = []
        # what reading did to the input, counted (TraceTables.reading): duplicate spans dropped, ids derived
        self.reading: Counter[str] = Counter()

    # -- rows ---------------------------------------------------------------------------------------
    def guard(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` (which parses one row and calls :meth:`add`); in skip mode, a bad row is counted."""
        try:
            fn()
        except InputError as exc:
            self.reject(exc)

    def reject(self, exc: InputError) -> None:
        if self.on_error != "skip":
            raise exc
        self._counts[skip_reason(exc)] += 1
        if len(self._first) < MAX_SKIPPED_LISTED:
            self._first.append((exc.path or "", exc.line, str(exc)))

    def add(self, req: dict[str, Any], items: list[dict[str, Any]] = (),  # type: ignore[assignment]
            citations: list[dict[str, Any]] = (), feedback: list[dict[str, Any]] = ()) -> None:  # type: ignore[assignment]
        """One request. ``req`` holds request columns by name (``ts`` in microseconds since the epoch,
        UTC; ``source_file``/``source_line`` set); missing columns are null; ``query_key`` is computed
        when absent. Items without ``rank`` get their input position within their stage."""
        rid = req["request_id"]
        where = (req["source_file"], req["source_line"])
        if self._fast_ids:
            self._materialise()
        if rid in self._seen:
            raise duplicate_error(rid, self._seen[rid], where)
        self._seen[rid] = where
        if req.get("query_key") is None:
            req = dict(req, query_key=query_key(req.get("query_text"), req.get("data_source"), req.get("top_k"),
                                                req.get("tenant")))
        for name, col in self._req.items():
            col.append(req.get(name))
        if items:  # column by column (one comprehension per column, not one append per cell)
            first = len(self._items["rank"])
            for name, col in self._items.items():
                col.extend([rid] * len(items) if name == "request_id" else [it.get(name) for it in items])
            ranks = self._items["rank"]
            pos: Counter[str] = Counter()
            for j, it in enumerate(items):  # an item without a rank: its place within its stage
                pos[it["stage"]] += 1
                if it.get("rank") is None:
                    ranks[first + j] = pos[it["stage"]]
        for rows, cols in ((citations, self._cit), (feedback, self._fb)):
            if rows:
                for name, col in cols.items():
                    col.extend([rid] * len(rows) if name == "request_id" else [r.get(name) for r in rows])

    def add_tables(self, part: TraceTables) -> bool:
        """A block of rows already in canonical form (a columnar fast path). Request ids are checked
        for uniqueness against everything read so far, on whole columns; only when a duplicate exists
        are they walked one by one, to name the same two places the row reader would. In skip mode a
        block with a duplicate is not taken (False): the caller reads it row by row, skipping the one."""
        import pyarrow.compute as pc

        req = part.requests
        ids = req["request_id"].combine_chunks()
        clash = pc.count_distinct(ids).as_py() != len(ids)
        for prev in self._fast_ids:
            clash = clash or bool(pc.any(pc.is_in(ids, value_set=prev[0])).as_py())
        if self._seen and not clash:
            clash = bool(pc.any(pc.is_in(ids, value_set=pa.array(list(self._seen), pa.string()))).as_py())
        if clash and self.on_error == "skip":
            return False
        if clash:
            self._materialise()
            for rid, path, line in zip(ids.to_pylist(), req["source_file"].to_pylist(), req["source_line"].to_pylist()):
                if rid in self._seen:
                    raise duplicate_error(rid, self._seen[rid], (path, line))
                self._seen[rid] = (path, line)
        else:
            self._fast_ids.append((ids, req["source_file"], req["source_line"]))
        if self._req["request_id"]:
            self._flush()
        self._parts.append(part)
        return True

    def _materialise(self) -> None:
        """Move the ids of columnar blocks into the one-by-one index (only when a duplicate is to be named)."""
        for ids, files, lines in self._fast_ids:
            for rid, path, line in zip(ids.to_pylist(), files.to_pylist(), lines.to_pylist()):
                self._seen.setdefault(rid, (path, line))
        self._fast_ids = []

    # -- the tables ---------------------------------------------------------------------------------
    def _flush(self) -> None:
        """Turn the rows added so far into one block of tables (keeps input order with fast-path blocks)."""
        if not self._req["request_id"] and self._parts:
            return
        ts = pa.array(self._req["ts"], pa.int64()).cast(pa.timestamp("us", tz="UTC"))
        arrays = {n: (ts if n == "ts" else pa.array(self._req[n], REQUESTS_SCHEMA.field(n).type))
                  for n in REQUESTS_SCHEMA.names}
        self._parts.append(TraceTables(
            pa.Table.from_pydict(arrays, schema=REQUESTS_SCHEMA),
            pa.Table.from_pydict(self._items, schema=ITEMS_SCHEMA),
            pa.Table.from_pydict(self._cit, schema=CITATIONS_SCHEMA),
            pa.Table.from_pydict(self._fb, schema=FEEDBACK_SCHEMA),
        ))
        for cols in (self._req, self._items, self._cit, self._fb):
            for v in cols.values():
                v.clear()

    def finish(self) -> TraceTables:
        self._flush()
        parts = self._parts
        skipped = Skipped(dict(self._counts), tuple(self._first))
        sources = tuple(s for p in parts for s in p.item_sources)
        if len(parts) == 1:
            p = parts[0]
            out = TraceTables(p.requests, p.items, p.citations, p.feedback, skipped, tuple(self.formats), sources,
                              dict(self.reading))
        else:
            requests, items, citations, feedback = (pa.concat_tables([getattr(p, n) for p in parts])
                                                    for n in ("requests", "items", "citations", "feedback"))
            out = TraceTables(requests, items, citations, feedback, skipped=skipped, formats=tuple(self.formats),
                              item_sources=sources, reading=dict(self.reading))
        check_tables(out, deep=False)  # the value rules hold by construction (see Check and columnar)
        return out
