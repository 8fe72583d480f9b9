"""Which row of the format table (:mod:`rankgate.io.formats`) a gold or run file is in.

Lookup order: an explicit ``format=``; else, for a file, the row its extension names (``.gz`` stripped
first; an extension picks a row only for the nouns it reads), unless a row ahead of it in the table
sniffs the file as its own; else the rows' sniffers in table order; else the rows plug-ins add
(``rankgate.formats``: by an extension no built-in row uses, or by their sniffers); else the fallback
row (TREC), which a ``.trec`` or ``.qrels`` ending names before any plug-in is asked. A folder is a
Hugging Face ``save_to_disk`` folder or a BEIR folder (or a plug-in's), else an error. A file that
is empty is refused here unless the row its extension names reports emptiness itself. The plug-ins
are looked up only when the built-in rows do not decide, so reading a file in a built-in format
costs no scan of the installed packages.

The sniffers look at a :class:`Probe`: the file's container (``folder``, ``parquet`` by extension or
magic bytes, ``table`` for ``.csv``/``.tsv``, ``json``, ``yaml``, else ``json`` when the first byte that
is not whitespace or a byte-order mark is ``{`` or ``[``, else ``text``) and, read only when asked,
its first line and the field names of its first record.
"""

from __future__ import annotations

import functools
import importlib
import os
from collections.abc import Callable, Sequence
from typing import Any

from rankgate.errors import InputError, UsageError
from rankgate.io.formats import FALLBACK, FORMATS, GOLD_FORMATS, RUN_FORMATS, Format, all_formats, formats_for, get_format, plugin_formats

__all__ = ["Probe", "check_format", "detect", "format_row"]

_PARQUET_EXTS = (".parquet", ".pq")
_TABLE_EXTS = (".csv", ".tsv")
_JSON_EXTS = (".jsonl", ".ndjson", ".json")
_YAML_EXTS = (".yaml", ".yml")
_BUILTIN_EXTENSIONS = frozenset(e for row in FORMATS for e in row.extensions)
_TREC_EXTENSIONS = frozenset((".trec", ".qrels"))
"""Endings that name the fallback row (TREC) itself: no plug-in is asked about such a file."""


class Probe:
    """What the sniffers may ask of one file or folder; each answer is read once, when first asked."""

    def __init__(self, path: str, noun: str) -> None:
        self.path = path
        self.noun = noun  # "gold" or "run"
        self.ext = os.path.splitext(path.removesuffix(".gz"))[1].lower()
        self.is_dir = os.path.isdir(path)

    @functools.cached_property
    def first_byte(self) -> bytes:
        from rankgate.io.source import first_byte

        return first_byte(self.path)

    @functools.cached_property
    def container(self) -> str:
        from rankgate.io.source import PARQUET_MAGIC, magic

        if self.is_dir:
            return "folder"
        if self.ext in _PARQUET_EXTS or magic(self.path) == PARQUET_MAGIC:
            return "parquet"
        if self.ext in _TABLE_EXTS:
            return "table"
        if self.ext in _JSON_EXTS:
            return "json"
        if self.ext in _YAML_EXTS:
            return "yaml"
        return "json" if self.first_byte in (b"{", b"[") else "text"

    @functools.cached_property
    def first_line(self) -> str:
        """The first line that is not blank, without a byte-order mark ("" when unreadable)."""
        from rankgate.io.tools.read import first_line

        return first_line(self.path)

    @functools.cached_property
    def shape(self) -> str | None:
        """The shape of the first record's fields (:func:`rankgate.io.shapes.shape_of`) of a JSON or
        Parquet file; None for other containers or when they do not say."""
        from rankgate.io.tools.read import json_shape, table_shape

        if self.container == "json":
            return json_shape(self.path)
        if self.container == "parquet":
            return table_shape(self.path)
        return None


# The built-in sniffers (named in the table as "rankgate.io.detect:sniff_…")

def sniff_hf(probe: Probe) -> bool:
    from rankgate.io.tools.records import is_hf_folder

    return probe.is_dir and is_hf_folder(probe.path)


def sniff_beir(probe: Probe) -> bool:
    from rankgate.io.trec import has_beir_qrels

    return probe.is_dir and probe.noun == "gold" and has_beir_qrels(probe.path)


def sniff_csv(probe: Probe) -> bool:
    """A text table whose header names a field rankgate knows (BEIR qrels' header keeps its reader)."""
    from rankgate.io.tools.read import BEIR_HEADER, TABLE_WORDS

    if probe.container not in ("table", "text"):
        return False
    first = probe.first_line.rstrip("\r\n")
    names = [n.strip().lower() for n in first.split("\t" if "\t" in first or probe.ext == ".tsv" else ",")]
    if probe.noun == "gold" and tuple(names[:3]) == BEIR_HEADER:
        return False
    return bool(TABLE_WORDS & set(names))


def sniff_ragas(probe: Probe) -> bool:
    return probe.shape == "ragas"


def sniff_deepeval(probe: Probe) -> bool:
    return probe.shape == "deepeval"


def sniff_llamaindex(probe: Probe) -> bool:
    """An EmbeddingQAFinetuneDataset, or RetrieverEvaluator results (a JSON list or JSON lines)."""
    return probe.shape in ("llamaindex", "llamaindex_results")


def sniff_samples(probe: Probe) -> bool:
    from rankgate.io.tools.contract import is_contract_json

    return probe.container == "json" and is_contract_json(probe.path, probe.noun)


def sniff_parquet(probe: Probe) -> bool:
    return probe.container == "parquet"


def sniff_json(probe: Probe) -> bool:
    """JSON lines (or one JSON document); a ``.tsv`` run that begins with ``{`` or ``[`` too."""
    return probe.container == "json" or (probe.container == "table" and probe.first_byte in (b"{", b"["))


@functools.lru_cache(maxsize=256)
def _function(spec: str) -> Callable[..., Any]:
    """The function a table row names as ``"module:function"`` (imported on first use)."""
    module, _, name = spec.partition(":")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise UsageError(f"format function {spec!r} cannot be loaded: {exc}") from None


def call(spec: str, *args: Any) -> Any:
    """Call the ``"module:function"`` a table row names."""
    return _function(spec)(*args)


def check_format(fmt: str | None, noun: str) -> None:
    """A UsageError when ``fmt`` is given and names no format that reads a ``noun``; it lists the formats."""
    if fmt is None or fmt in (GOLD_FORMATS if noun == "gold" else RUN_FORMATS):
        return
    allowed = formats_for(noun)
    if fmt not in allowed:
        raise UsageError(f"unknown {noun} format {fmt!r}; expected one of: {', '.join(allowed)}")


def format_row(name: str) -> Format:
    try:
        return get_format(name)
    except KeyError:
        raise UsageError(f"unknown format {name!r}; formats: {', '.join(r.name for r in all_formats())}") from None


def _sniffed(rows: Sequence[Format], probe: Probe) -> Format | None:
    return next((row for row in rows if row.sniff is not None and call(row.sniff, probe)), None)


def _by_extension(rows: Sequence[Format], probe: Probe) -> Format | None:
    return next((r for r in rows if probe.ext and probe.ext in r.extensions and getattr(r, probe.noun)), None)


def detect(path: str, noun: str, format: str | None = None) -> Format:
    """The table row for ``path`` read as a ``noun`` ("gold" or "run"); see the module docs."""
    if format is not None:
        check_format(format, noun)
        return format_row(format)
    probe = Probe(path, noun)
    if probe.is_dir:
        row = _sniffed(FORMATS, probe) or _sniffed(plugin_formats(), probe)
        if row is not None:
            return row
        raise InputError("is a folder", path=path, hint=f"pass the {noun} file itself")
    by_ext = _by_extension(FORMATS, probe)
    trec_named = probe.ext in _TREC_EXTENSIONS
    if by_ext is None and probe.ext and probe.ext not in _BUILTIN_EXTENSIONS and not trec_named:
        mine = _by_extension(plugin_formats(), probe)
        if mine is not None:
            return mine
    if (by_ext is None or not by_ext.reads_empty) and not probe.first_byte:
        raise InputError("is empty", path=path, hint=f"the {noun} file has no content")
    fallback = None
    for row in FORMATS:
        if row.name == FALLBACK:
            fallback = row
        elif row is by_ext or (row.sniff is not None and call(row.sniff, probe)):
            return row
    return (None if trec_named else _sniffed(plugin_formats(), probe)) or fallback or format_row(FALLBACK)
