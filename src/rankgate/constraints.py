"""Parameters as data: each numeric or choice parameter is declared once, with its bounds.

A :class:`Param` is a name, a type, a default and the values allowed. The library checks a value
with :func:`check` (``check(CONFIDENCE, confidence, caller="metric_cis")``) and the command line
builds its options from the same objects (:mod:`rankgate.commands.options`), so a bound and the
sentence that states it are written in one place. Every refusal has one shape::

    The 'confidence' parameter of metric_cis must be a float in the range (0, 1); got 1.5.
    --resamples must be an integer between 0 and 1,000,000; got -1.

Metric parameters (``ndcg(gain=exp)``) are ``Param`` objects too; their text form is converted by
:meth:`Param.convert`, whose messages name the metric spec.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .errors import MetricSpecError, UsageError

__all__ = [
    "CONFIDENCE",
    "K",
    "MAX_K",
    "MAX_RESAMPLES",
    "PERMUTATIONS",
    "POWER",
    "RESAMPLES",
    "SEED",
    "Param",
    "check",
    "describe",
]

#: Most resamples (or sign flips) one call takes: 16 MB of means per metric, and far beyond what an
#: interval or p-value needs; more would only exhaust memory or time.
MAX_RESAMPLES = 1_000_000
#: Largest cutoff ``k`` (of a metric spec, a per-query ``k`` or ``--k``): far beyond any ranking, and
#: within the 64-bit integers the kernels use.
MAX_K = 1_000_000_000


@dataclass(frozen=True)
class Param:
    """A parameter: its type, default and allowed values.

    ``minimum``/``maximum`` bound a number (``None``: unbounded on that side); ``exclusive`` leaves the
    bounds themselves out (``0 < p < 1``); ``choices`` lists the allowed values instead. ``help`` is
    the one sentence that explains it (metric listings, ``--help``).
    """

    name: str
    type: type
    default: Any
    choices: tuple[Any, ...] | None = None
    minimum: float | None = None
    maximum: float | None = None
    exclusive: bool = False  # the bounds themselves are not allowed (e.g. 0 < p < 1)
    help: str = ""

    def allows(self, value: Any) -> bool:
        """Whether ``value`` (already of the right type) lies within the declared values."""
        if self.choices is not None:
            return value in self.choices
        if isinstance(value, float) and math.isnan(value):
            return False
        low, high = self.minimum, self.maximum
        if self.exclusive:
            return (low is None or value > low) and (high is None or value < high)
        return (low is None or value >= low) and (high is None or value <= high)

    def convert(self, text: str, *, spec: str = "") -> Any:
        """The value of a metric parameter written as ``text`` in the metric spec ``spec``."""
        try:
            value = self.type(text)
        except (TypeError, ValueError):
            raise MetricSpecError(
                f"parameter {self.name!r} in {spec!r} must be {self.type.__name__}; got {text!r}"
            ) from None
        if isinstance(value, float) and math.isnan(value):  # (±inf are meaningful: min_score=-inf is the default)
            raise MetricSpecError(f"parameter {self.name!r} in {spec!r} must be a number; got {text!r}")
        if isinstance(value, int) and not -(2**63) <= value < 2**63:
            raise MetricSpecError(f"parameter {self.name!r} in {spec!r} must fit in 64 bits; got {text!r}")
        if self.choices is not None and value not in self.choices:
            allowed = "|".join(str(c) for c in self.choices)
            raise MetricSpecError(f"parameter {self.name!r} in {spec!r} must be one of {allowed}; got {text!r}")
        if self.exclusive and self.minimum is not None and self.maximum is not None:
            if not self.minimum < value < self.maximum:
                raise MetricSpecError(
                    f"parameter {self.name!r} in {spec!r} must be between {self.minimum} and {self.maximum} "
                    f"(both excluded); got {text!r}"
                )
        if self.minimum is not None and value < self.minimum:
            raise MetricSpecError(f"parameter {self.name!r} in {spec!r} must be >= {self.minimum}; got {text!r}")
        if self.maximum is not None and value > self.maximum:
            raise MetricSpecError(f"parameter {self.name!r} in {spec!r} must be <= {self.maximum}; got {text!r}")
        return value


def _bound(x: float) -> str:
    if isinstance(x, float) and x.is_integer() and abs(x) < 1e15:
        x = int(x)
    return f"{x:,}" if isinstance(x, int) and abs(x) >= 10_000 else f"{x:g}" if isinstance(x, float) else str(x)


def describe(param: Param) -> str:
    """What ``param`` accepts, as the end of a sentence: ``a float in the range (0, 1)``."""
    if param.choices is not None:
        return "one of " + ", ".join(repr(c) for c in param.choices)
    kind = {int: "an integer", float: "a float", str: "a string", bool: "true or false"}.get(
        param.type, f"a {param.type.__name__}")
    low, high = param.minimum, param.maximum
    if low is None and high is None:
        return kind
    if param.type is int and not param.exclusive:  # whole numbers: both ends are plainly included
        if low is not None and high is not None:
            return f"{kind} between {_bound(low)} and {_bound(high)}"
        if low is not None:
            return f"{kind} >= {_bound(low)}"
        assert high is not None
        return f"{kind} <= {_bound(high)}"
    open_, close = ("(", ")") if param.exclusive else ("[", "]")
    left = f"{open_}{_bound(low)}" if low is not None else "(-inf"
    right = f"{_bound(high)}{close}" if high is not None else "inf)"
    return f"{kind} in the range {left}, {right}"


def _typed(param: Param, value: Any) -> bool:
    if isinstance(value, bool) and param.type is not bool:
        return False
    if param.type is float:
        return isinstance(value, (int, float)) or _is_numpy_number(value, float)
    if param.type is int:
        return isinstance(value, int) or _is_numpy_number(value, int)
    return isinstance(value, param.type)


def _is_numpy_number(value: Any, kind: type) -> bool:
    """A numpy scalar of the right kind (checked by name: this module does not import numpy)."""
    module = type(value).__module__
    if module != "numpy":
        return False
    try:
        import numpy as np
    except ImportError:  # pragma: no cover
        return False
    return isinstance(value, np.integer) or (kind is float and isinstance(value, np.floating))


def _shown(value: Any) -> str:
    text = f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10_000 else repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def check(param: Param, value: Any, *, caller: str | None = None, option: str | None = None,
          name: str | None = None, note: str = "") -> Any:
    """``value`` when ``param`` allows it, else a :class:`~rankgate.errors.UsageError` in one shape.

    ``caller`` names the function whose argument it is (``The 'confidence' parameter of
    metric_cis must be …``); ``option`` names a command-line option instead (``--confidence must
    be …``); ``name`` is the argument's own name where it differs from the parameter's
    (``n_resamples``); ``note`` is added in parentheses (e.g. what the value would cost).
    """
    if _typed(param, value) and param.allows(value):
        return value
    if option is not None:
        subject = option
    elif caller is not None:
        subject = f"The {name or param.name!r} parameter of {caller}"
    else:
        subject = f"The {name or param.name!r} parameter"
    extra = f" ({note})" if note else ""
    raise UsageError(f"{subject} must be {describe(param)}; got {_shown(value)}{extra}.")


CONFIDENCE = Param("confidence", float, 0.95, minimum=0.0, maximum=1.0, exclusive=True,
                   help="confidence level of intervals (default 0.95)")
RESAMPLES = Param("resamples", int, 2000, minimum=0, maximum=MAX_RESAMPLES,
                  help="bootstrap resamples (default 2000; 0 turns CIs off)")
SEED = Param("seed", int, 0, minimum=0, help="seed of the bootstrap (default 0)")
K = Param("k", int, None, minimum=1, maximum=MAX_K, help="cutoff of metrics written without @k")
PERMUTATIONS = Param("permutations", int, 10000, minimum=0, maximum=MAX_RESAMPLES,
                     help="sign flips of the paired randomisation test (default 10000; 0 turns p-values off)")
POWER = Param("power", float, 0.8, minimum=0.0, maximum=1.0, exclusive=True,
              help="chance of detecting a drop of the stated size (default 0.8)")
