"""A judge gate's calibration, held to the judge in use and to its age.

A gate on a judge metric (``faithfulness``, ``context_relevance``…) cites the calibration that says how often
the judge agrees with people (docs/answers.md). That number stays true only for the judge it measured, and
only for a while, so the gate refuses a calibration (exit 2, before any judge call):

* **without what binds it**: the judge's identity, the hash of its human labels or its date (files written
  before rankgate recorded them): :func:`binding_problem`;
* **too old**: made more than ``max_age_days`` (the ship criteria's ``judge:`` block, default
  :data:`MAX_AGE_DAYS`) before the gate's clock, or dated in the future: :func:`binding_problem`;
* **of another judge**: made with another backend or model, or another version of a prompt the metric's
  labels come from, than the judge whose labels are gated (:func:`identity_problem`, which
  ``rankgate answers --config`` applies to the judge it runs, :func:`check_judge`).

Each refusal says which (``model gpt-4o-mini vs gpt-4.1-mini``, ``prompt support@1 sha256:9c1e… vs
support@2 sha256:44d0…``, ``made 120 days ago, limit 90``) and how to recalibrate (:func:`recalibrate_hint`).
The clock is the caller's (``now``), so a test can pin it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["MAX_AGE_DAYS", "PROMPT_TASKS", "binding_problem", "check_judge", "identity_problem", "recalibrate_hint"]

#: A calibration older than this many days is refused by a judge gate (``judge: {max_age_days: N}`` changes it).
MAX_AGE_DAYS = 90
#: The judge tasks whose prompts a judge task's labels depend on: a statement-level task (``support``,
#: ``correctness``) first splits the answer into statements.
PROMPT_TASKS: Mapping[str, tuple[str, ...]] = {
    "support": ("statements", "support"), "faithfulness": ("statements", "support"),
    "correctness": ("statements", "correctness"), "answer_correctness": ("statements", "correctness"),
    "answer_relevance": ("answer_relevance",), "context_relevance": ("context_relevance",),
}
#: How long a future date may lie ahead of the gate's clock (clocks of two machines differ a little).
FUTURE_SLACK = dt.timedelta(days=1)


def recalibrate_hint(task: str) -> str:
    """The commands that make a fresh calibration for a gate on ``task``'s labels (short: an error line holds it)."""
    if task in ("support", "faithfulness"):
        return ("recalibrate: `rankgate judge recalibrate --task faithfulness --answers A --gold G -o queue.jsonl`, "
                "label it, then `rankgate answers … --human queue.jsonl --calibration-out FILE` (docs/judges.md)")
    flag = "" if task == "context_relevance" else f" --task {task}"
    return ("recalibrate: `rankgate judge recalibrate --answers A | --traces T -o queue.jsonl`, label it, then "
            f"`rankgate judge calibrate{flag} --human H --judge-labels L -o FILE` (docs/judges.md)")


def binding_problem(cal: Any, *, given: str, max_age_days: float, now: dt.datetime) -> str | None:
    """Why calibration ``cal`` (a :class:`rankgate.stats.pooling.Calibration`, cited as ``given``) cannot back a
    gate at time ``now``, or None: what binds it is missing, it is too old, or it is dated in the future."""
    from rankgate.stats.calibration import parse_time

    missing = [what for what, value in (("the judge's identity", cal.judge), ("the hash of its human labels",
                                                                              cal.labels_sha256),
                                        ("its date", cal.made)) if not value]
    if missing:
        return f"{given} does not record {_and(missing)}: no gate can tell whether it still describes the judge"
    made = parse_time(cal.made)
    assert made is not None  # (read_calibration checked it)
    if made - now > FUTURE_SLACK:
        return f"{given} is dated {cal.made}, after the gate's clock ({_day(now)}): its date is wrong"
    age = (now - made).total_seconds() / 86400.0
    if age > max_age_days:
        return f"{given} was made {int(age)} days ago ({cal.made}), limit {_days(max_age_days)} (judge.max_age_days)"
    return None


def identity_problem(made_with: Mapping[str, Any] | None, labels_by: Mapping[str, Any], task: str) -> str | None:
    """How the judge ``labels_by`` (whose labels are gated) differs from the one the calibration was made with
    (``made_with``), for a metric counting ``task`` labels, as ``model X (calibration) vs Y (judge in use)``;
    None when they are the same judge. One difference is said: the model's (else the backend's, else the
    lexical judge's version), or when the judge is the same, the first prompt of the metric's tasks that
    differs (with how many more do)."""
    made_with = made_with or {}
    for key in ("model", "backend", "version"):
        a, b = made_with.get(key), labels_by.get(key)
        if (a is not None or b is not None) and a != b:
            return f"{key} {_show(a)} (calibration) vs {_show(b)} (judge in use)"
    diffs = []
    calibrated = made_with.get("prompts") or {}
    used = labels_by.get("prompts") or {}
    prompts = [t for t in PROMPT_TASKS.get(task, (task,))
               if (calibrated.get(t) is not None or used.get(t) is not None) and calibrated.get(t) != used.get(t)]
    if prompts:
        t = prompts[0]
        more = f" (and {len(prompts) - 1} more)" if len(prompts) > 1 else ""
        diffs.append(f"prompt {_prompt(calibrated.get(t), t)} (calibration) vs {_prompt(used.get(t), t)} "
                     f"(judge in use){more}")
    return "; ".join(diffs) or None


def check_judge(config: Any, identity: Mapping[str, Any]) -> None:
    """Refuse (a ConfigError, exit 2) every judge gate of ``config`` whose calibration was made with another judge
    than ``identity``, the judge whose labels the gate reads; the message names the gate, what differs and how
    to recalibrate."""
    from rankgate.errors import ConfigError

    for i, gate in enumerate(config.gates):
        cal = gate.calibration
        if not cal:
            continue
        problem = identity_problem(cal.get("judge"), identity, cal["task"])
        if problem:
            raise ConfigError(f"{cal['path']} was made with another judge: {problem}",
                              path=config.path, line=gate.lines.get("calibration"), field=f"gates[{i}].calibration",
                              hint=recalibrate_hint(cal["task"]))


def _and(parts: Sequence[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " or " + parts[-1]


def _days(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def _day(when: dt.datetime) -> str:
    from rankgate.stats.calibration import show_time

    return show_time(when)


def _show(value: Any) -> str:
    return "none" if value is None else str(value)


def _prompt(label: Any, task: str) -> str:
    """``support@1 sha256:9c1e2a3b4c5d…``: a prompt's label with its hash shortened to 12 digits."""
    if label is None:
        return f"{task}: none"
    text = str(label)
    head, sep, digest = text.partition(" sha256:")
    return f"{head} sha256:{digest[:12]}…" if sep and len(digest) > 12 else text
