"""``rankgate label`` without a browser: the queues it reads, the database (resume, overlap, undo, nothing lost, one
server), the export in the shapes rankgate's readers take, the gold set it grows, agreement against a hand
computation, the app's HTTP rules (the token, the headers, escaping), and the refusals of bad input.

The app's tests need the ``label`` extra (Starlette); without it they skip, saying so. The browser tests are
tests/test_labels_browser.py.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
from pathlib import Path

import pytest

from rankgate.cli.main import main
from rankgate.labels.queue import read_queue
from rankgate.labels.scales import SCALES
from rankgate.labels.store import LabelStore

from .conftest import NO_LABEL
from .helpers import write_jsonl
from .hostile import assert_refused

DATA = Path(__file__).parent / "data" / "report"


def need_label_extra() -> None:
    """Skip (one line saying why) without Starlette and uvicorn; fail where RANKGATE_REQUIRE_LABEL is set (.ci/run)."""
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        why = f"{NO_LABEL} ({exc.name} is not installed: pip install 'rankgate[label]'; .ci/run installs it)"
        if os.environ.get("RANKGATE_REQUIRE_LABEL"):
            pytest.fail(why, pytrace=False)
        pytest.skip(why)


_starlette = need_label_extra


def pool_queue(path: Path, n: int = 10, queries: int = 3) -> Path:
    return write_jsonl(path, [{"query_id": f"q{i % queries}", "query": "which plan has sso", "id": f"d{i}",
                               "text": f"chunk {i} about SSO", "runs": ["cand"], "best_rank": i + 1} for i in range(n)])


def _store(tmp_path: Path, queue: Path, overlap: float = 0.0, scale: str = "0-2") -> LabelStore:
    store = LabelStore.open(str(tmp_path / "labels.sqlite"), create=True)
    store.bind_queue(read_queue(str(queue)), SCALES[scale], overlap)
    return store


def _label_all(store: LabelStore, annotator: str, grade_of) -> list[tuple[str, str, int]]:
    given = []
    while (card := store.next_card(annotator)) is not None:
        g = grade_of(card)
        store.give(annotator, card.pos, grade=g)
        given.append((card.item.query_id, card.item.item_id, g))
    return given


# -- queues ------------------------------------------------------------------------------------------------------------
def test_every_queue_shape_rankgate_writes_is_read(tmp_path):
    pool = read_queue(str(pool_queue(tmp_path / "pool.jsonl", 4)))
    assert (pool.shape, pool.kind, len(pool.items)) == ("pool", "relevance", 4)
    assert "rank 1 by cand" in pool.items[0].payload["why"]
    judge = read_queue(str(write_jsonl(tmp_path / "j.jsonl", [{"query_id": 7, "query": "x", "id": "a", "text": ""}])))
    assert (judge.shape, judge.items[0].query_id) == ("judge_queue", "7")
    sample = read_queue(str(write_jsonl(tmp_path / "s.jsonl", [
        {"query_id": "prod-1", "query": "reset password", "relevant_chunks": [
            {"chunk_id": "c1", "grade": None, "rank": 1, "text": "how to reset"}, {"chunk_id": "c2", "grade": None}],
         "must_not_retrieve": [], "source_of_query": "production_log", "sample_reason": "fallback",
         "tags": {"tenant": "acme"}}])))
    assert (sample.shape, [i.item_id for i in sample.items]) == ("gold_sample", ["c1", "c2"])
    assert sample.items[0].stratum == "fallback" and sample.items[0].payload["segment"] == "tenant=acme"
    assert sample.items[1].payload["text"] is None  # no text logged: the card says so
    answers = read_queue(str(write_jsonl(tmp_path / "a.jsonl", [
        {"query_id": "q1", "question": "q?", "answer": "A.", "contexts": ["ctx", {"id": "c", "text": "t"}],
         "reference": "R"}])))
    assert (answers.shape, answers.kind, answers.items[0].payload["contexts"]) == ("answers", "answer", ["ctx", "t"])
    # judge recalibrate's queues: relevance items and answers, with their strata's fields as a segment object
    fresh = read_queue(str(write_jsonl(tmp_path / "r.jsonl", [
        {"query_id": "prod-1", "query": "q", "id": "c1", "text": "t", "rank": 1, "source": "production_log",
         "sample_reason": "judge_recalibration", "segment": {"tenant": "acme", "lang": "en"}}])))
    assert (fresh.shape, fresh.items[0].payload["segment"]) == ("judge_queue", "tenant=acme, lang=en")


@pytest.mark.parametrize("rows, said", [
    ([{"query_id": "q1", "topk": [{"id": "a", "score": 1}]}], "is not a queue rankgate writes (keys: query_id, topk)"),
    ([{"query_id": "q1", "query": "x", "id": "a", "text": "t"}, {"query_id": "q2", "question": "x", "answer": "y"}],
     "is not a judge_queue line like line 1 (it reads as answers)"),
    ([{"query_id": "q1", "query": "x", "id": "a", "text": "t"}] * 2, "holds ('q1', 'a') again (first at line 1)"),
    (["[1, 2]"], "must be a JSON object"),
])
def test_other_shapes_are_one_line_errors_naming_the_line(tmp_path, capsys, rows, said):
    queue = write_jsonl(tmp_path / "queue.jsonl", rows)
    line = assert_refused(["label", "serve", queue, "--db", tmp_path / "l.sqlite", "--port", "0"], None, capsys=capsys,
                          names=[queue])
    assert said in line and "queue.jsonl:" in line
    assert not (tmp_path / "l.sqlite").exists() or os.path.getsize(tmp_path / "l.sqlite") > 0


# -- the database ------------------------------------------------------------------------------------------------------
def test_overlap_gives_a_fixed_share_to_two_annotators_who_never_see_each_other(tmp_path):
    store = _store(tmp_path, pool_queue(tmp_path / "pool.jsonl", 20, 5), overlap=0.25)
    a = _label_all(store, "alice", lambda c: 2)
    b = _label_all(store, "bob", lambda c: 1)
    rows = list(store.labels())
    per_item: dict[tuple[str, str], list[str]] = {}
    for r in rows:
        per_item.setdefault((r.item.query_id, r.item.item_id), []).append(r.annotator)
    assert len(per_item) == 20 and sum(len(v) == 2 for v in per_item.values()) == 5  # exactly 25% labelled twice
    assert len(a) == 20 and len(b) == 5  # alice took everything she could; bob only the shared items were left
    assert store.progress("bob").done == 20 and store.progress("bob").mine == 5


def test_two_annotators_at_once_get_different_cards_except_shared_ones(tmp_path):
    store = _store(tmp_path, pool_queue(tmp_path / "pool.jsonl", 10), overlap=0.0)
    first_a, first_b = store.next_card("alice"), store.next_card("bob")
    assert first_a.pos != first_b.pos
    assert store.next_card("alice").pos == first_a.pos  # the card on screen stays until it is labelled


def test_resume_undo_skip_and_history_after_reopening(tmp_path):
    queue = pool_queue(tmp_path / "pool.jsonl", 5)
    store = _store(tmp_path, queue)
    c1 = store.next_card("alice")
    store.give("alice", c1.pos, grade=2, note="clear answer")
    c2 = store.next_card("alice")
    store.skip("alice", c2.pos)
    c3 = store.next_card("alice")
    assert c3.pos not in (c1.pos, c2.pos)
    store.close()  # (a killed server: every call above committed before returning)
    store = LabelStore.open(str(tmp_path / "labels.sqlite"))
    store.bind_queue(read_queue(str(queue)), SCALES["0-2"], 0.0)
    assert store.next_card("alice").pos == c3.pos  # resumes where she stopped
    assert store.undo("alice") == c2.pos and store.next_card("alice").pos == c2.pos  # the skip undone
    assert store.undo("alice") == c1.pos  # then the label
    assert store.next_card("alice").pos == c1.pos
    store.give("alice", c1.pos, grade=1)
    history = store.history()
    assert [(h["action"], h["grade"], h["ended_by"]) for h in history] == [
        ("label", 2, "undo"), ("skip", None, "undo"), ("label", 1, None)]
    assert [(r.grade, r.note) for r in store.labels()] == [(1, None)]


def test_a_grade_off_the_scale_is_refused(tmp_path):
    from rankgate.errors import UsageError

    store = _store(tmp_path, pool_queue(tmp_path / "pool.jsonl", 2), scale="binary")
    card = store.next_card("alice")
    with pytest.raises(UsageError, match="grade must be one of 0, 1 on the binary scale; got 2"):
        store.give("alice", card.pos, grade=2)


def test_a_database_of_another_queue_scale_or_schema_is_refused(tmp_path, capsys):
    _starlette()  # (the database is opened once the app can run)
    queue = pool_queue(tmp_path / "pool.jsonl", 3)
    _store(tmp_path, queue).close()
    db = tmp_path / "labels.sqlite"
    other = pool_queue(tmp_path / "other.jsonl", 4)
    line = assert_refused(["label", "serve", other, "--db", db, "--port", "0"], None, capsys=capsys)
    assert "holds the labels of another queue (pool.jsonl" in line and "not of other.jsonl" in line
    line = assert_refused(["label", "serve", queue, "--db", db, "--port", "0", "--scale", "0-3"], None, capsys=capsys)
    assert "is labelled on the 0-2 scale, not 0-3" in line
    line = assert_refused(["label", "serve", queue, "--db", db, "--port", "0", "--overlap", "0.5"], None, capsys=capsys)
    assert "was started with overlap 0, not 0.5" in line
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema'")
    line = assert_refused(["label", "export", "--db", db, "-o", tmp_path / "out.jsonl"], None, capsys=capsys)
    assert "has labels database schema 99; this rankgate reads schema 1" in line
    foreign = tmp_path / "foreign.sqlite"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE t (x)")
    line = assert_refused(["label", "export", "--db", foreign, "-o", tmp_path / "out.jsonl"], None, capsys=capsys)
    assert "is an SQLite database, but not one of rankgate label" in line
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"not a database at all" * 100)
    line = assert_refused(["label", "export", "--db", junk, "-o", tmp_path / "out.jsonl"], None, capsys=capsys)
    assert "is not an SQLite database" in line
    assert not (tmp_path / "out.jsonl").exists()


def test_a_locked_database_is_a_clear_error_and_loses_nothing(tmp_path, monkeypatch):
    from rankgate.errors import InputError
    from rankgate.labels import store as store_module

    monkeypatch.setattr(store_module, "BUSY_MS", 50)
    store = _store(tmp_path, pool_queue(tmp_path / "pool.jsonl", 3))
    card = store.next_card("alice")
    store.give("alice", card.pos, grade=2)
    other = sqlite3.connect(tmp_path / "labels.sqlite", isolation_level=None)
    other.execute("PRAGMA busy_timeout = 0")
    other.execute("BEGIN IMMEDIATE")  # another program holds the write lock
    store._conn.execute("PRAGMA busy_timeout = 50")
    with pytest.raises(InputError, match=r"labels.sqlite: is locked by another program .*nothing was written"):
        store.give("alice", store.next_card("bob").pos if False else card.pos, grade=0)
    other.execute("ROLLBACK")
    other.close()
    assert [(r.grade) for r in store.labels()] == [2]  # the earlier label kept, the refused one not half-written


def test_a_second_server_on_one_database_is_refused_naming_the_first(tmp_path):
    _starlette()
    from rankgate.errors import InputError
    from rankgate.flows.label import ServeRequest, prepare_serve

    queue = pool_queue(tmp_path / "pool.jsonl", 3)
    first = prepare_serve(ServeRequest(str(tmp_path / "l.sqlite"), queue=str(queue), port=0))
    try:
        with pytest.raises(InputError, match=r"is open in another rankgate label serve \(pid \d+, http://127.0.0.1:\d+/\)"):
            prepare_serve(ServeRequest(str(tmp_path / "l.sqlite"), queue=str(queue), port=0))
    finally:
        first.close()
    prepare_serve(ServeRequest(str(tmp_path / "l.sqlite"), queue=str(queue), port=0)).close()  # free again


# -- export: the shapes rankgate reads ----------------------------------------------------------------------------------
def _report_pool(tmp_path: Path) -> Path:
    """The unjudged top items of the report data's runs, as rankgate pool writes them."""
    out = tmp_path / "pool.jsonl"
    assert main(["pool", "--gold", str(DATA / "gold.jsonl"), "--runs", str(DATA / "base.jsonl"), str(DATA / "run.jsonl"),
                 "--depth", "3", "-o", str(out)]) == 0
    return out


def test_export_is_read_by_evaluate_judged_and_judge_calibrate(tmp_path, capsys):
    from rankgate.io import load_gold
    from rankgate.judges.files import read_labels
    from rankgate.stats.pooling import read_judged

    queue = _report_pool(tmp_path)
    store = _store(tmp_path, queue, overlap=0.3)
    grades = {}
    for who in ("alice", "bob"):
        for q, d, g in _label_all(store, who, lambda c: len(c.item.item_id) % 3):
            grades[(q, d)] = g
    store.close()
    out = tmp_path / "labels.jsonl"
    assert main(["label", "export", "--db", str(tmp_path / "labels.sqlite"), "-o", str(out)]) == 0
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(lines) == len(read_queue(str(queue)).items) == len(grades)
    first = lines[0]
    assert set(first) >= {"query_id", "id", "grade", "queue", "source", "labelled_by"}
    assert first["queue"] == "pool.jsonl" and first["source"] == "pool"
    assert {p["annotator"] for line in lines for p in line["labelled_by"]} == {"alice", "bob"}
    assert all(p["at"].endswith("Z") and p["via"] == "card" for line in lines for p in line["labelled_by"])
    judged, failed = read_judged(str(out), load_gold(str(DATA / "gold.jsonl")))
    assert judged == grades and failed == 0
    assert read_labels(str(out))[0] == grades
    capsys.readouterr()
    assert main(["evaluate", "--gold", str(DATA / "gold.jsonl"), "--run", str(DATA / "run.jsonl"), "--judged", str(out),
                 "--json", "--resamples", "100"]) == 0
    bounds = json.loads(capsys.readouterr().out)["bounds"]
    assert bounds["judged_items"] == len(grades) and bounds["judge_failed"] == 0  # every exported label was used
    assert main(["judge", "calibrate", "--human", str(out), "--judge-labels", str(out), "-o",
                 str(tmp_path / "cal.json"), "--resamples", "100"]) == 0
    assert json.loads((tmp_path / "cal.json").read_text())["calibration"]["n"] == len(grades)


def test_export_of_answers_is_read_by_answers_human(tmp_path):
    from rankgate.answers.score import read_human_verdicts

    queue = write_jsonl(tmp_path / "answers.jsonl", [
        {"query_id": f"q{i}", "question": "?", "answer": f"answer {i}", "contexts": ["c"],
         "reference": "r" if i % 2 else None} for i in range(4)])
    store = _store(tmp_path, queue, scale="verdict")
    verdicts = {"q0": (True, None), "q1": (False, True), "q2": (None, None), "q3": (True, False)}
    while (card := store.next_card("carol")) is not None:
        f, c = verdicts[card.item.query_id]
        store.give("carol", card.pos, faithful=f, correct=c, note="checked" if f is None else None)
    store.close()
    out = tmp_path / "human.jsonl"
    assert main(["label", "export", "--db", str(tmp_path / "labels.sqlite"), "-o", str(out)]) == 0
    read = read_human_verdicts(str(out), [f"q{i}" for i in range(4)])
    assert {q: (v["faithful"], v["correct"]) for q, v in read.items()} == verdicts
    assert read["q2"]["note"] == "checked"


def test_disagreements_are_left_out_or_resolved_and_every_label_can_be_listed(tmp_path, capsys):
    store = _store(tmp_path, pool_queue(tmp_path / "pool.jsonl", 4, 4), overlap=1.0)
    _label_all(store, "alice", lambda c: 2)
    _label_all(store, "bob", lambda c: 2 if c.item.item_id in ("d0", "d1") else 0)
    store.close()
    db = str(tmp_path / "labels.sqlite")
    out = tmp_path / "out.jsonl"
    capsys.readouterr()
    assert main(["label", "export", "--db", db, "-o", str(out)]) == 0
    assert [x["id"] for x in map(json.loads, out.read_text().splitlines())] == ["d0", "d1"]
    assert "2 items the annotators disagree on left out (q2/d2, q3/d3)" in capsys.readouterr().err
    assert main(["label", "export", "--db", db, "-o", str(out), "--resolve", "lowest"]) == 0
    assert [x["grade"] for x in map(json.loads, out.read_text().splitlines())] == [2, 2, 0, 0]
    assert main(["label", "export", "--db", db, "-o", str(out), "--all"]) == 0
    assert len(out.read_text().splitlines()) == 8


def test_into_gold_adds_graded_chunks_and_new_queries_atomically(tmp_path, capsys):
    gold = write_jsonl(tmp_path / "gold.jsonl", [
        {"query_id": "q1", "query": "reset password", "relevant_chunks": [{"chunk_id": "c1", "grade": 2}]}])
    before = gold.read_bytes()
    queue = write_jsonl(tmp_path / "sample.jsonl", [
        {"query_id": "q1", "query": "reset password", "relevant_chunks": [{"chunk_id": "c1", "grade": None},
                                                                          {"chunk_id": "c9", "grade": None}]},
        {"query_id": "prod-7", "query": "sso on team", "relevant_chunks": [{"chunk_id": "s1", "grade": None, "rank": 1}],
         "source_of_query": "production_log", "sample_reason": "fallback", "tags": {"tenant": "acme"}},
        {"query_id": "prod-8", "query": "nothing here", "relevant_chunks": [{"chunk_id": "z1", "grade": None}]}])
    store = _store(tmp_path, queue)
    grades = {"c1": 2, "c9": 1, "s1": 2, "z1": 0}
    _label_all(store, "alice", lambda c: grades[c.item.item_id])
    store.close()
    capsys.readouterr()
    assert main(["label", "export", "--db", str(tmp_path / "labels.sqlite"), "--into-gold", str(gold)]) == 0
    err = capsys.readouterr().err
    assert "added 1 graded chunks to its queries and 1 new queries (1 labels it already held)" in err
    assert "1 new queries left out, none of their chunks graded above 0 (prod-8)" in err
    lines = gold.read_text().splitlines()
    assert lines[0].startswith('{"query_id": "q1"') and len(lines) == 2
    q1, new = json.loads(lines[0]), json.loads(lines[1])
    assert [(c["chunk_id"], c["grade"]) for c in q1["relevant_chunks"]] == [("c1", 2), ("c9", 1)]
    assert q1["relevant_chunks"][1]["labelled_by"] == "alice"
    assert new["query_id"] == "prod-7" and new["relevant_chunks"][0] == {"chunk_id": "s1", "grade": 2, "rank": 1,
                                                                          "labelled_by": "alice"}
    assert new["sample_reason"] == "fallback" and new["tags"] == {"tenant": "acme"}
    from rankgate.io import load_gold

    assert load_gold(str(gold)).judgements()["q1"] == {"c1": 2, "c9": 1}
    # again: everything is already there, nothing conflicts
    assert main(["label", "export", "--db", str(tmp_path / "labels.sqlite"), "--into-gold", str(gold)]) == 0
    assert "added 0 graded chunks to its queries and 0 new queries (3 labels it already held)" in capsys.readouterr().err
    # a gold set that grades a chunk otherwise: refused with the list, the file untouched
    gold.write_bytes(before.replace(b'"grade": 2', b'"grade": 1'))
    held = gold.read_bytes()
    line = assert_refused(["label", "export", "--db", tmp_path / "labels.sqlite", "--into-gold", gold], None,
                          capsys=capsys)
    assert "grades 1 chunk otherwise than the labels: q1/c1: gold 1, label 2 (line 1)" in line
    assert "nothing was written" in line and gold.read_bytes() == held


# -- agreement ---------------------------------------------------------------------------------------------------------
PAIRS = [(2, 2), (1, 2), (0, 0), (2, 1), (0, 1), (1, 1)]  # alice, bob on six shared items


def _agreement_db(tmp_path: Path) -> str:
    store = _store(tmp_path, pool_queue(tmp_path / "pool.jsonl", 6, 6), overlap=1.0)
    by_item = {f"d{i}": pair for i, pair in enumerate(PAIRS)}
    _label_all(store, "alice", lambda c: by_item[c.item.item_id][0])
    _label_all(store, "bob", lambda c: by_item[c.item.item_id][1])
    store.close()
    return str(tmp_path / "labels.sqlite")


def test_agreement_matches_a_hand_computation(tmp_path, capsys):
    """Linear-weighted Cohen's κ of PAIRS on 0–2: weights 1, ½, 0 by distance; p_o = (1+½+1+½+½+1)/6 = ¾; alice's
    grades are a third each, bob's 1/6, 1/2, 1/3, so p_e = Σ w·p_a·p_b = 21/36; κ = (¾ − 21/36)/(1 − 21/36) = 2/5.
    Fleiss' κ: P̄ = 3/6 (three items agree), category shares 3/12, 5/12, 4/12, P_e = 50/144; κ = (½ − 50/144)/(1 −
    50/144) = 11/47. Against a judge that agrees with alice everywhere, alice's κ is 1."""
    db = _agreement_db(tmp_path)
    judge = write_jsonl(tmp_path / "judge.jsonl", [{"query_id": f"q{i}", "id": f"d{i}", "grade": a}
                                                   for i, (a, _) in enumerate(PAIRS)])
    capsys.readouterr()
    assert main(["label", "agreement", "--db", db, "--judge-labels", str(judge), "--json", "--resamples", "300"]) == 0
    facet = json.loads(capsys.readouterr().out)["facets"][0]
    pair = facet["pairs"][0]
    assert (pair["first"], pair["second"], pair["n"]) == ("alice", "bob", 6)
    assert pair["agreement"] == pytest.approx(0.5) and pair["kappa"] == pytest.approx(2 / 5, abs=1e-6)
    assert pair["kappa_ci"][0] <= 0.4 <= pair["kappa_ci"][1]
    assert facet["fleiss_kappa"] == pytest.approx(11 / 47, abs=1e-6) and facet["fleiss_items"] == 6
    assert [d["id"] for d in facet["disagreements"]] == ["d1", "d3", "d4"]
    assert facet["disagreements"][0]["labels"] == {"alice": 1, "bob": 2}
    judged = {p["first"]: p for p in facet["judge"]}
    assert judged["alice"]["kappa"] == pytest.approx(1.0, abs=1e-6)
    assert judged["bob"]["kappa"] == pytest.approx(2 / 5, abs=1e-6)
    assert main(["label", "agreement", "--db", db, "--resamples", "300", "--weights", "none"]) == 0
    text = capsys.readouterr().out
    assert "alice · bob: 6 items, 50.0% equal" in text and "Fleiss' κ, unweighted): 6 items, κ 0.23" in text
    # unweighted: p_o = 3/6, p_e = Σ p_a·p_b = (1/3)(1/6 + 1/2 + 1/3) = 1/3 → κ = (½ − ⅓)/(⅔) = ¼
    assert "κ 0.25" in text


def test_fleiss_kappa_with_three_raters_by_hand():
    """Three raters, four items, two categories: counts [3,0], [0,3], [2,1], [1,2]. P_i = 1, 1, ⅓, ⅓; P̄ = ⅔; the
    shares are ½ each, P_e = ½; κ = (⅔ − ½)/(½) = ⅓."""
    from rankgate.stats.agreement import fleiss_ci, fleiss_kappa

    counts = [[3, 0], [0, 3], [2, 1], [1, 2]]
    assert fleiss_kappa(counts) == pytest.approx(1 / 3)
    lo, hi = fleiss_ci(counts, resamples=500)
    assert lo <= 1 / 3 <= hi
    assert math.isnan(fleiss_kappa([[2, 0], [2, 0]]))  # one category only


# -- the app over HTTP ---------------------------------------------------------------------------------------------------
PAYLOAD = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=1">'


@pytest.fixture
def served(tmp_path):
    _starlette()
    from rankgate.flows.label import ServeRequest, prepare_serve

    queue = write_jsonl(tmp_path / "pool.jsonl", [
        {"query_id": "q1" + PAYLOAD, "query": "sso " + PAYLOAD, "id": "d1" + PAYLOAD, "text": "SSO " + PAYLOAD,
         "runs": [PAYLOAD], "best_rank": 1, "segment": PAYLOAD}])
    server = prepare_serve(ServeRequest(str(tmp_path / "l.sqlite"), queue=str(queue), port=0))
    yield server
    server.close()


def _client(server):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (Starlette prefers httpx2 for its test client; httpx works)
        from starlette.testclient import TestClient

        return TestClient(server.app, base_url="http://" + server.url.split("/")[2])


def test_a_request_without_the_session_token_is_refused(served):
    client = _client(served)
    token = served.url.split("token=")[1]
    assert client.get("/", follow_redirects=False).status_code == 403
    assert client.get("/?token=wrong", follow_redirects=False).status_code == 403
    assert client.post("/api/grade", json={"pos": 1, "grade": 2}).status_code == 403
    entered = client.get(f"/?token={token}&annotator=alice", follow_redirects=False)
    assert entered.status_code == 303 and entered.headers["location"] == "/"  # the token leaves the address
    assert "httponly" in entered.headers["set-cookie"].lower() and "samesite=strict" in entered.headers["set-cookie"].lower()
    assert client.get("/").status_code == 200
    refused = client.post("/api/grade", json={"pos": 1, "grade": 2})  # the cookie alone does not write
    assert refused.status_code == 403 and "no session token" in refused.json()["error"]
    assert client.post("/api/grade", json={"pos": 1, "grade": 2}, headers={"X-Rankgate-Token": "x" * 32}).status_code == 403
    ok = client.post("/api/grade", json={"pos": 1, "grade": 2}, headers={"X-Rankgate-Token": token})
    assert ok.status_code == 200 and ok.json()["said"] == "saved"
    assert [r.grade for r in served.store.labels()] == [2]
    assert client.get("/", headers={"host": "attacker.example"}).status_code == 400  # no DNS rebinding


def test_a_write_over_the_size_cap_is_refused_and_writes_nothing(served):
    from rankgate.labels.app import MAX_BODY

    client = _client(served)
    token = served.url.split("token=")[1]
    client.get(f"/?token={token}&annotator=alice", follow_redirects=False)
    header = {"X-Rankgate-Token": token}
    huge = b'{"pos": 1, "grade": 2, "note": "' + b"x" * (MAX_BODY + 1) + b'"}'
    assert client.post("/api/grade", content=huge, headers=header).status_code == 413
    streamed = client.post("/api/grade", content=iter([huge[:1000], huge[1000:]]), headers=header)  # no length given
    assert streamed.status_code == 413
    assert list(served.store.labels()) == []


def test_every_text_is_escaped_and_the_policy_allows_nothing_outside(served):
    client = _client(served)
    token = served.url.split("token=")[1]
    page = client.get(f"/?token={token}&annotator=" + "%3Cscript%3Ealert(1)%3C%2Fscript%3E")
    assert page.status_code == 200
    csp = page.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "script-src 'self'" in csp and "unsafe" not in csp
    assert page.headers["x-content-type-options"] == "nosniff" and page.headers["referrer-policy"] == "no-referrer"
    html = page.text
    assert "<script>window" not in html and "<img src=x" not in html and "<script>alert" not in html
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in html
    assert html.count("<script") == 1 and '<script src="/static/app.js" defer></script>' in html
    assert "http://" not in html and "https://" not in html  # nothing fetched from elsewhere


def test_serve_refuses_a_host_other_machines_reach_without_saying_so(tmp_path, capsys):
    queue = pool_queue(tmp_path / "pool.jsonl", 2)
    line = assert_refused(["label", "serve", queue, "--db", tmp_path / "l.sqlite", "--host", "0.0.0.0"], None,
                          capsys=capsys)
    assert "host '0.0.0.0' is not loopback" in line and "--allow-remote" in line


def test_export_needs_an_output_and_guides_are_escaped(tmp_path, capsys):
    line = assert_refused(["label", "export", "--db", tmp_path / "none.sqlite"], None, capsys=capsys)
    assert "give -o/--out (the labels file), --into-gold (a gold set), or both" in line
    from rankgate.labels.pages import marked, render_guide

    assert render_guide("# Grades\n- **2**: holds it <script>x</script>\n") == \
        "<h3>Grades</h3>\n<ul>\n<li><strong>2</strong>: holds it &lt;script&gt;x&lt;/script&gt;</li>\n</ul>"
    assert marked("Reset the <b>password</b> now", ["password"]) == \
        "Reset the &lt;b&gt;<mark>password</mark>&lt;/b&gt; now"
