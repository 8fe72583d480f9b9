"""A run record's orchestration fields, checked where a run is scored: ``adapter``, ``cpu_ms``, ``memory_mb``
(and ``latency_ms``, whose stages are samples of the same kind).

A run may log, per query, what the traces log per request (docs/traces.md): ``adapter``, the framework or
integration that produced the record (``llamaindex``, ``langchain``, ``custom``…; a segment, ``--by
adapter``), and the process samples of the query, ``cpu_ms`` (CPU time the process spent on it) and
``memory_mb`` (its resident memory, RSS). Each is optional; a null is a value not logged for that query.

Every reader keeps these fields as it finds them (per-query fields, like ``latency_ms`` and ``cost``);
:func:`check_run_resources` then refuses what no summary or segment could use, naming the file, the query's
line and the field: a sample that is not a number, a negative or non-finite one, an adapter that is not a
non-empty string. It is called on every run before it is scored, on the whole run and on the joined fields
of a run scored in blocks (a block that fails is read again whole, whose error names the line).
"""

from __future__ import annotations

import json
import math
from numbers import Real
from typing import Any

from rankgate.errors import InputError

__all__ = ["ADAPTER_FIELD", "RESOURCE_FIELDS", "check_run_resources"]

ADAPTER_FIELD = "adapter"
#: The process samples, with their unit, in the order the outputs show them.
RESOURCE_FIELDS: dict[str, str] = {"cpu_ms": "ms", "memory_mb": "MB"}
_HINTS = {
    "cpu_ms": "give cpu_ms as the CPU time (ms) the process spent on the query, a number >= 0, or leave it out",
    "memory_mb": "give memory_mb as the process's resident memory (MB) for the query, a number >= 0, or leave it out",
    ADAPTER_FIELD: "give adapter as the name of the framework that produced the record (llamaindex, langchain, "
                   "custom…), or leave it out",
}


def _shown(x: Any) -> str:
    """A value as its JSON text (``true``, ``"lots"``), as the record wrote it."""
    return json.dumps(x, ensure_ascii=False, default=repr)[:60]


def _sample_problem(x: Any) -> str | None:
    """What is wrong with one process sample (None: nothing; a null is a sample not taken)."""
    if x is None:
        return None
    if isinstance(x, bool) or not isinstance(x, Real):
        return f"must be a number; got {_shown(x)}"
    try:
        f = float(x)
    except OverflowError:  # (an integer beyond the float range)
        return f"must be a finite number; got {_shown(x)}"
    if not math.isfinite(f):
        return f"must be a finite number; got {x!r}"
    return f"must not be negative; got {x!r}" if f < 0 else None


def _adapter_problem(x: Any) -> str | None:
    if x is None or (isinstance(x, str) and x.strip()):
        return None
    return f"must be a non-empty string; got {_shown(x)}"


_LATENCY_HINT = ("give latency_ms as the query's total in ms (a number >= 0), an object of stages, e.g. "
                 "{\"retrieve\": 41.2, \"rerank\": 18.0}, or a list of such timings; leave a stage out (or null) where "
                 "it was not measured")


def _latency_problem(value: Any, at: str = "latency_ms", listed: bool = True) -> tuple[str, str] | None:
    """(the field, what is wrong) of one ``latency_ms`` value: a number, an object of stage -> number, or a list
    of those (several timings of one query, e.g. repeated calls; ``--layout v0`` takes their percentiles). None:
    nothing wrong; nulls are values not measured."""
    if isinstance(value, dict):
        for stage, ms in value.items():
            what = _sample_problem(ms)
            if what is not None:
                return f"{at}.{stage}", what
        return None
    if listed and isinstance(value, list):
        for i, timing in enumerate(value):
            found = _latency_problem(timing, f"{at}[{i}]", listed=False)
            if found is not None:
                return found
        return None
    what = _sample_problem(value)
    if what is not None and (isinstance(value, bool) or not isinstance(value, Real)):
        what = f"must be a number or an object of stages; got {_shown(value)}"
    return None if what is None else (at, what)


def check_run_resources(fields: dict[str, list[Any]], source: str, lines: Any = None) -> None:
    """Refuse a run's ``cpu_ms`` / ``memory_mb`` values that are not numbers >= 0, ``latency_ms`` values that are
    not such a number or an object of stages of such numbers, and ``adapter`` values that are not non-empty strings (an :class:`InputError` naming ``source``, the query's line from ``lines``, the
    run's ``query_lines`` when it has them, and the field). Nothing to do when the run logs none of them."""
    checks = [(name, _sample_problem) for name in RESOURCE_FIELDS] + [(ADAPTER_FIELD, _adapter_problem)]
    for name, problem in checks:
        for q, value in enumerate(fields.get(name) or ()):
            what = problem(value)
            if what is not None:
                line = int(lines[q]) if lines is not None and q < len(lines) else None
                raise InputError(what, path=source, line=line, field=name, hint=_HINTS[name])
    for q, value in enumerate(fields.get("latency_ms") or ()):  # (a stage's sample, as cpu_ms: >= 0, finite)
        found = _latency_problem(value)
        if found is not None:
            line = int(lines[q]) if lines is not None and q < len(lines) else None
            raise InputError(found[1], path=source, line=line, field=found[0], hint=_LATENCY_HINT)
