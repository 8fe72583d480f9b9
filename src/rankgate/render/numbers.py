"""How metric values and their changes are written for people, and how user text is made safe.

The number formats are the metric's (:mod:`rankgate.metrics.display`), re-exported here. Shares (recall, hit, precision, forbidden rate…) read as percentages and their changes as percentage
points (``87.0%``, ``−6.0 pp``); scores (ndcg, mrr, map) and counts keep three decimals
(``0.712``, ``−0.057``). A minus sign is U+2212 so it is not lost next to dashes. Missing numbers
(a metric that applies to no query) are ``—``.
"""

from __future__ import annotations

import re

from rankgate.metrics.display import (
    DASH,
    MINUS,
    fmt_answer_value,
    fmt_apart,
    fmt_confidence,
    fmt_confidence_exact,
    fmt_cost,
    fmt_cost_change,
    fmt_count,
    fmt_delta,
    fmt_delta_ci,
    fmt_delta_ci_apart,
    fmt_exact,
    fmt_limit,
    fmt_ms,
    fmt_ms_change,
    fmt_p,
    fmt_per_1k,
    fmt_pp,
    fmt_rank,
    fmt_score,
    fmt_share,
    fmt_share_change,
    fmt_share_range,
    fmt_sig,
    fmt_size,
    fmt_small_share,
    fmt_times,
    fmt_unit,
    fmt_value,
    fmt_value_ci,
    fmt_z,
    shorten,
)

__all__ = ["DASH", "MINUS", "fmt_answer_value", "fmt_apart", "fmt_confidence", "fmt_confidence_exact", "fmt_cost",
           "fmt_cost_change", "fmt_count", "fmt_delta", "fmt_delta_ci", "fmt_delta_ci_apart", "fmt_exact", "fmt_limit", "fmt_ms", "fmt_ms_change", "fmt_p",
           "fmt_per_1k", "fmt_pp", "fmt_rank", "fmt_score", "fmt_share", "fmt_share_change", "fmt_share_range", "fmt_sig",
           "fmt_size", "fmt_small_share", "fmt_times", "fmt_unit", "fmt_value", "fmt_value_ci", "fmt_z", "md_escape", "neutral", "shorten"]


_MD_SPECIAL = str.maketrans({"\\": "\\\\", "|": "\\|", "`": "\\`", "*": "\\*", "_": "\\_", "[": "\\[",
                             "]": "\\]", "<": "&lt;", ">": "&gt;", "#": "\\#", "~": "\\~"})


# Bidirectional controls reorder what a reader sees ("Trojan Source"); shown as U+FFFD instead.
_BIDI = str.maketrans({c: "\ufffd" for c in (*map(chr, range(0x202A, 0x202F)), *map(chr, range(0x2066, 0x206A)),
                                             "\u200e", "\u200f", "\u061c")})


# GitHub links @name when the @ does not follow a letter or digit (``recall@5`` and e-mail addresses stay)
_MENTION = re.compile(r"(?<![A-Za-z0-9])@")


def neutral(text: str) -> str:
    """User text with bidi controls made visible (U+FFFD); used by every renderer of user data."""
    return str(text).translate(_BIDI)


def md_escape(text: str, width: int = 80) -> str:
    """Text from user data made safe inside markdown (no markup, no HTML, one line, no mentions).

    ``@name`` and ``@org/team`` would notify people on GitHub: a zero-width joiner after ``@`` keeps
    the text as written but not a mention. Bidi controls are shown as U+FFFD."""
    text = shorten(" ".join(neutral(text).split()), width)
    return _MENTION.sub("@\u200d", text.translate(_MD_SPECIAL))
