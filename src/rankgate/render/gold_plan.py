"""The label plan (:mod:`rankgate.goldset.plan`) as terminal text, plan.csv and JSON.

The text says in words which segments cannot see their gate's drop and how many labels each needs, one line
per segment, most labels first; then the segments that can, and the budget's split. Segment values come from
the gold set and the traces: on the terminal they are one line of plain text (control characters and bidi
controls shown harmlessly); in the CSV a cell a spreadsheet would run as a formula gets a leading ``'``.
"""

from __future__ import annotations

import json
import math
import os
from typing import Any

from rankgate.goldset.plan import ALL, CSV_COLUMNS, LabelPlan, PlanRow
from rankgate.render.numbers import fmt_confidence_exact, fmt_count, fmt_exact, fmt_score, fmt_share, fmt_size, neutral

__all__ = ["plan_csv", "plan_json", "plan_text", "sample_lines"]


def _name(path: str | None) -> str:
    return os.path.basename(path.rstrip("/")) if path else "—"


def _say(text: str) -> str:
    """Outside text (a segment value, a field, a gate's name) as one line of plain terminal text."""
    from rankgate.render.charts import plain

    return " ".join(plain(neutral(text)).split())


def _segment(r: PlanRow) -> str:
    return "all queries" if r.field == ALL else f"{_say(r.field)}={_say(r.value)}"


def _drop(r: PlanRow, x: float | None) -> str:
    if x is None or math.isinf(x) or x >= r.level:
        return "none, too few queries"  # even a fall to zero would go unseen (as gold validate says it)
    return fmt_size(r.metric, x)


def _labels(n: int) -> str:
    return f"{fmt_count(n)} label{'s' * (n != 1)}"


def _traffic(r: PlanRow) -> str:
    if r.traffic_share is None:
        return ""
    return f"; {fmt_share(r.traffic_share)} of traffic"


def _head(p: LabelPlan) -> list[str]:
    alpha = fmt_confidence_exact((1 - p.confidence) / 2)
    lines = [f"Label plan for {_say(_name(p.gold_path))} under {_say(_name(p.config_path))}: a paired, one-sided test "
             f"of a drop at {alpha} (the gate's {fmt_confidence_exact(p.confidence)} interval below zero), "
             f"{fmt_share(p.power, 0)} power."]
    if p.baseline_path:
        lines.append(f"Spread: the per-query values of baseline {_say(_name(p.baseline_path))} in each segment "
                     "(segments with fewer than 2 of them: assumed, as without a baseline).")
    else:
        lines.append("Spread: assumed (no baseline given): a share at the gate's threshold p (0.5 without one), "
                     "sd = sqrt(p(1 - p)), the most a metric in [0, 1] varies at mean p.")
    if not p.traces:
        lines.append("Traffic: no traces given; every segment is planned from gold counts alone.")
    else:
        if p.traffic:
            lines.append("Traffic: " + ", ".join(f"{_say(f)} from {fmt_count(n)} requests" for f, n in p.traffic) + ".")
        for f in p.untracked:
            lines.append(f"{_say(f)}: the traces carry no such field; planned from gold counts alone.")
    return lines


def _blind_line(r: PlanRow) -> str:
    if not r.gated:
        now = f"{fmt_count(r.queries)} queries, under the gate's min_queries {r.min_queries}: not gated"
        if r.queries == 0:
            now = "no query in the gold set"
    else:
        seen, limit = _drop(r, r.detectable_drop), fmt_size(r.metric, r.regression_max)
        now = f"{fmt_count(r.queries)} queries see {'just over ' * (seen == limit)}{seen}, not {limit}"
    text = (f"{_say(r.gate)} {_segment(r)}: {now}; needs {fmt_count(r.needed)} queries: add {_labels(r.labels_to_add)}"
            f"{_traffic(r)}")
    if r.budget is not None:
        text += f"; the budget gives {fmt_count(r.budget)} ({_drop(r, r.drop_after)} then)"
    return text


def _ok_line(r: PlanRow) -> str:
    text = (f"{_say(r.gate)} {_segment(r)}: {fmt_count(r.queries)} queries see {_drop(r, r.detectable_drop)}, "
            f"within {fmt_size(r.metric, r.regression_max)}{_traffic(r)}")
    if r.budget:
        text += f"; the budget gives {fmt_count(r.budget)}"
    return text


def plan_text(p: LabelPlan) -> str:
    """The plan in words (module docs)."""
    out = _head(p)
    blind = p.blind
    out.append("")
    if blind:
        out.append(f"{len(blind)} of {len(p.rows)} gated groups cannot see their gate's drop (most labels needed first):")
        out += [f"  {_blind_line(r)}" for r in blind]
    else:
        out.append(f"Every one of the {len(p.rows)} gated groups can see its gate's drop.")
    ok = [r for r in p.rows if not r.blind]
    if ok and blind:
        out.append(f"{len(ok)} can:")
        out += [f"  {_ok_line(r)}" for r in ok]
    if p.budget is not None:
        quotas = sorted(((k, n) for k, n in p.quotas().items() if n), key=lambda kn: (-kn[1], kn[0]))
        split = ", ".join(f"{_say(f)}={_say(v)} {fmt_count(n)}" for (f, v), n in quotas) or "all queries"
        out += ["", f"Budget: {_labels(p.budget)}, split {split}."]
        if p.objective is not None and quotas:
            before, after = p.objective
            out.append("  The split minimises the largest traffic-weighted smallest visible drop, in units of its "
                       f"gate's regression_max: {_ratio(before)} now, {_ratio(after)} with the budget.")
    if p.skipped:
        out += ["", "Not planned (no regression_max): " + ", ".join(_say(g) for g in p.skipped) + "."]
    if p.notes:
        out += ["", *(f"Note: {_say(n)}." if not n.endswith(".") else f"Note: {_say(n)}" for n in p.notes)]
    return "\n".join(out) + "\n"


def _ratio(x: float) -> str:
    return "unbounded (a segment under min_queries)" if math.isinf(x) else fmt_score(x, 2)


def plan_csv(p: LabelPlan) -> str:
    """plan.csv: one row per gate and group, the columns of :data:`rankgate.goldset.plan.CSV_COLUMNS`."""
    import csv
    import io

    from rankgate.render.exports import _defused

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for r in p.rows:
        d = r.to_dict()
        cells: list[Any] = []
        for c in CSV_COLUMNS:
            v = d[c]
            if v is None:
                cells.append("")
            elif isinstance(v, bool):
                cells.append("yes" if v else "no")
            elif isinstance(v, float):
                cells.append(fmt_exact(v))
            elif isinstance(v, str):
                cells.append(_defused(v))
            else:
                cells.append(v)
        w.writerow(cells)
    return buf.getvalue()


def plan_json(p: LabelPlan) -> str:
    return json.dumps(p.to_dict(), indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def sample_lines(out: str, sampled: Any) -> list[str]:
    """What ``gold sample --plan`` wrote: per segment the candidates against its quota, then what it could not
    sample (``sampled``: the sample flow's result)."""
    got: dict[str, int] = {}
    for r in sampled.records:
        got[r["plan_segment"]] = got.get(r["plan_segment"], 0) + 1
    wanted = [(f, v, n) for f, v, n in sampled.quotas if n > 0]
    parts = [f"{_say(f)}={_say(v)} {fmt_count(got.get(f'{f}={v}', 0))} of {fmt_count(n)}" for f, v, n in wanted]
    lines = [f"wrote {fmt_count(len(sampled.records))} candidates to {_say(out)} for the plan's quotas"
             + (f" ({', '.join(parts)})" if parts else " (the plan asks for no new labels)")
             + "; fill each grade, then rankgate gold validate"]
    for f, v, n, found in sampled.short:
        lines.append(f"{_say(f)}={_say(v)}: the traces hold {fmt_count(found)} distinct queries of it, not the "
                     f"{fmt_count(n)} the plan asks for; label them and write the rest by hand")
    untracked = sorted({f for f, _, _ in sampled.untracked})
    for f in untracked:
        asks = [(v, n) for g, v, n in sampled.untracked if g == f]
        lines.append(f"{_say(f)}: the traces carry no such field, so its segments were not sampled ("
                     + ", ".join(f"{_say(v)} {_labels(n)}" for v, n in asks) + "); find those queries elsewhere")
    if sampled.skipped:
        lines.append(f"{fmt_count(sampled.skipped)} unusable trace rows skipped")
    if sampled.missing:
        shown = ", ".join(_say(m) for m in sampled.missing[:5]) + (" …" if len(sampled.missing) > 5 else "")
        lines.append(f"{fmt_count(len(sampled.missing))} candidate chunks are not in the corpus (marked "
                     f"\"in_corpus\": false): {shown}")
    return lines
