"""The columnar path of the trace JSONL/Parquet readers gives exactly the row reader's tables and errors."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import rankgate.traces.formats.jsonl as tj
from rankgate.errors import InputError
from rankgate.traces import read_traces

from .conftest import examples, sampled
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import trace_gen

BASE = trace_gen.records_table(trace_gen.logical(trace_gen.Spec(days=7, per_day=6, seed=3)), iso=True).to_pylist()


def _set(path, value):
    def f(rec):
        obj = rec
        keys = path.split(".")
        for k in keys[:-1]:
            obj = obj[int(k)] if isinstance(obj, list) else obj[k]
        last = keys[-1]
        if value is _DEL:
            obj.pop(last, None)
        elif isinstance(obj, list):
            obj[int(last)] = value
        else:
            obj[last] = value
        return rec
    return f


_DEL = object()
MUTATIONS = {
    "int id": _set("request_id", 12345),
    "empty query": _set("query", ""),
    "query_text only": lambda r: (r.pop("query"), r.update(query_text="Q?"), r)[2],
    "no timestamp": _set("timestamp", _DEL),
    "offset ts": _set("timestamp", "2026-05-01T10:00:00.5+05:30"),
    "space ts": _set("timestamp", "2026-05-01 10:00:00"),
    "nanos ts": _set("timestamp", "2026-05-01T10:00:00.123456789Z"),
    "padded ts": _set("timestamp", " 2026-05-01T10:00:00Z"),
    "leap second": _set("timestamp", "2026-06-30T23:59:60Z"),
    "feb 29 2026": _set("timestamp", "2026-02-29T00:00:00Z"),
    "feb 29 2028": _set("timestamp", "2028-02-29T00:00:00Z"),
    "offset 2400": _set("timestamp", "2026-05-01T00:00:00+24:00"),
    "top_k 0": _set("top_k", 0),
    "top_k text": _set("top_k", "5"),
    "top_k float": _set("top_k", 5.0),
    "http 499": _set("http_status", 499),
    "http 700": _set("http_status", 700),
    "abort type": lambda r: (r.update(client_abort=None, error_type=" Cancelled "), r)[1],
    "non-ascii error": lambda r: (r.update(client_abort=None, error_type="ÇANCELLED"), r)[1],
    "status odd": _set("status", "timeout"),
    "status empty": _set("status", ""),
    "negative timing": _set("timings_ms.rerank", -1.0),
    "timings not object": _set("timings_ms", 5),
    "retry -1": _set("retry.attempts", -1),
    "privacy huge": _set("privacy.sensitive_tokens", 2**63),
    "no rank": _set("retrieved.3.rank", _DEL),
    "rank 0": _set("retrieved.0.rank", 0),
    "stage odd": _set("retrieved.0.stage", "final"),
    "status empty item": _set("retrieved.0.status", ""),
    "status odd item": _set("retrieved.0.status", "old"),
    "status synonym": _set("retrieved.0.status", "Current"),
    "date only ts": _set("timestamp", "2026-05-01"),
    "empty id": _set("retrieved.0.id", ""),
    "int doc_id": _set("retrieved.0.doc_id", 17),
    "score text": _set("retrieved.0.score", "0.5"),
    "score int": _set("retrieved.0.score", 1),
    "item not object": _set("retrieved.0", "x"),
    "extra field": _set("retrieved.0.extra", {"a": [1, {"b": 2}]}),
    "citation no id": _set("citations", [{"version": "v1"}]),
    "citation doc only": _set("citations", [{"doc_id": "d1", "version": "v1"}]),
    "feedback label": _set("feedback", [{"value": "thumbs_down"}]),
    "feedback null": _set("feedback", [{"value": None}]),
    "feedback negative": _set("feedback", [{"value": 1, "negative": True}]),
    "duplicate id": _set("request_id", "r0"),
    "null lists": lambda r: (r.update(retrieved=None, citations=None, feedback=None), r)[1],
    "conversation_id": lambda r: (r.update(conversation_id=r.pop("session")), r)[1],  # (trace_gen writes session)
    "conversation_id and session": _set("conversation_id", "c-9"),
    "int session": _set("session", 7),
    "cost": _set("cost", {"tokens_in": 1840, "tokens_out": 212, "usd": 0.0021, "embed_ms": 3.1, "rerank_ms": 41.0}),
    "cost other keys": _set("cost", {"usd": 0.5, "gpu_ms": 3, "a_first": 1.5, "none": None}),
    "cost empty": _set("cost", {}),
    "cost null": _set("cost", None),
    "cost null key": _set("cost", {"usd": None, "tokens_in": 3}),
    "cost not object": _set("cost", 0.5),
    "cost list": _set("cost", [1, 2]),
    "cost negative": _set("cost", {"usd": -0.01}),
    "cost text": _set("cost", {"tokens_in": "1840"}),
    "cost bool": _set("cost", {"tokens_out": True}),
    "cost other text": _set("cost", {"gpu": "fast"}),
    "cost other negative": _set("cost", {"gpu_ms": -1}),
    "cost nested": _set("cost", {"usd": {"total": 1}}),
}
RAW = {  # whole-line edits of the JSONL text (line 3)
    "blank line": lambda line: line + "\n",
    "crlf": lambda line: line + "\r",
    "duplicate key": lambda line: line[:-1] + ', "tenant": "zz"}',
    "surrogate": lambda line: line.replace('"query": "', '"query": "\\ud800', 1),
    "paired surrogate": lambda line: line.replace('"query": "', '"query": "\\ud83d\\ude00', 1),
    "nan": lambda line: line.replace('"soft_deadline_ms": 2500.0', '"soft_deadline_ms": NaN'),
    "huge number": lambda line: line.replace('"soft_deadline_ms": 2500.0', '"soft_deadline_ms": 1e400'),
    "two objects": lambda line: line + ' {"request_id": "zz"}',
    "garbage": lambda line: line + " x",
    "deep": lambda line: line[:-1] + ', "deep": ' + "[" * 600 + "]" * 600 + "}",
    "array line": lambda line: "[" + line + "]",
    "cost nan": lambda line: line[:-1] + ', "cost": {"usd": NaN}}',
    "cost infinity": lambda line: line[:-1] + ', "cost": {"rerank_ms": Infinity}}',
    "cost huge": lambda line: line[:-1] + ', "cost": {"tokens_in": 1e400}}',
    "cost duplicate key": lambda line: line[:-1] + ', "cost": {"usd": 1, "usd": -1}}',
    "cost duplicate key ok": lambda line: line[:-1] + ', "cost": {"usd": -1, "usd": 1}}',
}


def outcome(path, fast, on_error="error"):
    try:
        t = read_traces(path, format="jsonl", fast=fast, on_error=on_error)
    except InputError as exc:
        return ("error", str(exc))
    return ("ok", {n: getattr(t, n) for n in ("requests", "items", "citations", "feedback")})


def same(a, b):
    assert a[0] == b[0], (a, b)
    if a[0] == "error":
        assert a[1] == b[1]
    else:
        for n in a[1]:
            assert a[1][n].equals(b[1][n]), n


@pytest.fixture(autouse=True)
def _force_fast(monkeypatch):
    monkeypatch.setattr(tj, "MIN_BYTES", 0)


def test_clean_file_takes_the_fast_path_and_agrees(tmp_path, monkeypatch):
    p = tmp_path / "t.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in BASE))
    calls = []
    import rankgate.traces.columnar as col

    orig = col.convert
    monkeypatch.setattr(col, "convert", lambda *a, **k: calls.append(1) or orig(*a, **k))
    fast = outcome(p, True)
    assert calls, "the columnar path was not taken"
    same(fast, outcome(p, False))
    pq.write_table(pa.Table.from_pylist(BASE), tmp_path / "t.parquet")
    same(outcome(tmp_path / "t.parquet", True), outcome(tmp_path / "t.parquet", False))
    a = read_traces(tmp_path / "t.parquet").requests.drop(["source_file"])
    assert a.equals(read_traces(p).requests.drop(["source_file"]))


@pytest.mark.parametrize("name", sampled(MUTATIONS))
def test_mutation_jsonl(tmp_path, name):
    recs = copy.deepcopy(BASE)
    recs[2] = MUTATIONS[name](recs[2])
    p = tmp_path / "t.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in recs))
    same(outcome(p, True), outcome(p, False))


def _mutated_parquet(tmp_path, name):
    """BASE with MUTATIONS[name] applied to its third record, as Parquet (skips what Parquet cannot hold)."""
    recs = copy.deepcopy(BASE)
    recs[2] = MUTATIONS[name](recs[2])
    try:
        table = pa.Table.from_pylist(recs)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        pytest.skip("not storable as one Parquet column type")
    p = tmp_path / "t.parquet"
    pq.write_table(table, p)
    return p


@pytest.mark.parametrize("name", sampled(MUTATIONS))
def test_mutation_parquet(tmp_path, name):
    p = _mutated_parquet(tmp_path, name)
    same(outcome(p, True), outcome(p, False))


@pytest.mark.parametrize("name", sampled(MUTATIONS))
def test_mutation_jsonl_skip_mode(tmp_path, name):
    recs = copy.deepcopy(BASE)
    recs[2] = MUTATIONS[name](recs[2])
    p = tmp_path / "t.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in recs))
    fast, slow = (read_traces(p, format="jsonl", fast=f, on_error="skip") for f in (True, False))
    assert fast.skipped == slow.skipped
    for n in ("requests", "items", "citations", "feedback"):
        assert getattr(fast, n).equals(getattr(slow, n)), n


@pytest.mark.parametrize("name", sorted(RAW))
def test_raw_line_edits(tmp_path, name):
    lines = [json.dumps(r) for r in BASE]
    lines[2] = RAW[name](lines[2])
    p = tmp_path / "t.jsonl"
    p.write_text("\ufeff" + "\n".join(lines) + "\n", encoding="utf-8")
    same(outcome(p, True), outcome(p, False))


def test_duplicates_across_fast_and_row_read_files(tmp_path):
    """A request id used twice is named at both places whichever path read each file."""
    a, b, c = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "c.parquet"
    a.write_text("".join(json.dumps(r) + "\n" for r in BASE))
    b.write_text("".join(json.dumps(r) + "\n" for r in BASE[5:7]))
    pq.write_table(pa.Table.from_pylist(BASE[3:4]), c)
    for files, where in (([a, b], f"{b}:1: field 'request_id' request_id 'r5' is already used at {a}:6"),
                         ([b, a], f"{a}:6: field 'request_id' request_id 'r5' is already used at {b}:1"),
                         ([a, c], f"{c}:1: field 'request_id' request_id 'r3' is already used at {a}:4")):
        for fast in (True, False):
            with pytest.raises(InputError) as e:
                read_traces(files, fast=fast)
            assert str(e.value).startswith(where), (files, fast)


# -- items left in the Parquet file for DuckDB (rankgate.traces.native) --------------------------------
def _sorted(t):
    return t.sort_by([(c, "ascending") for c in t.column_names])


def _engine_outcome(path):
    try:
        t = read_traces(path, engine_items=True)
    except InputError as exc:
        return ("error", str(exc)), None
    items = t.all_items()
    return ("ok", {"requests": t.requests, "items": _sorted(items), "citations": t.citations,
                   "feedback": t.feedback}), t


def _summaries_agree(engine_tables, path, backend=None, manifest=None):
    from rankgate.render.traces import signals_csv, summary_json
    from rankgate.traces.signals import summarize_traces

    arrow = read_traces(path)
    assert not arrow.item_sources
    kw = dict(by=("tenant", "source"), threshold=0.5, window="1d", manifest=manifest)
    a = summarize_traces(engine_tables, backend=backend, **kw)
    b = summarize_traces(arrow, **kw)
    assert signals_csv(a) == signals_csv(b)
    assert summary_json(a).replace('"engine": "other"', '"engine": "duckdb"') == summary_json(b)


@pytest.mark.parametrize("name", sampled(MUTATIONS, every=9))
def test_mutation_parquet_items_in_engine(tmp_path, name):
    """Items read by DuckDB in place are the rows the Arrow paths build; anything they would refuse
    sends the file to them (same result or same error)."""
    p = _mutated_parquet(tmp_path, name)
    got, tables = _engine_outcome(p)
    want = outcome(p, False)
    if want[0] == "ok":
        want[1]["items"] = _sorted(want[1]["items"])
    same(got, want)
    if tables is not None and tables.item_sources:
        _summaries_agree(tables, p)


@pytest.mark.slow  # (the full tier: heavy, and what it guards is covered lighter by default)
def test_items_in_engine_whole_summary(tmp_path):
    """A generated week with incidents, unranked items and empty strings: one file's items stay in
    the file, and every signal, example and count is the Arrow path's, on DuckDB and on an engine
    that is given the items as Arrow rows."""
    recs = trace_gen.records_table(trace_gen.logical(trace_gen.Spec(days=7, per_day=120, seed=5)), iso=True).to_pylist()
    for i, r in enumerate(recs):
        for j, it in enumerate(r["retrieved"]):
            if (i + j) % 11 == 0:
                it["rank"] = None  # an input position decides
            if (i * 7 + j) % 13 == 0:
                it["source"] = ""
            if (i + 3 * j) % 17 == 0:
                it["status"] = ""
    p = tmp_path / "t.parquet"
    pq.write_table(pa.Table.from_pylist(recs), p)
    got, tables = _engine_outcome(p)
    assert tables.item_sources and tables.item_sources[0].positions and tables.items.num_rows == 0
    want = outcome(p, False)
    want[1]["items"] = _sorted(want[1]["items"])
    same(got, want)
    _summaries_agree(tables, p)

    from rankgate.traces.engines import DuckDBBackend

    class Other(DuckDBBackend):  # an engine that cannot read the file in place (as Spark)
        name = "other"

    _summaries_agree(tables, p, backend=Other())


def test_items_in_engine_with_a_corpus_manifest(tmp_path):
    """Item status and stale citations from a corpus manifest: the manifest joins the file's items."""
    from rankgate.corpus import load_manifest

    trace_gen.generate(tmp_path, trace_gen.Spec(days=7, per_day=150, seed=4), formats=("parquet",))
    p = tmp_path / "parquet" / "traces.parquet"
    tables = read_traces(p, engine_items=True)
    assert tables.item_sources
    _summaries_agree(tables, p, manifest=load_manifest(str(tmp_path / "corpus.jsonl")))


def test_items_in_engine_mixed_with_arrow_items(tmp_path):
    """One file in place, one small file read row by row: the view unites both."""
    a, b = tmp_path / "a.parquet", tmp_path / "b.jsonl"
    pq.write_table(pa.Table.from_pylist(BASE[:30]), a)
    b.write_text("".join(json.dumps(r) + "\n" for r in BASE[30:]))
    tables = read_traces([a, b], engine_items=True)
    assert len(tables.item_sources) == 1 and tables.items.num_rows > 0
    both = read_traces([a, b])
    assert _sorted(tables.all_items()).equals(_sorted(both.items))
    from rankgate.render.traces import signals_csv
    from rankgate.traces.signals import summarize_traces

    assert signals_csv(summarize_traces(tables, by=("tenant",))) == signals_csv(summarize_traces(both, by=("tenant",)))


def test_items_in_engine_file_changed_is_an_error(tmp_path):
    p = tmp_path / "t.parquet"
    pq.write_table(pa.Table.from_pylist(BASE), p)
    tables = read_traces(p, engine_items=True)
    assert tables.item_sources
    pq.write_table(pa.Table.from_pylist(BASE[:-1]), p)
    from rankgate.traces.signals import summarize_traces

    with pytest.raises(InputError, match="changed or disappeared while it was being read"):
        summarize_traces(tables)


def test_items_in_engine_file_changed_during_the_analysis_is_an_error(tmp_path, monkeypatch):
    import os

    import rankgate.traces.native as native
    from rankgate.traces.signals import summarize_traces

    p = tmp_path / "t.parquet"
    pq.write_table(pa.Table.from_pylist(BASE), p)
    tables = read_traces(p, engine_items=True)
    view = native.items_view

    def then_touch(*a, **k):  # the file changes after the view is made, while statements run
        out = view(*a, **k)
        st = os.stat(p)
        os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
        return out

    monkeypatch.setattr(native, "items_view", then_touch)
    with pytest.raises(InputError, match="changed or disappeared while it was being read"):
        summarize_traces(tables)


def test_items_in_engine_types_it_does_not_take(tmp_path):
    """Integer scores go through Arrow (the columnar path casts them), with the same result."""
    recs = copy.deepcopy(BASE)
    for r in recs:
        for it in r["retrieved"]:
            it["score"] = None if it["score"] is None else int(it["score"] * 1000)
    p = tmp_path / "t.parquet"
    pq.write_table(pa.Table.from_pylist(recs), p)
    tables = read_traces(p, engine_items=True)
    assert not tables.item_sources and tables.items.num_rows
    same(_engine_outcome(p)[0], (lambda o: (o[0], {**o[1], "items": _sorted(o[1]["items"])}))(outcome(p, False)))


# -- DuckDB groups the items once (queries.Dialect.lists) -------------------------------------------------
def _separate_backend(connection=None):
    """DuckDB running the item statements one by one, as Spark does (no list values)."""
    import dataclasses

    from rankgate.traces.engines import DuckDBBackend
    from rankgate.traces.queries import DUCKDB

    class Separate(DuckDBBackend):
        dialect = dataclasses.replace(DUCKDB, lists=False)

    return Separate(connection)


# (pairs.rbo, a floating-point sum in the engine's order, only orders the examples: left out)
_INTERMEDIATE = {"rq": "*", "req_src": "*", "topk": "*", "lists": "*",
                 "pairs": "request_id, w, ref_id, len_a, len_b, same_ver, same_list, n_common"}


def _both_ways(source, **kw):
    """summarize_traces with the items grouped once and statement by statement: the summaries (CSV and
    JSON, byte for byte) and the intermediate tables they were computed from."""
    import duckdb

    from rankgate.render.traces import signals_csv, summary_json
    from rankgate.traces.engines import DuckDBBackend
    from rankgate.traces.signals import summarize_traces

    out = []
    for make in (DuckDBBackend, _separate_backend):
        con = duckdb.connect()
        backend = make(con)
        assert backend.dialect.lists is (make is DuckDBBackend)
        s = summarize_traces(source, backend=backend, **kw)
        names = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables() UNION ALL "
                                           "SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
        tables = {n: con.execute(f"SELECT {cols} FROM {n} ORDER BY ALL").fetchall()
                  for n, cols in _INTERMEDIATE.items() if n in names}
        out.append((signals_csv(s), summary_json(s), tables))
        con.close()
    (csv_a, json_a, t_a), (csv_b, json_b, t_b) = out
    assert csv_a == csv_b and json_a == json_b
    assert t_a == t_b
    return t_a


def _week_with_repeats(seed=5, per_day=40):
    """A generated week with unranked items, empty strings, an id listed twice in one top-k and ids
    holding the list separator."""
    recs = trace_gen.records_table(trace_gen.logical(trace_gen.Spec(days=7, per_day=per_day, seed=seed)),
                                   iso=True).to_pylist()
    for i, r in enumerate(recs):
        items = r["retrieved"]
        for j, it in enumerate(items):
            if (i + j) % 11 == 0:
                it["rank"] = None
            if (i * 7 + j) % 13 == 0:
                it["source"] = ""
        reranked = [it for it in items if it["stage"] == "reranked"]
        if i % 9 == 0 and len(reranked) > 3:
            reranked[3]["id"] = reranked[0]["id"]  # the same chunk at two ranks
        if i % 10 == 0 and len(reranked) > 4:
            reranked[4]["rank"] = reranked[2]["rank"]  # a tie
    return recs


@pytest.mark.parametrize("in_place", [pytest.param(True, marks=pytest.mark.slow), False], ids=["items-in-file", "arrow-items"])
def test_items_grouped_once_give_the_separate_statements_rows(tmp_path, in_place):
    """Every signal, example and intermediate table (top-k positions, list signatures, sources) is the
    same whether DuckDB groups the items once or runs each statement on its own: items in the file
    (with input positions for missing ranks) or as Arrow rows, a repeated id in a top-k list, ties."""
    from rankgate.corpus import load_manifest

    trace_gen.generate(tmp_path / "gen", trace_gen.Spec(days=7, per_day=40, seed=5), formats=())  # its corpus
    p = tmp_path / "t.parquet"
    pq.write_table(pa.Table.from_pylist(_week_with_repeats()), p)
    source = read_traces(p, engine_items=in_place)
    assert bool(source.item_sources) is in_place
    t = _both_ways(source, by=("tenant", "source"), threshold=0.5)
    assert len(t["topk"]) > 100 and len(t["req_src"]) > 100 and t["pairs"]
    manifest = load_manifest(str(tmp_path / "gen" / "corpus.jsonl"))
    _both_ways(source, by=("source",), threshold=0.5, manifest=manifest, k=3)
    for signals in ("instability", "feedback", "deprecated,low_confidence"):
        _both_ways(source, by=("source",), threshold=0.5, signals=signals)


@pytest.mark.slow  # (the full tier: heavy, and what it guards is covered lighter by default)
def test_items_grouped_once_property():
    """Random small result lists (few ids, so repeats and ties are common; ids with the separator and
    non-ASCII text): the top-k rows and list signatures of both ways are equal for every k."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from .traces_tables import at, tables

    ids = st.sampled_from(["a", "b", "é", "a\x1fb", "10", "9"])
    item = st.tuples(st.sampled_from(["reranked", "reranked", "packed", "candidate"]), st.integers(1, 4), ids,
                     st.sampled_from([None, "wiki", "faq"]))

    @settings(max_examples=examples(25), deadline=None, derandomize=True)
    @given(st.lists(st.lists(item, min_size=2, max_size=9), min_size=2, max_size=8), st.integers(1, 5))
    def check(lists, k):
        reqs = [{"request_id": f"r{i}", "ts": at(i % 3, i), "query_text": f"q{i % 2}"} for i in range(len(lists))]
        rows = [{"request_id": f"r{i}", "stage": s, "rank": rk, "item_id": x, "source": src}
                for i, lst in enumerate(lists) for s, rk, x, src in lst]
        cits = [{"request_id": f"r{i}", "item_id": lst[0][2]} for i, lst in enumerate(lists) if lst and i % 2]
        _both_ways(tables(reqs, rows, cits), by=("source",), k=k, min_support=1)

    check()


# -- the items read once (rankgate.traces.item_columns) ----------------------------------------------------
def _ranked_week(seed=6, per_day=40, drop=()):
    """A generated week whose items all have a rank (the one pass over the items takes such a file), with
    what the aggregates must get right: empty sources and statuses, items without a score, an id listed
    twice in one top-k, ties, two rank-1 items in a stage, items logged out of rank order, ids holding the
    list separator, non-ASCII ids, requests with no items and with a null list; ``drop``: stages left out."""
    recs = trace_gen.records_table(trace_gen.logical(trace_gen.Spec(days=7, per_day=per_day, seed=seed)),
                                   iso=True).to_pylist()
    for i, r in enumerate(recs):
        items = [it for it in r["retrieved"] if it["stage"] not in drop]
        for j, it in enumerate(items):
            if (i * 7 + j) % 13 == 0:
                it["source"] = ""
            if (i + 3 * j) % 17 == 0:
                it["status"] = ""
            if (i + j) % 19 == 0:
                it["score"] = None
            if (i + 5 * j) % 29 == 0:
                it["status"] = ("superseded", "retired")[j % 2]
        reranked = [it for it in items if it["stage"] == "reranked"]
        candidates = [it for it in items if it["stage"] == "candidate"]
        if i % 9 == 0 and len(reranked) > 3:
            reranked[3]["id"] = reranked[0]["id"]  # the same chunk at two ranks
        if i % 10 == 0 and len(reranked) > 4:
            reranked[4]["rank"] = reranked[2]["rank"]  # a tie
        if i % 11 == 0 and len(candidates) > 1:
            candidates[1]["rank"] = 1  # two rank-1 candidates: the larger score counts
        listed = reranked or candidates  # (the list stage: the first of these the file has)
        if i % 23 == 0 and len(listed) > 1:
            listed[1]["id"] = "a\x1fb" if i % 2 else "é-" + listed[1]["id"]
        if i % 5 == 0:
            items.reverse()  # logged out of rank order
        r["retrieved"] = items
        if i % 31 == 0:
            r["retrieved"] = []
        if i % 37 == 0:
            r["retrieved"] = None
    return recs


@pytest.mark.parametrize("drop,dictionary", [
    pytest.param((), True, id="all-stages"), pytest.param(("reranked",), True, id="no-reranked", marks=pytest.mark.slow),
    pytest.param((), False, id="plain-encoded", marks=pytest.mark.slow),  # (the full tier)
    pytest.param(("candidate", "packed"), True, id="reranked-only", marks=pytest.mark.slow)])
def test_items_read_once_give_the_statements_rows(tmp_path, drop, dictionary):
    """The per-request facts, top-k lists and sources made from the items decoded once are the rows DuckDB's
    statements give (every signal, example and intermediate table, byte for byte), whichever stages the
    file has (the plan's stages are chosen after reading), with a corpus manifest, other depths k and
    signal selections; and the summaries are the Arrow path's."""
    from rankgate.corpus import load_manifest

    trace_gen.generate(tmp_path / "gen", trace_gen.Spec(days=7, per_day=40, seed=6), formats=())  # its corpus
    p = tmp_path / "t.parquet"
    pq.write_table(pa.Table.from_pylist(_ranked_week(drop=drop)), p, use_dictionary=dictionary,
                   row_group_size=97)  # several row groups and parts
    source = read_traces(p, engine_items=True)
    (src,) = source.item_sources
    assert src.columns and len(src.columns) > 1 and not src.positions and source.items.num_rows == 0
    t = _both_ways(source, by=("tenant", "source"), threshold=0.5)
    assert t["topk"] and t["req_src"] and t["pairs"]
    assert any("\x1f" in row[1] for row in t["topk"])
    manifest = load_manifest(str(tmp_path / "gen" / "corpus.jsonl"))
    for k in (1, 3):
        _both_ways(source, by=("source",), threshold=0.5, manifest=manifest, k=k)
    for signals in ("instability", "feedback", "deprecated,low_confidence", "headline", "scores"):
        _both_ways(source, by=("source",), threshold=0.5, signals=signals)
    _summaries_agree(source, p)
    _summaries_agree(source, p, manifest=manifest)


@pytest.mark.slow  # (the full tier: heavy, and what it guards is covered lighter by default)
def test_items_read_once_counts_and_rank1_scores(tmp_path):
    """The one pass counts what DuckDB's check pass counts and keeps the same rank-1 scores; a file with
    an item without a rank (its input position decides) or with a value the checks refuse is left to
    DuckDB's pass (then to the Arrow path), with the result it gave before."""
    import rankgate.traces.item_columns as ic
    from rankgate.traces import native

    p = tmp_path / "t.parquet"
    pq.write_table(pa.Table.from_pylist(_ranked_week(per_day=20)), p, row_group_size=50)
    import duckdb

    con = duckdb.connect()
    fields = native.item_fields(con, str(p))
    one = native.read_items(con, str(p), str(p), fields, rank1=True)
    duck = native.check(con, str(p), str(p), fields, rank1=True)
    assert one.rank1 is not None and one.columns is None  # (only the rank-1 scores are kept when asked)
    for name in ("fields", "positions", "rows", "scored", "with_status", "stages"):
        assert getattr(one, name) == getattr(duck, name), name
    assert _sorted(one.rank1.cast(duck.rank1.schema)).equals(_sorted(duck.rank1))
    assert native.read_items(con, str(p), str(p), fields).columns
    # declined: a missing rank, a rank 0, an unknown stage, an empty id, a score that is not finite
    recs = _ranked_week(per_day=20)
    for name, edit in (("no rank", ("rank", None)), ("rank 0", ("rank", 0)), ("stage", ("stage", "final")),
                       ("empty id", ("id", "")), ("status", ("status", "old")), ("nan", ("score", float("nan")))):
        bad = copy.deepcopy(recs)
        bad[7]["retrieved"][2][edit[0]] = edit[1]
        q = tmp_path / f"{name}.parquet"
        pq.write_table(pa.Table.from_pylist(bad), q)
        assert ic.scan(str(q), fields) is None, name
        got, tables = _engine_outcome(q)
        want = outcome(q, False)
        if want[0] == "ok":
            want[1]["items"] = _sorted(want[1]["items"])
        same(got, want)
        if tables is not None and tables.item_sources:
            assert tables.item_sources[0].columns is None
            _summaries_agree(tables, q)


@pytest.mark.slow  # (the full tier: heavy, and what it guards is covered lighter by default)
def test_items_read_once_across_files(tmp_path):
    """Two files read once give the statements' rows; when one file is left to DuckDB's pass (an item
    without a rank), the analysis reads every file's items with the statements, with the same result."""
    recs = _ranked_week(per_day=20)
    schema = pa.Table.from_pylist(recs).schema
    a, b, c = tmp_path / "a.parquet", tmp_path / "b.parquet", tmp_path / "c.parquet"
    pq.write_table(pa.Table.from_pylist(recs[:60], schema=schema), a)
    pq.write_table(pa.Table.from_pylist(recs[60:], schema=schema), b, row_group_size=33)
    unranked = copy.deepcopy(recs[60:])
    unranked[5]["retrieved"][1]["rank"] = None
    pq.write_table(pa.Table.from_pylist(unranked, schema=schema), c)
    both = read_traces([a, b], engine_items=True)
    assert all(s.columns for s in both.item_sources) and len(both.item_sources) == 2
    one = read_traces([a, c], engine_items=True)
    assert [s.columns is not None for s in one.item_sources] == [True, False]
    for source in (both, one):
        t = _both_ways(source, by=("tenant", "source"), threshold=0.5)
        assert t["topk"] and t["pairs"]


def test_one_backend_for_analyses_of_both_kinds(tmp_path):
    """A DuckDB backend given to several analyses in turn (items read once, then Arrow items, then again)
    gives each the summary a fresh backend gives: a name that was an Arrow table becomes a kept table or
    a view and back."""
    from rankgate.render.traces import signals_csv
    from rankgate.traces.engines import DuckDBBackend
    from rankgate.traces.signals import summarize_traces

    p = tmp_path / "t.parquet"
    pq.write_table(pa.Table.from_pylist(_ranked_week(per_day=10)), p)
    in_file, arrow = read_traces(p, engine_items=True), read_traces(p)
    assert in_file.item_sources[0].columns and not arrow.item_sources
    kw = dict(by=("source",), threshold=0.5)
    want = signals_csv(summarize_traces(arrow, **kw))
    backend = DuckDBBackend()
    for source in (in_file, arrow, in_file, arrow):
        assert signals_csv(summarize_traces(source, backend=backend, **kw)) == want
    backend.close()


def _with_costs(recs):
    """Every record with a cost object of its own (named keys, some left out, another key on some)."""
    out = copy.deepcopy(recs)
    for i, r in enumerate(out):
        cost = {"tokens_in": 1000 + i, "tokens_out": 100 + i % 7, "usd": round(0.001 * (i % 11), 6)}
        if i % 2:
            cost["rerank_ms"] = 40.0 + i % 5
        if i % 3 == 0:
            cost["gpu_ms"] = float(i % 4)
        r["cost"] = cost
    return out


@pytest.mark.parametrize("kind", ["jsonl", "parquet"])
def test_costs_keep_the_fast_path_and_agree(tmp_path, monkeypatch, kind):
    """Requests with cost objects are read by the columnar path, with the row reader's tables (the cost
    columns, the other keys as a sorted map); a bad value there gives the row reader's error (file, line, field)."""
    recs = _with_costs(BASE)
    p = tmp_path / f"t.{kind}"
    if kind == "jsonl":
        p.write_text("".join(json.dumps(r) + "\n" for r in recs))
    else:
        pq.write_table(pa.Table.from_pylist(recs), p)
    calls = []
    import rankgate.traces.columnar as col

    orig = col.convert
    monkeypatch.setattr(col, "convert", lambda *a, **k: calls.append(1) or orig(*a, **k))
    fast = read_traces(p, fast=True)
    assert calls, "the columnar path was not taken"
    slow = read_traces(p, fast=False)
    assert fast.requests.equals(slow.requests)
    row = slow.requests.slice(3, 1).to_pylist()[0]
    assert (row["cost_tokens_in"], row["cost_tokens_out"], row["cost_usd"], row["cost_rerank_ms"]) == (1003, 103, 0.003, 43.0)
    assert row["cost_other"] == [("gpu_ms", 3.0)]
    assert slow.requests.slice(2, 1).to_pylist()[0]["cost_other"] is None


def test_bad_cost_value_named_the_same_by_both_paths(tmp_path):
    recs = _with_costs(BASE)
    recs[4]["cost"]["usd"] = -0.5
    p = tmp_path / "t.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in recs))
    a, b = outcome(p, True), outcome(p, False)
    same(a, b)
    assert a[0] == "error" and "t.jsonl:5:" in a[1] and "cost.usd" in a[1] and "must be a number >= 0" in a[1], a
