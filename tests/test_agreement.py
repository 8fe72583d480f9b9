"""Calibration statistics against hand-computed values and scipy/statsmodels (tests only)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rankgate.stats.agreement import binary_rates, calibrate, cohen_kappa, kappa_ci, ppi_mean, spearman

from .conftest import examples


def test_kappa_by_hand():
    # table (human rows, judge cols) [[2,1],[0,1]] for 0/1: po = 3/4, pe = (3/4·2/4 + 1/4·2/4) = 1/2
    human, judge = [0, 0, 0, 1], [0, 0, 1, 1]
    assert cohen_kappa(human, judge, weights=None) == pytest.approx((0.75 - 0.5) / 0.5)
    # 3 categories, linear weights: one item 2 vs 0 (weight 0), one item 1 vs 1, one item 0 vs 0
    # P = diag-ish; po = (1 + 1 + 0)/3 = 2/3; marginals h=(1/3,1/3,1/3), j=(2/3,1/3,0)
    # pe = Σ w_ij h_i j_j = 1/3·(1·2/3 + .5·1/3) + 1/3·(.5·2/3 + 1·1/3) + 1/3·(0·2/3 + .5·1/3) = 1/3·(5/6 + 2/3 + 1/6) = 5/9
    assert cohen_kappa([0, 1, 2], [0, 1, 0]) == pytest.approx((2 / 3 - 5 / 9) / (1 - 5 / 9))
    assert math.isnan(cohen_kappa([1, 1], [1, 1]))
    assert math.isnan(cohen_kappa([], []))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # statsmodels' own standard errors on degenerate tables
@settings(max_examples=examples(40), deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2)), min_size=3, max_size=60))
def test_kappa_matches_statsmodels(pairs):
    from statsmodels.stats.inter_rater import cohens_kappa

    h, j = zip(*pairs)
    table = np.zeros((3, 3))
    np.add.at(table, (np.array(h), np.array(j)), 1)
    for wt, ours in (("linear", "linear"), ("quadratic", "quadratic"), (None, None)):
        ref = cohens_kappa(table, wt=wt).kappa
        got = cohen_kappa(h, j, weights=ours, categories=3)
        if math.isnan(got):
            assert not np.isfinite(ref) or np.isclose(table.sum(axis=0) @ table.sum(axis=1), table.sum() ** 2)
        else:
            assert got == pytest.approx(ref, abs=1e-9)


def test_kappa_ci_is_seeded_and_near_the_asymptotic_one():
    from statsmodels.stats.inter_rater import cohens_kappa

    rng = np.random.default_rng(3)
    h = rng.integers(0, 3, 200)
    j = np.clip(h + rng.integers(-1, 2, 200), 0, 2)
    ci = kappa_ci(h, j, seed=5)
    assert ci == kappa_ci(h, j, seed=5) and ci != kappa_ci(h, j, seed=6)
    table = np.zeros((3, 3))
    np.add.at(table, (h, j), 1)
    ref = cohens_kappa(table, wt="linear")
    assert ci[0] < cohen_kappa(h, j) < ci[1]
    assert ci[0] == pytest.approx(ref.kappa_low, abs=0.04) and ci[1] == pytest.approx(ref.kappa_upp, abs=0.04)
    assert all(math.isnan(x) for x in kappa_ci([1], [1]))


def test_sensitivity_specificity_with_wilson():
    from statsmodels.stats.proportion import proportion_confint

    human = [2, 2, 1, 1, 0, 0, 0, 0, 0, 2]
    judge = [2, 1, 0, 2, 0, 1, 0, 0, 0, 0]
    r = binary_rates(human, judge, relevant_at=1)
    assert (r.positives, r.true_positives, r.negatives, r.true_negatives) == (5, 3, 5, 4)
    assert r.sensitivity == 0.6 and r.specificity == 0.8
    assert r.sensitivity_ci == pytest.approx(proportion_confint(3, 5, method="wilson"))
    assert r.specificity_ci == pytest.approx(proportion_confint(4, 5, method="wilson"))
    r2 = binary_rates(human, judge, relevant_at=2)
    assert (r2.positives, r2.true_positives) == (3, 1)


@settings(max_examples=examples(40), deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2)), min_size=2, max_size=50))
def test_spearman_matches_scipy(pairs):
    from scipy.stats import spearmanr

    x, y = zip(*pairs)
    got = spearman(x, y)
    if len(set(x)) < 2 or len(set(y)) < 2:
        assert math.isnan(got)
    else:
        assert got == pytest.approx(spearmanr(x, y).statistic, abs=1e-12)


def test_ppi_by_hand():
    # unlabelled judge scores mean 0.5, var(ddof=1) = 1/3 over 4 items; rectifier f - Y = [1, 0, 0, -1]... mean 0
    fu = [0, 1, 0, 1]
    fl, y = [1, 1, 0, 0], [0, 1, 0, 1]
    est = ppi_mean(fu, fl, y, confidence=0.95)
    assert est.estimate == pytest.approx(0.5 - 0.0)
    se = math.sqrt((1 / 3) / 4 + (2 / 3) / 4)
    assert est.ci == pytest.approx((0.5 - 1.959963984540054 * se, 0.5 + 1.959963984540054 * se))
    # a judge that over-calls by 0.25 on the labelled items is corrected down by 0.25
    est2 = ppi_mean([1, 1, 1, 0], [1, 1, 0, 1], [1, 0, 0, 1])
    assert est2.estimate == pytest.approx(0.75 - 0.25)
    assert math.isnan(ppi_mean([], [1], [1]).estimate)


def test_calibrate_summary():
    keys = [("q1", f"d{i}") for i in range(6)]
    cal = calibrate(keys, [2, 1, 0, 0, 2, 1], [2, 0, 0, 2, 2, 1], seed=1, resamples=500)
    d = cal.to_dict()
    assert d["n"] == 6 and d["agreement"] == pytest.approx(4 / 6, abs=1e-6)
    assert d["weights"] == "linear" and d["relevant_at"] == 1
    assert d["confusion"] == [[1, 0, 1], [1, 1, 0], [0, 0, 2]]
    assert d["worst_disagreements"] == [{"query_id": "q1", "id": "d3", "human": 0, "judge": 2},
                                        {"query_id": "q1", "id": "d1", "human": 1, "judge": 0}]
    assert (d["positives"], d["negatives"]) == (4, 2)
    assert d["sensitivity"] == 0.75 and d["specificity"] == 0.5
