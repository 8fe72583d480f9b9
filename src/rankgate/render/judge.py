"""Text for the judge: the dry-run plan and the calibration summary (terminal, plain text).

``render_plan(plan, identity, price_in=, price_out=)`` is what ``--dry-run`` prints, for
``rankgate judge relevance`` and ``rankgate answers`` alike (a list of plans, one per task).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rankgate.render.numbers import fmt_confidence_exact, fmt_score, fmt_sig

__all__ = ["render_calibration", "render_plan"]


def _who(identity: Mapping[str, Any]) -> str:
    if identity.get("backend") == "openai":
        return f"openai-compatible model {identity.get('model')} at {identity.get('url')}"
    return str(identity.get("model") or identity.get("backend"))


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


def _f(x: Any) -> str:
    return fmt_score(x, missing="n/a")


def _ci(ci: Sequence[Any]) -> str:
    return "" if not ci or ci[0] is None else f" [{fmt_score(ci[0])}, {fmt_score(ci[1])}]"


def render_calibration(cal: Mapping[str, Any], *, minimum: int = 100) -> str:
    """The calibration file's numbers as a short text block (what ``rankgate judge calibrate`` prints)."""
    pct = fmt_confidence_exact(cal['confidence'])
    lines = [f"calibration of {_who(cal.get('judge') or {})} on {cal['n']} human-labelled items ({cal['task']}, "
             f"{pct} intervals)",
             f"  agreement    {_f(cal['agreement'])}{_ci(cal['agreement_ci'])}",
             f"  kappa        {_f(cal['kappa'])}{_ci(cal['kappa_ci'])}  ({cal['weights'] or 'unweighted'} weights, "
             f"{cal['kappa_ci_method']})",
             f"  sensitivity  {_f(cal['sensitivity'])}{_ci(cal['sensitivity_ci'])}  "
             f"(grade >= {cal['relevant_at']}; {cal['positives']} human positives)",
             f"  specificity  {_f(cal['specificity'])}{_ci(cal['specificity_ci'])}  ({cal['negatives']} human negatives)",
             f"  spearman     {_f(cal['spearman'])}"]
    if cal["n"] < minimum:
        lines.append(f"  note: {cal['n']} items is fewer than {minimum}; a gate on judge metrics wants at least "
                     f"{minimum}")
    worst = cal.get("worst_disagreements") or []
    if worst:
        lines.append("  largest disagreements (human vs judge):")
        lines += [f"    {w['query_id']} / {w['id']}: {w['human']} vs {w['judge']}" for w in worst]
    return "\n".join(lines) + "\n"
