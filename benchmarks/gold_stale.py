"""Time `rankgate gold stale` and `rankgate gold remap` on 100k labels against a 1M-chunk corpus
(issue #14 asks for < 10 s each).

    python benchmarks/gold_stale.py                 # both: 1M chunks, 100k labels
    python benchmarks/gold_stale.py --only remap --chunks 100000 --labels 10000 --repeat 1

Writes (once, seeded, reused while the parameters are the same) into benchmarks/data/gold-stale-*/:
``corpus_old.jsonl`` (the version the labels were made on), ``corpus_new.jsonl`` (1% of chunks
retired, 1% superseded by a new document version, 1% with edited text, 0.5% deprecated) and
``gold.jsonl`` (labels/2 queries with two graded chunks each, and a must-not-retrieve entry on every
tenth query). Then runs, as fresh processes, ``rankgate gold stale --gold gold.jsonl --corpus
corpus_new.jsonl --since corpus_old.jsonl -o OUT`` and prints the median wall time, the peak RSS and
how many labels it found stale (which the generator knows: the script fails if they differ).

For remap it writes into ``benchmarks/data/gold-remap-*/``: ``corpus_old.jsonl`` (texts of 24–40 words
drawn from a Zipf-distributed vocabulary of 50k words, so shingles behave as in prose: common words,
mostly rare trigrams), ``corpus_new.jsonl`` (the same documents re-chunked: 40% of documents with
every chunk split in two, 40% with neighbours joined two by two, the rest kept; 1% of chunks with one
word edited and 0.5% dropped) and ``gold.jsonl`` as above. It times ``rankgate gold remap --gold …
--old-corpus … --new-corpus … -o OUT`` and fails if any dropped labelled chunk was remapped (each
must stay on its old id: unmapped, or listed for review below the confidence floor).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORDS = ["invoice", "export", "project", "client", "workspace", "member", "role", "billing", "plan", "report", "task", "time", "entry", "approval", "schedule", "archive", "budget", "rate", "currency", "tax"]


def generate(folder: Path, chunks: int, labels: int, seed: int) -> int:
    """Write the three files; return how many labels are stale by construction."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    per_doc = 5
    fate: dict[int, str] = {}
    for i in rng.sample(range(chunks), k=chunks * 35 // 1000):
        fate[i] = rng.choice(("retired", "retired", "superseded", "superseded", "edited", "edited", "deprecated"))
    with open(folder / "corpus_old.jsonl", "w", encoding="utf-8") as old, \
            open(folder / "corpus_new.jsonl", "w", encoding="utf-8") as new:
        for i in range(chunks):
            doc = f"doc_{i // per_doc:07d}"
            text = " ".join(rng.choices(WORDS, k=14))
            row = {"chunk_id": f"{doc}#c{i % per_doc}", "doc_id": doc, "text": text, "tenant": "shared",
                   "doc_version": "2026-03-01", "status": "current", "superseded_by": None}
            old.write(json.dumps(row) + "\n")
            f = fate.get(i)
            if f == "retired":
                continue
            if f == "superseded":
                new.write(json.dumps({**row, "status": "superseded", "superseded_by": row["chunk_id"] + "-v2"}) + "\n")
                new.write(json.dumps({**row, "chunk_id": row["chunk_id"] + "-v2", "doc_version": "2026-06-01"}) + "\n")
                continue
            if f == "edited":
                row = {**row, "text": text + " (updated)"}
            if f == "deprecated":
                row = {**row, "status": "deprecated"}
            new.write(json.dumps(row) + "\n")
    superseded_docs = {i // per_doc for i, f in fate.items() if f == "superseded"}
    stale = 0
    with open(folder / "gold.jsonl", "w", encoding="utf-8") as gold:
        for q in range(labels // 2):
            picks = rng.sample(range(chunks), k=2)
            rel = [{"chunk_id": f"doc_{i // per_doc:07d}#c{i % per_doc}", "grade": g} for i, g in zip(picks, (3, 1))]
            for i in picks:
                # stale: its own fate, or its document has a newer version (a sibling was superseded)
                stale += fate.get(i) is not None or (i // per_doc) in superseded_docs
            row = {"query_id": f"q{q:06d}", "query": "how do i " + " ".join(rng.choices(WORDS, k=5)),
                   "relevant_chunks": rel, "source_of_query": "production_log", "created": "2026-03-10",
                   "corpus_version": "2026-03-01", "tags": {"lang": "en"}}
            if q % 10 == 0:
                i = rng.randrange(chunks)
                row["must_not_retrieve"] = [f"doc_{i // per_doc:07d}#c{i % per_doc}"]
                stale += fate.get(i) == "retired"
            gold.write(json.dumps(row) + "\n")
    return stale


def generate_remap(folder: Path, chunks: int, labels: int, seed: int) -> int:
    """Write the remap files; return how many labelled chunk ids were dropped (must come out unmapped)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    per_doc = 4
    vocab = np.array([f"w{i}" for i in range(50_000)])
    lengths = rng.integers(24, 41, size=chunks)
    words = vocab[np.minimum(rng.zipf(1.15, size=int(lengths.sum())) - 1, len(vocab) - 1)]
    ends = np.cumsum(lengths)
    texts = [" ".join(words[e - n:e]) for e, n in zip(ends.tolist(), lengths.tolist())]
    plan = rng.random(chunks // per_doc + 1)  # per document: < 0.4 split, < 0.8 merge, else keep
    fate = rng.random(chunks)  # per chunk: < 0.01 edited, < 0.015 dropped
    dropped: set[int] = set()
    with open(folder / "corpus_old.jsonl", "w", encoding="utf-8") as old, \
            open(folder / "corpus_new.jsonl", "w", encoding="utf-8") as new:
        for d in range(0, chunks, per_doc):
            doc = f"doc_{d // per_doc:07d}"
            kept: list[str] = []
            for i in range(d, min(d + per_doc, chunks)):
                old.write(json.dumps({"chunk_id": f"{doc}#c{i - d}", "doc_id": doc, "text": texts[i]}) + "\n")
                if fate[i] < 0.01:
                    kept.append(texts[i].replace(" ", " edited ", 1))
                elif fate[i] < 0.015:
                    dropped.add(i)
                    kept.append("")
                else:
                    kept.append(texts[i])
            p = plan[d // per_doc]
            if p < 0.4:
                pieces = [h for t in kept if t for h in _halves(t)]
            elif p < 0.8:
                pieces = [" ".join(t for t in kept[k:k + 2] if t) for k in range(0, len(kept), 2)]
            else:
                pieces = kept
            new.writelines(json.dumps({"chunk_id": f"{doc}#n{k}", "doc_id": doc, "text": t}) + "\n"
                           for k, t in enumerate(x for x in pieces if x))
    picks_all = rng.choice(chunks, size=labels, replace=False)
    with open(folder / "gold.jsonl", "w", encoding="utf-8") as gold:
        for q in range(labels // 2):
            rel = [{"chunk_id": f"doc_{i // per_doc:07d}#c{i % per_doc}", "grade": g}
                   for i, g in zip(picks_all[2 * q:2 * q + 2].tolist(), (3, 1))]
            gold.write(json.dumps({"query_id": f"q{q:06d}", "query": "w1 w2", "relevant_chunks": rel}) + "\n")
    gone = [f"doc_{i // per_doc:07d}#c{i % per_doc}" for i in picks_all[: labels // 2 * 2].tolist() if i in dropped]
    (folder / "dropped_labelled.txt").write_text("".join(c + "\n" for c in gone))
    return len(gone)


def _halves(text: str) -> list[str]:
    w = text.split()
    return [" ".join(w[: len(w) // 2]), " ".join(w[len(w) // 2:])]


def timed_run(argv: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB, from os.wait4) of one fresh process; stdout is discarded."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        sys.exit(f"rankgate failed ({code}): {proc.stderr.read().decode() if proc.stderr else ''}")
    return wall, usage.ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chunks", type=int, default=1_000_000)
    ap.add_argument("--labels", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--only", choices=("stale", "remap"), help="run one of the two benchmarks")
    args = ap.parse_args()
    if args.only != "remap":
        bench_stale(args)
    if args.only != "stale":
        bench_remap(args)


def bench_remap(args: argparse.Namespace) -> None:
    folder = HERE / "data" / f"gold-remap-{args.chunks}-{args.labels}-{args.seed}"
    marker = folder / "expected_dropped.txt"
    if not marker.exists():
        t = time.perf_counter()
        marker.write_text(str(generate_remap(folder, args.chunks, args.labels, args.seed)))
        print(f"generated {folder} in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    expected = int(marker.read_text())
    for name in ("corpus_old.jsonl", "corpus_new.jsonl", "gold.jsonl"):
        with open(folder / name, "rb") as fh:
            while fh.read(1 << 24):
                pass
    times, rss = [], 0.0
    out_dir = Path(tempfile.mkdtemp(prefix="rankgate-remap-"))
    try:
        for _ in range(args.repeat):
            wall, rss = timed_run([sys.executable, "-m", "rankgate", "gold", "remap", "--gold", str(folder / "gold.jsonl"),
                                   "--old-corpus", str(folder / "corpus_old.jsonl"), "--new-corpus",
                                   str(folder / "corpus_new.jsonl"), "-o", str(out_dir / "proposed.jsonl")])
            times.append(wall)
        review = (out_dir / "proposed.review.md").read_text(encoding="utf-8")
        moved = {m["from"] for line in (out_dir / "proposed.jsonl").open(encoding="utf-8")
                 for m in json.loads(line).get("remap", ())}
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)
    kinds = {k: int(n) for k, n in re.findall(r"^\| (\w+) \| (\d+) \|$", review, re.MULTILINE)}
    print(f"gold remap: {args.labels:,} labels x {args.chunks:,} chunks: median {statistics.median(times):.2f} s "
          f"over {args.repeat} (min {min(times):.2f}), peak RSS {rss:.0f} MB, labelled chunks by kind {kinds}, "
          f"{expected} dropped")
    wrong = moved & set((folder / "dropped_labelled.txt").read_text().split())
    if wrong:
        sys.exit(f"{len(wrong)} dropped chunks were remapped, e.g. {sorted(wrong)[:3]}")


def bench_stale(args: argparse.Namespace) -> None:
    folder = HERE / "data" / f"gold-stale-{args.chunks}-{args.labels}-{args.seed}"
    marker = folder / "expected_stale.txt"
    if not marker.exists():
        t = time.perf_counter()
        expected = generate(folder, args.chunks, args.labels, args.seed)
        marker.write_text(str(expected))
        print(f"generated {folder} in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    expected = int(marker.read_text())
    for name in ("corpus_old.jsonl", "corpus_new.jsonl", "gold.jsonl"):  # read once so the disk cache is warm
        with open(folder / name, "rb") as fh:
            while fh.read(1 << 24):
                pass
    times, rss = [], 0.0
    out_dir = Path(tempfile.mkdtemp(prefix="rankgate-stale-"))
    try:
        for _ in range(args.repeat):
            wall, rss = timed_run([sys.executable, "-m", "rankgate", "gold", "stale", "--gold",
                                           str(folder / "gold.jsonl"), "--corpus", str(folder / "corpus_new.jsonl"),
                                           "--since", str(folder / "corpus_old.jsonl"), "-o", str(out_dir)])
            times.append(wall)
        rows = (out_dir / "stale.csv").read_text(encoding="utf-8").count("\n") - 1
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)
    print(f"gold stale: {args.labels:,} labels x {args.chunks:,} chunks (--since, -o): median {statistics.median(times):.2f} s "
          f"over {args.repeat} (min {min(times):.2f}), peak RSS {rss:.0f} MB, {rows:,} stale labels")
    if rows != expected:
        sys.exit(f"expected {expected} stale labels, got {rows}")


if __name__ == "__main__":
    main()
