"""How small a regression a gate can see with the queries it has: a binomial approximation.

For a share metric (hit@k, recall@k, success@k: a proportion over queries) at level ``p`` measured on
``n`` queries, the standard error of the mean is ``sqrt(p (1 - p) / n)``. A one-sided drop of size
``δ`` is detected at two-sided significance ``α`` with power ``1 - β`` when

    δ  =  (z_{1-α/2} + z_{1-β}) · sqrt(p (1 - p) / n)

(the minimum detectable effect of a test of one proportion against a known baseline). At 95 %
confidence and 80 % power ``z_{1-α/2} + z_{1-β} = 1.95996 + 0.84162 = 2.80158``; with ``p = 0.5``
(the widest case) and ``n = 39`` this gives ``δ = 2.80158 · 0.0801 = 0.224``, 22 pp.

This is an approximation, and says so in every report that uses it: the gate compares paired runs on
the same queries, which sees less (when runs disagree on many queries) or more (when they agree on
most) than this; metrics that are not shares (nDCG, MRR) have a variance at most that of a share with
the same mean, so the figure is an upper bound for them. ``p`` is the gate's threshold when it has
one (the level it is meant to hold), else 0.5.


**From a baseline run** (``gold validate --baseline``), the standard error comes from the
baseline's own per-query values in the segment instead of from ``p``: the ideal bootstrap standard
error of their mean (the limit resampling approaches as resamples grow, computed exactly, so the
figure has no resampling noise),

    SE  =  σ̂ / √n,    σ̂² = (1/n) Σ (x_i − x̄)²

and ``δ = (z_{1-α/2} + z_{1-β}) · SE``. The gate tests the *paired* change c − b of a candidate
against the baseline; for a candidate whose per-query values spread like the baseline's and
correlate with them at ρ, ``SE(c̄ − b̄) = SE · √(2(1 − ρ))``. The figure takes ρ = ½, where the two
are equal (the same footing as the binomial figure); candidates that agree with the baseline more
closely see smaller drops, unrelated ones (ρ = 0) need √2 times larger. Worked example: values
1, 0, 1, 1 give x̄ = 0.75, σ̂² = 0.1875, SE = 0.2165 and δ = 2.80158 · 0.2165 = 0.607 (61 pp).
With fewer than 2 values nothing is visible (``inf``); values without spread (all equal) say
nothing about noise, and the binomial figure at the baseline's mean is used instead.


**Which test.** The gate fails a regression only when the paired interval of the change, two-sided at the
ship criteria's confidence ``c``, lies wholly on the side of a drop: a one-sided test of a drop at level
``α = (1 − c)/2`` (2.5 % at 95 %), whose critical value is ``z_{1-α/2}`` of the two-sided ``α = 1 − c`` used
above. The figures here are that test's, so ``gold validate``, ``gold plan`` and the gate speak of one test.

**Planning** (``gold plan``, :func:`queries_needed`). Written in the per-query standard deviation ``sd``
(``sqrt(p (1 - p))`` for a share at level ``p``, :func:`share_sd`; the baseline's ``σ̂``, :func:`per_query_sd`),
every figure above is ``δ(n) = z · sd / √n`` with ``z = z_{1-α/2} + z_{1-β}`` (:func:`drop_at`), and the fewest
queries that see a drop of ``d`` are ``n = ⌈(z · sd / d)²⌉``. At 95 % and 80 % a share at 0.5 needs
``⌈(2.80158 · 0.5 / 0.05)²⌉ = 785`` queries to see 5 pp.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["bootstrap_se", "detection_z", "drop_at", "min_detectable_drop", "min_detectable_drop_bootstrap", "per_query_sd",
           "queries_needed", "rate_power_above", "rate_power_below", "rate_seen_above", "rate_seen_below", "share_sd",
           "shift_seen"]


def min_detectable_drop(n: int, p: float = 0.5, *, confidence: float = 0.95, power: float = 0.8) -> float:
    """The smallest drop of a share at level ``p`` that ``n`` queries detect (see module docs);
    ``inf`` when ``n`` is 0. ``p`` is clipped to [0.01, 0.99] so a 100 % threshold does not claim
    that any drop at all is visible."""
    z = _z(confidence, power, "min_detectable_drop")
    if n <= 0:
        return math.inf
    p = min(max(p, 0.01), 0.99)
    return z * math.sqrt(p * (1 - p) / n)


def share_sd(p: float) -> float:
    """The per-query standard deviation :func:`min_detectable_drop` assumes for a share at level ``p``:
    ``sqrt(p (1 - p))``, ``p`` clipped to [0.01, 0.99] as there."""
    p = min(max(p, 0.01), 0.99)
    return math.sqrt(p * (1 - p))


def per_query_sd(values: Sequence[float]) -> float:
    """The spread :func:`min_detectable_drop_bootstrap` reads from per-query values: ``σ̂`` with the 1/n
    variance (``nan`` for no values), so ``bootstrap_se(values) = per_query_sd(values) / √n``."""
    n = len(values)
    if n == 0:
        return math.nan
    mean = math.fsum(values) / n
    return math.sqrt(math.fsum((x - mean) ** 2 for x in values) / n)


def drop_at(n: int, sd: float, *, confidence: float = 0.95, power: float = 0.8) -> float:
    """The smallest drop ``n`` queries whose per-query values spread by ``sd`` detect:
    ``(z_{1-α/2} + z_{1-β}) · sd / √n`` (the figure of both functions above, written in ``sd``);
    ``inf`` for ``n`` of 0, or an ``sd`` that is not a number."""
    z = _z(confidence, power, "drop_at")
    if n <= 0 or math.isnan(sd):
        return math.inf
    return z * sd / math.sqrt(n)


def queries_needed(drop: float, sd: float, *, confidence: float = 0.95, power: float = 0.8) -> int:
    """The fewest queries for which :func:`drop_at` is at most ``drop``: ``⌈((z_{1-α/2} + z_{1-β}) · sd / drop)²⌉``,
    checked against :func:`drop_at` itself so that the two never disagree by a rounding. ``sd`` of 0 needs 1
    query; a ``drop`` of 0 (or an ``sd`` that is not a number) cannot be planned for and raises ``ValueError``."""
    z = _z(confidence, power, "queries_needed")
    if not drop > 0 or math.isnan(sd) or math.isinf(sd):
        raise ValueError(f"cannot size for a drop of {drop!r} at a spread of {sd!r}")
    if sd <= 0:
        return 1
    n = max(1, math.ceil((z * sd / drop) ** 2))
    while n > 1 and drop_at(n - 1, sd, confidence=confidence, power=power) <= drop:
        n -= 1
    while drop_at(n, sd, confidence=confidence, power=power) > drop:
        n += 1
    return n


def detection_z(confidence: float = 0.95, power: float = 0.8) -> float:
    """``z_{1-α/2} + z_{1-β}``: the multiple of the standard error a drop must reach to be seen (2.80158 at
    95 % confidence and 80 % power)."""
    return _z(confidence, power, "detection_z")


def _z(confidence: float, power: float, caller: str) -> float:
    from rankgate._util.constraints import CONFIDENCE, POWER, check
    from rankgate.stats.bootstrap import normal_quantile

    check(CONFIDENCE, confidence, caller=caller)
    check(POWER, power, caller=caller)

    return normal_quantile(1 - (1 - confidence) / 2) + normal_quantile(power)


def bootstrap_se(values: Sequence[float]) -> float:
    """The ideal bootstrap standard error of the mean of ``values``: σ̂/√n with the 1/n variance
    (``nan`` for no values)."""
    n = len(values)
    return math.nan if n == 0 else per_query_sd(values) / math.sqrt(n)


def min_detectable_drop_bootstrap(values: Sequence[float], *, confidence: float = 0.95,
                                  power: float = 0.8) -> float | None:
    """The smallest drop a gate sees on a segment whose baseline per-query values are ``values``
    (see module docs): ``inf`` for fewer than 2 values, ``None`` when they have no spread (the
    caller then uses :func:`min_detectable_drop` at their mean)."""
    z = _z(confidence, power, "min_detectable_drop_bootstrap")
    if len(values) < 2:
        return math.inf
    se = bootstrap_se(values)
    if se <= 1e-15:
        return None
    return z * se


# -- what a monitor on production traces sees (rankgate.traces.power; docs/traces.md, "Power") ---------------
def rate_seen_above(n: int, k_min: int, *, power: float = 0.8) -> float:
    """The smallest true rate at which a window of ``n`` rows reaches ``k_min`` events with probability
    ``power``: ``P(Bin(n, p) ≥ k) = I_p(k, n − k + 1)`` (the regularised incomplete beta) grows with ``p``,
    so the rate is that beta distribution's ``power`` quantile (as Clopper–Pearson's bounds are). ``0`` for
    ``k_min ≤ 0`` (every window reaches it); ``inf`` for ``k_min > n`` (none can)."""
    from rankgate.stats.bootstrap import _beta_ppf

    _z(0.95, power, "rate_seen_above")
    if k_min <= 0:
        return 0.0
    if k_min > n:
        return math.inf
    return _beta_ppf(power, k_min, n - k_min + 1)


def rate_seen_below(n: int, k_max: int, *, power: float = 0.8) -> float:
    """The largest true rate at which a window of ``n`` rows stays at or under ``k_max`` events with
    probability ``power``: ``P(Bin(n, p) ≤ k) = 1 − I_p(k + 1, n − k)``, so ``p`` is the ``1 − power``
    quantile of that beta. ``1`` for ``k_max ≥ n``; ``−inf`` for ``k_max < 0`` (no window stays under 0)."""
    from rankgate.stats.bootstrap import _beta_ppf

    _z(0.95, power, "rate_seen_below")
    if k_max >= n:
        return 1.0
    if k_max < 0:
        return -math.inf
    return _beta_ppf(1 - power, k_max + 1, n - k_max)


def shift_seen(limit: float, sd: float, *, power: float = 0.8) -> float:
    """The smallest true shift a rule that flags beyond ``limit`` (from its baseline) sees with probability
    ``power`` when the window's value scatters by ``sd`` (normal): ``limit + z_{power} · sd``; 0.8416 standard
    deviations beyond the limit at 80 %."""
    from rankgate.stats.bootstrap import normal_quantile

    _z(0.95, power, "shift_seen")
    return limit + normal_quantile(power) * sd


def rate_power_above(n: int, k_min: int, p: float) -> float:
    """``P(Bin(n, p) ≥ k_min) = I_p(k_min, n − k_min + 1)``: how often a window of ``n`` rows at true rate ``p``
    reaches ``k_min`` events (the function :func:`rate_seen_above` inverts)."""
    from rankgate.stats.bootstrap import _beta_cdf

    if k_min <= 0:
        return 1.0
    if k_min > n:
        return 0.0
    return _beta_cdf(min(max(p, 0.0), 1.0), k_min, n - k_min + 1)


def rate_power_below(n: int, k_max: int, p: float) -> float:
    """``P(Bin(n, p) ≤ k_max) = 1 − I_p(k_max + 1, n − k_max)`` (the function :func:`rate_seen_below` inverts)."""
    if k_max < 0:
        return 0.0
    return 1.0 - rate_power_above(n, k_max + 1, p)
