"""Files written by the real producers (RAGAS 0.4.3, DeepEval 4.3.1, LlamaIndex 0.14), read through
rankgate: per query, rankgate's numbers equal the numbers the libraries computed themselves.

The files and the libraries' own numbers (``rag_datasets.expected.json``, with the library versions) were made
once by ``tests/data/producers/make_rag_datasets.py``; the libraries are not test dependencies. Which rankgate
spec reproduces which of their metrics is taken from :data:`rankgate.metrics.compat.COMPAT`, the
table ``rankgate metrics --compat`` prints, so the table itself is what is tested.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rankgate
from rankgate.cli.main import main
from rankgate.io import load_gold, load_run, nearmiss
from rankgate.io.nearmiss import near_distance
from rankgate.io.shapes import text_id
from rankgate.metrics import parse_metric
from rankgate.metrics.compat import compat_rows

from .conftest import examples

DATA = Path(__file__).parent / "data" / "producers"
EXPECTED = json.loads((DATA / "rag_datasets.expected.json").read_text(encoding="utf-8"))
TOP_K = EXPECTED["top_k"]


def spec_for(ours: str, k: int) -> str:
    """A compat table's spec with its placeholders filled: K, the list length; N, any deeper cutoff."""
    return ours.replace("@K", f"@{k}").replace("@N", "@100")


def check(result, case: dict, tool: str, k: int, *, tol: float = 0.0) -> int:
    """Every metric of ``tool`` the case has numbers for, per query: rankgate's equals theirs.
    Returns how many (query, metric) cells were compared."""
    cells = 0
    rows = {theirs: spec_for(ours, k) for theirs, ours, _ in compat_rows(tool)}
    assert len(result.query_ids) == len(case["queries"])
    for i, scores in enumerate(case["scores"]):
        for theirs, value in scores.items():
            got = float(result[str(parse_metric(rows[theirs]))][i])
            assert got == pytest.approx(value, abs=tol, rel=0), (case["queries"][i], theirs, rows[theirs], got, value)
            cells += 1
    return cells


def compat_metrics(tool: str, k: int) -> list[str]:
    return [spec_for(ours, k) for _, ours, _ in compat_rows(tool)]


# -- RAGAS ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["ragas_ids.jsonl", "ragas_ids.csv"])
def test_ragas_id_based_and_non_llm_metrics_equal_ragas_own(name):
    path = DATA / name
    result = rankgate.evaluate(path, path, compat_metrics("ragas", TOP_K))
    # RAGAS's NonLLMContextPrecisionWithReference divides by (relevant retrieved + 1e-10)
    assert check(result, EXPECTED["ragas_ids"], "ragas", TOP_K, tol=1e-9) == 24


@pytest.mark.parametrize("name", ["ragas_texts.jsonl", "ragas_texts.csv"])
def test_ragas_text_matching_equals_ragas_own_when_texts_are_the_same(name):
    path = DATA / name
    result = rankgate.evaluate(path, path, compat_metrics("ragas", TOP_K))
    assert check(result, EXPECTED["ragas_texts"], "ragas", TOP_K, tol=1e-9) == 12


def test_ragas_precision_and_ap_differ_from_rankgate_precision_and_map_where_the_definitions_do():
    """The reason the compat metrics exist: on these files precision@3 equals theirs only because
    every list holds 3 items, and map divides by every relevant item."""
    path = DATA / "ragas_ids.jsonl"
    result = rankgate.evaluate(path, path, ["precision@5", "precision_returned@5", "map", "ap_retrieved"])
    theirs = [s["IDBasedContextPrecision"] for s in EXPECTED["ragas_ids"]["scores"]]
    assert result["precision_returned@5"].tolist() == pytest.approx(theirs)
    assert result["precision@5"].tolist() != pytest.approx(theirs)  # 3 returned, divided by 5


def test_ragas_near_miss_is_listed_not_counted(capsys):
    """RAGAS's fuzzy match counts a reference that lost its final period; rankgate's exact match
    does not, and says which pair was probably the same chunk."""
    path = DATA / "ragas_near_miss.jsonl"
    case = EXPECTED["ragas_near_miss"]
    assert case["scores"][0]["NonLLMContextRecall"] == 1.0
    result = rankgate.evaluate(path, path, ["recall@100"])
    assert result["recall@100"].tolist() == [0.0, 1.0]  # the exact numbers stay exact
    near = result.info["near_misses"]
    assert near["count"] == 1 and near["examples"][0]["query_id"] == result.query_ids[0]
    assert near["examples"][0]["retrieved"].endswith("press Export.")
    assert main(["evaluate", "--gold", str(path), "--run", str(path), "-m", "recall@100", "--resamples", "0"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "1 retrieved text differs from a reference text only slightly" in out
    assert "probably the same chunk, re-chunked or re-punctuated" in out


# -- LlamaIndex ----------------------------------------------------------------------------------

def test_llamaindex_retriever_evaluator_equals_rankgate_per_query():
    gold, run = DATA / "llamaindex_qa.json", DATA / "llamaindex_bm25_run.jsonl"
    result = rankgate.evaluate(gold, run, compat_metrics("llamaindex", TOP_K))
    assert check(result, EXPECTED["llamaindex_bm25_run"], "llamaindex", TOP_K, tol=1e-15) == 36


def test_llamaindex_cli_metrics_csv_equals_retriever_evaluator(tmp_path):
    out = tmp_path / "out"
    specs = compat_metrics("llamaindex", TOP_K)
    assert main(["evaluate", "--gold", str(DATA / "llamaindex_qa.json"), "--run", str(DATA / "llamaindex_bm25_run.jsonl"),
                 "-m", ",".join(specs), "--out", str(out), "--resamples", "0"]) == 0
    with open(out / "metrics.csv", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    case = EXPECTED["llamaindex_bm25_run"]
    names = {theirs: str(parse_metric(spec_for(ours, TOP_K))) for theirs, ours, _ in compat_rows("llamaindex")}
    assert [r["query_id"] for r in rows] == case["queries"]
    for row, scores in zip(rows, case["scores"]):
        for theirs, value in scores.items():
            assert math.isclose(float(row[names[theirs]]), value, abs_tol=1e-12), (row["query_id"], theirs)


def test_llamaindex_mock_embedding_ties_in_the_producers_order():
    """MockEmbedding: every score is equal, so only the retriever's order (its ``rank`` field)
    ranks the items: by default (the producer's order) and with ``ties="input"`` rankgate's numbers
    are LlamaIndex's; trec_eval's rule (``ties="id"``) orders them otherwise."""
    gold, run = DATA / "llamaindex_qa.json", DATA / "llamaindex_mock_ties_run.jsonl"
    lines = [json.loads(line) for line in run.read_text(encoding="utf-8").splitlines()]
    assert len({it["score"] for line in lines for it in line["topk"]}) == 1  # every score ties
    case = EXPECTED["llamaindex_mock_ties_run"]
    for ties in (None, "input"):
        result = rankgate.evaluate(gold, run, compat_metrics("llamaindex", 4), **({"ties": ties} if ties else {}))
        assert check(result, case, "llamaindex", 4, tol=1e-15) == 36
    by_id = rankgate.evaluate(gold, run, ["mrr@4"], ties="id")
    assert by_id["mrr@4"].tolist() != [s["mrr"] for s in case["scores"]]


# -- DeepEval ------------------------------------------------------------------------------------

DEEPEVAL_FILES = ["deepeval_goldens.json", "deepeval_goldens.csv", "deepeval_goldens.jsonl",
                  "deepeval_test_cases.json", "deepeval_hand.csv", "deepeval_sourced.json", "deepeval_sourced.csv"]


@pytest.mark.parametrize("name", DEEPEVAL_FILES)
def test_deepeval_files_read_as_deepeval_reads_them(name):
    """Per golden, the relevant and retrieved contexts are the ones DeepEval's own loaders read back
    from the same file (a context holding '|' comes back cut from CSV and JSON lines, as there)."""
    path = DATA / name
    back = EXPECTED[name]["read_back"]
    gold, run = load_gold(path), load_run(path)
    judged = gold.judgements()
    ranked = {q: [] for q in run.query_ids}
    for qi, d in zip(run.r_query.tolist(), run.r_doc.to_pylist()):
        ranked[run.query_ids[qi]].append(d)
    assert gold.query_ids == run.query_ids and len(gold.query_ids) == len(back)
    for qid, golden in zip(gold.query_ids, back):
        assert set(judged[qid]) == {text_id(t) for t in golden["context"]}, (name, golden["input"])
        assert ranked[qid] == [text_id(t) for t in golden["retrieval_context"]], (name, golden["input"])


def test_deepeval_hand_csv_scores_as_deepeval_reads_it():
    """A CSV for add_goldens_from_csv_file, whose contexts hold ';' (ordinary prose): hit@3 is
    computed from DeepEval's own reading of the file, and rankgate's equals it per golden."""
    path = DATA / "deepeval_hand.csv"
    result = rankgate.evaluate(path, path, ["hit@3", "recall@3"])
    for i, golden in enumerate(EXPECTED["deepeval_hand.csv"]["read_back"]):
        relevant = {text_id(t) for t in golden["context"]}
        top = [text_id(t) for t in golden["retrieval_context"]][:3]
        assert result["hit@3"][i] == float(any(d in relevant for d in top))
        assert result["recall@3"][i] == pytest.approx(len(relevant & set(top)) / len(relevant))
    assert result.means["hit@3"] == 1.0


def test_deepeval_joined_lists_notice_once_per_file(capsys):
    path = DATA / "deepeval_goldens.csv"
    assert main(["evaluate", "--gold", str(path), "--run", str(path), "-m", "hit@3", "--resamples", "0"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert out.count("lists are joined by '|' in this file") == 1
    assert "keeps each context whole" in out


def test_deepeval_json_contexts_holding_the_delimiter_warn(tmp_path):
    path = DATA / "deepeval_goldens.json"
    result = rankgate.evaluate(path, path, ["hit@3"])
    notices = result.info["notices"]
    assert any("1 context entry contains '|'" in n for n in notices)
    assert any("1 retrieval_context entry contains '|'" in n for n in notices)
    summary = tmp_path / "out"
    assert main(["evaluate", "--gold", str(path), "--run", str(path), "-m", "hit@3", "--resamples", "0",
                 "--out", str(summary)]) == 0
    assert json.loads((summary / "summary.json").read_text())["notices"] == notices


def test_deepeval_delimiter_is_the_users_choice(tmp_path, capsys):
    """A file joined with ';' (an older export, or a custom delimiter) reads with list_sep."""
    rows = [{"input": g["input"], "context": ";".join(g["context"]), "retrieval_context": ";".join(g["retrieval_context"])}
            for g in EXPECTED["deepeval_goldens.json"]["read_back"] if not any(";" in c for c in g["context"] + g["retrieval_context"])]
    path = tmp_path / "semicolon.csv"
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=["input", "context", "retrieval_context"])
        w.writeheader()
        w.writerows(rows)
    default = rankgate.evaluate(path, path, ["recall@3"])
    chosen = rankgate.evaluate(path, path, ["recall@3"], columns={"list_sep": ";"})
    assert chosen.means["recall@3"] == 1.0 > default.means["recall@3"]
    assert main(["evaluate", "--gold", str(path), "--run", str(path), "-m", "recall@3", "--resamples", "0",
                 "--columns", "list_sep=semicolon", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["metrics"]["recall@3"]["mean"] == 1.0


# -- the table -----------------------------------------------------------------------------------

@pytest.mark.parametrize("tool", ["ragas", "llamaindex", "trec_eval"])
def test_metrics_compat_prints_a_spec_for_each_of_their_metrics(tool, capsys):
    assert main(["metrics", "--compat", tool]) == 0
    out = capsys.readouterr().out
    for theirs, ours, _ in compat_rows(tool):
        assert theirs in out and ours in out
        parse_metric(spec_for(ours, 3).replace("@k", "@3"))  # every spec named is one rankgate reads
    if tool != "trec_eval":  # every metric the producers computed has a row
        computed = {m for key, case in EXPECTED.items() if key.startswith(tool) for s in case["scores"] for m in s}
        assert computed == {theirs for theirs, _, _ in compat_rows(tool)}


def test_metrics_compat_unknown_tool_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["metrics", "--compat", "haystack"])
    assert exc.value.code == 2


# -- near-misses of text matching ----------------------------------------------------------------

def levenshtein(a: str, b: str) -> int:
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, cb in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (ca != cb))
    return row[-1]


@settings(max_examples=examples(200), deadline=None)
@given(st.text("ab. ", max_size=12), st.text("ab. ", max_size=12), st.integers(0, 4))
def test_near_distance_is_levenshtein_within_the_limit(a, b, limit):
    want = levenshtein(a, b)
    assert near_distance(a, b, limit) == (want if want <= limit else None)


def test_near_misses_leave_numbers_alone_and_are_capped(monkeypatch):
    base = "The invoice export runs every night and mails a CSV to the billing contact."
    gold = [{"user_input": f"q{i}?", "reference_contexts": [f"{base} {i}."],
             "retrieved_contexts": [f"{base} {i}", f"{base} {i}!!"]} for i in range(30)]
    result = rankgate.evaluate(gold, gold, ["recall@5"])
    assert result["recall@5"].tolist() == [0.0] * 30
    near = result.info["near_misses"]
    assert (near["count"], near["capped"], len(near["examples"])) == (60, False, 5)
    monkeypatch.setattr(nearmiss, "MAX_PAIRS", 7)
    near = rankgate.evaluate(gold, gold, ["recall@5"]).info["near_misses"]
    assert (near["pairs_compared"], near["capped"]) == (7, True)
    assert "checked the first 7 pairs" in nearmiss.near_miss_line(near)


def test_no_near_miss_check_for_inputs_matched_by_id():
    result = rankgate.evaluate(DATA / "llamaindex_qa.json", DATA / "llamaindex_bm25_run.jsonl", ["recall@3"])
    assert "near_misses" not in result.info and "notices" not in result.info


# -- the question of a query known by a hash of it ------------------------------------------------

def test_metrics_csv_carries_the_question_of_hashed_query_ids(tmp_path):
    path = DATA / "ragas_texts.jsonl"
    out = tmp_path / "out"
    assert main(["evaluate", "--gold", str(path), "--run", str(path), "-m", "recall@3", "--resamples", "0",
                 "--out", str(out)]) == 0
    with open(out / "metrics.csv", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    questions = [json.loads(line)["user_input"] for line in path.read_text(encoding="utf-8").splitlines()]
    assert [r["query"] for r in rows] == questions and all(r["query_id"].startswith("q:") for r in rows)


def test_metrics_csv_of_inputs_with_ids_has_no_query_column(tmp_path):
    out = tmp_path / "out"
    assert main(["evaluate", "--gold", str(DATA / "llamaindex_qa.json"), "--run", str(DATA / "llamaindex_bm25_run.jsonl"),
                 "-m", "recall@3", "--resamples", "0", "--out", str(out)]) == 0
    assert (out / "metrics.csv").read_text(encoding="utf-8").splitlines()[0] == "query_id,recall@3"


# -- pandas' default to_json ------------------------------------------------------------------------

def test_pandas_default_to_json_reads_as_its_rows():
    """EvaluationDataset.to_pandas().to_json(path): one object per column (pandas' default orient)."""
    columns, lines = DATA / "ragas_pandas_columns.json", DATA / "ragas_texts.jsonl"
    specs = compat_metrics("ragas", TOP_K)
    a, b = rankgate.evaluate(columns, columns, specs), rankgate.evaluate(lines, lines, specs)
    assert a.query_ids == b.query_ids and all(a[m].tolist() == b[m].tolist() for m in a.metric_names)


def test_pandas_default_to_json_of_rankgate_records(tmp_path):
    gold, run = tmp_path / "gold.json", tmp_path / "run.json"
    gold.write_text(json.dumps({"query_id": {"0": "a", "1": "b"}, "relevant": {"0": ["d1"], "1": ["d2", "d4"]}}))
    run.write_text(json.dumps({"query_id": {"0": "a", "1": "b"}, "topk": {"0": ["d1", "d3"], "1": ["d2"]}}))
    result = rankgate.evaluate(gold, run, ["recall@3"])
    assert result.query_ids == ("a", "b") and result["recall@3"].tolist() == [1.0, 0.5]


def test_list_sep_option_words_and_limits():
    from rankgate.io.formats import parse_columns, split_list_sep
    from rankgate.errors import UsageError

    assert parse_columns("list_sep=comma") == {"list_sep": ","}
    assert split_list_sep(parse_columns("query_id=qid,list_sep=tab")) == ({"query_id": "qid"}, "\t")
    assert split_list_sep({"list_sep": ";"}) == (None, ";")
    with pytest.raises(UsageError, match="at most 16 characters"):
        parse_columns("list_sep=" + "x" * 17)
    with pytest.raises(UsageError, match="list_sep"):
        parse_columns("nope=1")


def test_gate_comment_says_near_misses_and_joined_lists(tmp_path):
    cfg = tmp_path / "gate.yaml"
    cfg.write_text("gates:\n  - metric: recall@100\n    threshold: 0.1\n", encoding="utf-8")
    near, joined = DATA / "ragas_near_miss.jsonl", DATA / "deepeval_goldens.csv"
    for path, words in ((near, "probably the same chunk, re-chunked or re-punctuated"),
                        (joined, "lists are joined by")):
        comment = tmp_path / f"{path.stem}.md"
        assert main(["gate", "--config", str(cfg), "--gold", str(path), "--candidate", str(path),
                     "--comment", str(comment)]) in (0, 1)
        assert words in " ".join(comment.read_text(encoding="utf-8").split())


def test_html_report_names_near_misses(tmp_path):
    path = DATA / "ragas_near_miss.jsonl"
    out = tmp_path / "r.html"
    assert main(["report", "--gold", str(path), "--run", str(path), "-o", str(out), "--resamples", "0"]) == 0
    html = " ".join(out.read_text(encoding="utf-8").split())
    assert "probably the same chunk, re-chunked or re-punctuated" in html


def test_compare_says_near_misses_on_stderr(capsys):
    path = DATA / "ragas_near_miss.jsonl"
    assert main(["compare", "--gold", str(path), str(path), str(path), "-m", "recall@100", "--resamples", "0"]) == 0
    err = " ".join(capsys.readouterr().err.split())
    assert err.count("probably the same chunk, re-chunked or re-punctuated") == 1  # said once, not per run
