"""``traces analyze --signals``: a selection computes only its groups, with exactly the full analysis'
numbers; ``headline`` writes summary.json and signals.csv; unknown names exit 2 naming the valid ones.
And the ``rankgate`` process keeps pandas out (pyarrow would import it for nothing)."""

from __future__ import annotations

import csv
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

import rankgate.traces.formats.jsonl as tj
from rankgate.cli.main import main
from rankgate.errors import UsageError
from rankgate.traces import read_traces
from rankgate.traces.signals import SIGNAL_GROUPS, SIGNAL_SETS, SIGNALS, parse_signals, summarize_traces

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import trace_gen  # noqa: E402


@pytest.fixture(scope="module")
def week(tmp_path_factory):
    d = tmp_path_factory.mktemp("week")
    trace_gen.generate(d, trace_gen.Spec(days=7, per_day=60, seed=6), formats=("parquet",))
    return d


def _rows(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_groups_cover_every_signal_once_and_parse():
    names = [n for g in SIGNAL_GROUPS.values() for n in g]
    assert sorted(names) == sorted(s.name for s in SIGNALS)
    assert parse_signals("all") is None and parse_signals(None) is None
    assert parse_signals("headline,all") is None
    assert parse_signals(" headline ") == frozenset(SIGNAL_SETS["headline"])
    assert parse_signals("latency, privacy") == frozenset({"latency", "privacy"})
    for bad in ("bogus", "latency,nope", " , "):
        with pytest.raises(UsageError) as e:
            parse_signals(bad)
        assert "headline" in str(e.value) and "instability" in str(e.value)


@pytest.mark.parametrize("in_place", [False, True], ids=["arrow-items", "items-in-file"])
def test_each_group_alone_has_the_full_numbers(week, monkeypatch, in_place):
    """Every group computed alone gives the full analysis' values for its signals (per window, per
    segment, whole period, with n, k and notes), items read in the file; the headline too with the
    items held as Arrow rows."""
    from rankgate.corpus import load_manifest

    monkeypatch.setattr(tj, "MIN_BYTES", 0)
    p = week / "parquet" / "traces.parquet"
    tables = read_traces(p, engine_items=in_place)
    assert bool(tables.item_sources) == in_place
    manifest = load_manifest(str(week / "corpus.jsonl"))
    opts = {"by": ("tenant", "source"), "threshold": 0.3, "manifest": manifest}
    full = summarize_traces(tables, **opts)
    for group, names in (SIGNAL_GROUPS if in_place else {"headline": ()}).items():
        if group == "headline":
            names = tuple(n for g in SIGNAL_SETS["headline"] for n in SIGNAL_GROUPS[g])
        part = summarize_traces(tables, signals=group, **opts)
        # (process samples and costs the traces do not carry are left out, not "not measurable": these have none)
        names = tuple(n for n in names if not n.startswith(("resources.", "cost.")))
        assert {v.signal for v in part.period} == set(names), group
        assert list(part.values) == [v for v in full.values if v.signal in names], group
        assert list(part.period) == [v for v in full.period if v.signal in names], group
        assert part.windows == full.windows
        assert part.meta["signals"] == sorted(SIGNAL_SETS.get(group, (group,)))
    # the examples and per-source tables come with their group only
    fb = summarize_traces(tables, signals="feedback,instability", **opts)
    assert fb.feedback_by_source == full.feedback_by_source and fb.unstable == full.unstable
    assert "feedback_by_source" not in summarize_traces(tables, signals="latency", **opts).to_dict()


def test_items_in_a_file_and_as_rows_together(week, tmp_path, monkeypatch):
    """One file's items read in place, another's as Arrow rows: the whole analysis, the headline and
    the item-fact groups give what reading everything as rows gives."""
    import pyarrow.parquet as pq

    monkeypatch.setattr(tj, "MIN_BYTES", 0)
    whole = pq.read_table(week / "parquet" / "traces.parquet")
    a, b = tmp_path / "a.parquet", tmp_path / "b.jsonl"
    pq.write_table(whole.slice(0, 200), a)
    b.write_text("".join(json.dumps(r, default=str) + "\n" for r in whole.slice(200).to_pylist()))
    mixed = read_traces([a, b], engine_items=True)
    assert len(mixed.item_sources) == 1 and mixed.items.num_rows
    rows = read_traces([a, b])
    for signals in (None, "headline", "scores,no_result,deprecated"):
        got = summarize_traces(mixed, by=("tenant",), threshold=0.3, signals=signals)
        want = summarize_traces(rows, by=("tenant",), threshold=0.3, signals=signals)
        assert got.values == want.values and got.period == want.period, signals


@pytest.mark.slow  # (the full tier: heavy, and what it guards is covered lighter by default)
def test_rank1_scores_from_the_check_pass(week, tmp_path, monkeypatch):
    """Read with ``rank1`` (the check pass keeps each request's rank-1 scores), the headline and the
    low-confidence group give what decoding the items again gives: a file alone, with another file's
    items as Arrow rows, with the score stage a later one, and a file with missing ranks (no rank-1
    scores kept: the items are read)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from rankgate.traces.signals import top1_only

    assert top1_only(parse_signals("headline")) and top1_only(parse_signals("low_confidence,latency"))
    assert not top1_only(None) and not top1_only(parse_signals("low_confidence,scores"))
    assert not top1_only(parse_signals("latency"))
    monkeypatch.setattr(tj, "MIN_BYTES", 0)
    whole = pq.read_table(week / "parquet" / "traces.parquet")
    a, b = tmp_path / "a.parquet", tmp_path / "b.jsonl"
    pq.write_table(whole.slice(0, 200), a)
    b.write_text("".join(json.dumps(r, default=str) + "\n" for r in whole.slice(200).to_pylist()))
    # no candidate stage: the top-1 score comes from the reranked items
    later = tmp_path / "later.parquet"
    recs = whole.to_pylist()
    for r in recs:
        r["retrieved"] = [i for i in r["retrieved"] if i["stage"] != "candidate"]
    pq.write_table(pa.Table.from_pylist(recs, schema=whole.schema), later)
    # one item without a rank: positions decide, nothing is kept from the check pass
    unranked = tmp_path / "unranked.parquet"
    recs = whole.to_pylist()
    recs[3]["retrieved"][0]["rank"] = None
    pq.write_table(pa.Table.from_pylist(recs, schema=whole.schema), unranked)
    for paths, kept in (([week / "parquet" / "traces.parquet"], True), ([a, b], True), ([later], True),
                        ([unranked], False)):
        fast = read_traces(paths, engine_items=True, rank1=True)
        assert len(fast.item_sources) == 1
        assert (fast.item_sources[0].rank1 is not None) == kept, paths
        if kept:
            assert fast.item_sources[0].rank1.num_rows > 0
        slow = read_traces(paths, engine_items=True)
        assert slow.item_sources[0].rank1 is None
        for signals in ("headline", "low_confidence"):
            got = summarize_traces(fast, by=("tenant",), threshold=0.3, signals=signals)
            want = summarize_traces(slow, by=("tenant",), threshold=0.3, signals=signals)
            assert got.values == want.values and got.period == want.period, (paths, signals)
            assert got.meta["score_stage"] == want.meta["score_stage"]
            low = [v for v in got.period if v.signal == "low_confidence_rate"]
            assert low and low[0].n > 0, (paths, signals)


def test_headline_cli_writes_summary_and_csv_with_the_full_figures(week, tmp_path, monkeypatch):
    monkeypatch.setattr(tj, "MIN_BYTES", 0)  # the file's items stay in the file, as at scale
    p = week / "parquet" / "traces.parquet"
    full, head = tmp_path / "full", tmp_path / "head"
    common = ["traces", "analyze", "--traces", str(p), "--abstention-threshold", "0.3", "--by", "tenant"]
    assert main(common + ["--out", str(full)]) == 0
    assert main(common + ["--out", str(head), "--signals", "headline"]) == 0
    assert sorted(f.name for f in head.iterdir()) == ["signals.csv", "summary.json"]
    f, h = json.loads((full / "summary.json").read_text()), json.loads((head / "summary.json").read_text())
    assert h["signals"] == ["errors", "fallback", "latency", "low_confidence"]
    assert h["operational"]["latency_ms"] == f["operational"]["latency_ms"]
    for group, name in (("operational", "error_rate_per_1k"), ("operational", "client_abort_rate"),
                        ("retrieval", "fallback_rate"), ("retrieval", "low_confidence_rate")):
        assert h[group][name] == f[group][name], name
    assert set(h["retrieval"]) == {"fallback_rate", "low_confidence_rate"}
    assert h["segments"] == {seg: {k: v for k, v in sigs.items() if k in h["segments"][seg]}
                             for seg, sigs in f["segments"].items()}
    assert h["examples"]["low_confidence"] == f["examples"]["low_confidence"]
    assert "feedback_by_source" not in h and "unstable" not in h["examples"]
    wanted = {n for g in SIGNAL_SETS["headline"] for n in SIGNAL_GROUPS[g]}
    assert _rows(head / "signals.csv") == [r for r in _rows(full / "signals.csv") if r["signal"] in wanted]


def test_unknown_signal_group_exits_2_naming_the_valid_ones(week, tmp_path, capsys):
    out = tmp_path / "o"
    code = main(["traces", "analyze", "--traces", str(week / "parquet" / "traces.parquet"), "--out", str(out),
                 "--signals", "headline,latncy"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert "'latncy'" in err[0] and "headline, all, latency" in err[0]
    assert not out.exists()


# -- no pandas in the rankgate process ---------------------------------------------------------------
_DRIVER = """
import os, sys
real_exit = os._exit
def report(code):
    sys.stderr.write("PANDAS=%s\\n" % ("pandas" in sys.modules))
    sys.stderr.flush()
    real_exit(code)
os._exit = report
sys.argv = ["rankgate"] + sys.argv[1:]
from rankgate.cli.main import entry
entry()
"""


def _run_entry(args, tmp_path):
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT / "src"), "PYTHONHASHSEED": "0"}
    res = subprocess.run([sys.executable, "-c", _DRIVER, *map(str, args)], capture_output=True, text=True,
                         cwd=tmp_path, env=env, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    return res.stderr.strip().splitlines()[-1]


@pytest.mark.slow  # (the full tier: heavy, and what it guards is covered lighter by default)
@pytest.mark.skipif(importlib.util.find_spec("pandas") is None,
                    reason="pandas is not installed here: nothing could import it")
def test_rankgate_process_does_not_import_pandas(week, tmp_path):
    """The executable's own process, with pandas installed: traces analyze (items in the file and as
    Arrow rows), a headline run, and evaluate leave pandas unimported."""
    p = week / "parquet" / "traces.parquet"
    assert _run_entry(["traces", "analyze", "--traces", p, "--out", tmp_path / "a", "--abstention-threshold",
                       "0.3", "--by", "tenant,source"], tmp_path) == "PANDAS=False"
    assert _run_entry(["traces", "analyze", "--traces", p, "--out", tmp_path / "b", "--signals", "headline"],
                      tmp_path) == "PANDAS=False"
    gold, run = tmp_path / "gold.jsonl", tmp_path / "run.jsonl"
    gold.write_text("".join(json.dumps({"query_id": f"q{i}", "query": f"question {i}",
                                        "relevant": {f"d{i}": 1}}) + "\n" for i in range(20)))
    run.write_text("".join(json.dumps({"query_id": f"q{i}", "results": [{"id": f"d{j}", "score": 1.0 / (j + 1)}
                                                                       for j in range(i, i + 5)]}) + "\n"
                           for i in range(20)))
    assert _run_entry(["evaluate", "--gold", gold, "--run", run, "--out", tmp_path / "e"], tmp_path) == "PANDAS=False"


@pytest.mark.skipif(importlib.util.find_spec("pandas") is None,
                    reason="pandas is not installed here: nothing could import it")
def test_the_guard_leaves_pandas_to_others(tmp_path):
    """Code that is not rankgate's, pyarrow's or DuckDB's still gets pandas in the same process."""
    code = ("import sys; from rankgate._util.pandas_guard import install; install(); "
            "from rankgate.traces.columnar import _aborts; _aborts(); assert 'pandas' not in sys.modules; "
            "import pandas; print(pandas.__name__)")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT / "src")})
    assert res.returncode == 0 and res.stdout.strip() == "pandas", res.stderr[-2000:]
