"""Learn the top-score threshold under which retrieval should abstain, for a target precision (see
:mod:`rankgate.traces.abstention`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rankgate.flows._inputs import FilePath, paths

if TYPE_CHECKING:  # pragma: no cover
    from rankgate.traces.abstention import Calibration

MAX_K = 1_000_000


@dataclass(frozen=True, slots=True)
class AbstentionRequest:
    gold: str
    run: str                            # a run with scores, on the gold queries
    gold_format: str | None = None
    run_format: str | None = None
    target_precision: float = 0.9       # hit@k among answered queries, to guarantee
    k: int = 5
    delta: float = 0.05                 # allowed chance that the true precision is below the target

    def inputs(self) -> tuple[FilePath, ...]:
        """The files the request reads (an output may be none of them): the gold set and the run."""
        return paths(self.gold, self.run)

    def __post_init__(self) -> None:
        from rankgate._util.constraints import TEXT, check_fields, typed
        from rankgate.errors import F, UsageError

        check_fields(self, "AbstentionRequest", gold_format=TEXT, run_format=TEXT, target_precision=typed(float),
                     k=typed(int), delta=typed(float))
        if not 1 <= self.k <= MAX_K:
            raise UsageError(f"{F.k} must be between 1 and {MAX_K}; got {self.k}")


@dataclass(frozen=True, slots=True)
class AbstentionResult:
    calibration: Calibration            # threshold (or None), curve
    data: Mapping[str, Any]             # the abstention file's content, with the inputs' hashes


def run_calibrate_abstention(req: AbstentionRequest) -> AbstentionResult:
    from rankgate.io import load_gold, load_run
    from rankgate.io.inputs import sha256_files
    from rankgate.io.source import is_pipe
    from rankgate.traces.abstention import calibrate, top_scores

    gold = load_gold(req.gold, format=req.gold_format, label=req.gold)
    run_ = load_run(req.run, format=req.run_format, label=req.run)
    scores, correct, _ = top_scores(gold, run_, req.k)
    cal = calibrate(scores, correct, target_precision=req.target_precision, delta=req.delta, metric=f"hit@{req.k}")
    data = cal.to_yaml_data()
    # a pipe was read once already: it has no bytes left to hash
    data["abstention"]["gold"] = "" if is_pipe(req.gold) else sha256_files([req.gold])
    data["abstention"]["run"] = "" if is_pipe(req.run) else sha256_files([req.run])
    return AbstentionResult(cal, data)
