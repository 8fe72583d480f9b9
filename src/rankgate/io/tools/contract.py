"""The sample contract: evaluation samples in YAML or JSON, and the system's output per sample.

Samples (the gold set), a YAML or JSON document with a ``samples:`` list (a bare list works too)::

    samples:
      - id: s-001
        input: {question: "how do I rotate an API key?"}
        expected_output: [doc-3, doc-9]      # relevant ids (binary), or {doc-3: 2, doc-9: 1} (graded)
        metadata: {k: 5}                     # the sample's cutoff; other metadata are kept as segments

``metadata.expected_answer`` (or a top-level ``expected_answer``) is the answer text that
``answer-containment-at-k`` looks for in the retrieved texts.

Outputs (the run), the system's output per sample, keyed by the sample's ``id``; the output is
``{"retrieved": [{"id": …, "text": …}, …]}`` or a bare array of ids, rank 1 first:

* a YAML or JSON mapping ``{sample id: output}``;
* JSON lines ``{"id": …, "output": output}`` (or ``{"id": …, "retrieved": […]}``, rankgate's own
  run lines);
* the samples file itself, when each sample carries its ``output``.

Every record becomes the record rankgate's JSON reader validates (:mod:`rankgate.io.jsonl`), so
errors name the file, the line of the sample (YAML, JSON lines) and the field. A YAML document may
stand for at most :data:`MAX_VALUES` values once its aliases are expanded. In YAML, ids (and texts and
segment values) are the text written, never YAML 1.1's reading of it (``0012`` is "0012", not 10), and
``k``, grades, scores and ranks are numbers in decimal digits (``k: 010`` is refused): see ``_yaml``.
"""

from __future__ import annotations

import functools
import json
import os
from typing import Any

from rankgate.errors import InputError
from rankgate.model.gold_run import Gold, Run

__all__ = ["MAX_VALUES", "YAML_EXTENSIONS", "contract_gold_records", "gold_from_value", "gold_records", "is_contract_json", "is_contract_value",
           "read_contract_gold", "read_contract_run", "run_from_value"]

YAML_EXTENSIONS = (".yaml", ".yml")
#: Values a YAML samples/outputs file may stand for once aliases (``*name``) are expanded.
MAX_VALUES = 20_000_000
SAMPLE_KEYS = ("id", "input", "expected_output", "metadata")
OUTPUT_KEYS = ("output", "outputs", "retrieved")
SHAPE_HINT = ("samples are {id, input: {question}, expected_output: [ids] or {id: gain}, metadata: {k}}; "
              "outputs are {sample id: {retrieved: [{id, text}, ...]} or [ids]}")


def is_samples_file(path: str) -> bool:
    """Whether ``path`` holds the contract's samples (a YAML file, or JSON in the contract's shape)."""
    ext = os.path.splitext(path.removesuffix(".gz"))[1].lower()
    return is_yaml(path) or (ext in (".json", ".jsonl", ".ndjson") and is_contract_json(path, "gold"))


def is_yaml(path: str) -> bool:
    return os.path.splitext(path.removesuffix(".gz"))[1].lower() in YAML_EXTENSIONS


# -- reading the document --------------------------------------------------------------------------
# Ids are text as written. PyYAML follows YAML 1.1, which reads a plain 0012 as 10, 0x1F as 31, 12:30
# as 750 and yes as True; so each scalar is read by where it stands in the contract: as the text
# written (ids, id lists, texts, metadata and other segment values, mapping keys), as a number in
# decimal digits (k, grades, score, rank), or as YAML's value (no_answer, a run's own fields such as
# latency_ms). A plain null (~, null, nothing) is null everywhere; a quoted scalar is always text.
_TEXT, _NUMBER, _VALUE = "text", "number", "value"  # how a scalar is read


@functools.cache
def _fields() -> tuple[frozenset[str], ...]:
    """The contract's fields by how they are read (the JSON reader's names, imported when first needed)."""
    from rankgate.io.jsonl import GRADE_KEYS, ITEM_ID_KEYS, QUERY_ID_KEYS, RELEVANT_KEYS, RUN_LIST_KEYS

    sample_text = frozenset(QUERY_ID_KEYS) | {"input", "query", "question", "text", "intent", "segment",
                                              "source_of_query", "created", "corpus_version", "as_of",
                                              "expected_answer", "tags"}
    id_lists = frozenset(RELEVANT_KEYS) | frozenset(RUN_LIST_KEYS) | {"must_not_retrieve", "entities"}
    item_text = frozenset(ITEM_ID_KEYS) | {"text", "content", "note", "doc_version", "version", "source"}
    item_numbers = frozenset(GRADE_KEYS) | {"score", "rank"}
    return sample_text, id_lists, item_text, item_numbers, frozenset(RUN_LIST_KEYS), frozenset(QUERY_ID_KEYS)


def _child(ctx: str, key: str, what: str) -> str:
    """How the value under ``key`` of a mapping read as ``ctx`` is read (a context or a scalar rule)."""
    sample_text, id_lists, item_text, item_numbers, run_lists, query_ids = _fields()
    if ctx == "sample":
        if key in sample_text:
            return _TEXT
        if key in id_lists:
            return "ids"
        if key in ("output", "outputs"):
            return "output"
        if key == "metadata":
            return "metadata"
        if key == "k":
            return _NUMBER
        # other fields: segments of the gold set (text), or the run's own fields (latency_ms …)
        return _VALUE if key == "no_answer" or what == "run" else _TEXT
    if ctx == "output":  # {retrieved: [...], latency_ms: ...}
        return "ids" if key in run_lists else _TEXT if key in query_ids else _VALUE
    if ctx == "ids":  # an {id: gain} map
        return _NUMBER
    if ctx == "item":  # {id, grade, note} or {id, text, score, rank}
        return _TEXT if key in item_text else _NUMBER if key in item_numbers else _VALUE
    if ctx == "metadata":
        return _NUMBER if key == "k" else _TEXT
    if ctx == "doc":  # a document with a samples: list
        return "samples" if key == "samples" else _VALUE
    if ctx == "outputs":  # a mapping of sample id to output
        return "output"
    return _VALUE if ctx == _NUMBER else ctx


def _yaml(path: str, text: str, what: str = "gold") -> tuple[Any, list[int | None]]:
    """The document as plain values, and the line of each top-level item (of ``samples:`` or of
    the mapping); aliases are expanded under a budget of :data:`MAX_VALUES` values. ``what``: read
    for the gold set or the run (a sample's other fields are segments, or the run's own fields)."""
    import yaml

    from rankgate._util.configfile import DECIMAL_HINT, decimal_problem, scalar_text, written

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        root = yaml.compose(text, Loader=loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise InputError(f"is not valid YAML: {getattr(exc, 'problem', None) or exc}", path=path,
                         line=mark.line + 1 if mark is not None else None) from None
    if root is None:
        raise InputError("is empty", path=path, hint=SHAPE_HINT)
    left = [MAX_VALUES]
    constructor = yaml.constructor.SafeConstructor()
    trail: list[str | int] = []  # where the builder is, for messages: samples[0].metadata.k

    def where() -> str | None:
        return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in trail).lstrip(".") or None

    def scalar(node: Any, how: str) -> Any:
        if how == _TEXT or how in ("ids", "output", "item"):  # an id, or a text; in a list of ids, an id
            return scalar_text(node)
        if node.tag == "tag:yaml.org,2002:timestamp":
            return node.value  # a date as the text written
        try:
            value = constructor.construct_object(node)
        except (yaml.YAMLError, ValueError, OverflowError) as exc:
            raise InputError(f"has a value that cannot be read: {getattr(exc, 'problem', None) or exc}", path=path,
                             line=node.start_mark.line + 1) from None
        if how == _NUMBER:
            problem = decimal_problem(written(node), value)
            if problem:
                raise InputError(problem, path=path, line=node.start_mark.line + 1, field=where(), hint=DECIMAL_HINT)
        return value

    def build(node: Any, depth: int, ctx: str) -> Any:
        left[0] -= 1
        if left[0] < 0:
            raise InputError(f"stands for more than {MAX_VALUES:,} values once its aliases (*name) are expanded",
                             path=path, line=node.start_mark.line + 1, hint="write the values out instead of nesting aliases")
        if depth > 100:
            raise InputError("nests blocks more than 100 deep", path=path, line=node.start_mark.line + 1,
                             hint=SHAPE_HINT)
        if isinstance(node, yaml.MappingNode):
            within = "item" if ctx in ("ids", "output") and depth and isinstance(trail[-1], int) else ctx
            out: dict[str, Any] = {}
            for key_node, value_node in node.value:
                left[0] -= 1
                key = scalar_text(key_node) if isinstance(key_node, yaml.ScalarNode) else None  # keys as written
                if key is None:
                    raise InputError("has a key that is not a name", path=path, line=key_node.start_mark.line + 1)
                trail.append(key)
                out[key] = build(value_node, depth + 1, _child(within, key, what))
                trail.pop()
            return out
        if isinstance(node, yaml.SequenceNode):
            items = []
            for i, n in enumerate(node.value):
                trail.append(i)
                items.append(build(n, depth + 1, "sample" if ctx == "samples" else ctx))
                trail.pop()
            return items
        return scalar(node, ctx)

    body = root
    if isinstance(root, yaml.MappingNode):
        wrapped = next((v for k, v in root.value if isinstance(k, yaml.ScalarNode) and k.value == "samples"), None)
        if isinstance(wrapped, yaml.SequenceNode):
            body = wrapped
    top = "samples" if isinstance(root, yaml.SequenceNode) else "doc" if body is not root else "outputs"
    value = build(root, 0, top)
    if isinstance(body, yaml.SequenceNode):
        lines: list[int | None] = [n.start_mark.line + 1 for n in body.value]
    elif isinstance(body, yaml.MappingNode):
        lines = [k.start_mark.line + 1 for k, _ in body.value]
    else:
        lines = []
    return value, lines


def _document(path: str, what: str = "gold") -> tuple[Any, list[int | None]]:
    """The file's content: one YAML or JSON document, or JSON lines (a list of their objects)."""
    from rankgate.io.jsonl import iter_json_lines, json_lines, read_text

    text = read_text(path)
    if not text.strip():
        raise InputError("is empty", path=path, hint=SHAPE_HINT)
    if is_yaml(path):
        return _yaml(path, text, what)
    try:
        whole = json.loads(text)
    except json.JSONDecodeError:
        records = list(iter_json_lines(json_lines(text), path))  # JSON lines; a bad line is named
        return [obj for _, obj in records], [line for line, _ in records]
    except (ValueError, RecursionError):
        raise InputError("is not JSON that can be read (a number too long or nesting too deep)", path=path) from None
    from rankgate.io.jsonl import check_surrogates

    check_surrogates(text, whole, path, None)
    return whole, []


def _samples(value: Any) -> list[Any] | None:
    if isinstance(value, dict) and isinstance(value.get("samples"), list):
        return list(value["samples"])
    if isinstance(value, list):
        return value
    return None


def _line(lines: list[int | None], i: int) -> int | None:
    return lines[i] if i < len(lines) else None


def _sample_id(sample: Any, path: str, line: int | None, where: str) -> str:
    if not isinstance(sample, dict):
        raise InputError(f"must be a mapping; got {type(sample).__name__}", path=path, line=line, field=where,
                         hint=SHAPE_HINT)
    sid = sample.get("id", sample.get("query_id"))
    if isinstance(sid, bool) or not isinstance(sid, (str, int)) or not str(sid).strip():
        raise InputError(f"is missing or not a string; got {sid!r}"[:120], path=path, line=line, field=f"{where}.id",
                         hint="every sample has an id; outputs are keyed by it")
    return str(sid)


# -- gold -------------------------------------------------------------------------------------------
def _gold_record(sample: dict[str, Any], sid: str, path: str, line: int | None, where: str) -> dict[str, Any]:
    rec = {k: v for k, v in sample.items() if k not in ("id", "input", "output", "outputs")}
    rec["query_id"] = sid
    question = sample.get("input")
    if isinstance(question, dict):
        question = question.get("question", question.get("query"))
        if question is not None and not isinstance(question, str):
            raise InputError(f"must be a string; got {type(question).__name__}", path=path, line=line,
                             field=f"{where}.input.question")
    if isinstance(question, str):
        rec["query"] = question
    meta = sample.get("metadata")
    if isinstance(meta, dict) and "expected_answer" not in rec:
        answer = meta.get("expected_answer", meta.get("answer"))
        if isinstance(answer, str):
            rec["expected_answer"] = answer
    if "expected_output" not in sample and not any(k in sample for k in ("relevant", "relevant_chunks", "no_answer")):
        raise InputError("is required: the sample's relevant ids", path=path, line=line, field=f"{where}.expected_output",
                         hint="a list of relevant ids ([doc-3, doc-9]) or an id -> gain map ({doc-3: 2})")
    return rec


def read_contract_gold(path: str) -> Gold:
    """The gold set of a samples file (see module docs)."""
    value, lines = _document(path)
    return gold_from_value(value, path, lines)


def gold_from_value(value: Any, path: str, lines: list[int | None] | None = None) -> Gold:
    """The gold set of parsed samples (``lines``: each sample's line in the file, when known)."""
    from rankgate.io.jsonl import parse_gold_records

    return parse_gold_records(gold_records(value, path, lines), path)


def contract_gold_records(path: str) -> list[tuple[int, dict[str, Any]]]:
    """The records of a samples file (line, record), for readers that check each on its own."""
    value, lines = _document(path)
    return gold_records(value, path, lines)


def gold_records(value: Any, path: str, lines: list[int | None] | None = None) -> list[tuple[int, dict[str, Any]]]:
    """Each sample as the (line, record) rankgate's JSON gold reader validates."""
    lines = lines or []
    samples = _samples(value)
    if samples is None:
        raise InputError("has no 'samples:' list", path=path, field="samples", hint=SHAPE_HINT)
    if not samples:
        raise InputError("lists no samples", path=path, field="samples", hint=SHAPE_HINT)
    records = []
    for i, sample in enumerate(samples):
        line, where = _line(lines, i), f"samples[{i}]"
        sid = _sample_id(sample, path, line, where)
        records.append((line if line is not None else i + 1, _gold_record(sample, sid, path, line, where)))
    return records


# -- run --------------------------------------------------------------------------------------------
def _run_record(sid: str, output: Any, path: str, line: int | None, where: str) -> dict[str, Any]:
    if isinstance(output, list):
        return {"query_id": sid, "retrieved": output}
    if isinstance(output, dict) and isinstance(output.get("retrieved"), list):
        rec = {k: v for k, v in output.items() if k not in ("id", "query_id")}
        rec["query_id"] = sid
        return rec
    got = "a mapping without 'retrieved'" if isinstance(output, dict) else repr(output)[:60]
    raise InputError(f"must be {{retrieved: [...]}} or a list of ids; got {got}", path=path, line=line, field=where,
                     hint=SHAPE_HINT)


def read_contract_run(path: str) -> Run:
    """The run of an outputs file, or of a samples file whose samples carry their output."""
    value, lines = _document(path, "run")
    return run_from_value(value, path, lines)


def run_from_value(value: Any, path: str, lines: list[int | None] | None = None) -> Run:
    """The run of parsed outputs (a mapping of sample id to output, or samples with their output)."""
    from rankgate.io.jsonl import parse_run_records

    lines = lines or []
    records = []
    samples = _samples(value)
    if samples is not None:
        for i, sample in enumerate(samples):
            line, where = _line(lines, i), ("samples" if isinstance(value, dict) else "") + f"[{i}]"
            sid = _sample_id(sample, path, line, where)
            key = next((k for k in OUTPUT_KEYS if k in sample), None)
            if key is None:
                raise InputError("has no output", path=path, line=line, field=f"{where}.output",
                                 hint="give the system's output per sample: output: {retrieved: [...]} or a list of ids")
            output = sample if key == "retrieved" else sample[key]
            records.append((line if line is not None else i + 1, _run_record(sid, output, path, line, f"{where}.{key}")))
    elif isinstance(value, dict):
        for i, (sid, output) in enumerate(value.items()):
            line = _line(lines, i)
            records.append((line if line is not None else i + 1, _run_record(str(sid), output, path, line, str(sid)[:80])))
    else:
        raise InputError(f"must be a mapping of sample id to output; got {type(value).__name__}", path=path,
                         hint=SHAPE_HINT)
    if not records:
        raise InputError("lists no outputs", path=path, hint=SHAPE_HINT)
    return parse_run_records(records, path)


# -- detection --------------------------------------------------------------------------------------
def _is_sample(obj: Any, what: str) -> bool:
    if not isinstance(obj, dict) or not ("id" in obj or "query_id" in obj):
        return False
    if what == "gold":
        return "expected_output" in obj and (isinstance(obj.get("input"), dict) or "metadata" in obj)
    return any(k in obj for k in ("output", "outputs"))


def is_contract_value(value: Any, what: str) -> bool:
    """Whether a parsed JSON value is in the contract's shape for ``what`` ("gold" or "run")."""
    samples = _samples(value)
    if samples is not None:
        first = next((s for s in samples if isinstance(s, dict)), None)
        return first is not None and (_is_sample(first, what) or (isinstance(value, dict) and what == "gold"
                                                                  and "expected_output" in first))
    if what == "run" and isinstance(value, dict) and value:
        from rankgate.io.shapes import RANKGATE_KEYS

        if set(value) & (RANKGATE_KEYS | {"query_id", "qid", "id"}):
            return False
        if "metrics" in value:  # a rankgate summary.json: refused as such by the JSONL reader, not read as outputs
            return False
        return all(isinstance(v, list) or (isinstance(v, dict) and isinstance(v.get("retrieved"), list))
                   for v in value.values())
    return False


def is_contract_json(path: str, what: str) -> bool:
    """Whether a JSON/JSONL file is in the contract's shape: a ``samples`` list (or a bare list of
    samples), an outputs mapping, or JSON lines of samples with an ``input`` object or of
    ``{"id", "output"}`` (the first line decides for JSON lines)."""
    from rankgate.io.source import open_text

    try:
        with open_text(path) as fh:
            first = next((line for line in fh if line.strip()), "").lstrip("\ufeff").strip()
    except (UnicodeDecodeError, OSError, EOFError):
        return False
    try:
        value = json.loads(first)
    except json.JSONDecodeError:
        if not first.startswith(("{", "[")):
            return False
        try:
            value, _ = _document(path)
        except InputError:
            return False
        return is_contract_value(value, what)
    except (ValueError, RecursionError):
        return False
    if isinstance(value, list) or (isinstance(value, dict) and ("samples" in value or what == "run")):
        if is_contract_value(value, what):
            return True
    # JSON lines, the first decides: a sample whose input is an object (rankgate's own reader takes the
    # other samples as they are), or an output line {"id", "output"}
    if what == "gold":
        return _is_sample(value, "gold") and isinstance(value.get("input"), dict)
    return _is_sample(value, "run")
