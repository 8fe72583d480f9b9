"""The built-in demo data (src/rankgate/demo/data): well-formed, self-consistent, and small."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[1] / "src" / "rankgate" / "demo" / "data"
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
CHUNK_ID = re.compile(r"^(doc_[a-z0-9_]+)#c([1-9][0-9]*)$")

CHUNK_FIELDS = {
    "chunk_id",
    "doc_id",
    "title",
    "text",
    "lang",
    "tenant",
    "doc_version",
    "status",
    "superseded_by",
}
GOLD_REQUIRED = {
    "query_id",
    "query",
    "relevant_chunks",
    "must_not_retrieve",
    "intent",
    "tags",
    "source_of_query",
    "created",
    "corpus_version",
    "as_of",
    "entities",
    "no_answer",
}
GOLD_OPTIONAL = {"k", "expected_answer", "conversation_id", "turn", "depends_on_turns"}


def _lines(name: str) -> list[dict]:
    with (DATA / name).open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


@pytest.fixture(scope="module")
def corpus() -> list[dict]:
    return _lines("corpus.jsonl")


@pytest.fixture(scope="module")
def gold() -> list[dict]:
    return _lines("gold.jsonl")


@pytest.fixture(scope="module")
def by_id(corpus: list[dict]) -> dict[str, dict]:
    return {chunk["chunk_id"]: chunk for chunk in corpus}


def test_files_are_small_and_documented() -> None:
    total = sum(path.stat().st_size for path in DATA.iterdir() if path.is_file())
    assert total < 1_000_000, f"demo data is {total} bytes; keep it under 1 MB"
    readme = (DATA / "README.md").read_text(encoding="utf-8")
    assert "Apache-2.0" in readme and "fictional" in readme


def test_corpus_chunks_are_well_formed(corpus: list[dict], by_id: dict[str, dict]) -> None:
    assert len(by_id) == len(corpus), "duplicate chunk ids"
    docs = {chunk["doc_id"] for chunk in corpus}
    assert 40 <= len(docs) <= 80
    for chunk in corpus:
        assert set(chunk) == CHUNK_FIELDS, chunk["chunk_id"]
        match = CHUNK_ID.match(chunk["chunk_id"])
        assert match and match.group(1) == chunk["doc_id"], chunk["chunk_id"]
        assert chunk["status"] in {"current", "deprecated", "superseded"}
        assert DATE.match(chunk["doc_version"])
        sentences = len(re.findall(r"[.!?](\s|$)", chunk["text"]))
        assert 1 <= sentences <= 6 and len(chunk["text"]) >= 60, chunk["chunk_id"]
        if chunk["status"] == "current":
            assert chunk["superseded_by"] is None
        else:
            successor = chunk["superseded_by"]
            assert successor in docs and successor != chunk["doc_id"], chunk["chunk_id"]
    # Chunk numbers of each document run 1..n without gaps.
    numbers: dict[str, list[int]] = {}
    for chunk in corpus:
        numbers.setdefault(chunk["doc_id"], []).append(int(CHUNK_ID.match(chunk["chunk_id"]).group(2)))
    for doc_id, seen in numbers.items():
        assert seen == list(range(1, len(seen) + 1)), doc_id


def test_corpus_has_languages_tenants_and_stale_documents(corpus: list[dict]) -> None:
    langs = Counter(chunk["lang"] for chunk in corpus)
    tenants = Counter(chunk["tenant"] for chunk in corpus)
    statuses = Counter(chunk["status"] for chunk in corpus)
    assert set(langs) == {"en", "de", "es"} and min(langs.values()) >= 15
    assert set(tenants) == {"shared", "acme", "globex"}
    assert statuses["superseded"] >= 3 and statuses["deprecated"] >= 1
    old = [chunk for chunk in corpus if chunk["doc_id"] == "doc_pricing_2023"]
    assert old and all(chunk["doc_version"].startswith("2023") for chunk in old)


def test_gold_records_are_well_formed(gold: list[dict], by_id: dict[str, dict]) -> None:
    ids = [record["query_id"] for record in gold]
    assert len(set(ids)) == len(ids), "duplicate query ids"
    assert len({record["query"] for record in gold}) == len(gold), "duplicate query texts"
    assert 80 <= len(gold) <= 150
    for record in gold:
        qid = record["query_id"]
        assert GOLD_REQUIRED <= set(record) <= GOLD_REQUIRED | GOLD_OPTIONAL, qid
        assert isinstance(record["query"], str) and record["query"].strip(), qid
        for item in record["relevant_chunks"]:
            assert set(item) == {"chunk_id", "grade", "note"}, qid
            assert item["chunk_id"] in by_id, f"{qid}: unknown chunk {item['chunk_id']}"
            assert type(item["grade"]) is int and 1 <= item["grade"] <= 3, qid
        relevant = [item["chunk_id"] for item in record["relevant_chunks"]]
        assert len(set(relevant)) == len(relevant), qid
        for chunk_id in record["must_not_retrieve"]:
            assert chunk_id in by_id, f"{qid}: unknown must_not_retrieve chunk {chunk_id}"
            assert chunk_id not in relevant, qid
        assert record["no_answer"] is (not relevant), qid
        assert set(record["tags"]) == {"lang", "tenant"}, qid
        for name in ("created", "corpus_version", "as_of"):
            assert DATE.match(record[name]), qid
        if "k" in record:
            assert type(record["k"]) is int and record["k"] >= 1, qid


def test_expected_answers_and_entities_occur_in_relevant_text(
    gold: list[dict], by_id: dict[str, dict]
) -> None:
    for record in gold:
        texts = [by_id[item["chunk_id"]]["text"] for item in record["relevant_chunks"]]
        if "expected_answer" in record:
            assert any(record["expected_answer"] in text for text in texts), record["query_id"]
        joined = " ".join(texts).lower()
        for entity in record["entities"]:
            assert entity.lower() in joined, f"{record['query_id']}: entity {entity!r}"
    answerable = [record for record in gold if not record["no_answer"]]
    assert all("expected_answer" in record for record in answerable)


def test_queries_are_not_copied_from_the_corpus(gold: list[dict], corpus: list[dict]) -> None:
    texts = [chunk["text"].lower() for chunk in corpus]
    copied = [
        r["query_id"] for r in gold if len(r["query"]) > 12 and any(r["query"].lower() in t for t in texts)
    ]
    assert not copied, f"queries found verbatim in chunk text: {copied}"


def test_gold_covers_segments_and_no_answer_items(gold: list[dict], by_id: dict[str, dict]) -> None:
    langs = Counter(record["tags"]["lang"] for record in gold)
    assert set(langs) == {"en", "de", "es"} and langs["de"] >= 30 and langs["es"] >= 15
    assert 5 <= sum(record["no_answer"] for record in gold) <= 10
    assert {"how_to", "troubleshooting", "policy", "billing"} <= {record["intent"] for record in gold}
    # Tenant queries forbid the other tenant's chunks; stale documents are forbidden somewhere.
    for record in gold:
        tenant = record["tags"]["tenant"]
        if tenant != "shared":
            forbidden = {by_id[c]["tenant"] for c in record["must_not_retrieve"]}
            assert forbidden and tenant not in forbidden and "shared" not in forbidden, record["query_id"]
            assert all(by_id[item["chunk_id"]]["tenant"] == tenant for item in record["relevant_chunks"])
    stale = {c for record in gold for c in record["must_not_retrieve"] if by_id[c]["status"] != "current"}
    assert {by_id[c]["doc_id"] for c in stale} >= {"doc_pricing_2023", "doc_api_v1"}


def test_demo_answers_name_known_queries_and_chunks() -> None:
    """Every demo answer is for a gold query and packs chunks of the corpus; every human verdict is for an answer."""
    gold = {json.loads(line)["query_id"] for line in (DATA / "gold.jsonl").read_text(encoding="utf-8").splitlines()}
    chunks = {json.loads(line)["chunk_id"] for line in (DATA / "corpus.jsonl").read_text(encoding="utf-8").splitlines()}
    answers = [json.loads(line) for line in (DATA / "answers.jsonl").read_text(encoding="utf-8").splitlines()]
    labels = [json.loads(line) for line in (DATA / "answer-labels.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(answers) == len({a["query_id"] for a in answers}) == 29
    assert all(a["query_id"] in gold and a["contexts"] and set(a["contexts"]) <= chunks for a in answers)
    assert all(isinstance(a.get("refused", False), bool) for a in answers)  # (two say refused: true themselves)
    assert sum(1 for a in answers if a.get("refused") is True) == 2
    assert [x["query_id"] for x in labels] == [a["query_id"] for a in answers]


def test_the_demo_has_short_conversations_with_follow_ups(gold: list[dict]) -> None:
    """A handful of the demo's queries are turns of short conversations (2–3 turns), numbered from 1, and
    some follow-ups name the earlier turn their retrieval needs."""
    turns: dict[str, list[int]] = {}
    for record in gold:
        if "conversation_id" in record:
            turns.setdefault(record["conversation_id"], []).append(record["turn"])
            for earlier in record.get("depends_on_turns", []):
                assert 1 <= earlier < record["turn"], record["query_id"]
        else:
            assert "turn" not in record and "depends_on_turns" not in record, record["query_id"]
    assert 6 <= len(turns) <= 10
    assert all(sorted(t) == list(range(1, len(t) + 1)) and 2 <= len(t) <= 3 for t in turns.values()), turns
    assert sum(1 for record in gold if record.get("depends_on_turns")) >= 6
