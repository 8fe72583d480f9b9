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
    judge: {min_calibration_items: 100, min_agreement: 0.8}   # what a judge metric's calibration must show

See ``docs/gating.md`` for what each check means.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import ConfigError, RankgateError

__all__ = ["Gate", "GateConfig", "config_from_dict", "load_config", "load_monitors", "parse_config", "parse_monitors"]

TOP_KEYS = ("gates", "defaults", "evaluate", "max_stale_labels", "latency", "judge")
LATENCY_KEYS = ("name", "stage", "median_ms", "p90_ms", "p95_ms", "p99_ms", "regression_max_ms", "on", "segments",
                "min_queries", "severity", "label")
LATENCY_ON = ("ci_lower", "estimate", "ci_upper")
GATE_KEYS = ("name", "metric", "threshold", "max", "regression_max", "severity", "on", "segments", "min_queries", "label", "owner",
             "not_applicable", "calibration")
JUDGE_KEYS = ("min_calibration_items", "min_agreement")
#: A gate on a judge metric needs a calibration of at least this many human-labelled items …
MIN_CALIBRATION_ITEMS = 100
#: … on which judge and humans agree at least this often.
MIN_AGREEMENT = 0.8
DEFAULT_KEYS = ("seed", "resamples", "confidence")
EVALUATE_KEYS = ("k", "level", "doc_sep", "ties")
SEVERITIES = ("error", "warning")
ON = ("mean", "ci_lower", "ci_upper")
#: Limits that keep a hostile config file from taking minutes and gigabytes (see _Budget).
MAX_BYTES = 1 << 20  # 1 MiB; ship criteria are a few hundred bytes
MAX_VALUES = 10_000  # values in the document once aliases are expanded
MAX_DEPTH = 50  # nesting of blocks


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

    @property
    def title(self) -> str:
        """How the PR comment names the gate's metric: the label, else ``retrieval <metric>``."""
        return self.label or f"{'answers' if self.calibration else 'retrieval'} {self.metric}"


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
    stale_owner: str | None = None  # who answers for the stale-label limit (shown when it fails)
    stale_severity: str = "error"  # error: the gate fails above the limit; warning: it only says so

    @property
    def metrics(self) -> tuple[str, ...]:
        """Every metric a gate needs, once, in config order."""
        return tuple(dict.fromkeys(g.metric for g in self.gates))

    @property
    def segment_fields(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(f for g in self.gates for f in g.segments))


# -- a parsed tree that remembers lines ---------------------------------------------------------
@dataclass
class _Item:
    value: Any  # dict[str, _Item] | list[_Item] | scalar
    line: int | None


class _Budget:
    """Bounds on building the tree: aliases (``*name``) make the node graph share, or even loop
    back to, nodes, so a 600-byte file can stand for billions of values ("billion laughs")."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.left = MAX_VALUES
        self.open: set[int] = set()  # nodes being built: reaching one again is an alias to itself

    def take(self, node: Any) -> None:
        line = node.start_mark.line + 1
        if id(node) in self.open:
            raise ConfigError("has an alias that refers to the block it is part of (a loop)", path=self.path,
                              line=line, hint="write the values out instead of the alias")
        if len(self.open) >= MAX_DEPTH:
            raise ConfigError(f"nests blocks more than {MAX_DEPTH} deep", path=self.path, line=line,
                              hint="a ship-criteria file needs a few levels")
        self.left -= 1
        if self.left < 0:
            raise ConfigError(f"stands for more than {MAX_VALUES:,} values once its aliases (*name) are expanded",
                              path=self.path, line=line,
                              hint="a ship-criteria file needs far fewer; write the values out instead of nesting aliases")


def _from_yaml(node: Any, path: str, budget: _Budget | None = None) -> _Item:
    import yaml

    budget = budget or _Budget(path)
    budget.take(node)
    line = node.start_mark.line + 1
    if isinstance(node, (yaml.MappingNode, yaml.SequenceNode)):
        budget.open.add(id(node))
    try:
        if isinstance(node, yaml.MappingNode):
            out: dict[str, _Item] = {}
            for key_node, value_node in node.value:
                key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
                if not isinstance(key, str):
                    raise ConfigError("has a key that is not a plain name", path=path, line=key_node.start_mark.line + 1)
                if key in out:
                    raise ConfigError(f"key '{key}' appears twice in the same block", path=path,
                                      line=key_node.start_mark.line + 1, hint="keep one")
                item = _from_yaml(value_node, path, budget)
                item.line = key_node.start_mark.line + 1  # errors point at the key's line
                out[key] = item
            return _Item(out, line)
        if isinstance(node, yaml.SequenceNode):
            return _Item([_from_yaml(n, path, budget) for n in node.value], line)
    finally:
        budget.open.discard(id(node))
    try:
        return _Item(yaml.constructor.SafeConstructor().construct_object(node), line)
    except yaml.YAMLError as exc:
        raise ConfigError(f"has a value that is not valid YAML: {getattr(exc, 'problem', None) or exc}", path=path,
                          line=line) from None
    except (ValueError, OverflowError) as exc:  # e.g. a date out of range
        raise ConfigError(f"has a value that cannot be read: {exc}", path=path, line=line) from None


def _from_plain(value: Any) -> _Item:
    if isinstance(value, Mapping):
        return _Item({str(k): _from_plain(v) for k, v in value.items()}, None)
    if isinstance(value, (list, tuple)):
        return _Item([_from_plain(v) for v in value], None)
    return _Item(value, None)


# -- validation ---------------------------------------------------------------------------------
class _Reader:
    """Checks values of a parsed tree; errors name file, line and key (public as ConfigReader)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def fail(self, key: str, line: int | None, message: str, hint: str | None = None) -> ConfigError:
        return ConfigError(message, path=self.path, line=line, field=key, hint=hint)

    def mapping(self, item: _Item, key: str, known: tuple[str, ...]) -> dict[str, _Item]:
        if not isinstance(item.value, dict):
            raise self.fail(key, item.line, f"must be a mapping of {', '.join(known)}; got {_show(item.value)}")
        for name, sub in item.value.items():
            if name not in known:
                close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
                hint = f"did you mean '{close[0]}'?" if close else f"known keys: {', '.join(known)}"
                raise self.fail(f"{key}.{name}" if key else name, sub.line, "is not a known key", hint)
        return item.value

    def number(self, item: _Item, key: str, *, share: bool, pp: bool = False) -> float:
        v = item.value
        if isinstance(v, str):
            text = v.strip().lower().replace(" ", "")
            suffix = "pp" if pp else "%"
            m = re.fullmatch(r"([-+]?\d+(?:\.\d+)?)" + re.escape(suffix), text)
            if m and share:
                return float(m.group(1)) / 100.0
            example = "3pp" if pp else "85%"
            raise self.fail(key, item.line, f"must be a number; got {_show(v)}",
                            f"write 0.85 or '{example}'" if share else "write a plain number")
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise self.fail(key, item.line, f"must be a number; got {_show(v)}")
        return float(v)

    def integer(self, item: _Item, key: str, minimum: int, maximum: int | None = None) -> int:
        v = item.value
        if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
            raise self.fail(key, item.line, f"must be an integer >= {minimum}; got {_show(v)}")
        if maximum is not None and v > maximum:
            raise self.fail(key, item.line, f"must be an integer <= {maximum:,}; got {v:,}")
        return v

    def choice(self, item: _Item, key: str, choices: tuple[str, ...]) -> str:
        v = item.value
        if v not in choices:
            close = difflib.get_close_matches(str(v), choices, n=1, cutoff=0.5)
            hint = f"did you mean '{close[0]}'?" if close else None
            raise self.fail(key, item.line, f"must be one of {'|'.join(choices)}; got {_show(v)}", hint)
        return v

    def text(self, item: _Item, key: str) -> str:
        if not isinstance(item.value, str) or not item.value.strip():
            raise self.fail(key, item.line, f"must be a non-empty string; got {_show(item.value)}")
        return item.value.strip()


ConfigReader = _Reader
ConfigItem = _Item


def _show(v: Any) -> str:
    if isinstance(v, dict):
        return "a mapping"
    if isinstance(v, list):
        return "a list"
    if v is None:
        return "nothing (null)"
    return f"{v!r} ({type(v).__name__})" if not isinstance(v, str) else repr(v)


NAME_SHAPE_TEXT = "retrieval_<metric>[_at_<k>]"
_NAME_SHAPE = re.compile(r"^retrieval_(?P<metric>[a-z][a-z0-9_]*?)(?:_at_(?P<k>[0-9]+))?$")


def _metric_of_name(r: _Reader, name: str, key: str, line: int | None) -> str:
    """The metric a gate's name carries when the gate gives no ``metric:``: ``retrieval_recall_at_5``
    is ``recall@5``, ``retrieval_mrr`` is ``mrr``; a name that is itself a metric (``recall@5``,
    ``retrieval_recall_at_k``, the sample contract's name) is that metric."""
    from .metrics import parse_metric

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


def _build(root: _Item, path: str) -> GateConfig:
    from .metrics import metric_info, parse_metric
    from .metrics.spec import MAX_K
    from .stats import MAX_RESAMPLES

    r = _Reader(path)
    if root.value is None:
        raise r.fail("gates", 1, "is required: the config has no gates", "start with 'gates:' and a list of gates")
    top = r.mapping(root, "", TOP_KEYS)
    if "gates" not in top:
        raise r.fail("gates", root.line, "is required", "add 'gates:' with a list of gates")
    gates_item = top["gates"]
    if not isinstance(gates_item.value, list):
        raise r.fail("gates", gates_item.line, f"must be a list of gates; got {_show(gates_item.value)}",
                     "each gate starts with '- metric: …'")
    if not gates_item.value:
        raise r.fail("gates", gates_item.line, "must list at least one gate")

    min_items, min_agreement = MIN_CALIBRATION_ITEMS, MIN_AGREEMENT
    if "judge" in top:
        j = r.mapping(top["judge"], "judge", JUDGE_KEYS)
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
                                 "shares are fractions: write 0.85 (or '85%') for 85%" if share else None)
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
        if "segments" in g:
            s = g["segments"]
            raw = [s] if isinstance(s.value, str) else s.value
            if not isinstance(raw, list) or not all(isinstance(x, (str, _Item)) for x in raw):
                raise r.fail(f"{at}.segments", s.line, f"must be a list of field names; got {_show(s.value)}")
            segments = tuple(dict.fromkeys(
                r.text(x if isinstance(x, _Item) else _Item(x, s.line), f"{at}.segments") for x in raw
            ))
        min_queries = r.integer(g["min_queries"], f"{at}.min_queries", 1) if "min_queries" in g else 1
        label = r.text(g["label"], f"{at}.label") if "label" in g else None
        owner = r.text(g["owner"], f"{at}.owner") if "owner" in g else None
        not_applicable = (r.choice(g["not_applicable"], f"{at}.not_applicable", SEVERITIES)
                          if "not_applicable" in g else "warning")
        calibration = _calibration(r, g, at, metric, item.line, min_items, min_agreement)
        gates.append(Gate(name, metric, values["threshold"], values["max"], values["regression_max"], severity, on,
                          segments, min_queries, label, lines, owner=owner, not_applicable=not_applicable,
                          calibration=calibration, metric_from_name=from_name))

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
                stale_severity = r.choice(m["severity"], "max_stale_labels.severity", ("error", "warning"))
        stale_count, stale_share = _stale_limit(r, item)
    latency = _latency_gates(r, top["latency"], set(names)) if "latency" in top else ()
    return GateConfig(tuple(gates), seed, resamples, confidence, evaluate, path, stale_count, stale_share,
                      latency=latency, stale_owner=stale_owner, stale_severity=stale_severity)


def _latency_gates(r: _Reader, item: _Item, taken: set[str]) -> tuple[Any, ...]:
    """The ``latency:`` list: ceilings on percentiles of a stage and regression limits, in ms."""
    from .experiments.latency import LatencyGate

    if not isinstance(item.value, list) or not item.value:
        raise r.fail("latency", item.line, f"must be a list of latency gates; got {_show(item.value)}",
                     "each starts with '- stage: retrieve' and gives median_ms, p90_ms, p95_ms, p99_ms or regression_max_ms")
    out = []
    for i, sub in enumerate(item.value):
        at = f"latency[{i}]"
        g = r.mapping(sub, at, LATENCY_KEYS)
        if "stage" not in g:
            raise r.fail(f"{at}.stage", sub.line, "is required", "the stage of the run's latency_ms to gate, e.g. retrieve, or total")
        stage = r.text(g["stage"], f"{at}.stage")
        ceilings: dict[str, float] = {}
        limits = {}
        for key in ("median_ms", "p90_ms", "p95_ms", "p99_ms", "regression_max_ms"):
            if key in g:
                v = r.number(g[key], f"{at}.{key}", share=False)
                if v < 0:
                    raise r.fail(f"{at}.{key}", g[key].line, f"must be a number of milliseconds >= 0; got {v!r}")
                limits[key] = v
                if key != "regression_max_ms":
                    ceilings[key.removesuffix("_ms")] = v
        if not limits:
            raise r.fail(at, sub.line, f"checks nothing for stage {stage!r}",
                         "give median_ms, p90_ms, p95_ms, p99_ms (ceilings) or regression_max_ms")
        name = r.text(g["name"], f"{at}.name") if "name" in g else f"latency_{stage}"
        if name in taken:
            raise r.fail(f"{at}.name", g["name"].line if "name" in g else sub.line, f"repeats the gate name {name!r}",
                         "give each gate its own name")
        taken.add(name)
        segments: tuple[str, ...] = ()
        if "segments" in g:
            s = g["segments"]
            raw = [s.value] if isinstance(s.value, str) else s.value
            if not isinstance(raw, list) or not raw:
                raise r.fail(f"{at}.segments", s.line, f"must be a list of field names; got {_show(s.value)}")
            segments = tuple(dict.fromkeys(r.text(x if isinstance(x, _Item) else _Item(x, s.line), f"{at}.segments")
                                           for x in raw))
        out.append(LatencyGate(
            name, stage, ceilings, limits.get("regression_max_ms"),
            r.choice(g["on"], f"{at}.on", LATENCY_ON) if "on" in g else "ci_lower", segments,
            r.integer(g["min_queries"], f"{at}.min_queries", 1) if "min_queries" in g else 1,
            r.choice(g["severity"], f"{at}.severity", SEVERITIES) if "severity" in g else "error",
            r.text(g["label"], f"{at}.label") if "label" in g else None,
            {k: v.line for k, v in g.items() if v.line is not None}))
    return tuple(out)


def _calibration(r: _Reader, g: Mapping[str, _Item], at: str, metric: str, line: int | None, min_items: int,
                 min_agreement: float) -> dict[str, Any] | None:
    """A judge metric's calibration facts; a judge metric without an adequate calibration file is an
    error saying why (an uncalibrated judge looks rigorous while it may mislead)."""
    import os

    from .metrics import parse_metric

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
    from .pooling import read_calibration

    try:
        cal = read_calibration(path)
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
    return {"path": given, "task": task, "n": cal.n, "agreement": cal.agreement}


def _stale_limit(r: _Reader, item: _Item) -> tuple[int | None, float | None]:
    """``max_stale_labels``: an integer is a count of labels, a fraction below 1 or ``"2%"`` a share."""
    v = item.value
    hint = "write a count of labels (10) or a share ('2%' or 0.02)"
    if isinstance(v, int) and not isinstance(v, bool):
        if v < 0:
            raise r.fail("max_stale_labels", item.line, f"must not be negative; got {v!r}", hint)
        return v, None
    share = r.number(item, "max_stale_labels", share=True)
    if not 0.0 <= share < 1.0:
        raise r.fail("max_stale_labels", item.line, f"must be a share below 1 or a whole count; got {_show(v)}", hint)
    return None, share


def _check_nesting(text: str, path: str) -> None:
    """Refuse deep nesting from the event stream, before the (recursive) composer sees it."""
    import yaml

    depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                raise ConfigError(f"nests blocks more than {MAX_DEPTH} deep", path=path,
                                  line=event.start_mark.line + 1, hint="a ship-criteria file needs a few levels")
        elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            depth -= 1


def parse_tree(text: str, *, path: str = "<config>") -> _Item:
    """YAML text as a tree of values that remember their line (bounded: size, depth, aliases). The
    ship criteria and the trace monitors (:mod:`rankgate.traces.monitors`) are read through it."""
    import yaml

    if len(text) > MAX_BYTES or len(text.encode("utf-8", "surrogatepass")) > MAX_BYTES:
        raise ConfigError(f"is larger than the {MAX_BYTES // 1024} KiB a config file may be", path=path,
                          hint="ship criteria are a few hundred bytes; is this the right file?")
    try:
        _check_nesting(text, path)
        # Composing builds the node graph once per anchor (an alias is a reference, not a copy), so
        # it is linear in the text; the expansion that could explode is bounded in _from_yaml.
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise ConfigError(f"is not valid YAML: {exc.problem or exc.context}", path=path,
                          line=None if mark is None else mark.line + 1) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"is not valid YAML: {exc}", path=path) from None
    except RecursionError:
        raise ConfigError(f"nests blocks more than {MAX_DEPTH} deep", path=path,
                          hint="a ship-criteria file needs a few levels") from None
    return _Item(None, 1) if root is None else _from_yaml(root, path)


def parse_config(text: str, *, path: str = "<config>") -> GateConfig:
    """Parse and validate gate config YAML text; errors name ``path:line`` and the key."""
    return _build(parse_tree(text, path=path), path)


def read_config_text(path: str, *, hint: str = "pass the gate config with --config") -> str:
    """The text of a config file, bounded in size; a missing, unreadable or non-UTF-8 file is a ConfigError."""
    import os

    try:
        if os.path.isdir(path):
            raise ConfigError("is a folder; expected a YAML file", path=str(path))
        with open(os.fspath(path), "rb") as fh:
            data = fh.read(MAX_BYTES + 1)  # bounded: a huge file (or an endless pipe) is refused unread
        if len(data) > MAX_BYTES:
            raise ConfigError(f"is larger than the {MAX_BYTES // 1024} KiB a config file may be", path=str(path),
                              hint="ship criteria are a few hundred bytes; is this the right file?")
        return data.decode("utf-8")
    except FileNotFoundError:
        raise ConfigError("does not exist", path=str(path), hint=hint) from None
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ConfigError(f"is not UTF-8 text (byte {exc.start + 1})", path=str(path), line=line,
                          hint="save the file as UTF-8") from None
    except OSError as exc:
        raise ConfigError(f"cannot be read: {exc.strerror or exc}", path=str(path)) from None


def load_config(path: str) -> GateConfig:
    """Read and validate a gate config file (YAML)."""
    text = read_config_text(path)
    return parse_config(text, path=str(path))


def config_from_dict(data: Mapping[str, Any], *, path: str = "<config>") -> GateConfig:
    """Validate a config given as plain Python data (same rules, no line numbers)."""
    return _build(_from_plain(data), path)


# -- the trace monitors file (rankgate traces check --monitors) ----------------------------------------------------------------------------------------
def load_monitors(path: str | None) -> Any:
    """Read and check a monitors file; ``None`` gives :data:`DEFAULT_MONITORS`."""
    from .traces.monitors import DEFAULT_MONITORS

    if path is None:
        return parse_monitors(DEFAULT_MONITORS, path="<default monitors>")
    return parse_monitors(read_config_text(path, hint="pass the monitors file with --monitors"), path=str(path))


def parse_monitors(text: str, *, path: str = "<monitors>") -> Any:
    """Parse and check trace monitors (docs/traces.md, "check: monitors"); errors name file:line:key."""
    from .traces.monitors import DEFAULT_KEYS, MONITOR_KEYS, Monitor, MonitorConfig
    from .traces.monitors import TOP_KEYS as MONITOR_TOP_KEYS
    from .traces.signals import SIGNAL_INFO

    root = parse_tree(text, path=path)
    r = ConfigReader(path)
    if root.value is None:
        raise r.fail("monitors", 1, "is required: the file has no monitors", "start with 'monitors:' and a list")
    top = r.mapping(root, "", MONITOR_TOP_KEYS)
    if "monitors" not in top:
        raise r.fail("monitors", root.line, "is required", "start with 'monitors:' and a list")
    defaults: dict[str, Any] = {"baseline_windows": 7, "min_baseline": 3, "z": 3.5, "confidence": 0.95}
    if "defaults" in top:
        for key, item in r.mapping(top["defaults"], "defaults", DEFAULT_KEYS).items():
            defaults[key] = _monitor_value(r, key, item, f"defaults.{key}")
    window = None
    if "window" in top:
        from .traces.signals import parse_window

        window = r.text(top["window"], "window")
        try:
            parse_window(window)
        except Exception:  # noqa: BLE001 - re-raised as a config error with the line
            raise r.fail("window", top["window"].line, f"must be like 1h or 1d; got {window!r}") from None
    items = top["monitors"]
    if not isinstance(items.value, list) or not items.value:
        raise r.fail("monitors", items.line, "must be a non-empty list of monitors")
    monitors: list[Monitor] = []
    names: set[str] = set()
    for i, item in enumerate(items.value):
        at = f"monitors[{i}]"
        d = r.mapping(item, at, MONITOR_KEYS)
        if "signal" not in d:
            raise r.fail(f"{at}.signal", item.line, "is required", "name the signal to watch, e.g. error_rate_per_1k")
        signal = r.text(d["signal"], f"{at}.signal")
        if signal not in SIGNAL_INFO:
            import difflib

            close = difflib.get_close_matches(signal, list(SIGNAL_INFO), n=1, cutoff=0.6)
            raise r.fail(f"{at}.signal", d["signal"].line, f"names no trace signal: {signal!r}",
                         f"did you mean '{close[0]}'?" if close else "see docs/traces.md, 'Signals'")
        info = SIGNAL_INFO[signal]
        kw: dict[str, Any] = dict(defaults)
        kw["direction"] = info.worse or "both"
        for key, sub in d.items():
            if key == "signal":
                continue
            kw[key] = _monitor_value(r, key, sub, f"{at}.{key}")
        if kw.get("max") is not None and kw.get("min") is not None and kw["min"] > kw["max"]:
            raise r.fail(f"{at}.min", d["min"].line, "is above max", "min flags values below it, max values above it")
        if kw.get("change") == "proportion" and info.unit not in ("share", "per_1k"):
            raise r.fail(f"{at}.change", d["change"].line, f"proportion applies to rates; {signal} is a {info.unit}",
                         "use robust_z")
        name = kw.pop("name", None) or signal
        if name in names:
            raise r.fail(f"{at}.name", item.line, f"repeats the monitor name {name!r}", "give each monitor its own name")
        names.add(name)
        monitors.append(Monitor(name=name, signal=signal, line=item.line, **kw))
    return MonitorConfig(tuple(monitors), window, path)


def _monitor_value(r: Any, key: str, item: Any, where: str) -> Any:
    from .traces.monitors import CHANGES, DIRECTIONS
    from .traces.monitors import SEVERITIES as MONITOR_SEVERITIES
    from .traces.signals import SEGMENT_FIELDS

    if key in ("max", "min", "mad_floor", "mad_floor_rel", "z"):
        v = r.number(item, where, share=key in ("max", "min", "mad_floor"))
        if key != "max" and key != "min" and v < 0:
            raise r.fail(where, item.line, f"must be at least 0; got {v:g}")
        return v
    if key == "confidence":
        v = r.number(item, where, share=True)
        if not 0 < v < 1:
            raise r.fail(where, item.line, f"must lie between 0 and 1; got {v:g}")
        return v
    if key in ("min_n", "baseline_windows", "min_baseline"):
        return r.integer(item, where, 1, 10_000) if key != "min_n" else r.integer(item, where, 0)
    if key == "change":
        return r.choice(item, where, CHANGES)
    if key == "direction":
        return r.choice(item, where, DIRECTIONS)
    if key == "severity":
        return r.choice(item, where, MONITOR_SEVERITIES)
    if key in ("owner", "name"):
        return r.text(item, where)
    if key == "segments":
        v = item.value
        elements = v if isinstance(v, list) else [item]
        out = []
        for e in elements:
            name = getattr(e, "value", e)
            if not isinstance(name, str):
                raise r.fail(where, item.line, "must be a list of segment fields, e.g. [tenant, source]")
            if name not in SEGMENT_FIELDS:
                raise r.fail(where, getattr(e, "line", None) or item.line, f"names no segment field: {name!r}",
                             f"fields: {', '.join(SEGMENT_FIELDS)}")
            out.append(name)
        return tuple(dict.fromkeys(out))
    raise ConfigError(f"unhandled key {key}", path=r.path)  # pragma: no cover - MONITOR_KEYS is exhaustive

