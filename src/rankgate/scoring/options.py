"""How runs are scored: :class:`Scoring` (the engine's options as one value), defined once, and the reader of
the chunk→document map file it may name.

:func:`rankgate.evaluate` takes one (``scoring=``), the flows' requests hold one, and the command line builds one
from its scoring flags.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rankgate._util.constraints import DEDUPE, FLAG, K, LEVEL, PATH, TEXT, Param, Shape, check

__all__ = ["DEFAULT_METRICS", "Scoring", "load_doc_map"]

DEFAULT_METRICS = "hit@5,recall@5,precision@5,mrr,ndcg@10"


#: :class:`Scoring`'s ``doc_map`` (a file) and ``columns`` (the ``--columns`` text).
_DOC_MAP_FILE = Param("doc_map", Shape("a path to a doc map file (TSV chunk_id<TAB>doc_id, or one JSON object)",
                                       PATH.read), None, optional=True)
_COLUMNS_TEXT = Param("columns", Shape("the --columns text, e.g. 'query_id=qid,chunk_id=doc' (rankgate.evaluate "
                                       "takes a mapping)", lambda v: v if isinstance(v, str) else None),
                      None, optional=True)


@dataclass(frozen=True)
class Scoring:
    """How runs are scored: the options of :func:`rankgate.evaluate`, with ``doc_map`` a file and
    ``columns`` the ``--columns`` text (``query_id=qid,chunk_id=doc``); ``fields`` says where fields live
    (``{"id": "metadata.doc_id"}``, the ``--field`` options; :mod:`rankgate.io.mapped`)."""

    metrics: str | Sequence[str] = DEFAULT_METRICS
    k: int | None = None
    trec: bool = False
    complete: bool = False
    level: str = "chunk"
    doc_sep: str = "#"
    doc_map: str | None = None
    dedupe: str = "error"
    gold_format: str | None = None
    run_format: str | None = None
    ties: str | None = None
    columns: str | None = None
    fields: Mapping[str, str] | None = field(default=None, hash=False)

    def __post_init__(self) -> None:
        from rankgate.model.ranking import check_ties
        from rankgate.metrics.spec import METRICS

        def put(attr: str, value: Any) -> None:
            object.__setattr__(self, attr, value)

        # Every field checked here, once (a UsageError naming it; numpy scalars made plain): the metrics are
        # specs, ``doc_map`` a file and ``columns`` the --columns text (rankgate.evaluate takes mappings).
        put("metrics", check(METRICS, self.metrics, caller="Scoring"))
        if self.k is not None:
            put("k", check(K, self.k, caller="Scoring", field="k"))
        for attr in ("trec", "complete"):
            put(attr, check(FLAG, getattr(self, attr), caller="Scoring", name=attr))
        put("level", check(LEVEL, self.level, caller="Scoring"))
        put("dedupe", check(DEDUPE, self.dedupe, caller="Scoring"))
        for attr in ("doc_sep", "gold_format", "run_format"):
            put(attr, check(TEXT, getattr(self, attr), caller="Scoring", name=attr))
        put("doc_map", check(_DOC_MAP_FILE, self.doc_map, caller="Scoring"))
        put("columns", check(_COLUMNS_TEXT, self.columns, caller="Scoring"))
        if self.fields is not None:
            from rankgate.io.mapped import check_fields

            put("fields", check_fields(self.fields, command="Scoring"))
        if self.ties is not None:
            put("ties", check_ties(check(TEXT, self.ties, caller="Scoring", name="ties")))

    def column_map(self) -> dict[str, str] | None:
        from rankgate.io.formats import parse_columns

        return parse_columns(self.columns)


def load_doc_map(path: str | None) -> dict[str, str] | None:
    """The chunk→document map of a ``--doc-map`` file: TSV ``chunk_id<TAB>doc_id`` or one JSON object."""
    if path is None:
        return None
    import json

    from rankgate.io.source import check_file, text_lines
    from rankgate.errors import InputError

    check_file(path, "doc map")
    lines = list(text_lines(path))  # a byte that is not UTF-8 is an error naming its line
    text = "".join(line for _, line in lines)
    if not text.strip():  # (a pipe, which check_file cannot size)
        raise InputError("is empty", path=path, hint="the doc map file has no content")
    if text.lstrip().startswith("{"):
        from rankgate.io.jsonl import check_surrogates

        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"is not valid JSON: {exc.msg}", path=path, line=exc.lineno) from None
        except (RecursionError, ValueError):  # nesting past the stack, an integer of thousands of digits
            raise InputError("is not a JSON object that can be read (nesting too deep or a number too long)",
                             path=path) from None
        if not isinstance(data, dict):
            raise InputError("must be one JSON object {chunk_id: doc_id}", path=path)
        check_surrogates(text, data, path, None)
        for key, value in data.items():
            if not isinstance(value, str) or not value.strip() or not key.strip():
                raise InputError(f"maps {key!r} to {value!r}; expected a non-empty document id string"[:160],
                                 path=path, field=key[:80])
        return dict(data)
    out: dict[str, str] = {}
    first: dict[str, int] = {}
    for lineno, line in lines:
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.rstrip("\r\n").split("\t")
        if len(parts) != 2:
            raise InputError(f"has {len(parts)} tab-separated columns; expected 2 (chunk_id, doc_id)", path=path, line=lineno)
        if not parts[0].strip() or not parts[1].strip():
            raise InputError(f"has an empty {'chunk' if not parts[0].strip() else 'document'} id", path=path,
                             line=lineno, hint="each line is 'chunk_id<TAB>doc_id', both non-empty")
        if parts[0] in out and out[parts[0]] != parts[1]:
            raise InputError(f"maps {parts[0]!r} to {parts[1]!r}, but line {first[parts[0]]} maps it to "
                             f"{out[parts[0]]!r}"[:200], path=path, line=lineno, hint="a chunk belongs to one document")
        out[parts[0]] = parts[1]
        first.setdefault(parts[0], lineno)
    return out
