"""The corpus manifest's column names and status words, shared by the row reader
(:mod:`.manifest`), the columnar fast path (:mod:`.columnar`) and the model (:mod:`.model`)."""

from __future__ import annotations

__all__ = ["EITHER_COLUMNS", "ID_KEYS", "STATUSES", "STATUS_SYNONYMS", "STRING_COLUMNS"]

#: The statuses a chunk can have, and the words read as each (case and surrounding spaces ignored).

STATUSES = ("active", "deprecated", "superseded", "retired")
STATUS_SYNONYMS = {"current": "active", "active": "active", "live": "active", "deprecated": "deprecated",
             "superseded": "superseded", "retired": "retired", "deleted": "retired", "removed": "retired"}
#: The fields a chunk id may be given in, in order of preference.
ID_KEYS = ("chunk_id", "_id", "id")
#: The other columns read, each a string (``version`` and ``content`` are synonyms, see EITHER_COLUMNS).
STRING_COLUMNS = ("doc_id", "doc_version", "version", "status", "superseded_by", "tenant", "content_hash", "text",
                   "content")
#: Pairs of synonymous columns: a file gives one of each pair.
EITHER_COLUMNS = (("doc_version", "version"), ("text", "content"))
