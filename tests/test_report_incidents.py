"""The HTML report's "Incidents" view: an incident turned into a regression case (``incident new``,
``incident add``) shows in the report of the demo's baseline run as failing, and in the report of a
fixed run (superseded chunks filtered out) as passing; cases are counted by failure link, lifecycle
stage and month; the section fits the page at 800 and 1300 px in Chromium."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rankgate.io import load_gold
from rankgate.scoring.engine import evaluate
from rankgate.render.html import write_report
from rankgate.render.incidents import incident_view

from .conftest import SAVED
from .test_gold import DEMO, _lines, _write
from .test_incident import _fill


@pytest.fixture(scope="module")
def case(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The demo gold set with the incident of tests/test_incident.py added, a second incident case from
    another month, the baseline run and the fixed run."""
    tmp = tmp_path_factory.mktemp("incidents")
    from rankgate.cli.main import main

    rows = _lines(DEMO / "gold.jsonl")
    rows.append({"query_id": "inc-older", "query": "how long do invitations last",
                 "relevant_chunks": [{"chunk_id": "doc_invites#c2", "grade": 3}], "source_of_query": "incident",
                 "incident_id": "inc-older", "failure_link": "candidate retrieval", "lifecycle_stage": "discover",
                 "created": "2026-04-20", "tags": {"lang": "en"}})
    gold = _write(tmp / "gold.jsonl", rows)

    trace = tmp / "trace.json"
    from .test_incident import TRACE

    trace.write_text(json.dumps(TRACE), encoding="utf-8")
    pm = tmp / "postmortem.md"
    assert main(["incident", "new", "--trace", str(trace), "--gold", str(gold), "-o", str(pm)]) == 0
    pm.write_text(_fill(pm.read_text(encoding="utf-8")), encoding="utf-8")
    assert main(["incident", "add", str(pm), "--gold", str(gold), "--corpus", str(DEMO / "corpus.jsonl")]) == 0
    run = tmp / "baseline.jsonl"
    assert main(["retrieve", "--corpus", str(DEMO / "corpus.jsonl"), "--gold", str(gold), "--retriever",
                 "bm25-multilingual", "-o", str(run), "--no-latency", "--texts", "none"]) == 0
    status = {r["chunk_id"]: r["status"] for r in _lines(DEMO / "corpus.jsonl")}
    fixed = _write(tmp / "fixed.jsonl", [{**r, "topk": [h for h in r["topk"] if status[h["chunk_id"]] == "current"]}
                                         for r in _lines(run)])
    return {"gold": gold, "baseline": run, "fixed": fixed, "dir": tmp}


def test_the_view_counts_cases_and_says_which_still_pass(case: dict[str, Path]) -> None:
    gold = load_gold(str(case["gold"]))
    views = {}
    for name in ("baseline", "fixed"):
        result = evaluate(gold, str(case[name]), ["recall@5", "forbidden@5"])
        views[name] = incident_view(gold, result, 5)
    base, fixed = views["baseline"], views["fixed"]
    assert base is not None and fixed is not None
    assert len(base.cases) == 7  # five demo cases, the added incident, the older one
    new = next(c for c in base.cases if c.incident_id == "inc-req-7f3a")
    assert (new.failure_link, new.lifecycle_stage, new.created) == ("corpus", "retire", "2026-06-03")
    assert new.forbidden == 1.0 and not new.passes  # the baseline still serves the 2023 price list
    assert next(c for c in fixed.cases if c.incident_id == "inc-req-7f3a").passes
    assert base.cases[0].incident_id == "inc-req-7f3a"  # newest first
    links = {name: (n, bad) for name, n, bad in base.by("failure_link")}
    assert links["corpus"] == (1, 1) and links["candidate retrieval"][0] == 1 and links["(not set)"][0] == 5
    assert [name for name, _, _ in base.by("lifecycle_stage")][:2] == ["discover", "retire"]  # template order
    months = {m: (sum(c.values()), bad) for m, c, bad in base.by_month()}
    assert months["2026-06"] == (1, 1) and months["2026-04"][0] == 6
    assert list(months) == sorted(months)
    # no incident cases: no view
    plain = load_gold(str(DEMO / "gold.jsonl"))
    rows = [r for r in _lines(DEMO / "gold.jsonl") if r.get("source_of_query") != "incident"]
    none = load_gold(str(_write(case["dir"] / "no_incidents.jsonl", rows)))
    assert incident_view(none, evaluate(none, str(case["fixed"]), ["recall@5"]), 5) is None
    assert incident_view(plain, evaluate(plain, str(case["fixed"]), ["recall@5"]), 5) is not None


@pytest.mark.slow  # (the full tier: heavy, and what it guards is covered lighter by default)
def test_report_section_for_baseline_and_fixed_runs(case: dict[str, Path]) -> None:
    html = {}
    for name in ("baseline", "fixed"):
        path = case["dir"] / f"report-{name}.html"
        write_report(str(path), str(case["gold"]), str(case[name]), resamples=200)
        html[name] = path.read_text(encoding="utf-8")
    for text in html.values():
        assert '<section id="incidents"><h2>Incidents</h2>' in text and '<a href="#incidents">Incidents</a>' in text
    base = html["baseline"].split('<section id="incidents">')[1].split("</section>")[0]
    fixed = html["fixed"].split('<section id="incidents">')[1].split("</section>")[0]
    row = base.split('data-query-id="inc-req-7f3a"')[1].split("</tr>")[0]
    assert 'class="bad"' in row and "fails" in row and "corpus" in row and "retire" in row
    assert "fails" not in fixed.split('data-query-id="inc-req-7f3a"')[1].split("</tr>")[0]
    assert "7 regression cases from incidents" in base
    # a report of a gold set without incident cases has no such section
    rows = [r for r in _lines(DEMO / "gold.jsonl") if r.get("source_of_query") != "incident"]
    gold = _write(case["dir"] / "plain.jsonl", rows)
    path = case["dir"] / "plain.html"
    write_report(str(path), str(gold), str(case["fixed"]), resamples=100)
    assert 'id="incidents"' not in path.read_text(encoding="utf-8")


@pytest.mark.parametrize("width", [1300, 800])
@pytest.mark.slow  # the full tier: browsers
def test_incidents_section_in_chromium(case: dict[str, Path], width: int) -> None:
    from .test_report_browser import ARGS, ARTIFACTS, CHROMIUM, OVERFLOW, _unavailable

    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("the playwright package is not installed (pip install playwright)")
    import os
    import shutil

    if not (os.path.exists(CHROMIUM) or shutil.which(CHROMIUM)):
        _unavailable(f"Chromium is not at {CHROMIUM} (apt-get install -y chromium)")
    path = case["dir"] / "report-shot.html"
    if not path.exists():
        write_report(str(path), str(case["gold"]), str(case["baseline"]), resamples=200)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            pg = browser.new_page(viewport={"width": width, "height": 900})
            errors: list[str] = []
            pg.on("pageerror", lambda exc: errors.append(str(exc)))
            pg.goto(path.as_uri())
            pg.wait_for_load_state("load")
            section = pg.locator("#incidents")
            assert section.is_visible()
            assert section.locator('tr[data-query-id="inc-req-7f3a"] .tag.bad').inner_text() == "fails"
            got = pg.evaluate(OVERFLOW)
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            shot = ARTIFACTS / f"report-incidents-{width}px.png"
            section.screenshot(path=str(shot))
            SAVED.append(shot)
        finally:
            browser.close()
    assert errors == []
    assert got["scrollWidth"] <= got["clientWidth"], f"the page scrolls sideways at {width} px"
    for b in got["boxes"]:
        if b["section"] != "incidents":
            continue
        assert b["right"] <= got["clientWidth"] and (not b["scrolls"] or b["scrollable"]), b
        if width >= 1300:
            assert not b["scrolls"], f"at {width} px the incidents tables fit: {b}"
