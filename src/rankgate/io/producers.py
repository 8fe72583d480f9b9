"""Retrieved items as the retrieval libraries hand them over, read as rankgate's items.

A ranking or a list of relevant items may hold, instead of ``{"chunk_id", "score", "text"}`` objects, what
a LlamaIndex or LangChain user has in hand: the objects themselves (Python) or their JSON dumps (files).
Each is read by its field or attribute names alone; no library is imported.

==================================================  ==========================================  ==============
item                                                id                                          text, score
==================================================  ==========================================  ==============
LlamaIndex ``NodeWithScore`` (object, ``model_dump``  ``node.id_`` (``node.node_id``)            ``node.text``,
/ ``to_dict``)                                                                                  ``score``
LlamaIndex ``TextNode`` and other nodes              ``id_`` (``node_id``)                       ``text``
LangChain ``Document`` (object, ``model_dump``)      ``id``; when it is null, the first of       ``page_content``
                                                     :data:`METADATA_ID_KEYS` in ``metadata``
LangChain ``dumpd()`` / ``dumps()`` of a Document    as a Document, from its ``kwargs``
a ``(document, score)`` pair (LangChain's            the document's                              the pair's score
``similarity_search_with_score``)
==================================================  ==========================================  ==============

The producer's list order is kept: the line-by-line parser ranks by score where every item has one
(equal scores in list order), else in list order, as for any JSON run. A LangChain document's
``metadata["source"]`` names a file that several chunks share, so it is never taken as an id unless the
user says so (``--field id=metadata.source``).

A RetrieverEvaluator result (``RetrievalEvalResult``: ``query``, ``expected_ids``, ``retrieved_ids``…) is a
gold set and a run at once; :func:`result_record` turns the object into the dict its ``model_dump()``
gives, which the ``llamaindex`` format reads (:mod:`rankgate.io.tools.llamaindex`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

__all__ = ["ITEM_MARKERS", "METADATA_ID_KEYS", "ProducerItem", "no_id_error", "producer_item", "result_record"]

ITEM_MARKERS = frozenset({"node", "id_", "page_content", "lc", "kwargs"})
"""Keys that make a JSON item a producer's dump rather than rankgate's ``{"chunk_id", ...}``: the JSON
readers (and the fast path, which declines such files) look for them."""
METADATA_ID_KEYS = ("chunk_id", "doc_id", "id", "node_id", "document_id", "docid", "_id")
"""The keys of a LangChain document's ``metadata`` that hold its id when the document's own ``id`` is null."""
RESULT_FIELDS = ("query", "expected_ids", "expected_texts", "retrieved_ids", "retrieved_texts", "mode")


class ProducerItem(NamedTuple):
    """One item read from a producer's object or dump. ``id`` None: none found (``kind`` and
    ``metadata_keys`` say what was looked at, for the error)."""

    id: Any
    text: str | None
    score: Any
    kind: str  # "NodeWithScore", "TextNode", "Document"
    metadata_keys: tuple[str, ...] = ()


def _get(obj: Any, name: str) -> Any:
    """A dict's key or an object's attribute (None when absent; a property that raises counts as absent)."""
    if isinstance(obj, Mapping):
        return obj.get(name)
    try:
        return getattr(obj, name, None)
    except Exception:  # noqa: BLE001  (a library's property may raise anything; it then holds nothing)
        return None


def _has(obj: Any, name: str) -> bool:
    if isinstance(obj, Mapping):
        return name in obj
    try:
        return hasattr(obj, name)
    except Exception:  # noqa: BLE001
        return False


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _lc_kwargs(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The constructor arguments of LangChain's serialised form (``dumpd``: ``{"lc": 1, "type":
    "constructor", "id": [...], "kwargs": {...}}``), or None for anything else."""
    kwargs = obj.get("kwargs")
    if obj.get("lc") is not None and obj.get("type") == "constructor" and isinstance(kwargs, Mapping):
        return kwargs
    return None


def _node(node: Any, score: Any, kind: str) -> ProducerItem:
    nid = _get(node, "id_")
    if nid is None:
        nid = _get(node, "node_id")
    return ProducerItem(nid, _text(_get(node, "text")), score, kind)


def _document(doc: Any, score: Any) -> ProducerItem:
    did = _get(doc, "id")
    meta = _get(doc, "metadata")
    keys: tuple[str, ...] = ()
    if did is None or did == "":
        did = None
        if isinstance(meta, Mapping):
            keys = tuple(str(k) for k in meta)
            did = next((meta[k] for k in METADATA_ID_KEYS if meta.get(k) not in (None, "")), None)
    return ProducerItem(did, _text(_get(doc, "page_content")), score, "Document", keys)


def producer_item(item: Any) -> ProducerItem | None:
    """``item`` read as a producer's item (see the module docs), or None when it is none of them."""
    if isinstance(item, (str, bytes, int, float, bool)) or item is None:
        return None
    if isinstance(item, (tuple, list)):
        if len(item) == 2 and not isinstance(item[0], (str, int, float, list, tuple)) and item[0] is not None:
            inner = producer_item(item[0])  # (document, score): LangChain's similarity_search_with_score
            if inner is not None and inner.score is None:
                return inner._replace(score=item[1])
        return None
    if isinstance(item, Mapping):
        kwargs = _lc_kwargs(item)
        if kwargs is not None:
            if "page_content" in kwargs:
                return _document(kwargs, None)
            name = item.get("id")
            name = name[-1] if isinstance(name, list) and name and isinstance(name[-1], str) else "object"
            return ProducerItem(None, None, None, f"serialised {name}")
        if item.get("lc") is not None and "id" in item and isinstance(item.get("id"), list):
            return ProducerItem(None, None, None, f"serialised object ({item.get('type')!r})")
    node = _get(item, "node")
    if node is not None and not isinstance(node, (str, int, float, bool, list)) and (_has(node, "id_") or _has(node, "node_id")):
        return _node(node, _get(item, "score"), "NodeWithScore")
    if _has(item, "page_content"):
        return _document(item, None)
    if _has(item, "id_"):
        return _node(item, None, "TextNode")
    return None


def no_id_error(item: ProducerItem) -> tuple[str, str]:
    """(message, hint) for a producer's item without an id."""
    if item.kind.startswith("serialised"):
        return (f"is LangChain's {item.kind} (dumpd/dumps), not a Document: it has no id or page_content",
                "dump the retrieved Documents themselves: dumpd(documents), or [d.model_dump() for d in documents]")
    if item.kind == "Document":
        keys = ", ".join(item.metadata_keys[:8]) or "none"
        return (f"is a LangChain Document with no id: its id is null and its metadata has none of "
                f"{', '.join(METADATA_ID_KEYS[:4])} (metadata keys: {keys})",
                "give the documents ids (Document(id=...)), or say which metadata key holds it: "
                "--field id=metadata.KEY (fields={'id': 'metadata.KEY'} in Python)")
    return (f"is a LlamaIndex {item.kind} whose node has no id_",
            "dump the nodes with model_dump() or to_dict(), which keep id_")


def result_record(obj: Any) -> dict[str, Any] | None:
    """A LlamaIndex ``RetrievalEvalResult`` object (anything with ``expected_ids`` and ``retrieved_ids``
    attributes) as the dict its ``model_dump()`` gives, for the ``llamaindex`` format's reader; None for
    anything else (a dict, a record of another shape)."""
    if isinstance(obj, (Mapping, str, bytes, list, tuple)) or not (_has(obj, "expected_ids") and _has(obj, "retrieved_ids")):
        return None
    out = {name: _get(obj, name) for name in RESULT_FIELDS}
    for name in ("query_id", "id"):  # (a subclass or wrapper that carries the query's id)
        if _get(obj, name) is not None:
            out["query_id"] = _get(obj, name)
            break
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in out.items() if v is not None}
