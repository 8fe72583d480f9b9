"""A large TREC run grouped by query is read and scored block by block (scoring.blocks._evaluate_blocks,
called by engine.evaluate): the result must be the one of reading the run whole, value for value and
note for note.

The thresholds are lowered (engine.FULL_DEPTH_ROWS and engine.MEMORY_BLOCK_ROWS, which evaluate reads
on each call and passes down) so that small files take the block path in blocks of a few queries, and
both paths cut rows at the deepest cutoff as a large run is; a spy checks which path ran, and that the
blocks scored the run (a block evaluation gives no result for a run short enough to be scored whole).
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import rankgate._native as accel
from rankgate.scoring import engine
from rankgate.cli.main import main
from rankgate.io import load, trec
from rankgate.errors import InputError

from .conftest import examples

pytestmark = pytest.mark.skipif(accel.reader is None, reason="rankgate._native._reader is not built in this installation")

METRICS = "ndcg@10,recall@5,precision@3,mrr@10,map,hit@3,err@5,rprec"


def _write(tmp_path, seed: int, *, grouped: bool = True, dupes: bool = False, grades: int = 3, chunks: bool = False):
    """A gold set and a run with ties, gold queries the run lacks, run queries not in the gold set,
    queries with nothing relevant, and (``dupes``) an id listed twice in some rankings; ``chunks``:
    ids ``d<doc>#p<part>``, three parts a document."""
    rng = np.random.default_rng(seed)

    def name(d: int) -> str:
        return f"d{d // 3}#p{d % 3}" if chunks else f"d{d}"

    nq = int(rng.integers(8, 40))
    qrels, lines = [], []
    for q in range(nq):
        qid = f"q{rng.integers(0, 10**6):06d}_{q}"
        in_gold, in_run = rng.random() > 0.1, rng.random() > 0.15
        if in_gold or not in_run:
            judged = rng.choice(60, size=int(rng.integers(1, 8)), replace=False)
            for d in judged.tolist():
                qrels.append(f"{qid} 0 {name(d)} {int(rng.integers(0, grades + 1)) if rng.random() > 0.2 else 0}\n")
        if in_run:
            n = int(rng.integers(1, 25))
            docs = rng.choice(60, size=n, replace=False).tolist()
            if dupes and n > 2 and rng.random() < 0.3:
                docs[-1] = docs[0]
            score = 10.0
            for r, d in enumerate(docs, start=1):
                if rng.random() > 0.3:  # else a tie with the row above
                    score -= float(rng.integers(1, 4)) / 4
                lines.append(f"{qid} Q0 {name(d)} {r} {score} sys\n")
    if not qrels:
        qrels.append("qz 0 d1 1\n")
    if not grouped:
        rng.shuffle(lines)
    gold, run = tmp_path / f"qrels{seed}.trec", tmp_path / f"run{seed}.trec"
    gold.write_text("".join(qrels))
    run.write_text("".join(lines))
    return gold, run


@pytest.fixture
def small_blocks(monkeypatch):
    """Block path for every TREC run, blocks of ~300 bytes (a few queries), rows cut at depth as in a
    large run; returns the list of what each block evaluation returned (None: read whole)."""
    return _spied(monkeypatch)


def _spied(mp, *, block_bytes: int = 300) -> list[object]:
    """Small blocks for every run file, rows cut at depth as in a large run; the list that each
    block evaluation's return value goes to (None: the run was read whole after all)."""
    calls: list[object] = []
    inner = engine._evaluate_blocks

    def spy(*args, **kwargs):
        got = inner(*args, **kwargs)
        calls.append(got)
        return got

    mp.setattr(engine, "_evaluate_blocks", spy)
    mp.setattr(engine, "FULL_DEPTH_ROWS", 3)
    mp.setattr(trec, "STREAM_BLOCK_BYTES", block_bytes)
    mp.setattr(load, "STREAM_FROM_BYTES", 0)
    return calls


def _scored_in_blocks(calls, at: int = 0) -> bool:
    """Whether block evaluation ``at`` scored the run (not: gave up, or gave back a run short enough to
    be scored whole, as every test run would be without the lowered FULL_DEPTH_ROWS)."""
    return len(calls) > at and calls[at] is not None and calls[at].result is not None


def _whole_reads(mp) -> list[int]:
    """Count the whole reads of a run (engine._read_run, the one way evaluate reads a run whole)."""
    reads: list[int] = []
    inner = engine._read_run

    def counting(*args, **kwargs):
        reads.append(1)
        return inner(*args, **kwargs)

    mp.setattr(engine, "_read_run", counting)
    return reads


def _whole(monkeypatch, gold, run, **kw):
    with monkeypatch.context() as m:
        m.setattr(load, "STREAM_FROM_BYTES", 1 << 62)
        return engine.evaluate(str(gold), str(run), **kw)


def _same(a, b) -> None:
    assert a.query_ids == b.query_ids
    assert a.metric_names == b.metric_names
    for name in a.metric_names:
        assert a.values[name].dtype == b.values[name].dtype
        assert a.values[name].tobytes() == b.values[name].tobytes(), name
    assert a.first_relevant_rank.tobytes() == b.first_relevant_rank.tobytes()
    assert (a.fields, a.missing_from_run, a.not_in_gold, a.no_answer) == (b.fields, b.missing_from_run,
                                                                           b.not_in_gold, b.no_answer)
    assert a.definitions == b.definitions
    assert a.info == b.info
    assert a.inputs == b.inputs
    assert engine.ties_lines(a) == engine.ties_lines(b)


def _blocks_and_whole(gold, run, **kw):
    """The run evaluated by blocks and read whole: the same result (checked here), then (what each block
    evaluation returned, the whole result); or the same error (checked), then None."""
    with pytest.MonkeyPatch.context() as mp:
        calls = _spied(mp)
        try:
            streamed = engine.evaluate(str(gold), str(run), **kw)
        except InputError as exc:  # e.g. no query shared: the whole run's reading names it
            assert calls == [None]
            with pytest.raises(InputError) as whole_exc:
                _whole(mp, gold, run, **kw)
            assert str(whole_exc.value) == str(exc)
            return None
        whole = _whole(mp, gold, run, **kw)
    _same(streamed, whole)
    return calls, whole


@settings(max_examples=examples(25), deadline=None)
@given(seed=st.integers(0, 10**6), trec_mode=st.sampled_from([(False, False), (True, False), (True, True)]),
       ties=st.sampled_from([None, "id", "input"]))
def test_blocks_give_the_whole_runs_result(tmp_path_factory, seed, trec_mode, ties) -> None:
    tmp_path = tmp_path_factory.mktemp("blocks")
    gold, run = _write(tmp_path, seed)
    got = _blocks_and_whole(gold, run, metrics=METRICS, trec=trec_mode[0], complete=trec_mode[1], ties=ties)
    if got is None:
        return
    calls, whole = got
    if calls[0] is None:  # read whole: only when nothing relevant was retrieved anywhere
        assert not whole.first_relevant_rank.any()
    else:
        assert _scored_in_blocks(calls) and run.stat().st_size > 600  # several blocks


def test_fixed_case_takes_the_block_path_and_matches(tmp_path, monkeypatch, small_blocks) -> None:
    gold, run = _write(tmp_path, 7)
    streamed = engine.evaluate(str(gold), str(run), metrics=METRICS)
    assert _scored_in_blocks(small_blocks)
    whole = _whole(monkeypatch, gold, run, metrics=METRICS)
    _same(streamed, whole)
    assert streamed.missing_from_run and streamed.not_in_gold and streamed.no_answer
    assert streamed.info["ties_differ"] > 0 and streamed.info["evaluated_depth"] is None  # (map: no cutoff)
    blocks = list(trec.trec_run_blocks(str(run), 300))
    assert len(blocks) >= 4 and all(b is not None for b in blocks)
    seen: set[str] = set()
    for b in blocks:
        assert not seen & set(b.query_ids)
        seen |= set(b.query_ids)


def test_depth_cut_and_duplicates_dropped(tmp_path, monkeypatch, small_blocks) -> None:
    gold, run = _write(tmp_path, 11, dupes=True)
    kw = {"metrics": "ndcg@10,recall@5,hit@3", "dedupe": "first"}
    streamed = engine.evaluate(str(gold), str(run), **kw)
    assert _scored_in_blocks(small_blocks)
    whole = _whole(monkeypatch, gold, run, **kw)
    _same(streamed, whole)
    assert streamed.info["duplicates_dropped"] > 0 and streamed.info["evaluated_depth"] == 10


def test_a_repeated_id_is_named_as_when_read_whole(tmp_path, monkeypatch, small_blocks) -> None:
    gold, run = _write(tmp_path, 11, dupes=True)
    with pytest.raises(InputError) as streamed:
        engine.evaluate(str(gold), str(run), metrics="ndcg@10")
    assert small_blocks == [None]
    with pytest.raises(InputError) as whole:
        _whole(monkeypatch, gold, run, metrics="ndcg@10")
    assert str(streamed.value) == str(whole.value) and "repeated ids in all" in str(whole.value)


def test_a_file_not_grouped_by_query_is_read_whole(tmp_path, monkeypatch, small_blocks) -> None:
    """Its first lines show it (no block is read first); a file grouped at its head but not further
    on is found out by its blocks."""
    gold, run = _write(tmp_path, 5, grouped=False)
    streamed = engine.evaluate(str(gold), str(run), metrics=METRICS)
    assert small_blocks == [] and trec.trec_run_blocks(str(run), 300) is None
    _same(streamed, _whole(monkeypatch, gold, run, metrics=METRICS))
    monkeypatch.setattr(trec, "_HEAD_BYTES", 200)
    gold, run = _write(tmp_path, 6)  # grouped ...
    lines = run.read_text().splitlines(keepends=True)
    first = lines[0].split()
    run.write_text("".join(lines) + f"{first[0]} Q0 dlast 999 -100.0 sys\n")  # ... but the first query comes back
    streamed = engine.evaluate(str(gold), str(run), metrics=METRICS)
    assert small_blocks[-1] is None
    _same(streamed, _whole(monkeypatch, gold, run, metrics=METRICS))


def test_an_irregular_line_is_named_as_when_read_whole(tmp_path, monkeypatch, small_blocks) -> None:
    gold, run = _write(tmp_path, 3)
    lines = run.read_text().splitlines(keepends=True)
    qid = lines[len(lines) - 3].split()[0]
    lines[len(lines) - 3] = f"{qid} Q0 dx 1 notanumber sys\n"
    run.write_text("".join(lines))
    with pytest.raises(InputError) as streamed:
        engine.evaluate(str(gold), str(run), metrics="ndcg@10")
    assert small_blocks == [None]
    with pytest.raises(InputError) as whole:
        _whole(monkeypatch, gold, run, metrics="ndcg@10")
    assert str(streamed.value) == str(whole.value)


def test_a_bad_gold_set_is_named_first_and_the_blocks_are_closed(tmp_path, monkeypatch, small_blocks) -> None:
    """The run's first block is read while the gold set is: a gold set's error is still the one named
    (also when the run has a bad line of its own), and the run's map and read-ahead are let go."""
    gold, run = _write(tmp_path, 12)
    closed: list[bool] = []
    real = trec._blocks

    def spy_blocks(*args, **kwargs):
        try:
            yield from real(*args, **kwargs)
        finally:
            closed.append(True)

    monkeypatch.setattr(trec, "_blocks", spy_blocks)
    good_gold = gold.read_text()
    first, rest = good_gold.split("\n", 1)
    lines = run.read_text().splitlines(keepends=True)
    lines[1] = lines[1].split()[0] + " Q0 dx 1 notanumber sys\n"
    for bad_run in (False, True):
        if bad_run:
            run.write_text("".join(lines))
        gold.write_text(first.rsplit(" ", 1)[0] + " high\n" + rest)  # a grade that is not a number
        closed.clear()
        with pytest.raises(InputError) as got:
            engine.evaluate(str(gold), str(run), metrics="ndcg@10")
        assert str(gold) in str(got.value) and str(run) not in str(got.value)
        assert closed == [True]
    gold.write_text(good_gold)  # then the run's own error, named as when it is read whole
    with pytest.raises(InputError) as got:
        engine.evaluate(str(gold), str(run), metrics="ndcg@10")
    assert "notanumber" in str(got.value) or str(run) in str(got.value)


def test_a_gold_set_with_per_query_k_closes_the_blocks_before_the_whole_read(tmp_path, monkeypatch, small_blocks):
    """Per-query k: no block is scored (the depth cut would differ), and the first block, read beside
    the gold set, and its read-ahead are let go before the run is read whole."""
    gold, run = _write(tmp_path, 13)
    records = {}
    for line in gold.read_text().splitlines():
        q, _, d, grade = line.split()
        records.setdefault(q, []).append({"chunk_id": d, "grade": int(grade)})
    gold_jsonl = tmp_path / "gold.jsonl"
    gold_jsonl.write_text("".join(
        json.dumps({"query_id": q, "relevant_chunks": j, "k": 3 + i % 4,
                    **({} if any(x["grade"] >= 1 for x in j) else {"no_answer": True})}) + "\n"
        for i, (q, j) in enumerate(records.items())))
    closed: list[bool] = []
    real_blocks, real_read = trec._blocks, engine._read_run

    def spy_blocks(*args, **kwargs):
        try:
            yield from real_blocks(*args, **kwargs)
        finally:
            closed.append(True)

    reads: list[list[bool]] = []

    def spy_read(*args, **kwargs):
        reads.append(list(closed))  # (the blocks were closed before the whole read)
        return real_read(*args, **kwargs)

    monkeypatch.setattr(trec, "_blocks", spy_blocks)
    monkeypatch.setattr(engine, "_read_run", spy_read)
    streamed = engine.evaluate(str(gold_jsonl), str(run), metrics="ndcg,recall")
    assert small_blocks == [None] and closed == [True] and reads == [[True]]
    monkeypatch.setattr(engine, "_read_run", real_read)
    _same(streamed, _whole(monkeypatch, gold_jsonl, run, metrics="ndcg,recall"))


def test_resumed_gives_the_first_part_then_the_rest_and_closes_them() -> None:
    from rankgate.io.source import Resumed

    def parts(n: int, fail_at: int = -1):
        for i in range(n):
            if i == fail_at:
                raise InputError("bad part")
            yield i

    assert list(Resumed.take_first(parts(4))) == [0, 1, 2, 3]
    assert list(Resumed.take_first(parts(0))) == []
    first_bad = Resumed.take_first(parts(3, fail_at=0))  # the error comes out of the first next()
    with pytest.raises(InputError, match="bad part"):
        next(first_bad)
    assert list(first_bad) == []
    later_bad = Resumed.take_first(parts(3, fail_at=1))
    assert next(later_bad) == 0
    with pytest.raises(InputError):
        next(later_bad)
    gen = parts(5)
    resumed = Resumed.take_first(gen)
    resumed.close()
    assert list(resumed) == [] and gen.gi_frame is None  # (the generator itself was closed)


def _cli_outputs(tmp_path, monkeypatch, gold, run) -> list[tuple[bytes, bytes]]:
    """metrics.csv and summary.json of `rankgate evaluate` by blocks, then read whole."""
    outs = []
    for name, from_bytes in (("blocks", 0), ("whole", 1 << 62)):
        monkeypatch.setattr(load, "STREAM_FROM_BYTES", from_bytes)
        out = tmp_path / name
        assert main(["evaluate", "--gold", str(gold), "--run", str(run), "-m", METRICS, "--out", str(out),
                     "--resamples", "200"]) == 0
        outs.append(((out / "metrics.csv").read_bytes(), (out / "summary.json").read_bytes()))
    return outs


def test_cli_outputs_are_byte_identical(tmp_path, monkeypatch, small_blocks) -> None:
    gold, run = _write(tmp_path, 7)
    outs = _cli_outputs(tmp_path, monkeypatch, gold, run)
    assert _scored_in_blocks(small_blocks)
    assert outs[0] == outs[1]
    assert json.loads(outs[0][1])["queries"]["not_in_gold"]


def test_doc_level(tmp_path, monkeypatch, small_blocks) -> None:
    gold, run = _write(tmp_path, 13, chunks=True)
    kw = {"metrics": "ndcg@10,recall@5,map,err@5", "level": "doc"}
    streamed = engine.evaluate(str(gold), str(run), **kw)
    assert _scored_in_blocks(small_blocks)
    _same(streamed, _whole(monkeypatch, gold, run, **kw))


def test_run_in_gold_order_and_a_long_query(tmp_path, monkeypatch, small_blocks) -> None:
    """Every gold query ranked, in gold order (blocks are matched to the gold ids slice by slice);
    then one query longer than the boundary scan allows: the file is read whole, same result."""
    rng = np.random.default_rng(4)
    qrels, lines = [], []
    for q in range(30):
        for d in rng.choice(40, size=4, replace=False).tolist():
            qrels.append(f"q{q:03d} 0 d{d} {int(rng.integers(0, 3))}\n")
        for r, d in enumerate(rng.choice(40, size=12, replace=False).tolist(), start=1):
            lines.append(f"q{q:03d} Q0 d{d} {r} {20 - r // 2} sys\n")
    gold, run = tmp_path / "qrels.trec", tmp_path / "run.trec"
    gold.write_text("".join(qrels))
    run.write_text("".join(lines))
    streamed = engine.evaluate(str(gold), str(run), metrics=METRICS)
    assert _scored_in_blocks(small_blocks, -1) and not streamed.missing_from_run and not streamed.not_in_gold
    _same(streamed, _whole(monkeypatch, gold, run, metrics=METRICS))
    monkeypatch.setattr(trec, "_CUT_LINES", 5)  # a query of 12 lines now runs past the scan
    assert trec.trec_run_blocks(str(run), 300) is None
    streamed = engine.evaluate(str(gold), str(run), metrics=METRICS)
    assert len(small_blocks) == 1  # (no block evaluation: the file was read whole)
    _same(streamed, _whole(monkeypatch, gold, run, metrics=METRICS))


# -- JSONL runs: blocks of whole lines, read by the compiled scanner ------------------------------
def _logged(rng, i: int) -> dict[str, object]:
    """What a retriever logs beside a query's list (as ``rankgate retrieve`` and producers write it):
    latencies per stage, an index version, counts; some keys missing, null or nested, in any order."""
    out: dict[str, object] = {}
    if rng.random() < 0.8:
        out["latency_ms"] = {"retrieve": int(rng.integers(5, 90)), "rerank": round(float(rng.random()) * 40, 3)} \
            if i % 3 else float(rng.integers(10, 99))
    if rng.random() < 0.7:
        out["index_version"] = ["v2025_06_01", "v2025_07_01"][i % 2]
    if rng.random() < 0.3:
        out["errors"] = [None, 0, 2, {"timeout": 1}][i % 4]
    if rng.random() < 0.2:
        out["notes"] = {"why": "a \"quoted\", comma'd note, é ✓", "tags": [1, [2, {"x": []}]], "ok": True}
    keys = list(out)
    rng.shuffle(keys)
    return {k: out[k] for k in keys}


def _as_jsonl(run, *, odd_line: str | None = None, repeat_query: bool = False, ranks: str | None = None,
              seed: int = 0, logged: bool = False):
    """The TREC run as a JSONL run, one line per query in file order (the list in rank order), with
    blank lines and CRLF here and there; ``odd_line``: one more line of another shape near the end;
    ``repeat_query``: the first query again on the last line; ``ranks``: items give a ``rank`` (as
    producers write it: 1, 2, 3…, or shuffled, as floats, 0 and -0; "some": on some items only)."""
    rng = np.random.default_rng(seed)
    queries: dict[str, list[dict[str, object]]] = {}
    for line in run.read_text().splitlines():
        q, _, d, _, s, _ = line.split()
        queries.setdefault(q, []).append({"chunk_id": d, "score": float(s)})
    for items in queries.values() if ranks else ():
        kind = int(rng.integers(0, 5))
        given = [i + 1 for i in range(len(items))]
        if kind == 1:
            rng.shuffle(given)
        for i, item in enumerate(items):
            if ranks == "some" and rng.random() < 0.3:
                continue
            item["rank"] = (given[i], float(given[i]) / 2, 0 if i == 0 else given[i], -0.0 if i == 0 else -given[i],
                            given[i])[kind]
    lines = [json.dumps({"query_id": q, "topk": items}) if not logged else
             json.dumps(dict([*_logged(rng, i).items(), ("query_id", q), ("topk", items)][::1 if i % 2 else -1]),
                        ensure_ascii=i % 4 == 0)
             for i, (q, items) in enumerate(queries.items())]
    lines = [ln + ("\r" if i % 7 == 3 else "") + ("\n\n" if i % 5 == 2 else "") for i, ln in enumerate(lines)]
    if odd_line is not None:
        lines.insert(len(lines) - 1, odd_line)
    if repeat_query:
        first = next(iter(queries))
        lines.append(json.dumps({"query_id": first, "topk": queries[first]}))
    out = run.with_suffix(".jsonl")
    out.write_text("\n".join(lines) + "\n")
    return out


@settings(max_examples=examples(25), deadline=None)
@given(seed=st.integers(0, 10**6), ties=st.sampled_from([None, "id", "input"]),
       shape=st.sampled_from(["plain", "odd", "repeat", "ranked", "some ranked", "logged"]))
def test_jsonl_blocks_give_the_whole_runs_result(tmp_path_factory, seed, ties, shape) -> None:
    """Blocks read by the scanner against the whole file read by the line-by-line parser (a small
    file's reader): the same result, or the same error; a block the scanner declines, or a query on
    two lines, sends the file to the whole read. Items that give their rank are read by the scanner
    (under ``--ties input`` a query whose items all have one is ordered by it)."""
    tmp_path = tmp_path_factory.mktemp("jblocks")
    gold, trec_run = _write(tmp_path, seed)
    # (a text that is a number: the parser reads it as its digits, the scanner declines it)
    odd = '{"query_id": "qodd", "topk": [{"chunk_id": "d1", "score": 1.0, "text": 12}]}'
    run = _as_jsonl(trec_run, odd_line=odd if shape == "odd" else None, repeat_query=shape == "repeat",
                    ranks={"ranked": "all", "some ranked": "some"}.get(shape), seed=seed, logged=shape == "logged")
    got = _blocks_and_whole(gold, run, metrics=METRICS, ties=ties)
    if got is None:
        return
    calls, whole = got
    if shape in ("odd", "repeat"):
        assert calls == [None]  # (the odd line or the repeated query: read whole)
    elif calls[0] is None:
        assert not whole.first_relevant_rank.any()


def test_jsonl_blocks_cli_outputs_are_byte_identical(tmp_path, monkeypatch, small_blocks) -> None:
    gold, trec_run = _write(tmp_path, 7)
    run = _as_jsonl(trec_run)
    outs = _cli_outputs(tmp_path, monkeypatch, gold, run)
    assert _scored_in_blocks(small_blocks)
    assert outs[0] == outs[1]
    blocks = list(load.run_blocks(str(run), block_bytes=300, from_bytes=0))
    assert len(blocks) >= 4 and all(b is not None for b in blocks)
    lines = np.concatenate([b.query_lines for b in blocks])
    text = run.read_text().split("\n")
    assert all(text[n - 1].startswith('{"query_id": "' + q) for b, n in
               zip((q for b in blocks for q in b.query_ids), lines.tolist()) for q in [b])


# -- a loaded run scored in blocks (engine._loaded_blocks) --------------------------------------
@settings(max_examples=examples(25), deadline=None)
@given(seed=st.integers(0, 10**6), trec_mode=st.sampled_from([(False, False), (True, False), (True, True)]),
       ties=st.sampled_from([None, "id", "input"]), level=st.sampled_from(["chunk", "doc"]),
       empty_lists=st.booleans(), dupes=st.booleans(), logged=st.sampled_from([None, "all", "some"]))
def test_a_loaded_run_in_blocks_gives_the_whole_result(tmp_path_factory, seed, trec_mode, ties, level,
                                                       empty_lists, dupes, logged) -> None:
    """Blocks of a few rows cut from a loaded run (some queries listing nothing, between blocks or
    inside them; ``logged``: JSONL lines with per-query fields and ranks on all or some items) against
    scoring it whole: the same result, the same error."""
    tmp_path = tmp_path_factory.mktemp("mblocks")
    gold, trec_run = _write(tmp_path, seed, chunks=level == "doc", dupes=dupes)
    g = load.load_gold(str(gold))
    if empty_lists or logged:  # a JSONL run whose lists are in rank order, with empty lists here and there
        run = _as_jsonl(trec_run, ranks=logged, logged=logged is not None, seed=seed)
        lines = run.read_text().split("\n")
        for i in range(0, len(lines) if empty_lists else 0, 4):
            if lines[i].strip():
                lines.insert(i, json.dumps({"query_id": f"qempty{i}", "topk": []}))
        run.write_text("\n".join(lines))
    else:
        run = trec_run
    r = load.load_run(str(run))
    kw = {"metrics": METRICS, "trec": trec_mode[0], "complete": trec_mode[1], "ties": ties, "level": level,
          "dedupe": "first" if dupes and seed % 2 else "error"}
    outcomes = []
    for rows in (7, 1 << 62):
        with pytest.MonkeyPatch.context() as mp:
            calls = _spied(mp)
            mp.setattr(load, "STREAM_FROM_BYTES", 1 << 62)  # (the run is given loaded)
            mp.setattr(engine, "MEMORY_BLOCK_ROWS", rows)
            try:
                outcomes.append((engine.evaluate(g, r, **kw), calls))
            except InputError as exc:
                outcomes.append((str(exc), calls))
    (blocked, calls), (whole, whole_calls) = outcomes
    assert not whole_calls  # (a run of fewer than twice the block's rows is scored whole)
    if isinstance(whole, str) or isinstance(blocked, str):
        assert blocked == whole
        return
    _same(blocked, whole)
    if not dupes:  # (the blocks' path ran and scored the run, unless nothing relevant was retrieved anywhere)
        assert calls and (_scored_in_blocks(calls) or calls[0] is None and not whole.first_relevant_rank.any())


def test_read_ahead_reads_in_order_and_stops_after_a_part_given_up() -> None:
    """Each next part is read while the one before is handed out; nothing after a bad part is read,
    and closing early waits for the read still going on."""
    import threading
    from contextlib import closing

    from rankgate.io.source import read_ahead

    reads: list[int] = []
    lock = threading.Lock()

    def read(i: int) -> int:
        with lock:
            reads.append(i)
        return i

    assert list(read_ahead(5, read, lambda x: True)) == [(i, True) for i in range(5)]
    reads.clear()
    assert list(read_ahead(6, read, lambda x: x != 2)) == [(0, True), (1, True), (2, False)]
    assert sorted(reads) == [0, 1, 2]  # (part 3 never read)
    reads.clear()
    with closing(read_ahead(6, read, lambda x: True)) as parts:
        assert next(parts) == (0, True)
    assert sorted(reads) == [0, 1]  # the read ahead finished before the close returned
    assert list(read_ahead(0, read, lambda x: True)) == []


@pytest.mark.parametrize("piece", [7, 1 << 21])
def test_recorded_digests_are_the_files_bytes_hashed_mapped_or_read(tmp_path, monkeypatch, piece) -> None:
    """An input is hashed from pieces read into one buffer, whatever the piece's size: summary.json
    records the sha256 of the file's bytes, and a dataset in shards is hashed as its shards' bytes in
    order."""
    import hashlib

    from rankgate.io import source
    from rankgate.io.inputs import sha256_files

    monkeypatch.setattr(source, "_HASH_PIECE", piece)
    gold, run = _write(tmp_path, 5)
    out = tmp_path / "out"
    assert main(["evaluate", "--gold", str(gold), "--run", str(run), "-m", "ndcg@10", "--out", str(out),
                 "--resamples", "0"]) == 0
    inputs = json.loads((out / "summary.json").read_text())["inputs"]
    assert inputs["gold"]["sha256"] == hashlib.sha256(gold.read_bytes()).hexdigest()
    assert inputs["run"]["sha256"] == hashlib.sha256(run.read_bytes()).hexdigest()
    empty = tmp_path / "empty.trec"
    empty.write_bytes(b"")  # (an empty file cannot be mapped)
    assert sha256_files([str(run), str(empty), str(gold)]) == \
        hashlib.sha256(run.read_bytes() + gold.read_bytes()).hexdigest()


def test_fixed_width_ids_are_scored_without_importing_pyarrow_compute(tmp_path) -> None:
    """Ids of one prefix and width (``doc_000123``, what most producers write) are parsed to numbers:
    the TREC path needs none of pyarrow.compute, whose import is a tenth of a small run's start-up."""
    import subprocess
    import sys

    gold, run = tmp_path / "qrels.trec", tmp_path / "run.trec"
    gold.write_text("".join(f"q{q} 0 doc_{q * 7 + d:06d} {d % 3}\n" for q in range(30) for d in range(4)))
    run.write_text("".join(f"q{q} Q0 doc_{q * 5 + d:06d} {d + 1} {1 - d / 10} sys\n" for q in range(32) for d in range(9)))
    code = ("import sys; from rankgate.cli.main import main; "
            f"rc = main(['evaluate', '--gold', {str(gold)!r}, '--run', {str(run)!r}, '-m', {METRICS!r}, "
            f"'--out', {str(tmp_path / 'out')!r}]); "
            "print(rc, 'pyarrow.compute' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split()[-2:] == ["0", "False"]


def test_a_file_hashed_ahead_gives_its_digest_once_and_never_a_stale_one(tmp_path, monkeypatch) -> None:
    """hash_ahead hashes large regular files on threads before the command's imports; sha256_file
    takes each digest once, and only while the file is as it was (a changed file is hashed again).
    Pipes and folders are left alone (a pipe hashed ahead would be drained), and at most a few
    digests wait to be asked for."""
    import hashlib
    import os

    from rankgate.io import source

    monkeypatch.setattr(source, "_AHEAD_FROM", 10)
    monkeypatch.setattr(source, "_ahead", {})
    path = tmp_path / "run.trec"
    path.write_bytes(b"q1 Q0 d1 1 2.0 x\n" * 50)
    source.hash_ahead([str(path), str(tmp_path), str(tmp_path / "missing")])
    assert len(source._ahead) == 1
    assert source.sha256_file(str(path)) == hashlib.sha256(path.read_bytes()).hexdigest()
    assert not source._ahead  # (taken)
    source.hash_ahead([str(path)])
    source._ahead[next(iter(source._ahead))]()  # (let the thread finish first)
    source.hash_ahead([str(path)])  # (again: still one entry)
    assert len(source._ahead) == 1
    path.write_bytes(b"q1 Q0 d2 1 2.0 x\n" * 50)  # same size, new bytes
    os.utime(path, ns=(10**18, 10**18))
    assert source.sha256_file(str(path)) == hashlib.sha256(path.read_bytes()).hexdigest()
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    source.hash_ahead([str(fifo)])  # (would block on opening it, were it opened)
    for i in range(20):
        (tmp_path / f"f{i}").write_bytes(b"x" * 20 + bytes([i]))
        source.hash_ahead([str(tmp_path / f"f{i}")])
    assert len(source._ahead) == source._AHEAD_KEPT


def test_a_file_that_gets_shorter_while_it_is_hashed_is_named(tmp_path, monkeypatch) -> None:
    """Hashed a piece at a time, a file cut short between two pieces is an InputError naming it (not
    an internal error, not the digest of half a file); so is one rewritten after its last piece."""
    import os

    from rankgate.io import source

    path = tmp_path / "run.trec"
    path.write_bytes(b"q1 Q0 d1 1 2.0 x\n" * 1000)  # 17,000 bytes: five 4,096-byte pieces
    monkeypatch.setattr(source, "_HASH_PIECE", 4096)
    monkeypatch.setattr(source, "_ahead", {})

    def cut_after(first: int):
        def hook(name: str, offset: int, nbytes: int) -> None:
            if name == str(path) and offset == first:
                os.truncate(path, 5000)
        return hook

    monkeypatch.setattr(source, "after_read", cut_after(0))
    with pytest.raises(InputError, match="changed while it was read") as err:
        source.sha256_file(str(path))
    assert str(path) in str(err.value)
    path.write_bytes(b"q1 Q0 d1 1 2.0 x\n" * 1000)
    monkeypatch.setattr(source, "after_read", cut_after(16384))  # (the last piece: the end's check finds it)
    with pytest.raises(InputError, match="changed while it was read"):
        source.sha256_file(str(path))


# -- item texts no metric reads; runs short enough to be scored whole --------------------------------
def _with_texts(run, seed: int, *, ids: str | None = None):
    """The JSONL run with a text (escapes, non-ASCII, empty, null) and a version on its items, as
    ``rankgate retrieve`` and the documented run line write them; ``ids``: item ids made ``t:`` ids."""
    rng = np.random.default_rng(seed)
    words = ["chunk", "naïve", "中文", "emoji 😀", 'a "quote"', "back\\slash", "tab\there", "line\nbreak", ""]
    lines = []
    for line in run.read_text().split("\n"):
        if not line.strip():
            lines.append(line)
            continue
        obj = json.loads(line)
        for i, item in enumerate(obj["topk"]):
            if ids is not None:
                item["chunk_id"] = f"t:{item['chunk_id']}"
            if rng.random() < 0.8:
                item["text"] = None if rng.random() < 0.1 else " ".join(rng.choice(words, size=3).tolist())
            item["doc_version"] = None if i % 3 else f"2026-0{1 + i % 9}-01"
        lines.append(json.dumps(obj, ensure_ascii=bool(rng.random() < 0.5)))
    out = run.with_name(run.stem + ".texts.jsonl")
    out.write_text("\n".join(lines), encoding="utf-8")
    return out


@settings(max_examples=examples(15), deadline=None)
@given(seed=st.integers(0, 10**6), ties=st.sampled_from([None, "id", "input"]), short=st.booleans())
@example(seed=3535, ties=None, short=False)  # (nothing relevant retrieved: the blocks decline, the whole read scores)
def test_texts_no_metric_reads_are_left_out_with_the_same_result(tmp_path_factory, seed, ties, short) -> None:
    """A JSONL run whose items carry texts and versions: its blocks are read without them when no metric
    reads them (the scanner takes the file), and the result is the whole read's, which keeps them.
    ``short``: a run of at most FULL_DEPTH_ROWS rows, scored whole from its blocks (not read again)."""
    tmp_path = tmp_path_factory.mktemp("texts")
    gold, trec_run = _write(tmp_path, seed)
    run = _with_texts(_as_jsonl(trec_run, seed=seed), seed)
    with pytest.MonkeyPatch.context() as mp:
        calls = _spied(mp)
        reads = _whole_reads(mp)
        if short:
            mp.setattr(engine, "FULL_DEPTH_ROWS", 10**9)
        try:
            streamed = engine.evaluate(str(gold), str(run), metrics=METRICS, ties=ties)
        except InputError as exc:
            with pytest.raises(InputError) as whole_exc:
                _whole(mp, gold, run, metrics=METRICS, ties=ties)
            assert str(whole_exc.value) == str(exc)
            return
        # (scored from its blocks, or short: not read again; a run that retrieves nothing relevant anywhere
        # is read whole, as the blocks' documented decline for the id-mismatch check, which needs every id)
        declined = bool(reads) and not short and not streamed.first_relevant_rank.any()
        assert not reads or declined
        if short:
            whole = _whole(mp, gold, run, metrics=METRICS, ties=ties)
            assert reads == [1]  # (the count sees a whole read)
    if not short:
        whole = _whole(pytest.MonkeyPatch(), gold, run, metrics=METRICS, ties=ties)
    _same(streamed, whole)
    if declined:
        assert calls == [None]
        return
    assert calls and calls[0] is not None
    if short:
        assert calls[0].result is None and len(calls[0].run) == sum(1 for _ in trec_run.open())
    else:
        assert _scored_in_blocks(calls)


def test_a_metric_that_reads_texts_gets_them(tmp_path, monkeypatch, small_blocks) -> None:
    """novelty reads the texts: the blocks are not read without them (the scanner declines the
    strings and the whole read keeps them), with the same result as before."""
    gold, trec_run = _write(tmp_path, 3)
    run = _with_texts(_as_jsonl(trec_run), 3)
    metrics = "novelty@5,ndcg@10"
    streamed = engine.evaluate(str(gold), str(run), metrics=metrics)
    assert small_blocks == [None]
    _same(streamed, _whole(monkeypatch, gold, run, metrics=metrics))
    assert not np.isnan(streamed.values["novelty@5"]).all()


def test_reference_texts_in_the_gold_set_keep_the_runs_texts(tmp_path, monkeypatch, small_blocks) -> None:
    """A gold set matched by text (``t:`` ids) with reference texts: the near-miss check compares them
    with the run's texts, so the run is read whole, with its texts, and the near misses are found."""
    gold, trec_run = _write(tmp_path, 4)
    run = _with_texts(_as_jsonl(trec_run), 4, ids="t")
    said = "The invoice export runs every night and mails a CSV to the billing contact"
    run.write_text(re.sub(r'"text": (null|"[^"\\]*(\\.[^"\\]*)*")', f'"text": "{said}!!"', run.read_text()))
    lines = []
    for line in gold.read_text().splitlines():
        q, _, d, g = line.split()
        lines.append(json.dumps({"query_id": q, "relevant_chunks": [
            {"chunk_id": f"t:{d}x", "grade": 1, "note": f"{said}."}, {"chunk_id": f"t:{d}", "grade": int(g)}]}))
    by_query: dict[str, list] = {}
    for line in lines:
        obj = json.loads(line)
        by_query.setdefault(obj["query_id"], []).extend(obj["relevant_chunks"])
    gold_jsonl = tmp_path / "gold.jsonl"
    gold_jsonl.write_text("\n".join(json.dumps({"query_id": q, "relevant_chunks": list({c["chunk_id"]: c for c in cs}.values())})
                                    for q, cs in by_query.items()) + "\n")
    streamed = engine.evaluate(str(gold_jsonl), str(run), metrics="ndcg@10")
    assert small_blocks == []  # (no block scored: read whole at once)
    whole = _whole(monkeypatch, gold_jsonl, run, metrics="ndcg@10")
    _same(streamed, whole)
    assert streamed.info.get("near_misses", {}).get("count", 0) > 0


def test_a_short_trec_run_is_scored_whole_from_its_blocks(tmp_path, monkeypatch, small_blocks) -> None:
    gold, run = _write(tmp_path, 8)
    monkeypatch.setattr(engine, "FULL_DEPTH_ROWS", 10**9)
    reads = _whole_reads(monkeypatch)
    streamed = engine.evaluate(str(gold), str(run), metrics=METRICS)
    assert len(small_blocks) == 1 and small_blocks[0].result is None and not reads  # (not read again)
    _whole(monkeypatch, gold, run, metrics=METRICS)
    assert reads == [1]  # (the count sees a whole read)
    monkeypatch.undo()
    _same(streamed, _whole(monkeypatch, gold, run, metrics=METRICS))
