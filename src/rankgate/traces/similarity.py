"""How much two ranked result lists agree: top-k Jaccard and rank-biased overlap (RBO).

Both are used by the instability signal (the same ``query_key`` in consecutive windows). The plain
functions here are the reference: short, written from the formulas, tested against hand-computed
values. The engines compute the same numbers in SQL with :func:`rbo_weights` (see below), and a
test ties the two together.

Jaccard@k of the id sets A and B: ``|A ∩ B| / |A ∪ B|`` (1 for two empty lists).

RBO, extrapolated form (Webber, Moffat & Zobel 2010, "A similarity measure for indefinite
rankings", ACM TOIS 28(4):20, eq. 32). S is the shorter list (length s), L the longer (length l),
``X_d = |S[:d] ∩ L[:d]|`` the overlap of the top d of both (for d > s, S[:d] is all of S)::

    RBO_ext = (1-p)/p · ( Σ_{d=1..l} X_d/d · p^d  +  Σ_{d=s+1..l} X_s·(d-s)/(s·d) · p^d )
              + ( (X_l - X_s)/l + X_s/s ) · p^l

For two lists of equal length k it is ``X_k/k · p^k + (1-p)/p · Σ_{d=1..k} X_d/d · p^d``: 1 for
identical lists, 0 for disjoint ones. With p = 0.9 the top 10 ranks carry about 86% of the weight.
Two empty lists have RBO 1; one empty list against a non-empty one has RBO 0.

For SQL, the formula is split by item: an item in both lists at ranks a (in S) and b (in L) is in
every ``X_d`` with ``d >= m = max(a, b)``, so RBO is a sum over the common items of a weight that
depends only on (m, s, l)::

    w(m, s, l) = (1-p)/p · ( Σ_{d=m..l} p^d/d  +  [m <= s] · Σ_{d=s+1..l} (d-s)/(s·d) · p^d )
                 + ( [m <= s]·(1/s - 1/l) + 1/l ) · p^l

:func:`rbo_weights` tabulates w for every 1 <= m <= l, 1 <= s <= l <= k.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["jaccard", "rbo", "rbo_weight", "rbo_weights"]


def jaccard(a: Sequence[str], b: Sequence[str]) -> float:
    """``|A ∩ B| / |A ∪ B|`` of the id sets of two lists; 1.0 for two empty lists."""
    sa, sb = set(a), set(b)
    union = sa | sb
    return 1.0 if not union else len(sa & sb) / len(union)


def _dedupe(items: Sequence[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for x in items:
        if x not in seen:
            seen.add(x)
            out.append(x)
    return out


def rbo(a: Sequence[str], b: Sequence[str], p: float = 0.9) -> float:
    """Extrapolated rank-biased overlap of two ranked lists (eq. 32; see the module docs).

    A repeated id counts at its first rank only."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must lie strictly between 0 and 1; got {p!r}")
    a, b = _dedupe(a), _dedupe(b)
    if not a and not b:
        return 1.0
    if not a or not b:
        return 0.0
    S, L = (a, b) if len(a) <= len(b) else (b, a)
    s, l = len(S), len(L)
    seen_s: set[str] = set()
    seen_l: set[str] = set()
    x = [0] * (l + 1)  # x[d] = X_d
    overlap = 0
    for d in range(1, l + 1):
        if d <= s:
            item_s = S[d - 1]
            overlap += item_s in seen_l
            seen_s.add(item_s)
        item_l = L[d - 1]
        overlap += item_l in seen_s
        seen_l.add(item_l)
        x[d] = overlap
    x_s, x_l = x[s], x[l]
    total = sum(x[d] / d * p**d for d in range(1, l + 1))
    total += sum(x_s * (d - s) / (s * d) * p**d for d in range(s + 1, l + 1))
    return (1 - p) / p * total + ((x_l - x_s) / l + x_s / s) * p**l


def rbo_weight(m: int, s: int, l: int, p: float = 0.9) -> float:
    """The weight of one common item whose ranks' maximum is ``m`` (module docs)."""
    inside = m <= s
    head = sum(p**d / d for d in range(m, l + 1))
    if inside:
        head += sum((d - s) / (s * d) * p**d for d in range(s + 1, l + 1))
    tail = ((1 / s - 1 / l) if inside else 0.0) + 1 / l
    return (1 - p) / p * head + tail * p**l


def rbo_weights(k: int, p: float = 0.9) -> list[tuple[int, int, int, float]]:
    """``(m, s, l, w)`` for every 1 <= m <= l, 1 <= s <= l <= k: the table the SQL joins."""
    return [(m, s, l, rbo_weight(m, s, l, p)) for l in range(1, k + 1) for s in range(1, l + 1)
            for m in range(1, l + 1)]
