"""A history store built from the demo's summaries over simulated commits, for the history tests.

Twelve daily commits on main (2026-05-01 to 2026-05-12, 10:00 UTC), each recorded as evaluate's summary.json and
the gate outcome, written from the demo's own files (``rankgate demo --out``) with:

* metric shifts: recall@5 loses queries on some days (per-query values and means changed together);
* a gold set change on day 7 (another gold sha256) and a corpus version change on day 10;
* gate ``recall_at_5`` (owner ``search-quality``) in breach from day 3 to day 6: it recovers after 3 days;
  gate ``ranking_quality`` (owner ``ranking-team``) in breach on day 9, recovered on day 10 (1 day);
  ``recall_at_5`` in breach again on day 12, the newest entry: open now.
"""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

START_DAY = 1
DAYS = 12
GOLD_CHANGE_DAY = 7
CORPUS_CHANGE_DAY = 10
RECALL_BREACH = {3, 4, 5, 12}   # recall_at_5 fails on these days (recovers on day 6: after 3 days)
NDCG_BREACH = {9}               # ranking_quality fails on day 9 (recovers on day 10: after 1 day)
DROPS = {1: 0, 2: 1, 3: 8, 4: 9, 5: 8, 6: 2, 7: 2, 8: 1, 9: 3, 10: 0, 11: 1, 12: 9}  # recall@5 queries lost
OWNERS = {"recall_at_5": "search-quality", "ranking_quality": "ranking-team", "any_answer_in_top_5": "search-quality"}
NEW_GOLD = "f" * 64


def commit(d: int) -> str:
    return f"{d:02d}" + "c0ffee" * 6 + "ab"


def when(d: int) -> str:
    return f"2026-05-{d:02d}T10:00:00Z"


def _drop(summary: dict[str, Any], k: int) -> float:
    """Set recall@5 of the first ``k`` queries where it is 1 to 0; the new mean (its interval moved with it)."""
    pq = summary["per_query"]["values"]["recall@5"]
    done = 0
    for i, v in enumerate(pq):
        if done == k:
            break
        if v == 1.0:
            pq[i] = 0.0
            done += 1
    vals = [v for v in pq if v is not None]
    mean = math.fsum(vals) / len(vals)
    m = summary["metrics"]["recall@5"]
    shift = mean - m["mean"]
    m.update(mean=mean, ci_low=max(0.0, m["ci_low"] + shift), ci_high=min(1.0, m["ci_high"] + shift))
    return mean


def build(demo: Path, out: Path) -> list[list[Path]]:
    """The day's files (evaluate's summary, the gate outcome), one list per day, written under ``out``."""
    summary0 = json.loads((demo / "candidate" / "summary.json").read_text(encoding="utf-8"))
    gate0 = json.loads((demo / "gate.json").read_text(encoding="utf-8"))
    days = []
    for d in range(START_DAY, START_DAY + DAYS):
        s, g = copy.deepcopy(summary0), copy.deepcopy(gate0)
        mean = _drop(s, DROPS[d])
        g["metrics"]["recall@5"] = dict(s["metrics"]["recall@5"])
        g["per_query"]["values"]["recall@5"] = list(s["per_query"]["values"]["recall@5"])
        if d >= GOLD_CHANGE_DAY:
            s["inputs"]["gold"]["sha256"] = s["per_query"]["gold_sha256"] = NEW_GOLD
            g["gold_versions"]["candidate"] = g["per_query"]["gold_sha256"] = NEW_GOLD
        if d >= CORPUS_CHANGE_DAY:
            s["systems"]["gold"]["corpus_version"] = ["2026-05-10"]
        s["inputs"]["run"]["sha256"] = f"{d:064x}"
        for gate in g["gates"]:
            gate["owner"] = OWNERS.get(gate["name"])
            bad = (gate["name"] == "recall_at_5" and d in RECALL_BREACH) or (
                gate["name"] == "ranking_quality" and d in NDCG_BREACH)
            gate["status"] = "fail" if bad else ("warn" if gate["severity"] == "warning" else "pass")
            for c in gate["checks"]:
                headline_threshold = c["kind"] == "threshold" and c["field"] is None
                c["status"] = "fail" if bad and headline_threshold else "pass"
                if gate["name"] == "recall_at_5" and headline_threshold:
                    c["mean"] = c["value"] = mean
        g["passed"] = not any(x["status"] == "fail" for x in g["gates"])
        g["exit_code"] = 0 if g["passed"] else 1
        folder = out / f"day{d:02d}"
        folder.mkdir(parents=True)
        (folder / "summary.json").write_text(json.dumps(s), encoding="utf-8")
        (folder / "gate.json").write_text(json.dumps(g), encoding="utf-8")
        days.append([folder / "summary.json", folder / "gate.json"])
    return days


def record(days: list[list[Path]], store: Path) -> None:
    """``rankgate history add`` of each day's files at its commit and time (in this process)."""
    from rankgate.cli.main import main

    for d, files in enumerate(days, START_DAY):
        code = main(["history", "add", *map(str, files), "--store", str(store), "--commit", commit(d),
                     "--branch", "main", "--when", when(d)])
        assert code == 0
