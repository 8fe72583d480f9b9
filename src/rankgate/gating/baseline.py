"""The baseline a gate compares with, when it is a summary rather than a run.

A summary is the ``summary.json`` of ``rankgate evaluate --out`` or the ``--json`` outcome of
``rankgate gate``: means (and intervals) per metric, and optionally per segment::

    {"metrics": {"recall@5": {"mean": 0.87, "n": 412, "ci_low": 0.84, "ci_high": 0.90}},
     "segments": {"tags.lang": {"de": {"recall@5": {"mean": 0.81, "n": 60, ...}}}}}

Segment fields may be named as the gold set has them (``tags.lang``) or as given to ``--by``
(``lang``).

A summary may also carry per-query values (``per_query``, written by ``rankgate gate --json-out`` and
``rankgate evaluate --out``), so a gate against it keeps the paired rule exactly as against the
baseline run::

    "per_query": {"id_hash": "sha256/16", "gold_sha256": "…",
                  "ids": ["<hash of query 1>", …],            # first 16 hex digits of sha256(query_id)
                  "values": {"recall@5": [1.0, null, …]},      # aligned with ids; null = n/a
                  "first_relevant_rank": [1, 0, …],            # 0: none retrieved; or null
                  "missing_from_run": ["<hash>", …]}

From 1,000 queries on (``COMPACT_FROM``) the block is packed, so a summary of 100k or 1M queries
stays small and quick to write and read::

    "per_query": {"id_hash": "sha256/16", "gold_sha256": "…", "encoding": "packed/1", "n": 100000,
                  "ids_sha256": "…",           # sha256 of the JSON list of the query ids, in order
                  "ids": "<base64>",           # only when gold_sha256 is null: n hashes of 8 bytes each
                  "values": {"recall@5": "<base64>"},   # n float64, NaN = n/a
                  "first_relevant_rank": "<base64>",    # n int64, or null
                  "missing_from_run": [17, …]}          # positions (0-based) in the query order

Each ``<base64>`` array is little-endian, its bytes split into planes (every value's first byte, then
every second byte, …), compressed with zlib and base64-encoded. With the gold file's sha256 the
queries are named by one digest of their ordered list: the same gold file evaluates its queries in
its own order, so equal digests pair query for query. Both forms are read.

Query ids are hashed so the artifact does not publish them. The pairing is used only when the gold
set is the same: the same ``gold_sha256`` (when both sides know it) and the same set of queries.
Without per-query values (or with another gold set) there is no paired test: a gate compares means
only, and says so.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from rankgate.errors import InputError, RankgateError
from rankgate.stats.segments import display_field

T = TypeVar("T")

__all__ = ["BaselineSummary", "PerQuery", "Stat", "gold_sha256_of", "hash_query_id", "is_summary_file", "ties_of",
           "ids_sha256", "load_baseline_summary", "per_query_dict", "summary_or_run"]

ID_HASH = "sha256/16"

NAN = math.nan


@dataclass(frozen=True)
class Stat:
    mean: float
    n: int
    ci_low: float = NAN
    ci_high: float = NAN


def hash_query_id(query_id: str) -> str:
    """The first 16 hex digits of the sha256 of a query id (UTF-8): how summaries name queries."""
    return hashlib.sha256(query_id.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def ties_of(result: Any) -> str | None:
    """The ranking rule an evaluation result (or baseline summary) was scored by, when recorded."""
    if isinstance(result, BaselineSummary):
        return result.ties
    info = getattr(result, "info", None)
    rule = info.get("ties") if isinstance(info, Mapping) else None
    return rule if isinstance(rule, str) else None


def _ties_of(data: Mapping[str, Any], source: str) -> str | None:
    """``options.ties`` of a summary.json, or ``tie_rules.candidate`` of a gate outcome; None when the
    file predates the record (such baselines stay readable: nothing is compared then)."""
    from rankgate.model.ranking import TIES

    options, rules = data.get("options"), data.get("tie_rules")
    if isinstance(options, Mapping) and "ties" in options:
        rule, where = options["ties"], "options.ties"
    elif isinstance(rules, Mapping) and rules.get("candidate") is not None:
        rule, where = rules["candidate"], "tie_rules.candidate"
    else:
        return None
    if rule not in TIES:
        raise InputError(f"must be one of: {', '.join(TIES)}; got {_short(rule)}", path=source, field=where,
                         hint="was the file edited by hand? write it with rankgate evaluate --out or gate --json-out")
    return str(rule)


def gold_sha256_of(result: Any) -> str | None:
    """The sha256 of the gold file an evaluation result was scored on, when it is known."""
    return _gold_sha256(result)


def _gold_sha256(result: Any) -> str | None:
    gold = result.inputs.get("gold") if hasattr(result.inputs, "get") else None
    sha = gold.get("sha256") if isinstance(gold, Mapping) else None
    return sha if isinstance(sha, str) else None


COMPACT_FROM = 1000  # queries from which per_query is packed (see the module docs)
PACKED = "packed/1"
MAX_PACKED_QUERIES = 50_000_000  # a packed block names at most this many queries (400 MB per column)


def ids_sha256(query_ids: Any) -> str:
    """The digest that names an ordered list of query ids in a packed ``per_query`` block."""
    text = json.dumps(list(query_ids))  # ASCII: every id escaped one way, whatever characters it holds
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def _pack(values: Any, dtype: str) -> str:
    import base64
    import zlib

    import numpy as np

    a = np.ascontiguousarray(values, dtype=dtype)
    planes = a.view(np.uint8).reshape(-1, a.itemsize).T.tobytes()  # byte planes: metric values compress well
    return base64.b64encode(zlib.compress(planes, 1)).decode("ascii")


PACK_THREADS_FROM = 200_000
"""Values in all from which the columns are packed on two threads (zlib lets go of the interpreter lock)."""


def _pack_all(columns: list[Any], dtype: str) -> list[str]:
    """:func:`_pack` of each column, in order; large ones two at a time."""
    if len(columns) < 2 or sum(len(c) for c in columns) < PACK_THREADS_FROM:
        return [_pack(c, dtype) for c in columns]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(lambda c: _pack(c, dtype), columns))


def _unpack(text: Any, n: int, dtype: str, source: str, key: str) -> Any:
    """``n`` values of ``dtype`` (8 bytes each) from a packed array, or an InputError naming ``key``."""
    import base64
    import binascii
    import zlib

    import numpy as np

    if not isinstance(text, str):
        raise InputError(f"must be a packed array (base64 text); got {_short(text)}", path=source, field=key)
    size = n * 8
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
        inflate = zlib.decompressobj()
        planes = inflate.decompress(raw, size + 1)  # never more than the n values it must hold
    except (binascii.Error, UnicodeEncodeError, ValueError, zlib.error):
        raise InputError("is not a packed array (base64 of zlib data)", path=source, field=key,
                         hint="was the file edited by hand? write it with rankgate evaluate --out or gate --json-out") from None
    if len(planes) != size or not inflate.eof or inflate.unused_data:
        raise InputError(f"must hold {n} values (one per query)", path=source, field=key)
    return np.frombuffer(planes, dtype=np.uint8).reshape(8, n).T.copy().view(dtype).ravel()


def per_query_dict(result: Any, metrics: Any = None) -> dict[str, Any]:
    """The ``per_query`` block of a summary: what a later paired comparison needs from ``result``."""
    names = list(result.metric_names if metrics is None else metrics)
    ranks = result.first_relevant_rank
    if len(result.query_ids) >= COMPACT_FROM:
        return _packed_dict(result, names)
    return {
        "id_hash": ID_HASH,
        "gold_sha256": _gold_sha256(result),
        "ids": [hash_query_id(q) for q in result.query_ids],
        "values": {m: [None if math.isnan(x) else x for x in result[m].tolist()] for m in names},
        "first_relevant_rank": None if ranks is None else [int(r) for r in ranks.tolist()],
        "missing_from_run": sorted(hash_query_id(q) for q in result.missing_from_run),
    }


def _packed_dict(result: Any, names: list[str]) -> dict[str, Any]:
    """The packed form of :func:`per_query_dict` (module docs): no per-query JSON values to write or read."""
    ids = result.query_ids
    sha = _gold_sha256(result)
    ranks = result.first_relevant_rank
    missing = set(result.missing_from_run)
    out: dict[str, Any] = {
        "id_hash": ID_HASH,
        "gold_sha256": sha,
        "encoding": PACKED,
        "n": len(ids),
        "ids_sha256": ids_sha256(ids),
        "values": dict(zip(names, _pack_all([result[m] for m in names], "<f8"))),
        "first_relevant_rank": None if ranks is None else _pack(ranks, "<i8"),
        "missing_from_run": [i for i, q in enumerate(ids) if q in missing] if missing else [],
    }
    if sha is None:  # no gold file to vouch for the order: name every query
        import base64

        digest = hashlib.sha256
        raw = b"".join([digest(q.encode("utf-8", "surrogatepass")).digest()[:8] for q in ids])
        out["ids"] = base64.b64encode(raw).decode("ascii")
    return out


@dataclass(frozen=True)
class PerQuery:
    """Per-query values of a baseline, by hashed query id (see the module docs).

    A packed block without ``ids`` names its queries by ``ids_sha256`` only (``ids`` is empty), and
    ``missing_at`` holds the positions of the queries its run lacked."""

    gold_sha256: str | None
    ids: tuple[str, ...]
    values: Mapping[str, Any]  # metric -> a sequence of floats (NaN = n/a), aligned with the queries
    first_relevant_rank: Any  # a sequence of ints, or None
    missing_from_run: frozenset[str]
    ids_sha256: str | None = None
    n: int | None = None
    missing_at: frozenset[int] | None = None

    @classmethod
    def from_dict(cls, data: Any, source: str) -> PerQuery:
        where = "per_query"
        if not isinstance(data, Mapping):
            raise InputError("must be an object", path=source, field=where)
        if data.get("id_hash") != ID_HASH:
            raise InputError(f"id_hash must be {ID_HASH!r}; got {data.get('id_hash')!r}", path=source,
                             field=f"{where}.id_hash", hint="write the summary with this version of rankgate")
        if "encoding" in data:
            return cls._packed(data, source)
        ids = data.get("ids")
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise InputError("must be a list of hashed query ids", path=source, field=f"{where}.ids")
        if len(set(ids)) != len(ids):
            raise InputError("repeats a query id", path=source, field=f"{where}.ids")
        sha = data.get("gold_sha256")
        if sha is not None and not isinstance(sha, str):
            raise InputError(f"must be a string or null; got {sha!r}", path=source, field=f"{where}.gold_sha256")

        def column(v: Any, key: str, *, integer: bool = False) -> tuple:
            out: list[int | float]
            if not isinstance(v, list) or len(v) != len(ids):
                raise InputError(f"must be a list of {len(ids)} values (one per id)", path=source, field=key)
            out = []
            for i, x in enumerate(v):
                if integer:
                    if isinstance(x, bool) or not isinstance(x, int) or x < 0:
                        raise InputError(f"must be a rank >= 0; got {x!r}", path=source, field=f"{key}[{i}]")
                    out.append(x)
                elif x is None:
                    out.append(NAN)
                elif isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
                    raise InputError(f"must be a finite number or null; got {x!r}", path=source, field=f"{key}[{i}]")
                else:
                    out.append(float(x))
            return tuple(out)

        raw = data.get("values")
        if not isinstance(raw, Mapping):
            raise InputError("must be an object: metric -> values", path=source, field=f"{where}.values")
        values = {_canonical(m): column(v, f"{where}.values.{m}") for m, v in raw.items()}
        ranks = data.get("first_relevant_rank")
        ranks_t = None if ranks is None else column(ranks, f"{where}.first_relevant_rank", integer=True)
        missing = data.get("missing_from_run") or []
        if not isinstance(missing, list) or not all(isinstance(i, str) for i in missing):
            raise InputError("must be a list of hashed query ids", path=source, field=f"{where}.missing_from_run")
        return cls(sha, tuple(ids), values, ranks_t, frozenset(missing))

    @classmethod
    def _packed(cls, data: Mapping[str, Any], source: str) -> PerQuery:
        import base64
        import binascii

        import numpy as np

        where = "per_query"
        if data["encoding"] != PACKED:
            raise InputError(f"must be {PACKED!r}; got {_short(data['encoding'])}", path=source,
                             field=f"{where}.encoding", hint="write the summary with this version of rankgate")
        n = data.get("n")
        if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= MAX_PACKED_QUERIES:
            raise InputError(f"must be a query count from 0 to {MAX_PACKED_QUERIES:,}; got {_short(n)}", path=source,
                             field=f"{where}.n")
        sha = data.get("gold_sha256")
        if sha is not None and not isinstance(sha, str):
            raise InputError(f"must be a string or null; got {_short(sha)}", path=source, field=f"{where}.gold_sha256")
        digest = data.get("ids_sha256")
        if not isinstance(digest, str) or len(digest) != 64:
            raise InputError(f"must be a sha256 in hex; got {_short(digest)}", path=source, field=f"{where}.ids_sha256")
        ids: tuple[str, ...] = ()
        if data.get("ids") is not None:
            packed = data["ids"]
            try:
                raw = base64.b64decode(packed.encode("ascii"), validate=True) if isinstance(packed, str) else None
            except (binascii.Error, UnicodeEncodeError, ValueError):
                raw = None
            if raw is None or len(raw) != 8 * n:
                raise InputError(f"must be {n} hashed query ids of 8 bytes, base64-encoded", path=source,
                                 field=f"{where}.ids")
            text = raw.hex()
            ids = tuple(text[i:i + 16] for i in range(0, len(text), 16))
            if len(set(ids)) != len(ids):
                raise InputError("repeats a query id", path=source, field=f"{where}.ids")
        elif sha is None:
            raise InputError("is missing: a packed block without the gold file's sha256 names every query",
                             path=source, field=f"{where}.ids")
        raw_values = data.get("values")
        if not isinstance(raw_values, Mapping):
            raise InputError("must be an object: metric -> packed values", path=source, field=f"{where}.values")
        values = {}
        for m, text in raw_values.items():
            x = _unpack(text, n, "<f8", source, f"{where}.values.{m}")
            if bool(np.isinf(x).any()):
                raise InputError("must hold finite numbers or NaN (n/a)", path=source, field=f"{where}.values.{m}")
            values[_canonical(m)] = x
        ranks = data.get("first_relevant_rank")
        ranks_a = None
        if ranks is not None:
            ranks_a = _unpack(ranks, n, "<i8", source, f"{where}.first_relevant_rank")
            if bool((ranks_a < 0).any()):
                raise InputError("must hold ranks >= 0", path=source, field=f"{where}.first_relevant_rank")
        missing = data.get("missing_from_run") or []
        if not isinstance(missing, list) or not all(
                isinstance(i, int) and not isinstance(i, bool) and 0 <= i < n for i in missing):
            raise InputError(f"must be a list of query positions from 0 to {n - 1}", path=source,
                             field=f"{where}.missing_from_run")
        return cls(sha, ids, values, ranks_a, frozenset(), ids_sha256=digest, n=n, missing_at=frozenset(missing))

    def values_by_query(self, query_ids: Any) -> dict[str, dict[str, float]] | None:
        """metric -> query id -> value, for the given queries the block names (those it lacks are left
        out); None when the block names its queries by one digest and ``query_ids`` (in order) are
        not the ones it was written for."""
        if self.ids or self.ids_sha256 is None:
            at = {h: i for i, h in enumerate(self.ids)}
            rows = [(q, at.get(hash_query_id(q))) for q in query_ids]
        else:
            if len(query_ids) != self.n or ids_sha256(query_ids) != self.ids_sha256:
                return None
            rows = [(q, i) for i, q in enumerate(query_ids)]
        return {m: {q: float(v[i]) for q, i in rows if i is not None} for m, v in self.values.items()}

    def paired_result(self, current: Any, metrics: Any, source: str) -> tuple[Any, str]:
        """The baseline as an :class:`~rankgate.model.results.EvaluationResult` aligned with ``current``
        (its queries, order and segment fields), or ``(None, why not)``. Metrics without per-query
        values are left out of the result and named in the second item."""
        import numpy as np

        from rankgate.model.results import EvaluationResult

        missing = [m for m in metrics if m not in self.values]
        metrics = [m for m in metrics if m in self.values]
        if not metrics:
            return None, f"it has no per-query values of {', '.join(missing)}"
        sha = _gold_sha256(current)
        if sha and self.gold_sha256 and sha != self.gold_sha256:
            return None, "it was computed on another gold set (the gold file's sha256 differs)"
        if self.ids or self.ids_sha256 is None:
            index = {h: i for i, h in enumerate(self.ids)}
            hashed = [hash_query_id(q) for q in current.query_ids]
            if len(hashed) != len(index) or any(h not in index for h in hashed):
                return None, "its queries are not the gold set's queries"
            order = np.asarray([index[h] for h in hashed], dtype=np.int64)
        else:  # named by the digest of the ordered ids: the same gold file's queries in its order
            if len(current.query_ids) != self.n or ids_sha256(current.query_ids) != self.ids_sha256:
                return None, "its queries are not the gold set's queries"
            order = np.arange(len(current.query_ids), dtype=np.int64)
        if self.missing_at is not None:
            at = self.missing_at
            missing_from_run = tuple(q for q, i in zip(current.query_ids, order.tolist()) if i in at) if at else ()
        else:
            missing_from_run = tuple(q for q, h in zip(current.query_ids, hashed) if h in self.missing_from_run)
        values = {m: np.asarray(self.values[m], dtype=np.float64)[order] for m in metrics}
        ranks = (None if self.first_relevant_rank is None
                 else np.asarray(self.first_relevant_rank, dtype=np.int64)[order])
        result = EvaluationResult(
            query_ids=tuple(current.query_ids), metric_names=tuple(metrics), values=values, fields=current.fields,
            first_relevant_rank=ranks,
            missing_from_run=missing_from_run,
            inputs={"run": {"path": source}},
        )
        # Metrics it has no per-query values of are left out (the caller judges those on means).
        return result, (f"it has no per-query values of {', '.join(missing)}" if missing else "")


@dataclass(frozen=True)
class BaselineSummary:
    """Means (and intervals) of a previous evaluation, read from its ``summary.json``.

    ``metrics``: canonical metric -> :class:`Stat`; ``segments``: field -> label -> metric -> Stat.
    """

    metrics: Mapping[str, Stat]
    segments: Mapping[str, Mapping[str, Mapping[str, Stat]]] = field(default_factory=dict)
    source: str = "<baseline summary>"
    per_query: PerQuery | None = None
    gold_sha256: str | None = None  # the gold file it was scored on (inputs.gold.sha256 or per_query's)
    ties: str | None = None  # the ranking rule it was scored by (options.ties); None in summaries that predate it

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "<baseline summary>") -> BaselineSummary:
        if not isinstance(data, Mapping) or not isinstance(data.get("metrics"), Mapping):
            raise InputError("has no 'metrics' object; expected a summary.json from rankgate evaluate or gate --json-out",
                             path=source, field="metrics")
        if not data["metrics"]:
            raise InputError("is empty: a baseline summary has the mean of at least one metric", path=source,
                             field="metrics", hint="write it with rankgate evaluate --out or gate --json-out")

        def stat(metric: str, entry: Any, where: str) -> Stat:
            if not isinstance(entry, Mapping) or "mean" not in entry:
                raise InputError("must be an object with 'mean' and 'n'", path=source, field=where)
            low, high = _bounds(metric)
            vals = []
            for key in ("mean", "ci_low", "ci_high"):
                v = entry.get(key)
                if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
                    raise InputError(f"must be a number or null; got {_short(v)}", path=source, field=f"{where}.{key}")
                x = NAN if v is None else float(v)
                if v is not None and not (math.isfinite(x) and low <= x <= high):
                    expected = "a finite number" if math.isinf(high) and math.isinf(low) else \
                        f"a number between {low:g} and {high:g}" if math.isfinite(high) else f"a number >= {low:g}"
                    raise InputError(f"must be {expected} (or null) for {metric}; got {_short(v)}", path=source,
                                     field=f"{where}.{key}", hint="was the file edited by hand? write it with "
                                     "rankgate evaluate --out or gate --json-out")
                vals.append(x)
            n = entry.get("n", 0)
            if isinstance(n, bool) or not isinstance(n, int) or n < 0:
                raise InputError(f"must be a non-negative integer; got {_short(n)}", path=source, field=f"{where}.n")
            if vals[1] > vals[2]:
                raise InputError(f"is above ci_high ({vals[2]!r}); got {vals[1]!r}", path=source, field=f"{where}.ci_low")
            return Stat(vals[0], n, vals[1], vals[2])

        metrics = {_canonical(m): stat(_canonical(m), e, f"metrics.{m}") for m, e in data["metrics"].items()}
        segments: dict[str, dict[str, dict[str, Stat]]] = {}
        raw = data.get("segments") or {}
        if not isinstance(raw, Mapping):
            raise InputError("must be an object: field -> label -> metric", path=source, field="segments")
        for f, labels in raw.items():
            if not isinstance(labels, Mapping):
                raise InputError("must be an object: label -> metric", path=source, field=f"segments.{f}")
            for label, ms in labels.items():
                if ms is not None and not isinstance(ms, Mapping):
                    raise InputError("must be an object: metric -> mean and n", path=source,
                                     field=f"segments.{f}.{label}")
            segments[f] = {
                str(label): {_canonical(m): stat(_canonical(m), e, f"segments.{f}.{label}.{m}")
                             for m, e in (ms or {}).items()}
                for label, ms in labels.items()
            }
        per_query = PerQuery.from_dict(data["per_query"], source) if data.get("per_query") is not None else None
        inputs = data.get("inputs")
        gold = inputs.get("gold") if isinstance(inputs, Mapping) else None
        sha = gold.get("sha256") if isinstance(gold, Mapping) else None
        if sha is not None and not isinstance(sha, str):
            raise InputError(f"must be a string or null; got {_short(sha)}", path=source, field="inputs.gold.sha256")
        return cls(metrics, segments, source, per_query, sha or (per_query.gold_sha256 if per_query else None),
                   _ties_of(data, source))

    def lookup(self, metric: str, field_name: str | None = None, label: str | None = None) -> Stat | None:
        if field_name is None:
            return self.metrics.get(metric)
        for key in (field_name, display_field(field_name)):
            if key in self.segments:
                return self.segments[key].get(label or "", {}).get(metric)
        return None


def _bounds(metric: str) -> tuple[float, float]:
    """The range a known metric's mean lies in; any finite number for a metric this install lacks."""
    from rankgate.metrics import metric_info

    info = metric_info(metric)
    return info.bounds if info.known else (-math.inf, math.inf)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"


def _canonical(metric: str) -> str:
    try:
        from rankgate.metrics import parse_metric

        return str(parse_metric(metric))
    except RankgateError:  # a metric this install does not know: keep its name as written
        return metric


def load_baseline_summary(path: str) -> BaselineSummary:
    """Read a ``summary.json`` (from ``rankgate evaluate --out`` or ``rankgate gate --json-out``)."""
    try:
        with open(path, encoding="utf-8-sig") as fh:
            data = json.load(fh)
    except FileNotFoundError:
        raise InputError("does not exist", path=path) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"is not valid JSON: {exc.msg}", path=path, line=exc.lineno) from None
    except UnicodeDecodeError:
        raise InputError("is not UTF-8 text", path=path, hint="a summary.json is written as UTF-8") from None
    except (RecursionError, ValueError) as exc:  # nesting too deep; an integer with too many digits
        raise InputError(f"cannot be read as a summary: {type(exc).__name__}", path=path) from None
    except OSError as exc:
        raise InputError(f"cannot be read: {exc.strerror or exc}", path=path) from None
    return BaselineSummary.from_dict(data, path)


def summary_or_run(path: str, read_run: Callable[[str], T]) -> BaselineSummary | T:
    """A baseline given as a path: its summary when it is a summary.json, else ``read_run(path)``.

    A pipe (``--baseline <(cat summary.json)``) can be read only once, so it is copied first and both
    questions are asked of the copy; a summary read so is named by the pipe."""
    from rankgate.io.source import is_pipe, local_copy

    if not is_pipe(path):
        return load_baseline_summary(path) if is_summary_file(path) else read_run(path)
    with local_copy(path, "baseline") as local:
        if is_summary_file(local):
            return replace(load_baseline_summary(local), source=path)
        return read_run(local)


def is_summary_file(path: str) -> bool:
    """A JSON object with 'metrics' and no query id (a summary), rather than a run file."""
    if not os.path.isfile(path) or os.path.getsize(path) > 64 * 1024 * 1024:
        return False
    try:
        with open(path, encoding="utf-8-sig") as fh:  # (a byte-order mark is skipped, as every reader does)
            data = json.load(fh)
    except (ValueError, UnicodeDecodeError, RecursionError):  # the reader of the run names the problem
        return False
    # Any object with a 'metrics' key and no query id is meant as a summary, so a malformed one is
    # explained as a summary ("'metrics' must be an object"), not as a run missing its query_id.
    from rankgate.io.jsonl import QUERY_ID_KEYS

    return isinstance(data, dict) and "metrics" in data and not any(k in data for k in QUERY_ID_KEYS)
