"""The gold-set and run formats as one table, with no import cost: the CLI builds ``--gold-format`` and
``--run-format`` choices from it, and :func:`rankgate.io.detect.detect` picks a row for a file with it.

Each :class:`Format` row names its readers and its sniffer as ``"module:function"`` strings, imported
only when a file of that format is read, so ``import rankgate`` stays light. A third-party package adds
a row through the ``rankgate.formats`` entry-point group (docs/formats.md, "Adding a format").
The shapes of the RAG tools' files (RAGAS, DeepEval, LlamaIndex) are in :mod:`rankgate.io.shapes`.
"""

from __future__ import annotations

__all__ = ["ANSWER_FIELDS", "ANSWER_FORMATS", "COLUMN_FIELDS", "FALLBACK", "FORMATS", "FORMAT_NAMES", "Format",
           "GOLD_FORMATS", "LIST_SEP_WORDS", "RUN_FORMATS", "all_formats", "formats_for", "get_format", "plugin_formats",
           "parse_columns", "split_list_sep"]

from typing import NamedTuple


class Format(NamedTuple):
    """One input format of gold sets and runs.

    ``extensions``: file endings that pick the row (``.gz`` is stripped first), unless a row ahead of it
    in the table sniffs the file as its own; ``sniff``: ``"module:function"`` called with a
    :class:`rankgate.io.detect.Probe`, true when the file is in this format (rows are sniffed in table
    order, first match wins); ``gold``/``run``: ``"module:function"`` readers called as
    ``read(path, name, columns, list_sep)`` returning a :class:`~rankgate.io.Gold` /
    :class:`~rankgate.io.Run` (None: the format holds no such thing); ``description``: how errors name
    it; ``reads_empty``: the reader reports an empty file itself (else detection refuses it as empty);
    ``explain``: when the format was forced and reading fails, the error's hint names the format the
    file's fields look like. A plug-in's row is tried after the built-in rows, before the fallback.
    """

    name: str
    extensions: tuple[str, ...]
    sniff: str | None
    gold: str | None = None
    run: str | None = None
    description: str = ""
    reads_empty: bool = True
    explain: bool = False


_D = "rankgate.io.detect:"
_L = "rankgate.io.load:"
_T = "rankgate.io.tools.read:"

FORMATS: tuple[Format, ...] = (
    Format("hf", (), _D + "sniff_hf", _T + "read_gold", _T + "read_run",
           "a Hugging Face save_to_disk folder"),
    Format("csv", (".csv",), _D + "sniff_csv", _T + "read_gold", _T + "read_run",
           "a CSV/TSV table with a header (columns= maps its columns)", reads_empty=False),
    Format("ragas", (), _D + "sniff_ragas", _T + "read_gold", _T + "read_run", "a RAGAS dataset"),
    Format("deepeval", (), _D + "sniff_deepeval", _T + "read_gold", _T + "read_run", "a DeepEval dataset"),
    Format("llamaindex", (), _D + "sniff_llamaindex", _T + "read_gold", _T + "read_run",
           "a LlamaIndex EmbeddingQAFinetuneDataset or RetrieverEvaluator results"),
    Format("samples", (".yaml", ".yml"), _D + "sniff_samples", _L + "read_samples_gold", _L + "read_samples_run",
           "the sample contract's samples and outputs (YAML or JSON)"),
    Format("parquet", (".parquet", ".pq"), _D + "sniff_parquet", _L + "read_parquet_gold", _L + "read_parquet_run",
           "a long table in Parquet", explain=True),
    Format("beir", (".tsv",), _D + "sniff_beir", _L + "read_beir_gold", None,
           "BEIR qrels (qrels/*.tsv or a BEIR folder)", explain=True),
    Format("jsonl", (".jsonl", ".ndjson", ".json"), _D + "sniff_json", _L + "read_jsonl_gold", _L + "read_jsonl_run",
           "rankgate's JSON lines (or one JSON array)", explain=True),
    Format("trec", (), None, _L + "read_trec_gold", _L + "read_trec_run",
           "TREC qrels / a TREC run (whitespace-separated columns)", reads_empty=False, explain=True),
)
FALLBACK = "trec"  # the row of a file that no extension or sniffer claims
FORMAT_NAMES = tuple(f.name for f in FORMATS)

# the --gold-format / --run-format choices: in the order users read them (the table's order is the sniffing order)
_CHOICE_ORDER = ("jsonl", "trec", "beir", "parquet", "csv", "ragas", "deepeval", "llamaindex", "hf", "samples")
GOLD_FORMATS = tuple(n for n in _CHOICE_ORDER if FORMATS[FORMAT_NAMES.index(n)].gold)
RUN_FORMATS = tuple(n for n in _CHOICE_ORDER if FORMATS[FORMAT_NAMES.index(n)].run)

ENTRY_POINT_GROUP = "rankgate.formats"


def plugin_formats() -> tuple[Format, ...]:
    """The rows third-party packages add through the ``rankgate.formats`` entry-point group (read
    once per process, and only when a file is not one of the built-in formats)."""
    from rankgate.errors import UsageError
    from rankgate._util.plugins import entry_point_objects

    rows: list[Format] = []
    for name, row in entry_point_objects(ENTRY_POINT_GROUP, "format").items():
        if not isinstance(row, Format):
            raise UsageError(f"format plug-in {name!r} (entry-point group {ENTRY_POINT_GROUP}) gave a "
                             f"{type(row).__name__}, not a rankgate.io.formats.Format")
        if row.name in FORMAT_NAMES or any(r.name == row.name for r in rows):
            raise UsageError(f"format plug-in {name!r} (entry-point group {ENTRY_POINT_GROUP}) names format "
                             f"{row.name!r}, which is already taken")
        if not (row.gold or row.run):
            raise UsageError(f"format plug-in {name!r} (entry-point group {ENTRY_POINT_GROUP}): format "
                             f"{row.name!r} has neither a gold nor a run reader")
        rows.append(row)
    return tuple(rows)


def all_formats() -> tuple[Format, ...]:
    """The built-in rows, then the plug-ins' rows."""
    return FORMATS + plugin_formats()


def formats_for(noun: str) -> tuple[str, ...]:
    """The names ``format=`` accepts for a ``noun`` ("gold" or "run"): built-in, then plug-ins."""
    builtin = GOLD_FORMATS if noun == "gold" else RUN_FORMATS
    return builtin + tuple(r.name for r in plugin_formats() if getattr(r, noun))


def get_format(name: str) -> Format:
    """The row named ``name`` (built-in or from a plug-in); KeyError when there is none."""
    for row in FORMATS:
        if row.name == name:
            return row
    for row in plugin_formats():
        if row.name == name:
            return row
    raise KeyError(name)


# Fields a CSV/TSV column can be mapped to with --columns FIELD=COLUMN,...
COLUMN_FIELDS = ("query_id", "chunk_id", "grade", "score", "rank", "query", "doc_version", "text", "note")
# Not a column: the delimiter of lists joined in one cell (DeepEval's CSV/JSONL: "|"), as
# --columns list_sep=SEP; a delimiter that --columns itself uses is named by a word.
LIST_SEP = "list_sep"
LIST_SEP_WORDS = {"comma": ",", "semicolon": ";", "pipe": "|", "tab": "\t", "equals": "="}
MAX_LIST_SEP = 16
# Answers (rankgate answers): presets, and the fields --columns maps (see rankgate.io.answers)
ANSWER_FORMATS = ("auto", "rankgate", "ragas", "ragas_legacy", "deepeval")
ANSWER_FIELDS = ("query_id", "question", "answer", "contexts", "context_ids", "citations", "reference", "refused")


def parse_columns(spec: str | None, fields: tuple[str, ...] = COLUMN_FIELDS) -> dict[str, str] | None:
    """``"query_id=qid,chunk_id=doc"`` -> ``{"query_id": "qid", "chunk_id": "doc"}``; a UsageError
    names the first part that is not ``FIELD=COLUMN`` with a known field (one of ``fields``: the
    answers reader passes its own, :data:`rankgate.io.answers.ANSWER_FIELDS`)."""
    if spec is None:
        return None
    from rankgate.errors import F, UsageError

    out: dict[str, str] = {}
    for part in spec.split(","):
        if not part.strip():
            continue
        name, eq, column = part.partition("=")
        name, column = name.strip(), column.strip()
        if not eq or not name or not column:
            raise UsageError(f"{F.columns}: {part.strip()!r} is not FIELD=COLUMN (e.g. query_id=qid,chunk_id=doc,score=s)")
        if name == LIST_SEP:
            column = LIST_SEP_WORDS.get(column.lower(), column)
            if len(column) > MAX_LIST_SEP:
                raise UsageError(f"{F.columns}: list_sep must be at most {MAX_LIST_SEP} characters; got {len(column)}")
        elif name not in fields:
            raise UsageError(f"{F.columns}: unknown field {name!r}; fields: {', '.join(fields)} "
                             "(and list_sep, the delimiter of lists joined in one cell)")
        if name in out:
            raise UsageError(f"{F.columns}: field {name!r} is mapped twice")
        out[name] = column
    if not out:
        raise UsageError(f"{F.columns} is empty; give FIELD=COLUMN pairs, e.g. query_id=qid,chunk_id=doc")
    return out


def split_list_sep(columns: dict[str, str] | None) -> tuple[dict[str, str] | None, str | None]:
    """(the column map without ``list_sep``, the ``list_sep`` delimiter or None): the delimiter is an
    option of the RAG tools' readers, not a column, so a map holding only it maps no column."""
    if not columns or LIST_SEP not in columns:
        return columns, None
    rest = {k: v for k, v in columns.items() if k != LIST_SEP}
    sep = columns[LIST_SEP]
    if not isinstance(sep, str) or not sep or len(sep) > MAX_LIST_SEP:
        from rankgate.errors import UsageError

        raise UsageError(f"list_sep must be a non-empty string of at most {MAX_LIST_SEP} characters; got {sep!r}"[:120])
    return rest or None, LIST_SEP_WORDS.get(sep.lower(), sep)
