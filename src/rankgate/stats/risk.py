"""Does a per-query pass/fail predict a per-request bad outcome? Rates, their difference and ratio, and
an AUC, with intervals that respect that requests come in clusters (one cluster per query).

The data: queries ``i = 1..m``, each with ``n_i`` requests where an outcome applies and ``k_i`` of them
bad (negative feedback, a fallback…), and one value ``x_i`` of an offline metric (higher is better),
or a pass/fail of it. The requests of one query share their query, so they are not independent: every
variance below is a *cluster-robust* one, with the query as the cluster (the sandwich estimator of a
ratio, with the small-sample factor ``m/(m − 1)``). With one request per query they are the usual
binomial figures.

**A group's rate** (the failing or the passing queries): ``r = K / N`` with ``K = Σ k_i``, ``N = Σ n_i``,
and ``V(r) = m/(m − 1) · Σ (k_i − r n_i)² / N²`` (a ratio estimator; needs ``m ≥ 2``).

**Risk difference** ``RD = r₁ − r₀`` (failing minus passing), ``SE = √(V₁ + V₀)``, the Wald interval
``RD ± z·SE`` clipped to [−1, 1], and the two-sided p-value of ``RD = 0`` from the same normal
figure. **Relative risk** ``RR = r₁ / r₀`` with ``SE(log RR) = √(V₁/r₁² + V₀/r₀²)`` (undefined when
either rate is 0). Worked example: failing queries with 5/10 and 3/10 bad requests, passing ones
with 1/10 and 1/10: ``r₁ = 0.4``, ``r₀ = 0.1``, ``RD = 0.3``, ``RR = 4``; ``V₁ = 2 · (1² + 1²) / 20² =
0.01``, ``V₀ = 0``, so ``SE = 0.1`` and the 95 % interval is 0.104 to 0.496.

**AUC**: the chance that a request with a good outcome came from a query with a higher metric value
than a request with a bad outcome (ties count ½): 0.5 is no separation, 1 perfect. Its variance is
Obuchowski's for clustered data (Biometrics 53, 1997): per query ``X_i`` (the bad requests' placements
among the good ones) and ``Y_i`` (the good requests' among the bad), and

    S₁₀ = m/((m−1)K) Σ (X_i − k_i A)²,   S₀₁ = m/((m−1)G) Σ (Y_i − g_i A)²,
    S₁₁ = m/(m−1) Σ (X_i − k_i A)(Y_i − g_i A),   V(A) = S₁₀/K + S₀₁/G + 2 S₁₁/(K G)

with ``g_i = n_i − k_i`` and ``G = Σ g_i``.

**Power** to see a risk difference ``δ`` (default 10 points) at this size: the groups' sizes as they
are, the passing rate at the observed pooled rate ``p₀`` and the failing one at ``p₀ + δ``, each
binomial variance times the design effect the data show (the cluster-robust variance over the
binomial one, at least 1; when no request was bad, the largest the cluster sizes allow), and
``power = Φ(δ / SE − z_{1−α/2})``. :attr:`Contrast.detectable` is the smallest ``δ`` seen with 80 %
power (the same figure solved for ``δ``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Contrast", "clustered_auc", "clustered_rate", "normal_cdf", "risk_contrast"]

#: The fewest queries a group needs before its rate's variance is read from the data.
MIN_CLUSTERS = 2


def normal_cdf(x: float) -> float:
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def _z(confidence: float) -> float:
    from rankgate.stats.bootstrap import normal_quantile

    return normal_quantile(1 - (1 - confidence) / 2)


def clustered_rate(k: np.ndarray, n: np.ndarray) -> tuple[float, float]:
    """``(r, V(r))`` of the requests of some queries (module docs); ``(nan, nan)`` with no request,
    ``V`` nan with fewer than 2 queries."""
    k = np.asarray(k, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    total = float(n.sum())
    if total <= 0:
        return math.nan, math.nan
    r = float(k.sum()) / total
    m = int((n > 0).sum())
    if m < MIN_CLUSTERS:
        return r, math.nan
    resid = k - r * n
    return r, m / (m - 1) * math.fsum((resid * resid).tolist()) / (total * total)


@dataclass(frozen=True)
class Contrast:
    """One offline pass/fail against one online outcome (module docs). Rates are shares of requests."""

    fail_queries: int
    pass_queries: int
    fail_n: int          # requests of failing queries where the outcome applies
    fail_k: int          # ... with a bad outcome
    pass_n: int
    pass_k: int
    fail_rate: float     # nan: no request
    pass_rate: float
    rd: float            # fail_rate - pass_rate
    rd_low: float
    rd_high: float
    p_value: float       # two-sided, of rd = 0 (nan: no variance to test with)
    rr: float            # fail_rate / pass_rate (inf when pass_rate is 0 and fail_rate is not; nan when undefined)
    rr_low: float
    rr_high: float
    auc: float           # of the metric's values (nan: no bad or no good request)
    auc_low: float
    auc_high: float
    power: float         # to see a risk difference of ``effect``
    detectable: float    # the smallest risk difference seen with 80 % power (inf: none)
    effect: float
    confidence: float

    @property
    def queries(self) -> int:
        return self.fail_queries + self.pass_queries

    def to_dict(self) -> dict[str, Any]:
        def f(x: float) -> float | str | None:
            if math.isnan(x):
                return None
            return x if math.isfinite(x) else ("inf" if x > 0 else "-inf")

        return {
            "fail": {"queries": self.fail_queries, "requests": self.fail_n, "bad": self.fail_k, "rate": f(self.fail_rate)},
            "pass": {"queries": self.pass_queries, "requests": self.pass_n, "bad": self.pass_k, "rate": f(self.pass_rate)},
            "risk_difference": {"value": f(self.rd), "ci": [f(self.rd_low), f(self.rd_high)], "p_value": f(self.p_value)},
            "relative_risk": {"value": f(self.rr), "ci": [f(self.rr_low), f(self.rr_high)]},
            "auc": {"value": f(self.auc), "ci": [f(self.auc_low), f(self.auc_high)]},
            "power": {"effect": self.effect, "power": f(self.power), "detectable": f(self.detectable)},
        }


def clustered_auc(x: np.ndarray, k: np.ndarray, n: np.ndarray, *, confidence: float = 0.95
                  ) -> tuple[float, float, float]:
    """``(AUC, low, high)`` of the metric values ``x`` (one per query, higher is better) separating good
    requests from bad ones, with Obuchowski's clustered interval (module docs); nan when no request is
    bad or none is good, the interval nan with fewer than 2 queries."""
    x = np.asarray(x, dtype=np.float64)
    k = np.asarray(k, dtype=np.float64)
    g = np.asarray(n, dtype=np.float64) - k
    keep = (k + g) > 0
    x, k, g = x[keep], k[keep], g[keep]
    big_k, big_g = float(k.sum()), float(g.sum())
    if big_k <= 0 or big_g <= 0:
        return math.nan, math.nan, math.nan
    levels, inv = np.unique(x, return_inverse=True)
    k_at = np.bincount(inv, weights=k, minlength=len(levels))
    g_at = np.bincount(inv, weights=g, minlength=len(levels))
    k_below = np.cumsum(k_at) - k_at                       # bad requests at a lower value
    g_above = g_at[::-1].cumsum()[::-1] - g_at             # good requests at a higher value
    v10 = (g_above + 0.5 * g_at) / big_g                   # a bad request's share of good ones above it
    v01 = (k_below + 0.5 * k_at) / big_k                   # a good request's share of bad ones below it
    big_x = k * v10[inv]
    big_y = g * v01[inv]
    auc = math.fsum(big_x.tolist()) / big_k
    m = len(x)
    if m < MIN_CLUSTERS:
        return auc, math.nan, math.nan
    dx = big_x - k * auc
    dy = big_y - g * auc
    c = m / (m - 1)
    s10 = c / big_k * math.fsum((dx * dx).tolist())
    s01 = c / big_g * math.fsum((dy * dy).tolist())
    s11 = c * math.fsum((dx * dy).tolist())
    var = max(s10 / big_k + s01 / big_g + 2 * s11 / (big_k * big_g), 0.0)
    half = _z(confidence) * math.sqrt(var)
    return auc, max(0.0, auc - half), min(1.0, auc + half)


def _design_effect(k1: np.ndarray, n1: np.ndarray, k0: np.ndarray, n0: np.ndarray,
                   v1: float, v0: float, r1: float, r0: float) -> float:
    """The cluster-robust variance over the binomial one (at least 1); with nothing to read it from
    (no request bad, or a group of fewer than 2 queries), the largest the cluster sizes allow."""
    n_all = np.concatenate([n1, n0]).astype(np.float64)
    worst = float((n_all * n_all).sum() / n_all.sum()) if n_all.sum() > 0 else 1.0
    binom = 0.0
    robust = 0.0
    for v, r, n in ((v1, r1, n1), (v0, r0, n0)):
        big_n = float(np.sum(n))
        if big_n <= 0 or math.isnan(v):
            return max(worst, 1.0)
        binom += r * (1 - r) / big_n
        robust += v
    if binom <= 0:
        return max(worst, 1.0)
    return min(max(robust / binom, 1.0), max(worst, 1.0))


def _alt_se(delta: float, p0: float, n1: float, n0: float, deff: float) -> float:
    p1 = min(p0 + delta, 1.0)
    return math.sqrt(deff * (p1 * (1 - p1) / n1 + p0 * (1 - p0) / n0))


def risk_contrast(k1: np.ndarray, n1: np.ndarray, k0: np.ndarray, n0: np.ndarray, *,
                  x1: np.ndarray | None = None, x0: np.ndarray | None = None, effect: float = 0.10,
                  confidence: float = 0.95, power_target: float = 0.8) -> Contrast:
    """The bad-outcome rates of the requests of failing queries (``k1``/``n1``, one entry per query) and of
    passing ones (``k0``/``n0``), compared (module docs). ``x1``/``x0``: the queries' metric values, for
    the AUC (without them it is nan). ``effect``: the risk difference the power is stated for."""
    from rankgate.stats.bootstrap import normal_quantile

    k1, n1, k0, n0 = (np.asarray(a, dtype=np.int64) for a in (k1, n1, k0, n0))
    z = _z(confidence)
    r1, v1 = clustered_rate(k1, n1)
    r0, v0 = clustered_rate(k0, n0)
    rd = r1 - r0
    se = math.sqrt(v1 + v0) if not (math.isnan(v1) or math.isnan(v0)) else math.nan
    if math.isnan(se):
        rd_low = rd_high = p = math.nan
    else:
        rd_low, rd_high = max(-1.0, rd - z * se), min(1.0, rd + z * se)
        if se > 0:
            p = min(1.0, 2 * (1 - normal_cdf(abs(rd) / se)))
        else:
            p = 1.0 if rd == 0 else 0.0
    if math.isnan(r0) or math.isnan(r1) or (r0 == 0 and r1 == 0):
        rr = rr_low = rr_high = math.nan
    elif r0 == 0:
        rr, rr_low, rr_high = math.inf, math.nan, math.nan
    else:
        rr = r1 / r0
        if r1 == 0 or math.isnan(se):
            rr_low = rr_high = math.nan
        else:
            sl = math.sqrt(v1 / r1 ** 2 + v0 / r0 ** 2)
            rr_low, rr_high = rr * math.exp(-z * sl), rr * math.exp(z * sl)
    if x1 is not None and x0 is not None:
        auc, auc_low, auc_high = clustered_auc(np.concatenate([np.asarray(x1, float), np.asarray(x0, float)]),
                                               np.concatenate([k1, k0]), np.concatenate([n1, n0]),
                                               confidence=confidence)
    else:
        auc = auc_low = auc_high = math.nan
    big_n1, big_n0 = float(n1.sum()), float(n0.sum())
    m1, m0 = int((n1 > 0).sum()), int((n0 > 0).sum())
    if m1 < MIN_CLUSTERS or m0 < MIN_CLUSTERS:
        power, detectable = 0.0, math.inf
    else:
        pooled = float(k1.sum() + k0.sum()) / (big_n1 + big_n0)
        p0 = min(pooled, 1.0 - effect)
        deff = _design_effect(k1, n1, k0, n0, v1, v0, r1, r0)
        power = normal_cdf(effect / _alt_se(effect, p0, big_n1, big_n0, deff) - z)
        zz = z + normal_quantile(power_target)
        detectable = math.inf
        d = effect
        for _ in range(60):  # the fixed point d = zz · SE(d); SE grows slowly in d, so it converges
            nd = zz * _alt_se(d, min(pooled, 1.0 - d) if d < 1 else 0.0, big_n1, big_n0, deff)
            if abs(nd - d) < 1e-12:
                break
            d = nd
        if d < 1.0:
            detectable = d
    return Contrast(m1, m0, int(big_n1), int(k1.sum()), int(big_n0), int(k0.sum()), r1, r0, rd, rd_low, rd_high, p,
                    rr, rr_low, rr_high, auc, auc_low, auc_high, power, detectable, effect, confidence)
