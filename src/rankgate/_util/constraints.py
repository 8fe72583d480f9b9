"""Parameters as data: each numeric or choice parameter is declared once, with its bounds.

A :class:`Param` is a name, a type, a default and the values allowed. The library checks a value
with :func:`check` (``check(CONFIDENCE, confidence, caller="metric_cis")``) and the command line
builds its options from the same objects (:mod:`rankgate.cli.options`), so a bound and the
sentence that states it are written in one place. Every refusal has one shape::

    The 'confidence' parameter of metric_cis must be a float in the range (0, 1); got 1.5.
    resamples must be an integer between 0 and 1,000,000; got -1.

(the second names a request's field: the command line says ``--resamples must be …``).

Metric parameters (``ndcg(gain=exp)``) are ``Param`` objects too; their text form is converted by
:meth:`Param.convert`, whose messages name the metric spec.

The Python API checks the type of every argument at the door the same way: a parameter's type may
also be ``bool``, a class (``Scoring``) or a :class:`Shape` (a list of names, a mapping of names), and
``optional`` lets None through. :func:`check` returns the value as the library uses it: a numpy scalar
becomes the Python number or string it stands for (:func:`plain`), so ``k=np.int64(5)`` gives what
``k=5`` gives::

    The 'by' parameter of EvaluateRequest must be a string or a list of strings; got None.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from rankgate.errors import F, MetricSpecError, UsageError

__all__ = [
    "BY",
    "COLUMNS",
    "CONFIDENCE",
    "COUNT",
    "DEDUPE",
    "DOC_MAP",
    "EVALUATE_OPTIONS",
    "FILE",
    "FLAG",
    "K",
    "LEVEL",
    "MAX_K",
    "MAX_RESAMPLES",
    "MAX_TIMEOUT_S",
    "NAMES",
    "NAME_MAP",
    "PATH",
    "PATHS",
    "PERMUTATIONS",
    "POWER",
    "RESAMPLES",
    "SEED",
    "TEXT",
    "TIMEOUT",
    "Param",
    "Shape",
    "check",
    "check_fields",
    "check_options",
    "describe",
    "plain",
    "typed",
]

#: Most resamples (or sign flips) one call takes: 16 MB of means per metric, and far beyond what an
#: interval or p-value needs; more would only exhaust memory or time.
MAX_RESAMPLES = 1_000_000
#: Largest cutoff ``k`` (of a metric spec, a per-query ``k`` or ``--k``): far beyond any ranking, and
#: within the 64-bit integers the kernels use.
MAX_K = 1_000_000_000
#: Longest time one HTTP request may take (``--timeout``, in seconds): a day. A server that has not
#: answered by then is not going to, and far larger values overflow the operating system's timers.
MAX_TIMEOUT_S = 86_400.0


@dataclass(frozen=True)
class Param:
    """A parameter: its type, default and allowed values.

    ``minimum``/``maximum`` bound a number (``None``: unbounded on that side); ``exclusive`` leaves the
    bounds themselves out (``0 < p < 1``); ``choices`` lists the allowed values instead. ``help`` is
    the one sentence that explains it (metric listings, ``--help``). ``type`` is ``int``, ``float``,
    ``str``, ``bool``, another class (an instance of it is accepted) or a :class:`Shape`;
    ``optional``: None is accepted too (the argument was not given).
    """

    name: str
    type: Any  # a type or a Shape
    default: Any
    choices: tuple[Any, ...] | None = None
    minimum: float | None = None
    maximum: float | None = None
    exclusive: bool = False  # the bounds themselves are not allowed (e.g. 0 < p < 1)
    help: str = ""
    optional: bool = False

    def allows(self, value: Any) -> bool:
        """Whether ``value`` (already of the right type) lies within the declared values."""
        if self.choices is not None:
            return value in self.choices
        if isinstance(value, float) and math.isnan(value):
            return False
        low, high = self.minimum, self.maximum
        if self.exclusive:
            return (low is None or value > low) and (high is None or value < high)
        return (low is None or value >= low) and (high is None or value <= high)

    def convert(self, text: str, *, spec: str = "") -> Any:
        """The value of a metric parameter written as ``text`` in the metric spec ``spec``."""
        try:
            value = self.type(text)
        except (TypeError, ValueError):
            raise MetricSpecError(
                f"parameter {self.name!r} in {spec!r} must be {self.type.__name__}; got {text!r}"
            ) from None
        if isinstance(value, float) and math.isnan(value):  # (±inf are meaningful: min_score=-inf is the default)
            raise MetricSpecError(f"parameter {self.name!r} in {spec!r} must be a number; got {text!r}")
        if isinstance(value, int) and not -(2**63) <= value < 2**63:
            raise MetricSpecError(f"parameter {self.name!r} in {spec!r} must fit in 64 bits; got {text!r}")
        if self.choices is not None and value not in self.choices:
            allowed = "|".join(str(c) for c in self.choices)
            raise MetricSpecError(f"parameter {self.name!r} in {spec!r} must be one of {allowed}; got {text!r}")
        if self.exclusive and self.minimum is not None and self.maximum is not None:
            if not self.minimum < value < self.maximum:
                raise MetricSpecError(
                    f"parameter {self.name!r} in {spec!r} must be between {self.minimum} and {self.maximum} "
                    f"(both excluded); got {text!r}"
                )
        if self.minimum is not None and value < self.minimum:
            raise MetricSpecError(f"parameter {self.name!r} in {spec!r} must be >= {self.minimum}; got {text!r}")
        if self.maximum is not None and value > self.maximum:
            raise MetricSpecError(f"parameter {self.name!r} in {spec!r} must be <= {self.maximum}; got {text!r}")
        return value


def _bound(x: float) -> str:
    if isinstance(x, float) and x.is_integer() and abs(x) < 1e15:
        x = int(x)
    return f"{x:,}" if isinstance(x, int) and abs(x) >= 10_000 else f"{x:g}" if isinstance(x, float) else str(x)


def describe(param: Param) -> str:
    """What ``param`` accepts, as the end of a sentence: ``a float in the range (0, 1)``."""
    text = _describe(param)
    return f"{text}, or None" if param.optional else text


def _describe(param: Param) -> str:
    if isinstance(param.type, Shape):
        return param.type.noun
    if param.choices is not None:
        return "one of " + ", ".join(repr(c) for c in param.choices)
    kind = {int: "an integer", float: "a float", str: "a string", bool: "true or false"}.get(param.type) \
        or _a(param.type.__name__)
    low, high = param.minimum, param.maximum
    if low is None and high is None:
        return kind
    if param.type is int and not param.exclusive:  # whole numbers: both ends are plainly included
        if low is not None and high is not None:
            return f"{kind} between {_bound(low)} and {_bound(high)}"
        if low is not None:
            return f"{kind} >= {_bound(low)}"
        assert high is not None
        return f"{kind} <= {_bound(high)}"
    open_, close = ("(", ")") if param.exclusive else ("[", "]")
    left = f"{open_}{_bound(low)}" if low is not None else "(-inf"
    right = f"{_bound(high)}{close}" if high is not None else "inf)"
    return f"{kind} in the range {left}, {right}"


def _a(noun: str) -> str:
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


@dataclass(frozen=True)
class Shape:
    """A kind of argument beyond one scalar type, for :attr:`Param.type`: ``noun`` says what it is in a
    refusal (``a string or a list of strings``); ``read`` gives the value as the library uses it (a
    tuple of names, a dict), or None when it is not of this kind."""

    noun: str
    read: Callable[[Any], Any]


def plain(value: Any) -> Any:
    """The Python scalar a numpy scalar stands for (``np.int64(5)`` -> 5, ``np.str_("q1")`` -> ``"q1"``,
    ``np.bool_(True)`` -> True); any other value as it is. A float32 or float16 becomes the decimal
    numpy prints for it (``np.float32(0.9)`` -> 0.9, as the Python literal reads), so a score or a
    threshold means what it says. Checked by the type's module: numpy is imported only for numpy values."""
    if type(value).__module__ != "numpy":
        return value
    import numpy as np

    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.float64):
        return float(value)
    if isinstance(value, np.floating):
        return float(str(value))
    if isinstance(value, np.str_):
        return str(value)
    return value


def _read(param: Param, value: Any) -> Any:
    """``value`` as ``param``'s type takes it (numpy scalars made plain), or None when it is not one."""
    kind = param.type
    if isinstance(kind, Shape):
        return kind.read(value)
    value = plain(value)
    if isinstance(value, bool):
        return value if kind is bool else None
    if kind is float:
        return value if isinstance(value, (int, float)) else None
    return value if isinstance(value, kind) else None


def _text_or_path(value: Any) -> Any:
    return plain(value) if isinstance(value, str) else value if isinstance(value, os.PathLike) else None


def _sequence(value: Any, item: Callable[[Any], Any]) -> tuple[Any, ...] | None:
    """One item (``item(value)`` is not None) as a 1-tuple, or a list, tuple or other iterable of items
    (not a mapping) as a tuple; None otherwise."""
    one = item(value)
    if one is not None:
        return (one,)
    if isinstance(value, (Mapping, bytes, bytearray)) or not hasattr(value, "__iter__"):
        return None
    out = tuple(item(v) for v in value)
    return None if any(v is None for v in out) else out


def _name_map(value: Any) -> Mapping[str, str] | None:
    """A mapping whose keys and values are all strings (numpy strings made plain), or None. The types are
    collected in C (``map(type, …)``), so a map of a million entries is checked in a few milliseconds."""
    if not isinstance(value, Mapping):
        return None
    types = set(map(type, value.keys())) | set(map(type, value.values()))
    if types <= {str}:
        return value
    if all(issubclass(t, str) for t in types):
        return {str(k): str(v) for k, v in value.items()}
    return None


#: A name, or a list (tuple, any iterable) of names: ``by="intent"`` is ``by=("intent",)``.
NAMES = Shape("a string or a list of strings", lambda v: _sequence(v, lambda x: plain(x) if isinstance(x, str) else None))
#: A path, or a list of paths (str or os.PathLike each).
PATHS = Shape("a path or a list of paths", lambda v: _sequence(v, _text_or_path))
#: One path: str or os.PathLike.
PATH = Shape("a path (str or os.PathLike)", _text_or_path)
#: A mapping of names to names (``columns``, ``doc_map``).
NAME_MAP = Shape("a mapping of strings to strings", _name_map)


def _shown(value: Any) -> str:
    if value is None or isinstance(value, (bool, int, float, str)) or type(value).__module__ == "numpy":
        text = f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10_000 else repr(value)
    else:  # a container or an object: its type, then its form on one line (a table's repr has many)
        text = " ".join(f"{type(value).__name__} {value!r}".split())
    return text if len(text) <= 80 else text[:77] + "..."


def check_options(options: Any, allowed: tuple[str, ...], *, caller: str, target: str, name: str | None = None) -> dict[str, Any]:
    """``options``, keyword options ``caller`` passes on to ``target``, as a dict when it is a mapping whose
    keys ``target`` takes; else a :class:`~rankgate.errors.UsageError` naming the option and those it
    takes. ``name``: the parameter that holds them (``evaluate`` of GateRequest); None for ``**kwargs``."""
    takes = ", ".join(allowed)
    if not isinstance(options, Mapping):
        raise UsageError(f"The {name!r} parameter of {caller} must be a mapping of {target}'s options ({takes}); "
                         f"got {_shown(options)}.")
    unknown = next((key for key in options if key not in allowed), None)
    if unknown is not None:
        where = f"The {name!r} parameter of {caller} names" if name else f"{caller} was given"
        raise UsageError(f"{where} the option {_shown(unknown)}, which {target} does not take; it takes {takes}.")
    return dict(options)


def typed(kind: Any, *, optional: bool = False) -> Param:
    """A parameter of ``kind`` (a type or a :class:`Shape`) with no bounds: the type check at a request's door,
    its bounds left to the request's own checks, which name the field."""
    return Param("value", kind, None, optional=optional)


def check_fields(obj: Any, caller: str, **params: Param) -> None:
    """Each named field of the frozen dataclass ``obj`` checked with its parameter, named as the field
    (``The 'depth' parameter of PoolRequest must be …``), and set to the value :func:`check` gives."""
    for name, param in params.items():
        object.__setattr__(obj, name, check(param, getattr(obj, name), caller=caller, name=name))


def check(param: Param, value: Any, *, caller: str | None = None, field: str | None = None,
          name: str | None = None, note: str = "") -> Any:
    """``value`` as the library uses it when ``param`` allows it (a numpy scalar as its Python value,
    a :class:`Shape` as it reads), else a :class:`~rankgate.errors.UsageError` in one shape.

    ``caller`` names the function (or request class) whose argument it is (``The 'confidence' parameter
    of metric_cis must be …``); ``field`` is the request field it is, which a refusal names as
    :class:`~rankgate.errors.UsageError` marks fields (``confidence must be …``; the command line says
    ``--confidence must be …``); ``name`` is the argument's own name where it differs from the parameter's
    and the field's (``resamples``); ``note`` is added in parentheses (e.g. what the value would cost). With
    both ``field`` and ``caller`` (a request the command line and Python code both build), a value of the
    wrong type is named as the caller's parameter: only Python code can give one, as the command line
    converts each option's text first; a value out of bounds is named as the field.
    """
    if value is None and param.optional:
        return None
    got = _read(param, value)
    if got is not None and param.allows(got):
        return got
    if field is not None and (caller is None or got is not None):
        subject = F(field)
    elif caller is not None:
        subject = f"The {name or field or param.name!r} parameter of {caller}"
    else:
        subject = f"The {name or field or param.name!r} parameter"
    extra = f" ({note})" if note else ""
    raise UsageError(f"{subject} must be {describe(param)}; got {_shown(value)}{extra}.")


#: The keyword options of :func:`rankgate.evaluate` that the gate, the report and ``assert_retrieval`` pass
#: on (``rankgate.gate(..., ties="id")``); a test holds them to the function's signature.
EVALUATE_OPTIONS = ("k", "trec", "complete", "level", "doc_sep", "doc_map", "dedupe", "gold_format", "run_format",
                    "ties", "columns", "fields")

# Arguments several entry points of the Python API share (evaluate, the requests, the report); each is
# checked under the caller's name: ``check(FLAG, trec, caller="evaluate", name="trec")``.
FLAG = Param("flag", bool, False, help="an on/off switch")
TEXT = Param("text", str, None, optional=True, help="a string, or None when not given")
FILE = Param("file", PATH, None, optional=True, help="a path, or None when not given")
COUNT = Param("count", int, 0, minimum=0, help="how many (0 or more)")
BY = Param("by", NAMES, (), help="segment fields")
COLUMNS = Param("columns", NAME_MAP, None, optional=True,
                help="which column holds each field of a table, e.g. {'query_id': 'qid', 'chunk_id': 'doc'}")
DOC_MAP = Param("doc_map", NAME_MAP, None, optional=True, help="chunk id -> document id")
LEVEL = Param("level", str, "chunk", choices=("chunk", "doc"), help="score chunks as given, or their documents")
DEDUPE = Param("dedupe", str, "error", choices=("error", "first"),
               help="a repeated id in one ranking: an error, or its first rank kept")

CONFIDENCE = Param("confidence", float, 0.95, minimum=0.0, maximum=1.0, exclusive=True,
                   help="confidence level of intervals (default 0.95)")
RESAMPLES = Param("resamples", int, 2000, minimum=0, maximum=MAX_RESAMPLES,
                  help="bootstrap resamples (default 2000; 0 turns CIs off)")
SEED = Param("seed", int, 0, minimum=0, help="seed of the bootstrap (default 0)")
K = Param("k", int, None, minimum=1, maximum=MAX_K, help="cutoff of metrics written without @k")
PERMUTATIONS = Param("permutations", int, 10000, minimum=0, maximum=MAX_RESAMPLES,
                     help="sign flips of the paired randomisation test (default 10000; 0 turns p-values off)")
POWER = Param("power", float, 0.8, minimum=0.0, maximum=1.0, exclusive=True,
              help="chance of detecting a drop of the stated size (default 0.8)")
TIMEOUT = Param("timeout", float, 60.0, minimum=0.001, maximum=MAX_TIMEOUT_S,
                help="seconds one request may take in all, from connecting to the reply's last byte (default 60, "
                     "at most 86,400: a day)")
