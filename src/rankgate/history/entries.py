"""One rankgate summary read as one history entry: its kind, its key, its numbers and its per-query values.

Four kinds of file are recorded, each read as rankgate writes it today:

``evaluate``  ``summary.json`` of ``rankgate evaluate --out`` (means, intervals, segments, ``per_query``)
``gate``      the outcome of ``rankgate gate --json-out`` (the same numbers, plus every gate and check, with
              the gate's owner)
``answers``   ``summary.json`` of ``rankgate answers --out`` (the answer metrics and the packed context's ``hit@k``)
``traces``    ``summary.json`` of ``rankgate traces analyze`` (signals over the period, per segment; no per-query values)

An entry is keyed per kind by ``(kind, commit, the input hashes the summary records)``: the gold file's sha256 and
the run's (``evaluate``), the gold file's (``gate``: the outcome records no run hash), the gold file's and the
answers file's (``answers``). A traces summary records no input hash: its inputs are named by what it covers
(the window width, the windows, the segment fields and the request count). Recording the same key again replaces
the entry (an unchanged file is left as it is), so ``history add`` is idempotent.

Per-query values are kept as the summary holds them (query ids hashed, as every summary carries them): the packed
block (``"encoding": "packed/1"``) and the older per-query lists are both read, through the one reader of
:mod:`rankgate.gating.baseline` (:class:`~rankgate.gating.baseline.PerQuery`), and stored as arrays.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rankgate.errors import InputError

__all__ = ["KINDS", "Entry", "Row", "entry_id", "read_entry"]

#: The kinds of summary an entry can be, in the order a series prefers them when one commit has several.
KINDS = ("evaluate", "gate", "answers", "traces")
HINT = ("record the summary.json of rankgate evaluate --out, answers --out or traces analyze --out, or the outcome "
        "of rankgate gate --json-out")
_HEX16 = re.compile(r"^[0-9a-f]{16}$")
MAX_BYTES = 512 * 1024 * 1024  # a summary larger than this is not one rankgate wrote


@dataclass(frozen=True)
class Row:
    """One number of an entry: a metric's mean (``row == "metric"``), a gate (``"gate"``) or one of its checks
    (``"check"``). Text columns are ``""`` where they do not apply, numbers NaN."""

    row: str
    metric: str = ""
    field: str = ""      # a segment field as people name it (``lang``, ``tenant``); "" over all queries
    segment: str = ""
    mean: float = math.nan
    ci_low: float = math.nan
    ci_high: float = math.nan
    n: int = -1
    gate: str = ""
    status: str = ""
    owner: str = ""
    severity: str = ""
    check: str = ""      # threshold | regression | max | …, as the gate outcome names the check
    limit: float = math.nan
    value: float = math.nan
    verdict: str = ""


@dataclass(frozen=True)
class Entry:
    """A summary read for the history: what identifies it, its rows and its per-query values (None: none kept)."""

    kind: str
    gold_sha256: str
    inputs_sha256: str   # the other input hash the key holds (the run's, the answers file's, the traces' period)
    content_sha256: str  # of the file's bytes: an unchanged file recorded again changes nothing
    corpus_version: str
    label: str
    rows: tuple[Row, ...]
    per_query: Any = None  # a rankgate.gating.baseline.PerQuery
    source: str = ""
    notes: tuple[str, ...] = field(default=())

    def key(self, commit: str) -> str:
        """The entry's key as one string (kind, commit, input hashes)."""
        return "\0".join((self.kind, commit, self.gold_sha256, self.inputs_sha256))


def entry_id(key: str) -> str:
    """The id of the entry with this key: 12 hex digits of its sha256 (the entry's file name in the store)."""
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def read_entry(path: str) -> Entry:
    """The summary at ``path`` as an :class:`Entry`, or an :class:`~rankgate.errors.InputError` naming the file and
    the field that is wrong."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_BYTES + 1)
    except FileNotFoundError:
        raise InputError("does not exist", path=path, hint=HINT) from None
    except IsADirectoryError:
        raise InputError("is a folder; give the summary.json inside it", path=path) from None
    except OSError as exc:
        raise InputError(f"cannot be read: {exc.strerror or exc}", path=path) from None
    if len(raw) > MAX_BYTES:
        raise InputError(f"is larger than {MAX_BYTES // 2 ** 20} MiB: not a summary rankgate wrote", path=path, hint=HINT)
    try:
        data = json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise InputError("is not UTF-8 text", path=path, hint=HINT) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"is not valid JSON: {exc.msg}", path=path, line=exc.lineno, hint=HINT) from None
    except (RecursionError, ValueError) as exc:
        raise InputError(f"cannot be read as a summary: {type(exc).__name__}", path=path) from None
    return entry_of(data, path, hashlib.sha256(raw).hexdigest())


def kind_of(data: Any) -> str | None:
    """Which summary ``data`` is, or None."""
    if not isinstance(data, Mapping):
        return None
    if isinstance(data.get("gates"), list) and "passed" in data:
        return "gate"
    if isinstance(data.get("answers"), Mapping) and isinstance(data.get("metrics"), Mapping):
        return "answers"
    if isinstance(data.get("windows"), list) and isinstance(data.get("retrieval"), Mapping) and "requests" in data:
        return "traces"
    if isinstance(data.get("metrics"), Mapping) and ("inputs" in data or "per_query" in data):
        return "evaluate"
    return None


def entry_of(data: Any, source: str, content_sha256: str) -> Entry:
    """:func:`read_entry` of data already parsed."""
    kind = kind_of(data)
    if kind is None:
        raise InputError("is not a rankgate summary (no 'metrics', 'gates' or trace 'windows')", path=source, hint=HINT)
    if kind == "traces":
        return _traces(data, source, content_sha256)
    from rankgate.gating.baseline import BaselineSummary, PerQuery

    base = BaselineSummary.from_dict(data, source)  # the one reader of means, intervals and segments
    rows = [Row("metric", m, "", "", s.mean, s.ci_low, s.ci_high, s.n) for m, s in base.metrics.items()]
    from rankgate.stats.segments import display_field

    for f, labels in base.segments.items():
        for label, stats in labels.items():
            rows += [Row("metric", m, display_field(f), label, s.mean, s.ci_low, s.ci_high, s.n) for m, s in stats.items()]
    per_query = PerQuery.from_dict(data["per_query"], source) if data.get("per_query") is not None else None
    if per_query is not None and not all(_HEX16.match(i) for i in per_query.ids):
        raise InputError("must be hashed query ids (16 hex digits each)", path=source, field="per_query.ids", hint=HINT)
    inputs = data.get("inputs") if isinstance(data.get("inputs"), Mapping) else {}
    systems = data.get("systems") if isinstance(data.get("systems"), Mapping) else {}
    gold = _text(base.gold_sha256)
    corpus = _versions(systems.get("gold"), "corpus_version", source)
    if kind == "gate":
        versions = data.get("gold_versions")
        if isinstance(versions, Mapping) and isinstance(versions.get("candidate"), str):
            gold = versions["candidate"]
        rows += _gates(data["gates"], source)
        candidate = data.get("candidate")
        return Entry(kind, gold, "", content_sha256, corpus, candidate if isinstance(candidate, str) else "",
                     tuple(rows), per_query, source)
    second = "answers" if kind == "answers" else "run"
    other = _sha(inputs.get(second), f"inputs.{second}.sha256", source)
    label = _versions(systems.get("run"), "system", source)
    return Entry(kind, gold, other, content_sha256, corpus, label, tuple(rows), per_query, source)


def _text(x: Any) -> str:
    return x if isinstance(x, str) else ""


def _sha(block: Any, where: str, source: str) -> str:
    sha = block.get("sha256") if isinstance(block, Mapping) else None
    if sha is not None and not isinstance(sha, str):
        raise InputError(f"must be a string or null; got {sha!r}"[:120], path=source, field=where, hint=HINT)
    return sha or ""


def _versions(block: Any, key: str, source: str) -> str:
    """The versions a summary's ``systems`` block lists under ``key``, joined (``2026-05-01``), or ""."""
    values = block.get(key) if isinstance(block, Mapping) else None
    if values is None:
        return ""
    if not isinstance(values, list) or not all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in values):
        raise InputError("must be a list of versions", path=source, field=f"systems.{key}", hint=HINT)
    return ", ".join(str(v) for v in values)


def _number(x: Any, where: str, source: str) -> float:
    if x is None:
        return math.nan
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        raise InputError(f"must be a finite number or null; got {x!r}"[:120], path=source, field=where, hint=HINT)
    return float(x)


def _word(x: Any, where: str, source: str) -> str:
    if x is None:
        return ""
    if not isinstance(x, (str, int)) or isinstance(x, bool):
        raise InputError(f"must be text; got {x!r}"[:120], path=source, field=where, hint=HINT)
    return str(x)


def _gates(gates: list[Any], source: str) -> list[Row]:
    """A gate row per gate and a check row per check of a gate outcome (``rankgate gate --json-out``)."""
    from rankgate.stats.segments import display_field

    rows = []
    for i, g in enumerate(gates):
        at = f"gates[{i}]"
        if not isinstance(g, Mapping) or not isinstance(g.get("name"), str) or not isinstance(g.get("metric"), str):
            raise InputError("must be a gate with 'name' and 'metric'", path=source, field=at, hint=HINT)
        name, metric = g["name"], g["metric"]
        status, owner, severity = (_word(g.get(k), f"{at}.{k}", source) for k in ("status", "owner", "severity"))
        threshold = g.get("threshold") if g.get("threshold") is not None else g.get("max")
        rows.append(Row("gate", metric, gate=name, status=status, owner=owner, severity=severity,
                        check="max" if g.get("threshold") is None and g.get("max") is not None else "threshold",
                        limit=_number(threshold, f"{at}.threshold", source)))
        checks = g.get("checks") or []
        if not isinstance(checks, list):
            raise InputError("must be a list of checks", path=source, field=f"{at}.checks", hint=HINT)
        for j, c in enumerate(checks):
            cat = f"{at}.checks[{j}]"
            if not isinstance(c, Mapping):
                raise InputError("must be a check (an object)", path=source, field=cat, hint=HINT)
            n = c.get("n")
            rows.append(Row(
                "check", _word(c.get("metric"), f"{cat}.metric", source) or metric,
                display_field(_word(c.get("field"), f"{cat}.field", source)) if c.get("field") else "",
                _word(c.get("segment"), f"{cat}.segment", source), _number(c.get("mean"), f"{cat}.mean", source),
                _number(c.get("ci_low"), f"{cat}.ci_low", source), _number(c.get("ci_high"), f"{cat}.ci_high", source),
                n if isinstance(n, int) and not isinstance(n, bool) and n >= 0 else -1,
                gate=name, status=_word(c.get("status"), f"{cat}.status", source), owner=owner, severity=severity,
                check=_word(c.get("kind"), f"{cat}.kind", source), limit=_number(c.get("limit"), f"{cat}.limit", source),
                value=_number(c.get("value"), f"{cat}.value", source),
                verdict=_word(c.get("verdict"), f"{cat}.verdict", source)))
    return rows


def _traces(data: Mapping[str, Any], source: str, content_sha256: str) -> Entry:
    """A ``traces analyze`` summary: each signal over the period and per segment, a rate's interval from its
    counts (Wilson); keyed by the period it covers."""
    from rankgate.stats.bootstrap import wilson_interval

    rows: list[Row] = []

    def signal(name: str, block: Any, f: str, segment: str, where: str) -> None:
        if not isinstance(block, Mapping) or "value" not in block:
            return
        value = _number(block.get("value"), f"{where}.value", source)
        if math.isnan(value):
            return  # not measurable in this period: no point
        n, k = block.get("n"), block.get("k")
        n = n if isinstance(n, int) and not isinstance(n, bool) and n >= 0 else -1
        low = high = math.nan
        if isinstance(k, int) and not isinstance(k, bool) and 0 <= k <= n and n > 0 and 0.0 <= value <= 1.0:
            low, high = wilson_interval(k, n)
        rows.append(Row("metric", name, f, segment, value, low, high, n))

    for group in ("retrieval", "operational", "privacy"):
        block = data.get(group)
        if not isinstance(block, Mapping):
            continue
        for name, value in block.items():
            if name == "latency_ms" and isinstance(value, Mapping):
                for stage, q in value.items():
                    if isinstance(q, Mapping):
                        for p in ("p50", "p95", "p99"):
                            if p in q:
                                signal(f"latency.{stage}.{p}", {"value": q[p], "n": q.get("n")}, "", "",
                                       f"{group}.latency_ms.{stage}.{p}")
            else:
                signal(str(name), value, "", "", f"{group}.{name}")
    segments = data.get("segments")
    if isinstance(segments, Mapping):
        for key, signals in segments.items():
            f, _, label = str(key).partition("=")
            if isinstance(signals, Mapping):
                for name, value in signals.items():
                    signal(str(name), value, f, label, f"segments.{key}.{name}")
    period = json.dumps([data.get("window"), data.get("windows"), data.get("by"), data.get("requests")],
                        sort_keys=True, default=str)
    return Entry("traces", "", hashlib.sha256(period.encode("utf-8")).hexdigest(), content_sha256, "", "",
                 tuple(rows), None, source)
