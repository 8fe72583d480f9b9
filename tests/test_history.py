"""``rankgate history``: a store built from the demo's summaries over simulated commits (tests/history_store.py),
read back by show, compare and report as a user reads them; writers in parallel processes; bad stores and files."""

from __future__ import annotations

import json
import multiprocessing
import os
import re
import shutil
from pathlib import Path

import pytest

from rankgate.cli.main import main

from . import history_store as hs


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from rankgate.demo.pipeline import run_demo

    out = tmp_path_factory.mktemp("demo") / "d"
    run_demo(out, seed=0)
    return out


@pytest.fixture(scope="module")
def days(demo: Path, tmp_path_factory: pytest.TempPathFactory) -> list[list[Path]]:
    return hs.build(demo, tmp_path_factory.mktemp("days"))


@pytest.fixture(scope="module")
def store(days: list[list[Path]], tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("history") / "store"
    hs.record(days, path)
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def show_json(capsys: pytest.CaptureFixture[str], store: Path, *extra: str) -> dict:
    code, out, err = run(capsys, "history", "show", "--store", str(store), "--json", *extra)
    assert code == 0, err
    return json.loads(out)


def test_every_commit_is_one_point_in_time_order_with_its_shift(store, capsys):
    data = show_json(capsys, store, "--metric", "recall@5", "--last", "100")
    assert len(data["entries"]) == 2 * hs.DAYS  # evaluate's summary and the gate outcome of each commit
    (series,) = data["series"]
    points = series["points"]
    assert [p["commit"] for p in points] == [hs.commit(d) for d in range(1, hs.DAYS + 1)]
    assert all(p["kind"] == "evaluate" for p in points)  # one point per commit: evaluate's summary first
    means = [p["mean"] for p in points]
    # the simulated shifts: the more queries lost, the lower the mean
    order = sorted(range(hs.DAYS), key=lambda i: hs.DROPS[i + 1])
    assert [means[i] for i in order] == sorted(means, reverse=True)
    assert series["limit"] == 0.75 and series["check"] == "threshold"
    assert [p["gate"] for p in points] == ["fail" if d in hs.RECALL_BREACH else "pass" for d in range(1, hs.DAYS + 1)]


def test_gold_and_corpus_changes_are_marked_where_they_happen(store, capsys):
    points = show_json(capsys, store, "--metric", "recall@5", "--last", "100")["series"][0]["points"]
    changed = {i + 1: p["changed"] for i, p in enumerate(points) if p["changed"]}
    assert changed == {hs.GOLD_CHANGE_DAY: "gold set", hs.CORPUS_CHANGE_DAY: "corpus"}


def test_show_prints_a_trend_per_segment_with_the_change_marked(store, capsys):
    code, out, err = run(capsys, "history", "show", "--store", str(store), "--by", "lang", "--last", "12")
    assert code == 0, err
    rows = [line for line in out.splitlines() if "lang=" in line]
    assert {re.search(r"lang=(\w+)", r).group(1) for r in rows} == {"de", "en", "es"}
    assert any("¦" in r for r in rows)  # the gold set changed inside the last 12 points
    assert "not comparable" in out
    code, out, _ = run(capsys, "history", "show", "--store", str(store), "--metric", "recall@5", "--last", "3")
    (row,) = [line for line in out.splitlines() if line.lstrip("│ ").startswith("recall@5")]
    assert "fail" in row and "≥ 75%" in row  # the newest outcome and the gate's threshold


def test_show_names_what_the_store_holds_when_a_metric_is_not_there(store, capsys):
    code, _, err = run(capsys, "history", "show", "--store", str(store), "--metric", "recall@7")
    assert code == 2
    assert "--metric 'recall@7'" in err and "recall@5" in err and "lang" in err
    assert len(err.strip().splitlines()) == 1


def test_compare_two_commits_is_the_paired_comparison_compare_prints(store, capsys):
    code, out, err = run(capsys, "history", "compare", "--store", str(store), hs.commit(1)[:8], hs.commit(3)[:8],
                         "--json", "--resamples", "300", "--permutations", "300")
    assert code == 0, err
    data = json.loads(out)
    row = next(r for r in data["rows"] if r["metric"] == "recall@5" and r["field"] is None)
    assert row["delta"] < 0 and row["n"] > 100
    assert data["queries"]["paired"] == 144 and data["queries"]["changed_by_metric"]["recall@5"] == hs.DROPS[3]
    assert data["primary"] == "hit@5"  # the most-changed queries of the first metric evaluate lists
    assert err == ""  # same gold set: nothing to warn about


def test_compare_by_date_and_entry_id_and_across_gold_versions(store, capsys):
    ids = {p["commit"]: p["entry"] for p in show_json(capsys, store, "--metric", "hit@5", "--last", "100")["series"][0]["points"]}
    code, out, err = run(capsys, "history", "compare", "--store", str(store), ids[hs.commit(2)][:6], "2026-05-08",
                         "--resamples", "200", "--permutations", "200")
    assert code == 0, err
    assert "(2026-05-02)" in out and "(2026-05-08)" in out
    # day 8 was scored on another gold set: said as every comparison says it, then compared on the queries shared
    assert "another version of the gold set" in err and "ffffffffffff" in err
    code, _, err = run(capsys, "history", "compare", "--store", str(store), "2026-04-01", hs.commit(2))
    assert code == 2 and "names none of the store's entries" in err


def test_report_writes_one_offline_page_with_breaches_owners_and_markers(store, tmp_path, capsys):
    page = tmp_path / "dashboard.html"
    code, _, err = run(capsys, "history", "report", "--store", str(store), "-o", str(page))
    assert code == 0, err
    html = page.read_text(encoding="utf-8")
    assert "search-quality: recall_at_5 (recall@5) in breach since 2026-05-12 10:00 UTC" in err
    assert 'data-owner="search-quality"' in html and 'data-owner="ranking-team"' in html
    # the open breach, the recovery after 3 days (72 h, over the rule) and after 1 day (24 h, within it)
    assert re.search(r"<td>recall_at_5</td><td>recall@5</td><td>2026-05-03 10:00</td><td>2026-05-06 10:00</td>"
                     r'<td class="n">3 d 0 h</td><td>over 48 h</td>', html)
    assert re.search(r"<td>ranking_quality</td><td>ndcg@10</td><td>2026-05-09 10:00</td><td>2026-05-10 10:00</td>"
                     r'<td class="n">24 h</td><td>within 48 h</td>', html)
    assert html.count('class="version-marker"') >= 2 and "gold set changed at commit" in html
    assert 'class="outcome-fail"' in html and 'class="limit"' in html and 'class="ci"' in html
    assert "http://" not in html.replace("http://www.w3.org", "") and "https://" not in html


def test_adding_again_is_idempotent_and_a_changed_file_replaces_its_entry(days, tmp_path, capsys):
    store = tmp_path / "s"
    argv = ["history", "add", str(days[0][0]), "--store", str(store), "--commit", "abcd1234", "--when", "2026-05-01"]
    assert run(capsys, *argv)[1].startswith("added ")
    assert run(capsys, *argv)[1].startswith("unchanged ")
    changed = tmp_path / "summary.json"
    changed.write_text(days[1][0].read_text(encoding="utf-8").replace(f"{2:064x}", f"{1:064x}"), encoding="utf-8")
    assert run(capsys, "history", "add", str(changed), "--store", str(store), "--commit", "abcd1234",
               "--when", "2026-05-01")[1].startswith("replaced ")
    assert len(list((store / "entries").iterdir())) == 1
    assert run(capsys, *argv[:-4], "--commit", "ffff0000", "--when", "2026-05-02")[1].startswith("added ")
    assert len(list((store / "entries").iterdir())) == 2


def _add_many(args: tuple[str, str, int, object]) -> int:
    store, summary, worker, barrier = args
    barrier.wait()  # type: ignore[attr-defined]
    for i in range(4):
        code = main(["history", "add", summary, "--store", store, "--commit", f"{worker:02d}{i:02d}" + "a" * 36,
                     "--when", f"2026-05-{worker + 1:02d}T{i:02d}:00:00Z"])
        if code:
            return code
    return 0


def test_eight_processes_adding_at_once_lose_nothing(days, tmp_path, capsys):
    store = tmp_path / "s"
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(8)
    procs = [ctx.Process(target=lambda a=a: os._exit(_add_many(a)),
                         args=()) for a in [(str(store), str(days[w % len(days)][w % 2]), w, barrier) for w in range(8)]]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0] * 8
    assert not [n for n in os.listdir(store / "entries") if n.startswith(".")]  # no temporary file left
    data = show_json(capsys, store, "--metric", "hit@5", "--last", "100")
    assert len(data["entries"]) == 32 and len({e["commit"] for e in data["entries"]}) == 32
    assert len(data["series"][0]["points"]) == 32


def test_a_bad_file_adds_nothing(days, tmp_path, capsys):
    store = tmp_path / "s"
    bad = tmp_path / "bad.json"
    bad.write_text('{"metrics": {"recall@5": {"mean": 1.7, "n": 3}}, "inputs": {}}', encoding="utf-8")
    code, _, err = run(capsys, "history", "add", str(days[0][0]), str(bad), "--store", str(store), "--commit", "abcd")
    assert code == 2 and str(bad) in err and "metrics.recall@5.mean" in err
    assert not (store / "entries").exists() or not list((store / "entries").iterdir())
    other = tmp_path / "other.json"
    other.write_text('{"hello": 1}', encoding="utf-8")
    code, _, err = run(capsys, "history", "add", str(other), "--store", str(store))
    assert code == 2 and "is not a rankgate summary" in err


def test_a_store_of_another_schema_version_is_refused(store, tmp_path, capsys):
    copy = tmp_path / "s"
    shutil.copytree(store, copy)
    (copy / "rankgate-history.json").write_text('{"format": "rankgate history", "schema": 2}', encoding="utf-8")
    for argv in (["show"], ["report", "-o", str(tmp_path / "d.html")]):
        code, _, err = run(capsys, "history", *argv, "--store", str(copy))
        assert code == 2 and "schema 2" in err and "use a newer rankgate" in err
        assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "d.html").exists()
    code, _, err = run(capsys, "history", "add", str(store.parent / "x.json"), "--store", str(copy))
    assert code == 2


def test_a_torn_or_foreign_parquet_file_is_named(store, tmp_path, capsys):
    import pyarrow as pa
    import pyarrow.parquet as pq

    copy = tmp_path / "s"
    shutil.copytree(store, copy)
    victim = sorted((copy / "entries").iterdir())[3]
    data = victim.read_bytes()
    victim.write_bytes(data[: len(data) // 2])
    code, _, err = run(capsys, "history", "show", "--store", str(copy))
    assert code == 2 and victim.name in err and "not a whole Parquet file" in err
    victim.write_bytes(data)
    foreign = copy / "entries" / "abcdefabcdef.parquet"
    pq.write_table(pa.table({"x": [1, 2]}), foreign)
    code, _, err = run(capsys, "history", "show", "--store", str(copy))
    assert code == 2 and foreign.name in err and "did not write" in err
    foreign.unlink()
    pq.write_table(pa.table({"x": [1]}), copy / "entries" / "notes.parquet")
    code, _, err = run(capsys, "history", "show", "--store", str(copy))
    assert code == 2 and "notes.parquet" in err and "not an entry of this store" in err


def test_a_folder_that_is_not_a_store_is_refused(tmp_path, days, capsys):
    folder = tmp_path / "f"
    folder.mkdir()
    (folder / "notes.txt").write_text("x", encoding="utf-8")
    code, _, err = run(capsys, "history", "add", str(days[0][0]), "--store", str(folder))
    assert code == 2 and "not a rankgate history store" in err
    code, _, err = run(capsys, "history", "show", "--store", str(tmp_path / "missing"))
    assert code == 2 and "does not exist" in err


def test_traces_and_answers_summaries_are_recorded_as_written(demo, tmp_path, capsys):
    store = tmp_path / "s"
    code, out, err = run(capsys, "history", "add", str(demo / "answers" / "summary.json"), "--store", str(store),
                         "--commit", "abcd1234")
    assert code == 0 and out.startswith("added ") and "(answers," in out, err
    traces = {"window": "1d", "windows": ["2026-05-01T00:00:00Z"], "by": ["tenant"], "requests": 400, "items": 10,
              "retrieval": {"negative_feedback_rate": {"value": 0.25, "n": 40, "k": 10},
                            "low_confidence_rate": {"value": None, "n": 0, "note": "not measurable"}},
              "operational": {"latency_ms": {"total": {"p50": 800.0, "p95": 1200.5, "n": 400}}},
              "segments": {"tenant=acme": {"negative_feedback_rate": {"value": 0.5, "n": 10, "k": 5}}}}
    path = tmp_path / "traces.json"
    path.write_text(json.dumps(traces), encoding="utf-8")
    code, out, err = run(capsys, "history", "add", str(path), "--store", str(store), "--commit", "abcd1234")
    assert code == 0 and "(traces," in out, err
    data = show_json(capsys, store, "--metric", "negative_feedback_rate", "--by", "tenant")
    (s,) = data["series"]
    assert (s["segment"], s["points"][0]["mean"], s["points"][0]["n"]) == ("acme", 0.5, 10)
    assert 0.2 < s["points"][0]["ci_low"] < 0.5 < s["points"][0]["ci_high"] < 0.8  # Wilson, from k of n
    assert show_json(capsys, store, "--metric", "latency.total.p95")["series"][0]["points"][0]["mean"] == 1200.5


@pytest.mark.slow  # (the full tier: heavy, and what it guards is covered lighter by default)
def test_entries_gathered_into_batches_read_as_before(days, store, tmp_path, capsys, monkeypatch):
    from rankgate.history import store as module

    monkeypatch.setattr(module, "COMPACT_AT", 5)
    small = tmp_path / "s"
    hs.record(days, small)
    capsys.readouterr()
    names = sorted(os.listdir(small / "entries"))
    assert [n for n in names if n.startswith("b-")] and len(names) < 2 * hs.DAYS
    assert show_json(capsys, small, "--last", "100") == {**show_json(capsys, store, "--last", "100"), "store": str(small)}
    argv = ["history", "add", str(days[0][0]), "--store", str(small), "--commit", hs.commit(1), "--branch", "main",
            "--when", hs.when(1)]
    assert run(capsys, *argv)[1].startswith("unchanged ")  # found in its batch
    code, out, err = run(capsys, "history", "compare", "--store", str(small), hs.commit(1)[:8], hs.commit(12)[:8],
                         "--json", "--resamples", "100", "--permutations", "100")
    assert code == 0, err
    assert json.loads(out)["queries"]["changed_by_metric"]["recall@5"] == hs.DROPS[12]
