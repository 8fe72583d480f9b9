"""Generated answers with the context they were generated from: the input of ``rankgate answers``.

One record per query. Canonical fields (``answers.jsonl``, rankgate's own shape):

``query_id``    joins the gold set (RAGAS/DeepEval files without one get the id their gold and run
                readers give: ``"q:"`` + a hash of the normalised question, see
                :func:`rankgate.io.tools.samples.query_ids`)
``question``    the question (``query`` is accepted too); optional when the gold set has it
``answer``      the generated answer (a string; ``""`` is an answer with no statement)
``contexts``    the packed context, in order: a list of texts, of chunk ids, or of ``{id, text}``
                objects (``chunk_id``/``source`` and ``content``/``context`` are accepted too)
``context_ids`` optional ids of the contexts, in the same order (when ``contexts`` holds texts)
``citations``   optional ids the answer cites
``reference``   optional reference (expected) answer
``refused``     optional ``true``/``false``: the system's own word that it refused (abstained). ``true``
                makes the answer a refusal whatever it also states; otherwise an answer is a refusal
                when it makes no statement (docs/answers.md, "Abstention")

Presets read what the RAG tools write, with no conversion code (``--answers-format``):

=================  =============================================================================
``ragas``          RAGAS ``SingleTurnSample``: ``user_input``, ``response``, ``retrieved_contexts``,
                   ``retrieved_context_ids``, ``reference``
``ragas_legacy``   RAGAS 0.1 columns: ``question``, ``answer``, ``contexts``, ``ground_truth``
``deepeval``       DeepEval ``LLMTestCase``: ``input``, ``actual_output``, ``retrieval_context``
                   (strings or ``{context, source}``), ``expected_output``
``rankgate``       the canonical fields above
=================  =============================================================================

``--field NAME=PATH`` (repeatable, or comma-separated; ``--columns`` is its old spelling) maps fields
to where a file keeps them, as dotted paths into nested records (``question=inputs.question``,
``answer=outputs.answer``, ``contexts=outputs.docs[*].page_content``: ``[*]`` takes the field of every
list item, ``[0]`` one item), the one syntax of :mod:`rankgate._util.fields`; a column named with the
dots themselves (a flattened CSV) is found first. ``list_sep=SEP`` is no path: the delimiter of lists
joined in one cell. The containers are those of :mod:`rankgate.io.tools.records` (JSONL, JSON, CSV,
Parquet, Hugging Face folders).

Strings in ``contexts`` are ids when they name a chunk of the corpus given with ``--corpus`` (or,
without one, an item of the gold set); otherwise texts. A text's id is the corpus chunk with the
same normalised text, else :func:`rankgate.io.shapes.text_id` (the id RAGAS/DeepEval gold sets
get). An id whose text is neither logged nor in the corpus is an input error naming the line.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from rankgate._util.fields import field_path
from rankgate.io.formats import ANSWER_FIELDS, ANSWER_FORMATS
from rankgate.io.tools.records import Record, Records, fail, read_records
from rankgate.io.tools.samples import ID_KEYS, ToolShape, list_field, query_ids
from rankgate.io.shapes import normalise_text, text_id

__all__ = ["ANSWER_FIELDS", "ANSWER_FORMATS", "AnswerRecord", "Answers", "Context", "answer_fields", "read_answers"]


# field -> keys a preset looks for, in order
PRESETS: dict[str, dict[str, tuple[str, ...]]] = {
    "rankgate": {"query_id": ID_KEYS, "question": ("question", "query"), "answer": ("answer",),
                 "contexts": ("contexts",), "context_ids": ("context_ids",), "citations": ("citations",),
                 "reference": ("reference",), "refused": ("refused",)},
    "ragas": {"query_id": ID_KEYS, "question": ("user_input",), "answer": ("response",),
              "contexts": ("retrieved_contexts",), "context_ids": ("retrieved_context_ids",), "citations": (),
              "reference": ("reference",), "refused": ("refused",)},
    "ragas_legacy": {"query_id": ID_KEYS, "question": ("question",), "answer": ("answer",), "contexts": ("contexts",),
                     "context_ids": (), "citations": (), "reference": ("ground_truth", "ground_truths"),
                     "refused": ("refused",)},
    "deepeval": {"query_id": (*ID_KEYS, "name"), "question": ("input",), "answer": ("actual_output",),
                 "contexts": ("retrieval_context",), "context_ids": (), "citations": (),
                 "reference": ("expected_output",), "refused": ("refused",)},
}
_LABELS = {"rankgate": "rankgate answers", "ragas": "RAGAS", "ragas_legacy": "RAGAS (legacy columns)",
           "deepeval": "DeepEval"}
_SEPS = {"deepeval": ("|", "|", "custom_column_key_values")}  # DeepEval 4.x joins every list with "|"
_ID_OBJ = ("id", "chunk_id", "source", "doc_id")
_TEXT_OBJ = ("text", "content", "context", "page_content")


@dataclass(frozen=True)
class Context:
    """One packed context: its id (a chunk id, or ``t:`` + hash for a text-only context) and text."""

    id: str
    text: str


@dataclass(frozen=True)
class AnswerRecord:
    query_id: str
    question: str | None
    answer: str
    contexts: tuple[Context, ...]
    citations: tuple[str, ...] = ()
    reference: str | None = None
    line: int | None = None  # line (text files) or row (tables) it came from
    refused: bool | None = None  # the record's own refused: true/false; None when it does not say


@dataclass(frozen=True)
class Answers:
    source: str
    records: tuple[AnswerRecord, ...]
    format: str  # the preset read

    def __len__(self) -> int:
        return len(self.records)

    @property
    def query_ids(self) -> tuple[str, ...]:
        return tuple(r.query_id for r in self.records)


def detect_format(keys: set[str] | frozenset[str]) -> str | None:
    """The preset whose fields these are, or None."""
    if keys & {"user_input", "response", "retrieved_contexts", "retrieved_context_ids"}:
        return "ragas"
    if keys & {"actual_output", "retrieval_context"}:
        return "deepeval"
    if "answer" in keys and keys & set(ID_KEYS):
        return "rankgate"
    if {"question", "answer"} <= keys:
        return "ragas_legacy"
    return None


def _path_getter(path: str) -> Callable[[dict[str, Any]], Any]:
    """The value at ``path`` of a record (:meth:`rankgate._util.fields.FieldPath.get`)."""
    return field_path(path).get


def answer_fields(fields: Any = None, columns: Any = None) -> dict[str, str] | None:
    """Where the answers file keeps each field: ``fields`` (``--field``: ``{name: path}`` or ``NAME=PATH`` texts)
    and ``columns`` (``--columns``, its old spelling: ``NAME=PATH,...`` text) read with the one field syntax
    (:func:`rankgate._util.fields.parse_fields`), as one map; None when neither is given. ``list_sep`` is the
    delimiter of joined lists (a word such as ``semicolon``, or the characters), not a path."""
    from rankgate._util.fields import parse_fields
    from rankgate.errors import F, UsageError
    from rankgate.io.formats import LIST_SEP, LIST_SEP_WORDS, MAX_LIST_SEP

    names = (*ANSWER_FIELDS, LIST_SEP)
    out: dict[str, str] = {}
    for given, subject in ((columns, F.columns), (fields, F.fields)):
        if given is None:
            continue
        for name, path in parse_fields(given, names, command="answers", subject=subject, plain=(LIST_SEP,)).items():
            if name == LIST_SEP:
                path = LIST_SEP_WORDS.get(path.lower(), path)
                if len(path) > MAX_LIST_SEP:
                    raise UsageError(f"{subject}: list_sep must be at most {MAX_LIST_SEP} characters; got {len(path)}")
            if out.get(name, path) != path:
                raise UsageError(f"{F.columns} and {F.fields} map {name} to two places ({out[name]} and {path}); "
                                 f"give it once, with {F.fields}")
            out[name] = path
    return out or None


def _getters(recs: Records, fmt: str, columns: Mapping[str, str] | None) -> dict[str, Callable[[dict[str, Any]], Any]]:
    out: dict[str, Callable[[dict[str, Any]], Any]] = {}
    given = set(recs.columns)
    for name in ANSWER_FIELDS:
        if columns and name in columns:
            path = columns[name]
            if path not in given and field_path(path).head not in given:
                raise fail(recs.path, None, f"has no field {path!r} (mapped to {name} by --field); "
                           f"fields: {', '.join(recs.columns[:12])}", hint="check the --field map")
            out[name] = _path_getter(path)
            continue
        key = next((k for k in PRESETS[fmt][name] if k in given), None)
        if key is not None:
            out[name] = _path_getter(key)
    return out


def _shape(fmt: str, getters: Mapping[str, Any], columns: Mapping[str, str] | None) -> ToolShape:
    """The samples reader's description of this file, for ids and list cells."""
    sep, saved, marker = _SEPS.get(fmt, (None, None, None))
    if columns and columns.get("list_sep"):  # --field list_sep=SEP: the user's delimiter, in every file
        sep = saved = columns["list_sep"]
    qkeys = (columns["question"],) if columns and "question" in columns else PRESETS[fmt]["question"]
    ikeys = (columns["query_id"],) if columns and "query_id" in columns else PRESETS[fmt]["query_id"]
    unwrap = None
    if fmt == "deepeval":
        from rankgate.io.tools.deepeval import DEEPEVAL

        unwrap = DEEPEVAL.unwrap  # a RetrievedContextData as save_as writes it: its context text
    return ToolShape(name=fmt, label=_LABELS[fmt], query_keys=qkeys, gold_ids=None, gold_texts=(), run_ids=None,
                     run_texts=(), answer_keys=(), tool_keys=frozenset(), id_keys=ikeys, list_sep=sep, saved_sep=saved,
                     saved_marker=marker, unwrap=unwrap)


def _string(recs: Records, rec: Record, value: Any, field: str, *, required: bool) -> str | None:
    if isinstance(value, list) and field == "reference":  # RAGAS legacy ground_truths: a list of answers
        value = value[0] if value else None
    if value is None:
        if required:
            raise fail(recs.path, rec, "is missing", field=field, hint="every record needs the generated answer "
                       "(an empty string for an answer with no statement)")
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise fail(recs.path, rec, f"must be a string; got {json.dumps(value, default=str)[:60]}", field=field)
    return str(value)


_CELL_BOOLEANS = {"true": True, "false": False, "": None}


def _refused(recs: Records, rec: Record, value: Any) -> bool | None:
    """``refused``: true, false, or absent/null (the record does not say). A table cell (CSV) holds text, so
    there ``true``/``false`` (any case) or an empty cell; anything else is an input error naming the line."""
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):  # a numpy/Arrow scalar of a Parquet column
        value = value.item()
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str) and recs.container == "csv" and value.strip().lower() in _CELL_BOOLEANS:
        return _CELL_BOOLEANS[value.strip().lower()]
    raise fail(recs.path, rec, f"must be true or false; got {json.dumps(value, default=str)[:60]}", field="refused",
               hint="refused: true marks the answer as the system's refusal (it wins over any statement it makes); "
                    "leave the field out when the system does not say")


def _raw_list(recs: Records, rec: Record, value: Any, field: str, shape: ToolShape) -> list[Any] | None:
    """A list field: a list, or a CSV cell read as the samples readers read it."""
    if value is None:
        return None
    if isinstance(value, str):
        return list_field(recs, Record({field: value}, rec.line, rec.row), field, shape) or []
    if hasattr(value, "tolist") and not isinstance(value, list):
        value = value.tolist()
    if isinstance(value, tuple):
        value = list(value)
    if not isinstance(value, list):
        raise fail(recs.path, rec, f"must be a list; got {json.dumps(value, default=str)[:60]}", field=field)
    return value


class _Texts:
    """Where the texts of ids come from, and the ids of texts: the corpus, else the gold set's ids."""

    def __init__(self, corpus: Any, gold_ids: frozenset[str]) -> None:
        self.corpus = corpus
        self.gold_ids = gold_ids
        self._by_text: dict[str, str] | None = None

    def is_id(self, s: str) -> bool:
        return s in self.corpus if self.corpus is not None else s in self.gold_ids

    def text_of(self, cid: str) -> str | None:
        if self.corpus is None:
            return None
        i = self.corpus.index_of(cid)
        return None if i is None else self.corpus.text_at(i)

    def id_of(self, text: str) -> str:
        if self.corpus is not None:
            if self._by_text is None:
                self._by_text = {}
                for i, cid in enumerate(self.corpus.chunk_ids):
                    t = self.corpus.text_at(i)
                    if t is not None:
                        self._by_text.setdefault(normalise_text(t), cid)
            found = self._by_text.get(normalise_text(text))
            if found is not None:
                return found
        return text_id(text)


def _contexts(recs: Records, rec: Record, raw: list[Any] | None, ids: list[Any] | None, texts: _Texts) -> tuple[Context, ...]:
    out: list[Context] = []
    if raw is None and ids is None:
        raise fail(recs.path, rec, "is missing", field="contexts",
                   hint="log the packed context of each answer (texts, ids or {id, text} objects)")
    if ids is not None and raw is not None and len(ids) != len(raw) and raw:
        raise fail(recs.path, rec, f"lists {len(ids)} ids for {len(raw)} contexts", field="context_ids",
                   hint="give one id per context, in the same order")
    items: list[tuple[Any, Any]] = [(i, None) for i in ids] if ids is not None else [(None, c) for c in raw or []]
    if ids is not None and raw:
        items = list(zip(ids, raw))
    for pos, (cid, item) in enumerate(items):
        text: Any = None
        if isinstance(item, Mapping):
            cid = cid if cid is not None else next((item[k] for k in _ID_OBJ if item.get(k) not in (None, "")), None)
            text = next((item[k] for k in _TEXT_OBJ if item.get(k) is not None), None)
        elif isinstance(item, str):
            if cid is None and texts.is_id(item):
                cid = item
            else:
                text = item
        elif item is not None:
            raise fail(recs.path, rec, f"item {pos + 1} must be a text, an id or an {{id, text}} object; "
                       f"got {json.dumps(item, default=str)[:60]}", field="contexts")
        if cid is not None and (isinstance(cid, bool) or not isinstance(cid, (str, int))):
            raise fail(recs.path, rec, f"item {pos + 1} has id {cid!r}; ids are strings", field="contexts")
        if text is not None and not isinstance(text, str):
            raise fail(recs.path, rec, f"item {pos + 1} has a text that is not a string", field="contexts")
        if text is None:
            if cid is None:
                raise fail(recs.path, rec, f"item {pos + 1} has neither id nor text", field="contexts")
            text = texts.text_of(str(cid))
            if text is None:
                where = f"the corpus {texts.corpus.source}" if texts.corpus is not None else "the file"
                raise fail(recs.path, rec, f"context {str(cid)!r} has no text in {where}", field="contexts",
                           hint="log the context texts, or pass --corpus with the corpus the ids name"
                           if texts.corpus is None else "pass the corpus version the answers were generated from")
        out.append(Context(str(cid) if cid is not None else texts.id_of(text), text))
    return tuple(out)


def read_answers(path: str, *, format: str = "auto", columns: Mapping[str, str] | None = None, corpus: Any = None,
                 gold_ids: frozenset[str] = frozenset()) -> Answers:
    """Read answers from ``path`` (see module docs). ``corpus`` is a
    :class:`~rankgate.corpus.CorpusManifest` (texts of ids, ids of texts); ``gold_ids`` are the
    item ids of the gold set, so that ids are told from texts without a corpus."""
    from rankgate.errors import UsageError

    if format not in ANSWER_FORMATS:
        raise UsageError(f"unknown answers format {format!r}; expected one of: {', '.join(ANSWER_FORMATS)}")
    recs = read_records(path)
    if not recs.items:
        raise fail(path, None, "holds no answers", hint="one record per query: query_id, answer, contexts")
    fmt = format
    if fmt == "auto":
        fmt = detect_format(set(recs.columns)) or ("rankgate" if columns else "")
        if not fmt:
            raise fail(path, None, f"has fields {', '.join(recs.columns[:8])}: no answers shape rankgate knows",
                       hint="rankgate needs query_id, answer, contexts; RAGAS user_input/response/retrieved_contexts; "
                            "DeepEval input/actual_output/retrieval_context; or map yours with --field "
                            "question=PATH,answer=PATH,contexts=PATH")
    get = _getters(recs, fmt, columns)
    if "answer" not in get:
        raise fail(path, None, f"has no answer field for {_LABELS[fmt]} ({' or '.join(PRESETS[fmt]['answer'])}); "
                   f"fields: {', '.join(recs.columns[:12])}", hint="map it with --field answer=PATH")
    if "contexts" not in get and "context_ids" not in get:
        raise fail(path, None, f"has no contexts field for {_LABELS[fmt]} "
                   f"({' or '.join(PRESETS[fmt]['contexts'] + PRESETS[fmt]['context_ids'])})",
                   hint="log the packed context of each answer, or map it with --field contexts=PATH")
    shape = _shape(fmt, get, columns)
    view = recs
    if columns and ("query_id" in columns or "question" in columns):  # ids from mapped (possibly nested) fields
        items = [Record({**({"query_id": get["query_id"](r.data)} if "query_id" in get else {}),
                         **({"question": get["question"](r.data)} if "question" in get else {})}, r.line, r.row)
                 for r in recs.items]
        view = Records(recs.path, items, ["query_id", "question"], recs.container)
        shape = ToolShape(**{**shape.__dict__, "query_keys": ("question",), "id_keys": ("query_id",)})
    ids = query_ids(view, shape)
    texts = _Texts(corpus, gold_ids)
    out = []
    for rec, (qid, question) in zip(recs.items, ids):
        d = rec.data
        answer = _string(recs, rec, get["answer"](d), "answer", required=True)
        raw = _raw_list(recs, rec, get["contexts"](d), "contexts", shape) if "contexts" in get else None
        if raw and shape.unwrap is not None:
            raw = [shape.unwrap(c) if isinstance(c, str) else c for c in raw]
        cids = _raw_list(recs, rec, get["context_ids"](d), "context_ids", shape) if "context_ids" in get else None
        if cids is not None and not cids and raw:
            cids = None
        contexts = _contexts(recs, rec, raw, cids, texts)
        cites = _raw_list(recs, rec, get["citations"](d), "citations", shape) if "citations" in get else None
        reference = _string(recs, rec, get["reference"](d), "reference", required=False) if "reference" in get else None
        refused = _refused(recs, rec, get["refused"](d)) if "refused" in get else None
        out.append(AnswerRecord(qid, question, answer or "", contexts, tuple(str(c) for c in cites or ()),
                                reference if reference and reference.strip() else None, rec.line or rec.row,
                                refused))
    return Answers(path, tuple(out), fmt)
