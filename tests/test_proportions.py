"""Wilson and Clopper–Pearson intervals and the normal quantile, against scipy/statsmodels (tests only)."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rankgate.errors import UsageError
from rankgate.stats.bootstrap import clopper_pearson, normal_quantile, wilson_interval

from .conftest import examples

scipy_stats = pytest.importorskip("scipy.stats", reason="install the test extra: pip install '.[test]'")
proportion = pytest.importorskip("statsmodels.stats.proportion", reason="install the test extra: pip install '.[test]'")


def test_wilson_by_hand():
    # k=8, n=10, 95%: z = 1.959963984540054; centre = (8 + z²/2)/(10 + z²); hand-computed to 1e-12
    lo, hi = wilson_interval(8, 10)
    assert lo == pytest.approx(0.4901624715, abs=1e-9)
    assert hi == pytest.approx(0.9433178485, abs=1e-9)


@settings(max_examples=examples(200), deadline=None, derandomize=True)
@given(st.integers(1, 5000), st.data(), st.sampled_from([0.8, 0.9, 0.95, 0.99]))
def test_wilson_matches_statsmodels(n, data, conf):
    k = data.draw(st.integers(0, n))
    lo, hi = wilson_interval(k, n, confidence=conf)
    elo, ehi = proportion.proportion_confint(k, n, alpha=1 - conf, method="wilson")
    assert lo == pytest.approx(max(0.0, elo), abs=1e-12)
    assert hi == pytest.approx(min(1.0, ehi), abs=1e-12)


@settings(max_examples=examples(200), deadline=None, derandomize=True)
@given(st.integers(1, 20000), st.data(), st.sampled_from([0.9, 0.95, 0.99]), st.sampled_from(["lower", "upper", "two"]))
def test_clopper_pearson_matches_scipy(n, data, conf, side):
    k = data.draw(st.integers(0, n))
    lo, hi = clopper_pearson(k, n, confidence=conf, side=side)
    alpha = (1 - conf) / (2 if side == "two" else 1)
    elo = 0.0 if k == 0 or side == "upper" else scipy_stats.beta.ppf(alpha, k, n - k + 1)
    ehi = 1.0 if k == n or side == "lower" else scipy_stats.beta.ppf(1 - alpha, k + 1, n - k)
    assert lo == pytest.approx(elo, rel=1e-9, abs=1e-14)
    assert hi == pytest.approx(ehi, rel=1e-9, abs=1e-14)


def test_degenerate_and_bad_input():
    assert all(math.isnan(x) for x in wilson_interval(0, 0))
    assert all(math.isnan(x) for x in clopper_pearson(0, 0))
    assert clopper_pearson(0, 10, side="lower") == (0.0, 1.0)
    assert clopper_pearson(10, 10)[1] == 1.0
    for bad in [(-1, 3), (4, 3), (1.5, 3), (True, 3)]:
        with pytest.raises(UsageError):
            wilson_interval(*bad)
    with pytest.raises(UsageError):
        clopper_pearson(1, 3, side="left")
    with pytest.raises(UsageError):
        wilson_interval(1, 3, confidence=1.0)
    with pytest.raises(UsageError):
        normal_quantile(0.0)
    assert normal_quantile(0.975) == pytest.approx(scipy_stats.norm.ppf(0.975), rel=1e-15)
