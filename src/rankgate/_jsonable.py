"""Small helpers shared by every result that is written as JSON or averaged.

``nan_to_none``: JSON has no NaN, so a missing number (a metric that applies to no query) is written
as ``null``. ``exact_mean``: the mean of a sequence of floats with :func:`math.fsum`, exact and
independent of order, so the same values give byte-identical means run to run.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["exact_mean", "nan_to_none"]


def nan_to_none(x: Any) -> Any:
    """``None`` for a float NaN, anything else as it is."""
    return None if isinstance(x, float) and math.isnan(x) else x


def exact_mean(values: Any) -> float:
    """The exact mean of ``values`` (a numpy array or a sequence of floats); NaN when empty.

    NaN entries are not skipped: callers pass only the values that apply."""
    seq = values.tolist() if hasattr(values, "tolist") else list(values)
    return math.fsum(seq) / len(seq) if seq else math.nan
