"""A judge's calibration bound to the human labels it was measured on and to its date, the sample of fresh items
a recalibration starts from, and the drift between two calibrations (statistics layer).

A calibration says how often a judge agrees with people. It stays true only for the judge it measured (the
model and the prompt of each task) on items like the ones people labelled, at the time they labelled them: a
judge's model is swapped, its prompt edited, production moves on. So every calibration rankgate writes
carries, besides its numbers, what binds it (:func:`binding`):

``human_labels``
    ``{"sha256": "sha256:<hex>", "items": n}``: the hash of the human labels the numbers were computed on, in a
    canonical form (:func:`label_set_sha256`: each item as the JSON array ``[query_id, id, grade]``, written
    compactly with ``ensure_ascii=False``, the lines sorted and joined by ``\\n``, UTF-8), so that the same
    labels hash alike whatever their file's order or spacing, and ``n`` how many there are.
``made``
    the calibration's date, UTC, ISO 8601 to the second (``2025-05-01T09:30:00Z``), and ``made_from``, where it
    came from: ``given`` (``--when``), ``labels`` (the newest human label's own time, when the labels carry one:
    a ``time`` or ``labelled_at`` field, at the top of the line or under ``provenance``) or ``clock`` (the
    time the file was written). The first two make the file a function of its inputs.

The judge's identity (backend, model, the prompt of each task) is the one its labels carry
(``rankgate judge relevance`` writes it beside them; ``rankgate answers`` knows the judge it runs).

**Sampling for a recalibration** (:func:`stratified_sample`): the items are split into strata (by the
fields asked for); each stratum gets a quota proportional to its size, largest remainders first (ties to
the stratum that sorts first), with every stratum given at least one item when ``n`` is at least the
number of strata, so a rare segment is never left out of the calibration; within a stratum the items are
taken in the order of a permutation drawn with ``seed``. Same items, strata, ``n`` and seed ⇒ the same
sample in the same order (strata in sorted order, each in draw order).

**Drift between two calibrations** (:func:`drift`): the change new − old of the agreement and of κ, each
with an interval at ``confidence``:

* when both files hold their confusion table (``confusion``, human grade × judge grade, as rankgate
  writes it), a percentile bootstrap over items: each resample draws each table's ``n`` items again
  (a multinomial draw with the table's shares, which is resampling its items with replacement), the two
  independently, and recomputes agreement (the diagonal's share) and κ with the file's weights;
  resamples where κ is undefined are dropped;
* otherwise a normal approximation for the difference of two independent estimates: agreement's
  standard error ``√(p(1 − p)/n)`` in each file, κ's taken from its interval, ``(high − low) / (2·z)``
  at that file's confidence; the difference's interval is ``d ± z·√(se_old² + se_new²)``.

The words are :func:`rankgate.stats.verdict.verdict`'s (no p-value: the interval decides): ``better`` or
``worse`` when the interval excludes 0, else ``within noise``.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Drift", "DriftRow", "TIME_KEYS", "binding", "drift", "label_set_sha256", "label_time", "label_times", "made_at",
           "parse_time", "show_time", "stratified_sample"]

#: Where a label line may carry the time it was given (at the top of the line or under ``provenance``).
TIME_KEYS = ("time", "labelled_at")


# -- binding --------------------------------------------------------------------------------------------------
def label_set_sha256(items: Iterable[tuple[str, str, Any]]) -> str:
    """``sha256:<hex>`` of human labels ``(query_id, id, grade)`` in the canonical form (see the module docs)."""
    import hashlib

    lines = sorted(json.dumps([str(q), str(d), g], ensure_ascii=False, separators=(",", ":")) for q, d, g in items)
    return "sha256:" + hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()


def parse_time(value: Any) -> dt.datetime | None:
    """An ISO 8601 time or date as an aware UTC datetime (a time without offset is read as UTC; a date is its
    midnight); None when ``value`` is not one."""
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)
    return when.astimezone(dt.timezone.utc)


def show_time(when: dt.datetime) -> str:
    """``2025-05-01T09:30:00Z``: the form a calibration's ``made`` is written in."""
    return when.astimezone(dt.timezone.utc).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def label_time(obj: Mapping[str, Any]) -> Any:
    """The time a label line says it was given (a ``time`` or ``labelled_at`` field, at the top or under
    ``provenance``), as written; None when it says none."""
    places = [obj]
    if isinstance(obj.get("provenance"), Mapping):
        places.append(obj["provenance"])
    for place in places:
        for key in TIME_KEYS:
            if place.get(key) is not None:
                return place[key]
    return None


def made_at(when: dt.datetime | None, label_times: Sequence[dt.datetime], now: dt.datetime) -> tuple[str, str]:
    """``(made, made_from)``: ``when`` when given, else the newest label time, else ``now`` (module docs)."""
    if when is not None:
        return show_time(when), "given"
    if label_times:
        return show_time(max(label_times)), "labels"
    return show_time(now), "clock"


def binding(items: Sequence[tuple[str, str, Any]], *, when: dt.datetime | None,
            label_times: Sequence[dt.datetime] = (), now: dt.datetime | None = None) -> dict[str, Any]:
    """What binds a calibration to its labels and its time: ``human_labels`` and ``made`` (module docs)."""
    made, source = made_at(when, label_times, now or dt.datetime.now(dt.timezone.utc))
    return {"human_labels": {"sha256": label_set_sha256(items), "items": len(items)}, "made": made,
            "made_from": source}


# -- sampling -------------------------------------------------------------------------------------------------
def stratified_sample(strata: Sequence[Hashable], n: int, seed: int) -> tuple[list[int], dict[Any, tuple[int, int]]]:
    """Positions of ``n`` items (all of them when there are fewer) drawn by stratum, and each stratum's
    ``(size, quota)``; ``strata[i]`` is item i's stratum (module docs: proportional quotas, at least one each)."""
    members: dict[Any, list[int]] = {}
    for i, key in enumerate(strata):
        members.setdefault(key, []).append(i)
    keys = sorted(members, key=_sort_key)
    total = len(strata)
    n = min(n, total)
    quota = {k: 0 for k in keys}
    if n:
        floor_each = 1 if n >= len(keys) else 0
        for k in keys:
            quota[k] = floor_each
        left = n - floor_each * len(keys)
        if left:
            rest = {k: len(members[k]) - quota[k] for k in keys}
            pool = sum(rest.values())
            shares = {k: left * rest[k] / pool for k in keys}
            for k in keys:
                quota[k] += min(rest[k], int(math.floor(shares[k])))
            short = n - sum(quota.values())
            order = sorted(keys, key=lambda k: (-(shares[k] - math.floor(shares[k])), keys.index(k)))
            while short > 0:  # largest remainders first, then the strata with room in sorted order
                for k in order:
                    if short and quota[k] < len(members[k]):
                        quota[k] += 1
                        short -= 1
                order = keys
    rng = np.random.default_rng(seed)
    picked: list[int] = []
    for k in keys:
        perm = rng.permutation(len(members[k])).tolist()
        picked += [members[k][j] for j in perm[:quota[k]]]
    return picked, {k: (len(members[k]), quota[k]) for k in keys}


def _sort_key(key: Any) -> Any:
    return tuple("" if v is None else str(v) for v in key) if isinstance(key, tuple) else ("" if key is None else str(key))


# -- drift ----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DriftRow:
    """One statistic's change from the old calibration to the new one."""

    name: str                       # agreement | kappa
    old: float | None
    new: float | None
    delta: float | None
    ci: tuple[float | None, float | None]
    verdict: str

    def to_dict(self) -> dict[str, Any]:
        return {"old": _num(self.old), "new": _num(self.new), "delta": _num(self.delta),
                "ci": [_num(self.ci[0]), _num(self.ci[1])], "verdict": self.verdict}


@dataclass(frozen=True)
class Drift:
    """Whether a judge's agreement with people changed between two calibrations (module docs)."""

    task: str
    n: tuple[int, int]              # items of the old and the new calibration
    agreement: DriftRow
    kappa: DriftRow
    method: str
    confidence: float
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"task": self.task, "n": {"old": self.n[0], "new": self.n[1]}, "confidence": self.confidence,
                "method": self.method, "agreement": self.agreement.to_dict(), "kappa": self.kappa.to_dict(),
                "notes": list(self.notes)}


def _num(x: float | None) -> float | None:
    return None if x is None or math.isnan(x) else round(float(x), 6)


def _table(confusion: Any, n: int) -> np.ndarray | None:
    """A file's confusion table as a square count array, or None when it has none (or not a usable one)."""
    if not isinstance(confusion, list) or not confusion:
        return None
    k = len(confusion)
    if not all(isinstance(row, list) and len(row) == k for row in confusion):
        return None
    if not all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for row in confusion for c in row):
        return None
    table = np.array(confusion, dtype=np.int64)
    return table if int(table.sum()) == n and n > 0 else None


def _weights_of(weights: str | None, k: int) -> np.ndarray:
    from rankgate.stats.agreement import _weight_matrix

    return _weight_matrix(k, weights)


def drift(old: Any, new: Any, *, confidence: float = 0.95, resamples: int = 2000, seed: int = 0) -> Drift:
    """The change of agreement and κ from ``old`` to ``new`` (two :class:`rankgate.stats.pooling.Calibration`),
    with intervals and verdicts (module docs)."""
    from rankgate._util.constraints import CONFIDENCE, RESAMPLES, SEED, check
    from rankgate.stats.bootstrap import normal_quantile
    from rankgate.stats.verdict import verdict

    check(CONFIDENCE, confidence, caller="drift")
    check(RESAMPLES, resamples, caller="drift", name="resamples")
    check(SEED, seed, caller="drift")
    notes: list[str] = []
    same_weights = old.weights == new.weights
    if not same_weights:
        notes.append(f"kappa is weighted {old.weights or 'none'} in the old file and {new.weights or 'none'} in the "
                     "new one: its change is not shown (calibrate both with the same --weights)")
    t_old, t_new = _table(old.confusion, old.n), _table(new.confusion, new.n)
    z = normal_quantile((1 + confidence) / 2)
    a_delta = _diff(old.agreement, new.agreement)
    k_delta = _diff(old.kappa, new.kappa) if same_weights else math.nan
    if t_old is not None and t_new is not None and resamples > 0:
        rng = np.random.default_rng(seed)
        a_old, k_old = _resampled(t_old, old.weights, rng, resamples)
        a_new, k_new = _resampled(t_new, new.weights, rng, resamples)
        lo_q, hi_q = (1 - confidence) / 2, (1 + confidence) / 2
        a_ci = tuple(float(x) for x in np.quantile(a_new - a_old, [lo_q, hi_q]))
        k_diff = k_new - k_old
        k_diff = k_diff[~np.isnan(k_diff)]
        k_ci = (tuple(float(x) for x in np.quantile(k_diff, [lo_q, hi_q])) if k_diff.size and same_weights
                else (math.nan, math.nan))
        method = f"percentile bootstrap over items (the two confusion tables), {resamples} resamples, seed {seed}"
    else:
        se_a = math.sqrt(_var_share(old.agreement, old.n) + _var_share(new.agreement, new.n))
        a_ci = (a_delta - z * se_a, a_delta + z * se_a) if not math.isnan(se_a) else (math.nan, math.nan)
        se_k = math.sqrt(_var_from_ci(old.kappa_ci, old.confidence) + _var_from_ci(new.kappa_ci, new.confidence))
        k_ci = (k_delta - z * se_k, k_delta + z * se_k) if not math.isnan(se_k + k_delta) else (math.nan, math.nan)
        method = ("normal approximation for two independent estimates (agreement: sqrt(p(1-p)/n) each; "
                  "kappa: the standard error its interval implies)")
        if t_old is None or t_new is None:
            notes.append("a file holds no confusion table, so items cannot be resampled")

    def row(name: str, a: float | None, b: float | None, d: float, ci: tuple[float, ...]) -> DriftRow:
        word = verdict(d, ci[0], ci[1], math.nan, math.nan, 1, confidence=confidence, n=min(old.n, new.n))
        return DriftRow(name, a, b, None if math.isnan(d) else d, (ci[0], ci[1]), word)

    return Drift(new.task or old.task, (old.n, new.n), row("agreement", old.agreement, new.agreement, a_delta, a_ci),
                 row("kappa", old.kappa, new.kappa, k_delta, k_ci), method, confidence, tuple(notes))


def _diff(a: float | None, b: float | None) -> float:
    return math.nan if a is None or b is None else b - a


def _var_share(p: float | None, n: int) -> float:
    return math.nan if p is None or n <= 0 else p * (1 - p) / n


def _var_from_ci(ci: Sequence[float | None] | None, confidence: float | None) -> float:
    from rankgate.stats.bootstrap import normal_quantile

    if not ci or ci[0] is None or ci[1] is None or confidence is None:
        return math.nan
    se = (ci[1] - ci[0]) / (2 * normal_quantile((1 + confidence) / 2))
    return se * se


def _resampled(table: np.ndarray, weights: str | None, rng: np.random.Generator,
               resamples: int) -> tuple[np.ndarray, np.ndarray]:
    """Agreement and κ of ``resamples`` multinomial redraws of ``table``'s items."""
    from rankgate.stats.agreement import _kappa_from_tables

    k = table.shape[0]
    n = int(table.sum())
    draws = rng.multinomial(n, (table / n).ravel(), size=resamples).reshape(resamples, k, k)
    agreement = np.trace(draws, axis1=1, axis2=2) / n
    return agreement, _kappa_from_tables(draws, _weights_of(weights, k))


def label_times(path: str) -> list[dt.datetime]:
    """The times a labels file says its labels were given (:func:`label_time`; lines without one are passed
    over), as aware UTC datetimes. A time that is not ISO 8601 is an input error naming its line."""
    from rankgate.errors import InputError
    from rankgate.io.jsonl import json_objects

    out = []
    for line, obj in json_objects(path, "labels", "{query_id, id, grade}"):
        given = label_time(obj)
        if given is None:
            continue
        when = parse_time(given)
        if when is None:
            raise InputError(f"is not an ISO 8601 time; got {json.dumps(given)[:60]}", path=path, line=line,
                             field="time", hint="write times as 2025-05-01T09:30:00Z, or leave them out")
        out.append(when)
    return out
