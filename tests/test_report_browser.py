"""The HTML report as a person sees it: opened from disk in headless Chromium.

Needs Debian's ``chromium`` and the ``playwright`` Python package (never ``playwright install``); see
docs/report.md, "CI setup". Without them the tests skip, except in CI (``CI`` set), where they fail.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from rankgate.report.html import write_report

from .conftest import NO_BROWSER

DATA = Path(__file__).parent / "data" / "report"
ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = os.environ.get("RANKGATE_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run"]


def _unavailable(why: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{why}: the browser tests must run in CI (see docs/report.md, 'CI setup')", pytrace=False)
    pytest.skip(f"{NO_BROWSER}: {why}; install it to run them (docs/report.md, 'CI setup')")


@pytest.fixture(scope="module")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("the playwright package is not installed (pip install playwright)")
    if not (os.path.exists(CHROMIUM) or shutil.which(CHROMIUM)):
        _unavailable(f"Chromium is not at {CHROMIUM} (apt-get install -y chromium)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def report_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("report") / "report.html"
    write_report(str(path), str(DATA / "gold.jsonl"), str(DATA / "run.jsonl"), baseline=str(DATA / "base.jsonl"),
                 lexical=str(DATA / "bm25.jsonl"), by=["lang", "intent"], config=str(DATA / "ship-criteria.yaml"),
                 n_resamples=300)
    return path


@pytest.fixture(scope="module")
def page(browser, report_file):
    pg = browser.new_page(viewport={"width": 1366, "height": 900})
    errors, requests = [], []
    pg.on("console", lambda m: errors.append(m.text) if m.type in ("error", "warning") else None)
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.on("request", lambda r: requests.append(r.url))
    pg.goto(report_file.as_uri())
    pg.wait_for_load_state("load")
    pg.errors, pg.requests = errors, requests
    yield pg
    pg.close()


def test_loads_with_no_console_errors_and_no_network(page, report_file):
    assert page.errors == []
    assert page.requests == [report_file.as_uri()]
    assert page.title().startswith("Retrieval report")


def test_charts_render(page):
    for section in ("#sweep", "#segments"):
        svg = page.locator(f"{section} svg.chart").first
        box = svg.bounding_box()
        assert box and box["width"] > 300 and box["height"] > 100
        assert svg.locator("path").count() > 10  # curves, axes, markers were drawn


def test_segment_table_sorts_on_click(page):
    table = page.locator('#segments table.sortable[data-field="intent"]')
    labels = lambda: table.locator("tbody tr td:first-child").all_inner_texts()
    recall = table.locator("thead th").nth(2)  # recall@5
    recall.click()
    up = [float(v) for v in table.locator("tbody tr td:nth-child(3)").evaluate_all("els => els.map(e => e.dataset.v)")]
    assert up == sorted(up)
    recall.click()
    down = [float(v) for v in table.locator("tbody tr td:nth-child(3)").evaluate_all("els => els.map(e => e.dataset.v)")]
    assert down == sorted(down, reverse=True)
    table.locator("thead th").first.click()
    assert labels() == sorted(labels())


def test_top_misses_list_the_expected_queries(page):
    ids = page.locator("#misses details.miss").evaluate_all("els => els.map(e => e.dataset.queryId)")
    assert ids == ["q03", "q09", "q10"]
    first = page.locator('#misses details.miss[data-query-id="q03"]')
    assert "which plan has sso" in first.inner_text()
    assert first.locator(".lexical tr.rel").count() == 1  # the lexical run has it, highlighted


def test_diagnosis_and_gate_are_visible(page):
    assert page.locator("#verdict").inner_text() == "Gate failed"
    assert page.locator('#diagnosis .finding[data-rule="forbidden"]').is_visible()


def test_screenshot(page):
    ARTIFACTS.mkdir(exist_ok=True)
    out = ARTIFACTS / "report.png"
    page.screenshot(path=str(out), full_page=True)
    assert out.stat().st_size > 10_000
