"""The labelling app's speed (issue 35's targets: a grade to the next card within 50 ms at p95 with a 100,000-item
queue and a 1 GB database; ``label export`` of 100,000 labels within 2 s).

    python benchmarks/label_app.py                       # 100,000 items of ~10 kB (a ~1 GB database), ~3 min
    python benchmarks/label_app.py --items 20000 --text-bytes 2000   # a quick look

Steps, each timed on its own:

1. a pool-shaped queue of ``--items`` items (texts of ``--text-bytes``) is written and read into a new database by
   ``rankgate label serve``'s own code (the first start's cost);
2. the database is filled as a busy labelling project would be: annotator ``alice`` has labelled every item but the
   last ``--open`` ones, ``bob`` the shared items among them (``--overlap``), written in one transaction straight into
   the tables (labelling them one by one through the app would take hours, and is what step 3 times);
3. ``rankgate label serve`` runs in its own process; alice and bob take turns grading ``--grades`` cards over HTTP
   (``POST /api/grade``, which commits the label and answers with the next card's HTML): each request's wall time,
   client side, is one sample (p50, p95, max);
4. the remaining items are labelled (in the tables again) and ``rankgate label export`` writes every item's label:
   its wall time as a process (start-up included).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def write_queue(path: Path, items: int, text_bytes: int) -> None:
    filler = ("Rotate an API key from Settings > Keys; the old key keeps working for 24 hours. " * (text_bytes // 80 + 1))
    with path.open("w", encoding="utf-8") as fh:
        for i in range(items):
            fh.write(json.dumps({"query_id": f"q{i // 10}", "query": f"how do i rotate api key {i // 10}",
                                 "id": f"doc{i}#c{i % 7}", "text": f"{i} " + filler[:text_bytes],
                                 "runs": ["candidate"], "best_rank": i % 10 + 1}) + "\n")


def fill(db: Path, open_items: int) -> int:
    """Alice's labels on every item but the last ``open_items``, bob's on the shared ones among them."""
    import sqlite3

    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    total = conn.execute("SELECT MAX(pos) FROM items").fetchone()[0]
    upto = total - open_items
    at = "2026-05-01T09:00:00.000Z"
    conn.execute("INSERT INTO labels(pos, annotator, action, grade, at, via) SELECT pos, 'alice', 'label', pos % 3, ?, "
                 "'card' FROM items WHERE pos <= ?", (at, upto))
    conn.execute("INSERT INTO labels(pos, annotator, action, grade, at, via) SELECT pos, 'bob', 'label', (pos + 1) % 3, "
                 "?, 'card' FROM items WHERE pos <= ? AND need = 2", (at, upto))
    conn.execute("UPDATE items SET labelled = (SELECT COUNT(*) FROM labels l WHERE l.pos = items.pos AND l.ended_at IS NULL), "
                 "taken = (SELECT COUNT(*) FROM labels l WHERE l.pos = items.pos AND l.ended_at IS NULL) WHERE pos <= ?", (upto,))
    conn.execute("DELETE FROM strata")
    conn.execute("INSERT INTO strata(stratum, total, done) SELECT stratum, COUNT(*), SUM(labelled >= need) FROM items "
                 "WHERE need > 0 GROUP BY stratum")
    conn.execute("COMMIT")
    n = conn.execute("SELECT COUNT(*) FROM labels").fetchone()[0]
    conn.close()
    return int(n)


def finish(db: Path) -> int:
    import sqlite3

    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    at = "2026-05-01T10:00:00.000Z"
    conn.execute("INSERT INTO labels(pos, annotator, action, grade, at, via) SELECT pos, 'carol', 'label', pos % 3, ?, "
                 "'card' FROM items WHERE labelled = 0", (at,))
    conn.execute("COMMIT")
    n = conn.execute("SELECT COUNT(*) FROM labels WHERE ended_at IS NULL AND action = 'label'").fetchone()[0]
    conn.close()
    return int(n)


def serve(queue: Path, db: Path, overlap: float) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, "-m", "rankgate", "label", "serve", str(queue), "--db", str(db), "--port",
                             "0", "--overlap", str(overlap)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline() if proc.stdout else ""
    if not line.startswith("open "):
        raise SystemExit(f"the server did not start: {line}{proc.stderr.read() if proc.stderr else ''}")
    return proc, line.split()[1]


def grade_times(url: str, grades: int) -> list[float]:
    import socket

    import httpx

    origin, token = url.split("/?token=")
    clients = {}
    for who in ("alice", "bob"):
        # TCP_NODELAY, as browsers set it: without it the request's body waits for the server's delayed ACK (~40 ms)
        transport = httpx.HTTPTransport(socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)])
        c = httpx.Client(base_url=origin, follow_redirects=False, timeout=30, transport=transport)
        c.get(f"/?token={token}&annotator={who}")
        page = c.get("/").text
        clients[who] = (c, page)
    times = []
    pos = {}
    for who, (_, page) in clients.items():
        pos[who] = int(page.split('data-pos="')[1].split('"')[0])
    for i in range(grades):
        who = ("alice", "bob")[i % 2]
        c = clients[who][0]
        start = time.perf_counter()
        r = c.post("/api/grade", json={"pos": pos[who], "grade": i % 3}, headers={"X-Rankgate-Token": token})
        times.append((time.perf_counter() - start) * 1000)
        html = r.json()["html"]
        if 'data-pos="' not in html:
            break
        pos[who] = int(html.split('data-pos="')[1].split('"')[0])
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--items", type=int, default=100_000)
    ap.add_argument("--text-bytes", type=int, default=10_000)
    ap.add_argument("--open", type=int, default=2_000, help="items left unlabelled for step 3 (default 2,000)")
    ap.add_argument("--overlap", type=float, default=0.1)
    ap.add_argument("--grades", type=int, default=1_000)
    ap.add_argument("--dir", help="work folder (default: a temporary one, removed)")
    args = ap.parse_args()
    work = Path(args.dir or tempfile.mkdtemp(prefix="rankgate-label-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    queue, db, out = work / "queue.jsonl", work / "labels.sqlite", work / "labels.jsonl"
    for p in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
        p.unlink(missing_ok=True)

    start = time.perf_counter()
    write_queue(queue, args.items, args.text_bytes)
    print(f"queue: {args.items:,} items, {queue.stat().st_size / 1e9:.2f} GB, written in {time.perf_counter() - start:.1f} s",
          flush=True)
    from rankgate.labels.queue import read_queue
    from rankgate.labels.scales import SCALES
    from rankgate.labels.store import LabelStore

    start = time.perf_counter()
    store = LabelStore.open(str(db), create=True)
    store.bind_queue(read_queue(str(queue)), SCALES["0-2"], args.overlap)
    store.close()
    print(f"read into the database in {time.perf_counter() - start:.1f} s", flush=True)
    start = time.perf_counter()
    labels = fill(db, args.open)
    print(f"filled with {labels:,} labels in {time.perf_counter() - start:.1f} s; database {db.stat().st_size / 1e9:.2f} GB",
          flush=True)

    start = time.perf_counter()
    proc, url = serve(queue, db, args.overlap)
    print(f"server up in {time.perf_counter() - start:.1f} s (reads and checks the queue's sha256)", flush=True)
    try:
        times = grade_times(url, args.grades)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    times.sort()
    p95 = times[int(round(0.95 * (len(times) - 1)))]
    print(f"grade -> next card over HTTP, {len(times):,} grades by two annotators: p50 {statistics.median(times):.1f} ms, "
          f"p95 {p95:.1f} ms, max {times[-1]:.1f} ms", flush=True)

    in_force = finish(db)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "rankgate", "label", "export", "--db", str(db), "-o", str(out), "--all"],
                   check=True, stderr=subprocess.DEVNULL)
    every = time.perf_counter() - start
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "rankgate", "label", "export", "--db", str(db), "-o", str(out),
                    "--resolve", "lowest"], check=True, stderr=subprocess.DEVNULL)
    one = time.perf_counter() - start
    lines = sum(1 for _ in out.open(encoding="utf-8"))
    digest = hashlib.sha256(out.read_bytes()).hexdigest()[:12]
    print(f"label export: {in_force:,} labels in force; --all (one line each) {every:.2f} s; one line per item "
          f"({lines:,} lines, sha256 {digest}) {one:.2f} s, process start included", flush=True)
    if not args.dir:
        for p in work.iterdir():
            p.unlink()
        os.rmdir(work)


if __name__ == "__main__":
    main()
