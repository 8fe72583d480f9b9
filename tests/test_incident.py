"""``rankgate incident new|add`` end to end on the demo data: a trace of a request that served the 2023
price list becomes a postmortem, then a regression case that the demo's baseline retriever fails and
a fixed one (stale chunks filtered out) passes; bad postmortems are refused; the gold file is never
left half-written."""

from __future__ import annotations

import errno
import json
import os
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rankgate.goldset.incident import parse_postmortem, read_trace

from .hostile import assert_refused
from .test_gold import DEMO, _lines, _run, _write
from .conftest import examples

TRACE = {
    "request_id": "req-7f3a", "timestamp": "2026-06-03T09:14:02Z", "tenant": "shared",
    "query": "team plan price per member each month", "corpus_version": "2026-05-01",
    "retrieved": [
        {"stage": "candidate", "rank": 1, "id": "doc_pricing_2023#c1", "doc_id": "doc_pricing_2023",
         "doc_version": "2023-01-15", "score": 12.4, "status": "superseded"},
        {"stage": "candidate", "rank": 2, "id": "doc_pricing_2026#c1", "doc_id": "doc_pricing_2026",
         "doc_version": "2026-03-01", "score": 11.9, "status": "current"},
        {"stage": "packed", "rank": 1, "id": "doc_pricing_2023#c1", "doc_id": "doc_pricing_2023",
         "doc_version": "2023-01-15", "score": 0.91, "status": "superseded"},
    ],
    "citations": [{"id": "doc_pricing_2023#c1", "version": "2023-01-15"}],
    "feedback": [{"value": "-1", "reason": "wrong price"}],
}


def _fill(text: str, *, link: str | None = "corpus", stage: str | None = "retire") -> str:
    text = text.replace("TODO one-line title", "the 2023 price list was served")
    text = text.replace("TODO: what the user saw, who was affected, for how long.",
                        "A customer was quoted the 2023 Team price.")
    text = text.replace("## Root cause\n\nTODO", "## Root cause\n\nThe superseded 2023 page stayed in the index.")
    text = text.replace("## Fix\n\nTODO", "## Fix\n\nFilter superseded chunks before ranking.")
    text = text.replace("- detectable: TODO (yes or no)", "- detectable: yes")
    text = text.replace("- signal: TODO (which signal or gate should have caught it)", "- signal: forbidden@5 gate")
    text = text.replace("- TODO chunk_id | grade 3 | why it answers the query",
                        "- doc_pricing_2026#c1 | grade 3 | the current Team price")
    if link:
        text = text.replace(f"- [ ] {link}\n", f"- [x] {link}\n")
    if stage:
        text = text.replace(f"- [ ] {stage}\n", f"- [x] {stage}\n")
    return text


def _new(tmp_path: Path, capsys: pytest.CaptureFixture[str], gold: Path) -> Path:
    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps(TRACE), encoding="utf-8")
    out = tmp_path / "postmortem.md"
    code, stdout = _run(["incident", "new", "--trace", trace, "--gold", gold, "-o", out], capsys)
    assert code == 0 and "rankgate incident add" in stdout
    return out


def _evaluate(gold: Path, run: Path, qid: str) -> dict[str, float]:
    from rankgate import evaluate

    result = evaluate(str(gold), str(run), metrics=["recall@5", "forbidden@5"])
    i = result.query_ids.index(qid)
    return {m: float(result.values[m][i]) for m in ("recall@5", "forbidden@5")}


def test_incident_becomes_a_regression_case_the_baseline_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gold = _write(tmp_path / "gold.jsonl", _lines(DEMO / "gold.jsonl"))
    pm = _new(tmp_path, capsys, gold)
    template = pm.read_text(encoding="utf-8")
    assert "- incident_id: inc-req-7f3a" in template and "- date: 2026-06-03" in template
    assert "| packed | 1 | doc_pricing_2023#c1 |" in template.replace("\\_", "_").replace("\\#", "#")
    assert "- [ ] context packing" in template and "- [ ] retire" in template
    assert "must_not_retrieve:\n- doc_pricing_2023#c1" in template  # suggested: it is superseded
    pm.write_text(_fill(template), encoding="utf-8")
    before = gold.read_bytes()
    code, out = _run(["incident", "add", pm, "--gold", gold, "--corpus", DEMO / "corpus.jsonl"], capsys)
    assert code == 0 and "added incident inc-req-7f3a" in out
    after = gold.read_bytes()
    assert after.startswith(before) and after.count(b"\n") == before.count(b"\n") + 1
    case = json.loads(after.splitlines()[-1])
    assert case == {
        "query_id": "inc-req-7f3a", "query": "team plan price per member each month",
        "relevant_chunks": [{"chunk_id": "doc_pricing_2026#c1", "grade": 3, "note": "the current Team price"}],
        "must_not_retrieve": ["doc_pricing_2023#c1"], "source_of_query": "incident", "incident_id": "inc-req-7f3a",
        "failure_link": "corpus", "lifecycle_stage": "retire", "created": "2026-06-03",
        "corpus_version": "2026-05-01", "tags": {"tenant": "shared"}}
    code, out = _run(["gold", "validate", "--gold", gold, "--corpus", DEMO / "corpus.jsonl", "--as-of", "2026-06-04"],
                     capsys)
    assert code == 0 and "| incident |" in out
    # the baseline retriever fails the new case; filtering stale chunks fixes it
    run = tmp_path / "baseline.jsonl"
    code, _ = _run(["retrieve", "--corpus", DEMO / "corpus.jsonl", "--gold", gold, "--retriever", "bm25-multilingual",
                    "-o", run, "--no-latency", "--texts", "none"], capsys)
    assert code == 0
    assert _evaluate(gold, run, "inc-req-7f3a")["forbidden@5"] == 1.0
    status = {r["chunk_id"]: r["status"] for r in _lines(DEMO / "corpus.jsonl")}
    fixed = _write(tmp_path / "fixed.jsonl", [{**r, "topk": [h for h in r["topk"] if status[h["chunk_id"]] == "current"]}
                                               for r in _lines(run)])  # the fix: superseded chunks filtered out
    assert _evaluate(gold, fixed, "inc-req-7f3a") == {"recall@5": 1.0, "forbidden@5": 0.0}
    # the same incident again is refused
    before = gold.read_bytes()
    assert_refused(["incident", "add", pm, "--gold", gold], tmp_path / "none", names=[gold], capsys=capsys,
                   contains=["already holds incident 'inc-req-7f3a'"])
    assert gold.read_bytes() == before
    assert_refused(["incident", "new", "--trace", tmp_path / "trace.json", "--gold", gold, "-o", tmp_path / "p2.md"],
                   tmp_path / "none", capsys=capsys, contains=["already holds incident"])


def test_unfilled_postmortems_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gold = _write(tmp_path / "gold.jsonl", _lines(DEMO / "gold.jsonl"))
    pm = _new(tmp_path, capsys, gold)
    template = pm.read_text(encoding="utf-8")
    before = gold.read_bytes()
    cases = [
        (_fill(template, link=None), ["failure-chain link", "none is ticked"]),
        (_fill(template, stage=None), ["lifecycle stage", "none is ticked"]),
        (_fill(template).replace("- [ ] reranking", "- [x] reranking"), ["tick exactly one", "2 are ticked"]),
        (template, ["not filled in", "more unfilled or invalid"]),
        (_fill(template).replace("- detectable: yes", "- detectable: maybe"), ["field 'detectable'", "yes or no"]),
        (_fill(template).replace("| grade 3 |", "| very |"), ["chunk_id | grade N | note"]),
    ]
    for i, (text, contains) in enumerate(cases):
        path = tmp_path / f"pm{i}.md"
        path.write_text(text, encoding="utf-8")
        assert_refused(["incident", "add", path, "--gold", gold], tmp_path / "none", names=[path], capsys=capsys,
                       contains=contains)
        assert gold.read_bytes() == before
    ghost = tmp_path / "ghost.md"
    ghost.write_text(_fill(template).replace("doc_pricing_2026#c1 | grade 3", "doc_nowhere#c9 | grade 3"))
    assert_refused(["incident", "add", ghost, "--gold", gold, "--corpus", DEMO / "corpus.jsonl"], tmp_path / "none",
                   names=[ghost], capsys=capsys, contains=["doc_nowhere#c9"])
    _, problems = parse_postmortem(template, "pm.md")
    assert len(problems) >= 7  # every problem at once, each naming its line or section
    assert all(p.line is not None or "section" in p.detail or p.field for p in problems)


def test_bad_traces_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    out.mkdir()
    for name, content, contains in [
        ("no_id.json", {"query": "q"}, ["field 'request_id'"]),
        ("stage.json", {**TRACE, "retrieved": [{"stage": "final", "id": "a"}]}, ["retrieved[0].stage"]),
        ("score.json", {**TRACE, "retrieved": [{"stage": "packed", "id": "a", "score": "high"}]}, ["retrieved[0].score"]),
        ("list.json", [TRACE], ["must be a JSON object"]),
    ]:
        path = tmp_path / name
        path.write_text(json.dumps(content), encoding="utf-8")
        assert_refused(["incident", "new", "--trace", path, "-o", out / "pm.md"], out, names=[path], capsys=capsys,
                       contains=contains)
    broken = tmp_path / "broken.json"
    broken.write_text('{"request_id": "r1",\n "query": }')
    assert_refused(["incident", "new", "--trace", broken, "-o", out / "pm.md"], out, names=[broken], capsys=capsys,
                   contains=[":2:"])
    trace = read_trace(str(_trace_file(tmp_path)))
    assert trace.citations == (("doc_pricing_2023#c1", "2023-01-15"),) and len(trace.items) == 3


@pytest.mark.parametrize(("text", "contains"), [
    (json.dumps({**TRACE, "query": ""}), [":1: field 'query' is empty", 'write it in "query"']),
    (json.dumps({**TRACE, "query": " \t "}), [":1: field 'query' is only whitespace"]),
    (json.dumps({k: v for k, v in TRACE.items() if k != "query"} | {"query_text": ""}),
     [":1: field 'query_text' is empty", 'write it in "query_text"']),
    (json.dumps({k: v for k, v in TRACE.items() if k != "query"}),
     ["field 'query' is missing", '"query_text"']),
    (json.dumps({**TRACE, "query": ""}, indent=2), [":5: field 'query' is empty"]),  # (the line of the field)
    (json.dumps({**TRACE, "query": None}, indent=1), [":5: field 'query' is null"]),
])
def test_a_trace_without_a_query_says_so_by_the_name_written(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str],
                                                              text: str, contains: list[str]) -> None:
    """The regression case needs the query: an empty, blank, null or missing one is named as the user
    wrote it (``query`` or ``query_text``), with its line and what to do; never the canonical name."""
    trace = tmp_path / "trace.json"
    trace.write_text(text + "\n", encoding="utf-8")
    out = tmp_path / "out"
    line = assert_refused(["incident", "new", "--trace", trace, "-o", out / "pm.md"], out, names=[trace],
                          capsys=capsys, contains=contains)
    assert "query_text' is missing" not in line


def test_a_request_without_a_query_in_a_trace_jsonl_or_an_export(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """The same in a trace JSONL of several requests (the line of the request) and in another tool's
    export, whose query field rankgate names for the user only in general."""
    out = tmp_path / "out"
    jsonl = tmp_path / "traces.jsonl"
    requests = [{**TRACE, "request_id": "r1"}, {**TRACE, "request_id": "r2", "query": ""}]
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in requests), encoding="utf-8")
    assert_refused(["incident", "new", "--trace", jsonl, "--request-id", "r2", "-o", out / "pm.md"], out,
                   names=[jsonl], capsys=capsys, contains=[":2: field 'query' is empty"])
    from .test_traces_formats import RETRIEVAL, otlp_line

    empty = {"key": "gen_ai.retrieval.query.text", "value": {"stringValue": ""}}
    span = {**RETRIEVAL, "attributes": [empty if a["key"] == empty["key"] else a for a in RETRIEVAL["attributes"]]}
    export = tmp_path / "one.otlp.jsonl"
    export.write_text(otlp_line([span]) + "\n", encoding="utf-8")
    line = assert_refused(["incident", "new", "--trace", export, "-o", out / "pm.md"], out, names=[export],
                          capsys=capsys, contains=[":1: request ", "has no query: its query text is empty"])
    assert "query_text" not in line


def _trace_file(tmp_path: Path) -> Path:
    path = tmp_path / "t.json"
    path.write_text(json.dumps(TRACE), encoding="utf-8")
    return path


@pytest.mark.parametrize("failure", ["replace", "interrupt"])
def test_gold_file_is_never_half_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str], failure: str) -> None:
    gold = _write(tmp_path / "gold.jsonl", _lines(DEMO / "gold.jsonl"))
    pm = _new(tmp_path, capsys, gold)
    pm.write_text(_fill(pm.read_text(encoding="utf-8")), encoding="utf-8")
    before = gold.read_bytes()
    if failure == "replace":
        real = os.replace

        def failing(src: str, dst: str) -> None:
            if os.path.abspath(dst) == os.path.abspath(gold):
                raise OSError(errno.ENOSPC, "No space left on device")
            real(src, dst)

        monkeypatch.setattr(os, "replace", failing)
        assert_refused(["incident", "add", pm, "--gold", gold], tmp_path / "none", names=[gold], capsys=capsys)
    else:  # killed while the new file is being written: half of it on disk, then Ctrl-C
        from rankgate._util import atomic

        real_fdopen = os.fdopen

        class Half:
            def __init__(self, fh):
                self.fh = fh

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                self.fh.close()
                return False

            def write(self, data):
                self.fh.write(data[: len(data) // 2])
                self.fh.flush()
                raise KeyboardInterrupt

        monkeypatch.setattr(atomic.os, "fdopen", lambda fd, mode: Half(real_fdopen(fd, mode)))
        from rankgate.cli.main import main

        assert main(["incident", "add", str(pm), "--gold", str(gold)]) == 130
    assert gold.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir() if re.match(r"\.rankgate-", p.name)) == []


def test_gold_file_is_whole_after_a_process_is_killed_mid_write(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """A real SIGKILL (no handler runs) while ``incident add`` writes the new gold file: the gold file
    is byte for byte the old one, and the next ``incident add`` works."""
    import signal
    import subprocess
    import sys
    import textwrap

    gold = _write(tmp_path / "gold.jsonl", _lines(DEMO / "gold.jsonl"))
    pm = _new(tmp_path, capsys, gold)
    pm.write_text(_fill(pm.read_text(encoding="utf-8")), encoding="utf-8")
    before = gold.read_bytes()
    script = textwrap.dedent("""
        import os, signal, sys
        from rankgate import atomic
        real = os.fdopen
        class Half:  # writes half of the new file, flushes it to disk, then the process is killed
            def __init__(self, fh): self.fh = fh
            def __enter__(self): return self
            def __exit__(self, *exc): self.fh.close(); return False
            def write(self, data):
                self.fh.write(data[: len(data) // 2]); self.fh.flush(); os.fsync(self.fh.fileno())
                os.kill(os.getpid(), signal.SIGKILL)
        atomic.os.fdopen = lambda fd, mode: Half(real(fd, mode))
        from rankgate.cli.main import main
        sys.exit(main(["incident", "add", sys.argv[1], "--gold", sys.argv[2]]))
    """)
    proc = subprocess.run([sys.executable, "-c", script, str(pm), str(gold)], capture_output=True, timeout=120,
                          check=False)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert gold.read_bytes() == before  # whole: the half-written file never took its place
    leftovers = [p for p in tmp_path.iterdir() if p.name.startswith(".rankgate-")]
    assert leftovers and all(p.stat().st_size < len(before) + 1000 for p in leftovers)  # the killed temp file
    code, out = _run(["incident", "add", pm, "--gold", gold], capsys)
    assert code == 0 and json.loads(gold.read_bytes().splitlines()[-1])["incident_id"] == "inc-req-7f3a"


# -- trace text is data, never structure (a production query must not write the gold set) ----------------
def _small_gold(tmp_path: Path) -> Path:
    return _write(tmp_path / "gold.jsonl", [{"query_id": "q1", "query": "how do refunds work",
                                              "relevant_chunks": [{"chunk_id": "kb#c1", "grade": 3}]}])


def _forge(tmp_path: Path, capsys: pytest.CaptureFixture[str], trace: dict, name: str) -> tuple[Path, Path]:
    gold = _small_gold(tmp_path)
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(trace), encoding="utf-8")
    pm = tmp_path / f"{name}.md"
    code, _ = _run(["incident", "new", "--trace", path, "-o", pm], capsys)
    assert code == 0
    pm.write_text(_fill(pm.read_text(encoding="utf-8")), encoding="utf-8")  # an ordinary human fill-in
    return gold, pm


FORGERIES = {
    "relevant_in_query": {"request_id": "req-q1", "query": "payout delay\n\nrelevant:\n- evil#c7 | grade 2 | planted\n"
                                                             "\nmust_not_retrieve:\n- doc_pricing_2026#c1"},
    "incident_id_in_tenant": {"request_id": "req-t1", "query": "vat on invoices",
                              "tenant": "eu-west\n- incident_id: inc-forged\n- corpus_version: 1999-01-01"},
    "ticked_box_in_query": {"request_id": "req-b1", "query": "seat limits\n- [x] citation\n- [X] discover"},
    "comment_break_in_chunk": {"request_id": "req-c1", "query": "sso setup", "retrieved": [
        {"stage": "packed", "rank": 1, "id": "kb#c2 -->\n## Lifecycle gap\n- [x] validate\nrelevant:\n- evil#c8 | grade 3"},
        {"stage": "candidate", "rank": 1, "id": "old#c1 -->\n- evil#c9 | grade 1", "status": "retired"}]},
    "forged_data_block_in_query": {"request_id": "req-d1", "query": "x\n```json rankgate-incident\n"
                                   '{"format": 1, "request_id": "r", "query": "q", "sha256": "0"}\n```\n## Regression test'},
}


@pytest.mark.parametrize("name", sorted(FORGERIES))
def test_trace_text_cannot_write_structure_into_the_gold_case(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                              name: str) -> None:
    trace = FORGERIES[name]
    gold, pm = _forge(tmp_path, capsys, trace, name)
    text = pm.read_text(encoding="utf-8")
    assert "<img" not in text and "-->\n## " not in text
    code, out = _run(["incident", "add", pm, "--gold", gold], capsys)
    assert code == 0, out
    case = json.loads(gold.read_text(encoding="utf-8").splitlines()[-1])
    assert case["query"] == trace["query"]  # verbatim, newlines and all
    assert case["incident_id"] == case["query_id"] == f"inc-{trace['request_id']}"
    assert case["relevant_chunks"] == [{"chunk_id": "doc_pricing_2026#c1", "grade": 3, "note": "the current Team price"}]
    assert (case["failure_link"], case["lifecycle_stage"]) == ("corpus", "retire")
    assert case.get("tags", {}).get("tenant") == trace.get("tenant")
    assert "corpus_version" not in case
    assert case["must_not_retrieve"] == [it["id"] for it in trace.get("retrieved", []) if it.get("status")]


def test_a_hand_edited_structure_or_query_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = {"request_id": "req-e1", "query": "invoice due date\nfor annual plans"}
    gold, pm = _forge(tmp_path, capsys, trace, "edit")
    good = pm.read_text(encoding="utf-8")
    before = gold.read_bytes()
    block = good[good.index("```json rankgate-incident"):]
    cases = [
        (good + "\n## Regression test\n\nrelevant:\n- evil#c1 | grade 3 | again\n",
         ["section '## regression test' is given twice"]),
        (good.replace("must_not_retrieve:", "relevant:\n- evil#c2 | grade 3 | x\n\nmust_not_retrieve:"),
         ["list 'relevant:' is given twice"]),
        (good.replace("- query: ", "- query: other text\n- query: "), ["field 'query'", "given twice"]),
        (good.replace('- query: "invoice due date\\u000afor annual plans"', "- query: invoice due date"),
         ["field 'query'", "differs from the trace's query"]),
        (good.replace("- request_id: req-e1", "- request_id: req-e2"), ["field 'request_id'", "differs"]),
        (good.replace(block, ""), ["no trace data block", "regenerate"]),
        (good.replace('"request_id": "req-e1"', '"request_id": "req-e9"'), ["trace data", "was changed"]),
        (good + "\n" + block, ["2 trace data blocks"]),
        (good.replace("- incident_id: inc-req-e1", "- incident_id: inc-req-e1\n- incident_id: inc-other"),
         ["field 'incident_id'", "given twice"]),
    ]
    for i, (text, contains) in enumerate(cases):
        assert text != good, i
        path = tmp_path / f"edited{i}.md"
        path.write_text(text, encoding="utf-8")
        assert_refused(["incident", "add", path, "--gold", gold], tmp_path / "none", names=[path], capsys=capsys,
                       contains=contains)
        assert gold.read_bytes() == before


_HOSTILE = st.lists(st.sampled_from(["\n", "\r\n", "|", "-->", "<!--", "- [x] ", "## ", "# ", "@", "\u202e", "\u2066",
                                    "\u2028", "\x85", "relevant:", "- ", "`", "```", "TODO", '"', "\\", "<img>", " ",
                                    "a", "Z", "é", "#", ":", "(none)", "\u0000"]), min_size=1, max_size=12).map("".join)


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=_HOSTILE, rid=_HOSTILE, tenant=_HOSTILE, version=_HOSTILE, chunk=_HOSTILE, note=_HOSTILE)
def test_any_trace_text_round_trips_to_exactly_the_filled_case(tmp_path_factory: pytest.TempPathFactory,
                                                               query: str, rid: str, tenant: str, version: str,
                                                               chunk: str, note: str) -> None:
    from rankgate.cli.main import main
    from rankgate.io.jsonl import parse_gold_records

    tmp = tmp_path_factory.mktemp("prop")
    trace = {"request_id": rid, "query": query, "tenant": tenant, "corpus_version": version, "rewritten_query": note,
             "timestamp": "2026-06-03T09:14:02Z", "trace_id": note, "index_version": chunk,
             "retrieved": [{"stage": "packed", "rank": 1, "id": chunk, "doc_id": note, "doc_version": version,
                            "status": "deprecated", "source": note, "tenant": tenant},
                           {"stage": "candidate", "rank": 1, "id": note, "status": "retired", "doc_id": chunk}],
             "citations": [{"id": chunk, "version": note}], "feedback": [{"value": "-1", "reason": note}]}
    path = tmp / "t.json"
    path.write_text(json.dumps(trace), encoding="utf-8")
    try:
        from rankgate.goldset.incident import read_trace as _rt

        _rt(str(path))
    except Exception:  # noqa: BLE001 - values the trace reader itself refuses are not this test's subject
        return
    gold = _small_gold(tmp)
    pm = tmp / "pm.md"
    assert main(["incident", "new", "--trace", str(path), "-o", str(pm)]) == 0
    text = pm.read_text(encoding="utf-8")
    filled = _fill(text)
    pm.write_text(filled, encoding="utf-8")
    suggested = list(dict.fromkeys([chunk, note]))
    expected = {"query_id": f"inc-{rid}", "query": query,
                "relevant_chunks": [{"chunk_id": "doc_pricing_2026#c1", "grade": 3, "note": "the current Team price"}],
                "must_not_retrieve": suggested, "source_of_query": "incident", "incident_id": f"inc-{rid}",
                "failure_link": "corpus", "lifecycle_stage": "retire", "created": "2026-06-03",
                "corpus_version": version, **({"tags": {"tenant": tenant}} if tenant else {})}
    try:
        parse_gold_records([(2, expected)], "expected")
    except Exception:  # noqa: BLE001 - a case the gold set itself refuses (e.g. an id of spaces)
        assert main(["incident", "add", str(pm), "--gold", str(gold)]) == 2
        return
    before = gold.read_bytes()
    assert main(["incident", "add", str(pm), "--gold", str(gold)]) == 0
    after = gold.read_bytes()
    assert after.startswith(before) and after.count(b"\n") == before.count(b"\n") + 1
    assert json.loads(after.splitlines()[-1]) == expected


# -- incidents from any trace export the trace readers know -----------------------------------------------
@pytest.fixture(scope="module")
def exports(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import trace_gen

    out = tmp_path_factory.mktemp("exports")
    trace_gen.generate(out, trace_gen.Spec(days=7, per_day=2, seed=3, documents="array"),
                       formats=("jsonl", "otlp", "phoenix", "langfuse", "langsmith"))
    return out


EXPORTS = {"jsonl": "jsonl/traces.jsonl", "otlp": "otlp/traces.otlp.jsonl", "phoenix": "phoenix/spans.parquet",
           "langfuse": "langfuse", "langsmith": "langsmith"}


def test_incident_new_reads_every_trace_export(exports: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The same request read from rankgate's JSONL, OTLP, Phoenix (Parquet), a Langfuse export folder
    and a LangSmith export folder gives the same postmortem, byte for byte; it fills and adds."""
    from rankgate.traces import read_traces

    row = [r for r in read_traces(exports / EXPORTS["jsonl"]).requests.to_pylist() if r["request_id"] == "r5"][0]
    texts = {}
    for fmt, rel in EXPORTS.items():
        pm = tmp_path / f"{fmt}.md"
        code, _ = _run(["incident", "new", "--trace", exports / rel, "--request-id", "r5", "-o", pm], capsys)
        assert code == 0, fmt
        texts[fmt] = pm.read_text(encoding="utf-8")
    assert len(set(texts.values())) == 1
    text = texts["otlp"]
    assert "- request_id: r5" in text and f"- tenant: {row['tenant']}" in text
    assert f"- corpus_version: {row['corpus_version']}" in text and "- date: 2026-05-03" in text
    assert text.count("\n| candidate |") == 20 and text.count("\n| packed |") == 5
    gold = _small_gold(tmp_path)
    pm = tmp_path / "otlp.md"
    pm.write_text(_fill(text), encoding="utf-8")
    code, _ = _run(["incident", "add", pm, "--gold", gold], capsys)
    assert code == 0
    case = json.loads(gold.read_text(encoding="utf-8").splitlines()[-1])
    assert (case["query_id"], case["query"], case["tags"]) == ("inc-r5", row["query_text"], {"tenant": row["tenant"]})


def test_incident_new_picks_one_request_or_says_which_exist(exports: Path, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    out.mkdir()
    for fmt in ("otlp", "langsmith"):
        path = exports / EXPORTS[fmt]
        assert_refused(["incident", "new", "--trace", path, "-o", out / "pm.md"], out, names=[path], capsys=capsys,
                       contains=["holds 14 requests; pick one with --request-id", "'r0', 'r1'", "(14 in all)"])
        assert_refused(["incident", "new", "--trace", path, "--request-id", "r99", "-o", out / "pm.md"], out,
                       names=[path], capsys=capsys, contains=["holds no request 'r99'", "'r0'"])
    own = _trace_file(tmp_path)
    assert_refused(["incident", "new", "--trace", own, "--request-id", "r99", "-o", out / "pm.md"], out,
                   names=[own], capsys=capsys, contains=["holds request 'req-7f3a', not 'r99'"])
    # a file of one request needs no id
    from .test_traces_formats import RETRIEVAL, otlp_line

    one = tmp_path / "one.otlp.jsonl"
    one.write_text(otlp_line([RETRIEVAL]) + "\n", encoding="utf-8")
    code, _ = _run(["incident", "new", "--trace", one, "-o", out / "one.md"], capsys)
    assert code == 0
    text = (out / "one.md").read_text(encoding="utf-8")
    assert "- query: refund window?\n" in text and "| candidate | 1 | doc\\_123 |" in text


def test_a_symlinked_gold_file_is_written_where_it_lives(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``gold.jsonl -> sets/gold-v3.jsonl``: incident add appends to gold-v3.jsonl and the link stays a
    link (docs/gold.md); a link to nothing is refused."""
    (tmp_path / "sets").mkdir()
    real = _write(tmp_path / "sets" / "gold-v3.jsonl", _lines(DEMO / "gold.jsonl"))
    link = tmp_path / "gold.jsonl"
    link.symlink_to(Path("sets") / "gold-v3.jsonl")
    pm = _new(tmp_path, capsys, link)
    pm.write_text(_fill(pm.read_text(encoding="utf-8")), encoding="utf-8")
    before = real.read_bytes()
    code, _ = _run(["incident", "add", pm, "--gold", link], capsys)
    assert code == 0
    assert link.is_symlink() and os.readlink(link) == os.path.join("sets", "gold-v3.jsonl")
    after = real.read_bytes()
    assert after.startswith(before) and json.loads(after.splitlines()[-1])["incident_id"] == "inc-req-7f3a"
    assert not [p for p in [*tmp_path.iterdir(), *(tmp_path / "sets").iterdir()] if p.name.startswith(".rankgate-")]
    from rankgate._util.atomic import write_text

    chain = tmp_path / "chain"
    chain.symlink_to(link)  # a link to a link: written at the end of the chain
    write_text(chain, "x\n")
    assert real.read_text() == "x\n" and chain.is_symlink() and link.is_symlink()
    dangling = tmp_path / "dangling.md"
    dangling.symlink_to(tmp_path / "nowhere" / "x.md")
    assert_refused(["incident", "new", "--trace", _trace_file(tmp_path), "-o", dangling], tmp_path / "nowhere",
                   names=[dangling], capsys=capsys, contains=["broken link"])
