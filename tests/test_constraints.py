"""Parameters declared once (rankgate._util.constraints): one sentence per bound, at every boundary."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rankgate._util.constraints import CONFIDENCE, K, MAX_RESAMPLES, RESAMPLES, SEED, Param, check, describe
from rankgate.errors import UsageError

from .conftest import examples


def _refusal(fn) -> str:
    with pytest.raises(UsageError) as info:
        fn()
    return str(info.value)


def test_the_message_shape() -> None:
    assert _refusal(lambda: check(CONFIDENCE, 1.5, caller="metric_cis")) == (
        "The 'confidence' parameter of metric_cis must be a float in the range (0, 1); got 1.5.")
    # a request's field: named as the field (the command line names it by its option, rankgate.cli.options.FLAGS)
    assert _refusal(lambda: check(CONFIDENCE, 0, field="confidence")) == (
        "confidence must be a float in the range (0, 1); got 0.")
    assert _refusal(lambda: check(CONFIDENCE, "0.5", caller="Statistics", field="confidence")) == (
        "The 'confidence' parameter of Statistics must be a float in the range (0, 1); got '0.5'.")
    assert _refusal(lambda: check(RESAMPLES, -1, caller="bootstrap_ci", name="resamples")) == (
        "The 'resamples' parameter of bootstrap_ci must be an integer between 0 and 1,000,000; got -1.")
    assert _refusal(lambda: check(SEED, -3)) == "The 'seed' parameter must be an integer >= 0; got -3."
    assert _refusal(lambda: check(RESAMPLES, 10**7, field="resamples", note="too much")) == (
        "resamples must be an integer between 0 and 1,000,000; got 10,000,000 (too much).")


def test_describe_covers_every_kind_of_bound() -> None:
    assert describe(Param("gain", str, "linear", choices=("linear", "exp"))) == "one of 'linear', 'exp'"
    assert describe(Param("x", float, 0.0)) == "a float"
    assert describe(Param("x", float, 0.0, maximum=2.5)) == "a float in the range (-inf, 2.5]"
    assert describe(K) == "an integer between 1 and 1,000,000,000"
    assert describe(Param("x", int, 0, maximum=3)) == "an integer <= 3"
    assert describe(Param("x", int, 1, minimum=0, maximum=3, exclusive=True)) == "an integer in the range (0, 3)"


@pytest.mark.parametrize("value", [True, "0.9", None, float("nan"), 0.0, 1.0, -0.1, 7])
def test_confidence_refuses_what_is_not_a_level(value) -> None:
    with pytest.raises(UsageError, match="must be a float in the range"):
        check(CONFIDENCE, value)


@pytest.mark.parametrize("value", [0.5, 1e-9, np.float64(0.99), np.float32(0.5)])
def test_confidence_accepts_levels_of_any_float_type(value) -> None:
    assert check(CONFIDENCE, value) == value


def test_integers_accept_numpy_integers_and_refuse_bools_and_floats() -> None:
    assert check(RESAMPLES, np.int64(10)) == 10
    assert check(RESAMPLES, MAX_RESAMPLES) == MAX_RESAMPLES
    for bad in (True, 2.0, MAX_RESAMPLES + 1):
        with pytest.raises(UsageError, match="'resamples'"):
            check(RESAMPLES, bad)


def _library_calls():
    from rankgate.stats.agreement import kappa_ci, ppi_mean
    from rankgate.stats.power import min_detectable_drop, min_detectable_drop_bootstrap
    from rankgate.stats.bootstrap import (
        bootstrap_ci,
        bootstrap_quantile_ci,
        clopper_pearson,
        exact_quantile_ci,
        newcombe_interval,
        paired_quantile_change_ci,
        wilson_interval,
    )

    return {
        "bootstrap_ci": lambda c: bootstrap_ci([1.0, 2.0], rng=0, resamples=10, confidence=c),
        "wilson_interval": lambda c: wilson_interval(1, 2, confidence=c),
        "newcombe_interval": lambda c: newcombe_interval(1, 2, 1, 3, confidence=c),
        "clopper_pearson": lambda c: clopper_pearson(1, 2, confidence=c),
        "bootstrap_quantile_ci": lambda c: bootstrap_quantile_ci([1.0, 2.0], 0.5, rng=0, resamples=10, confidence=c),
        "paired_quantile_change_ci": lambda c: paired_quantile_change_ci([1.0, 2.0], [1.0, 3.0], 0.5, rng=0,
                                                                         resamples=10, confidence=c),
        "exact_quantile_ci": lambda c: exact_quantile_ci([1.0, 2.0], 0.5, confidence=c),
        "kappa_ci": lambda c: kappa_ci([0, 1, 1], [0, 1, 0], confidence=c),
        "ppi_mean": lambda c: ppi_mean([0.5], [0.5], [1.0], confidence=c),
        "min_detectable_drop": lambda c: min_detectable_drop(10, confidence=c),
        "min_detectable_drop_bootstrap": lambda c: min_detectable_drop_bootstrap([0.0, 1.0], confidence=c),
    }


@pytest.mark.parametrize("caller", sorted(_library_calls()))
def test_every_library_check_of_confidence_says_the_same_sentence(caller) -> None:
    call = _library_calls()[caller]
    call(0.9)  # a valid level passes
    got = _refusal(lambda: call(1.5))
    assert got == f"The 'confidence' parameter of {caller} must be a float in the range (0, 1); got 1.5."


def test_resamples_and_seed_are_checked_where_they_were_not() -> None:
    from rankgate.stats.agreement import kappa_ci

    assert "'seed' parameter of kappa_ci" in _refusal(lambda: kappa_ci([0, 1], [0, 1], seed=-1))
    assert "'resamples' parameter of kappa_ci" in _refusal(lambda: kappa_ci([0, 1], [0, 1], resamples=-5))


def test_engine_k_uses_the_declared_bound() -> None:
    from rankgate.scoring.engine import evaluate

    msg = _refusal(lambda: evaluate({"q": {"a": 1}}, {"q": {"a": 1.0}}, "recall", k=0))
    assert msg == "The 'k' parameter of evaluate must be an integer between 1 and 1,000,000,000; got 0."


def test_metric_parameters_are_the_same_declaration() -> None:
    from rankgate.metrics import Param as MetricParam
    from rankgate.metrics.user_models import PERSISTENCE

    assert MetricParam is Param and isinstance(PERSISTENCE, Param)
    assert not PERSISTENCE.allows(1.0) and PERSISTENCE.allows(0.5)


@pytest.mark.parametrize("argv, option", [
    (["--confidence", "1.5"], "--confidence"),
    (["--resamples", "-1"], "--resamples"),
    (["--seed", "-1"], "--seed"),
])
def test_cli_options_use_the_same_sentence(tmp_path, capsys, argv, option) -> None:
    from rankgate.cli.main import main

    gold = tmp_path / "gold.jsonl"
    gold.write_text('{"query_id": "q1", "relevant_chunks": ["a"]}\n', encoding="utf-8")
    assert main(["evaluate", "--gold", str(gold), "--run", str(gold), *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert re.fullmatch(rf"rankgate evaluate: error: {option} must be an? \w+ (in the range|between|>=) .*; got -?[\d.]+\.", err), err


@settings(max_examples=examples(100), deadline=None)
@given(low=st.integers(-50, 50), width=st.integers(0, 50), exclusive=st.booleans(), value=st.integers(-120, 120))
def test_check_accepts_exactly_the_declared_range(low, width, exclusive, value) -> None:
    p = Param("n", int, low, minimum=low, maximum=low + width, exclusive=exclusive)
    inside = low < value < low + width if exclusive else low <= value <= low + width
    if inside:
        assert check(p, value) == value
    else:
        with pytest.raises(UsageError, match=rf"^The 'n' parameter must be an integer .*; got {value}\.$"):
            check(p, value)


@settings(max_examples=examples(100), deadline=None)
@given(value=st.floats(allow_nan=True, allow_infinity=True))
def test_confidence_is_exactly_the_open_unit_interval(value) -> None:
    if 0.0 < value < 1.0:
        assert check(CONFIDENCE, value) == value
    else:
        with pytest.raises(UsageError):
            check(CONFIDENCE, value)
