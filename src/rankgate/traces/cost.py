"""A trace request's ``cost``: what answering it cost, read by every trace reader, kept as request columns.

The object is the run record's (:mod:`rankgate.io.cost`, the same rules and the same error wording): an
optional ``{"tokens_in": 1840, "tokens_out": 212, "usd": 0.0021, "embed_ms": 3.1, "rerank_ms": 41.0}``
whose values are numbers >= 0 (a null value is a key not logged). In the canonical request table the named
keys (:data:`~rankgate.io.cost.COST_KEYS`) are one float column each, ``cost_<key>`` (:data:`COST_COLUMNS`),
which the analysis summarises per window and segment (mean and p95: the ``cost`` signal group); any other
key is kept in ``cost_other``, a map of key to number (sorted by key; null when the request logs none),
read by whoever needs it and not summarised.

Where each format keeps it:

* rankgate trace JSONL/Parquet: the ``cost`` object (a struct column in Parquet);
* spans (OTLP, the OpenTelemetry SDK, Phoenix): ``tokens_in`` / ``tokens_out`` are the GenAI semantic
  conventions' ``gen_ai.usage.input_tokens`` / ``gen_ai.usage.output_tokens`` (older instrumentations:
  ``gen_ai.usage.prompt_tokens`` / ``completion_tokens``; OpenInference: ``llm.token_count.prompt`` /
  ``completion``), summed over the request's LLM spans; any key as a ``rankgate.cost.<key>`` attribute
  (which wins over the sum);
* Langfuse observations: ``usage_details.input`` / ``.output`` and ``cost_details.total`` (or ``total_cost``,
  the API's ``usageDetails``/``costDetails``/``calculatedTotalCost``), summed over the trace's observations;
  LangSmith runs: ``prompt_tokens``, ``completion_tokens`` and ``total_cost`` summed over the llm runs;
* a field map's request fields ``cost.<key>`` (``--field cost.usd=metadata.spend``) name a path, tried first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rankgate.io.cost import COST_FIELD, COST_KEYS, HINT, cost_value_problem

__all__ = ["COST_COLUMNS", "COST_FIELDS", "COST_OTHER", "HINT", "cost_columns", "cost_value_problem",
           "empty_cost", "summed_cost"]

#: The request columns of the named keys, in :data:`~rankgate.io.cost.COST_KEYS` order.
COST_COLUMNS = tuple(f"cost_{k}" for k in COST_KEYS)
#: The unknown keys' column: map<string, float64>.
COST_OTHER = "cost_other"
#: The field-map names of the cost keys (``cost.usd``): request fields of a field map or ``--field``.
COST_FIELDS = tuple(f"{COST_FIELD}.{k}" for k in COST_KEYS)


def empty_cost() -> dict[str, Any]:
    """The cost columns of a request that logs no cost."""
    return {**dict.fromkeys(COST_COLUMNS), COST_OTHER: None}


def cost_columns(value: Any, chk: Any, field: str = COST_FIELD) -> dict[str, Any]:
    """A record's ``cost`` object as the request's cost columns; ``chk`` (a :class:`~.build.Check`) names the
    file and line of an error, ``field`` the key (``cost.usd``)."""
    out = empty_cost()
    if value is None:
        return out
    if type(value) is not dict:
        raise chk.fail(field, f"must be an object of numbers; got {repr(value)[:80]}", hint=HINT)
    other: dict[str, float] = {}
    for key, x in value.items():
        if x is None:
            continue
        problem = cost_value_problem(x)
        if problem is not None:
            raise chk.fail(f"{field}.{key}", problem, hint=HINT)
        if key in COST_KEYS:
            out[f"cost_{key}"] = float(x)
        else:
            other[str(key)] = float(x)
    if other:
        out[COST_OTHER] = sorted(other.items())
    return out


def summed_cost(parts: Mapping[str, list[tuple[Any, Any]]]) -> dict[str, Any]:
    """The cost columns from values found on several spans or rows: ``parts`` maps a key to its
    ``(value, chk)`` pairs (each checked, named by ``chk``'s place and the ``cost.<key>`` field), summed."""
    out = empty_cost()
    other: dict[str, float] = {}
    for key, found in parts.items():
        total = 0.0
        seen = False
        for x, chk in found:
            if x is None:
                continue
            if isinstance(x, str):  # (span attributes and export columns may hold numbers as text)
                try:
                    x = float(x)
                except ValueError:
                    pass
            problem = cost_value_problem(x)
            if problem is not None:
                raise chk.fail(f"{COST_FIELD}.{key}", problem, hint=HINT)
            total += float(x)
            seen = True
        if not seen:
            continue
        if key in COST_KEYS:
            out[f"cost_{key}"] = total
        else:
            other[key] = total
    if other:
        out[COST_OTHER] = sorted(other.items())
    return out
