"""Simulated offline ↔ online data whose true link is known (tests of ``rankgate validity``).

Queries miss the offline metric with probability ``miss``; each query gets a number of production
requests, and each request is bad with its query's own probability, drawn around the group's rate
(``p_fail`` for queries that miss, ``p_pass`` for the others) from a Beta distribution of concentration
``spread``. The true risk difference is ``p_fail - p_pass``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

LINKS = {"strong": (0.30, 0.10), "none": (0.15, 0.15), "reversed": (0.08, 0.20)}


@dataclass(frozen=True)
class Sim:
    queries: int = 300
    link: str = "strong"
    miss: float = 0.3
    mean_requests: float = 6.0
    spread: float = 20.0
    seed: int = 0

    @property
    def truth(self) -> float:
        p1, p0 = LINKS[self.link]
        return p1 - p0


def draw(sim: Sim) -> dict[str, np.ndarray]:
    """Per query: ``fail`` (misses the metric), ``n`` requests, ``k`` bad ones."""
    rng = np.random.default_rng(sim.seed)
    p1, p0 = LINKS[sim.link]
    fail = rng.random(sim.queries) < sim.miss
    mean = np.where(fail, p1, p0)
    p = rng.beta(mean * sim.spread, (1 - mean) * sim.spread)
    n = 1 + rng.poisson(sim.mean_requests - 1, sim.queries)
    k = rng.binomial(n, p)
    return {"fail": fail, "n": n, "k": k}


def write_inputs(folder: Path, sim: Sim, *, fallback: bool = True) -> dict[str, Path]:
    """gold.jsonl, run.jsonl and traces.jsonl for ``sim``: a query that misses has its relevant chunk
    outside the run's top 5 (hit@5 = 0); a bad request carries negative feedback (and, with
    ``fallback``, every request logs whether it fell back, never)."""
    d = draw(sim)
    folder.mkdir(parents=True, exist_ok=True)
    gold, run, traces = [], [], []
    r = 0
    for i in range(sim.queries):
        qid = f"q{i:04d}"
        text = f"How do I do task number {i}?"
        gold.append({"query_id": qid, "query": text, "relevant_chunks": [{"chunk_id": f"c{i}", "grade": 1}],
                     "tags": {"half": "a" if i % 2 else "b"}})
        top = [f"x{i}-{j}" for j in range(5)] if d["fail"][i] else [f"c{i}"] + [f"x{i}-{j}" for j in range(4)]
        run.append({"query_id": qid, "topk": [{"chunk_id": c, "score": 1.0 - j / 10} for j, c in enumerate(top)]})
        for j in range(int(d["n"][i])):
            r += 1
            bad = j < int(d["k"][i])
            rec = {"request_id": f"r{r}", "timestamp": f"2026-05-{1 + r % 28:02d}T10:00:00Z",
                   "query": text.upper() + "  " if j % 2 else text, "feedback": [{"value": 0 if bad else 1}]}
            if fallback:
                rec["fallback"] = False
            traces.append(rec)
    out = {"gold": folder / "gold.jsonl", "run": folder / "run.jsonl", "traces": folder / "traces.jsonl"}
    for name, recs in (("gold", gold), ("run", run), ("traces", traces)):
        out[name].write_text("".join(json.dumps(x) + "\n" for x in recs), encoding="utf-8")
    return out
