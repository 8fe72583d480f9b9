"""Text for the judge: the dry-run plan, the calibration summary, the recalibration sample and the drift between
two calibrations (terminal, plain text).

``render_plan(plan, identity, price_in=, price_out=)`` is what ``--dry-run`` prints, for
``rankgate judge relevance`` and ``rankgate answers`` alike (a list of plans, one per task).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rankgate.metrics.display import fmt_score_change
from rankgate.render.numbers import fmt_confidence_exact, fmt_score, fmt_sig

__all__ = ["render_calibration", "render_drift", "render_plan", "render_recalibrate", "spend_line"]

#: What a calibration says when its judge labels carry no identity (no sidecar beside them).
NO_IDENTITY = ("a judge of unknown identity (the judge labels have no <name>.judge.json beside them: the backend, "
               "model and prompts are not recorded)")


def _who(identity: Mapping[str, Any] | None) -> str:
    """The judge as a sentence names it; what is missing named instead of ``None``."""
    if not identity:
        return NO_IDENTITY
    model, backend = identity.get("model"), identity.get("backend")
    if backend == "openai":
        return (f"openai-compatible model {model or '(model not recorded)'} at "
                f"{identity.get('url') or '(url not recorded)'}")
    if model:
        return str(model)
    if backend:
        return f"the {backend} judge (its model is not recorded)"
    return "a judge whose backend and model are not recorded"


def render_plan(plans: Sequence[Any], identity: Mapping[str, Any], *, price_in: float | None = None,
                price_out: float | None = None, max_calls: int | None = None) -> str:
    """Lines saying what a judged run would cost; nothing is called to compute them. ``max_calls``:
    the run's call budget (``--max-calls``), said when it would stop the run early."""
    lines = [f"dry run: nothing was called. Judge: {_who(identity)}"]
    total_calls = total_hits = total_in = total_out = 0
    model = all(p.model_calls for p in plans)
    for p in plans:
        total_calls += p.calls
        total_hits += p.cache_hits
        total_in += p.approx_tokens_in
        total_out += p.approx_tokens_out
        lines.append(f"  {p.task:<18} {p.calls:>9,} calls  {p.cache_hits:>9,} cached  {p.to_send:>9,} to send")
    if len(plans) > 1:
        lines.append(f"  {'total':<18} {total_calls:>9,} calls  {total_hits:>9,} cached  "
                     f"{total_calls - total_hits:>9,} to send")
    if max_calls is not None and total_calls - total_hits > max_calls:
        lines.append(f"  --max-calls {max_calls:,}: the run stops sending after {max_calls:,} calls; "
                     f"{total_calls - total_hits - max_calls:,} items would be judge_error 'call budget reached'")
    if not model:
        lines.append("  no model is called (offline judge): no tokens, no cost")
        return "\n".join(lines) + "\n"
    if not all(p.tokens_known for p in plans):
        lines.append(f"  tokens and cost: not known for judge {identity.get('backend')} (it does not estimate them)")
        return "\n".join(lines) + "\n"
    lines.append(f"  tokens (approximate: characters / 4): {total_in:,} in, {total_out:,} out")
    if price_in is None and price_out is None:
        lines.append("  cost: give --price-in and --price-out (per 1M tokens) for an estimate")
    else:
        cost = (total_in * (price_in or 0.0) + total_out * (price_out or 0.0)) / 1e6
        lines.append(f"  cost (approximate): {fmt_score(cost, 4, grouped=True)} at {fmt_sig(price_in or 0)} in / {fmt_sig(price_out or 0)} out "
                     f"per 1M tokens")
    return "\n".join(lines) + "\n"


def spend_line(spend: Mapping[str, Any]) -> str:
    """One line: what a judged run spent (the usage the server reported, at the given prices) beside its dry
    run's estimate (``spend``: :func:`rankgate.flows._common.judge_spend`)."""
    tok, est = spend["tokens"], spend["estimate"]
    return (f"judge spend: {fmt_score(spend['usd'], 4, grouped=True)} for {spend['calls_sent']:,} calls sent "
            f"({tok['prompt']:,} prompt and {tok['completion']:,} completion tokens the server reported); "
            f"the dry run's estimate: {fmt_score(est['usd'], 4, grouped=True)} "
            f"({est['tokens_in']:,} in, {est['tokens_out']:,} out)")


def _f(x: Any) -> str:
    return fmt_score(x, missing="n/a")


def _ci(ci: Sequence[Any]) -> str:
    return "" if not ci or ci[0] is None else f" [{fmt_score(ci[0])}, {fmt_score(ci[1])}]"


def render_calibration(cal: Mapping[str, Any], *, minimum: int = 100) -> str:
    """The calibration file's numbers as a short text block (what ``rankgate judge calibrate`` prints)."""
    pct = fmt_confidence_exact(cal['confidence'])
    lines = [f"calibration of {_who(cal.get('judge'))} on {cal['n']} human-labelled items ({cal['task']}, "
             f"{pct} intervals)",
             f"  agreement    {_f(cal['agreement'])}{_ci(cal['agreement_ci'])}",
             f"  kappa        {_f(cal['kappa'])}{_ci(cal['kappa_ci'])}  ({cal['weights'] or 'unweighted'} weights, "
             f"{cal['kappa_ci_method']})",
             f"  sensitivity  {_f(cal['sensitivity'])}{_ci(cal['sensitivity_ci'])}  "
             f"(grade >= {cal['relevant_at']}; {cal['positives']} human positives)",
             f"  specificity  {_f(cal['specificity'])}{_ci(cal['specificity_ci'])}  ({cal['negatives']} human negatives)",
             f"  spearman     {_f(cal['spearman'])}"]
    labels = cal.get("human_labels") or {}
    if labels or cal.get("made"):
        sources = {"given": "--when", "labels": "the newest label's time", "clock": "now"}
        source = sources.get(str(cal.get("made_from")), "")
        lines.append(f"  bound to     {labels.get('items', '?')} human labels {_short(labels.get('sha256'))}, made "
                     f"{cal.get('made') or '(no date)'}" + (f" ({source})" if source else ""))
    if not cal.get("judge"):
        lines.append("  note: a judge gate refuses this calibration until the judge is named: label with "
                     "`rankgate judge relevance`, which writes <labels>.judge.json beside the labels")
    if cal["n"] < minimum:
        lines.append(f"  note: {cal['n']} items is fewer than {minimum}; a gate on judge metrics wants at least "
                     f"{minimum}")
    worst = cal.get("worst_disagreements") or []
    if worst:
        lines.append("  largest disagreements (human vs judge):")
        lines += [f"    {w['query_id']} / {w['id']}: {w['human']} vs {w['judge']}" for w in worst]
    return "\n".join(lines) + "\n"


def _short(sha: Any) -> str:
    """``sha256:0123456789ab…``: a hash cut to 12 digits, enough to tell two apart by eye."""
    if not isinstance(sha, str):
        return "(no hash)"
    head, _, digest = sha.partition(":")
    return f"{head}:{digest[:12]}…" if len(digest) > 12 else sha


def render_recalibrate(done: Any, *, out: str, task: str) -> str:
    """What ``rankgate judge recalibrate`` prints: how many items were sampled from how many, per stratum, what
    was left out, and the next steps."""
    lines = [f"wrote {len(done.records):,} items to {out}, sampled from {done.available:,}"]
    if len(done.strata) > 1 or next(iter(done.strata), "all") != "all":
        lines.append("  per stratum (sampled of items):")
        width = max(len(k) for k in done.strata)
        lines += [f"    {k:<{width}}  {q:>6,} of {n:,}" for k, (n, q) in done.strata.items()]
    for reason, count in done.left_out.items():
        lines.append(f"  left out: {count:,} {reason}")
    if task == "faithfulness":
        lines.append("next: add \"faithful\": true/false (null for a refusal) and \"correct\" to each line, save it as "
                     "human.jsonl, then `rankgate answers --answers ANSWERS --gold GOLD --human human.jsonl "
                     "--calibration-out calibration.json`")
    else:
        lines.append(f"next: have people add \"grade\": 2, 1 or 0 to each line (human.jsonl), let the judge label the "
                     f"same items (`rankgate judge relevance {out} -o labels.jsonl`), then `rankgate judge calibrate "
                     "--human human.jsonl --judge-labels labels.jsonl -o calibration.json`")
    return "\n".join(lines) + "\n"


def render_drift(d: Mapping[str, Any]) -> str:
    """What ``rankgate judge drift`` prints (its ``--json`` form, ``DriftResult.to_dict()``, as text)."""
    d = d["drift"]
    old, new = d["old"], d["new"]
    pct = fmt_confidence_exact(d["confidence"])
    lines = [f"drift of the judge's agreement with people ({d['task']}): {old['path']} ({old['n']:,} items, made "
             f"{old['made'] or 'no date'}) -> {new['path']} ({new['n']:,} items, made {new['made'] or 'no date'})"]
    for name in ("agreement", "kappa"):
        row = d[name]
        ci = row["ci"]
        interval = "" if ci[0] is None else f" [{fmt_score_change(ci[0])}, {fmt_score_change(ci[1])}]"
        lines.append(f"  {name:<10} {_f(row['old'])} -> {_f(row['new'])}  change {fmt_score_change(row['delta'])}"
                     f"{interval}  {row['verdict']}")
    lines.append(f"  ({pct} intervals: {d['method']})")
    if d.get("judge_changed"):
        lines.append(f"  the judge changed: {d['judge_changed']}")
    if d.get("same_labels"):
        lines.append("  both were computed on the same human labels: a change is the judge's alone")
    lines += [f"  note: {n}" for n in d.get("notes") or ()]
    worse = d["agreement"]["verdict"] == "worse" or d["kappa"]["verdict"] == "worse"
    lines.append("  the judge agrees with people less than it did: look at the new calibration's disagreements before "
                 "it gates" if worse else "  no drop in agreement beyond noise")
    return "\n".join(lines) + "\n"
