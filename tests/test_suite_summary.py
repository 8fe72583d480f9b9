"""The end of a test run says which suites did not run here, in one line each (not only under -rs)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from .conftest import ROOT, shared_path


def _pytest(*args: str, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k != "CI"}
    environ["RANKGATE_FULL_TESTS"] = "1"  # the skip lines are about the suites of the full tier
    environ.update(env)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args], cwd=ROOT, env=environ,
                          capture_output=True, text=True, timeout=300, check=False)


@pytest.mark.slow  # (the full tier: heavy, and what it guards is covered lighter by default)
def test_a_run_without_the_shared_data_says_the_conformance_suite_did_not_run(tmp_path):
    out = _pytest("tests/test_trec_conformance.py", RANKGATE_SHARED=str(tmp_path / "no-shared"))
    assert out.returncode == 0, out.stdout
    line = [x for x in out.stdout.splitlines() if "conformance suite did not run" in x]
    assert len(line) == 1, out.stdout
    assert str(tmp_path / "no-shared") in line[0] and "RANKGATE_SHARED" in line[0]


@pytest.mark.slow  # (the full tier: heavy, and what it guards is covered lighter by default)
def test_a_run_without_chromium_says_the_browser_tests_did_not_run(tmp_path):
    out = _pytest("tests/test_report_browser.py", RANKGATE_CHROMIUM=str(tmp_path / "no-chromium"))
    assert out.returncode == 0, out.stdout
    line = [x for x in out.stdout.splitlines() if "browser tests did not run" in x]
    assert len(line) == 1, out.stdout
    assert "apt-get install -y chromium" in line[0]


@pytest.mark.slow  # (the full tier: heavy, and what it guards is covered lighter by default)
def test_a_full_run_here_prints_neither_line():
    shared_path("fixtures", "edge_cases")
    out = _pytest("tests/test_trec_conformance.py", "-k", "edge")
    assert "did not run" not in out.stdout


def test_a_default_run_says_the_slow_tier_did_not_run():
    out = _pytest("tests/test_lint.py", RANKGATE_FULL_TESTS="0")
    assert out.returncode in (0, 5), out.stdout  # 5: every test deselected
    line = [x for x in out.stdout.splitlines() if "slow tier did not run" in x]
    assert len(line) == 1 and "RANKGATE_FULL_TESTS=1" in line[0], out.stdout
