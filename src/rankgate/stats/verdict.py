"""The one rule that turns a paired difference into a verdict, used by every output that prints one.

``rankgate compare`` (terminal, markdown, JSON), ``rankgate report`` (the HTML panel), the gate (its JSON
outcome and the PR comment) and the retrieval panel all call :func:`verdict`, so the same change reads the
same everywhere. The words, with α = 1 − confidence:

``better`` / ``worse``
    the Holm-corrected p-value is below α (the direction says which, by whether the metric is better high).
``not significant after correcting for N comparisons``
    the change on its own looks real (its interval excludes 0; without an interval, its uncorrected p is
    below α) but the corrected p is not: with N changes tested at once, one like it could be chance.
    With N = 1 there is no correction, and the phrase is ``not significant``.
``within noise``
    the interval includes 0 (or, without an interval, the uncorrected p is not below α).
``unchanged``
    no query's value changed (the change and its interval are exactly 0).
``n/a``
    no query where the metric applies in both runs.

When p-values are off (0 permutations) there is nothing to correct: the interval decides, ``better`` or
``worse`` when it excludes 0, else ``within noise``. With neither p-values nor intervals, a change is
``within noise``.

Holm's correction runs within a *family* of rows (:func:`rankgate.stats.paired.compare`): the headline rows
(every metric, and every run, against the baseline over all queries) are one family; the segment rows of
each ``by`` field are a family of their own, so adding ``--by`` never changes a headline verdict.
:func:`correction_line` says so in one sentence for an output's footer.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["BETTER", "NA", "NOISE", "UNCHANGED", "VERDICT_WORDS", "WORSE", "correction_line", "not_significant",
           "verdict"]

BETTER = "better"
WORSE = "worse"
NOISE = "within noise"
UNCHANGED = "unchanged"
NA = "n/a"
VERDICT_WORDS = (BETTER, WORSE, NOISE, UNCHANGED, NA)
"""The verdicts with a fixed wording; the other is :func:`not_significant`'s phrase."""


def not_significant(family: int) -> str:
    """The verdict of a change that its interval calls real but Holm's correction over ``family`` rows does not."""
    if family <= 1:
        return "not significant"
    return f"not significant after correcting for {family} comparisons"


def verdict(delta: float, ci_low: float, ci_high: float, p_value: float, p_holm: float, family: int, *,
            higher_is_better: bool = True, confidence: float = 0.95, n: int | None = None) -> str:
    """The verdict of one paired difference (see the module docs for every word).

    Args:
        delta: candidate − baseline mean over the paired queries.
        ci_low, ci_high: the change's paired bootstrap interval, uncorrected (NaN: intervals off).
        p_value: the uncorrected randomisation p-value (NaN: p-values off).
        p_holm: ``p_value`` Holm-corrected within the row's family (NaN: p-values off).
        family: how many rows share the correction (named in the "not significant" phrase).
        higher_is_better: the metric's direction.
        confidence: of the interval; α = 1 − confidence.
        n: queries where the metric applies in both runs (0: ``n/a``; None: not known).
    """
    if n == 0 or math.isnan(delta):
        return NA
    if delta == 0 and ci_low == 0 and ci_high == 0:
        return UNCHANGED
    alpha = 1.0 - confidence
    has_ci = not (math.isnan(ci_low) or math.isnan(ci_high))
    ci_excludes = has_ci and (ci_low > 0 or ci_high < 0)
    if math.isnan(p_holm):  # p-values off: the interval decides
        real = ci_excludes
    else:
        real = p_holm < alpha
        alone = ci_excludes if has_ci else (not math.isnan(p_value) and p_value < alpha)
        if not real and alone and delta != 0:
            return not_significant(family)
    if not real or delta == 0:
        return NOISE
    return BETTER if (delta > 0) == higher_is_better else WORSE


def correction_line(headline: int, segments: Sequence[tuple[str, int]], *, what: str = "metric row",
                    detail: str = "") -> str:
    """How the p-values were corrected, for an output's footer: ``"Holm-corrected across the 3 metric rows; each
    field's segments apart: across 36 segment rows (area)"``. ``segments``: each ``by`` field's display name and
    number of rows (none: no segment rows); ``what``: the headline rows' name, singular; ``detail``: said after it."""
    text = f"Holm-corrected across the {_count(headline, what)}{detail}"
    if segments:
        text += "; each field's segments apart: " + ", ".join(f"across {_count(n, 'segment row')} ({name})"
                                                              for name, n in segments)
    return text


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
