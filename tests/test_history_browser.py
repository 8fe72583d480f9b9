"""The history dashboard as a person sees it: opened from disk in headless Chromium (Debian's, through playwright;
see docs/report.md, "CI setup"), on the store of tests/history_store.py."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from rankgate.cli.main import main

from . import history_store as hs
from .conftest import NO_BROWSER

pytestmark = pytest.mark.slow  # the full tier: browsers

CHROMIUM = os.environ.get("RANKGATE_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run"]


@pytest.fixture(scope="module")
def dashboard(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from rankgate.demo.pipeline import run_demo

    base = tmp_path_factory.mktemp("history")
    run_demo(base / "demo", seed=0)
    hs.record(hs.build(base / "demo", base / "days"), base / "store")
    page = base / "dashboard.html"
    assert main(["history", "report", "--store", str(base / "store"), "-o", str(page)]) == 0
    return page


@pytest.fixture(scope="module")
def page(dashboard: Path):
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("the playwright package is not installed: the browser tests must run in CI", pytrace=False)
        pytest.skip(f"{NO_BROWSER}: the playwright package is not installed")
    if not (os.path.exists(CHROMIUM) or shutil.which(CHROMIUM)):
        if os.environ.get("CI"):
            pytest.fail(f"Chromium is not at {CHROMIUM}: the browser tests must run in CI", pytrace=False)
        pytest.skip(f"{NO_BROWSER}: Chromium is not at {CHROMIUM}")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        pg = browser.new_page(viewport={"width": 1366, "height": 900})
        errors: list[str] = []
        requests: list[str] = []
        pg.on("console", lambda m: errors.append(m.text) if m.type in ("error", "warning") else None)
        pg.on("pageerror", lambda exc: errors.append(str(exc)))
        pg.on("request", lambda r: requests.append(r.url))
        pg.goto(dashboard.as_uri())
        pg.wait_for_load_state("load")
        pg.errors, pg.requests = errors, requests  # type: ignore[attr-defined]
        yield pg
        browser.close()


def test_opens_offline_with_no_console_error(page, dashboard):
    assert page.errors == []
    assert page.requests == [dashboard.as_uri()]
    assert page.title() == "rankgate history"


def test_shows_the_open_breach_under_its_owner(page):
    owner = page.locator('.owner[data-owner="search-quality"]')
    assert owner.is_visible()
    breach = owner.locator("tr.breach")
    assert breach.count() == 1
    assert "recall_at_5" in breach.inner_text() and "2026-05-12 10:00" in breach.inner_text()
    assert "3 d 0 h" in owner.inner_text() and "over 48 h" in owner.inner_text()
    assert "24 h" in page.locator('.owner[data-owner="ranking-team"]').inner_text()


def test_the_version_markers_and_the_failing_outcomes_are_drawn(page):
    fig = page.locator('figure.trend[data-metric="recall@5"][data-scope="all queries"]')
    assert fig.is_visible()
    box = fig.locator("svg").bounding_box()
    assert box is not None and box["width"] > 300 and box["height"] > 80
    markers = fig.locator("line.version-marker")
    assert markers.count() == 2
    titles = {markers.nth(i).locator("title").text_content().split(" changed")[0] for i in range(2)}
    assert titles == {"gold set", "corpus"}
    assert fig.locator("circle.outcome-fail").count() == len(hs.RECALL_BREACH)
    assert fig.locator("polygon.ci").count() == 1 and fig.locator("line.limit").count() == 1
