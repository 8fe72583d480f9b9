"""What a trace monitor can see at the traffic it saw: each monitor's ``detect:`` size, and per window
whether the monitor's own rule would flag a change of that size with 80 % power, or the smallest change
it would (docs/traces.md, "Power: what a monitor can see").

A monitor that flags nothing has said something only if it could have flagged: a source with 14 feedback
votes a day cannot show a doubling of its negative share, and a monitor that stays quiet on it must say
so. Every window of every monitor and segment gets one of:

* **decided**: the rule, on this window's rows and this baseline, flags a change of the ``detect`` size
  with probability at least :data:`POWER`; **flagged**: it flagged the window (it saw a change);
* **underpowered**: it would not (the smallest change it would flag at that power is reported);
* **too few rows**: fewer than the monitor's ``min_n``, so not checked at all;
* **thin baseline**: enough earlier windows, but fewer than ``min_baseline`` of them with ``min_n`` rows;
* **warm-up**: fewer than ``min_baseline`` earlier windows at all (the first windows of any series; not
  counted against the monitor).

``detect:`` sizes (:func:`parse_detect`): ``2x`` (the worse side of the signal multiplied: a rate or a
latency that doubles; for a share or score that gets worse downwards, its complement doubles, so a
redaction efficacy of 99 % falling to 98 %), ``3sd`` (robust standard deviations of the baseline windows,
``1.4826 · MAD``), ``5pp`` (points, shares only) or a plain number in the signal's units. Defaults
(:func:`default_detect`): ``2x`` for rates and latencies, ``3sd`` for scores and counts.

The computation per window (``level`` the baseline: the pooled rate ``Σk / Σn`` of a rate, else the
baseline median):

* a **rate** (a signal with an event count ``k`` of ``n``) under ``proportion`` or ``robust_z``: the rule
  itself, asked of every count, gives the fewest events ``k*`` that flag (``rate_flags``); a window at true
  rate ``p`` flags with probability ``P(Bin(n, p) ≥ k*)``, so the smallest rate it sees is that binomial's
  inverse (:func:`rankgate.stats.power.rate_seen_above`), exact at small counts;
* any other signal under ``robust_z``: the rule flags beyond ``L = z · scale / 0.6745`` from the median;
  the window's value scatters by the baseline's robust SD ``σ = MAD / 0.6745`` scaled to its traffic,
  ``σ · √(n̄ / n)`` (``n̄`` the baseline windows' median rows), so it sees ``L + 0.8416 · σ · √(n̄ / n)``
  (:func:`rankgate.stats.power.shift_seen`);
* a fixed ``max`` / ``min`` alone (``change: none``) compares the observed value with its line: it
  decides every window with ``min_n`` rows and has no ``detect`` size.

Pure: :func:`rankgate.traces.monitors.check_monitors` hands in each rule as a function of the counts.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rankgate.traces.signals import SIGNAL_INFO, iso

__all__ = ["POWER", "Detect", "MonitorPower", "Seen", "default_detect", "detect_target", "parse_detect",
           "rate_cell", "rows_for_rate", "rows_for_shift", "series_power", "shift_cell"]

#: The power every statement is made at.
POWER = 0.8
#: Rows a window the "rows needed" search goes up to.
MAX_ROWS = 100_000_000
RATE_UNITS = ("share", "per_1k")


@dataclass(frozen=True)
class Detect:
    """A ``detect:`` size: ``kind`` ``x`` (a multiple of the worse side), ``sd`` (robust SDs of the baseline)
    or ``abs`` (in the signal's units); ``default`` when the monitor did not write one."""

    kind: str
    amount: float
    default: bool = False

    def __str__(self) -> str:
        from rankgate.metrics.display import fmt_sig

        return f"{fmt_sig(self.amount)}{'' if self.kind == 'abs' else self.kind}"


def default_detect(signal: str) -> Detect:
    """``2x`` for rates and latencies (a doubling), ``3sd`` for scores and counts (module docs)."""
    unit = SIGNAL_INFO[signal].unit if signal in SIGNAL_INFO else "score"
    return Detect("x", 2.0, True) if unit in (*RATE_UNITS, "ms") else Detect("sd", 3.0, True)


def parse_detect(value: Any, signal: str) -> Detect:
    """A ``detect:`` value as written; ``ValueError(message, hint)`` for anything else."""
    unit = SIGNAL_INFO[signal].unit if signal in SIGNAL_INFO else "score"
    forms = "2x (the worse side doubles), 3sd (robust SDs of the baseline) or a number in the signal's units"
    if isinstance(value, bool) or value is None or isinstance(value, (list, dict)):
        raise ValueError("must be a size", forms)
    if isinstance(value, (int, float)):
        if not math.isfinite(value) or value <= 0:
            raise ValueError(f"must be above 0; got {value!r}", forms)
        return Detect("abs", float(value))
    text = str(value).strip().lower().replace(" ", "")
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(x|sd|pp)", text)
    if not m:
        hint = ("write 0.05 (or 5pp) for 5 points, or 1.05x for 5% more" if text.endswith("%") else forms)
        raise ValueError(f"must be a size; got {value!r}", hint)
    amount, kind = float(m.group(1)), m.group(2)
    if kind == "x" and amount <= 1:
        raise ValueError(f"must be more than 1x (a change); got {value!r}", "2x: the worse side doubles")
    if amount <= 0:
        raise ValueError(f"must be above 0; got {value!r}", forms)
    if kind == "pp":
        if unit != "share":
            raise ValueError(f"pp (points) applies to shares; {signal} is a {unit}", "write a number in its units")
        return Detect("abs", amount / 100.0)
    return Detect(kind, amount)


def _bounded(signal: str) -> float | None:
    """The top of a signal whose complement is its worse side (rates; scores that get worse downwards)."""
    info = SIGNAL_INFO.get(signal)
    if info is None:
        return None
    if info.unit == "share" or (info.unit == "score" and info.worse == "down"):
        return 1.0
    return 1000.0 if info.unit == "per_1k" else None


def detect_target(detect: Detect, signal: str, side: str, level: float, sd: float | None) -> float:
    """The detect size as a change in the signal's units (≥ 0) from ``level``, on ``side`` (module docs):
    never past the signal's range (a share doubles to at most 100 %, falls to at least 0)."""
    top = _bounded(signal)
    room = (top - level if top is not None else math.inf) if side == "up" else max(level, 0.0)
    if detect.kind == "abs":
        return min(detect.amount, room)
    if detect.kind == "sd":
        return min(detect.amount * sd, room) if sd is not None else math.nan
    r = detect.amount
    if top is not None and SIGNAL_INFO[signal].worse == "down":  # its complement grows (down) or shrinks (up)
        c = max(top - level, 0.0)
        return min(c * (r - 1) if side == "down" else c * (1 - 1 / r), room)
    v = abs(level)  # the value itself is multiplied (up) or divided (down)
    return min(v * (r - 1) if side == "up" else v * (1 - 1 / r), room)


@dataclass(frozen=True)
class Seen:
    """One window of one monitor and segment: what the rule could see there (module docs)."""

    window: int
    n: int
    status: str  # decided | flagged | underpowered | too few rows | thin baseline | size 0 | warm-up
    side: str = "up"
    level: float | None = None     # the baseline level (signal units)
    base_n: int | None = None      # the baseline's rows (pooled)
    target: float | None = None    # the detect size as a change (signal units)
    smallest: float | None = None  # the smallest change seen at POWER (signal units; inf: none at all)
    rows_needed: int | None = None  # rows a window needs to see the target (None: none, or not asked)


@dataclass(frozen=True)
class MonitorPower:
    """One monitor on one segment over the windows: which it could decide, and what it sees now."""

    monitor: str
    signal: str
    segment: str
    rule: str
    detect: str
    severity: str
    windows: int                               # windows past the warm-up
    undecided: tuple[tuple[int, str, int], ...]  # (window, status, rows) of those it could not decide
    now: Seen | None                           # the last window (the one that speaks for "now")
    warmup: int = 0

    @property
    def decides(self) -> bool:
        return self.windows > 0 and not self.undecided

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (``traces check --json``, ``summary.json``'s ``monitor_power``)."""
        now = self.now

        def num(x: float | None) -> float | str | None:
            return None if x is None or math.isnan(x) else (x if math.isfinite(x) else "inf")

        counts: dict[str, int] = {}
        for _, status, _ in self.undecided:
            counts[status] = counts.get(status, 0) + 1
        return {
            "monitor": self.monitor, "signal": self.signal, "segment": self.segment, "rule": self.rule,
            "detect": self.detect, "power": POWER, "decides": self.decides, "windows": self.windows,
            "warmup_windows": self.warmup, "undecided": counts,
            "undecided_windows": [{"window": iso(w), "status": s, "n": n} for w, s, n in self.undecided],
            "now": None if now is None else {
                "window": iso(now.window), "n": now.n, "status": now.status, "side": now.side,
                "baseline": num(now.level), "baseline_n": now.base_n, "detect_change": num(now.target),
                "smallest_change": num(now.smallest), "rows_needed": now.rows_needed},
        }


def series_power(monitor: str, signal: str, segment: str, rule: str, detect: Detect, severity: str,
                 cells: Sequence[Seen]) -> MonitorPower:
    """The cells of one monitor and segment, in window order, summed up (warm-up windows aside)."""
    past = [c for c in cells if c.status != "warm-up"]
    undecided = tuple((c.window, c.status, c.n) for c in past if c.status not in ("decided", "flagged"))
    return MonitorPower(monitor, signal, segment, rule, str(detect), severity, len(past), undecided,
                        cells[-1] if cells else None, len(cells) - len(past))


# -- the two computations ----------------------------------------------------------------------------------
def _first(lo: int, hi: int, pred: Callable[[int], bool]) -> int:
    """The smallest whole number in ``(lo, hi]`` where ``pred`` holds, for a ``pred`` false up to it and true
    from it on (``pred(lo)`` false and ``pred(hi)`` true are taken as given): a bisection."""
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if pred(mid):
            hi = mid
        else:
            lo = mid
    return hi


def _k_star(n: int, flags: Callable[[int, int], bool], side: str) -> int | None:
    """The fewest events (up) or the most (down) of ``n`` rows the rule flags; None: no count does.
    The rule is monotone in the count (a larger count is further up), so a bisection finds it."""
    if side == "up":
        return _first(-1, n, lambda k: flags(k, n)) if flags(n, n) else None
    return _first(0, n + 1, lambda k: not flags(k, n)) - 1 if flags(0, n) else None


def _rate_power(n: int, flags: Callable[[int, int], bool], side: str, p: float) -> float:
    from rankgate.stats.power import rate_power_above, rate_power_below

    k = _k_star(n, flags, side)
    if k is None:
        return 0.0
    return rate_power_above(n, k, p) if side == "up" else rate_power_below(n, k, p)


def rate_cell(n: int, flags: Callable[[int, int], bool], side: str, level: float, scale: float, target: float,
              *, smallest: bool) -> tuple[bool, float | None]:
    """``(sees the target, smallest change)`` of a rate window: ``flags(k, n)`` is the monitor's rule on
    ``k`` events of ``n`` rows; ``level`` and ``target`` in the signal's units, ``scale`` the units of a
    share (1, or 1000 per 1k). The smallest change (an inverse of the binomial) is computed only when
    asked: it is the slow part."""
    from rankgate.stats.power import rate_seen_above, rate_seen_below

    p_t = (level + target if side == "up" else level - target) / scale
    sees = target > 0 and _rate_power(n, flags, side, p_t) >= POWER
    if not smallest:
        return sees, None
    k = _k_star(n, flags, side)
    if k is None:
        return sees, math.inf
    p = rate_seen_above(n, k, power=POWER) if side == "up" else rate_seen_below(n, k, power=POWER)
    if not math.isfinite(p):
        return sees, math.inf
    return sees, max(0.0, scale * p - level if side == "up" else level - scale * p)


def rows_for_rate(flags: Callable[[int, int], bool], side: str, level: float, scale: float, target: float,
                  start: int) -> int | None:
    """About the fewest rows a window needs for the rule to see ``target`` (the baseline as it is); None when
    not up to :data:`MAX_ROWS` (the baseline or the rule's own limit stands in the way)."""
    if not target > 0:
        return None
    p_t = (level + target if side == "up" else level - target) / scale

    def ok(n: int) -> bool:
        return _rate_power(n, flags, side, p_t) >= POWER

    hi = max(1, start)
    while not ok(hi):
        if hi >= MAX_ROWS:
            return None
        hi = min(MAX_ROWS, hi * 2)
    return _first(hi // 2 if hi > max(1, start) else 0, hi, ok)  # (the binomial's saw-tooth makes this "about")


def shift_cell(limit: float, sd: float, n: int, base_n: float, target: float) -> tuple[bool, float]:
    """``(sees the target, smallest change)`` of a window that is not a rate: the rule flags beyond ``limit``,
    the window's value scatters by ``sd · √(base_n / n)`` (module docs)."""
    from rankgate.stats.power import shift_seen

    seen = shift_seen(limit, sd * math.sqrt(base_n / n) if n > 0 else math.inf, power=POWER)
    return target > 0 and seen <= target, seen


def rows_for_shift(limit: float, sd: float, base_n: float, target: float) -> int | None:
    """The fewest rows at which :func:`shift_cell` sees ``target``: ``n̄ · (0.8416 · σ / (target − L))²``;
    None when the target lies within the rule's limit (no traffic helps)."""
    from rankgate.stats.bootstrap import normal_quantile

    if not target > limit:
        return None
    if sd <= 0:
        return 1
    n = math.ceil(base_n * (normal_quantile(POWER) * sd / (target - limit)) ** 2)
    return n if n <= MAX_ROWS else None
