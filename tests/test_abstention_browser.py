"""The abstention section of the HTML report, opened in headless Chromium (skips like the other
browser tests when Chromium or playwright is missing)."""

from __future__ import annotations

import pytest

from rankgate.cli.main import main

from .test_abstention import _files
from .test_report_browser import browser  # noqa: F401 - the shared Chromium fixture

pytestmark = pytest.mark.slow  # the full tier: browsers


def test_abstention_section_renders(browser, tmp_path):  # noqa: F811
    g, r = _files(tmp_path, n=300)
    ab = tmp_path / "abstention.yaml"
    assert main(["calibrate-abstention", "--gold", str(g), "--run", str(r), "--target-precision", "0.8",
                 "-o", str(ab)]) == 0
    html = tmp_path / "report.html"
    assert main(["report", "--gold", str(g), "--run", str(r), "--abstention", str(ab), "--resamples", "50",
                 "-o", str(html)]) == 0
    pg = browser.new_page(viewport={"width": 1000, "height": 800})
    errors = []
    pg.on("console", lambda m: errors.append(m.text) if m.type in ("error", "warning") else None)
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.goto(html.as_uri())
    pg.wait_for_load_state("load")
    section = pg.locator("#abstention")
    assert section.is_visible() and "Abstain when the top score is below" in section.inner_text()
    svg = section.locator("svg.chart").first
    box = svg.bounding_box()
    assert box and box["width"] > 300 and box["height"] > 100 and svg.locator("path").count() > 5
    assert pg.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    assert errors == []
    pg.close()
