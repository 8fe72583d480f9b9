"""Config files read as a tree of values that remember their line, bounded in size, nesting and
aliases, and a reader whose errors name ``file:line`` and the key. The ship criteria
(:mod:`rankgate.gating.config`), the sections other areas own (the ``latency:`` gates, the trace
monitors file) and their messages are read through it, so every config error reads alike. The rule
for YAML scalars every reader of rankgate follows (ids and names as written, numbers in decimal
digits) is here too, used by the sample contract as well (:mod:`rankgate.io.tools.contract`)."""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rankgate.errors import ConfigError

__all__ = ["DECIMAL_HINT", "MAX_BYTES", "MAX_DEPTH", "MAX_VALUES", "SEVERITIES", "ConfigItem", "ConfigReader",
           "decimal_problem", "parse_tree", "plain", "read_config_text", "read_tree", "read_yaml", "scalar_text",
           "show_value", "tree_from_plain", "written"]

#: Limits that keep a hostile config file from taking minutes and gigabytes (see _Budget).
MAX_BYTES = 1 << 20  # 1 MiB; ship criteria are a few hundred bytes
MAX_VALUES = 10_000  # values in the document once aliases are expanded
MAX_DEPTH = 50  # nesting of blocks
#: How much a failed check weighs: error blocks the merge, warning only says so.
SEVERITIES = ("error", "warning")


# -- YAML scalars as rankgate reads them ---------------------------------------------------------
# PyYAML follows YAML 1.1: a plain (unquoted) scalar that looks like a number, a boolean or a date is
# read as one, in more spellings than a person expects: 0012 is 10 (octal), 0x1F is 31, 1_000 is 1000,
# 12:30 is 750 (base 60), yes/no/on/off are booleans. Every YAML reader of rankgate (the sample
# contract, the ship criteria, the trace monitors, the field map) keeps ids, names and other text as
# the scalar is written (scalar_text, written), and takes a number only in decimal digits
# (decimal_problem). A quoted scalar is always text.
_TAG = "tag:yaml.org,2002:"
_DECIMAL_INT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")
_DECIMAL_FLOAT = re.compile(r"[-+]?(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)")
#: What to do about a number written in another base or spelling.
DECIMAL_HINT = "write the number in decimal digits, e.g. 10 or 0.5"


def scalar_text(node: Any) -> str | None:
    """A scalar node as the text written, quoted or plain, whatever YAML 1.1 would make of it
    (``0012``, ``0x1F``, ``12:30``, ``yes``, ``.inf``, ``2024-01-05`` stay as written); None for a
    plain null (``~``, ``null``, nothing)."""
    if node.tag == _TAG + "null" and not node.style:  # plain style is None (Python parser) or "" (C parser)
        return None
    return node.value


def written(node: Any) -> str | None:
    """The text of a plain scalar that YAML reads as something other than text (a number, a boolean,
    a date), else None: what a reader that wants text takes instead of YAML's value."""
    if node.style or node.tag in (_TAG + "str", _TAG + "null"):
        return None
    return node.value


def decimal_problem(text: str | None, value: Any) -> str | None:
    """Why a number written ``text`` (a plain scalar's text, see :func:`written`) is not one rankgate
    takes: YAML 1.1 reads ``010``, ``0x1F``, ``0b11``, ``1_000`` and ``1:30`` as numbers in another
    base or spelling. None when it is written in decimal digits, or is no number."""
    if text is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if (_DECIMAL_INT if isinstance(value, int) else _DECIMAL_FLOAT).fullmatch(text):
        return None
    return f"must be written in decimal digits; got {text[:40]}, which YAML reads as {value!r:.40}"


# -- a parsed tree that remembers lines ---------------------------------------------------------
@dataclass
class ConfigItem:
    """A value of the tree and the line it is on (a mapping's values: the line of their key);
    ``written``: the text of a plain scalar YAML read as a number, boolean or date (:func:`written`)."""

    value: Any  # dict[str, ConfigItem] | list[ConfigItem] | scalar
    line: int | None
    written: str | None = None


class _Budget:
    """Bounds on building the tree: aliases (``*name``) make the node graph share, or even loop
    back to, nodes, so a 600-byte file can stand for billions of values ("billion laughs")."""

    def __init__(self, path: str, what: str | None = None) -> None:
        self.path, self.what = path, what  # (what: the kind of file, for the hints; None: ship criteria)
        self.left = MAX_VALUES
        self.open: set[int] = set()  # nodes being built: reaching one again is an alias to itself

    def take(self, node: Any) -> None:
        line = node.start_mark.line + 1
        if id(node) in self.open:
            raise ConfigError("has an alias that refers to the block it is part of (a loop)", path=self.path,
                              line=line, hint="write the values out instead of the alias")
        if len(self.open) >= MAX_DEPTH:
            raise ConfigError(f"nests blocks more than {MAX_DEPTH} deep", path=self.path, line=line,
                              hint=_hints(self.what)[1])
        self.left -= 1
        if self.left < 0:
            raise ConfigError(f"stands for more than {MAX_VALUES:,} values once its aliases (*name) are expanded",
                              path=self.path, line=line, hint=_hints(self.what)[2])


def _from_yaml(node: Any, path: str, budget: _Budget | None = None) -> ConfigItem:
    import yaml

    budget = budget or _Budget(path)
    budget.take(node)
    line = node.start_mark.line + 1
    if isinstance(node, (yaml.MappingNode, yaml.SequenceNode)):
        budget.open.add(id(node))
    try:
        if isinstance(node, yaml.MappingNode):
            out: dict[str, ConfigItem] = {}
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
            return ConfigItem(out, line)
        if isinstance(node, yaml.SequenceNode):
            return ConfigItem([_from_yaml(n, path, budget) for n in node.value], line)
    finally:
        budget.open.discard(id(node))
    try:
        return ConfigItem(yaml.constructor.SafeConstructor().construct_object(node), line, written(node))
    except yaml.YAMLError as exc:
        raise ConfigError(f"has a value that is not valid YAML: {getattr(exc, 'problem', None) or exc}", path=path,
                          line=line) from None
    except (ValueError, OverflowError) as exc:  # e.g. a date out of range
        raise ConfigError(f"has a value that cannot be read: {exc}", path=path, line=line) from None


def tree_from_plain(value: Any) -> ConfigItem:
    if isinstance(value, Mapping):
        return ConfigItem({str(k): tree_from_plain(v) for k, v in value.items()}, None)
    if isinstance(value, (list, tuple)):
        return ConfigItem([tree_from_plain(v) for v in value], None)
    return ConfigItem(value, None)


# -- validation ---------------------------------------------------------------------------------
class ConfigReader:
    """Checks values of a parsed tree; errors name file, line and key."""

    def __init__(self, path: str) -> None:
        self.path = path

    def fail(self, key: str, line: int | None, message: str, hint: str | None = None) -> ConfigError:
        return ConfigError(message, path=self.path, line=line, field=key, hint=hint)

    def mapping(self, item: ConfigItem, key: str, known: tuple[str, ...]) -> dict[str, ConfigItem]:
        if not isinstance(item.value, dict):
            raise self.fail(key, item.line, f"must be a mapping of {', '.join(known)}; got {show_value(item.value)}")
        for name, sub in item.value.items():
            if name not in known:
                close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
                hint = f"did you mean '{close[0]}'?" if close else f"known keys: {', '.join(known)}"
                raise self.fail(f"{key}.{name}" if key else name, sub.line, "is not a known key", hint)
        return item.value

    def decimal(self, item: ConfigItem, key: str) -> None:
        """Refuse a number YAML read from another base or spelling (``010``, ``0x1F``, ``1_000``, ``1:30``)."""
        problem = decimal_problem(item.written, item.value)
        if problem:
            raise self.fail(key, item.line, problem, DECIMAL_HINT)

    def number(self, item: ConfigItem, key: str, *, share: bool, pp: bool = False) -> float:
        v = item.value
        self.decimal(item, key)
        if isinstance(v, str):
            text = v.strip().lower().replace(" ", "")
            suffix = "pp" if pp else "%"
            m = re.fullmatch(r"([-+]?\d+(?:\.\d+)?)" + re.escape(suffix), text)
            if m and share:
                return float(m.group(1)) / 100.0
            percent = re.fullmatch(r"([-+]?\d+(?:\.\d+)?)%", text)
            if pp and percent:  # a drop is in points: '5%' could mean 5 points or 5% of the baseline
                n = float(percent.group(1))
                raise self.fail(key, item.line, f"must be a drop in points, not a percentage; got {show_value(v)}",
                                f"write '{n:g}pp' or {n / 100:g} for a drop of {n:g} points" if share else
                                f"write it in the metric's own units, e.g. {n / 100:g}")
            example = "3pp" if pp else "85%"
            raise self.fail(key, item.line, f"must be a number; got {show_value(v)}",
                            f"write {'0.03' if pp else '0.85'} or '{example}'" if share else "write a plain number")
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise self.fail(key, item.line, f"must be a number; got {show_value(v)}")
        return float(v)

    def integer(self, item: ConfigItem, key: str, minimum: int, maximum: int | None = None) -> int:
        v = item.value
        self.decimal(item, key)
        if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
            raise self.fail(key, item.line, f"must be an integer >= {minimum}; got {show_value(v)}")
        if maximum is not None and v > maximum:
            raise self.fail(key, item.line, f"must be an integer <= {maximum:,}; got {v:,}")
        return v

    def choice(self, item: ConfigItem, key: str, choices: tuple[str, ...]) -> str:
        v = item.value if item.written is None else item.written
        if v not in choices:
            close = difflib.get_close_matches(str(v), choices, n=1, cutoff=0.5)
            hint = f"did you mean '{close[0]}'?" if close else None
            raise self.fail(key, item.line, f"must be one of {'|'.join(choices)}; got {show_value(v)}", hint)
        return v

    def text(self, item: ConfigItem, key: str) -> str:
        """A name or other text, as written: ``owner: 0012`` is "0012", ``label: yes`` is "yes"."""
        v = item.value if item.written is None else item.written
        if not isinstance(v, str) or not v.strip():
            raise self.fail(key, item.line, f"must be a non-empty string; got {show_value(v)}")
        return v.strip()


def show_value(v: Any) -> str:
    if isinstance(v, dict):
        return "a mapping"
    if isinstance(v, list):
        return "a list"
    if v is None:
        return "nothing (null)"
    return f"{v!r} ({type(v).__name__})" if not isinstance(v, str) else repr(v)


def _hints(what: str | None) -> tuple[str, str, str]:
    """What to do about a file too large, nested too deep, or standing for too many values once its
    aliases are expanded: the ship criteria's, or those of the kind of file ``what`` names."""
    kind = "a ship-criteria file" if what is None else f"{'an' if what[:1] in 'aeiou' else 'a'} {what} file"
    size = "ship criteria are a few hundred bytes; is this the right file?" if what is None else \
        f"is this the right {what} file?"
    aliases = f"{kind} needs far fewer; write the values out instead of nesting aliases"
    return size, f"{kind} needs a few levels", aliases


def _check_nesting(text: str, path: str, what: str | None = None) -> None:
    """Refuse deep nesting from the event stream, before the (recursive) composer sees it."""
    import yaml

    depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                raise ConfigError(f"nests blocks more than {MAX_DEPTH} deep", path=path,
                                  line=event.start_mark.line + 1, hint=_hints(what)[1])
        elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            depth -= 1


def parse_tree(text: str, *, path: str = "<config>", what: str | None = None) -> ConfigItem:
    """YAML text as a tree of values that remember their line (bounded: size, depth, aliases). The
    ship criteria and the trace monitors (:mod:`rankgate.traces.monitors`) are read through it."""
    import yaml

    if len(text) > MAX_BYTES or len(text.encode("utf-8", "surrogatepass")) > MAX_BYTES:
        raise ConfigError(f"is larger than the {MAX_BYTES // 1024} KiB a config file may be", path=path,
                          hint=_hints(what)[0])
    try:
        _check_nesting(text, path, what)
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
        raise ConfigError(f"nests blocks more than {MAX_DEPTH} deep", path=path, hint=_hints(what)[1]) from None
    return ConfigItem(None, 1) if root is None else _from_yaml(root, path, _Budget(path, what))


def read_config_text(path: str, *, hint: str = "pass the gate config with --config", what: str | None = None) -> str:
    """The text of a config file, bounded in size; a missing, unreadable or non-UTF-8 file is a ConfigError."""
    import os

    try:
        if os.path.isdir(path):
            raise ConfigError("is a folder; expected a YAML file", path=str(path))
        with open(os.fspath(path), "rb") as fh:
            data = fh.read(MAX_BYTES + 1)  # bounded: a huge file (or an endless pipe) is refused unread
        if len(data) > MAX_BYTES:
            raise ConfigError(f"is larger than the {MAX_BYTES // 1024} KiB a config file may be", path=str(path),
                              hint=_hints(what)[0])
        return data.decode("utf-8")
    except FileNotFoundError:
        raise ConfigError("does not exist", path=str(path), hint=hint) from None
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ConfigError(f"is not UTF-8 text (byte {exc.start + 1})", path=str(path), line=line,
                          hint="save the file as UTF-8") from None
    except OSError as exc:
        raise ConfigError(f"cannot be read: {exc.strerror or exc}", path=str(path)) from None


def plain(item: ConfigItem, *, as_written: bool = False) -> Any:
    """The tree's values without their lines: dicts, lists and scalars. ``as_written``: a plain scalar
    YAML reads as a number, boolean or date is its text instead (names, labels, ids)."""
    if isinstance(item.value, dict):
        return {k: plain(v, as_written=as_written) for k, v in item.value.items()}
    if isinstance(item.value, list):
        return [plain(v, as_written=as_written) for v in item.value]
    return item.written if as_written and item.written is not None else item.value


def read_tree(path: str, what: str) -> ConfigItem:
    """A small YAML file rankgate reads (a field map, an abstention file) as a tree: bounded like the
    ship criteria, with the same ``file:line`` errors. ``what`` names the file in the hints (``check
    the field map path``)."""
    return parse_tree(read_config_text(path, hint=f"check the {what} path", what=what), path=path, what=what)


def read_yaml(path: str, what: str) -> Any:
    """:func:`read_tree` as plain values, None when the file is empty."""
    return plain(read_tree(path, what))
