"""Monitors on the trace signals: thresholds and change rules per signal and segment, in a YAML file
in the style of the ship criteria (``rankgate traces check --monitors monitors.yaml``).

::

    monitors:
      - signal: error_rate_per_1k     # a signal name (docs/traces.md, "Signals")
        max: 20                       # threshold: flag a window above it (min: flags below)
        change: robust_z              # robust_z | proportion | none: against the trailing windows
        direction: up                 # up | down | both (default: the signal's worse direction)
        segments: [tenant]            # also check each value of these fields (all traffic always)
        min_n: 100                    # windows with fewer applicable rows are not checked (nor baseline)
        z: 3.5                        # robust z limit
        mad_floor: 1.0                # the MAD is at least this (signal units) ...
        mad_floor_rel: 0.05           # ... and at least this share of |median|
        detect: 2x                    # the change it must see: 2x, 3sd, 5pp or a number (rankgate.traces.power)
        severity: error               # error: exit 1; warning: reported only
        owner: search-oncall
        name: errors                  # optional; defaults to the signal
    defaults: {baseline_windows: 7, min_baseline: 3, z: 3.5, confidence: 0.95}

Rules, for window x of one segment against its baseline (the up to ``baseline_windows`` windows
just before it that have ``n >= min_n``; fewer than ``min_baseline`` of them: not checked):

* ``robust_z``: ``M = 0.6745 · (x − median) / max(MAD, mad_floor, mad_floor_rel·|median|)`` with
  MAD the median absolute deviation of the baseline (Iglewicz & Hoaglin 1993); flagged when
  ``M > z`` (up), ``M < −z`` (down) or ``|M| > z`` (both). The floors stop a flat baseline (MAD 0)
  from turning any wobble into an alarm.
* ``proportion`` (rates, small counts): the window's ``k/n`` against the pooled baseline ``Σk / Σn``
  by Newcombe's hybrid score interval of their difference (built from the two Wilson intervals,
  :func:`rankgate.stats.bootstrap.newcombe_interval`, at ``confidence``); flagged when the interval lies wholly
  above 0 (up) or below 0 (down). (Requiring the two Wilson intervals not to overlap, the rule before,
  is a test at a much smaller α: it missed a source whose feedback turned bad on a day of 84 votes.)
* ``max`` / ``min``: a fixed threshold, checked with or without a change rule.

Each monitor also says, per segment, whether its rule could see a change of its ``detect:`` size in each
window at the traffic it had, and what it sees now when it could not (:mod:`rankgate.traces.power`): a
quiet monitor on 14 votes a day is not evidence that nothing changed.

Numbers in, findings out: :func:`check_monitors` is pure; rendering is in :mod:`rankgate.render.traces`;
the file is read by :func:`load_monitors` (with the ship criteria' reader, :mod:`rankgate._util.configfile`).
"""

from __future__ import annotations

import difflib
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rankgate._util.configfile import SEVERITIES, ConfigReader, parse_tree, read_config_text
from rankgate.errors import ConfigError
from rankgate.metrics.display import fmt_sig, fmt_z
from rankgate.traces.power import Detect, MonitorPower, Seen
from rankgate.traces.signals import SEGMENT_FIELDS, SIGNAL_INFO, SignalValue, TraceSummary, iso, parse_window

__all__ = ["DEFAULT_MONITORS", "Flag", "Monitor", "MonitorConfig", "MonitorOutcome", "check_monitors",
           "robust_z"]

TOP_KEYS = ("monitors", "defaults", "window", "validity")  # validity: rankgate.traces.validity.parse_monitor
MONITOR_KEYS = ("name", "signal", "max", "min", "change", "direction", "segments", "min_n", "z", "mad_floor",
                "mad_floor_rel", "baseline_windows", "min_baseline", "severity", "owner", "confidence", "detect")
DEFAULT_KEYS = ("baseline_windows", "min_baseline", "z", "confidence")
CHANGES = ("robust_z", "proportion", "none")
DIRECTIONS = ("up", "down", "both")

#: The monitors ``rankgate traces check`` uses without ``--monitors`` (docs/traces.md, "Monitors").
DEFAULT_MONITORS = """\
# rankgate trace monitors: the defaults. Copy this file and tune it (docs/traces.md, "Monitors").
defaults: {baseline_windows: 7, min_baseline: 3, z: 3.5, confidence: 0.95}
monitors:
  # detect: the change each must see (docs/traces.md, "Power"); a 2x doubling where not written
  - {signal: error_rate_per_1k, change: robust_z, min_n: 100, mad_floor: 2.0, detect: 15, severity: error}
  - {signal: timeout_rate, change: robust_z, min_n: 100, mad_floor: 0.01, detect: 0.08, severity: warning}
  - {signal: latency.retrieval.p95, change: robust_z, min_n: 100, mad_floor_rel: 0.1, severity: warning}
  - {signal: latency.rerank.p95, change: robust_z, min_n: 100, mad_floor_rel: 0.1, severity: warning}
  - {signal: latency.synthesis.p95, change: robust_z, min_n: 100, mad_floor_rel: 0.1, severity: warning}
  - {signal: latency.total.p95, change: robust_z, min_n: 100, mad_floor_rel: 0.1, severity: warning}
  - {signal: no_result_rate, change: robust_z, min_n: 100, mad_floor: 0.01, detect: 0.08, severity: warning}
  - {signal: fallback_rate, change: robust_z, min_n: 100, mad_floor: 0.02, detect: 0.15, severity: warning}
  - {signal: low_confidence_rate, change: robust_z, min_n: 100, mad_floor: 0.03, detect: 0.2, severity: warning}
  - {signal: deprecated_context_rate, change: robust_z, max: 0.05, min_n: 50, mad_floor: 0.01, detect: 0.08, severity: error}
  - {signal: stale_citation_rate, change: robust_z, min_n: 100, mad_floor: 0.01, detect: 0.08, severity: warning}
  - {signal: instability.rbo, change: robust_z, min_n: 50, mad_floor: 0.02, detect: 0.15, severity: error}
  - {signal: negative_feedback_rate, change: proportion, segments: [source], min_n: 20, confidence: 0.99, severity: warning}
  - {signal: redaction_efficacy, change: robust_z, segments: [tenant], min_n: 50, mad_floor: 0.02, detect: 0.15, severity: error}
  - {signal: secure_field_bypass_rate, change: robust_z, min_n: 50, mad_floor: 0.01, detect: 0.08, severity: error}
  - {signal: block_efficacy, change: robust_z, min_n: 20, mad_floor: 0.02, detect: 0.15, severity: error}
"""


@dataclass(frozen=True)
class Monitor:
    name: str
    signal: str
    max: float | None = None
    min: float | None = None
    change: str = "robust_z"
    direction: str = "up"
    segments: tuple[str, ...] = ()
    min_n: int = 1
    z: float = 3.5
    mad_floor: float = 0.0
    mad_floor_rel: float = 0.0
    baseline_windows: int = 7
    min_baseline: int = 3
    severity: str = "error"
    owner: str | None = None
    confidence: float = 0.95
    detect: Detect | None = None  # the change it must see (None: the signal's default, rankgate.traces.power)
    line: int | None = field(default=None, compare=False)


@dataclass(frozen=True)
class MonitorConfig:
    monitors: tuple[Monitor, ...]
    window: str | None = None
    path: str | None = None
    validity: Any = None  # the validity monitor (rankgate.traces.validity.ValidityMonitor), run by flows.validity

    @property
    def segment_fields(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(f for m in self.monitors for f in m.segments))


@dataclass(frozen=True)
class Flag:
    monitor: str
    signal: str
    window: int
    segment: str
    value: float
    n: int
    rule: str  # "max", "min", "robust_z", "proportion"
    baseline: float | None
    statistic: float | None  # the robust z, or the interval bound that crossed
    severity: str
    owner: str | None
    detail: str

    @property
    def window_iso(self) -> str:
        return iso(self.window)


@dataclass(frozen=True)
class MonitorOutcome:
    flags: tuple[Flag, ...]
    checked: int  # (monitor, window, segment) cells that were checked
    unchecked: Mapping[str, int]  # reason -> cells not checked
    not_measurable: Mapping[str, str]  # monitor -> note, for signals the traces cannot give
    power: tuple[MonitorPower, ...] = ()  # per monitor and segment: could it see its detect size (docs/traces.md)

    @property
    def exit_code(self) -> int:
        return 1 if any(f.severity == "error" for f in self.flags) else 0


# -- the rules ---------------------------------------------------------------------------------------
def robust_z(x: float, baseline: Sequence[float], *, mad_floor: float = 0.0, mad_floor_rel: float = 0.0) -> tuple[float, float, float]:
    """``(M, median, scale)`` with ``M = 0.6745 (x − median) / scale`` and ``scale = max(MAD, mad_floor,
    mad_floor_rel·|median|)``; ``M`` is 0 when ``x`` equals the median and the scale is 0, else ±inf."""
    med = statistics.median(baseline)
    mad = statistics.median(abs(b - med) for b in baseline)
    scale = max(mad, mad_floor, mad_floor_rel * abs(med))
    diff = x - med
    if scale == 0:
        return (0.0 if diff == 0 else math.copysign(math.inf, diff), med, scale)
    return (0.6745 * diff / scale, med, scale)


def _baseline(series: list[SignalValue], i: int, m: Monitor, width: int) -> list[SignalValue]:
    x = series[i]
    assert x.window is not None
    start = x.window - m.baseline_windows * width
    return [v for v in series[:i] if v.window is not None and v.window >= start and v.value is not None and v.n >= m.min_n]


def check_monitors(summary: TraceSummary, config: MonitorConfig) -> MonitorOutcome:
    """Every monitor on every window and segment of ``summary`` (module docs)."""
    from rankgate.stats.bootstrap import newcombe_interval, wilson_interval

    series: dict[tuple[str, str], list[SignalValue]] = {}
    for v in summary.values:
        series.setdefault((v.signal, v.segment), []).append(v)
    for s in series.values():
        s.sort(key=lambda v: v.window or 0)
    flags: list[Flag] = []
    checked = 0
    unchecked: dict[str, int] = {}
    absent: dict[str, str] = {}
    for m in config.monitors:
        for seg in _segments(m, series):
            ser = series[(m.signal, seg)]
            for i, x in enumerate(ser):
                if x.note and x.note.startswith("not measurable"):
                    absent[m.name] = x.note
                    break
                if x.value is None or x.n < m.min_n:
                    unchecked["too few rows"] = unchecked.get("too few rows", 0) + 1
                    continue
                checked += 1
                assert x.window is not None
                found: list[Flag] = []
                if m.max is not None and x.value > m.max:
                    found.append(_flag(m, x, "max", m.max, None, f"{fmt_sig(x.value, 4)} > max {fmt_sig(m.max, 4)}"))
                if m.min is not None and x.value < m.min:
                    found.append(_flag(m, x, "min", m.min, None, f"{fmt_sig(x.value, 4)} < min {fmt_sig(m.min, 4)}"))
                if m.change != "none":
                    base = _baseline(ser, i, m, summary.window_us)
                    if len(base) < m.min_baseline:
                        unchecked["no baseline yet"] = unchecked.get("no baseline yet", 0) + 1
                    elif m.change == "robust_z":
                        z, med, scale = robust_z(x.value, [b.value for b in base if b.value is not None],
                                                 mad_floor=m.mad_floor, mad_floor_rel=m.mad_floor_rel)
                        if _worse(z, m.direction, m.z):
                            found.append(_flag(m, x, "robust_z", med, z,
                                               f"robust z {fmt_z(z)} vs median {fmt_sig(med, 4)} of {len(base)} windows"))
                    elif x.k is not None:
                        bk = sum(b.k or 0 for b in base)
                        bn = sum(b.n for b in base)
                        lo, hi = wilson_interval(x.k, x.n, confidence=m.confidence)
                        dlo, dhi = newcombe_interval(x.k, x.n, bk, bn, confidence=m.confidence)
                        up, down = _proportion_flags(dlo, dhi)
                        if (m.direction in ("up", "both") and up) or (m.direction in ("down", "both") and down):
                            scale = 1000.0 if SIGNAL_INFO[m.signal].unit == "per_1k" else 1.0
                            found.append(_flag(m, x, "proportion", scale * bk / bn, dlo if up else dhi,
                                               f"{x.k}/{x.n} [{fmt_sig(lo, 4)}, {fmt_sig(hi, 4)}] vs baseline {bk}/{bn}: "
                                               f"difference {fmt_sig(x.k / x.n - bk / bn, 4)}, interval "
                                               f"[{fmt_sig(dlo, 4)}, {fmt_sig(dhi, 4)}]"))
                flags += found
    flags.sort(key=lambda f: (f.window, f.severity != "error", f.signal, f.segment != "all", f.segment, f.rule))
    return MonitorOutcome(tuple(flags), checked, unchecked, absent, _power(summary, config, series, flags))


def _segments(m: Monitor, series: Mapping[tuple[str, str], Any]) -> list[str]:
    """The segments ``m`` watches that the series hold: all traffic first, then each value of its fields."""
    segs = [seg for (sig, seg) in series if sig == m.signal and (seg == "all" or seg.split("=", 1)[0] in m.segments)]
    return sorted(segs, key=lambda s: (s != "all", s))


def _proportion_flags(dlo: float, dhi: float) -> tuple[bool, bool]:
    """The proportion rule on the interval of the difference: (flags up, flags down)."""
    return dlo > 0, dhi < 0


# -- power: whether each monitor could see its detect size (rankgate.traces.power) -----------------------------
def _power(summary: TraceSummary, config: MonitorConfig, series: Mapping[tuple[str, str], list[SignalValue]],
           flags: Sequence[Flag]) -> tuple[MonitorPower, ...]:
    """Per monitor and segment, what its rule could see in each window (module docs of :mod:`.power`); a
    window it flagged has seen a change, whatever its power."""
    from dataclasses import replace

    from rankgate.traces.power import default_detect, series_power

    flagged = {(f.monitor, f.segment, f.window) for f in flags}

    out = []
    for m in config.monitors:
        for seg in _segments(m, series):
            ser = series[(m.signal, seg)]
            usable = next((i for i, x in enumerate(ser) if x.note and x.note.startswith("not measurable")), len(ser))
            if not usable:
                continue
            cells = [_seen(m, ser, i, summary.window_us, last=i == usable - 1) for i in range(usable)]
            cells = [replace(c, status="flagged") if (m.name, seg, c.window) in flagged else c for c in cells]
            out.append(series_power(m.name, m.signal, seg, m.change if m.change != "none" else "max/min",
                                    m.detect or default_detect(m.signal), m.severity, cells))
    return tuple(out)


def _seen(m: Monitor, ser: list[SignalValue], i: int, width: int, *, last: bool) -> Seen:
    """What ``m``'s rule could see in window ``i`` of its series: its own rule asked of every count (a rate),
    or its limit and the baseline's spread (anything else). ``last``: also the smallest change and the rows
    a window would need (the slow part, asked once per series)."""
    from dataclasses import replace

    from rankgate.stats.bootstrap import newcombe_interval
    from rankgate.traces.power import (
        RATE_UNITS, default_detect, detect_target, rate_cell, rows_for_rate, rows_for_shift, shift_cell)

    x = ser[i]
    assert x.window is not None
    n = x.n if x.value is not None else 0
    few = n == 0 or n < m.min_n
    if m.change == "none":  # a fixed line, compared with the value observed: it decides each window it checks
        return Seen(x.window, n, "too few rows" if few else "decided")
    strict = _baseline(ser, i, m, width)
    base = strict if len(strict) >= m.min_baseline else _baseline(ser, i, replace(m, min_n=1), width)
    if len(base) < m.min_baseline:
        return Seen(x.window, n, "warm-up")
    if n == 0:
        return Seen(x.window, n, "too few rows")
    status = "too few rows" if few else ("thin baseline" if base is not strict else "")
    detect = m.detect or default_detect(m.signal)
    vals = [b.value for b in base if b.value is not None]
    _, med, scale = robust_z(0.0, vals, mad_floor=m.mad_floor, mad_floor_rel=m.mad_floor_rel)
    sd = robust_z(0.0, vals)[2] / 0.6745  # the baseline's robust SD, without the floors
    info = SIGNAL_INFO.get(m.signal)
    rate = (x.k is not None and info is not None and info.unit in RATE_UNITS and all(b.k is not None for b in base)
            and sum(b.n for b in base) > 0)
    results = []
    for side in (("up", "down") if m.direction == "both" else (m.direction,)):
        if rate:
            unit = 1000.0 if info is not None and info.unit == "per_1k" else 1.0
            bk, bn = sum(b.k or 0 for b in base), sum(b.n for b in base)
            level = unit * bk / bn if m.change == "proportion" else med  # (each rule's own baseline)

            def flags(k: int, rows: int, side: str = side, unit: float = unit, bk: int = bk, bn: int = bn) -> bool:
                """The monitor's own rule on ``k`` events of ``rows``, against this baseline."""
                if m.change == "proportion":
                    return _proportion_flags(*newcombe_interval(k, rows, bk, bn, confidence=m.confidence))[side == "down"]
                z = robust_z(unit * k / rows, vals, mad_floor=m.mad_floor, mad_floor_rel=m.mad_floor_rel)[0]
                return _worse(z, side, m.z)

            target = detect_target(detect, m.signal, side, level, sd)
            sees, smallest = rate_cell(n, flags, side, level, unit, target, smallest=last)
            rows = rows_for_rate(flags, side, level, unit, target, n) if last and not sees else None
            base_n = bn
        else:
            limit = m.z * scale / 0.6745
            level, base_n = med, int(statistics.median(b.n for b in base))
            target = detect_target(detect, m.signal, side, level, sd)
            sees, smallest = shift_cell(limit, sd, n, base_n, target)
            rows = rows_for_shift(limit, sd, base_n, target) if last and not sees else None
        results.append((sees, Seen(x.window, n, status or ("decided" if sees else "size 0" if not target > 0 else
                                                           "underpowered"), side, level, base_n, target, smallest,
                                   None if rows is None else max(rows, m.min_n))))
    return next((s for ok, s in results if not ok), results[0][1])


def _worse(z: float, direction: str, limit: float) -> bool:
    return (direction in ("up", "both") and z > limit) or (direction in ("down", "both") and z < -limit)


def _flag(m: Monitor, x: SignalValue, rule: str, baseline: float | None, stat: float | None, detail: str) -> Flag:
    assert x.window is not None and x.value is not None
    return Flag(m.name, m.signal, x.window, x.segment, x.value, x.n, rule, baseline, stat, m.severity, m.owner, detail)


# -- the monitors file, read with the ship criteria' reader (rankgate._util.configfile) ----------------------------------
def load_monitors(path: str | None) -> MonitorConfig:
    """Read and check a monitors file; ``None`` gives :data:`DEFAULT_MONITORS`."""
    if path is None:
        return parse_monitors(DEFAULT_MONITORS, path="<default monitors>")
    text = read_config_text(path, hint="pass the monitors file with --monitors", what="monitors")
    return parse_monitors(text, path=str(path))


def parse_monitors(text: str, *, path: str = "<monitors>") -> MonitorConfig:
    """Parse and check trace monitors (docs/traces.md, "check: monitors"); errors name file:line:key."""
    root = parse_tree(text, path=path, what="monitors")
    r = ConfigReader(path)
    if root.value is None:
        raise r.fail("monitors", 1, "is required: the file has no monitors", "start with 'monitors:' and a list")
    top = r.mapping(root, "", TOP_KEYS)
    if "monitors" not in top:
        raise r.fail("monitors", root.line, "is required", "start with 'monitors:' and a list")
    defaults: dict[str, Any] = {"baseline_windows": 7, "min_baseline": 3, "z": 3.5, "confidence": 0.95}
    if "defaults" in top:
        for key, item in r.mapping(top["defaults"], "defaults", DEFAULT_KEYS).items():
            defaults[key] = _monitor_value(r, key, item, f"defaults.{key}")
    window = None
    if "window" in top:
        window = r.text(top["window"], "window")
        try:
            parse_window(window)
        except Exception:  # noqa: BLE001 - re-raised as a config error with the line
            raise r.fail("window", top["window"].line, f"must be like 1h or 1d; got {window!r}") from None
    items = top["monitors"]
    if not isinstance(items.value, list) or not items.value:
        raise r.fail("monitors", items.line, "must be a non-empty list of monitors")
    monitors: list[Monitor] = []
    names: set[str] = set()
    for i, item in enumerate(items.value):
        at = f"monitors[{i}]"
        d = r.mapping(item, at, MONITOR_KEYS)
        if "signal" not in d:
            raise r.fail(f"{at}.signal", item.line, "is required", "name the signal to watch, e.g. error_rate_per_1k")
        signal = r.text(d["signal"], f"{at}.signal")
        if signal not in SIGNAL_INFO:
            close = difflib.get_close_matches(signal, list(SIGNAL_INFO), n=1, cutoff=0.6)
            raise r.fail(f"{at}.signal", d["signal"].line, f"names no trace signal: {signal!r}",
                         f"did you mean '{close[0]}'?" if close else "see docs/traces.md, 'Signals'")
        info = SIGNAL_INFO[signal]
        kw: dict[str, Any] = dict(defaults)
        kw["direction"] = info.worse or "both"
        for key, sub in d.items():
            if key in ("signal", "detect"):
                continue
            kw[key] = _monitor_value(r, key, sub, f"{at}.{key}")
        if kw.get("max") is not None and kw.get("min") is not None and kw["min"] > kw["max"]:
            raise r.fail(f"{at}.min", d["min"].line, "is above max", "min flags values below it, max values above it")
        if kw.get("change") == "proportion" and info.unit not in ("share", "per_1k"):
            raise r.fail(f"{at}.change", d["change"].line, f"proportion applies to rates; {signal} is a {info.unit}",
                         "use robust_z")
        if "detect" in d:
            kw["detect"] = _detect(r, d["detect"], f"{at}.detect", signal, kw)
        name = kw.pop("name", None) or signal
        if name in names:
            raise r.fail(f"{at}.name", item.line, f"repeats the monitor name {name!r}", "give each monitor its own name")
        names.add(name)
        monitors.append(Monitor(name=name, signal=signal, line=item.line, **kw))
    validity = None
    if "validity" in top:  # the gold set's metric against production outcomes (docs/validity.md, "The monitor")
        import os

        from rankgate.traces.validity import parse_monitor

        base = os.path.dirname(path) if path and not path.startswith("<") else "."
        validity = parse_monitor(r, top["validity"], base)
    return MonitorConfig(tuple(monitors), window, path, validity)


def _detect(r: Any, item: Any, where: str, signal: str, kw: Mapping[str, Any]) -> Detect:
    """A monitor's ``detect:`` size (:func:`rankgate.traces.power.parse_detect`), checked against its rule."""
    from rankgate.traces.power import parse_detect

    value = item.value if item.written is None or not isinstance(item.value, str) else item.written
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        r.decimal(item, where)
    try:
        detect = parse_detect(value, signal)
    except ValueError as exc:
        message, hint = exc.args
        raise r.fail(where, item.line, message, hint) from None
    change = kw.get("change", "robust_z")
    if change == "none":
        raise r.fail(where, item.line, "applies to a change rule; this monitor has change: none",
                     "a max/min line is compared with the value itself: drop detect, or add change: robust_z")
    if detect.kind == "sd" and change == "robust_z" and detect.amount <= kw.get("z", 3.5):
        raise r.fail(where, item.line, f"{detect} lies within the rule's own limit (z {fmt_sig(kw.get('z', 3.5))}): "
                     "robust_z never flags a change that small", "give more SDs than z, or a size in the signal's units")
    return detect


def _monitor_value(r: Any, key: str, item: Any, where: str) -> Any:
    if key in ("max", "min", "mad_floor", "mad_floor_rel", "z"):
        v = r.number(item, where, share=key in ("max", "min", "mad_floor"))
        if key != "max" and key != "min" and v < 0:
            raise r.fail(where, item.line, f"must be at least 0; got {fmt_sig(v)}")
        return v
    if key == "confidence":
        v = r.number(item, where, share=True)
        if not 0 < v < 1:
            raise r.fail(where, item.line, f"must lie between 0 and 1; got {fmt_sig(v)}")
        return v
    if key in ("min_n", "baseline_windows", "min_baseline"):
        return r.integer(item, where, 1, 10_000) if key != "min_n" else r.integer(item, where, 0)
    if key == "change":
        return r.choice(item, where, CHANGES)
    if key == "direction":
        return r.choice(item, where, DIRECTIONS)
    if key == "severity":
        return r.choice(item, where, SEVERITIES)
    if key in ("owner", "name"):
        return r.text(item, where)
    if key == "segments":
        v = item.value
        elements = v if isinstance(v, list) else [item]
        out = []
        for e in elements:
            name = getattr(e, "value", e)
            if not isinstance(name, str):
                raise r.fail(where, item.line, "must be a list of segment fields, e.g. [tenant, source]")
            from rankgate.traces.model import current_field  # (pyarrow: only for a segment given)

            name = current_field(name, "monitor segments")
            if name not in SEGMENT_FIELDS:
                raise r.fail(where, getattr(e, "line", None) or item.line, f"names no segment field: {name!r}",
                             f"fields: {', '.join(SEGMENT_FIELDS)}")
            out.append(name)
        return tuple(dict.fromkeys(out))
    raise ConfigError(f"unhandled key {key}", path=r.path)  # pragma: no cover - MONITOR_KEYS is exhaustive
