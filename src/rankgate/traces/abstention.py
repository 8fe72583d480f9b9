"""The abstention threshold: under which top retrieval score should the system say "I do not have a
confident source"? Learned on the gold set, with a guarantee (docs/traces.md, "calibrate-abstention").

Setup: each gold query ``i`` has the top score ``s_i`` of the run (its rank-1 score; a query the run
did not answer has none and is never answered) and ``y_i`` = 1 when the run has a relevant item in
its top ``k`` (hit@k), else 0; a gold query with no relevant item (a no-answer query) has ``y_i = 0``:
answering it is a mistake. Answering at threshold ``t`` means ``s_i >= t``; then

    coverage(t)  = #answered / n          precision(t) = #(answered and y = 1) / #answered

and the **risk–coverage curve** is ``1 - precision(t)`` against ``coverage(t)``.

Procedure (fixed-sequence testing):
1. Candidate thresholds: the scores at the 51 quantile levels ``1, 0.98, …, 0`` of the observed top
   scores (numpy's ``lower`` method, so every candidate is an observed score), distinct, from the
   strictest (highest) to the loosest.
2. Walk them in that order. A step with fewer than ``min_answered`` (30) answered queries is not
   tested (too few to bound anything) and the walk goes on. A tested step computes the one-sided
   Clopper–Pearson lower bound ``LB`` of precision at confidence ``1 - delta``
   (:func:`rankgate.stats.bootstrap.clopper_pearson`); ``LB >= target`` passes, and the first failure stops
   the walk.
3. The threshold is the loosest step passed before the first failure (None when none passed).

Testing the candidates in a fixed order, stopping at the first failure, needs no multiplicity
correction: the chance that the chosen threshold's true precision is below the target is at most
``delta`` (the "Learn then Test" fixed-sequence argument).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from rankgate.errors import ConfigError, F, InputError, UsageError

__all__ = ["AbstentionFile", "Calibration", "Step", "calibrate", "read_abstention", "read_threshold", "top_scores"]

GRID_LEVELS = 51
MIN_ANSWERED = 30


@dataclass(frozen=True)
class Step:
    threshold: float
    answered: int
    correct: int
    coverage: float
    precision: float
    lower_bound: float | None  # None: not tested (too few answered, or after the first failure)
    passed: bool | None


@dataclass(frozen=True)
class Calibration:
    threshold: float | None
    metric: str
    target_precision: float
    delta: float
    n: int
    answered: int
    coverage: float
    precision: float
    lower_bound: float
    curve: tuple[Step, ...]
    gold: str = ""
    run: str = ""

    def to_yaml_data(self) -> dict[str, Any]:
        """The file's content: the ``abstention`` block of the trace model, plus the curve."""
        def num(x: float | None) -> float | None:
            return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)

        return {
            "abstention": {
                "threshold": num(self.threshold), "metric": self.metric,
                "target_precision": self.target_precision, "delta": self.delta, "n": self.n,
                "answered": self.answered, "coverage": num(self.coverage), "precision": num(self.precision),
                "lower_bound": num(self.lower_bound), "score_field": "top1", "gold": self.gold, "run": self.run,
            },
            "curve": [{"threshold": s.threshold, "answered": s.answered, "correct": s.correct,
                       "coverage": s.coverage, "precision": num(s.precision), "lower_bound": num(s.lower_bound),
                       "passed": s.passed} for s in self.curve],
        }


def calibrate(scores: np.ndarray, correct: np.ndarray, *, target_precision: float = 0.9, delta: float = 0.05,
              metric: str = "hit@5", min_answered: int = MIN_ANSWERED, levels: int = GRID_LEVELS) -> Calibration:
    """The threshold of the module docs from per-query top scores (NaN = never answered) and 0/1
    correctness."""
    from rankgate.stats.bootstrap import clopper_pearson

    if not 0 < target_precision < 1:
        raise UsageError(f"{F.target_precision} must be between 0 and 1 (exclusive); got {target_precision}")
    if not 0 < delta < 1:
        raise UsageError(f"{F.delta} must be between 0 and 1 (exclusive); got {delta}")
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(correct, dtype=bool)
    n = int(s.size)
    seen = s[~np.isnan(s)]
    if seen.size == 0:
        raise InputError("has no scored query: the run gives no top score to calibrate on", path="<run>",
                         hint="the run must have scores for the gold queries")
    grid = np.unique(np.quantile(seen, np.linspace(1.0, 0.0, levels), method="lower"))[::-1]
    answered_mask = ~np.isnan(s)
    steps: list[Step] = []
    chosen: Step | None = None
    stopped = False
    for t in grid.tolist():
        mask = answered_mask & (s >= t)
        m = int(mask.sum())
        c = int((mask & y).sum())
        prec = c / m if m else math.nan
        lb: float | None = None
        passed: bool | None = None
        if not stopped and m >= min_answered:
            lb = clopper_pearson(c, m, confidence=1.0 - delta, side="lower")[0]
            passed = lb >= target_precision
            if passed:
                chosen = Step(t, m, c, m / n, prec, lb, True)
            else:
                stopped = True
        steps.append(Step(t, m, c, m / n, prec, lb, passed))
    if chosen is None:
        return Calibration(None, metric, target_precision, delta, n, 0, 0.0, math.nan, math.nan, tuple(steps))
    return Calibration(chosen.threshold, metric, target_precision, delta, n, chosen.answered, chosen.coverage,
                       chosen.precision, float(chosen.lower_bound), tuple(steps))  # type: ignore[arg-type]


def top_scores(gold: Any, run: Any, k: int) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """(top-1 score per gold query, NaN when the run has none; hit@k as 0/1, no-answer queries 0;
    query ids) for loaded or on-disk gold and run (one ranking rule: the engine's)."""
    from rankgate.io import Run, load_run
    from rankgate.scoring.engine import evaluate

    run_obj = run if isinstance(run, Run) else load_run(run)
    if run_obj.r_score is None:
        raise InputError("has no scores: abstention thresholds are on the top retrieval score",
                         path=run_obj.source, hint="give a run with a score per retrieved item")
    result = evaluate(gold, run_obj, [f"hit@{k}"])
    hit = np.nan_to_num(result[f"hit@{k}"], nan=0.0) > 0
    q = np.asarray(run_obj.r_query)
    sc = np.asarray(run_obj.r_score, dtype=np.float64)
    best = np.full(len(run_obj.query_ids), -np.inf)
    np.maximum.at(best, q, sc)
    by_id = dict(zip(run_obj.query_ids, best.tolist()))
    top = np.array([by_id.get(qid, math.nan) for qid in result.query_ids], dtype=np.float64)
    top[np.isneginf(top)] = math.nan
    return top, hit, result.query_ids


# -- reading the file calibrate-abstention writes -------------------------------------------------
@dataclass(frozen=True)
class AbstentionFile:
    """The ``abstention`` mapping and the risk-coverage ``curve`` (strict to loose) of one file."""

    path: str
    block: dict[str, Any]
    curve: tuple[dict[str, Any], ...]


_WRITE_IT = "write it with rankgate calibrate-abstention"


def read_abstention(path: str, *, curve: bool = False) -> AbstentionFile:
    """The file ``rankgate calibrate-abstention`` writes: the one reader of every command that takes
    ``--abstention``. ``curve``: also check what drawing the risk-coverage curve needs (the curve's
    steps, ``target_precision`` and ``n``). A ConfigError names the file and the field otherwise."""
    from rankgate._util.configfile import read_yaml

    data = read_yaml(path, "abstention")
    block = data.get("abstention") if isinstance(data, dict) else None
    if not isinstance(block, dict):
        raise ConfigError("has no 'abstention' mapping", path=path, hint=_WRITE_IT)
    steps = data.get("curve") or []
    if curve:
        if not isinstance(steps, list) or not all(
                isinstance(s, dict) and isinstance(s.get("coverage"), (int, float)) and not isinstance(s.get("coverage"), bool)
                for s in steps):
            raise ConfigError("must be a list of steps with a numeric coverage", path=path, field="curve")
        for k in ("target_precision", "n"):
            v = block.get(k)
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise ConfigError(f"must be a number; got {v!r}", path=path, field=f"abstention.{k}")
    return AbstentionFile(path, block, tuple(steps) if isinstance(steps, list) else ())


def read_threshold(path: str) -> float:
    """``abstention.threshold`` of the file: a finite number, else a ConfigError saying what to do."""
    t = read_abstention(path).block.get("threshold")
    if isinstance(t, bool) or not isinstance(t, (int, float)):
        raise ConfigError(f"must be a number; got {t!r}", path=path, field="abstention.threshold",
                          hint=f"{_WRITE_IT} (a null threshold means none was found)")
    if not math.isfinite(t):
        raise ConfigError(f"must be a finite number; got {t!r}", path=path, field="abstention.threshold",
                          hint=f"{_WRITE_IT}, or pass --abstention-threshold")
    return float(t)
