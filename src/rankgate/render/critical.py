"""Critical segments in the gate's outputs: the values of a segment field that ship criteria chose, each
with its own limits (:mod:`rankgate.gating.critical`).

The PR comment and the terminal say one sentence per chosen value that fails or warns (its owner named
when it fails) and one per chosen value with fewer queries than ``min_queries`` (the smallest drop its
queries show); the comment adds a table of every chosen value: its limits, its value and interval, its
change and verdict against the baseline, and its owner when it fails. Input is the gate outcome's
``to_dict()``: its checks carry ``critical`` (the value's limits, ``on``, severity, owner, warning).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from rankgate.metrics.info import higher_is_better
from rankgate.render.numbers import (
    fmt_apart,
    fmt_delta_ci_apart,
    fmt_limit,
    fmt_pp,
    fmt_value,
    fmt_value_ci,
    md_escape,
)
from rankgate.stats.segments import display_field

__all__ = ["critical_markdown", "critical_sentences", "critical_values"]

ICON = {"fail": "❌", "warn": "⚠️", "pass": "✅"}


def _n(x: Any) -> float:
    return math.nan if x is None else float(x)


def critical_values(o: Mapping[str, Any]) -> Iterator[tuple[Mapping[str, Any], str, str, list[Mapping[str, Any]]]]:
    """``(gate, field, value, its checks)`` of every chosen value, in config order."""
    for g in o.get("gates") or ():
        groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
        for c in g["checks"]:
            if c.get("critical"):
                groups.setdefault((c["field"], c["segment"]), []).append(c)
        for (f, seg), checks in groups.items():
            yield g, f, seg, checks


def _status(g: Mapping[str, Any], checks: list[Mapping[str, Any]]) -> str:
    """fail (blocks), warn (fails at severity warning, or could not be checked) or pass."""
    facts = checks[0]["critical"]
    if any(c["status"] == "fail" for c in checks):
        return "fail" if (facts.get("severity") or g["severity"]) == "error" else "warn"
    return "warn" if any(c["status"] == "warn" for c in checks) else "pass"


def limits_text(metric: str, facts: Mapping[str, Any]) -> str:
    """The chosen value's limits: ``≥ 85%; drop ≤ 5 pp``."""
    parts = []
    if facts.get("threshold") is not None:
        parts.append(("CI low ≥ " if facts.get("on") == "ci_lower" else "≥ ") + fmt_limit(metric, facts["threshold"]))
    if facts.get("max") is not None:
        parts.append(("CI high ≤ " if facts.get("on") == "ci_upper" else "≤ ") + fmt_limit(metric, facts["max"]))
    if facts.get("regression_max") is not None:
        parts.append(("drop" if higher_is_better(metric) else "rise") + f" ≤ {fmt_pp(metric, facts['regression_max'])}")
    return "; ".join(parts)


def _stat(o: Mapping[str, Any], metric: str, f: str, seg: str) -> Mapping[str, Any]:
    return ((o.get("segments") or {}).get(f) or {}).get(seg, {}).get(metric) or {}


def _failure(metric: str, c: Mapping[str, Any], conf: str) -> str:
    """What one failing or unchecked check of a chosen value says."""
    if c["status"] == "warn" or math.isnan(_n(c["value"])):
        return f"not checked ({c.get('note') or 'no value'})"
    if c["kind"] == "regression":
        hib = higher_is_better(metric)
        ci = fmt_delta_ci_apart(metric, c.get("ci_low"), c.get("ci_high"))
        return (f"changed {fmt_apart(metric, _n(c['value']), _n(c['limit']), delta=True)} from "
                f"{fmt_value(metric, _n(c['baseline']))}" + (f" ({conf} {ci})" if ci != "—" else "")
                + f", beyond its {('−' if hib else '+') + fmt_pp(metric, _n(c['limit']))} limit"
                + (f" ({c['verdict']})" if c.get("verdict") else ""))
    floor = c["kind"] == "threshold"
    end = {"ci_lower": "the lower end", "ci_upper": "the upper end"}.get(c["critical"].get("on") or "")
    return ((f"{end} of its {conf}, {fmt_apart(metric, _n(c['value']), _n(c['limit']))}, is " if end else "")
            + (f"below its {fmt_limit(metric, _n(c['limit']))} floor" if floor else
               f"above its {fmt_limit(metric, _n(c['limit']))} ceiling"))


def critical_sentences(o: Mapping[str, Any], conf: str, who: Callable[[Mapping[str, Any]], str],
                       esc: Callable[..., str] = md_escape) -> list[str]:
    """One sentence per chosen value that fails or cannot be checked (owner named when it fails), then one
    per chosen value below ``min_queries``. ``who(gate)``: how the gate is named."""
    out: list[str] = []
    warned: list[str] = []
    for g, f, seg, checks in critical_values(o):
        m = g["metric"]
        where = esc(f"{display_field(f)} = {seg}")
        facts = checks[0]["critical"]
        status = _status(g, checks)
        if status != "pass":
            bad = [c for c in checks if c["status"] in ("fail", "warn")]
            st = _stat(o, m, f, seg)
            ci = fmt_value_ci(m, st.get("ci_low"), st.get("ci_high"))
            value = fmt_value(m, _n(st.get("mean", checks[0].get("mean"))))
            text = (f"{ICON[status]} Critical segment {where} of {who(g)}: {value}"
                    + (f" ({conf} {ci})" if ci != "—" else "") + "; "
                    + "; ".join(esc(_failure(m, c, conf), 400) for c in bad) + ".")
            if any(c["status"] == "fail" for c in checks) and status == "warn":
                text += " (warning: does not block)"
            if any(c["status"] == "fail" for c in checks) and facts.get("owner"):
                text += f" Owner: {esc(facts['owner'])}."
            out.append(text)
        if facts.get("warning"):
            warned.append(f"{ICON['warn']} Critical segment {where} of {who(g)}: {esc(facts['warning'], 400)}; "
                          "it is gated all the same.")
    return out + warned


def critical_markdown(o: Mapping[str, Any], conf: str, cap: int) -> list[str]:
    """The comment's table of chosen values (none: no lines), at most ``cap`` rows."""
    rows = []
    for g, f, seg, checks in critical_values(o):
        m = g["metric"]
        facts = checks[0]["critical"]
        status = _status(g, checks)
        st = _stat(o, m, f, seg)
        reg = next((c for c in checks if c["kind"] == "regression"), None)
        n = max(int(c.get("n") or 0) for c in checks)
        value = fmt_value(m, _n(st.get("mean", checks[0].get("mean"))))
        ci = fmt_value_ci(m, st.get("ci_low"), st.get("ci_high"))
        change, verdict = "—", "—"
        if reg is not None and not math.isnan(_n(reg["value"])):
            change = fmt_apart(m, _n(reg["value"]), facts.get("regression_max"), delta=True)
            dci = fmt_delta_ci_apart(m, reg.get("ci_low"), reg.get("ci_high"))
            change += f" ({dci})" if dci != "—" else ""
            verdict = md_escape(reg.get("verdict") or "—")
        failed = any(c["status"] == "fail" for c in checks)
        owner = md_escape(facts["owner"], 60) if failed and facts.get("owner") else ""
        size = f"{n} ⚠️" if facts.get("warning") else str(n)
        rows.append(f"| {ICON[status]} | {md_escape(f'{display_field(f)} = {seg}', 60)} | {md_escape(g['name'], 60)} | "
                    f"{size} | {value}" + (f"<br>({ci})" if ci != "—" else "") + f" | {change} | {verdict} | "
                    f"{limits_text(m, facts).replace(' ', chr(0xA0))} | {owner} |")
    if not rows:
        return []
    shown = rows[:cap]
    if len(rows) > cap:
        shown.append(f"| | … {len(rows) - cap} more chosen values not shown (see the JSON outcome) |" + " |" * 7)
    return ["### Critical segments", "",
            "Values of a segment field the ship criteria chose, each held to its own limits and always gated "
            "(⚠️ beside n: fewer queries than min_queries).", "",
            f"| | Segment | Gate | n | Candidate ({conf}) | Change ({conf}) | Verdict | Limit | Owner |",
            "|:-:|:--|:--|--:|--:|--:|:--|:--|:--|", *shown]
