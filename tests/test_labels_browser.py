"""``rankgate label serve`` as people use it: a real server (``python -m rankgate label serve``) driven by headless
Chromium, by keyboard.

* two annotators label a 30-item queue with overlap; the server is killed (SIGKILL) half-way and started again; they
  finish; the export holds every label they gave, with its provenance, and ``label agreement``'s κ is the one computed
  here by hand from the labels given;
* in the browse view, a grade pressed on an unjudged item of the candidate's top k reaches ``label export`` and, with
  ``--into-gold``, the gold set;
* script and HTML payloads in every text (queue, guide, annotator name, gold set, runs) run nowhere, and the page
  makes no request to anywhere but the server;
* a request without the session token is refused.

Needs Debian's ``chromium``, the ``playwright`` package and the ``label`` extra; without them the tests skip (in CI,
where ``CI`` is set, a missing browser fails them). Screenshots go to test-artifacts/ (docs/img/ holds copies).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from rankgate.cli.main import main

from .conftest import NO_BROWSER, SAVED
from .helpers import write_jsonl
from .test_labels import need_label_extra

pytestmark = pytest.mark.slow  # the full tier: browsers and servers

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data" / "report"
ARTIFACTS = Path(os.environ.get("RANKGATE_ARTIFACTS") or ROOT / "test-artifacts")
CHROMIUM = os.environ.get("RANKGATE_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run"]
PAYLOAD = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=1">'


def _unavailable(why: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{why}: the browser tests must run in CI (see docs/report.md, 'CI setup')", pytrace=False)
    pytest.skip(f"{NO_BROWSER}: {why}; install it to run them (docs/report.md, 'CI setup')")


@pytest.fixture(scope="module")
def browser():
    need_label_extra()
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


class Server:
    """``rankgate label serve ARGS --port 0`` in a process of its own; :attr:`url` is the address it printed."""

    def __init__(self, *args: object) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "rankgate", "label", "serve", *map(str, args), "--port", "0"],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        if not line.startswith("open "):
            self.proc.kill()
            raise AssertionError(f"the server did not start: {line}{self.proc.stderr.read() if self.proc.stderr else ''}")
        self.url = line.split()[1]
        self.origin = self.url.split("/?")[0]

    def kill(self) -> None:
        self.proc.kill()  # SIGKILL: no clean-up of any kind
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=15)


def _watch(page) -> dict[str, list[str]]:
    seen: dict[str, list[str]] = {"errors": [], "requests": []}
    page.on("console", lambda m: seen["errors"].append(m.text) if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda exc: seen["errors"].append(str(exc)))
    page.on("request", lambda r: seen["requests"].append(r.url))
    return seen


def _saved(page, count: int) -> None:
    page.wait_for_function("n => Number(document.body.dataset.saved || 0) >= n", arg=count, timeout=10_000)


def _card(page) -> tuple[str, str] | None:
    if page.locator("section.done").count():
        return None
    codes = page.locator("article.card .meta code").all_inner_texts()
    return codes[0], codes[1]


def _grade(who: str, query_id: str, item_id: str) -> int:
    """What each annotator gives an item: bob disagrees with alice on every third item."""
    n = int(item_id[1:])
    alice = n % 3
    return alice if who == "alice" or n % 3 == 0 else (alice + 1) % 3


def _weighted_kappa(pairs: list[tuple[int, int]], k: int = 3) -> float:
    """Linear-weighted Cohen's κ, written out: p_o = mean agreement weight; p_e = Σ_i Σ_j w_ij·p_a(i)·p_b(j)."""
    n = len(pairs)
    w = [[1 - abs(i - j) / (k - 1) for j in range(k)] for i in range(k)]
    p_o = sum(w[a][b] for a, b in pairs) / n
    pa = [sum(1 for a, _ in pairs if a == i) / n for i in range(k)]
    pb = [sum(1 for _, b in pairs if b == j) / n for j in range(k)]
    p_e = sum(w[i][j] * pa[i] * pb[j] for i in range(k) for j in range(k))
    return (p_o - p_e) / (1 - p_e)


def test_two_annotators_label_by_keyboard_through_a_killed_server(browser, tmp_path, capsys):
    queue = write_jsonl(tmp_path / "queue.jsonl", [
        {"query_id": f"q{i // 3}", "query": f"how do i rotate the api key for project {i // 3}", "id": f"d{i}",
         "text": f"To rotate an API key, open Settings > Keys and press Rotate. (chunk {i})",
         "runs": ["candidate"], "best_rank": i % 3 + 1, "stratum": ("tenant acme", "tenant globex")[i % 2]}
        for i in range(30)])
    guide = tmp_path / "guide.md"
    guide.write_text("# Grades\n- **2**: the chunk holds the answer\n- **1**: on topic, no answer\n- **0**: off topic\n")
    db = tmp_path / "labels.sqlite"
    started = dt.datetime.now(dt.timezone.utc)
    server = Server(queue, "--db", db, "--overlap", "0.2", "--guide", guide)
    people = {}
    for who in ("alice", "bob"):
        context = browser.new_context(viewport={"width": 1100, "height": 720})
        page = context.new_page()
        page.goto(f"{server.url}&annotator={who}")
        people[who] = {"page": page, "saved": 0, "seen": _watch(page)}
    assert people["alice"]["page"].locator("aside#guide strong").first.inner_text() == "2"
    given: dict[tuple[str, str, str], int] = {}   # (annotator, query_id, id) -> grade, as pressed
    skipped = None

    def step(who: str) -> bool:
        nonlocal skipped
        person = people[who]
        page = person["page"]
        item = _card(page)
        if item is None:
            return False
        if who == "alice" and skipped is None and len(given) == 4:
            page.keyboard.press("s")  # pass this one on
            skipped = item
        else:
            if who == "bob" and len(given) == 6:  # a wrong grade, undone, then the right one with a note
                page.keyboard.press(str((_grade(who, *item) + 1) % 3))
                person["saved"] += 1
                _saved(page, person["saved"])
                page.keyboard.press("u")
                person["saved"] += 1
                _saved(page, person["saved"])
                assert _card(page) == item  # the card comes back
                page.keyboard.press("n")
                page.keyboard.type("double-checked <b>this</b>")
                page.keyboard.press("Escape")
            page.keyboard.press(str(_grade(who, *item)))
            given[(who, *item)] = _grade(who, *item)
        person["saved"] += 1
        _saved(page, person["saved"])
        return True

    for _ in range(9):  # about half the labels, then the server dies
        step("alice")
        step("bob")
    on_screen = {who: _card(p["page"]) for who, p in people.items()}
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "label-card.png"
    people["alice"]["page"].screenshot(path=str(shot))
    SAVED.append(shot)
    server.kill()

    server = Server(queue, "--db", db, "--overlap", "0.2", "--guide", guide)  # a new session: a new token
    for who, person in people.items():
        person["page"].goto(f"{server.url}&annotator={who}")
        person["saved"] = 0
        assert _card(person["page"]) == on_screen[who]  # each resumes at the card they had
    active = ["alice", "bob"]
    while active:
        active = [who for who in active if step(who)]
    for person in people.values():
        assert person["page"].locator("section.done").is_visible()
        assert person["seen"]["errors"] == []
        assert all(u.startswith(("http://127.0.0.1:", "about:")) for u in person["seen"]["requests"])
    server.stop()

    out = tmp_path / "every.jsonl"
    assert main(["label", "export", "--db", str(db), "-o", str(out), "--all"]) == 0
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    exported = {(x["labelled_by"][0]["annotator"], x["query_id"], x["id"]): x["grade"] for x in lines}
    assert exported == given  # every label given, none lost to the kill, the undone one gone
    assert skipped is not None and ("alice", *skipped) not in exported
    ended = dt.datetime.now(dt.timezone.utc)
    for x in lines:
        p = x["labelled_by"][0]
        assert (x["queue"], x["source"], p["via"]) == ("queue.jsonl", "pool", "card")
        assert started <= dt.datetime.fromisoformat(p["at"].replace("Z", "+00:00")) <= ended
    noted = [x for x in lines if x["labelled_by"][0].get("note")]
    assert [x["labelled_by"][0]["note"] for x in noted] == ["double-checked <b>this</b>"]
    per_item: dict[tuple[str, str], dict[str, int]] = {}
    for (who, q, d), g in given.items():
        per_item.setdefault((q, d), {})[who] = g
    shared = [(r["alice"], r["bob"]) for r in per_item.values() if len(r) == 2]
    assert len(shared) >= 5  # the overlap: 6 items of 30 (one may be the skipped one)
    capsys.readouterr()
    assert main(["label", "agreement", "--db", str(db), "--json", "--resamples", "200"]) == 0
    facet = json.loads(capsys.readouterr().out)["facets"][0]
    assert facet["pairs"][0]["n"] == len(shared)
    assert facet["pairs"][0]["kappa"] == pytest.approx(_weighted_kappa(shared), abs=1e-6)


def test_a_grade_pressed_in_the_browse_view_reaches_the_export_and_the_gold_set(browser, tmp_path):
    gold = tmp_path / "gold.jsonl"
    gold.write_bytes((DATA / "gold.jsonl").read_bytes())
    db = tmp_path / "labels.sqlite"
    server = Server("--gold", gold, "--runs", DATA / "base.jsonl", DATA / "run.jsonl", "--db", db,
                    "--annotator", "reviewer", "--depth", "5")
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    seen = _watch(page)
    page.goto(server.url)
    assert page.url.endswith("/browse")
    rows = page.locator("table.queries tbody tr")
    everything = rows.count()
    page.locator("input[name=failing]").check()
    page.locator("form.filters button").click()
    page.wait_for_url("**/browse?failing=1**")
    assert 0 < rows.count() < everything and rows.count() == page.locator("tr.failing").count()
    page.locator("input[name=moved]").check()
    page.locator("form.filters button").click()
    page.wait_for_url("**moved=1**")
    page.goto(server.origin + "/browse?q=sso")
    assert all("sso" in t.lower() for t in page.locator("table.queries tbody tr td:nth-child(2)").all_inner_texts())
    page.goto(server.origin + "/browse")
    first = page.locator("table.queries tbody tr").first
    query_id = first.get_attribute("data-query-id")
    first.locator("a").click()
    page.wait_for_url("**/browse/query?id=**")
    candidate = page.locator("section.run").nth(1)
    item = candidate.locator("li.item.unjudged").first
    item_id = item.get_attribute("data-id")
    assert item.locator(".gold").inner_text() == "unjudged"
    assert item.locator(".rank").count() == 2  # its rank in each run
    item.click()
    page.keyboard.press("2")
    page.wait_for_function("() => Number(document.body.dataset.saved || 0) >= 1")
    assert item.locator(".mine").inner_text() == "your label 2"
    shot = ARTIFACTS / "label-browse.png"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(shot))
    SAVED.append(shot)
    assert seen["errors"] == []
    server.stop()

    out = tmp_path / "labels.jsonl"
    assert main(["label", "export", "--db", str(db), "-o", str(out), "--into-gold", str(gold)]) == 0
    (line,) = [json.loads(x) for x in out.read_text().splitlines()]
    assert (line["query_id"], line["id"], line["grade"], line["source"]) == (query_id, item_id, 2, "browse")
    assert line["labelled_by"][0]["annotator"] == "reviewer" and line["labelled_by"][0]["via"] == "browse"
    from rankgate.io import load_gold

    assert load_gold(str(gold)).judgements()[query_id][item_id] == 2


def _get(url: str, cookie: str | None = None, data: bytes | None = None, headers: dict | None = None) -> int:
    request = urllib.request.Request(url, data=data, headers={**(headers or {}), **({"Cookie": cookie} if cookie else {})},
                                     method="POST" if data is not None else "GET")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_payloads_in_every_text_run_nowhere_and_no_token_no_request(browser, tmp_path):
    queue = write_jsonl(tmp_path / "queue.jsonl", [
        {"query_id": f"q{i}{PAYLOAD}", "query": f"sso {PAYLOAD}", "id": f"d{i}{PAYLOAD}", "text": f"SSO {PAYLOAD}",
         "runs": [PAYLOAD], "best_rank": 1, "segment": PAYLOAD, "why": PAYLOAD, "stratum": PAYLOAD} for i in range(3)])
    gold = write_jsonl(tmp_path / "gold.jsonl", [
        {"query_id": "g1" + PAYLOAD, "query": "sso " + PAYLOAD, "segment": PAYLOAD,
         "relevant_chunks": [{"chunk_id": "c1" + PAYLOAD, "grade": 2}]}])
    run = write_jsonl(tmp_path / "run.jsonl", [
        {"query_id": "g1" + PAYLOAD, "topk": [{"id": f"c{i}{PAYLOAD}", "score": 3 - i, "text": f"sso {PAYLOAD}"}
                                             for i in range(3)]}])
    guide = tmp_path / "guide.md"
    guide.write_text(f"# {PAYLOAD}\n- **{PAYLOAD}**\n<iframe src='https://example.com'></iframe>\n")
    server = Server(queue, "--gold", gold, "--runs", run, run, "--db", tmp_path / "l.sqlite", "--guide", guide,
                    "--by", "segment")
    # no token, no page and no write
    assert _get(server.origin + "/") == 403
    assert _get(server.origin + "/browse") == 403
    assert _get(server.origin + "/?token=guess") == 403
    assert _get(server.origin + "/api/grade", data=b'{"pos": 1, "grade": 2}',
                headers={"Content-Type": "application/json"}) == 403
    token = server.url.split("token=")[1]
    cookie = f"rankgate_label={token}; rankgate_annotator=x"
    assert _get(server.origin + "/", cookie=cookie) == 200
    assert _get(server.origin + "/api/grade", cookie=cookie, data=b'{"pos": 1, "grade": 2}') == 403  # no header
    page = browser.new_page()
    seen = _watch(page)
    page.goto(server.url + "&annotator=" + urllib.request.quote(PAYLOAD))
    pages = [server.origin + "/", server.origin + "/browse",
             server.origin + "/browse/query?id=" + urllib.request.quote("g1" + PAYLOAD)]
    for url in pages:
        page.goto(url)
        page.wait_for_load_state("load")
        assert page.evaluate("() => window.__pwned") is None, url
        assert page.locator("main script, main img, main iframe, aside script, aside iframe").count() == 0, url
        assert PAYLOAD in page.locator("body").inner_text(), url  # shown as text
    page.goto(server.origin + "/")
    page.keyboard.press("1")  # the next card arrives through the script
    _saved(page, 1)
    assert page.evaluate("() => window.__pwned") is None
    assert page.locator("main script, main img").count() == 0
    page.goto(pages[2])
    page.locator("li.item").first.click()
    page.keyboard.press("2")
    _saved(page, 1)
    assert page.evaluate("() => window.__pwned") is None
    assert seen["errors"] == []
    assert all(u.startswith(server.origin) for u in seen["requests"]), seen["requests"]
    server.stop()
