"""The HTML trace report as a person sees it: opened from disk in headless Chromium (skips without it,
fails in CI, like tests/test_report_browser.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from rankgate.corpus import load_manifest
from rankgate.gating.config import load_monitors
from rankgate.render.traces_html import trace_report_html
from rankgate.traces import read_traces
from rankgate.traces.monitors import check_monitors
from rankgate.traces.signals import summarize_traces

from .conftest import SAVED
from .test_report_browser import ARTIFACTS, browser  # noqa: F401 - the shared Chromium fixture

pytestmark = pytest.mark.slow  # the full tier: browsers

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))


@pytest.fixture(scope="module")
def report_file(tmp_path_factory):
    from trace_gen import Spec, generate

    out = tmp_path_factory.mktemp("tr")
    truth = generate(out, Spec(days=9, per_day=600, seed=1), formats=("parquet",))
    monitors = load_monitors(None)
    summary = summarize_traces(read_traces(str(out / truth["files"]["parquet"][0])), by=monitors.segment_fields,
                               threshold=0.3, manifest=load_manifest(str(out / "corpus.jsonl")))
    outcome = check_monitors(summary, monitors)
    path = out / "trace_report.html"
    path.write_text(trace_report_html(summary, outcome, monitors), encoding="utf-8")
    return path, outcome


@pytest.fixture(scope="module")
def page(browser, report_file):  # noqa: F811
    pg = browser.new_page(viewport={"width": 1366, "height": 900})
    errors, requests = [], []
    pg.on("console", lambda m: errors.append(m.text) if m.type in ("error", "warning") else None)
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.on("request", lambda r: requests.append(r.url))
    pg.goto(report_file[0].as_uri())
    pg.wait_for_load_state("load")
    pg.errors, pg.requests = errors, requests
    yield pg
    pg.close()


def test_loads_with_no_console_errors_and_no_network(page, report_file):
    assert page.errors == []
    assert page.requests == [report_file[0].as_uri()]
    assert page.title() == "rankgate trace report"


def test_flags_table_and_red_dots_match_the_monitors(page, report_file):
    outcome = report_file[1]
    assert outcome.flags
    assert page.locator("#flags tbody tr").count() == len(outcome.flags)
    for f in outcome.flags:
        fig = page.locator(f'#series figure[data-signal="{f.signal}"][data-segment="{f.segment}"]')
        assert fig.count() == 1, (f.signal, f.segment)
        assert fig.locator("circle.flagged").count() >= 1
        box = fig.locator("svg").bounding_box()
        assert box and box["width"] > 300 and box["height"] > 80


def test_sections_present_and_page_does_not_scroll_sideways(page):
    for section in ("#latency", "#unstable", "#sources", "#low", "#stale"):
        assert page.locator(section).is_visible(), section
    assert page.locator("#unstable tbody tr").first.locator("ol.ids").count() == 2
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def test_screenshot(page):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    out = ARTIFACTS / "trace_report.png"
    page.screenshot(path=str(out), full_page=True)
    SAVED.append(out)
    assert out.stat().st_size > 10_000
