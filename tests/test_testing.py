"""assert_retrieval: the check users put in their own test suites."""

from __future__ import annotations

from pathlib import Path

import pytest

from rankgate.errors import MetricSpecError, UsageError
from rankgate.testing import assert_retrieval, parse_expectation

DATA = Path(__file__).parent / "data" / "gate"
GOLD, BASE, CAND = (str(DATA / n) for n in ("gold.jsonl", "base.jsonl", "cand.jsonl"))


def test_passing_expectations_return_the_result():
    result = assert_retrieval(GOLD, BASE, "recall@5 >= 0.85", "mrr > 50%", "hit@5 <= 100%", resamples=200)
    assert result.summary("recall@5").mean == pytest.approx(0.9)


def test_a_failure_says_which_metric_value_interval_limit_and_worst_queries():
    with pytest.raises(AssertionError) as err:
        assert_retrieval(GOLD, CAND, "recall@5 >= 0.85", "mrr > 0.3", resamples=200)
    lines = str(err.value).splitlines()
    assert lines[0] == ("rankgate: 1 of 2 retrieval expectations failed "
                        "(42 gold queries evaluated, 1 missing from the run and scored 0)")
    assert lines[1].startswith("  FAIL recall@5 >= 0.85: mean 0.7250; 95% CI ")
    assert lines[1].endswith("; n=40")
    assert lines[2] == "       worst queries on recall@5:"
    assert lines[3] == "       q04: recall@5 = 0.0000, first relevant rank: none retrieved"
    assert len(lines) == 9  # header, the failure, five worst queries under a title, the pass
    assert lines[-1].startswith("  ok   mrr > 0.3: mean 0.4458")


def test_on_ci_lower_demands_convincing_evidence():
    assert_retrieval(GOLD, BASE, "recall@5 >= 0.75", resamples=300)
    with pytest.raises(AssertionError, match="95% CI lower end"):
        assert_retrieval(GOLD, BASE, "recall@5 >= 0.85", on="ci_lower", resamples=300)


def test_expectations_are_validated():
    assert parse_expectation("ndcg(gain=exp)@10 >= .7").metric == "ndcg(gain=exp)@10"
    assert parse_expectation("R@5 > 85%").limit == pytest.approx(0.85)
    with pytest.raises(UsageError, match="cannot read the expectation"):
        parse_expectation("recall@5 at least 0.8")
    with pytest.raises(MetricSpecError, match="did you mean 'recall@5'"):
        parse_expectation("recal@5 >= 0.8")
    with pytest.raises(UsageError, match="at least one expectation"):
        assert_retrieval(GOLD, BASE)


def test_a_failure_in_pytest_shows_the_message_not_the_helpers_source(tmp_path):
    """pytest prints the test's own line and the message; the helper's source stays hidden."""
    import subprocess
    import sys

    (tmp_path / "test_user.py").write_text(
        "from rankgate.testing import assert_retrieval\n\n"
        "def test_retriever():\n"
        f"    assert_retrieval({GOLD!r}, {CAND!r}, 'recall@5 >= 0.85', resamples=50)\n")
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path / "test_user.py")],
                         capture_output=True, text=True, cwd=tmp_path, timeout=120, check=False)
    text = out.stdout
    assert out.returncode == 1, text
    assert "rankgate: 1 of 1 retrieval expectations failed" in text
    assert "def assert_retrieval" not in text and "metric_cis(" not in text
    assert len(text.splitlines()) < 35, text
