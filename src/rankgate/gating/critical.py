"""Critical segments: the mapping form of a quality gate's ``segments:``.

The list form (``segments: [lang]``) checks every value of a field against the gate's own limits and
leaves values with fewer than ``min_queries`` queries ungated. The mapping form names the values a team
answers for, each with its own limits::

    segments:
      lang:
        pt-BR: {threshold: 0.85}
        es-AR: {threshold: 0.85, regression_max: 0.05, owner: latam-search}
      intent: all                   # all (or null): the list form for this field

A chosen value takes ``threshold``, ``max``, ``regression_max``, ``on``, ``severity`` and ``owner``,
each optional and falling back to the gate's; ``lang: [pt-BR, es-AR]`` chooses values with the gate's
limits. Chosen values are always gated: one with fewer than ``min_queries`` queries is checked all
the same and carries a warning saying the smallest drop its queries can show
(:func:`rankgate.stats.power.min_detectable_drop`, the figure of ``gold validate`` and ``gold plan``);
a check that cannot be made (too few queries for an interval) warns instead of being skipped. A chosen
value the gold set does not hold is an error naming the line that chose it and the values it does hold.

The checks are the gate's own (:func:`rankgate.gating.decide.decide` hands its check function in, so the
rules of a floor, a ceiling and a paired regression are written once), on the segment rows of the
field: their intervals and verdicts are those of the field's segments, corrected within the field's
Holm family, so choosing a value never changes a headline verdict.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from rankgate._util.configfile import SEVERITIES, ConfigItem, ConfigReader, show_value
from rankgate.errors import ConfigError

__all__ = ["VALUE_KEYS", "CriticalValue", "critical_checks", "gate_status", "read_segments"]

VALUE_KEYS = ("threshold", "max", "regression_max", "on", "severity", "owner")
"""What a chosen value may set; what it leaves out is the gate's."""
LIST_FORM = ("all",)
"""A field mapped to one of these (or to null) is checked in the list form: every value, the gate's limits."""
SHOWN_VALUES = 20
"""Values of a field an unknown-value error lists at most."""


@dataclass(frozen=True)
class CriticalValue:
    """One chosen value of a segment field and the limits it sets (None: the gate's)."""

    field: str
    value: str
    threshold: float | None = None
    max: float | None = None
    regression_max: float | None = None
    on: str | None = None
    severity: str | None = None
    owner: str | None = None
    line: int | None = None
    at: str = ""  # where the config chose it: gates[0].segments.lang.pt-BR

    def to_dict(self) -> dict[str, Any]:
        """The value and the limits it sets (those it leaves to the gate are left out)."""
        return {"field": self.field, "value": self.value,
                **{k: v for k in VALUE_KEYS for v in [getattr(self, k)] if v is not None}}


# -- reading --------------------------------------------------------------------------------------
def read_segments(r: ConfigReader, item: ConfigItem, at: str, metric: str, gate: Mapping[str, Any],
                  on: str) -> tuple[tuple[str, ...], tuple[CriticalValue, ...]]:
    """The mapping form of ``segments:``: ``(fields in the list form, chosen values)``. ``gate``: the gate's
    own ``threshold``, ``max`` and ``regression_max`` (None when not set); ``on``: its ``on``."""
    from rankgate.metrics import metric_info

    info = metric_info(metric)
    listed: list[str] = []
    chosen: list[CriticalValue] = []
    for name, sub in item.value.items():
        where = f"{at}.{name}"
        if not name.strip():
            raise r.fail(where, sub.line, "names no field", "write a segment field, e.g. lang")
        v = sub.value if sub.written is None else sub.written
        if v is None or (isinstance(v, str) and v.strip().lower() in LIST_FORM):
            listed.append(name.strip())
            continue
        if isinstance(v, list):  # lang: [pt-BR, es-AR]: chosen values with the gate's limits
            for x in v:
                value = r.text(x, where)
                chosen.append(CriticalValue(name.strip(), value, line=x.line, at=f"{where}.{value}"))
            continue
        if not isinstance(v, dict):
            raise r.fail(where, sub.line, f"must be 'all', a list of values or a mapping of values to their limits; "
                         f"got {show_value(v)}", "e.g. lang: {pt-BR: {threshold: 0.85}}, lang: [pt-BR, es-AR] or lang: all")
        if not v:
            raise r.fail(where, sub.line, "chooses no value", "name the values, e.g. pt-BR: {threshold: 0.85}, or write all")
        for value, limits in v.items():
            chosen.append(_chosen(r, name.strip(), value, limits, f"{where}.{value}", metric, info, gate, on))
    seen: dict[tuple[str, str], CriticalValue] = {}
    for c in chosen:
        if (c.field, c.value) in seen:
            raise r.fail(c.at, c.line, f"chooses {c.value!r} of {c.field} twice", "keep one")
        seen[(c.field, c.value)] = c
    both = sorted({c.field for c in chosen} & set(listed))
    if both:
        raise r.fail(f"{at}.{both[0]}", item.line, f"{both[0]} is both chosen value by value and 'all'", "keep one")
    return tuple(dict.fromkeys(listed)), tuple(chosen)


def _chosen(r: ConfigReader, field: str, value: str, item: ConfigItem, at: str, metric: str, info: Any,
            gate: Mapping[str, Any], gate_on: str) -> CriticalValue:
    """One chosen value: its limits checked by the gate's rules (bounds, direction, ``on``)."""
    if not value.strip():
        raise r.fail(at, item.line, "names no value", f"write a value of {field}")
    if item.value is None:  # pt-BR: (nothing): the gate's limits, always gated
        return CriticalValue(field, value, line=item.line, at=at)
    g = r.mapping(item, at, VALUE_KEYS)
    limits: dict[str, float | None] = {}
    for key in ("threshold", "max", "regression_max"):
        if key not in g:
            continue
        v = r.number(g[key], f"{at}.{key}", share=info.is_share, pp=key == "regression_max")
        low, high = info.bounds if key != "regression_max" else (0.0, info.span)
        if not low <= v <= high:
            raise r.fail(f"{at}.{key}", g[key].line, f"must be between {low:g} and {high:g} for {metric}; got {v!r}")
        limits[key] = v
    hib = info.higher_is_better
    if "threshold" in limits and not hib:
        raise r.fail(f"{at}.threshold", g["threshold"].line, f"is a floor, but lower is better for {metric}",
                     "use max: to set a ceiling")
    if "max" in limits and hib:
        raise r.fail(f"{at}.max", g["max"].line, f"is a ceiling, but higher is better for {metric}",
                     "use threshold: to set a floor")
    on = r.choice(g["on"], f"{at}.on", ("mean", "ci_lower", "ci_upper")) if "on" in g else None
    threshold = limits.get("threshold", gate.get("threshold"))
    ceiling = limits.get("max", gate.get("max"))
    effective = on or gate_on
    if effective == "ci_lower" and threshold is None:
        raise r.fail(f"{at}.on" if on else at, g["on"].line if on else item.line,
                     "ci_lower goes with a threshold (a floor), and this value has none", "set threshold: or on: mean")
    if effective == "ci_upper" and ceiling is None:
        raise r.fail(f"{at}.on" if on else at, g["on"].line if on else item.line,
                     "ci_upper goes with max (a ceiling), and this value has none", "set max: or on: mean")
    severity = r.choice(g["severity"], f"{at}.severity", SEVERITIES) if "severity" in g else None
    owner = r.text(g["owner"], f"{at}.owner") if "owner" in g else None
    return CriticalValue(field, value, limits.get("threshold"), limits.get("max"), limits.get("regression_max"), on,
                         severity, owner, item.line, at)


# -- deciding -------------------------------------------------------------------------------------
class _OneSegment:
    """A view of a segment summary holding one segment of one field: the gate's check function, given it,
    checks that segment only (and all queries, which the caller leaves out)."""

    def __init__(self, segs: Any, key: str, label: str) -> None:
        self.segs, self.key, self.label = segs, key, label

    def sizes(self, key: str) -> dict[str, int]:
        return {self.label: self.segs.sizes(key)[self.label]} if key == self.key else {}

    def get(self, key: str, label: str, metric: str) -> Any:
        return self.segs.get(key, label, metric)


def chosen_gate(g: Any, c: CriticalValue) -> Any:
    """The gate as it holds for the chosen value ``c``: its limits where ``c`` sets them, one field, never
    skipped for size (the warning says what its queries can see)."""
    def pick(own: Any, gates: Any) -> Any:
        return gates if own is None else own

    return replace(g, threshold=pick(c.threshold, g.threshold), max=pick(c.max, g.max),
                   regression_max=pick(c.regression_max, g.regression_max), on=pick(c.on, g.on),
                   severity=pick(c.severity, g.severity), owner=pick(c.owner, g.owner), segments=(c.field,),
                   min_queries=1, critical=())


def unknown_value(config: Any, g: Any, c: CriticalValue, values: Iterable[str]) -> ConfigError:
    """The error of a chosen value the gold set does not hold: its line, the values it does hold."""
    present = list(values)
    close = difflib.get_close_matches(c.value, present, n=1, cutoff=0.6)
    if not close:  # pt_br for pt-BR: compare without case and separators
        def squash(s: str) -> str:
            return "".join(ch for ch in s.lower() if ch.isalnum())

        close = [v for v in present if squash(v) == squash(c.value)][:1]
    shown = ", ".join(present[:SHOWN_VALUES]) + (f" and {len(present) - SHOWN_VALUES} more" if len(present) > SHOWN_VALUES
                                                  else "")
    hint = (f"did you mean '{close[0]}'? " if close else "") + (f"the values of {c.field} in the gold set: {shown}"
                                                               if present else f"no query of the gold set has {c.field}")
    return ConfigError(f"chooses {c.value!r} of {c.field}, which no query of the gold set has", path=config.path,
                       line=c.line, field=c.at or f"gates[{config.gates.index(g)}].segments", hint=hint)


def critical_checks(g: Any, config: Any, segs: Any, fields: Mapping[str, str],
                    check: Callable[[Any, Any], list[Any]]) -> list[Any]:
    """The checks of ``g``'s chosen values. ``check(gate, segments)``: the gate's check function over
    ``segments`` (:func:`rankgate.gating.decide._checks_for` with the candidate, baseline and intervals
    bound); ``fields``: field name -> its key in the result."""
    from rankgate.metrics.display import fmt_size
    from rankgate.stats.power import min_detectable_drop

    out: list[Any] = []
    for c in g.critical:
        key = fields[c.field]
        sizes = segs.sizes(key) if segs is not None else {}
        if c.value not in sizes:
            raise unknown_value(config, g, c, sizes)
        cg = chosen_gate(g, c)
        row = segs.get(key, c.value, g.metric)
        n = 0 if row is None else row.n
        warning = ""
        if n < g.min_queries:
            level = cg.threshold if cg.threshold is not None else 0.5
            drop = min_detectable_drop(n, level, confidence=config.confidence)
            warning = (f"{c.value} has {n} {'query' if n == 1 else 'queries'} (min_queries {g.min_queries}); the gate sees "
                       f"a drop of {fmt_size(g.metric, drop) if math.isfinite(drop) else 'no size'} at best")
            if cg.regression_max is not None:
                warning += f"; its limit is {fmt_size(g.metric, cg.regression_max)}"
        facts = {"threshold": cg.threshold, "max": cg.max, "regression_max": cg.regression_max, "on": cg.on,
                 "severity": cg.severity, "owner": cg.owner, **({"warning": warning} if warning else {})}
        for x in check(cg, _OneSegment(segs, key, c.value)):
            if x.field is None:
                continue
            # a chosen value is never skipped: what cannot be checked warns (a regression limit without a
            # baseline is not checked anywhere, and says so as the gate's own does)
            status = "warn" if x.status == "skipped" and x.note != "no baseline given" else x.status
            out.append(replace(x, status=status, critical=facts))
    return out


def gate_status(g: Any, checks: Iterable[Any]) -> str:
    """A gate's status from its checks: ``fail`` when a failing check blocks (its chosen value's severity,
    else the gate's, is error), ``warn`` when a check fails without blocking or warns, else ``pass``."""
    checks = list(checks)

    def severity(c: Any) -> str:
        return (c.critical or {}).get("severity") or g.severity

    if any(c.status == "fail" and severity(c) == "error" for c in checks):
        return "fail"
    return "warn" if any(c.status in ("fail", "warn") for c in checks) else "pass"
