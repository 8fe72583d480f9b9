"""``--queries FILE``: a TREC qrels (or CSV) gold set has no query text; a queries file beside it
(BEIR queries.jsonl, MS MARCO-style TSV, TREC topics) puts the text in the report and the PR comment."""

from __future__ import annotations

import pytest

from rankgate.cli.main import main
from rankgate.io.inputs import read_query_texts
from rankgate.errors import InputError

from .hostile import assert_refused

QUERIES = {
    "queries.jsonl": '{"_id": "q1", "text": "How do I reset my password?"}\n{"_id": "q2", "text": "Refund window?"}\n',
    "queries.tsv": "q1\tHow do I reset my password?\nq2\tRefund window?\n",
    "topics.txt": ("<top>\n<num> Number: q1\n<title> How do I reset\nmy password?\n\n<desc> Description:\nLong text.\n"
                   "</top>\n\n<top>\n<num> Number: q2 </num>\n<title> Refund window? </title>\n</top>\n"),
}


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_each_queries_shape_is_read(tmp_path, name):
    path = tmp_path / name
    path.write_text(QUERIES[name])
    assert read_query_texts(str(path)) == {"q1": "How do I reset my password?", "q2": "Refund window?"}


def _inputs(tmp_path):
    (tmp_path / "qrels.txt").write_text("q1 0 n1 1\nq2 0 n2 1\n")
    (tmp_path / "run.trec").write_text("q1 Q0 n3 1 0.9 x\nq2 Q0 n3 1 0.9 x\nq2 Q0 n2 2 0.8 x\n")
    (tmp_path / "base.trec").write_text("q1 Q0 n1 1 0.9 x\nq2 Q0 n2 1 0.9 x\n")
    (tmp_path / "crit.yaml").write_text("gates:\n  - metric: mrr\n    threshold: 0.2\n    regression_max: 0.05\n")
    (tmp_path / "topics.txt").write_text(QUERIES["topics.txt"])
    return {n: str(tmp_path / n) for n in ("qrels.txt", "run.trec", "base.trec", "crit.yaml", "topics.txt")}


def test_trec_qrels_with_queries_show_text_in_comment_and_report(tmp_path, capsys):
    f = _inputs(tmp_path)
    comment, html = tmp_path / "c.md", tmp_path / "r.html"
    argv = ["gate", "--config", f["crit.yaml"], "--gold", f["qrels.txt"], "--candidate", f["run.trec"],
            "--baseline", f["base.trec"], "--comment", str(comment), "--no-step-summary"]
    main(argv)
    assert "reset my password" not in comment.read_text()  # bare ids without it
    main(argv + ["--queries", f["topics.txt"]])
    assert "How do I reset my password?" in comment.read_text()
    assert main(["report", "--gold", f["qrels.txt"], "--run", f["run.trec"], "--queries", f["topics.txt"],
                 "-o", str(html)]) == 0
    page = html.read_text()
    assert "How do I reset my password?" in page and "topics.txt" in page  # shown, and hashed as an input
    capsys.readouterr()


def test_a_bad_queries_file_is_refused_naming_its_line(tmp_path, capsys):
    f = _inputs(tmp_path)
    bad = tmp_path / "queries.jsonl"
    bad.write_text('{"_id": "q1", "text": "a"}\n{"_id": "q1", "text": "b"}\n')
    out = tmp_path / "out"
    out.mkdir()
    assert_refused(["report", "--gold", f["qrels.txt"], "--run", f["run.trec"], "--queries", str(bad),
                    "-o", str(out / "r.html")], out, names=["queries.jsonl"], capsys=capsys, contains=[":2:", "q1"])
    with pytest.raises(InputError, match="needs a query id and a text field"):
        bad.write_text('{"name": "q1"}\n')
        read_query_texts(str(bad))
