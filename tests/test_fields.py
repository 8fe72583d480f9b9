"""One way to say where a field lives: ``--field NAME=PATH`` (``fields=`` in Python), one syntax and one
implementation (rankgate._util.fields) for evaluate, compare, gate, report, answers and traces.

A run whose ids live in ``metadata.doc_id`` (a LangChain Document dump) read with the map gives the numbers of
the same run written plainly, in every command; the old spellings (``answers --columns``, ``traces --field-map``)
give what ``--field`` gives; a format no path reaches (TREC) is refused in one line.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from rankgate._util.fields import field_path, parse_fields
from rankgate.cli.main import main
from rankgate.errors import InputError, UsageError

DATA = Path(__file__).parent / "data"
REPORT = DATA / "report"
NAMES = ("query_id", "query", "id", "text", "score", "rank", "relevant", "grade")
SYNTAX = ("a path is keys joined by dots, [*] after a key for every item of a list, [N] for one item "
          "(e.g. metadata.doc_id, hits[*].id)")
RUN_MAP = ["--field", "id=documents[*].metadata.doc_id", "--field", "score=metadata.relevance,text=page_content"]


# ---- the syntax ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("given, expected", [
    ("id=metadata.doc_id", {"id": "metadata.doc_id"}),
    ("id=metadata.doc_id,score=metadata.score", {"id": "metadata.doc_id", "score": "metadata.score"}),
    (["id=hits[*].doc.id", " text = hits[*].body "], {"id": "hits[*].doc.id", "text": "hits[*].body"}),
    ({"relevant": "labels[0].id"}, {"relevant": "labels[0].id"}),
    ("query_id=my key.with space", {"query_id": "my key.with space"}),
])
def test_good_specs(given, expected):
    assert parse_fields(given, NAMES, command="evaluate") == expected


@pytest.mark.parametrize("given, message", [
    ("idmetadata", "fields: 'idmetadata' is not NAME=PATH (e.g. id=metadata.doc_id)"),
    ("id=", "fields: 'id=' is not NAME=PATH (e.g. id=metadata.doc_id)"),
    ("doc_idd=x", "fields: unknown field 'doc_idd' for evaluate; it maps query_id, query, id, text, score, rank, "
                  "relevant, grade"),
    ("scor=x", "fields: unknown field 'scor' for evaluate (did you mean score?); it maps query_id, query, id, text, "
               "score, rank, relevant, grade"),
    ("id=a,id=b", "fields: id is given twice (id=a and id=b)"),
    (",", "fields is empty; give NAME=PATH, e.g. id=metadata.doc_id"),
    ("id=metadata..doc_id", f"fields id=metadata..doc_id: 'metadata..doc_id' is not a path (an empty key after a dot); {SYNTAX}"),
    ("id=.doc_id", f"fields id=.doc_id: '.doc_id' is not a path (it starts with a dot); {SYNTAX}"),
    ("id=hits[x].id", f"fields id=hits[x].id: 'hits[x].id' is not a path ('[x].id': a list is read with [*] or [N], "
                      f"N a position from 0); {SYNTAX}"),
    ("id=hits[*]id", f"fields id=hits[*]id: 'hits[*]id' is not a path ('i' after an index: join keys with a dot, as "
                     f"in hits[*].id); {SYNTAX}"),
    ("id=[*].id", f"fields id=[*].id: '[*].id' is not a path (it starts with a list index: a path starts with a key); "
                  f"{SYNTAX}"),
    ("id=a]b", f"fields id=a]b: 'a]b' is not a path (a ']' without its '['); {SYNTAX}"),
    (5, "The 'fields' parameter of evaluate must be a mapping of field names to paths, e.g. {'id': 'metadata.doc_id'} "
        "(or NAME=PATH texts), or None; got 5."),
])
def test_bad_specs_say_what_is_expected(given, message):
    with pytest.raises(UsageError) as err:
        parse_fields(given, NAMES, command="evaluate")
    assert str(err.value) == message


def test_the_command_line_names_the_option(capsys):
    code = main(["evaluate", "--gold", str(REPORT / "gold.jsonl"), "--run", str(REPORT / "run.jsonl"),
                 "--field", "doc=metadata.doc_id"])
    assert code == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "rankgate evaluate: error: --field: unknown field 'doc' for evaluate; it maps query_id, query, id, text, score, "
        "rank, relevant, grade"]


def test_the_getter_walks_records():
    record = {"hits": [{"doc": {"id": "a"}}, {"doc": {}}, "bare"], "metadata.doc_id": "flat",
              "metadata": {"doc_id": "nested"}, "input": '{"q": "hello"}'}
    assert field_path("hits[*].doc.id").get(record) == ["a", None, None]
    assert field_path("hits[0].doc.id").get(record) == "a"
    assert field_path("hits[5].doc.id").get(record) is None
    assert field_path("metadata.doc_id").get(record) == "flat"  # a key spelled with the dots is found first
    assert field_path("input.q").get(record) is None
    assert field_path("input.q").get(record, json_text=True) == "hello"  # (trace exports keep JSON as text)
    assert field_path("hits[*]").split_star()[1].text == ""


# ---- gold sets and runs: evaluate, compare, gate, report --------------------------------------------------

def _documents(line: dict) -> dict:
    """A run line as a LangChain retriever's Documents: the id in metadata.doc_id, the text in page_content."""
    docs = [{"id": None, "page_content": item.get("text"), "type": "Document", "doc_version": item.get("doc_version"),
             "metadata": {"doc_id": item["chunk_id"], "relevance": item["score"], "chunk_id": "not-this-one"}}
            for item in line["topk"]]
    return {**{k: v for k, v in line.items() if k != "topk"}, "documents": docs}


@pytest.fixture()
def two_dirs(tmp_path):
    """plain/ and mapped/: the same gold set, runs and criteria, the runs of mapped/ written as Documents."""
    plain, mapped = tmp_path / "plain", tmp_path / "mapped"
    for folder in (plain, mapped):
        folder.mkdir()
        for name in ("gold.jsonl", "ship-criteria.yaml"):
            shutil.copy(REPORT / name, folder / name)
    for name in ("base.jsonl", "run.jsonl"):
        shutil.copy(REPORT / name, plain / name)
        lines = [json.loads(x) for x in (REPORT / name).read_text(encoding="utf-8").splitlines() if x.strip()]
        (mapped / name).write_text("".join(json.dumps(_documents(x)) + "\n" for x in lines), encoding="utf-8")
    return plain, mapped


_SHA = re.compile(r"\b[0-9a-f]{64}\b|\b[0-9a-f]{16}…")  # (the files differ: their hashes, whole or cut)


def _outputs(folder: Path, argv: list[str], files: list[str], capsys, monkeypatch) -> list[str]:
    monkeypatch.chdir(folder)
    code = main(argv)
    got = capsys.readouterr()
    texts = [str(code), got.out, *((folder / f).read_text(encoding="utf-8") for f in files)]
    return [_SHA.sub("<sha256>", t) for t in texts]


@pytest.mark.parametrize("argv, files", [
    (["evaluate", "--gold", "gold.jsonl", "--run", "run.jsonl", "--by", "intent", "--json"], []),
    (["compare", "--gold", "gold.jsonl", "base.jsonl", "run.jsonl", "--json", "--permutations", "200",
      "--resamples", "200"], []),
    (["gate", "--config", "ship-criteria.yaml", "--gold", "gold.jsonl", "--baseline", "base.jsonl", "--candidate",
      "run.jsonl", "--comment", "comment.md", "--no-step-summary"], ["comment.md"]),
    (["report", "--gold", "gold.jsonl", "--run", "run.jsonl", "--baseline", "base.jsonl", "--resamples", "200",
      "-o", "report.html"], ["report.html"]),
], ids=["evaluate", "compare", "gate", "report"])
def test_ids_in_metadata_give_the_numbers_of_the_plain_file(two_dirs, argv, files, capsys, monkeypatch):
    plain, mapped = two_dirs
    want = _outputs(plain, argv, files, capsys, monkeypatch)
    got = _outputs(mapped, argv + RUN_MAP, files, capsys, monkeypatch)
    assert want[0] in ("0", "1") and got == want


def test_without_the_map_the_numbers_differ(two_dirs, capsys, monkeypatch):
    """(The map is what makes the numbers: without it the Documents' ids are not the ones the gold set names.)"""
    argv = ["evaluate", "--gold", "gold.jsonl", "--run", "run.jsonl", "--json"]
    assert _outputs(two_dirs[1], argv, [], capsys, monkeypatch) != _outputs(two_dirs[0], argv, [], capsys, monkeypatch)


def test_python_evaluate_takes_the_map(two_dirs):
    import rankgate

    plain, mapped = two_dirs
    fields = {"id": "documents[*].metadata.doc_id", "score": "metadata.relevance"}
    want = rankgate.evaluate(str(plain / "gold.jsonl"), str(plain / "run.jsonl"), ["mrr", "ndcg@10"])
    got = rankgate.evaluate(str(mapped / "gold.jsonl"), str(mapped / "run.jsonl"), ["mrr", "ndcg@10"], fields=fields)
    assert got.means == want.means and got.query_ids == want.query_ids
    records = [json.loads(x) for x in (mapped / "run.jsonl").read_text(encoding="utf-8").splitlines()]
    in_memory = rankgate.evaluate(str(mapped / "gold.jsonl"), records, ["mrr", "ndcg@10"], fields=fields)
    assert in_memory.means == want.means


def test_a_gold_set_and_a_run_in_one_llamaindex_results_file(tmp_path):
    """The RetrieverEvaluator's results (query, expected_ids, retrieved_ids) read as both, with lists of ids."""
    rows = [{"query": "q one", "expected_ids": ["a"], "retrieved_ids": ["b", "a"], "retrieved_texts": ["B", "A"]},
            {"query": "q two", "expected_ids": ["c", "d"], "retrieved_ids": ["d", "x", "c"],
             "retrieved_texts": ["D", "X", "C"]}]
    path = tmp_path / "results.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    import rankgate
    from rankgate.io import load_run

    fields = {"query_id": "query", "relevant": "expected_ids[*]", "id": "retrieved_ids[*]",
              "text": "retrieved_texts[*]"}
    result = rankgate.evaluate(str(path), str(path), ["mrr", "recall@2"], fields=fields)
    assert result.means == {"mrr": 0.75, "recall@2": 0.75}
    run = load_run(str(path), fields=fields)
    assert run.items["text"] == ["B", "A", "D", "X", "C"]  # read by position from their own list


@pytest.mark.parametrize("line, message", [
    ({"query_id": "q1", "documents": [{"metadata": {}}]},
     "run.jsonl:1: field 'documents[0].metadata.doc_id' is missing (the field map says id=documents[*].metadata.doc_id)"),
    ({"query_id": "q1", "hits": []},
     "run.jsonl:1: field 'documents' is missing (the field map says id=documents[*].metadata.doc_id, where the ranked "
     "items are)"),
])
def test_a_line_the_map_does_not_fit_is_named(tmp_path, line, message):
    from rankgate.io import load_run

    path = tmp_path / "run.jsonl"
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_run(str(path), fields={"id": "documents[*].metadata.doc_id"})
    assert str(err.value).endswith(message)


def test_a_trec_run_is_refused_in_one_line(tmp_path, capsys):
    run = tmp_path / "run.trec"
    run.write_text("q01 Q0 doc_export#c2 1 2.5 bm25\n", encoding="utf-8")
    code = main(["evaluate", "--gold", str(REPORT / "gold.jsonl"), "--run", str(run), "--field", "id=metadata.doc_id"])
    assert code == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"rankgate evaluate: error: --field cannot apply to {run}: it is read as TREC qrels / a TREC run "
        "(whitespace-separated columns), whose fields are known by position or by the format's own names; a field "
        "map reads JSON/JSONL records and tables (CSV, Parquet, Hugging Face)"]
    # a map of run fields leaves a TREC gold set alone; one of gold fields does not
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q01 0 doc_export#c2 1\n", encoding="utf-8")
    assert main(["evaluate", "--gold", str(qrels), "--run", str(REPORT / "run.jsonl"), "--field", "text=text",
                 "--json"]) == 0
    capsys.readouterr()
    assert main(["evaluate", "--gold", str(qrels), "--run", str(REPORT / "run.jsonl"), "--field", "grade=g"]) == 2
    assert "--field cannot apply to " + str(qrels) in capsys.readouterr().err


def test_a_table_takes_paths_as_columns(tmp_path, capsys):
    import rankgate

    csv = tmp_path / "run.csv"
    lines = [json.loads(x) for x in (REPORT / "run.jsonl").read_text(encoding="utf-8").splitlines()]
    rows = [f"{x['query_id']},{item['chunk_id']},{item['score']}" for x in lines for item in x["topk"]]
    csv.write_text("qid,meta.doc,rel\n" + "\n".join(rows) + "\n", encoding="utf-8")
    want = rankgate.evaluate(str(REPORT / "gold.jsonl"), str(REPORT / "run.jsonl"), ["mrr"], ties="id")
    got = rankgate.evaluate(str(REPORT / "gold.jsonl"), str(csv), ["mrr"], ties="id",
                            fields={"id": "meta.doc", "score": "rel"})
    assert got.means == want.means
    assert main(["evaluate", "--gold", str(REPORT / "gold.jsonl"), "--run", str(csv), "--field", "id=x[*].doc"]) == 2
    assert capsys.readouterr().err.strip() == ("rankgate evaluate: error: --field id=x[*].doc: a table keeps one value "
                                               "per cell, so [*] cannot apply; name the column")


def test_the_fast_reader_and_the_mapped_reader_agree(tmp_path, monkeypatch):
    """Differential: a plain file through the compiled scanner and its mapped twin through the record reader give
    the same run, column by column; a field map never reaches the scanner, nor the lazy and block readers."""
    from rankgate.io import jsonl_fast, load, load_run

    plain, mapped = tmp_path / "plain.jsonl", tmp_path / "mapped.jsonl"
    lines = []
    for q in range(400):
        items = [{"chunk_id": f"d{(q * 7 + i * 13) % 97}", "score": round(1 - i * 0.125 + (q % 3) * 0.5, 3),
                  "text": f"text {q}-{i}" if i % 4 else None, "doc_version": "v1" if i % 2 else None}
                 for i in range(1 + q % 9)]
        items = [{k: v for k, v in it.items() if v is not None} for it in items]
        lines.append({"query_id": f"q{q:03d}", "system": "bm25", "topk": items})
    plain.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    mapped_lines = [{"qid": {"v": x["query_id"]}, "system": x["system"],
                     "hits": [{"doc": {"id": it["chunk_id"]}, "s": it["score"], "body": it.get("text"),
                               "doc_version": it.get("doc_version"), "chunk_id": "decoy"} for it in x["topk"]]}
                    for x in lines]
    mapped.write_text("".join(json.dumps(x) + "\n" for x in mapped_lines), encoding="utf-8")
    fields = {"query_id": "qid.v", "id": "hits[*].doc.id", "score": "s", "text": "body"}

    monkeypatch.setattr(jsonl_fast, "MIN_BYTES", 0)
    assert jsonl_fast.read_run_fast(str(plain)) is not None  # (the plain file takes the fast path)
    calls = []
    real = jsonl_fast.read_run_fast
    monkeypatch.setattr(jsonl_fast, "read_run_fast", lambda *a, **k: calls.append(a) or real(*a, **k))
    fast = load_run(str(plain))
    assert calls
    calls.clear()
    slow = load_run(str(mapped), fields=fields)
    assert not calls
    assert fast.query_ids == slow.query_ids
    assert fast.r_query.tolist() == slow.r_query.tolist() and fast.r_doc.to_pylist() == slow.r_doc.to_pylist()
    assert fast.r_score.tolist() == slow.r_score.tolist()
    assert (fast.r_order is None) == (slow.r_order is None)
    for name in ("text", "doc_version"):
        assert list(fast.items[name]) == list(slow.items[name])
    assert list(fast.fields["system"]) == list(slow.fields["system"])
    assert load.load_run_lazy_texts(str(mapped), fields=fields) is None
    assert load.run_blocks(str(mapped), from_bytes=0, fields=fields) is None


# ---- answers: --field, and --columns for one release -------------------------------------------------------

def _answers_files(tmp_path: Path) -> tuple[Path, Path]:
    answers = tmp_path / "ls.jsonl"
    rows = [{"id": f"q{i}", "inputs": {"question": f"Why {i}?"},
             "outputs": {"answer": f"Because of c{i}.", "docs": [{"page_content": f"Because of c{i}.",
                                                                   "metadata": {"id": f"c{i}"}},
                                                                  {"page_content": "Other.", "metadata": {"id": "x"}}]}}
            for i in range(3)]
    answers.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    gold = tmp_path / "gold.jsonl"
    gold.write_text("".join(json.dumps({"query_id": f"q{i}", "relevant": [f"c{i}"]}) + "\n" for i in range(3)),
                    encoding="utf-8")
    return answers, gold


ANSWERS_MAP = ("query_id=id,question=inputs.question,answer=outputs.answer,contexts=outputs.docs[*].page_content,"
               "context_ids=outputs.docs[*].metadata.id")


def test_answers_field_and_its_old_spelling(tmp_path, capsys):
    answers, gold = _answers_files(tmp_path)
    base = ["answers", "--answers", str(answers), "--gold", str(gold), "--resamples", "0", "--no-cache", "--json"]
    assert main([*base, "--field", "query_id=id,question=inputs.question", "--field",
                 "answer=outputs.answer,contexts=outputs.docs[*].page_content,context_ids=outputs.docs[*].metadata.id"]) == 0
    new = capsys.readouterr()
    assert main([*base, "--columns", ANSWERS_MAP]) == 0
    old = capsys.readouterr()
    assert json.loads(new.out)["answers"] and new.out == old.out
    assert "deprecated" not in new.err
    assert old.err.splitlines() == ["rankgate answers: note: --columns is deprecated; use --field (the same NAME=PATH "
                                    "pairs)"]
    assert main([*base, "--field", "answer=outputs..answer"]) == 2
    assert capsys.readouterr().err.strip() == (
        f"rankgate answers: error: --field answer=outputs..answer: 'outputs..answer' is not a path (an empty key "
        f"after a dot); {SYNTAX}")
    assert main([*base, "--field", "chunk_id=x"]) == 2
    assert "unknown field 'chunk_id' for answers; it maps query_id, question, answer, contexts" in capsys.readouterr().err


# ---- traces: --field, and --field-map ----------------------------------------------------------------------

def _langsmith(tmp_path: Path) -> Path:
    runs = []
    for i in range(4):
        runs.append({"id": f"r-{i}", "trace_id": f"t-{i}", "run_type": "retriever", "name": "Retriever",
                     "start_time": f"2026-05-29T13:4{i}:19.963Z", "end_time": f"2026-05-29T13:4{i}:20.011Z",
                     "inputs": {"query": f"refund window {i}?"}, "error": None,
                     "outputs": {"documents": [{"page_content": "…", "type": "Document",
                                                "metadata": {"chunk": f"kb/{i}", "version": "v3", "relevance": 0.8}},
                                               {"page_content": "…", "type": "Document",
                                                "metadata": {"chunk": "kb/x", "version": "v3", "relevance": 0.5}}]},
                     "extra": {"metadata": {"session_id": f"s-{i}", "team": "acme" if i % 2 else "umbrella"}}})
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in runs), encoding="utf-8")
    return path


def test_traces_field_and_field_map_give_the_same_outputs(tmp_path, capsys):
    runs = _langsmith(tmp_path)
    fm = tmp_path / "map.yaml"
    fm.write_text("document:\n  id: metadata.chunk\n  score: metadata.relevance\nrequest:\n  tenant: extra.metadata.team\n",
                  encoding="utf-8")
    outs = {}
    for name, extra in (("map", ["--field-map", str(fm)]),
                        ("field", ["--field", "id=metadata.chunk,score=metadata.relevance",
                                   "--field", "tenant=extra.metadata.team"]),
                        ("listed", ["--field", "id=outputs.documents[*].metadata.chunk", "--field",
                                    "document.score=metadata.relevance,request.tenant=extra.metadata.team"])):
        out = tmp_path / name
        assert main(["traces", "analyze", "--traces", str(runs), "--by", "tenant", "--out", str(out), *extra]) == 0
        capsys.readouterr()
        outs[name] = [(out / f).read_text(encoding="utf-8") for f in ("summary.json", "signals.csv")]
    assert outs["field"] == outs["map"] == outs["listed"]
    assert "umbrella" in outs["map"][1]  # (the tenant came through the map)
    check = ["traces", "check", "--traces", str(runs), "--json"]
    code = main([*check, "--field-map", str(fm)])
    by_map = capsys.readouterr().out
    assert main([*check, "--field", "id=metadata.chunk,score=metadata.relevance,tenant=extra.metadata.team"]) == code
    assert capsys.readouterr().out == by_map and by_map.strip()


def test_traces_field_where_it_cannot_apply(tmp_path, capsys):
    own = tmp_path / "own.jsonl"
    own.write_text(json.dumps({"request_id": "a", "timestamp": "2026-05-29T13:46:19Z", "query": "q"}) + "\n",
                   encoding="utf-8")
    out = tmp_path / "o"
    assert main(["traces", "analyze", "--traces", str(own), "--field", "id=metadata.chunk_id", "--out", str(out)]) == 2
    assert capsys.readouterr().err.strip() == (f"rankgate traces: error: --field cannot apply to {own}: rankgate's own "
                                               "trace JSONL has fixed field names (docs/traces.md)")
    assert main(["traces", "analyze", "--traces", str(own), "--field", "tenant=a[*].b", "--out", str(out)]) == 2
    assert "a request field has one value" in capsys.readouterr().err
    assert not out.exists()


def test_the_field_map_file_reads_paths_with_the_one_syntax(tmp_path):
    from rankgate.errors import ConfigError
    from rankgate.traces.fieldmap import load_field_map

    fm = tmp_path / "map.yaml"
    fm.write_text("document:\n  id: metadata..chunk\n", encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_field_map(fm)
    assert str(err.value) == (f"{fm}: field 'document.id' 'metadata..chunk' is not a path (an empty key after a dot); "
                              f"{SYNTAX}")
