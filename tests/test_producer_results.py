"""Results as LlamaIndex and LangChain users hold them, read with no conversion: the files the libraries
wrote (``tests/data/producers/make_retriever_results.py``: RetrieverEvaluator results, NodeWithScore and
TextNode dumps, LangChain Document dumps and ``dumpd()``) and the objects themselves in Python, read by
their attribute names (no library imported: the objects here are small stand-ins of the same shapes).

Per query, rankgate's numbers equal LlamaIndex's own (``retriever_results.expected.json``: each result's
``metric_dict``; for LangChain's rankings, LlamaIndex's metric classes on LangChain's ids), through the
compat table (``rankgate metrics --compat llamaindex``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import rankgate
from rankgate.cli.main import main
from rankgate.errors import InputError
from rankgate.io import load_gold, load_run
from rankgate.io.detect import detect
from rankgate.io.jsonl import parse_run_records
from rankgate.metrics import parse_metric
from rankgate.metrics.compat import compat_rows
from rankgate.testing import assert_retrieval

DATA = Path(__file__).parent / "data" / "producers"
EXPECTED = json.loads((DATA / "retriever_results.expected.json").read_text(encoding="utf-8"))
TOP_K = EXPECTED["top_k"]
QA = DATA / "llamaindex_qa.json"  # the same six questions, ids q1..q6, as EmbeddingQAFinetuneDataset wrote them
SPECS = {theirs: str(parse_metric(ours.replace("@K", f"@{TOP_K}"))) for theirs, ours, _ in compat_rows("llamaindex")}


def lines(name: str) -> list[dict]:
    return [json.loads(line) for line in (DATA / name).read_text(encoding="utf-8").splitlines()]


def check(result, case: dict) -> int:
    """rankgate's number equals LlamaIndex's for every query and metric of ``case``; the cells compared."""
    assert len(result.query_ids) == len(case["scores"]) == len(case["queries"])
    cells = 0
    for i, scores in enumerate(case["scores"]):
        for theirs, value in scores.items():
            got = float(result[SPECS[theirs]][i])
            assert got == pytest.approx(value, abs=1e-12, rel=0), (case["queries"][i], theirs, SPECS[theirs], got, value)
            cells += 1
    return cells


def test_the_files_record_the_libraries_and_every_metric():
    assert {"llama-index-core", "langchain-core", "langchain-community"} <= set(EXPECTED["versions"])
    assert set(EXPECTED["metrics"]) == set(SPECS)  # every metric LlamaIndex computed has a rankgate spec
    assert len({json.dumps(c["scores"]) for k, c in EXPECTED.items() if k.startswith("lang")}) == 1
    assert EXPECTED["langchain_documents"]["scores"] != EXPECTED["llamaindex_nodes"]["scores"]  # two rankings


# -- RetrieverEvaluator results: gold set and run in one file ----------------------------------------

@pytest.mark.parametrize("name", ["llamaindex_eval_results.json", "llamaindex_eval_results.jsonl"])
def test_retriever_evaluator_results_give_llamaindex_numbers(name):
    path = DATA / name
    assert detect(str(path), "gold").name == detect(str(path), "run").name == "llamaindex"
    result = rankgate.evaluate(path, path, list(SPECS.values()))
    case = EXPECTED["llamaindex_eval_results"]
    assert check(result, case) == 36
    gold = load_gold(path)
    assert gold.field("query") == case["queries"]  # file order; each query known by a hash of its text
    assert all(q.startswith("q:") for q in gold.query_ids)


def test_retriever_evaluator_results_keep_the_order_and_texts():
    path = DATA / "llamaindex_eval_results.json"
    dumped = json.loads(path.read_text(encoding="utf-8"))
    run = load_run(path)
    assert run.r_score is None and run.r_order is not None  # LlamaIndex logs no scores: its order ranks
    ranked = [run.r_doc.to_pylist()[i] for i in range(len(run))]
    assert ranked == [d for r in dumped for d in r["retrieved_ids"]]
    assert run.items["text"] == [t for r in dumped for t in r["retrieved_texts"]]
    assert load_gold(path).judgements() == {q: {d: 1 for d in r["expected_ids"]}
                                            for q, r in zip(run.query_ids, dumped)}


def test_retriever_evaluator_results_forced_format_and_the_other_llamaindex_file(tmp_path):
    path = DATA / "llamaindex_eval_results.jsonl"
    assert load_run(path, format="llamaindex").query_ids == load_run(path).query_ids
    with pytest.raises(InputError, match=r"qa\.json: a LlamaIndex EmbeddingQAFinetuneDataset holds a gold set"):
        load_run(QA)
    with pytest.raises(InputError, match="this looks like LlamaIndex RetrieverEvaluator results: use --run-format llamaindex"):
        load_run(path, format="ragas")


def test_results_against_a_gold_set_with_query_ids_say_why_they_do_not_line_up():
    with pytest.raises(InputError, match="carry no query id.*pass the same file as the gold set too"):
        rankgate.evaluate(QA, DATA / "llamaindex_eval_results.json", ["hit@3"])


def test_a_query_id_field_beside_the_results_is_used(tmp_path):
    rows = lines("llamaindex_eval_results.jsonl")
    path = tmp_path / "results.jsonl"
    path.write_text("".join(json.dumps({"query_id": f"q{i}", **r}) + "\n" for i, r in enumerate(rows, 1)))
    result = rankgate.evaluate(QA, path, list(SPECS.values()))  # now it lines up with the QA dataset's ids
    assert result.query_ids == tuple(f"q{i}" for i in range(1, 7))
    assert check(result, EXPECTED["llamaindex_eval_results"]) == 36


# -- NodeWithScore, TextNode, Document and dumpd() dumps ---------------------------------------------

RUN_FILES = {
    "llamaindex_nodes.jsonl": "llamaindex_nodes",
    "llamaindex_nodes_by_query.json": "llamaindex_nodes",
    "langchain_documents.jsonl": "langchain_documents",
    "langchain_documents_metadata_id.jsonl": "langchain_documents_metadata_id",
    "langchain_dumpd.json": "langchain_dumpd",
}
GOLD_FILES = [QA, DATA / "llamaindex_nodes_gold.jsonl", DATA / "langchain_dumpd_gold.jsonl"]


@pytest.mark.parametrize("gold", GOLD_FILES, ids=lambda p: p.name)
@pytest.mark.parametrize("name", list(RUN_FILES))
def test_node_and_document_dumps_give_llamaindex_numbers(name, gold):
    result = rankgate.evaluate(gold, DATA / name, list(SPECS.values()))
    assert result.query_ids == tuple(f"q{i}" for i in range(1, 7))
    assert check(result, EXPECTED[RUN_FILES[name]]) == 36


def test_node_dumps_keep_ids_scores_and_texts_in_the_producers_order():
    rows = lines("llamaindex_nodes.jsonl")
    run = load_run(DATA / "llamaindex_nodes.jsonl")
    nodes = [n for r in rows for n in r["nodes"]]
    assert run.r_doc.to_pylist() == [n["node"]["id_"] for n in nodes]
    assert run.r_score.tolist() == [n["score"] for n in nodes]
    assert run.items["text"] == [n["node"]["text"] for n in nodes]
    assert run.fields["query"] == [r["query"] for r in rows]


@pytest.mark.parametrize("name", ["langchain_documents.jsonl", "langchain_documents_metadata_id.jsonl"])
def test_document_dumps_read_the_id_or_the_metadata_id_and_the_page_content(name):
    rows = lines(name)
    docs = [d for r in rows for d in r["documents"]]
    run = load_run(DATA / name)
    assert run.r_doc.to_pylist() == [d["id"] or d["metadata"]["doc_id"] for d in docs]
    assert run.items["text"] == [d["page_content"] for d in docs]
    assert run.r_score is None  # LangChain's retrievers give no score: the list order ranks


def test_dumpd_reads_as_the_documents_it_serialised():
    dumped = json.loads((DATA / "langchain_dumpd.json").read_text(encoding="utf-8"))
    first = dumped["q1"][0]
    assert first["lc"] == 1 and isinstance(first["id"], list)  # the class path, not the document's id
    run = load_run(DATA / "langchain_dumpd.json")
    assert run.r_doc.to_pylist() == [d["kwargs"]["id"] for docs in dumped.values() for d in docs]
    assert run.r_doc.to_pylist() == load_run(DATA / "langchain_documents.jsonl").r_doc.to_pylist()


def test_a_document_without_an_id_names_its_metadata_and_the_field_option(tmp_path):
    row = lines("langchain_documents_metadata_id.jsonl")[0]
    for d in row["documents"]:
        del d["metadata"]["doc_id"]
    path = tmp_path / "run.jsonl"
    path.write_text(json.dumps(row) + "\n")
    with pytest.raises(InputError) as exc:
        load_run(path)
    message = str(exc.value)
    assert "run.jsonl:1: field 'documents[0]' is a LangChain Document with no id" in message
    assert "metadata keys: source" in message and "--field id=metadata.KEY" in message


def test_dumpd_of_something_else_says_what_it_is(tmp_path):
    path = tmp_path / "run.jsonl"
    item = {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", "HumanMessage"],
            "kwargs": {"content": "hi", "type": "human"}}
    path.write_text(json.dumps({"query_id": "q1", "documents": [item]}) + "\n")
    with pytest.raises(InputError, match=r"is LangChain's serialised HumanMessage \(dumpd/dumps\), not a Document"):
        load_run(path)


# -- the fast path declines them, and agrees -----------------------------------------------------------

def _forced(load, path, fast: bool):
    """``load(path)`` with the fast path forced on (every size) or off."""
    from rankgate.io import jsonl_fast

    old = jsonl_fast.MIN_BYTES
    jsonl_fast.MIN_BYTES = 0 if fast else 1 << 62
    try:
        return load(path)
    finally:
        jsonl_fast.MIN_BYTES = old


def _columns(x) -> dict:
    out = {}
    for name, value in vars(x).items():
        out[name] = value.tolist() if hasattr(value, "tolist") else value.to_pylist() if hasattr(value, "to_pylist") else value
    return out


@pytest.mark.parametrize("name", ["llamaindex_nodes.jsonl", "langchain_documents.jsonl",
                                  "langchain_documents_metadata_id.jsonl", "llamaindex_nodes_gold.jsonl",
                                  "langchain_dumpd_gold.jsonl"])
def test_fast_path_declines_producer_items_and_the_reads_agree(name):
    from rankgate.io.jsonl_fast import read_gold_fast, read_run_fast

    path = DATA / name
    gold = "gold" in name
    why: list[str] = []
    assert (read_gold_fast if gold else read_run_fast)(str(path), min_bytes=0, why=why) is None
    assert why == ["its items are LlamaIndex nodes or LangChain documents (rankgate.io.producers reads them)"]
    load = load_gold if gold else load_run
    assert _columns(_forced(load, path, True)) == _columns(_forced(load, path, False))


def test_fast_path_would_have_dropped_the_page_content(tmp_path):
    """A Document dump with ids has what the fast path reads (an ``id`` per item): only the decline keeps
    the texts the line-by-line parser reads, so the two reads stay the same."""
    rows = lines("langchain_documents.jsonl")
    path = tmp_path / "big.jsonl"
    path.write_text("".join(json.dumps({**r, "query_id": f"{r['query_id']}-{i}"}) + "\n"
                            for i in range(300) for r in rows))
    fast, slow = _forced(load_run, path, True), parse_run_records(enumerate(
        (json.loads(line) for line in path.read_text().splitlines()), 1), str(path))
    assert fast.items["text"] == slow.items["text"] and len(fast.items["text"]) == 300 * 18
    assert fast.r_doc.to_pylist() == slow.r_doc.to_pylist()


# -- the objects themselves, in Python -------------------------------------------------------------

class TextNode:  # the attributes LlamaIndex's TextNode has that rankgate reads
    def __init__(self, id_: str, text: str) -> None:
        self.id_, self.text, self.metadata = id_, text, {}

    @property
    def node_id(self) -> str:
        return self.id_


class NodeWithScore:
    def __init__(self, node: TextNode, score: float | None) -> None:
        self.node, self.score = node, score


class Document:  # LangChain's: id may be None, metadata a dict
    def __init__(self, page_content: str, metadata: dict | None = None, id: str | None = None) -> None:
        self.page_content, self.metadata, self.id = page_content, metadata or {}, id


class RetrievalEvalResult:
    def __init__(self, **fields) -> None:
        self.__dict__.update(fields)


def nodes_run() -> dict[str, list[NodeWithScore]]:
    return {r["query_id"]: [NodeWithScore(TextNode(n["node"]["id_"], n["node"]["text"]), n["score"]) for n in r["nodes"]]
            for r in lines("llamaindex_nodes.jsonl")}


def documents_run(name: str = "langchain_documents.jsonl") -> dict[str, list[Document]]:
    return {r["query_id"]: [Document(d["page_content"], d["metadata"], d["id"]) for d in r["documents"]]
            for r in lines(name)}


GOLD_IDS = {q: ids for q, ids in json.loads(QA.read_text(encoding="utf-8"))["relevant_docs"].items()}


@pytest.mark.parametrize("make, case", [
    (nodes_run, "llamaindex_nodes"),
    (documents_run, "langchain_documents"),
    (lambda: documents_run("langchain_documents_metadata_id.jsonl"), "langchain_documents"),
    (lambda: {q: [(d, 1.0) for d in docs] for q, docs in documents_run().items()}, "langchain_documents"),
])
def test_objects_in_memory_give_llamaindex_numbers(make, case):
    result = rankgate.evaluate(GOLD_IDS, make(), list(SPECS.values()))
    assert check(result, EXPECTED[case]) == 36


def test_nodes_as_the_gold_set_and_results_objects_as_both():
    corpus = json.loads(QA.read_text(encoding="utf-8"))["corpus"]
    gold = {q: [TextNode(d, corpus[d]) for d in ids] for q, ids in GOLD_IDS.items()}
    assert check(rankgate.evaluate(gold, nodes_run(), list(SPECS.values())), EXPECTED["llamaindex_nodes"]) == 36
    results = [RetrievalEvalResult(**r) for r in lines("llamaindex_eval_results.jsonl")]
    result = rankgate.evaluate(results, results, list(SPECS.values()))
    assert check(result, EXPECTED["llamaindex_eval_results"]) == 36


def test_assert_retrieval_takes_what_retriever_retrieve_returns():
    run = nodes_run()
    result = assert_retrieval(GOLD_IDS, run, "hit@3 >= 1", "mrr@3 >= 1", resamples=0)
    assert result["mrr@3"].tolist() == [s["mrr"] for s in EXPECTED["llamaindex_nodes"]["scores"]]
    with pytest.raises(AssertionError, match=r"FAIL recall@3 >= 0.9: mean 0\.6667"):
        assert_retrieval(GOLD_IDS, documents_run(), "recall@3 >= 0.9", resamples=0)


def test_evaluate_request_takes_the_objects():
    from rankgate.flows.evaluate import EvaluateRequest, run_evaluation

    objects = run_evaluation(EvaluateRequest(gold=GOLD_IDS, run=documents_run())).result
    ids = run_evaluation(EvaluateRequest(gold=GOLD_IDS, run={q: [d.id for d in docs] for q, docs in
                                                             documents_run().items()})).result
    assert objects.metric_names and objects.metric_names == ids.metric_names
    assert all(objects[m].tolist() == ids[m].tolist() for m in objects.metric_names)
    assert objects["recall@5"].tolist() == [s["recall"] for s in EXPECTED["langchain_documents"]["scores"]]


def test_in_memory_document_without_any_id_is_refused_by_name():
    run = {"q1": [Document("To export invoices as CSV…", {"source": "help/billing.md"})]}
    with pytest.raises(InputError, match=r"<run>:1: field 'topk\[0\]' is a LangChain Document with no id.*"
                                         r"metadata keys: source"):
        rankgate.evaluate(GOLD_IDS, run, ["hit@3"])


def test_real_llamaindex_objects_when_installed():
    core = pytest.importorskip("llama_index.core.schema", reason="llama-index-core is not installed")
    corpus = json.loads(QA.read_text(encoding="utf-8"))["corpus"]
    run = {r["query_id"]: [core.NodeWithScore(node=core.TextNode(id_=n["node"]["id_"], text=corpus[n["node"]["id_"]]),
                                              score=n["score"]) for n in r["nodes"]] for r in lines("llamaindex_nodes.jsonl")}
    assert check(rankgate.evaluate(GOLD_IDS, run, list(SPECS.values())), EXPECTED["llamaindex_nodes"]) == 36


def test_real_langchain_documents_when_installed():
    documents = pytest.importorskip("langchain_core.documents", reason="langchain-core is not installed")
    run = {q: [documents.Document(page_content=d.page_content, metadata=d.metadata, id=d.id) for d in docs]
           for q, docs in documents_run().items()}
    assert check(rankgate.evaluate(GOLD_IDS, run, list(SPECS.values())), EXPECTED["langchain_documents"]) == 36


# -- where LlamaIndex's definitions differ ---------------------------------------------------------

def test_where_llamaindex_definitions_differ_from_rankgates_plain_metrics():
    """precision divides by what was returned (rankgate precision@K by K: equal only for full lists), ap
    by every expected id within the cutoff (map@K), ndcg's ideal is every expected id (ndcg@K cuts it)."""
    path = DATA / "llamaindex_eval_results.json"
    case = EXPECTED["llamaindex_eval_results"]["scores"]
    result = rankgate.evaluate(path, path, ["precision@5", "precision_returned@5", "ndcg@3", "ndcg_full_ideal@3"])
    assert result["precision_returned@5"].tolist() == pytest.approx([s["precision"] for s in case])
    assert result["precision@5"].tolist() != pytest.approx([s["precision"] for s in case])  # 3 returned, over 5
    assert result["ndcg_full_ideal@3"].tolist() == pytest.approx([s["ndcg"] for s in case])


# -- the command line ----------------------------------------------------------------------------------

@pytest.mark.parametrize("gold, run", [
    ("llamaindex_eval_results.json", "llamaindex_eval_results.json"),
    ("llamaindex_qa.json", "llamaindex_nodes.jsonl"),
    ("langchain_dumpd_gold.jsonl", "langchain_dumpd.json"),
    ("llamaindex_nodes_gold.jsonl", "langchain_documents_metadata_id.jsonl"),
])
def test_cli_evaluate_reads_the_files(gold, run, capsys):
    specs = ",".join(SPECS.values())
    assert main(["evaluate", "--gold", str(DATA / gold), "--run", str(DATA / run), "-m", specs, "--resamples", "0",
                 "--json"]) == 0
    metrics = json.loads(capsys.readouterr().out)["metrics"]
    case = EXPECTED[RUN_FILES.get(run, "llamaindex_eval_results")]["scores"]
    for theirs, spec in SPECS.items():
        assert metrics[spec]["mean"] == pytest.approx(sum(s[theirs] for s in case) / len(case), abs=1e-12)


def test_the_hand_written_qa_json_of_the_docs_is_a_gold_set(tmp_path):
    """docs/formats.md shows the three keys written by hand (no llama-index-finetuning): it reads."""
    docs = (Path(__file__).parents[1] / "docs" / "formats.md").read_text(encoding="utf-8")
    section = docs.split("## LlamaIndex `EmbeddingQAFinetuneDataset`", 1)[1]
    block = section.split("```json\n", 1)[1].split("```", 1)[0]
    path = tmp_path / "qa.json"
    path.write_text(block, encoding="utf-8")
    gold = load_gold(path)
    assert gold.judgements() == {"q1": {"c1": 1}, "q2": {"c3": 1, "c4": 1}}
    assert detect(str(path), "gold").name == "llamaindex"
