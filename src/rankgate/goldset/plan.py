"""``rankgate gold plan``: how many labels each gated segment needs before its gate can see the drop it
is meant to catch, and how to split a labelling budget across segments. Pure: a gold set, the ship
criteria, optionally a baseline's per-query values and production traffic per segment in; a
:class:`LabelPlan` out (rendered by :mod:`rankgate.render.gold_plan`).

**Rows.** One per gate with a ``regression_max`` and per group it checks: all queries, then each value of each
field of its ``segments:`` (the groups and figures of ``gold validate``: :func:`rankgate.goldset.validate._segment_power`),
plus each value production traffic shows that the gold set lacks (0 queries). A row holds

* ``queries``: the group's answerable queries now;
* ``detectable_drop``: the smallest drop the gate can see with them (:mod:`rankgate.stats.power`; from the
  baseline's per-query values in the group when a baseline is given, else the binomial assumption);
* ``needed``: the fewest queries for which that figure is at most ``regression_max``
  (:func:`rankgate.stats.power.queries_needed`), and never fewer than the gate's ``min_queries`` (a smaller
  segment is not gated at all); ``labels_to_add = max(0, needed − queries)``;
* ``traffic_share``: the segment's share of production requests (of those that carry the field), or None when
  the traces carry no such field (the row is planned from gold counts alone).

The spread behind ``needed`` is the baseline's ``σ̂`` in the group (``method`` ``baseline``), or, without a
baseline or with fewer than 2 of its values in the group, ``sqrt(p (1 − p))`` at the gate's threshold ``p``
(0.5 without one; ``method`` ``assumed``): the largest spread a metric in [0, 1] can have at mean ``p``.

**The test.** The gate's: a paired change whose interval, two-sided at the ship criteria's confidence ``c``,
lies below zero, i.e. a one-sided test of a drop at ``(1 − c)/2``, at the plan's power (0.8 by default).

**A budget** (:func:`split_budget`). New labels go to *cells*, the ``(field, value)`` pairs of the segment rows; a
label added to a cell counts for every row of that cell (each gate segmenting on the field) and for every
all-queries row, and for no other cell (its value of another field is not known in advance). The all-queries
rows gain every label whatever the split, so the split is made over the segment rows. Each cell ``c`` with
``x`` new labels has the *weighted blindness*

    B_c(x) = max over the rows r of c of  w_c · δ_r(n_c + x) / regression_max_r

where ``δ_r(m) = z · sd_r / √m`` (``inf`` while ``m`` is under the gate's ``min_queries``) and ``w_c`` is the cell's
traffic share (the values of a field the traces lack are taken to carry equal traffic, ``1/K`` for ``K`` values).
``w_c · δ_r`` is how far a drop the gate cannot see in that segment moves the metric over all production traffic,
and dividing by ``regression_max`` puts gates on one scale (1 = the whole limit). The split minimises
``max_c B_c(x_c)`` subject to ``Σ x_c = N``: given one label at a time to the cell of the largest ``B_c``
(ties: the larger traffic share, then the order of the rows). This greedy split is optimal because each
``B_c`` is non-increasing in ``x``: if the greedy split ends at maximum ``M``, reached in cell ``c₀``, any
split ``y`` either gives ``c₀`` no more labels (then ``B_{c₀}(y) ≥ M``) or gives some cell ``c₁`` fewer than
the greedy ``x_{c₁}``; ``c₁`` got its last greedy label while it held the maximum, which never rises as labels
are given, so ``B_{c₁}(y_{c₁}) ≥ B_{c₁}(x_{c₁} − 1) ≥ M``. (tests/test_gold_plan.py checks it against every
split of small budgets.) A cell with no traffic (``w_c = 0``) gets no labels from the budget.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from rankgate.errors import ConfigError, InputError, UsageError
from rankgate.goldset.records import GoldFile

if TYPE_CHECKING:  # the config is only read here; goldset sits below the gate layer
    from rankgate.gating.config import GateConfig

__all__ = ["ALL", "CSV_COLUMNS", "MAX_BUDGET", "Cell", "LabelPlan", "PlanRow", "blindness", "check_budget", "check_plan_inputs", "plan_labels",
           "read_plan_quotas", "split_budget"]

#: The most new labels a budget may split (a bound on outside input: far beyond any labelling effort, and the
#: greedy split costs a step per label).
MAX_BUDGET = 1_000_000
#: The field of an all-queries row.
ALL = "all"
#: The columns of plan.csv, in order (``gold sample --plan`` reads ``segment_field``, ``segment``,
#: ``labels_to_add`` and ``budget_labels``).
CSV_COLUMNS = ("gate", "metric", "segment_field", "segment", "queries", "min_queries", "regression_max",
               "detectable_drop", "spread", "spread_from", "queries_needed", "labels_to_add", "traffic_share",
               "traffic_requests", "budget_labels", "drop_after_budget", "can_see_limit")


@dataclass(frozen=True)
class PlanRow:
    """One gate over one group (see the module docs)."""

    gate: str
    metric: str
    field: str                      # "all" for all queries
    value: str
    queries: int
    min_queries: int
    regression_max: float
    detectable_drop: float          # now (inf: none, too few queries)
    spread: float                   # the per-query standard deviation ``needed`` rests on
    method: str                     # baseline | assumed
    level: float                    # the metric's level the figure assumes: the baseline's mean, else the threshold or 0.5
    needed: int
    traffic_share: float | None = None    # None: the traces carry no such field (or no traces)
    traffic_requests: int | None = None
    budget: int | None = None             # new labels the budget gives this row's group (None: no budget)
    drop_after: float | None = None       # the smallest visible drop with them

    @property
    def labels_to_add(self) -> int:
        return max(0, self.needed - self.queries)

    @property
    def gated(self) -> bool:
        return self.queries >= self.min_queries

    @property
    def blind(self) -> bool:
        """The gate cannot see its ``regression_max`` here now (or does not check the group at all)."""
        return not self.gated or self.detectable_drop > self.regression_max

    @property
    def segment(self) -> str:
        return "all queries" if self.field == ALL else f"{self.field}={self.value}"

    def to_dict(self) -> dict[str, Any]:
        def num(x: float | None) -> float | None:
            return None if x is None or math.isnan(x) or math.isinf(x) else x

        return {"gate": self.gate, "metric": self.metric, "segment_field": self.field, "segment": self.value,
                "queries": self.queries, "min_queries": self.min_queries, "regression_max": self.regression_max,
                "detectable_drop": num(self.detectable_drop), "spread": num(self.spread), "spread_from": self.method,
                "queries_needed": self.needed, "labels_to_add": self.labels_to_add,
                "traffic_share": num(self.traffic_share), "traffic_requests": self.traffic_requests,
                "budget_labels": self.budget, "drop_after_budget": num(self.drop_after),
                "can_see_limit": not self.blind}


@dataclass(frozen=True)
class LabelPlan:
    gold_path: str
    gold_sha256: str
    config_path: str | None
    rows: tuple[PlanRow, ...]
    confidence: float
    power: float
    baseline_path: str | None = None
    traces: tuple[str, ...] = ()
    budget: int | None = None
    objective: tuple[float, float] | None = None  # the largest weighted blindness before and after the budget
    traffic: tuple[tuple[str, int], ...] = ()     # segment fields the traces carry, with their requests
    untracked: tuple[str, ...] = ()               # segment fields planned from gold counts alone
    skipped: tuple[str, ...] = ()                 # gates without regression_max (nothing to plan)
    notes: tuple[str, ...] = ()

    @property
    def blind(self) -> tuple[PlanRow, ...]:
        """The rows whose gate cannot see its drop now, most labels needed first."""
        return tuple(sorted((r for r in self.rows if r.blind), key=lambda r: (-r.labels_to_add, r.gate, r.segment)))

    def quotas(self) -> dict[tuple[str, str], int]:
        """New labels per segment (field, value): the budget's split when there is one, else the most any gate
        needs there."""
        out: dict[tuple[str, str], int] = {}
        for r in self.rows:
            if r.field == ALL:
                continue
            want = r.budget if r.budget is not None else r.labels_to_add
            out[(r.field, r.value)] = max(out.get((r.field, r.value), 0), want)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "gold": {"path": self.gold_path, "sha256": self.gold_sha256}, "config": self.config_path,
            "baseline": self.baseline_path, "traces": list(self.traces),
            "test": {"confidence": self.confidence, "one_sided_alpha": (1 - self.confidence) / 2, "power": self.power,
                     "paired": True},
            "budget": None if self.budget is None else {
                "labels": self.budget,
                "largest_weighted_blindness": None if self.objective is None else
                {"before": _finite(self.objective[0]), "after": _finite(self.objective[1])}},
            "traffic_fields": {f: n for f, n in self.traffic}, "planned_from_gold_counts": list(self.untracked),
            "gates_without_regression_max": list(self.skipped), "notes": list(self.notes),
            "rows": [r.to_dict() for r in self.rows],
        }


def _finite(x: float) -> float | None:
    return None if math.isinf(x) or math.isnan(x) else x


# -- the budget ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Cell:
    """A segment new labels can go to: its queries now, its traffic weight, and per row of it (each gate that
    segments on its field) the spread, the gate's ``regression_max`` and ``min_queries``."""

    queries: int
    weight: float
    terms: tuple[tuple[float, float, int], ...] = field(default=())


def blindness(cell: Cell, added: int, z: float) -> float:
    """``B_c(x)`` of the module docs: the cell's largest traffic-weighted visible drop in units of its gates'
    ``regression_max``, with ``added`` new labels; 0 for a cell without traffic or rows."""
    if cell.weight <= 0 or not cell.terms:
        return 0.0
    m = cell.queries + added
    worst = 0.0
    for sd, limit, min_queries in cell.terms:
        if m < max(min_queries, 1):
            return math.inf
        worst = max(worst, z * sd / math.sqrt(m) / limit)
    return cell.weight * worst


def split_budget(cells: Sequence[Cell], budget: int, z: float) -> list[int]:
    """New labels per cell: ``budget`` given one at a time to the cell of the largest :func:`blindness` (ties: the
    larger weight, then the earlier cell). Optimal for ``max_c B_c`` (module docs). Cells that no label can help
    (no traffic, no rows) get none; when every cell is such, the budget is split evenly, earlier cells first."""
    if budget < 0:
        raise ValueError(f"budget must not be negative; got {budget}")
    counts = [0] * len(cells)
    live = [i for i, c in enumerate(cells) if c.weight > 0 and c.terms]
    if not live:
        for j in range(budget if cells else 0):
            counts[j % len(cells)] += 1
        return counts
    heap = [(-blindness(cells[i], 0, z), -cells[i].weight, i) for i in live]
    heapq.heapify(heap)
    for _ in range(budget):
        _, w, i = heapq.heappop(heap)
        counts[i] += 1
        heapq.heappush(heap, (-blindness(cells[i], counts[i], z), w, i))
    return counts


# -- the plan -----------------------------------------------------------------------------------
def plan_labels(gold: GoldFile, config: GateConfig, *, baseline: Mapping[str, Mapping[str, float]] | None = None,
                traffic: Mapping[str, Mapping[str, int]] | None = None, budget: int | None = None,
                power: float = 0.8, baseline_path: str | None = None, traces: Sequence[str] = (),
                notes: Sequence[str] = ()) -> LabelPlan:
    """The :class:`LabelPlan` (module docs). ``baseline``: metric -> query id -> value; ``traffic``: segment field
    -> value -> production requests, for the fields the traces carry (None: no traces given); ``budget``: new labels
    to split. Refuses (a :class:`~rankgate.errors.ConfigError`) ship criteria with no ``regression_max`` and a
    segment field no query of the gold set has; a budget under 1 or over :data:`MAX_BUDGET` is a UsageError."""
    from rankgate.goldset.validate import _segment_power
    from rankgate.stats.power import detection_z, queries_needed, share_sd

    check_budget(budget)
    check_plan_inputs(gold, config)
    gates = [g for g in config.gates if g.regression_max is not None]
    z = detection_z(config.confidence, power)
    by_gate = {g.name: g for g in gates}
    rows: list[PlanRow] = []
    traffic = traffic or {}
    for p in _segment_power(gold, config, baseline, power=power):
        g = by_gate.get(p.gate)
        if g is None:
            continue
        limit = float(g.regression_max)  # type: ignore[arg-type]  # (gates with regression_max only)
        level = g.threshold if g.threshold is not None else 0.5
        method, sd = ("baseline", p.spread) if p.method == "bootstrap" and not math.isnan(p.spread) else \
            ("assumed", share_sd(level))
        needed = max(queries_needed(limit, sd, confidence=config.confidence, power=power) if limit > 0 else 0,
                     p.min_queries)
        share, requests = _share(traffic, p.field, p.value)
        rows.append(PlanRow(p.gate, p.metric, p.field, p.value, p.queries, p.min_queries, limit, p.detectable_drop,
                            sd, method, p.level, needed, share, requests))
    rows = _with_unseen(rows, gates, traffic, config.confidence, power)
    plan_notes = list(notes)
    if any(g.regression_max == 0 for g in gates):
        plan_notes.append("a gate with regression_max 0 cannot be sized: no number of queries sees a drop of 0")
    objective = None
    if budget is not None:
        rows, objective = _spend(rows, budget, z, traffic)
    fields = list(dict.fromkeys(f for g in gates for f in g.segments))
    return LabelPlan(
        gold.path, gold.sha256, config.path, tuple(rows), config.confidence, power, baseline_path, tuple(traces),
        budget, objective, tuple((f, sum(traffic[f].values())) for f in fields if f in traffic),
        tuple(f for f in fields if f not in traffic),
        tuple(g.name for g in config.gates if g.regression_max is None and g.threshold is not None), tuple(plan_notes))


def check_budget(budget: int | None) -> None:
    """A budget is a whole number of new labels from 1 to :data:`MAX_BUDGET` (or None: no budget)."""
    from rankgate.errors import F

    if budget is not None and not 1 <= budget <= MAX_BUDGET:
        raise UsageError(f"{F.budget} is how many new labels to split across the segments: a whole number from 1 to "
                         f"{MAX_BUDGET:,}; got {budget}")


def check_plan_inputs(gold: GoldFile, config: GateConfig) -> None:
    """What makes a plan impossible, raised before any work: a gold set with problems (its first), ship criteria
    without a ``regression_max``, a gate segmenting on a field no answerable query has."""
    if gold.problems:
        raise gold.first_problem() or InputError("the gold set has problems", path=gold.path)
    if not any(g.regression_max is not None for g in config.gates):
        raise ConfigError("has no gate with regression_max: a plan sizes each segment for the drop its gate must see",
                          path=config.path, field="gates",
                          hint="add regression_max to the gates to plan for, e.g. 'regression_max: 0.05' (5 pp)")
    answerable = [q for q in gold.queries if any(label.grade >= 1 for label in q.labels)]
    for i, g in enumerate(config.gates):
        for name in g.segments:
            if g.regression_max is not None and not any(q.value(name) is not None for q in answerable):
                fields = sorted({k for q in answerable for k in (*q.fields, *(q.fields.get("tags") or {}))
                                 if k != "tags" and q.value(k) is not None})
                raise ConfigError(f"gate {g.name} segments on {name!r}, which no answerable query of "
                                  f"{_base(gold.path)} has", path=config.path,
                                  line=g.lines.get("segments", g.lines.get("")), field=f"gates[{i}].segments",
                                  hint="fields the gold set has: " + (", ".join(fields[:20]) or "none"))


def _base(path: str) -> str:
    import os

    return os.path.basename(path) or path


def _share(traffic: Mapping[str, Mapping[str, int]], name: str, value: str) -> tuple[float | None, int | None]:
    if name == ALL:
        total = next((sum(v.values()) for v in traffic.values()), None)
        return (1.0, total) if total is not None else (None, None)
    counts = traffic.get(name)
    if counts is None:
        return None, None
    total = sum(counts.values())
    n = counts.get(value, 0)
    return (n / total if total else 0.0), n


def _with_unseen(rows: list[PlanRow], gates: Sequence[Any], traffic: Mapping[str, Mapping[str, int]],
                 confidence: float, power: float) -> list[PlanRow]:
    """Rows for the values production shows and the gold set lacks, after each gate's own rows."""
    from rankgate.stats.power import queries_needed, share_sd

    out: list[PlanRow] = []
    for g in gates:
        out += [r for r in rows if r.gate == g.name]
        for name in g.segments:
            seen = {r.value for r in rows if r.gate == g.name and r.field == name}
            for value in sorted(set(traffic.get(name, {})) - seen):
                level = g.threshold if g.threshold is not None else 0.5
                sd = share_sd(level)
                limit = float(g.regression_max)
                needed = max(queries_needed(limit, sd, confidence=confidence, power=power) if limit > 0 else 0,
                             g.min_queries)
                share, requests = _share(traffic, name, value)
                out.append(PlanRow(g.name, g.metric, name, value, 0, g.min_queries, limit, math.inf, sd, "assumed",
                                   level, needed, share, requests))
    return out


def _spend(rows: list[PlanRow], budget: int, z: float,
           traffic: Mapping[str, Mapping[str, int]]) -> tuple[list[PlanRow], tuple[float, float]]:
    """Split ``budget`` over the segment cells (:func:`split_budget`); each row gets its cell's labels (an
    all-queries row: all of them) and its smallest visible drop with them."""
    keys = list(dict.fromkeys((r.field, r.value) for r in rows if r.field != ALL))
    if not keys:  # no segments: every label goes to all queries
        rows = [replace(r, budget=budget, drop_after=_after(r, budget, z)) for r in rows]
        return rows, (0.0, 0.0)
    per_field: dict[str, int] = {}
    for f, _ in keys:
        per_field[f] = per_field.get(f, 0) + 1
    cells = []
    for f, v in keys:
        members = [r for r in rows if (r.field, r.value) == (f, v) and r.regression_max > 0]
        weight = (_share(traffic, f, v)[0] or 0.0) if f in traffic else 1 / per_field[f]
        cells.append(Cell(members[0].queries if members else 0, weight,
                          tuple((r.spread, r.regression_max, r.min_queries) for r in members)))
    counts = split_budget(cells, budget, z)
    before = max(blindness(c, 0, z) for c in cells)
    after = max(blindness(c, x, z) for c, x in zip(cells, counts))
    given = dict(zip(keys, counts))
    out = []
    for r in rows:
        x = budget if r.field == ALL else given[(r.field, r.value)]
        out.append(replace(r, budget=x, drop_after=_after(r, x, z)))
    return out, (before, after)


def _after(r: PlanRow, added: int, z: float) -> float:
    m = r.queries + added
    return math.inf if m < r.min_queries or m <= 0 else z * r.spread / math.sqrt(m)


# -- reading a plan back (gold sample --plan) ----------------------------------------------------
#: The first characters a spreadsheet reads as a formula: plan.csv writes a text cell starting with one behind a
#: ``'`` (the rule of every rankgate CSV, rankgate.render.exports), which reading takes off again.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _undefused(text: str) -> str:
    return text[1:] if text.startswith("'") and text[1:].startswith(_FORMULA_START) else text


def read_plan_quotas(path: str) -> dict[tuple[str, str], int]:
    """The new labels per segment ``(field, value)`` a plan.csv asks for: ``budget_labels`` where the plan split a
    budget, else ``labels_to_add``; the most any of a segment's rows asks. All-queries rows are not segments.
    Errors name the file, line and column."""
    import csv

    try:
        with open(path, encoding="utf-8", newline="") as fh:
            lines = list(csv.reader(fh))
    except UnicodeDecodeError:
        raise InputError("is not UTF-8 text; expected the plan.csv 'rankgate gold plan -o' writes", path=path) from None
    except OSError as exc:
        raise InputError(f"cannot be read: {exc.strerror or exc}", path=path) from None
    if not lines:
        raise InputError("is empty; expected the plan.csv 'rankgate gold plan -o' writes", path=path)
    head = lines[0]
    need = ("segment_field", "segment", "labels_to_add", "budget_labels")
    missing = [c for c in need if c not in head]
    if missing:
        raise InputError(f"has no column {', '.join(missing)}; expected the plan.csv 'rankgate gold plan -o' writes",
                         path=path, line=1)
    at = {c: head.index(c) for c in need}
    out: dict[tuple[str, str], int] = {}
    for lineno, row in enumerate(lines[1:], start=2):
        if not row:
            continue
        if len(row) != len(head):
            raise InputError(f"has {len(row)} cells; the header has {len(head)}", path=path, line=lineno)
        f, v = _undefused(row[at["segment_field"]]), _undefused(row[at["segment"]])
        if f == ALL:
            continue
        column = "budget_labels" if row[at["budget_labels"]] != "" else "labels_to_add"
        text = row[at[column]]
        try:
            n = int(text)
        except ValueError:
            n = -1
        if n < 0:
            raise InputError(f"must be a whole number of labels, 0 or more; got {text!r}", path=path, line=lineno,
                             field=column)
        out[(f, v)] = max(out.get((f, v), 0), n)
    return out
