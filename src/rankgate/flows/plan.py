"""How many labels each gated segment needs, and where a labelling budget goes (``rankgate gold plan``; see
:mod:`rankgate.goldset.plan` and docs/gold.md, "How many labels: gold plan")."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rankgate._util import progress
from rankgate.flows._inputs import FilePath, paths

if TYPE_CHECKING:  # pragma: no cover
    from rankgate.goldset.plan import LabelPlan


@dataclass(frozen=True, slots=True)
class PlanRequest:
    gold: str
    config: str                         # ship criteria: the gates, their regression_max and segments
    baseline: str | None = None         # a run or its summary.json: the spread of each segment's per-query values
    traces: tuple[str, ...] = ()        # trace exports: each segment's share of production traffic
    format: str | None = None           # of the traces (None: detected)
    field_map: str | None = None
    fields: Mapping[str, str] | None = None  # where the export keeps each field (as TracesRequest's)
    on_error: str = "error"
    budget: int | None = None           # new labels to split across the segments
    power: float = 0.8                  # the chance the gate sees a drop of regression_max

    def inputs(self) -> tuple[FilePath, ...]:
        """The files the request reads (an output may be none of them): the gold set, the ship criteria, the
        baseline, the trace exports and the field map."""
        return paths(self.gold, self.config, self.baseline, *self.traces, self.field_map)

    def __post_init__(self) -> None:
        from rankgate._util.constraints import FILE, PATHS, POWER, TEXT, check_fields, typed
        from rankgate.errors import F, UsageError
        from rankgate.flows.traces import _check_trace_fields
        from rankgate.goldset.plan import check_budget

        check_fields(self, "PlanRequest", config=typed(str), baseline=FILE, traces=typed(PATHS), format=TEXT,
                     field_map=FILE, on_error=typed(str), budget=typed(int, optional=True), power=POWER)
        _check_trace_fields(self)
        check_budget(self.budget)
        if not self.traces and (self.field_map or self.fields):
            raise UsageError(f"{F.field_map} and {F.fields} say how to read {F.traces}; give the trace exports too")


def run_plan(req: PlanRequest) -> LabelPlan:
    """The :class:`~rankgate.goldset.plan.LabelPlan`: per gate and segment the queries now, the smallest drop they
    see, the queries needed to see ``regression_max``, the segment's traffic, and the budget's split."""
    import os

    from rankgate.gating.config import load_config
    from rankgate.goldset import read_gold_file
    from rankgate.goldset.plan import check_plan_inputs, plan_labels

    config = load_config(req.config)
    with progress.stage(f"reading {os.path.basename(req.gold) or req.gold}"):
        gold = read_gold_file(req.gold)
    check_plan_inputs(gold, config)  # before the slow steps
    baseline, notes = None, list[str]()
    if req.baseline:
        from rankgate.flows.gold import _baseline_values

        with progress.stage(f"reading and scoring {os.path.basename(req.baseline) or req.baseline}"):
            baseline, notes = _baseline_values(req.gold, req.baseline, gold, config)
    traffic = None
    if req.traces:
        from rankgate.traces import read_traces
        from rankgate.traces.quota import segment_traffic

        fields = list(dict.fromkeys(f for g in config.gates if g.regression_max is not None for f in g.segments))
        with progress.stage(f"reading {len(req.traces)} trace export{'s' * (len(req.traces) != 1)}"):
            tables = read_traces(list(req.traces), format=req.format, on_error=req.on_error, field_map=req.field_map,
                                 fields=req.fields)
        traffic = segment_traffic(tables, fields)
        if tables.skipped.total:
            notes.append(f"{tables.skipped.total:,} trace rows could not be used and were skipped")
    with progress.stage("planning"):
        return plan_labels(gold, config, baseline=baseline, traffic=traffic, budget=req.budget, power=req.power,
                           baseline_path=req.baseline if baseline is not None else None, traces=req.traces,
                           notes=notes)
