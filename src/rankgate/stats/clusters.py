"""Conversations as the unit of analysis: which queries belong together, and how many units the data hold.

In a multi-turn assistant the turns of one conversation share a user, a topic and often the retrieved
context, so their values are correlated: resampling turns as if they were independent understates the
spread of a mean. When the gold set (or, failing that, the run) gives queries a ``conversation_id``,
every interval and paired test resamples conversations instead (the cluster bootstrap, defined in
:mod:`rankgate.stats.bootstrap`); this module says which queries form each conversation
(:func:`conversation_codes`), how many effective units that leaves (:func:`effective_n`) and how the
outputs say so (:class:`Resampling`).

Queries without a conversation id are conversations of their own (one turn each). A result whose
queries carry no conversation id at all resamples queries, exactly as before (no number changes).

Effective number of units (:func:`effective_n`): ``n_eff = n · v_iid / v_cluster``, the number of
independent values that would give the mean the spread it has. ``n`` is the number of values (turns
where the metric applies), ``v_iid = Σ_i (x_i − x̄)² / n²`` the plug-in variance of their mean if the
turns were independent, and ``v_cluster = Σ_c (S_c − x̄·N_c)² / n²`` the plug-in cluster-robust
variance of the same mean over the ``K`` conversations (``S_c`` the sum and ``N_c`` the count of
conversation ``c``'s values, ``x̄`` the mean); so ``n_eff = n · Σ_i (x_i − x̄)² / Σ_c (S_c − x̄·N_c)²``.
With one turn per conversation the two sums are equal and ``n_eff = n``; when the ``m`` turns of every
conversation are alike, ``n_eff = n / m = K``; independent turns give about ``n``. It is ``n`` when either
sum is 0 (no spread to compare) and NaN below two conversations. ``n / n_eff`` is the design effect.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rankgate.metrics.display import fmt_count
from rankgate.model.conversations import FIRST_TURN, FOLLOW_UP, turn_label

__all__ = ["CONVERSATION_FIELD", "FIRST_TURN", "FOLLOW_UP", "TURN_FIELD", "Resampling", "conversation_codes",
           "codes_of", "effective_n", "line_of", "resampling", "resampling_line", "turn_label"]

CONVERSATION_FIELD = "conversation_id"
TURN_FIELD = "turn"


def codes_of(labels: Sequence[Any]) -> np.ndarray | None:
    """A conversation code per query from its conversation id (None: a conversation of its own), numbered in
    order of first appearance; None when no query has a conversation id."""
    labels = labels if isinstance(labels, list) else list(labels)
    if labels.count(None) == len(labels):
        return None
    if set(map(type, labels)) <= {str, type(None)}:  # (the usual: text ids, coded by arrow)
        import pyarrow as pa

        enc = pa.array(labels, type=pa.string()).dictionary_encode()
        codes = enc.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
        alone = np.flatnonzero(codes < 0)
        codes[alone] = len(enc.dictionary) + np.arange(alone.size)
        return codes
    seen: dict[Any, int] = {}
    out = np.empty(len(labels), dtype=np.int64)
    fresh = 0
    for i, label in enumerate(labels):
        if label is None:
            out[i] = -1
            continue
        code = seen.get(label)
        if code is None:
            code = seen[label] = len(seen)
        out[i] = code
    alone = np.flatnonzero(out < 0)
    if alone.size:
        fresh = len(seen)
        out[alone] = np.arange(fresh, fresh + alone.size)
    return out


def conversation_codes(result: Any) -> np.ndarray | None:
    """A conversation code per query of ``result`` (an :class:`~rankgate.model.results.EvaluationResult`),
    from its ``conversation_id`` field; None when no query carries one (queries are then the unit)."""
    fields = getattr(result, "fields", None)
    labels = fields.get(CONVERSATION_FIELD) if isinstance(fields, Mapping) else None
    if not labels:
        return None
    global _LAST  # (one result's codes are asked for by every interval, the summary and the outputs: coded once)
    last = _LAST  # (read once: another thread may code another result meanwhile)
    if last is not None and last[0] is labels:
        return None if last[1] is None else last[1].copy()
    codes = codes_of(list(labels))
    _LAST = (labels, codes)
    return None if codes is None else codes.copy()


_LAST: tuple[Any, np.ndarray | None] | None = None  # the labels last coded (held, so the same object) and their codes


def effective_n(values: Sequence[float] | np.ndarray, clusters: Sequence[int] | np.ndarray) -> float:
    """``n · v_iid / v_cluster`` of the values that apply (not NaN), by conversation ``clusters`` (module docs)."""
    v = np.asarray(values, dtype=np.float64).ravel()
    c = np.asarray(clusters, dtype=np.int64).ravel()
    ok = ~np.isnan(v)
    x, c = v[ok], c[ok]
    n = x.size
    if n == 0:
        return math.nan
    if c.min() >= 0:  # (conversation_codes's codes: bins without a value add nothing below)
        inverse = c
        k = int(np.count_nonzero(np.bincount(c)))
    else:
        _, inverse = np.unique(c, return_inverse=True)
        k = int(inverse.max()) + 1
    if k < 2:
        return math.nan
    mean = math.fsum(x.tolist()) / n
    sums = np.bincount(inverse, weights=x)
    counts = np.bincount(inverse).astype(np.float64)
    within = math.fsum(((x - mean) ** 2).tolist())  # n² · v_iid
    between = math.fsum(((sums - mean * counts) ** 2).tolist())  # n² · v_cluster
    if within <= 0.0 or between <= 0.0:
        return float(n)
    return n * within / between


@dataclass(frozen=True)
class Resampling:
    """What the intervals of a result resample when its queries form conversations: ``conversations`` (the
    units, a query without an id counting as one), ``turns`` (the queries), and each metric's effective
    number of units (:func:`effective_n`)."""

    conversations: int
    turns: int
    follow_ups: int = 0
    depend_on_earlier: int = 0
    effective_n: Mapping[str, float] = field(default_factory=dict)
    unit: str = "conversation"

    def line(self) -> str:
        """The one line every medium shows: ``intervals resample 8 conversations (20 turns)``."""
        noun = "conversation" if self.conversations == 1 else "conversations"
        turns = "turn" if self.turns == 1 else "turns"
        return f"intervals resample {fmt_count(self.conversations)} {noun} ({fmt_count(self.turns)} {turns})"

    def to_dict(self) -> dict[str, Any]:
        """``summary.json``'s ``statistics.resampling`` (effective n rounded to 0.1; NaN as null)."""
        return {
            "unit": self.unit,
            "conversations": self.conversations,
            "turns": self.turns,
            "follow_ups": self.follow_ups,
            "depend_on_earlier_turns": self.depend_on_earlier,
            "effective_n": {m: None if math.isnan(x) else round(x, 1) for m, x in self.effective_n.items()},
            "effective_n_definition": "n * sum_i (x_i - mean)^2 / sum_c (S_c - mean * N_c)^2 = n * var_iid / var_cluster",
        }


def resampling_line(result: Any) -> str | None:
    """``intervals resample 8 conversations (20 turns)`` for a result whose queries form conversations, else None."""
    codes = conversation_codes(result)
    return None if codes is None else Resampling(int(np.unique(codes).size), len(codes)).line()


def line_of(resampling: Mapping[str, Any] | Resampling | None) -> str | None:
    """The same line from :meth:`Resampling.to_dict` (a gate outcome's or a summary's ``resampling``)."""
    if resampling is None:
        return None
    if isinstance(resampling, Resampling):
        return resampling.line()
    return Resampling(int(resampling.get("conversations") or 0), int(resampling.get("turns") or 0)).line()


def resampling(result: Any, metrics: Sequence[str] | None = None) -> Resampling | None:
    """How ``result``'s intervals resample, or None when its queries carry no conversation id (queries)."""
    codes = conversation_codes(result)
    if codes is None:
        return None
    names = list(result.metric_names) if metrics is None else list(metrics)
    turns = result.fields.get(TURN_FIELD) or ()
    info = getattr(result, "info", None)
    depend = info.get("conversations", {}).get("depend_on_earlier_turns", 0) if isinstance(info, Mapping) else 0
    return Resampling(
        conversations=int(np.unique(codes).size),
        turns=len(codes),
        follow_ups=sum(1 for t in turns if t == FOLLOW_UP),
        depend_on_earlier=int(depend or 0),
        effective_n={m: effective_n(result.values[m], codes) for m in names},
    )
