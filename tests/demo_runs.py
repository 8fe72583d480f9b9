"""Demo data for the experiment tests: the built-in corpus and gold set, and runs of the two demo
retrievers, written once per test module into a temporary folder."""

from __future__ import annotations

import json
from pathlib import Path

DEMO = Path(__file__).resolve().parents[1] / "src" / "rankgate" / "demo" / "data"
CORPUS, GOLD = DEMO / "corpus.jsonl", DEMO / "gold.jsonl"


def demo_run(folder: Path, retriever: str = "bm25-multilingual", k: int = 20) -> Path:
    from rankgate.retrieval import retrieve, write_run

    path = folder / f"{retriever}.jsonl"
    if not path.exists():
        write_run(retrieve(CORPUS, GOLD, retriever, k=k, latency=False), path)
    return path


def gold_records() -> list[dict]:
    return [json.loads(line) for line in GOLD.read_text(encoding="utf-8").splitlines() if line.strip()]


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path
