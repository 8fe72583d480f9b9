"""How a metric's values and their changes are written for people: the unit a metric declares decides.

Shares (recall, hit, precision, forbidden rate…) read as percentages and their changes as percentage
points (``87.0%``, ``−6.0 pp``); scores (ndcg, mrr, map) and counts keep three decimals
(``0.712``, ``−0.057``). A minus sign is U+2212 so it is not lost next to dashes. Missing numbers
(a metric that applies to no query) are ``—``.

Every other number a person reads is written here too: shares, scores, milliseconds, rates per 1k,
confidence levels, counts (``fmt_share``, ``fmt_score``, ``fmt_ms``, ``fmt_per_1k``, ``fmt_confidence``…).
A renderer composes sentences and tables but defines no number format of its own
(tests/test_numbers.py checks it).

These live beside the metric registry (not in :mod:`rankgate.render`) because findings and gate notes
are sentences with numbers in them; the renderers re-export them from :mod:`rankgate.render.numbers`.
"""

from __future__ import annotations

import math
from typing import TypeGuard

from rankgate.metrics.info import is_share

__all__ = ["DASH", "MINUS", "fmt_answer_value", "fmt_apart", "fmt_confidence", "fmt_confidence_exact", "fmt_cost",
           "fmt_cost_change", "fmt_count",
           "fmt_delta", "fmt_delta_ci", "fmt_delta_ci_apart", "fmt_exact", "fmt_limit", "fmt_ms", "fmt_ms_change", "fmt_p",
           "fmt_per_1k", "fmt_pp", "fmt_rank", "fmt_score", "fmt_score_change", "fmt_share", "fmt_share_change", "fmt_share_range", "fmt_sig", "fmt_size",
           "fmt_small_share", "fmt_times", "fmt_unit", "fmt_value", "fmt_value_ci", "fmt_z", "shorten"]

MINUS = "\u2212"
DASH = "—"


def _present(x: float | None) -> TypeGuard[float]:
    return x is not None and not (isinstance(x, float) and math.isnan(x))


def _signed(x: float, digits: int) -> str:
    text = f"{abs(x):.{digits}f}"
    if float(text) == 0.0:
        return text
    return ("+" if x > 0 else MINUS) + text


def fmt_value(metric: str, x: float | None) -> str:
    if not _present(x):
        return DASH
    return f"{x * 100:.1f}%" if is_share(metric) else f"{x:.3f}"


def fmt_delta(metric: str, d: float | None) -> str:
    if not _present(d):
        return DASH
    return f"{_signed(d * 100, 1)} pp" if is_share(metric) else _signed(d, 3)


def fmt_value_ci(metric: str, low: float | None, high: float | None) -> str:
    if not (_present(low) and _present(high)):
        return DASH
    return f"{fmt_value(metric, low)} to {fmt_value(metric, high)}"


def fmt_delta_ci(metric: str, low: float | None, high: float | None) -> str:
    if not (_present(low) and _present(high)):
        return DASH
    if is_share(metric):
        return f"{_signed(low * 100, 1)} to {_signed(high * 100, 1)} pp"
    return f"{_signed(low, 3)} to {_signed(high, 3)}"


def fmt_limit(metric: str, x: float) -> str:
    """A configured limit, without trailing zeros: ``85%``, ``3 pp``, ``0.7``."""
    if is_share(metric):
        return f"{x * 100:.2f}".rstrip("0").rstrip(".") + "%"
    return f"{x:.4f}".rstrip("0").rstrip(".")


def fmt_pp(metric: str, x: float) -> str:
    """A size of change without sign: ``3 pp`` for shares, ``0.03`` for scores."""
    if is_share(metric):
        return f"{x * 100:.2f}".rstrip("0").rstrip(".") + " pp"
    return f"{x:.4f}".rstrip("0").rstrip(".")


def fmt_p(p: float | None) -> str:
    if not _present(p):
        return DASH
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def fmt_rank(rank: int | None) -> str:
    """First relevant rank: ``3``, ``none`` (no relevant item retrieved) or ``?`` (unknown)."""
    if rank is None:
        return "?"
    return "none" if rank == 0 else str(rank)


def shorten(text: str, width: int = 80) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


# -- numbers that are not a metric's value: shares, scores, milliseconds, confidence levels ----------------------
# Every renderer writes its numbers with these (re-exported by rankgate.render.numbers). Missing numbers
# (None, NaN) are ``—`` unless the caller names another placeholder.

def fmt_share(x: float | None, digits: int = 1, *, unit: str = "%") -> str:
    """A share as a percentage: ``87.1%``; ``digits=0`` gives ``87%``; ``unit=""`` leaves the sign off
    (inside a bracket that already says it is a percentage)."""
    if not _present(x):
        return DASH
    return f"{x * 100:.{digits}f}{unit}"


def fmt_share_range(low: float | None, high: float | None) -> str:
    """An interval of shares, one percent sign: ``82.0–90.5%``."""
    if not (_present(low) and _present(high)):
        return DASH
    return f"{fmt_share(low, unit='')}–{fmt_share(high)}"


def fmt_small_share(x: float | None) -> str:
    """A rate that may be tiny: one decimal (``1.2%``), two below 0.1% so it does not read as zero
    (``0.04%``); exactly zero stays ``0.0%``."""
    if not _present(x):
        return DASH
    return fmt_share(x) if x >= 0.001 or x == 0 else fmt_share(x, 2)


def fmt_score(x: float | None, digits: int = 3, *, missing: str = DASH, grouped: bool = False) -> str:
    """A score or any unitless number with a fixed number of decimals: ``0.712``, ``0.7120``;
    ``grouped`` separates thousands (``1,234.5678``, an approximate cost)."""
    if not _present(x):
        return missing
    return f"{x:,.{digits}f}" if grouped else f"{x:.{digits}f}"


def fmt_score_change(d: float | None, digits: int = 3) -> str:
    """A change of a score, always signed (U+2212 minus): ``+0.012``, ``−0.080``; ``0.000`` when it rounds to 0."""
    if not _present(d):
        return DASH
    return _signed(d, digits)


def fmt_share_change(d: float | None, digits: int = 1) -> str:
    """A difference of two shares in percentage points, always signed (U+2212 minus): ``+12.0 pp``, ``−3.5 pp``."""
    if not _present(d):
        return DASH
    return f"{_signed(d * 100, digits)} pp"


def fmt_times(x: float | None) -> str:
    """A ratio of two rates: ``3.1×``, ``0.45×``, ``12×`` (two significant digits); ``∞×`` when the
    rate it divides is 0."""
    if not _present(x):
        return DASH
    if math.isinf(x):
        return "∞×"
    return f"{x:.2g}×"


def fmt_sig(x: float | None, digits: int = 6) -> str:
    """A number as given, with at most ``digits`` significant digits and no trailing zeros: ``0.95``,
    ``3``, ``1e-06`` (a configured threshold, a raw score in an item list)."""
    if not _present(x):
        return DASH
    return f"{x:.{digits}g}"


def fmt_z(z: float) -> str:
    """A standard score, always signed, one decimal, ASCII sign: ``+3.6``, ``-4.1``, ``+inf``."""
    return f"{z:+.1f}"


def fmt_exact(x: float | None, *, whole: bool = False) -> str:
    """The shortest text that reads back as the same float (CSV cells, sortable HTML values); empty
    when missing. ``whole`` writes a whole number without ``.0`` (a count column: ``3``, ``2.5``)."""
    if not _present(x):
        return ""
    if whole and float(x).is_integer():
        return str(int(x))
    return repr(float(x))


def fmt_count(n: int | None, *, grouped: bool = True) -> str:
    """A whole count: ``12,345`` (``grouped=False``: ``12345``)."""
    if not _present(n):
        return DASH
    return f"{n:,}" if grouped else f"{n:d}"


def fmt_ms(x: float | None, digits: int | None = None) -> str:
    """Milliseconds. By default with the precision that shows (two decimals below 10 ms, one above,
    thousands separated: ``4.27 ms``, ``1,250.0 ms``); ``digits`` fixes the decimals, no separators
    (``1250.0 ms``)."""
    if not _present(x):
        return DASH
    if digits is not None:
        return f"{x:.{digits}f} ms"
    return (f"{x:,.2f}" if abs(x) < 10 else f"{x:,.1f}") + " ms"


def fmt_ms_change(x: float | None) -> str:
    """A change in milliseconds, one decimal, signed unless it rounds to zero: ``+12.5 ms``, ``−3.0 ms``."""
    if not _present(x):
        return DASH
    text = f"{abs(x):,.1f} ms"
    return text if float(f"{abs(x):.1f}") == 0 else ("+" if x > 0 else MINUS) + text


def fmt_cost(key: str, x: float | None) -> str:
    """A value of a run's ``cost`` object, by its key: ``usd`` in dollars to three significant digits
    (``$0.00215``, ``$1.25``), ``*_ms`` as :func:`fmt_ms`, anything else (tokens, a count of its own) with
    thousands separated and one decimal (``1,843.5``)."""
    if not _present(x):
        return DASH
    if key.endswith("_ms"):
        return fmt_ms(x)
    if key == "usd":
        a = abs(x)
        shown = float(f"{a:.3g}")  # (the magnitude of the value as shown: 0.000999996 shows as 0.00100)
        digits = 2 if shown >= 1 or shown == 0 else max(2, 2 - math.floor(math.log10(shown)))
        return ("" if x >= 0 else MINUS) + f"${a:,.{digits}f}"
    return ("" if x >= 0 else MINUS) + f"{abs(x):,.1f}"


def fmt_cost_change(key: str, d: float | None) -> str:
    """A change of a ``cost`` value (:func:`fmt_cost`), signed unless zero: ``+$0.00050``, ``−12.0``."""
    if not _present(d):
        return DASH
    if key.endswith("_ms"):
        return fmt_ms_change(d)
    text = fmt_cost(key, abs(d))
    return text if d == 0 else ("+" if d > 0 else MINUS) + text


def fmt_per_1k(x: float | None) -> str:
    """A rate per thousand requests: ``2.4/1k``."""
    if not _present(x):
        return DASH
    return f"{x:.1f}/1k"


def fmt_unit(unit: str, x: float | None) -> str:
    """A value in a declared unit (``share``, ``per_1k``, ``ms``, ``count``, ``MB``; anything else is a score):
    shares as percentages (:func:`fmt_small_share`), ms with one decimal, counts whole, scores with three."""
    if not _present(x):
        return DASH
    if unit == "share":
        return fmt_small_share(x)
    if unit == "per_1k":
        return fmt_per_1k(x)
    if unit == "ms":
        return fmt_ms(x, 1)
    if unit == "count":
        return f"{x:,.0f}"
    if unit == "MB":  # a process's memory
        return f"{x:,.1f} MB"
    return fmt_score(x)


def fmt_confidence(confidence: float) -> str:
    """A confidence level rounded to a whole percent, as CI headers write it: ``95%``."""
    return f"{confidence:.0%}"


def fmt_confidence_exact(confidence: float) -> str:
    """A confidence level as configured, no rounding: ``95%``, ``97.5%``."""
    return f"{confidence * 100:g}%"


def fmt_size(metric: str, x: float | None) -> str:
    """A size of change in whole percentage points for shares, two decimals for scores: ``6 pp``,
    ``0.05`` (a detectable drop, a power estimate)."""
    if not _present(x):
        return DASH
    return f"{x * 100:.0f} pp" if is_share(metric) else f"{x:.2f}"


def fmt_answer_value(metric: str, x: float | None) -> str:
    """An answer metric's value: answer_relevance (a similarity) with two decimals, the others as
    :func:`fmt_value` writes them."""
    if not _present(x):
        return DASH
    if metric.startswith("answer_relevance"):
        return f"{float(x):.2f}"
    return fmt_value(metric, float(x))


def fmt_apart(metric: str, x: float, limit: float | None, *, delta: bool = False) -> str:
    """``x`` (a value, or with ``delta`` a change) written with enough decimals that it does not read
    as equal to ``limit`` when it is not (a change of −0.0103 against a limit of 0.01 reads −0.0103,
    not −0.010); up to six decimals."""
    if limit is None or math.isnan(x) or math.isnan(limit):
        return fmt_delta(metric, x) if delta else fmt_value(metric, x)
    share = is_share(metric)
    scale, digits = (100.0, 1) if share else (1.0, 3)
    a, b = abs(x) * scale, abs(limit) * scale
    while digits < 6 and a != b and f"{a:.{digits}f}" == f"{b:.{digits}f}":
        digits += 1
    if digits == (1 if share else 3) or f"{a:.{digits}f}" == f"{b:.{digits}f}":
        return fmt_delta(metric, x) if delta else fmt_value(metric, x)  # plain, or apart only by float noise
    text = f"{a:.{digits}f}"
    if delta:
        sign = "" if float(text) == 0.0 else ("+" if x > 0 else MINUS)
        return sign + text + (" pp" if share else "")
    return (MINUS if x < 0 else "") + text + ("%" if share else "")


def fmt_delta_ci_apart(metric: str, low: float | None, high: float | None) -> str:
    """The interval of a change; a bound that rounds to 0 but is not 0 gets the digits that show its
    side of zero, since that side decides a paired rule (−0.0003, not 0.000)."""
    if not (_present(low) and _present(high)):
        return fmt_delta_ci(metric, low, high)
    a, b = fmt_apart(metric, float(low), 0.0, delta=True), fmt_apart(metric, float(high), 0.0, delta=True)
    return f"{a.removesuffix(' pp')} to {b}"
