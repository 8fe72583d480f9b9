"""Bootstrap intervals, the paired randomisation test and Holm's correction."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rankgate.stats import bootstrap as stats
from rankgate.errors import UsageError
from rankgate.model.results import EvaluationResult
from rankgate.stats.bootstrap import bootstrap_ci, holm, metric_cis, paired_bootstrap_ci, randomization_test

from .conftest import examples


# -- coverage on known distributions ---------------------------------------------------------------
@pytest.mark.parametrize(
    "draw, true_mean",
    [
        (lambda rng, n: (rng.random(n) < 0.7).astype(float), 0.7),  # a hit rate
        (lambda rng, n: rng.beta(2.0, 5.0, n), 2.0 / 7.0),  # a skewed score in [0, 1]
    ],
)
def test_bootstrap_interval_covers_the_true_mean_about_95_percent_of_the_time(draw, true_mean):
    data_rng = np.random.default_rng(123)
    trials, covered = 300, 0
    for t in range(trials):
        x = draw(data_rng, 150)
        low, high = bootstrap_ci(x, rng=t, resamples=400)
        covered += low <= true_mean <= high
    # Percentile intervals run slightly narrow at n=150; 300 trials give a standard error of ~1.3 pp.
    assert 0.89 <= covered / trials <= 0.99


def test_paired_interval_covers_the_true_change():
    data_rng = np.random.default_rng(7)
    trials, covered = 300, 0
    for t in range(trials):
        base = data_rng.random(120)
        cand = base + data_rng.normal(0.05, 0.2, 120)
        low, high = paired_bootstrap_ci(base, cand, rng=t, resamples=400)
        covered += low <= 0.05 <= high
    assert 0.89 <= covered / trials <= 0.99


def test_randomization_test_is_calibrated_under_no_change():
    data_rng = np.random.default_rng(11)
    trials = 300
    pvalues = []
    for t in range(trials):
        base = data_rng.random(60)
        cand = base + data_rng.normal(0.0, 0.1, 60)  # symmetric differences: no change
        pvalues.append(randomization_test(base, cand, rng=t, resamples=500))
    rejected = np.mean(np.array(pvalues) < 0.05)
    assert 0.01 <= rejected <= 0.10


def test_randomization_test_finds_a_clear_change():
    base = np.zeros(50)
    cand = np.full(50, 0.2)
    p = randomization_test(base, cand, rng=0, resamples=999)
    assert p == pytest.approx(1 / 1000)  # no flip reaches it: (0 + 1) / (999 + 1)


# -- p-value bounds and determinism ---------------------------------------------------------------
@settings(max_examples=examples(60), deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from([0.0, 0.25, 0.5, 1.0, math.nan]), st.sampled_from([0.0, 0.5, 1.0, math.nan])),
             min_size=1, max_size=40),
    st.integers(0, 2**32 - 1),
)
def test_p_values_lie_in_their_bounds_and_intervals_in_the_data_range(pairs, seed):
    base = np.array([p[0] for p in pairs])
    cand = np.array([p[1] for p in pairs])
    p = randomization_test(base, cand, rng=seed, resamples=200)
    both = ~(np.isnan(base) | np.isnan(cand))
    if not both.any():
        assert math.isnan(p)
    else:
        assert 1 / 201 <= p <= 1.0
    low, high = paired_bootstrap_ci(base, cand, rng=seed, resamples=200)
    if both.sum() >= 2:
        d = cand[both] - base[both]
        assert d.min() <= low <= high <= d.max()
    else:
        assert math.isnan(low) and math.isnan(high)


def test_same_seed_gives_identical_floats_and_a_generator_equals_its_seed():
    x = np.random.default_rng(5).random(500)
    a = bootstrap_ci(x, rng=42)
    b = bootstrap_ci(x, rng=42)
    c = bootstrap_ci(x, rng=np.random.default_rng(42))
    assert a == b == c
    assert bootstrap_ci(x, rng=43) != a
    y = x + np.random.default_rng(6).normal(0, 0.1, 500)
    assert randomization_test(x, y, rng=1) == randomization_test(x, y, rng=1)


def test_intervals_are_the_same_floats_with_and_without_the_compiled_code(monkeypatch):
    """Bounds pinned bit for bit, which every build gives (RANKGATE_NATIVE=auto, baseline and off; .ci/run runs
    this file under each): the fallback adds count times value in query order as the compiled kernel does.
    Queries past a row tile of the kernel's vector path and several chunks of resamples; groups of sizes the
    compositions serve and sizes summed as tables. Then the same in-process without the kernels."""
    from rankgate import _native
    from rankgate.stats.bootstrap import grouped_bootstrap_cis, values_cis

    rng = np.random.default_rng(21)
    x = rng.random(3001) * 10.0 ** rng.integers(-3, 3, 3001)
    sizes = [2, 3, 5, 9, 40, 2, 9]
    grouped = np.round(rng.random(sum(sizes)), 3)
    offsets = np.concatenate([[0], np.cumsum(sizes)])

    def bounds() -> tuple[dict[str, tuple[str, str]], list[tuple[str, str]]]:
        cis = values_cis({"a": x, "b": np.round(x, 2), "c": -x}, 8, 600, 0.95)
        low, high = grouped_bootstrap_cis(grouped, offsets, seed=3, resamples=500)
        return ({k: (lo.hex(), hi.hex()) for k, (lo, hi) in cis.items()},
                [(lo.hex(), hi.hex()) for lo, hi in zip(low.tolist(), high.tolist())])

    want = ({"a": ("0x1.1d3c6be599ec0p+3", "0x1.54934a49a4a8cp+3"), "b": ("0x1.1d3b530e67231p+3", "0x1.5492323b4b5ebp+3"),
             "c": ("-0x1.54934a49a4a8cp+3", "-0x1.1d3c6be599ec0p+3")},
            [("0x1.eb851eb851eb8p-5", "0x1.3851eb851eb85p-1"), ("0x1.4cccccccccccdp-2", "0x1.a76c8b4395810p-1"),
             ("0x1.0c154c985f070p-2", "0x1.8a2339c0ebee0p-1"), ("0x1.cbe0ded288ce7p-2", "0x1.8aadf187080e3p-1"),
             ("0x1.8ddaa4fca42b0p-2", "0x1.2a5a5b9628cbcp-1"), ("0x1.a1cac083126e9p-5", "0x1.ba5e353f7ced9p-5"),
             ("0x1.95e1df24171eap-2", "0x1.694b5225c6337p-1")])
    assert bounds() == want
    monkeypatch.setattr(_native, "kernels", None)
    assert bounds() == want


def test_results_do_not_depend_on_block_boundaries_being_reproducible(monkeypatch):
    x = np.random.default_rng(3).random(1000)
    monkeypatch.setattr(stats, "_BLOCK_ELEMENTS", 2500)  # several blocks of 2 resamples
    a = bootstrap_ci(x, rng=9, resamples=101)
    assert a == bootstrap_ci(x, rng=9, resamples=101)
    lo, hi = a
    assert lo < x.mean() < hi


def test_metric_cis_match_bootstrap_ci_and_ignore_which_other_metrics_were_asked():
    rng = np.random.default_rng(0)
    n = 300
    recall = rng.random(n)
    recall[::10] = np.nan  # no-answer queries
    mrr = rng.random(n)
    mrr[::10] = np.nan
    forbidden = (rng.random(n) < 0.1).astype(float)  # applies to every query
    result = EvaluationResult(
        tuple(f"q{i}" for i in range(n)), ("recall@5", "mrr", "forbidden@5"),
        {"recall@5": recall, "mrr": mrr, "forbidden@5": forbidden},
    )
    cis = metric_cis(result, seed=4, resamples=300)
    assert cis["recall@5"] == bootstrap_ci(recall, rng=4, resamples=300)
    assert cis["forbidden@5"] == bootstrap_ci(forbidden, rng=4, resamples=300)
    only = metric_cis(result, seed=4, resamples=300, metrics=["mrr"])
    assert only == {"mrr": cis["mrr"]}


# -- Holm ------------------------------------------------------------------------------------------
def test_holm_matches_a_hand_computed_example():
    # sorted: 0.005*4 = 0.02, 0.01*3 = 0.03, 0.03*2 = 0.06, 0.04*1 = 0.04 -> max so far 0.06
    assert holm([0.01, 0.04, 0.03, 0.005]).tolist() == pytest.approx([0.03, 0.06, 0.06, 0.02])


def test_holm_caps_at_one_keeps_nan_and_ignores_it_in_the_count():
    out = holm([0.5, math.nan, 0.4])
    assert out[0] == pytest.approx(0.8) and math.isnan(out[1]) and out[2] == pytest.approx(0.8)
    assert holm([0.9, 0.8]).tolist() == [1.0, 1.0]
    assert holm([0.02]).tolist() == [0.02]
    assert holm([]).size == 0
    with pytest.raises(UsageError):
        holm([1.5])


@settings(max_examples=examples(50), deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=20))
def test_holm_never_lowers_a_p_value_and_keeps_their_order(ps):
    adj = holm(ps)
    p = np.array(ps)
    assert (adj >= p - 1e-15).all() and (adj <= 1.0).all()
    order = np.argsort(p, kind="stable")
    assert (np.diff(adj[order]) >= -1e-15).all()


# -- NaN and degenerate inputs --------------------------------------------------------------------
def test_nan_values_are_left_out_not_counted_as_zero():
    x = np.array([1.0, np.nan, 0.0, 1.0, np.nan, 1.0])
    assert bootstrap_ci(x, rng=0, resamples=300) == bootstrap_ci(x[~np.isnan(x)], rng=0, resamples=300)
    base = np.array([0.0, np.nan, 0.5, 1.0])
    cand = np.array([1.0, 1.0, np.nan, 1.0])
    # only queries 0 and 3 apply in both: differences 1 and 0
    low, high = paired_bootstrap_ci(base, cand, rng=0, resamples=300)
    assert 0.0 <= low <= high <= 1.0


def test_degenerate_inputs():
    nan_pair = bootstrap_ci([], rng=0)
    assert all(math.isnan(v) for v in nan_pair)
    assert all(math.isnan(v) for v in bootstrap_ci([0.7], rng=0))  # one query says nothing about spread
    assert all(math.isnan(v) for v in bootstrap_ci([np.nan, np.nan], rng=0))
    assert bootstrap_ci([0.1] * 30, rng=0) == (0.1, 0.1)  # no spread in the data: exactly the value
    assert all(math.isnan(v) for v in bootstrap_ci([0.1, 0.9], rng=0, resamples=0))  # intervals off
    assert math.isnan(randomization_test([], [], rng=0))
    assert randomization_test([0.3, 0.5], [0.3, 0.5], rng=0) == 1.0  # nothing changed
    assert randomization_test([0.0], [1.0], rng=0, resamples=99) == 1.0  # one flip matches it either way
    assert paired_bootstrap_ci([0.2, 0.4, 0.6], [0.3, 0.5, 0.7], rng=0) == pytest.approx((0.1, 0.1))


def test_bad_arguments_are_usage_errors():
    with pytest.raises(UsageError, match="confidence"):
        bootstrap_ci([0.1, 0.2], rng=0, confidence=95)
    with pytest.raises(UsageError, match="resamples"):
        bootstrap_ci([0.1, 0.2], rng=0, resamples=-1)
    with pytest.raises(UsageError, match="Generator or an integer seed"):
        bootstrap_ci([0.1, 0.2], rng=None)
    with pytest.raises(UsageError, match="same length"):
        paired_bootstrap_ci([0.1, 0.2], [0.1], rng=0)


def test_large_inputs_run_in_blocks_quickly():
    x = (np.random.default_rng(1).random(100_000) < 0.8).astype(float)
    low, high = bootstrap_ci(x, rng=0, resamples=60)
    assert low <= x.mean() <= high
    assert high - low < 0.01


def test_newcombe_interval_hand_computed_and_against_statsmodels():
    from rankgate.stats.bootstrap import newcombe_interval, wilson_interval

    # by hand from the two Wilson intervals: 11/30 against 18/120
    l1, u1 = wilson_interval(11, 30)
    l2, u2 = wilson_interval(18, 120)
    d = 11 / 30 - 18 / 120
    want = (d - math.sqrt((11 / 30 - l1) ** 2 + (u2 - 18 / 120) ** 2), d + math.sqrt((u1 - 11 / 30) ** 2 + (18 / 120 - l2) ** 2))
    assert newcombe_interval(11, 30, 18, 120) == want
    assert want[0] > 0 and wilson_interval(18, 120)[1] > wilson_interval(11, 30)[0]  # sharper than non-overlap
    sm = pytest.importorskip("statsmodels.stats.proportion")
    for k1, n1, k2, n2, conf in [(18, 30, 18, 120, 0.95), (8, 25, 36, 250, 0.99), (0, 10, 5, 7, 0.95),
                                 (10, 10, 0, 3, 0.9), (1, 1000, 3, 5000, 0.95)]:
        got = newcombe_interval(k1, n1, k2, n2, confidence=conf)
        ref = sm.confint_proportions_2indep(k1, n1, k2, n2, method="newcomb", compare="diff", alpha=1 - conf)
        assert got == pytest.approx(tuple(float(x) for x in ref), abs=1e-12)
    assert all(math.isnan(x) for x in newcombe_interval(0, 0, 1, 2))


def test_statistics_taken_whole_equals_the_loose_keywords():
    """Interval, comparison, segment and sweep functions take a ``Statistics`` whole (``statistics=``) with the
    numbers of the same three keywords given loose, and refuse both at once, naming what to drop."""
    import rankgate
    from rankgate.errors import UsageError
    from rankgate.stats.bootstrap import metric_cis
    from rankgate.stats.options import Statistics
    from rankgate.stats.paired import compare
    from rankgate.stats.sweep import k_sweep

    gold = {f"q{i}": {f"d{i}": 1, f"e{i}": 2} for i in range(30)}
    base = {f"q{i}": [f"x{i}", f"d{i}", f"e{i}"] if i % 3 else [f"e{i}"] for i in range(30)}
    cand = {f"q{i}": [f"d{i}", f"x{i}"] for i in range(30)}
    a = rankgate.evaluate(gold, base, ["mrr", "ndcg@3"])
    b = rankgate.evaluate(gold, cand, ["mrr", "ndcg@3"])
    st = Statistics(seed=7, resamples=500, confidence=0.9)
    assert metric_cis(a, statistics=st) == metric_cis(a, seed=7, resamples=500, confidence=0.9)
    assert metric_cis(a, statistics=st) != metric_cis(a, seed=8, resamples=500, confidence=0.9)
    whole, loose = compare(a, b, statistics=st), compare(a, b, seed=7, resamples=500, confidence=0.9)
    assert whole.rows == loose.rows and len(whole.rows) == 2
    assert repr(k_sweep(gold, base, ["recall"], [1, 2], statistics=st)) == \
        repr(k_sweep(gold, base, ["recall"], [1, 2], seed=7, resamples=500, confidence=0.9))
    with pytest.raises(UsageError, match="metric_cis takes the bootstrap's options as statistics= or as keywords, "
                                         "not both: drop seed or set it in the Statistics"):
        metric_cis(a, statistics=st, seed=3)
    with pytest.raises(UsageError, match="'statistics' parameter of compare must be a rankgate Statistics"):
        compare(a, b, statistics={"seed": 7})


def test_sign_flip_byte_sums_count_what_the_products_count():
    """Above 128 differences a flip's sum is looked up per byte of signs (:func:`_byte_sums`), 5-10x
    faster than a product per difference; the p-value is the products' own, on shares with exact ties,
    on small and on wide values, and on a change that sits exactly on the observed sum."""
    from rankgate.stats import bootstrap as b

    rng = np.random.default_rng(3)
    cases = [rng.choice([-1.0, -0.5, 0.25, 0.5, 1 / 3, 1.0, 0.1], size=int(rng.integers(129, 3000))) for _ in range(12)]
    cases += [rng.normal(size=int(rng.integers(129, 3000))) * 10.0 ** int(rng.integers(-6, 3)) for _ in range(12)]
    cases.append(np.array([1.0, -1.0] * 100 + [0.5]))  # many flips reach the observed sum exactly
    for d in cases:
        total, tol = float(d.sum()), 1e-9 * float(np.abs(d).sum())
        reached = 0
        for raw in b._flip_blocks(np.random.default_rng(7), d.size, 1500):
            keep = np.unpackbits(raw, axis=1, count=d.size).astype(np.float64)
            reached += int((np.abs(2.0 * (keep * d).sum(axis=1) - total) >= abs(total) - tol).sum())
        assert b._sign_flip_p(d, np.random.default_rng(7), 1500) == (reached + 1) / 1501
