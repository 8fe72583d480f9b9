"""What ``rankgate traces judge`` writes and prints: summary.json (the design, the judge, every estimate and the
signals ``traces check --judge-dir`` reads), signals.csv, judged.jsonl (one line per sampled request), the queues
people label for the next run's prediction-powered correction, the dry run and the terminal lines. Numbers are
written by :mod:`rankgate.metrics.display`; texts from production go out as JSON strings only."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from typing import Any

from rankgate.metrics.display import fmt_confidence, fmt_count, fmt_exact, fmt_share, fmt_share_range
from rankgate.traces.judge import KIND
from rankgate.traces.signals import iso

__all__ = ["answers_queue_jsonl", "judge_dry_run", "judge_lines", "judge_signals_csv", "judge_summary_json",
           "judged_jsonl", "relevance_queue_jsonl"]

SIGNAL_COLUMNS = ("window_start", "window_end", "segment", "signal", "value", "low", "high", "n", "usable", "labelled")


def _ci(ci: Sequence[float] | None) -> list[float] | None:
    return None if ci is None else [float(ci[0]), float(ci[1])]


def _estimate(e: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"window": iso(e.window), "segment": e.segment, "value": e.value, "ci": _ci(e.ci),
                           "se": e.se, "n": e.n, "usable": e.size, "coverage": e.coverage, "strata": e.strata}
    if e.labelled or e.corrected:
        out.update({"labelled": e.labelled, "corrected_strata": e.corrected, "judge": e.judge})
    return out


def judge_summary(result: Any, confidence: float) -> dict[str, Any]:
    """summary.json's body."""
    s = result.sample
    tasks = sorted({e.task for e in result.estimates}, key=lambda t: ("context_relevance", "faithfulness").index(t))
    estimates: dict[str, Any] = {}
    for task in tasks:
        rows = [e for e in result.estimates if e.task == task]
        period = [_estimate(e) for e in rows if e.window is None]
        estimates[task] = {"signal": rows[0].signal, "overall": period[0], "segments": period[1:],
                           "windows": [_estimate(e) for e in rows if e.window is not None]}
    signals = [{"window": iso(e.window), "window_us": e.window, "segment": e.segment, "signal": e.signal,
                "value": e.value, "low": None if e.ci is None else e.ci[0], "high": None if e.ci is None else e.ci[1],
                "n": e.n, **({"note": "no request judged"} if e.value is None else {})} for e in result.estimates]
    judged = {t: sum(1 for v in result.values if v.values.get(t) is not None) for t in tasks}
    not_judged: dict[str, dict[str, int]] = {}
    for v in result.values:
        for t, note in v.notes.items():
            reason = "call budget reached" if note == "call budget reached" else (
                note if note in ("no text", "no answer logged", "no statement (a refusal)") else "judge error")
            slot = not_judged.setdefault(t, {})
            slot[reason] = slot.get(reason, 0) + 1
    out: dict[str, Any] = {
        "kind": KIND,
        "design": {"engine": s.engine, "window": s.window, "window_us": s.window_us, "stratify": list(s.stratify),
                   "seed": s.seed, "context_stage": s.context_stage, "requests": s.total, "usable": s.usable,
                   "left_out": dict(s.left_out), "sample": len(s.requests), "strata": len(s.sizes),
                   "hash": "md5('<seed>:<request_id>'), the smallest first in each stratum",
                   "estimator": "stratified mean, sum_h W_h y_h; variance sum_h W_h^2 (1 - n_h/N_h) s_h^2 / n_h; "
                                "normal interval"
                                + (" (prediction-powered per stratum with two or more human labels)"
                                   if result.human else ""),
                   "confidence": confidence},
        "texts": {"from_trace": result.texts.from_trace, "from_corpus": result.texts.from_corpus},
        "judge": dict(result.judge),
        "judged": judged,
        "not_judged": not_judged,
        "estimates": estimates,
        "signals": signals,
        "strata": [dict(r) for r in result.strata],
    }
    if result.human is not None:
        out["human"] = dict(result.human)
    out["warnings"] = list(result.warnings)
    return out


def judge_summary_json(result: Any, confidence: float) -> str:
    return json.dumps(judge_summary(result, confidence), indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def judge_signals_csv(result: Any) -> str:
    """One row per window × segment × judge signal (the whole period is in summary.json)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(SIGNAL_COLUMNS)
    width = result.sample.window_us
    for e in result.estimates:
        if e.window is None:
            continue
        lo, hi = (None, None) if e.ci is None else e.ci
        w.writerow([iso(e.window), iso(e.window + width), e.segment, e.signal, fmt_exact(e.value), fmt_exact(lo),
                    fmt_exact(hi), e.n, e.size, e.labelled])
    return buf.getvalue()


def judged_jsonl(result: Any) -> str:
    """One line per sampled request: its stratum, the judge's (and people's) value per task, and why a task has none."""
    by_id = {v.request_id: v for v in result.values}
    lines = []
    for r in result.sample.requests:
        v = by_id[r.request_id]
        row: dict[str, Any] = {"request_id": r.request_id, "window": iso(r.window),
                               **dict(zip(result.sample.stratify, r.values)), "observed": r.observed,
                               **_conversation(r), "contexts": [c[0] for c in r.contexts]}
        for task, value in v.values.items():
            row[task] = value
            if task in v.human:
                row[f"human_{task}"] = v.human[task]
            if task in v.notes:
                row[f"{task}_note"] = v.notes[task]
        if v.grades:
            row["grades"] = list(v.grades)
        if v.statements is not None:
            row["statements"], row["supported"] = v.statements, v.supported
        lines.append(json.dumps(row, ensure_ascii=False))
    return "".join(line + "\n" for line in lines)


def _conversation(r: Any) -> dict[str, Any]:
    """The request's ``conversation_id`` and ``turn`` where the trace gives them (a gold set built from the
    labels keeps its conversations)."""
    return dict(r.conversation())


def _segment(sample: Any, r: Any) -> dict[str, str]:
    return {"window": iso(r.window), **dict(zip(sample.stratify, r.values))}


def relevance_queue_jsonl(result: Any) -> str:
    """The judged context items as a queue people label (``rankgate label serve``; shape ``judge_queue``):
    ``{query_id: "prod-<request_id>", query, id, text}`` with the stratum; their export is ``--human``."""
    lines = []
    for r in result.sample.requests:
        have = result.texts.contexts.get(r.request_id, {})
        for item, rank, source in r.contexts:
            if item not in have:
                continue
            lines.append(json.dumps({"query_id": f"prod-{r.request_id}", "query": r.query, "id": item,
                                     "text": have[item], "rank": rank, "item_source": source,
                                     "request_id": r.request_id, "observed": r.observed, **_conversation(r),
                                     "stratum": " · ".join([iso(r.window), *r.values]),
                                     "segment": _segment(result.sample, r), "source": "production_log",
                                     "sample_reason": "traces_judge"}, ensure_ascii=False))
    return "".join(line + "\n" for line in lines)


def answers_queue_jsonl(result: Any) -> str:
    """The judged answers as a queue of verdict cards (shape ``answers``): ``{query_id, question, answer,
    contexts}``; their export (``{query_id, faithful}``) is ``--human``."""
    texts = result.texts
    lines = []
    for r in result.sample.requests:
        answer = texts.answers.get(r.request_id)
        have = texts.contexts.get(r.request_id, {})
        if answer is None or any(c[0] not in have for c in r.contexts):
            continue
        lines.append(json.dumps({"query_id": f"prod-{r.request_id}", "question": r.query, "answer": answer,
                                 "contexts": [{"id": c[0], "text": have[c[0]]} for c in r.contexts],
                                 "request_id": r.request_id, **_conversation(r),
                                 "stratum": " · ".join([iso(r.window), *r.values]),
                                 "segment": _segment(result.sample, r)}, ensure_ascii=False))
    return "".join(line + "\n" for line in lines)


def _value(e: Any) -> str:
    if e.value is None:
        return "not measured (no request judged)"
    ci = "" if e.ci is None else f" [{fmt_share_range(e.ci[0], e.ci[1])}]"
    fixed = ""
    if e.corrected:
        fixed = f", PPI-corrected in {e.corrected} of {e.strata} strata ({fmt_count(e.labelled)} human labels; judge alone {fmt_share(e.judge)})"
    return f"{fmt_share(e.value)}{ci}  n={fmt_count(e.n)} of {fmt_count(e.size)}{fixed}"


def judge_lines(result: Any, confidence: float, out: str) -> str:
    """What the command prints: the sample, each task's estimate over the period and per segment, the calls."""
    s = result.sample
    left = ", ".join(f"{fmt_count(n)} {why}" for why, n in s.left_out.items() if n)
    lines = [f"traces judge: {fmt_count(len(s.requests))} of {fmt_count(s.usable)} usable requests sampled "
             f"({fmt_count(len(s.sizes))} strata: window {s.window}"
             + (f" × {', '.join(s.stratify)}" if s.stratify else "") + f"; seed {s.seed}; on {s.engine})"
             + (f"; not usable: {left}" if left else ""),
             f"estimates with {fmt_confidence(confidence)} intervals (stratified, design-weighted):"]
    for task in ("context_relevance", "faithfulness"):
        rows = [e for e in result.estimates if e.task == task and e.window is None]
        if not rows:
            continue
        lines.append(f"  {rows[0].signal}: {_value(rows[0])}")
        lines += [f"    {e.segment}: {_value(e)}" for e in rows[1:]]
    j = result.judge
    calls = sum(j["calls"].values())
    hits = sum(j["cache_hits"].values())
    lines.append(f"judge: {fmt_count(calls)} labels ({fmt_count(hits)} from the cache), {fmt_count(j['sent'])} calls "
                 f"sent of --max-calls {fmt_count(j['call_budget']['max_calls'])}")
    lines += [f"warning: {w}" for w in result.warnings]
    lines.append(f"wrote summary.json, signals.csv, judged.jsonl and the labelling queues to {out}")
    return "\n".join(lines) + "\n"


def judge_dry_run(planned: Any, *, price_in: float | None, price_out: float | None) -> str:
    """The dry run: the sample, then the judge's plan (:func:`rankgate.render.judge.render_plan`), and whether the
    first round fits the cap."""
    from rankgate.render.judge import render_plan

    s = planned.sample
    head = (f"traces judge: {fmt_count(len(s.requests))} of {fmt_count(s.usable)} usable requests would be judged "
            f"({fmt_count(len(s.sizes))} strata; context texts found: {fmt_count(planned.texts['trace'])} in the traces, "
            f"{fmt_count(planned.texts['corpus'])} in the corpus)\n")
    body = render_plan(list(planned.plans), planned.identity, price_in=price_in, price_out=price_out,
                       max_calls=planned.max_calls)
    tail = ""
    if planned.first_round > planned.max_calls:
        tail = (f"  the first round alone needs {fmt_count(planned.first_round)} calls, over --max-calls "
                f"{fmt_count(planned.max_calls)}: a run would stop before sending any\n")
    if any(p.task == "support" for p in planned.plans):
        tail += "  support calls are estimated as one per sentence of each answer (the statements are not known yet)\n"
    return head + body + tail
