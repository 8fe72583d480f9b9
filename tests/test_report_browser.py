"""The HTML report as a person sees it: opened from disk in headless Chromium.

Needs Debian's ``chromium`` and the ``playwright`` Python package (never ``playwright install``); see
docs/report.md, "CI setup". Without them the tests skip, except in CI (``CI`` set), where they fail.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from rankgate.render.html import write_report

from .conftest import NO_BROWSER, SAVED

pytestmark = pytest.mark.slow  # the full tier: browsers

DATA = Path(__file__).parent / "data" / "report"
ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = Path(os.environ.get("RANKGATE_ARTIFACTS") or ROOT / "test-artifacts")
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
                 resamples=300)
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
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    out = ARTIFACTS / "report.png"
    page.screenshot(path=str(out), full_page=True)
    SAVED.append(out)
    assert out.stat().st_size > 10_000


@pytest.fixture(scope="module")
def demo_report(tmp_path_factory):
    """The demo's report: three languages, a failing and a warning gate, a baseline, 144 queries."""
    from rankgate.demo import run_demo

    out = tmp_path_factory.mktemp("demo") / "demo"
    run_demo(out, seed=0)
    return out / "report.html"


# What overflows: the page itself, and any table's box (its scrolling container) reaching past the page.
OVERFLOW = """() => {
  const page = document.documentElement;
  const boxes = Array.from(document.querySelectorAll('table')).map(t => {
    const box = t.parentElement, r = box.getBoundingClientRect();
    return {section: (t.closest('section') || {}).id || '', cls: t.className, table: Math.ceil(t.scrollWidth),
            box: box.clientWidth, scrolls: box.scrollWidth > box.clientWidth + 1, right: Math.ceil(r.right),
            scrollable: getComputedStyle(box).overflowX === 'auto'};
  });
  return {scrollWidth: page.scrollWidth, clientWidth: page.clientWidth, boxes: boxes};
}"""


@pytest.mark.parametrize("width", [1300, 800])
@pytest.mark.parametrize("which", ["fixture", "demo"])
def test_no_table_overflows_the_page(browser, report_file, demo_report, width, which):
    path = report_file if which == "fixture" else demo_report
    pg = browser.new_page(viewport={"width": width, "height": 900})
    try:
        pg.goto(path.as_uri())
        pg.wait_for_load_state("load")
        got = pg.evaluate(OVERFLOW)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shot = ARTIFACTS / f"report-{which}-{width}px.png"
        pg.screenshot(path=str(shot), full_page=True)
        SAVED.append(shot)
    finally:
        pg.close()
    assert got["scrollWidth"] <= got["clientWidth"], f"the page scrolls sideways at {width} px: {got['scrollWidth']}"
    for b in got["boxes"]:
        assert b["right"] <= got["clientWidth"], f"a table's box ends past the page at {width} px: {b}"
        assert not b["scrolls"] or b["scrollable"], f"a table is cut off at {width} px: {b}"
        if width >= 1300:
            assert not b["scrolls"], f"at {width} px every table fits its box: {b}"


def test_demo_report_reads_right(browser, demo_report):
    """Colour only what fails, one naming of the runs, and say why a clear change is "not significant"."""
    pg = browser.new_page(viewport={"width": 1300, "height": 900})
    try:
        pg.goto(demo_report.as_uri())
        rows = pg.locator('#segments table.segments').first.locator('tbody tr')
        classes = {r.locator("td").first.inner_text(): r.get_attribute("class") for r in rows.all()}
        assert classes == {"de": "fail", "en": None, "es": None}  # the gate fails German only
        legends = pg.locator("#sweep svg text").all_text_contents()
        assert "candidate.jsonl" in legends and "baseline.jsonl" in legends
        assert not any("runs/" in t for t in legends)
        panel = pg.locator("#panel").inner_text()
        assert "not significant after correcting for" in panel and "Holm-corrected across the" in panel
        assert pg.locator("#gate td.warnword").all_inner_texts() == ["warn"]
        assert ": nothing retrieved." not in pg.locator("body").inner_text()
    finally:
        pg.close()
