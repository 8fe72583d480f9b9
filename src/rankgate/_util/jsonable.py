"""Small helpers shared by every result that is written as JSON or averaged.

``nan_to_none``: JSON has no NaN, so a missing number (a metric that applies to no query) is written
as ``null``. ``exact_mean``: the mean of a sequence of floats with :func:`math.fsum`, exact and
independent of order, so the same values give byte-identical means run to run.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["exact_mean", "exact_means", "nan_to_none"]


def nan_to_none(x: Any) -> Any:
    """``None`` for a float NaN, anything else as it is."""
    return None if isinstance(x, float) and math.isnan(x) else x


def exact_mean(values: Any) -> float:
    """The exact mean of ``values`` (a numpy array or a sequence of floats); NaN when empty: the sum
    correctly rounded (:func:`math.fsum`'s), divided by the count.

    NaN entries are not skipped: callers pass only the values that apply."""
    if hasattr(values, "dtype") and getattr(values, "ndim", 0) == 1 and values.size >= _EXACT_SUM_FROM:
        total = _exact_sum(values)
        if total is not None:
            return total / values.size
    seq = values.tolist() if hasattr(values, "tolist") else list(values)
    return math.fsum(seq) / len(seq) if seq else math.nan


def exact_means(values: Any, offsets: Any) -> list[float]:
    """:func:`exact_mean` of each group ``values[offsets[j]:offsets[j + 1]]`` of a float64 array (groups
    one after the other), the same floats, without a numpy slice per small group (a field of 50,000
    segments): NaN for an empty group."""
    bounds = [int(o) for o in offsets]
    items = values.tolist()
    out = []
    for a, b in zip(bounds, bounds[1:]):
        if b - a >= _EXACT_SUM_FROM:
            out.append(exact_mean(values[a:b]))
        else:
            out.append(math.fsum(items[a:b]) / (b - a) if b > a else math.nan)
    return out


_EXACT_SUM_FROM = 512
"""Values from which a float64 array is summed by :func:`_exact_sum` rather than fsum over a list."""


def _exact_sum(values: Any) -> float | None:
    """The sum of a float64 array correctly rounded, as :func:`math.fsum` gives it, without a Python
    float per value; None (for fsum to decide) when a value is not finite, the largest is near either
    end of the range, a value is 1,000 or more binary orders below the largest (it could not be scaled
    exactly) or needs more than 312 bits below the largest, when the sum is zero (its sign), or when
    the array is very long.

    The values are scaled by a power of two below 1 in size (exact), then cut into 26-bit digits:
    at each level the scaled remainder times 2**26 splits into its integer part (toward zero), below
    2**26 in size, and a new remainder of the same sign, both exact. A level's integers, fewer than
    2**26 of them, add up exactly in doubles (every partial sum is an integer below 2**53), the
    levels' totals exactly as Python integers, and the total is rounded once, by Python's correctly
    rounded integer division."""
    import numpy as np

    x = np.asarray(values)
    if x.dtype != np.float64 or x.ndim != 1 or x.size >= 1 << 26 or not bool(np.isfinite(x).all()):
        return None
    top = max(float(x.max()), -float(x.min())) if x.size else 0.0
    if top < 2.0**-900 or top > 2.0**1000:  # (zero: its sign; at the top fsum's partial sums overflow; at the
        return None  # bottom 2**-exp would not be a double)
    exp = math.frexp(top)[1]  # |x| < 2**exp
    floor = 2.0 ** (exp - 1000)  # every nonzero value at least this stays a normal number scaled by 2**-exp
    small = np.abs(x) < floor
    if bool(small.any()) and bool((x[small] != 0).any()):
        return None  # (scaled down it would lose bits; one that small is past the digits below anyway)
    rest = x * 2.0**-exp
    digits = np.empty_like(rest)
    levels: list[int] = []
    for _ in range(12):
        rest *= 2.0**26
        np.trunc(rest, out=digits)  # (toward zero: the remainder keeps its sign and is exact)
        rest -= digits
        levels.append(int(digits.sum()))
        if not rest.any():
            break
    else:
        return None
    total = 0
    for level in levels:
        total = (total << 26) + level
    shift = exp - 26 * len(levels)  # the exact sum is total * 2**shift
    if total == 0:
        return None
    try:
        return float(total << shift) if shift >= 0 else total / (1 << -shift)
    except OverflowError:
        return None
