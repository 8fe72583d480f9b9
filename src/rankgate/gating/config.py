"""The gate config file (``ship-criteria.yaml``): its model, and a loader whose errors point at
``file:line`` and the key.

::

    gates:
      - name: retrieval_recall_at_5   # optional; defaults to the metric
        metric: recall@5              # optional when the name is retrieval_<metric>[_at_<k>]
        threshold: 0.85               # floor: mean (or CI lower bound) must be >= 0.85; "85%" works too
        regression_max: 0.03          # may not drop more than 0.03 (3 pp) below the baseline
        severity: error               # error blocks the merge (exit 1); warning only comments
        on: mean                      # mean | ci_lower (with threshold) | ci_upper (with max)
        segments: [lang]              # also check each segment of these fields
        min_queries: 20               # segments with fewer applicable queries are shown, not gated
        label: answers found in the top 5   # optional wording for the PR comment
        owner: search-team            # optional: who answers for this gate (shown by 'rankgate gold validate')
        not_applicable: warning       # the metric applies to no query: warn (default) or error (blocks)
      - metric: recall@50
        ranking: raw                  # final (topk, the default) | raw (raw_topk: the candidates before reranking)
        threshold: 0.9                # the row 'recall@50 (raw)'
      - metric: faithfulness          # a judge metric (layer two) ...
        threshold: 0.8
        calibration: judge-support.json   # ... needs the judge's calibration file (rankgate judge calibrate),
                                          # relative to this file, of >= 100 human-labelled items
      - metric: forbidden@5
        max: 0                        # ceiling, for lower-is-better metrics (forbidden, redundancy, false_evidence)
    defaults: {seed: 0, resamples: 2000, confidence: 0.95}
    evaluate: {k: 5, level: chunk, doc_sep: "#", ties: id}   # how to score the runs (optional)
    max_stale_labels: 2%              # optional: 'rankgate gold stale' and 'rankgate gate --corpus' fail above this
                                      # share ("2%", 0.02) or count (10); or {max: 2%, owner: docs-team, severity: error}
    latency:                          # optional: latency gates on the run's latency_ms (docs/experiments.md)
      - stage: retrieve               # a stage the run logs, or total
        median_ms: 60                 # ceilings on percentiles: median_ms, p90_ms, p95_ms, p99_ms
        regression_max_ms: 10         # may not grow more than 10 ms over the baseline run (paired CI excludes 0)
        on: ci_lower                  # ci_lower (default: clearly over budget) | estimate | ci_upper (strict)
    cost:                             # optional: cost gates on the run's per-query cost object (docs/gating.md)
      - key: usd                      # a key the run logs: usd, tokens_in, tokens_out, embed_ms, rerank_ms …
        mean_max: 0.002               # ceilings per query: mean_max, p95_max (in the key's unit)
        regression_max: 0.0005        # may not grow more than this over the baseline run (paired CI excludes 0)
        owner: platform-team          # shown where the gate fails
    judge: {min_calibration_items: 100, min_agreement: 0.8, max_age_days: 90}   # what a judge metric's calibration
                                      # must show; it must also name the judge in use and be younger than max_age_days

See ``docs/gating.md`` for what each check means.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rankgate._util.configfile import (  # noqa: F401 - the MAX_* limits were defined here first: still importable from here
    MAX_BYTES,
    MAX_DEPTH,
    MAX_VALUES,
    SEVERITIES,
    ConfigItem,
    ConfigReader,
    parse_tree,
    read_config_text,
    show_value,
    tree_from_plain,
)
from rankgate.errors import RankgateError

__all__ = ["READERS", "ConfigInput", "Gate", "GateConfig", "as_config", "config_from_dict", "load_config", "load_monitors", "parse_config",
           "parse_monitors"]

#: What a config names that another area reads, and where its reader lives ("module:function"),
#: looked up when a config uses it: the area owns its keys, rules and messages, and this module
#: imports none of them (the way diagnosis.RULES lists its rules in one place).
READERS: dict[str, str] = {
    "latency": "rankgate.experiments.latency:read_latency_gates",  # the 'latency:' list (ceilings in ms)
    "cost": "rankgate.experiments.cost:read_cost_gates",  # the 'cost:' list (ceilings per query: usd, tokens, ms)
    "calibration": "rankgate.stats.pooling:read_calibration",  # a judge metric's calibration file
    "monitors": "rankgate.traces.monitors:parse_monitors",  # the trace monitors file (rankgate traces check)
    "monitors file": "rankgate.traces.monitors:load_monitors",
}

TOP_KEYS = ("gates", "defaults", "evaluate", "max_stale_labels", "latency", "cost", "judge")
GATE_KEYS = ("name", "metric", "threshold", "max", "regression_max", "severity", "on", "segments", "min_queries", "label", "owner",
             "not_applicable", "calibration", "ranking")
JUDGE_KEYS = ("min_calibration_items", "min_agreement", "max_age_days")
#: A gate on a judge metric needs a calibration of at least this many human-labelled items …
MIN_CALIBRATION_ITEMS = 100
#: … on which judge and humans agree at least this often.
MIN_AGREEMENT = 0.8
DEFAULT_KEYS = ("seed", "resamples", "confidence")
EVALUATE_KEYS = ("k", "level", "doc_sep", "ties")
ON = ("mean", "ci_lower", "ci_upper")


@dataclass(frozen=True)
class Gate:
    """One ship criterion. ``threshold`` is a floor, ``max`` a ceiling, ``regression_max`` the
    largest allowed worsening from the baseline, in the metric's units (0.03 = 3 pp for shares)."""

    name: str
    metric: str
    threshold: float | None = None
    max: float | None = None
    regression_max: float | None = None
    severity: str = "error"
    on: str = "mean"
    segments: tuple[str, ...] = ()
    min_queries: int = 1
    label: str | None = None
    lines: Mapping[str, int] = field(default_factory=dict, compare=False, repr=False)
    owner: str | None = None
    not_applicable: str = "warning"  # when the metric applies to no query: warning, or error (fails the gate)
    calibration: Mapping[str, Any] | None = field(default=None, compare=False)  # a judge metric's: path, n, agreement, kappa
    metric_from_name: bool = field(default=False, compare=False)  # no metric: given; read from the name
    critical: tuple[Any, ...] = ()  # chosen segment values with their own limits (CriticalValue, gating/critical.py)
    # the ranking gated: final (topk) or raw (raw_topk; then ``metric`` is its row name, 'recall@50 (raw)')
    ranking: str = "final"

    @property
    def title(self) -> str:
        """How the PR comment names the gate's metric: the label, else ``retrieval <metric>`` (``answers <metric>``
        for a judge metric or an abstention metric, which only ``rankgate answers`` scores)."""
        from rankgate.metrics.abstention import ABSTENTION_METRICS

        answers = self.calibration or self.metric.split("@", 1)[0] in ABSTENTION_METRICS
        return self.label or f"{'answers' if answers else 'retrieval'} {self.metric}"


@dataclass(frozen=True)
class GateConfig:
    gates: tuple[Gate, ...]
    seed: int = 0
    resamples: int = 2000
    confidence: float = 0.95
    evaluate: Mapping[str, Any] = field(default_factory=dict)
    path: str | None = None
    max_stale_labels: int | None = None  # a count of stale labels ('rankgate gold stale')
    max_stale_share: float | None = None  # or a share of all labels
    latency: tuple[Any, ...] = ()  # LatencyGate values (rankgate.experiments.latency), from the 'latency:' list
    cost: tuple[Any, ...] = ()  # CostGate values (rankgate.experiments.cost), from the 'cost:' list
    stale_owner: str | None = None  # who answers for the stale-label limit (shown when it fails)
    stale_severity: str = "error"  # error: the gate fails above the limit; warning: it only says so

    @property
    def metrics(self) -> tuple[str, ...]:
        """Every metric a gate needs, once, in config order."""
        return tuple(dict.fromkeys(g.metric for g in self.gates))

    @property
    def segment_fields(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(f for g in self.gates for f in (*g.segments, *(c.field for c in g.critical))))


NAME_SHAPE_TEXT = "retrieval_<metric>[_at_<k>]"
_NAME_SHAPE = re.compile(r"^retrieval_(?P<metric>[a-z][a-z0-9_]*?)(?:_at_(?P<k>[0-9]+))?$")


def _ranking(r: ConfigReader, g: Mapping[str, Any], at: str) -> str:
    """A quality gate's ``ranking:``: ``final`` (the run's ``topk``, the default) or ``raw`` (its ``raw_topk``,
    the candidates before reranking). A judge metric (``calibration:``) reads answers, not a ranking."""
    from rankgate.metrics.rankings import FINAL, RANKINGS

    if "ranking" not in g:
        return FINAL
    ranking = r.choice(g["ranking"], f"{at}.ranking", RANKINGS)
    if ranking != FINAL and "calibration" in g:
        raise r.fail(f"{at}.ranking", g["ranking"].line, "applies to retrieval metrics; a judge metric reads the answers",
                     "drop ranking: from this gate")
    return ranking


def _metric_of_name(r: ConfigReader, name: str, key: str, line: int | None) -> str:
    """The metric a gate's name carries when the gate gives no ``metric:``: ``retrieval_recall_at_5``
    is ``recall@5``, ``retrieval_mrr`` is ``mrr``; a name that is itself a metric (``recall@5``,
    ``retrieval_recall_at_k``, the sample contract's name) is that metric."""
    from rankgate.metrics import parse_metric

    m = _NAME_SHAPE.match(name.strip().lower())
    candidates = []
    if m:
        candidates.append(m.group("metric") + (f"@{m.group('k')}" if m.group("k") else ""))
    candidates.append(name)
    for spec in candidates:
        try:
            return str(parse_metric(spec))
        except RankgateError:
            continue
    raise r.fail(key, line, f"{name!r} does not name a metric, and the gate has no metric:",
                 f"add metric: (e.g. metric: recall@5), or name the gate {NAME_SHAPE_TEXT}, e.g. retrieval_recall_at_5, "
                 "retrieval_mrr, retrieval_ndcg_at_10")


def _whole_number_advice(key: str, v: float) -> str:
    """What to write for a share given as a whole number (``85`` for 85%, ``5`` for a 5-point drop)."""
    from rankgate.metrics.display import fmt_sig

    n = fmt_sig(v) if 1 < v <= 100 else None
    if key == "regression_max":  # a drop in points: 0.05 is 5 points
        return f"a drop is in points: write {fmt_sig(v / 100)} (or '{n}pp') for {n} points" if n else \
            "a drop is in points: write 0.05 (or '5pp') for 5 points"
    return f"shares are fractions: write {fmt_sig(v / 100)} (or '{n}%') for {n}%" if n else \
        "shares are fractions: write 0.85 (or '85%') for 85%"


def _range_text(low: float, high: float) -> str:
    def num(x: float) -> str:
        return f"{x:g}"

    if math.isinf(low) and math.isinf(high):
        return "a finite number"
    if math.isinf(high):
        return f"at least {num(low)}"
    if math.isinf(low):
        return f"at most {num(high)}"
    return f"between {num(low)} and {num(high)}"


def clock() -> Any:
    """The gate's clock: now, in UTC. A calibration's age is measured against it (tests replace it, or pass
    ``now=`` to :func:`load_config`)."""
    import datetime as dt

    return dt.datetime.now(dt.timezone.utc)


def _build(root: ConfigItem, path: str, now: Any = None) -> GateConfig:
    from rankgate.metrics import metric_info, parse_metric
    from rankgate.metrics.rankings import ranked_name, split_ranked
    from rankgate.metrics.spec import MAX_K
    from rankgate.stats.bootstrap import MAX_RESAMPLES

    r = ConfigReader(path)
    if root.value is None:
        raise r.fail("gates", 1, "is required: the config has no gates", "start with 'gates:' and a list of gates")
    top = r.mapping(root, "", TOP_KEYS)
    if "gates" not in top:
        raise r.fail("gates", root.line, "is required", "add 'gates:' with a list of gates")
    gates_item = top["gates"]
    if not isinstance(gates_item.value, list):
        raise r.fail("gates", gates_item.line, f"must be a list of gates; got {show_value(gates_item.value)}",
                     "each gate starts with '- metric: …'")
    if not gates_item.value:
        raise r.fail("gates", gates_item.line, "must list at least one gate")

    from rankgate.gating.calibration import MAX_AGE_DAYS

    min_items, min_agreement, max_age = MIN_CALIBRATION_ITEMS, MIN_AGREEMENT, float(MAX_AGE_DAYS)
    if "judge" in top:
        j = r.mapping(top["judge"], "judge", JUDGE_KEYS)
        if "max_age_days" in j:
            max_age = r.number(j["max_age_days"], "judge.max_age_days", share=False)
            if not 0 < max_age <= 36500:
                raise r.fail("judge.max_age_days", j["max_age_days"].line, f"must be a number of days above 0; got "
                             f"{show_value(j['max_age_days'].value)}", "e.g. 90: a calibration older than that is refused")
        if "min_calibration_items" in j:
            min_items = r.integer(j["min_calibration_items"], "judge.min_calibration_items", 1)
        if "min_agreement" in j:
            min_agreement = r.number(j["min_agreement"], "judge.min_agreement", share=True)
            if not 0.0 <= min_agreement <= 1.0:
                raise r.fail("judge.min_agreement", j["min_agreement"].line, f"must be between 0 and 1; got {min_agreement!r}")
    gates: list[Gate] = []
    names: dict[str, int] = {}
    for i, item in enumerate(gates_item.value):
        at = f"gates[{i}]"
        g = r.mapping(item, at, GATE_KEYS)
        lines = {k: v.line for k, v in g.items() if v.line is not None}
        if item.line is not None:
            lines.setdefault("", item.line)
        from_name = "metric" not in g
        if from_name:
            if "name" not in g:
                raise r.fail(f"{at}.metric", item.line, "is required",
                             f"e.g. metric: recall@5, or a name of the shape {NAME_SHAPE_TEXT} (retrieval_recall_at_5)")
            metric = _metric_of_name(r, r.text(g["name"], f"{at}.name"), f"{at}.name", g["name"].line)
        else:
            spec = r.text(g["metric"], f"{at}.metric")
            try:
                metric = str(parse_metric(spec))
            except RankgateError as exc:
                raise r.fail(f"{at}.metric", g["metric"].line, str(exc)) from None
        ranking = _ranking(r, g, at)
        metric = ranked_name(metric, ranking)  # a raw gate's row: 'recall@50 (raw)' (rankgate.metrics.rankings)
        info = metric_info(metric)  # the metric's own declaration: unit, direction, bounds
        share = info.is_share
        name = r.text(g["name"], f"{at}.name") if "name" in g else metric
        if name in names:
            raise r.fail(f"{at}.name", lines.get("name", item.line), f"repeats the name {name!r} of gates[{names[name]}]",
                         "give each gate its own name")
        names[name] = i

        values: dict[str, float | None] = {"threshold": None, "max": None, "regression_max": None}
        for key in values:
            if key in g:
                v = r.number(g[key], f"{at}.{key}", share=share, pp=key == "regression_max")
                # A floor or ceiling lies within the metric's values; a regression limit within their span.
                low, high = info.bounds if key != "regression_max" else (0.0, info.span)
                if not low <= v <= high:
                    raise r.fail(f"{at}.{key}", g[key].line, f"must be {_range_text(low, high)} for {metric}; got {v!r}",
                                 _whole_number_advice(key, v) if share else None)
                values[key] = v
        if values["threshold"] is not None and values["max"] is not None:
            raise r.fail(f"{at}.max", g["max"].line, "cannot be combined with threshold in one gate",
                         "threshold is a floor, max a ceiling; write two gates if you need both")
        if all(v is None for v in values.values()):
            raise r.fail(f"{at}", item.line, f"checks nothing for {metric}", "give threshold, max or regression_max")
        hib = info.higher_is_better
        if values["threshold"] is not None and not hib:
            raise r.fail(f"{at}.threshold", g["threshold"].line, f"is a floor, but lower is better for {metric}",
                         "use max: to set a ceiling; max: 0 demands it never happens")
        if values["max"] is not None and hib:
            raise r.fail(f"{at}.max", g["max"].line, f"is a ceiling, but higher is better for {metric}",
                         "use threshold: to set a floor")

        severity = r.choice(g["severity"], f"{at}.severity", SEVERITIES) if "severity" in g else "error"
        on = r.choice(g["on"], f"{at}.on", ON) if "on" in g else "mean"
        if on == "ci_lower" and values["max"] is not None:
            raise r.fail(f"{at}.on", g["on"].line, "ci_lower goes with threshold (a floor)",
                         "a ceiling (max) is checked against the upper bound: write on: ci_upper")
        if on == "ci_upper" and values["threshold"] is not None:
            raise r.fail(f"{at}.on", g["on"].line, "ci_upper goes with max (a ceiling)",
                         "a floor (threshold) is checked against the lower bound: write on: ci_lower")
        segments: tuple[str, ...] = ()
        critical: tuple[Any, ...] = ()
        if "segments" in g and isinstance(g["segments"].value, dict):  # chosen values, their own limits
            from rankgate.gating.critical import read_segments

            segments, critical = read_segments(r, g["segments"], f"{at}.segments", metric, values, on)
        elif "segments" in g:
            s = g["segments"]
            raw = [s] if isinstance(s.value, str) or s.written is not None else s.value
            if not isinstance(raw, list) or not all(isinstance(x, (str, ConfigItem)) for x in raw):
                raise r.fail(f"{at}.segments", s.line, f"must be a list of field names; got {show_value(s.value)}")
            segments = tuple(dict.fromkeys(
                r.text(x if isinstance(x, ConfigItem) else ConfigItem(x, s.line), f"{at}.segments") for x in raw
            ))
        min_queries = r.integer(g["min_queries"], f"{at}.min_queries", 1) if "min_queries" in g else 1
        label = r.text(g["label"], f"{at}.label") if "label" in g else None
        owner = r.text(g["owner"], f"{at}.owner") if "owner" in g else None
        not_applicable = (r.choice(g["not_applicable"], f"{at}.not_applicable", SEVERITIES)
                          if "not_applicable" in g else "warning")
        # (the metric itself: a raw gate's row name is no spec, and a judge metric is never raw)
        calibration = _calibration(r, g, at, split_ranked(metric)[0], item.line, min_items, min_agreement, max_age, now)
        gates.append(Gate(name, metric, values["threshold"], values["max"], values["regression_max"], severity, on,
                          segments, min_queries, label, lines, owner=owner, not_applicable=not_applicable,
                          calibration=calibration, metric_from_name=from_name, critical=critical, ranking=ranking))

    seed, resamples, confidence = 0, 2000, 0.95
    if "defaults" in top:
        d = r.mapping(top["defaults"], "defaults", DEFAULT_KEYS)
        if "seed" in d:
            seed = r.integer(d["seed"], "defaults.seed", 0)
        if "resamples" in d:
            resamples = r.integer(d["resamples"], "defaults.resamples", 100, maximum=MAX_RESAMPLES)
        if "confidence" in d:
            confidence = r.number(d["confidence"], "defaults.confidence", share=True)
            if not 0.5 <= confidence < 1.0:
                raise r.fail("defaults.confidence", d["confidence"].line, f"must be at least 0.5 and below 1; got {confidence!r}",
                             "e.g. 0.95 for 95% intervals")
    evaluate: dict[str, Any] = {}
    if "evaluate" in top:
        e = r.mapping(top["evaluate"], "evaluate", EVALUATE_KEYS)
        if "k" in e:
            evaluate["k"] = r.integer(e["k"], "evaluate.k", 1, maximum=MAX_K)
        if "level" in e:
            evaluate["level"] = r.choice(e["level"], "evaluate.level", ("chunk", "doc"))
        if "doc_sep" in e:
            evaluate["doc_sep"] = r.text(e["doc_sep"], "evaluate.doc_sep")
        if "ties" in e:
            evaluate["ties"] = r.choice(e["ties"], "evaluate.ties", ("id", "input"))
    stale_count, stale_share, stale_owner, stale_severity = None, None, None, "error"
    if "max_stale_labels" in top:
        item = top["max_stale_labels"]
        if isinstance(item.value, dict):  # {max: 2%, owner: docs-team, severity: error}
            m = r.mapping(item, "max_stale_labels", ("max", "owner", "severity"))
            if "max" not in m:
                raise r.fail("max_stale_labels.max", item.line, "is required",
                             "write the limit as 'max: 2%' (a share) or 'max: 10' (a count of labels)")
            item = m["max"]
            if "owner" in m:
                stale_owner = r.text(m["owner"], "max_stale_labels.owner")
            if "severity" in m:
                stale_severity = r.choice(m["severity"], "max_stale_labels.severity", SEVERITIES)
        stale_count, stale_share = _stale_limit(r, item)
    latency = _reader("latency")(r, top["latency"], set(names)) if "latency" in top else ()
    cost = _reader("cost")(r, top["cost"], {*names, *(g.name for g in latency)}) if "cost" in top else ()
    return GateConfig(tuple(gates), seed, resamples, confidence, evaluate, path, stale_count, stale_share,
                      latency=latency, stale_owner=stale_owner, stale_severity=stale_severity, cost=cost)


def _calibration(r: ConfigReader, g: Mapping[str, ConfigItem], at: str, metric: str, line: int | None, min_items: int,
                 min_agreement: float, max_age: float = 90.0, now: Any = None) -> dict[str, Any] | None:
    """A judge metric's calibration facts; a judge metric without an adequate calibration file is an
    error saying why (an uncalibrated judge looks rigorous while it may mislead). Adequate: of the metric's
    task, of enough items, with enough agreement, naming its judge, labels and date, and younger than
    ``max_age`` days at ``now`` (rankgate.gating.calibration; the judge itself is compared where its labels
    are made, :func:`rankgate.gating.calibration.check_judge`)."""
    from rankgate.gating.calibration import binding_problem, recalibrate_hint
    import os

    from rankgate.metrics import parse_metric

    task = getattr(parse_metric(metric).definition, "judge_task", None)
    if task is None:
        if "calibration" in g:
            raise r.fail(f"{at}.calibration", g["calibration"].line, f"applies to judge metrics only; {metric} is "
                         "computed from the gold set", "remove the key")
        return None
    if "calibration" not in g:
        raise r.fail(f"{at}.metric", line, f"{metric} is scored by a judge, and a judge metric may gate a release only "
                     f"with a calibration file of at least {min_items} human-labelled items",
                     f"measure the judge against human labels of the {task} task (`rankgate judge calibrate`, or "
                     "`rankgate answers --human H --calibration-out FILE` for faithfulness) and add "
                     "'calibration: FILE' to this gate (docs/answers.md)")
    given = r.text(g["calibration"], f"{at}.calibration")
    path = given if os.path.isabs(given) or r.path.startswith("<") else os.path.join(os.path.dirname(r.path), given)
    try:
        cal = _reader("calibration")(path)
    except RankgateError as exc:
        raise r.fail(f"{at}.calibration", g["calibration"].line, f"cannot be used: {exc}") from None
    where = g["calibration"].line
    # statement-level labels of the task, or answer-level verdicts (rankgate answers --calibration-out)
    accepted = {task, {"support": "faithfulness", "correctness": "answer_correctness"}.get(task, task)}
    if cal.task and cal.task not in accepted:
        raise r.fail(f"{at}.calibration", where, f"{given} calibrates the {cal.task} task; {metric} counts {task} labels",
                     f"calibrate the judge on human labels of the {' or '.join(sorted(accepted))} task")
    if cal.n < min_items:
        raise r.fail(f"{at}.calibration", where, f"{given} has {cal.n} human-labelled items; a gate on {metric} needs at "
                     f"least {min_items}", "label more items (or lower judge.min_calibration_items, knowingly)")
    if cal.agreement is None or cal.agreement < min_agreement:
        shown = "no agreement" if cal.agreement is None else f"agreement {cal.agreement:.2f}"
        raise r.fail(f"{at}.calibration", where, f"{given} shows {shown} between judge and humans; a gate on {metric} "
                     f"needs at least {min_agreement:.2f}", "improve the judge (model, prompt) and calibrate again")
    problem = binding_problem(cal, given=given, max_age_days=max_age, now=now if now is not None else clock())
    if problem:
        raise r.fail(f"{at}.calibration", where, problem, recalibrate_hint(task))
    return {"path": given, "task": task, "n": cal.n, "agreement": cal.agreement, "judge": cal.judge, "made": cal.made,
            "human_labels": cal.labels_sha256}


def _stale_limit(r: ConfigReader, item: ConfigItem) -> tuple[int | None, float | None]:
    """``max_stale_labels``: an integer is a count of labels, a fraction below 1 or ``"2%"`` a share."""
    v = item.value
    hint = "write a count of labels (10) or a share ('2%' or 0.02)"
    r.decimal(item, "max_stale_labels")
    if isinstance(v, int) and not isinstance(v, bool):
        if v < 0:
            raise r.fail("max_stale_labels", item.line, f"must not be negative; got {v!r}", hint)
        return v, None
    share = r.number(item, "max_stale_labels", share=True)
    if not 0.0 <= share < 1.0:
        raise r.fail("max_stale_labels", item.line, f"must be a share below 1 or a whole count; got {show_value(v)}", hint)
    return None, share


def parse_config(text: str, *, path: str = "<config>", now: Any = None) -> GateConfig:
    """Parse and validate gate config YAML text; errors name ``path:line`` and the key. ``now`` (an aware
    datetime): the clock a judge calibration's age is measured against (default: :func:`clock`)."""
    return _build(parse_tree(text, path=path), path, now)


def load_config(path: str, *, now: Any = None) -> GateConfig:
    """Read and validate a gate config file (YAML); ``now`` as :func:`parse_config`'s."""
    text = read_config_text(path)
    return parse_config(text, path=str(path), now=now)


def config_from_dict(data: Mapping[str, Any], *, path: str = "<config>", now: Any = None) -> GateConfig:
    """Validate a config given as plain Python data (same rules, no line numbers)."""
    return _build(tree_from_plain(data), path, now)


def _reader(what: str) -> Any:
    """The function :data:`READERS` names for ``what``, imported when first needed."""
    import importlib

    module, name = READERS[what].split(":")
    return getattr(importlib.import_module(module), name)


# -- the trace monitors file (rankgate traces check --monitors): rankgate.traces.monitors reads it; kept here too ------
def load_monitors(path: str | None) -> Any:
    """Read and check a monitors file; ``None`` gives the default monitors (docs/traces.md)."""
    return _reader("monitors file")(path)


def parse_monitors(text: str, *, path: str = "<monitors>") -> Any:
    """Parse and check trace monitors (docs/traces.md, "check: monitors"); errors name file:line:key."""
    return _reader("monitors")(text, path=path)


#: Ship criteria as :func:`as_config` takes them: a path to the YAML file, a :class:`GateConfig`, or the
#: file's content as a dict.
ConfigInput = str | os.PathLike[str] | GateConfig | Mapping[str, Any]


def as_config(config: ConfigInput) -> GateConfig:
    """Ship criteria given as a path, a :class:`GateConfig` or a dict (the form of the YAML file)."""
    from rankgate.errors import UsageError

    if isinstance(config, GateConfig):
        return config
    if isinstance(config, Mapping):
        return config_from_dict(config)
    if isinstance(config, (str, os.PathLike)):
        return load_config(os.fspath(config))
    raise UsageError(f"config must be a path, a GateConfig or a dict; got {type(config).__name__}")


def evaluate_options(config: GateConfig | None, given: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The scoring options runs are scored with under these ship criteria: the config's ``evaluate:`` block, each
    option ``given`` (not None: a flag, a request field) winning over it. The one place the block is applied (the
    gate, the report, the gold set's baseline check and the command line all call this)."""
    out = dict(config.evaluate) if config is not None else {}
    out.update({name: value for name, value in (given or {}).items() if value is not None})
    return out
