"""A BEIR folder as the gold set: the files read are hashed (summary.json, the report's header), and the
report shows each query's text from queries.jsonl."""

from __future__ import annotations

import hashlib
import json
import re

from rankgate.cli.main import main
from rankgate.render.build import build_report
from rankgate.render.html import render_html


def _beir(tmp_path):
    folder = tmp_path / "beir"
    (folder / "qrels").mkdir(parents=True)
    (folder / "queries.jsonl").write_text("".join(json.dumps({"_id": str(i), "text": f"what is topic {i}"}) + "\n"
                                                  for i in range(1, 13)), encoding="utf-8")
    (folder / "corpus.jsonl").write_text("".join(json.dumps({"_id": f"d{i}", "text": f"topic {i}"}) + "\n"
                                                 for i in range(1, 13)), encoding="utf-8")
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n"
                                               + "".join(f"{i}\td{i}\t1\n" for i in range(1, 13)), encoding="utf-8")
    run = tmp_path / "run.jsonl"
    # queries 1-6 find their document first; 7-12 never do
    run.write_text("".join(json.dumps({"query_id": str(i), "topk": [f"d{i if i <= 6 else (i % 6) + 1}", "dx"]}) + "\n"
                           for i in range(1, 13)), encoding="utf-8")
    return folder, run


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_summary_json_hashes_the_qrels_file_read_from_a_beir_folder(tmp_path):
    folder, run = _beir(tmp_path)
    assert main(["evaluate", "--gold", str(folder), "--run", str(run), "--metrics", "recall@5", "--resamples", "0",
                 "--out", str(tmp_path / "out")]) == 0
    inputs = json.loads((tmp_path / "out" / "summary.json").read_text())["inputs"]
    assert inputs["gold"] == {"path": str(folder / "qrels" / "test.tsv"), "sha256": _sha(folder / "qrels" / "test.tsv")}
    assert inputs["run"]["sha256"] == _sha(run)


def test_report_hashes_qrels_and_queries_and_shows_query_text(tmp_path):
    folder, run = _beir(tmp_path)
    rep = build_report(str(folder), str(run), resamples=0)
    assert [(role, path, sha) for role, path, sha in rep.inputs] == [
        ("gold", str(folder / "qrels" / "test.tsv"), _sha(folder / "qrels" / "test.tsv")),
        ("gold queries", str(folder / "queries.jsonl"), _sha(folder / "queries.jsonl")),
        ("run", str(run), _sha(run))]
    assert [(m.query_id, m.query) for m in rep.misses][:2] == [("7", "what is topic 7"), ("8", "what is topic 8")]
    html = render_html(rep)
    assert re.search(r"<code>7</code> <span class=\"q\">what is topic 7</span>", html)
    # the qrels file given directly finds the folder's queries too
    direct = build_report(str(folder / "qrels" / "test.tsv"), str(run), resamples=0)
    assert direct.misses[0].query == "what is topic 7"


def test_a_bad_queries_file_is_one_line_naming_it(tmp_path, capsys):
    folder, run = _beir(tmp_path)
    with open(folder / "queries.jsonl", "a", encoding="utf-8") as fh:
        fh.write("{not json\n")
    code = main(["report", "--gold", str(folder), "--run", str(run), "-o", str(tmp_path / "r.html")])
    assert code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "queries.jsonl" in err and ":13" in err
    assert not (tmp_path / "r.html").exists()


def test_a_repeated_query_id_is_refused_naming_both_lines(tmp_path, capsys):
    from .hostile import assert_refused

    folder, run = _beir(tmp_path)
    with open(folder / "queries.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"_id": "3", "text": "again"}) + "\n")
    out = tmp_path / "out"
    out.mkdir()
    line = assert_refused(["report", "--gold", str(folder), "--run", str(run), "-o", str(out / "r.html")], out,
                          names=["queries.jsonl"], capsys=capsys)
    assert ":13" in line and "line 3" in line
