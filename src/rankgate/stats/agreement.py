"""Agreement between a judge and human labels, and estimates that mix the two (statistics layer).

Everything here takes plain sequences of labels for the same items, in the same order: ``human``
(the truth) and ``judge``. Grades are the integers 0, 1, 2 (any small non-negative integers work).

Cohen's κ (:func:`cohen_kappa`)
    ``κ = (p_o − p_e) / (1 − p_e)`` with agreement weights ``w_ij``: observed ``p_o = Σ w_ij·P_ij``,
    chance ``p_e = Σ w_ij·P_i·P_j``. Weights ``"linear"`` (the default for 2/1/0 labels):
    ``w_ij = 1 − |i − j| / (K − 1)``, so a 2-vs-1 disagreement counts half; ``"quadratic"``:
    ``1 − (i − j)² / (K − 1)²``; ``None``: unweighted. NaN when ``p_e = 1`` (one category only).
κ interval (:func:`kappa_ci`)
    Percentile bootstrap over items (resampled with replacement, ``resamples`` = 2000, numpy
    ``default_rng(seed)``): the ``(1 ∓ c)/2`` quantiles of the resampled κ, NaN resamples dropped.
Sensitivity and specificity (:func:`binary_rates`)
    For the cut ``grade >= relevant_at`` with the human label as the truth: sensitivity = judge
    positive among human positives, specificity = judge negative among human negatives, each with
    its Wilson interval (:func:`rankgate.stats.bootstrap.wilson_interval`).
Fleiss' κ (:func:`fleiss_kappa`, :func:`fleiss_ci`)
    Agreement of any number of raters, items rated by two or more each (unweighted), with the same
    bootstrap over items; ``rankgate label agreement`` reports it over every annotator.
Spearman's ρ (:func:`spearman`)
    Pearson correlation of the average ranks (ties share their mean rank); NaN when either side
    is constant.
Prediction-powered mean (:func:`ppi_mean`, Angelopoulos et al. 2023, as ARES uses it)
    With judge scores ``f̃`` on N unlabelled items and ``f``, ``Y`` judge and human scores on n
    labelled ones: ``θ̂ = mean(f̃) − mean(f − Y)`` and the interval
    ``θ̂ ± z·√(var(f̃)/N + var(f − Y)/n)`` (variances with ddof = 1). The labelled items must be a
    random sample of the same population as the unlabelled ones.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rankgate._util.constraints import CONFIDENCE, RESAMPLES, SEED, check
from rankgate.errors import UsageError
from rankgate.stats.bootstrap import normal_quantile, wilson_interval
from rankgate.stats.options import Statistics, taken

__all__ = ["BinaryRates", "Calibration", "PPIEstimate", "binary_rates", "calibrate", "cohen_kappa", "fleiss_ci",
           "fleiss_kappa", "kappa_ci", "ppi_mean", "spearman"]

WEIGHTS = ("linear", "quadratic", None)


def _pair(human: Sequence[int] | np.ndarray, judge: Sequence[int] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    h = np.asarray(human, dtype=np.int64)
    j = np.asarray(judge, dtype=np.int64)
    if h.shape != j.shape or h.ndim != 1:
        raise UsageError(f"human and judge labels must be two lists of the same length; got {h.shape} and {j.shape}")
    if h.size and (h.min() < 0 or j.min() < 0):
        raise UsageError("grades must be non-negative integers")
    return h, j


def _weight_matrix(k: int, weights: str | None) -> np.ndarray:
    if weights not in WEIGHTS:
        raise UsageError(f"kappa weights must be 'linear', 'quadratic' or None; got {weights!r}")
    i, j = np.indices((k, k))
    if weights is None or k == 1:
        return (i == j).astype(float)
    d = np.abs(i - j) / (k - 1)
    return 1.0 - (d if weights == "linear" else d * d)


def _kappa_from_tables(tables: np.ndarray, w: np.ndarray) -> np.ndarray:
    """κ for a stack of K×K count tables (shape (R, K, K))."""
    n = tables.sum(axis=(1, 2)).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = tables / n[:, None, None]
        po = (p * w).sum(axis=(1, 2))
        pe = np.einsum("ri,rj,ij->r", p.sum(axis=2), p.sum(axis=1), w)
        kappa = (po - pe) / (1.0 - pe)
    kappa[np.isclose(pe, 1.0) | (n == 0)] = np.nan
    return kappa


def cohen_kappa(human: Sequence[int] | np.ndarray, judge: Sequence[int] | np.ndarray, *, weights: str | None = "linear",
                categories: int | None = None) -> float:
    """Cohen's κ between two raters (module docstring); ``categories`` defaults to max label + 1."""
    h, j = _pair(human, judge)
    if h.size == 0:
        return math.nan
    k = categories or int(max(h.max(), j.max())) + 1
    table = np.zeros((1, k, k), dtype=np.int64)
    np.add.at(table[0], (h, j), 1)
    return float(_kappa_from_tables(table, _weight_matrix(k, weights))[0])


def kappa_ci(human: Sequence[int] | np.ndarray, judge: Sequence[int] | np.ndarray, *, weights: str | None = "linear",
             statistics: Statistics | None = None,
             confidence: float = 0.95, resamples: int = 2000, seed: int = 0,
             categories: int | None = None) -> tuple[float, float]:
    """Percentile-bootstrap interval of κ over items (module docstring); NaN with fewer than 2 items."""
    seed, resamples, confidence = taken(statistics, seed, resamples, confidence, caller="kappa_ci",
                                         defaults=(0, 2000, 0.95))
    h, j = _pair(human, judge)
    check(CONFIDENCE, confidence, caller="kappa_ci")
    check(RESAMPLES, resamples, caller="kappa_ci", name="resamples")
    check(SEED, seed, caller="kappa_ci")
    if h.size < 2:
        return (math.nan, math.nan)
    k = categories or int(max(h.max(), j.max())) + 1
    codes = h * k + j
    rng = np.random.default_rng(seed)
    w = _weight_matrix(k, weights)
    values = []
    for start in range(0, resamples, 500):
        rows = min(500, resamples - start)
        picked = codes[rng.integers(0, h.size, size=(rows, h.size))]
        flat = (np.arange(rows)[:, None] * (k * k) + picked).ravel()
        tables = np.bincount(flat, minlength=rows * k * k).reshape(rows, k, k)
        values.append(_kappa_from_tables(tables, w))
    kappas = np.concatenate(values)
    kappas = kappas[~np.isnan(kappas)]
    if kappas.size == 0:
        return (math.nan, math.nan)
    lo, hi = np.quantile(kappas, [(1 - confidence) / 2, (1 + confidence) / 2])
    return (float(lo), float(hi))


@dataclass(frozen=True)
class BinaryRates:
    """Sensitivity and specificity of the judge at the cut ``grade >= relevant_at``."""

    relevant_at: int
    positives: int          # human-relevant items
    negatives: int
    true_positives: int
    true_negatives: int
    sensitivity: float
    sensitivity_ci: tuple[float, float]
    specificity: float
    specificity_ci: tuple[float, float]


def binary_rates(human: Sequence[int] | np.ndarray, judge: Sequence[int] | np.ndarray, *, relevant_at: int = 1,
                 confidence: float = 0.95) -> BinaryRates:
    h, j = _pair(human, judge)
    hp, jp = h >= relevant_at, j >= relevant_at
    pos, neg = int(hp.sum()), int((~hp).sum())
    tp, tn = int((hp & jp).sum()), int((~hp & ~jp).sum())
    return BinaryRates(relevant_at, pos, neg, tp, tn,
                       tp / pos if pos else math.nan, wilson_interval(tp, pos, confidence=confidence),
                       tn / neg if neg else math.nan, wilson_interval(tn, neg, confidence=confidence))


def _average_ranks(x: np.ndarray) -> np.ndarray:
    order = np.argsort(x, kind="stable")
    ranks = np.empty(x.size, dtype=float)
    sorted_x = x[order]
    starts = np.flatnonzero(np.r_[True, sorted_x[1:] != sorted_x[:-1]])
    ends = np.r_[starts[1:], x.size]
    for s, e in zip(starts, ends):
        ranks[order[s:e]] = (s + e + 1) / 2.0  # mean of 1-based ranks s+1 .. e
    return ranks


def spearman(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> float:
    """Spearman's ρ with average ranks for ties; NaN when either side is constant or empty."""
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if a.shape != b.shape or a.size < 2:
        return math.nan
    ra, rb = _average_ranks(a), _average_ranks(b)
    ra -= ra.mean()
    rb -= rb.mean()
    den = math.sqrt(float((ra * ra).sum()) * float((rb * rb).sum()))
    return float((ra * rb).sum() / den) if den > 0 else math.nan


def _fleiss_from_counts(counts: np.ndarray) -> np.ndarray:
    """Fleiss' κ for a stack of item × category count tables (shape (R, N, K)); NaN where chance agreement is 1."""
    n_i = counts.sum(axis=2).astype(float)                                  # raters per item
    with np.errstate(invalid="ignore", divide="ignore"):
        p_i = (counts * (counts - 1)).sum(axis=2) / (n_i * (n_i - 1))       # agreeing pairs of raters, per item
        p_bar = p_i.mean(axis=1)
        p_j = counts.sum(axis=1) / n_i.sum(axis=1)[:, None]                  # share of all ratings per category
        p_e = (p_j * p_j).sum(axis=1)
        kappa = (p_bar - p_e) / (1.0 - p_e)
    kappa[np.isclose(p_e, 1.0)] = np.nan
    return kappa


def fleiss_kappa(counts: Sequence[Sequence[int]] | np.ndarray) -> float:
    """Fleiss' κ of items rated by two or more raters each: ``counts[i][k]`` raters put item ``i`` in category ``k``.
    ``P_i = Σ_k n_ik(n_ik − 1) / (n_i(n_i − 1))``, ``P̄`` their mean, ``p_k`` the share of all ratings in ``k``,
    ``P_e = Σ p_k²``, ``κ = (P̄ − P_e) / (1 − P_e)`` (the number of raters may differ between items); NaN with
    no item or one category only."""
    c = np.asarray(counts, dtype=np.int64)
    if c.ndim != 2 or c.shape[0] == 0:
        return math.nan
    if (c < 0).any() or (c.sum(axis=1) < 2).any():
        raise UsageError("Fleiss' kappa needs non-negative counts and at least two ratings per item")
    return float(_fleiss_from_counts(c[None])[0])


def fleiss_ci(counts: Sequence[Sequence[int]] | np.ndarray, *, statistics: Statistics | None = None,
              confidence: float = 0.95, resamples: int = 2000, seed: int = 0) -> tuple[float, float]:
    """Percentile-bootstrap interval of Fleiss' κ over items (as :func:`kappa_ci`); NaN with fewer than 2 items."""
    seed, resamples, confidence = taken(statistics, seed, resamples, confidence, caller="fleiss_ci",
                                         defaults=(0, 2000, 0.95))
    check(CONFIDENCE, confidence, caller="fleiss_ci")
    check(RESAMPLES, resamples, caller="fleiss_ci", name="resamples")
    check(SEED, seed, caller="fleiss_ci")
    c = np.asarray(counts, dtype=np.int64)
    if c.ndim != 2 or c.shape[0] < 2:
        return (math.nan, math.nan)
    rng = np.random.default_rng(seed)
    values = []
    for start in range(0, resamples, 200):
        rows = min(200, resamples - start)
        values.append(_fleiss_from_counts(c[rng.integers(0, c.shape[0], size=(rows, c.shape[0]))]))
    kappas = np.concatenate(values)
    kappas = kappas[~np.isnan(kappas)]
    if kappas.size == 0:
        return (math.nan, math.nan)
    lo, hi = np.quantile(kappas, [(1 - confidence) / 2, (1 + confidence) / 2])
    return (float(lo), float(hi))


@dataclass(frozen=True)
class PPIEstimate:
    estimate: float
    ci: tuple[float, float]
    n_labelled: int
    n_unlabelled: int


def ppi_mean(judge_on_unlabelled: Sequence[float], judge_on_labelled: Sequence[float],
             human_on_labelled: Sequence[float], confidence: float = 0.95) -> PPIEstimate:
    """Prediction-powered mean and its normal interval (module docstring)."""
    fu = np.asarray(judge_on_unlabelled, dtype=float)
    fl = np.asarray(judge_on_labelled, dtype=float)
    y = np.asarray(human_on_labelled, dtype=float)
    if fl.shape != y.shape:
        raise UsageError(f"judge and human labels on the labelled items must have the same length; "
                         f"got {fl.size} and {y.size}")
    check(CONFIDENCE, confidence, caller="ppi_mean")
    if fu.size == 0 or y.size == 0:
        return PPIEstimate(math.nan, (math.nan, math.nan), int(y.size), int(fu.size))
    rectifier = fl - y
    estimate = float(fu.mean() - rectifier.mean())
    if fu.size < 2 or y.size < 2:
        return PPIEstimate(estimate, (math.nan, math.nan), int(y.size), int(fu.size))
    se = math.sqrt(float(fu.var(ddof=1)) / fu.size + float(rectifier.var(ddof=1)) / y.size)
    z = normal_quantile((1 + confidence) / 2)
    return PPIEstimate(estimate, (estimate - z * se, estimate + z * se), int(y.size), int(fu.size))


@dataclass(frozen=True)
class Calibration:
    """A judge measured against human labels on the same items (see :func:`calibrate`)."""

    task: str
    n: int
    agreement: float
    agreement_ci: tuple[float, float]
    kappa: float
    kappa_ci: tuple[float, float]
    weights: str | None
    rates: BinaryRates
    spearman: float
    confusion: list[list[int]]       # rows: human grade, columns: judge grade
    worst: list[dict[str, object]]   # the largest disagreements first
    confidence: float
    resamples: int
    seed: int

    def to_dict(self) -> dict[str, object]:
        def num(x: float) -> float | None:
            return None if math.isnan(x) else round(x, 6)

        def pair(ci: tuple[float, float]) -> list[float | None]:
            return [num(ci[0]), num(ci[1])]

        r = self.rates
        return {
            "task": self.task, "n": self.n,
            "agreement": num(self.agreement), "agreement_ci": pair(self.agreement_ci),
            "kappa": num(self.kappa), "kappa_ci": pair(self.kappa_ci), "weights": self.weights,
            "kappa_ci_method": f"percentile bootstrap over items, {self.resamples} resamples, seed {self.seed}",
            "confidence": self.confidence,
            "sensitivity": num(r.sensitivity), "sensitivity_ci": pair(r.sensitivity_ci),
            "specificity": num(r.specificity), "specificity_ci": pair(r.specificity_ci),
            "positives": r.positives, "negatives": r.negatives, "relevant_at": r.relevant_at,
            "spearman": num(self.spearman), "confusion": self.confusion, "worst_disagreements": self.worst,
        }


def calibrate(keys: Sequence[tuple[str, str]], human: Sequence[int], judge: Sequence[int], *,
              task: str = "context_relevance", relevant_at: int = 1, weights: str | None = "linear",
              statistics: Statistics | None = None,
              confidence: float = 0.95, resamples: int = 2000, seed: int = 0, worst: int = 10) -> Calibration:
    """Agreement, weighted κ with its bootstrap interval, sensitivity/specificity with Wilson
    intervals, Spearman's ρ, the confusion table and the ``worst`` largest disagreements (by
    ``|human − judge|``, then key) of grades given for the same ``keys``."""
    seed, resamples, confidence = taken(statistics, seed, resamples, confidence, caller="calibrate",
                                         defaults=(0, 2000, 0.95))
    h, j = _pair(human, judge)
    k = 3 if h.size == 0 else max(3, int(max(h.max(), j.max())) + 1)
    same = int((h == j).sum())
    table = np.zeros((k, k), dtype=np.int64)
    np.add.at(table, (h, j), 1)
    gaps = sorted(((-abs(int(a) - int(b)), keys[i]) for i, (a, b) in enumerate(zip(h, j)) if a != b))[:worst]
    index = {key: i for i, key in enumerate(keys)}
    worst_rows: list[dict[str, object]] = [
        {"query_id": key[0], "id": key[1], "human": int(h[index[key]]), "judge": int(j[index[key]])}
        for _, key in gaps]
    return Calibration(
        task=task, n=int(h.size), agreement=same / h.size if h.size else math.nan,
        agreement_ci=wilson_interval(same, int(h.size), confidence=confidence),
        kappa=cohen_kappa(h, j, weights=weights, categories=k),
        kappa_ci=kappa_ci(h, j, weights=weights, confidence=confidence, resamples=resamples, seed=seed,
                          categories=k),
        weights=weights, rates=binary_rates(h, j, relevant_at=relevant_at, confidence=confidence),
        spearman=spearman(h, j), confusion=table.tolist(), worst=worst_rows, confidence=confidence,
        resamples=resamples, seed=seed)
