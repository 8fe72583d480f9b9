"""Stratified sampling: how a sample is split among strata, and the design-weighted mean with its interval,
prediction-powered when people labelled some of the units.

A population of ``N`` units is cut into strata ``h`` of ``N_h`` units; a simple random sample of ``n_h`` units
is drawn from each without replacement. :func:`allocate` splits a sample of ``n`` among the strata.

**The stratified estimator** (Cochran 1977, ch. 5). With ``W_h = N_h / N`` and ``ȳ_h``, ``s²_h`` the mean and
sample variance (``n_h − 1`` in the denominator) of the values measured in stratum ``h``::

    ȳ_st = Σ_h W_h ȳ_h
    v(ȳ_st) = Σ_h W_h² (1 − n_h / N_h) s²_h / n_h

``1 − n_h / N_h`` is the finite population correction: a stratum sampled whole adds no variance. The interval
is the normal one, ``ȳ_st ± z·√v`` with ``z = Φ⁻¹((1 + confidence) / 2)``, clipped to the values' bounds when
they are given. A stratum with one measured unit out of several has no variance estimate: the interval of any
estimate it enters is then not given (``None``), never a made-up one. A stratum with no measured unit is left
out of the estimate and the weights of the others are scaled up to 1 (``coverage`` says the share of the
population the estimate stands for): units not measured are taken to be like those measured in their stratum.

**Prediction-powered** (Angelopoulos et al. 2023, "Prediction-powered inference"). When a person labelled
``m_h ≥ 2`` of the ``n_h`` units a judge measured in stratum ``h`` (judge value ``f``, human value ``y``), the
stratum's mean is the judge's mean corrected by its mean error on the labelled units (the *rectifier*
``Δ = f − y``)::

    θ_h = f̄_h − Δ̄_h
    v_h = (1 − n_h / N_h) s²_f,h / n_h + s²_Δ,h / m_h

and the overall estimate and its variance are the stratified sums above with ``θ_h`` and ``v_h``. Per stratum
this is :func:`rankgate.stats.agreement.ppi_mean` (the judge's mean over every unit it measured, the rectifier
over the labelled ones), with the finite population correction on the judge's part. A stratum with fewer
than two labelled units keeps the judge's mean (``corrected`` False): the estimate says in how many strata,
and over what share of the population, it was corrected.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from rankgate.errors import UsageError

__all__ = ["Estimate", "StratumData", "StratumEstimate", "allocate", "estimate_stratum", "stratified_mean"]


def allocate(sizes: Sequence[int], n: int, *, minimum: int = 2) -> list[int]:
    """How many units to draw from each stratum of ``sizes`` for a sample of ``n``: every stratum first gets
    ``min(minimum, N_h)`` (a stratum needs two units for its variance), the rest goes in proportion to the sizes
    (largest remainders, ties to the earlier stratum), never more than a stratum holds. ``n`` at or above the
    population takes every unit. A UsageError when ``n`` is below what the minimum needs."""
    if n < 1:
        raise UsageError(f"the sample must be at least 1 unit; got {n}")
    total = sum(sizes)
    if n >= total:
        return list(sizes)
    base = [min(minimum, s) for s in sizes]
    if sum(base) > n:
        raise UsageError(f"a sample of {n:,} cannot give each of the {len(sizes):,} strata {minimum} units (it "
                         f"needs {sum(base):,}): raise the sample, or stratify by fewer fields or a wider window")
    out = list(base)
    left = n - sum(out)
    while left > 0:
        room = [s - o for s, o in zip(sizes, out)]
        open_ = [i for i, r in enumerate(room) if r > 0]
        weight = sum(sizes[i] for i in open_)
        shares = {i: left * sizes[i] / weight for i in open_}
        given = 0
        for i in open_:
            take = min(room[i], int(math.floor(shares[i])))
            out[i] += take
            given += take
        left -= given
        if left <= 0:
            break
        # the units the floors left: one each to the largest remainders (ties: the earlier stratum)
        order = sorted((i for i in open_ if sizes[i] - out[i] > 0), key=lambda i: (-(shares[i] - math.floor(shares[i])), i))
        for i in order[:left]:
            out[i] += 1
            left -= 1
    return out


@dataclass(frozen=True)
class StratumData:
    """What one stratum holds: its population ``size`` (N_h), the judge's values on the measured units, and
    ``pairs``: (judge, human) on the units a person labelled too (a subset of the measured units)."""

    size: int
    values: tuple[float, ...]
    pairs: tuple[tuple[float, float], ...] = ()


@dataclass(frozen=True)
class StratumEstimate:
    """One stratum's mean and its variance (None: cannot be estimated, one unit of several); ``corrected``:
    prediction-powered (two or more labelled units); ``judge``: the judge's own mean."""

    size: int
    n: int
    labelled: int
    mean: float | None
    variance: float | None
    judge: float | None
    corrected: bool


@dataclass(frozen=True)
class Estimate:
    """A stratified mean: ``value`` with its interval ``ci`` (None when a stratum's variance is unknown);
    ``n`` units measured, ``size`` units in the strata with a measured unit (``coverage`` = size / the strata's
    whole population); ``labelled`` human-labelled units and the strata ``corrected`` of ``strata`` (with a value)."""

    value: float | None
    se: float | None
    ci: tuple[float, float] | None
    n: int
    size: int
    coverage: float | None
    labelled: int
    corrected: int
    strata: int


def _var(xs: Sequence[float]) -> float:
    mean = math.fsum(xs) / len(xs)
    return math.fsum((x - mean) ** 2 for x in xs) / (len(xs) - 1)


def estimate_stratum(data: StratumData) -> StratumEstimate:
    """One stratum's (prediction-powered, when it can be) mean and variance: module docs."""
    n, size = len(data.values), data.size
    if n == 0:
        return StratumEstimate(size, 0, 0, None, None, None, False)
    judge = math.fsum(data.values) / n
    fpc = max(0.0, 1.0 - n / size) if size else 0.0
    m = len(data.pairs)
    if m >= 2:
        rect = [f - y for f, y in data.pairs]
        mean = judge - math.fsum(rect) / m
        var_f = fpc * _var(data.values) / n if n >= 2 else (0.0 if fpc == 0 else None)
        variance = None if var_f is None else var_f + _var(rect) / m
        return StratumEstimate(size, n, m, mean, variance, judge, True)
    plain: float | None = fpc * _var(data.values) / n if n >= 2 else (0.0 if fpc == 0 else None)
    return StratumEstimate(size, n, m, judge, plain, judge, False)


def stratified_mean(strata: Sequence[StratumData], *, confidence: float = 0.95,
                    bounds: tuple[float, float] | None = None) -> tuple[Estimate, list[StratumEstimate]]:
    """The stratified (prediction-powered where labelled) mean over ``strata`` (module docs), and each stratum's."""
    from rankgate.stats.bootstrap import normal_quantile

    per = [estimate_stratum(s) for s in strata]
    whole = sum(s.size for s in per)
    held = [s for s in per if s.mean is not None]
    size = sum(s.size for s in held)
    n = sum(s.n for s in held)
    labelled = sum(s.labelled for s in held)
    corrected = sum(1 for s in held if s.corrected)
    if not held or size == 0:
        return Estimate(None, None, None, n, size, None if not whole else 0.0, labelled, corrected, len(held)), per
    value = math.fsum(s.size / size * s.mean for s in held)  # type: ignore[operator]
    if any(s.variance is None for s in held):
        se = None
    else:
        se = math.sqrt(math.fsum((s.size / size) ** 2 * s.variance for s in held))  # type: ignore[operator]
    ci = None
    if se is not None:
        z = normal_quantile((1 + confidence) / 2)
        lo, hi = value - z * se, value + z * se
        if bounds is not None:
            lo, hi = max(bounds[0], lo), min(bounds[1], hi)
        ci = (lo, hi)
    if bounds is not None:
        value = min(bounds[1], max(bounds[0], value))
    return Estimate(value, se, ci, n, size, size / whole if whole else None, labelled, corrected, len(held)), per
