"""Metric specs: values like ``ndcg(gain=exp)@10`` that print and parse back.

Grammar (case-insensitive names, no spaces needed)::

    spec    := name [ "(" param { "," param } ")" ] [ "@" k ]
    param   := key "=" value
    k       := positive integer, at most MAX_K

Parameter values are checked once, when parsed: a float parameter takes a finite number (``nan``,
``inf`` and ``1e400`` are refused), except the infinite value that is its own default
(``min_score=-inf`` means "no line"); an integer parameter must fit in 64 bits.

``str(spec)`` is canonical: the registered name, parameters that differ from their defaults in
alphabetical order, then ``@k``. ``parse_metric(str(m)) == m`` holds for every spec.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from collections.abc import Mapping, Sequence
from typing import Any

from rankgate._util.constraints import MAX_K, Param, Shape, check, plain
from rankgate.errors import MetricSpecError

__all__ = ["MAX_K", "METRICS", "Metric", "parse_metric", "parse_metrics"]

_SPEC = re.compile(
    r"""^\s*(?P<name>[A-Za-z_][A-Za-z0-9_.-]*?)\s*
        (?:\((?P<params>[^()]*)\))?\s*
        (?:@\s*(?P<k>[^\s]+))?\s*$""",
    re.VERBOSE,
)


@dataclass(frozen=True, order=True)
class Metric:
    """A metric with its parameters and cutoff. Create with :func:`parse_metric`."""

    name: str
    k: int | None = None
    params: tuple[tuple[str, Any], ...] = ()

    def __str__(self) -> str:
        text = self.name
        if self.params:
            text += "(" + ",".join(f"{key}={_param_text(v)}" for key, v in self.params) + ")"
        if self.k is not None:
            text += f"@{self.k}"
        return text

    def param(self, key: str) -> Any:
        """The parameter's value, or its registered default."""
        for name, value in self.params:
            if name == key:
                return value
        from rankgate.metrics.registry import get_metric

        return get_metric(self.name).params[key].default

    @property
    def definition(self):  # -> MetricDefinition
        from rankgate.metrics.registry import get_metric

        return get_metric(self.name)


def _param_text(value: Any) -> str:
    if isinstance(value, float):
        return repr(value)
    return str(value)


def parse_metric(text: str | Metric) -> Metric:
    """Parse one metric spec such as ``recall@5``, ``mrr``, ``ndcg(gain=exp)@10``, ``P@10``.

    Raises :class:`MetricSpecError` naming the problem and, for unknown names, the nearest match.
    """
    if isinstance(text, Metric):
        return text
    from rankgate.metrics.registry import get_metric, resolve_name

    if not isinstance(text, str):
        raise MetricSpecError(f"a metric spec is a string such as 'recall@5' or 'ndcg@10'; got "
                              f"{type(text).__name__} {text!r}"[:160])
    text = str(text)  # (numpy's string as Python's)
    if not text.strip():
        raise MetricSpecError(f"empty metric spec {text!r}; expected e.g. 'recall@5' or 'ndcg@10'")
    m = _SPEC.match(text)
    if m is None:
        raise MetricSpecError(
            f"cannot parse metric spec {text!r}; expected NAME[(key=value,...)][@k], e.g. 'ndcg(gain=exp)@10'"
        )
    raw_name = m.group("name")
    k_text = m.group("k")
    # trec_eval style names: P_10, ndcg_cut_10, recall_100, success_5, map_cut_100
    trec = re.match(r"^(?P<base>[A-Za-z_]+?)_(?:cut_)?(?P<k>\d+)$", raw_name)
    if trec and k_text is None and resolve_name(trec.group("base")) is not None:
        raw_name, k_text = trec.group("base"), trec.group("k")
    name = resolve_name(raw_name)
    if name is None:
        from rankgate.metrics.registry import suggest

        hint = suggest(raw_name)
        meant = None if hint is None else text.strip().replace(raw_name, hint, 1)
        glued = re.fullmatch(r"(?P<base>[A-Za-z_]+?)[_-]?(?P<k>\d+)", raw_name)  # recall5: the @ left out
        if glued and k_text is None:
            base = glued.group("base")
            near = resolve_name(base) or suggest(base)
            cut = None if near is None else get_metric(near)
            if cut is not None and cut.cutoff != "never" and not getattr(cut, "per_sample_k", False):
                meant = text.strip().replace(raw_name, base if resolve_name(base) else str(near), 1) + f"@{glued.group('k')}"
        msg = f"unknown metric {raw_name!r} in {text!r}"
        if meant:
            msg += f"; did you mean {meant!r}?"
        else:
            msg += "; run 'rankgate metrics' for the list"
        raise MetricSpecError(msg)
    definition = get_metric(name)

    k: int | None = None
    if k_text is not None:
        try:
            k = int(k_text)
        except ValueError:
            k = -1
        if k < 1:
            raise MetricSpecError(f"cutoff in {text!r} must be a positive integer; got {k_text!r}")
        if k > MAX_K:
            raise MetricSpecError(f"cutoff in {text!r} must be at most {MAX_K:,}; got {k_text!r} "
                                  "(write the metric without @k to use the whole ranking)")
        if definition.cutoff == "never":
            raise MetricSpecError(f"metric {name!r} takes no cutoff; write it as {name!r}")
        if getattr(definition, "per_sample_k", False):
            raise MetricSpecError(f"metric {name!r} takes its k from each sample's metadata.k, else --k (default 5); "
                                  f"write it as {raw_name!r}")

    params: dict[str, Any] = {}
    if m.group("params") is not None and m.group("params").strip():
        for part in m.group("params").split(","):
            if "=" not in part:
                raise MetricSpecError(f"parameter {part.strip()!r} in {text!r} must be key=value")
            key, value = (s.strip() for s in part.split("=", 1))
            if key not in definition.params:
                known = ", ".join(sorted(definition.params)) or "none"
                raise MetricSpecError(f"metric {name!r} has no parameter {key!r}; its parameters: {known}")
            if key in params:
                raise MetricSpecError(f"parameter {key!r} given twice in {text!r}")
            params[key] = _checked(definition.params[key], definition.params[key].convert(value, spec=text), value, text)
    canonical = tuple(
        sorted((key, v) for key, v in params.items() if v != definition.params[key].default)
    )
    return Metric(name, k, canonical)


def _checked(param: Any, value: Any, raw: str, spec: str) -> Any:
    """A converted parameter value every kernel can use. NaN and 64-bit overflow are refused by
    :meth:`Param.convert`; an infinity is refused too unless it is the parameter's own default
    (``min_score=-inf``: no line), as ``overlap=inf`` or ``min_score=inf`` would silently make the
    metric constant."""
    if isinstance(value, float) and math.isinf(value) and value != param.default:
        raise MetricSpecError(f"parameter {param.name!r} in {spec!r} must be a finite number; got {raw!r}")
    return value


def _specs(value: Any) -> str | tuple[str | Metric, ...] | None:
    """The metrics argument as :func:`parse_metrics` reads it: one string (comma-separated specs), or a
    tuple of specs and :class:`Metric` objects; None when it is neither."""
    if isinstance(value, str):
        return plain(value)
    if isinstance(value, Metric):
        return (value,)
    if isinstance(value, (Mapping, bytes, bytearray)) or not hasattr(value, "__iter__"):
        return None
    items = tuple(plain(v) if isinstance(v, str) else v for v in value)
    return items if all(isinstance(v, (str, Metric)) for v in items) else None


#: The ``metrics`` argument of :func:`rankgate.evaluate` and the requests.
METRICS = Param("metrics", Shape("metric specs: one string ('recall@5,mrr') or a list of specs", _specs), None,
                help="the metrics to compute")


def parse_metrics(texts: str | Sequence[str | Metric], *, caller: str | None = None) -> list[Metric]:
    """Parse a comma-separated string (commas inside parentheses are kept) or a list of specs.

    Anything else is a UsageError naming the ``metrics`` parameter of ``caller``."""
    texts = check(METRICS, texts, caller=caller)
    if isinstance(texts, str):
        parts: list[str] = []
        depth, current = 0, ""
        for ch in texts:
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
            if ch == "," and depth == 0:
                parts.append(current)
                current = ""
            else:
                current += ch
        parts.append(current)
        texts = [p for p in parts if p.strip()]
    out: list[Metric] = []
    for t in texts:
        metric = parse_metric(t)
        if metric not in out:
            out.append(metric)
    if not out:
        raise MetricSpecError("no metrics given; expected e.g. 'recall@5,mrr,ndcg@10'")
    return out
