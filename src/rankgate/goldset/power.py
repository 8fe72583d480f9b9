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
"""

from __future__ import annotations

import math
from statistics import NormalDist

__all__ = ["min_detectable_drop"]


def min_detectable_drop(n: int, p: float = 0.5, *, confidence: float = 0.95, power: float = 0.8) -> float:
    """The smallest drop of a share at level ``p`` that ``n`` queries detect (see module docs);
    ``inf`` when ``n`` is 0. ``p`` is clipped to [0.01, 0.99] so a 100 % threshold does not claim
    that any drop at all is visible."""
    if n <= 0:
        return math.inf
    if not 0.0 < confidence < 1.0 or not 0.0 < power < 1.0:
        raise ValueError("confidence and power lie strictly between 0 and 1")
    p = min(max(p, 0.01), 0.99)
    z = NormalDist().inv_cdf(1 - (1 - confidence) / 2) + NormalDist().inv_cdf(power)
    return z * math.sqrt(p * (1 - p) / n)
