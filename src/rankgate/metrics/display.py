"""How a metric's values and their changes are written for people: the unit a metric declares decides.

Shares (recall, hit, precision, forbidden rate…) read as percentages and their changes as percentage
points (``87.0%``, ``−6.0 pp``); scores (ndcg, mrr, map) and counts keep three decimals
(``0.712``, ``−0.057``). A minus sign is U+2212 so it is not lost next to dashes. Missing numbers
(a metric that applies to no query) are ``—``.

These live beside the metric registry (not in :mod:`rankgate.report`) because findings and gate notes
are sentences with numbers in them; the renderers re-export them from :mod:`rankgate.report.numbers`.
"""

from __future__ import annotations

import math
from typing import TypeGuard

from .info import is_share

__all__ = ["DASH", "MINUS", "fmt_delta", "fmt_delta_ci", "fmt_limit", "fmt_p", "fmt_pp", "fmt_rank", "fmt_value",
           "fmt_value_ci", "shorten"]

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
