"""The corpus manifest's model: one record per chunk (:class:`ChunkRecord`), the manifest of one
corpus version held as columns (:class:`CorpusManifest`), and how two versions differ
(:class:`CorpusDiff`). The readers that fill it are :mod:`.manifest` and :mod:`.columnar`."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from rankgate.errors import InputError
from rankgate.corpus.schema import STATUSES

__all__ = ["ChunkRecord", "CorpusDiff", "CorpusManifest", "content_hash", "version_key"]


def version_key(version: str | None) -> tuple[Any, ...]:
    """Sort key of a document version: digit runs compare as numbers (``v9`` < ``v10``)."""
    if version is None:
        return ()
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.findall(r"\d+|\D+", version))


def content_hash(text: str) -> str:
    """sha256 (hex) of the UTF-8 text: the content hash the manifest computes when none is given."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ChunkRecord:
    chunk_id: str
    doc_id: str
    doc_version: str | None
    status: str
    superseded_by: str | None
    tenant: str | None
    content_hash: str | None
    text: str | None


class _Column(Sequence[Any]):
    """An arrow string array read as a list of Python values, one value at a time (a million-chunk
    corpus is looked up by a few thousand labels; turning every column into Python objects would cost
    more than the lookups)."""

    __slots__ = ("array",)

    def __init__(self, array: Any) -> None:
        self.array = array

    def __len__(self) -> int:
        return len(self.array)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return self.array[i].to_pylist()
        return self.array[i].as_py()

    def __iter__(self) -> Iterator[Any]:
        return iter(self.array.to_pylist())


class CorpusManifest:
    """The chunks of one corpus version, stored by column; look chunks up by id with ``in``/:meth:`get`.

    Content hashes that the source did not give are computed from the text when first asked for
    (:meth:`hash_at`), so reading a million chunks does not hash a million texts that no label uses.
    """

    __slots__ = (
        "_docs",
        "_hashes",
        "_index",
        "_latest",
        "_multi",
        "_texts",
        "chunk_ids",
        "doc_ids",
        "doc_versions",
        "source",
        "statuses",
        "superseded_by",
        "tenants",
    )

    def __init__(self, rows: Iterable[ChunkRecord], source: str = "<corpus>") -> None:
        cols: tuple[list[Any], ...] = ([], [], [], [], [], [], [], [])
        for r in rows:
            for col, value in zip(cols, (r.chunk_id, r.doc_id, r.doc_version, r.status, r.superseded_by, r.tenant,
                                         r.content_hash, r.text)):
                col.append(value)
        self._set(*cols, source=source)

    @classmethod
    def from_columns(cls, chunk_ids: list[str], doc_ids: Sequence[str], doc_versions: Sequence[str | None],
                     statuses: Sequence[str], superseded_by: Sequence[str | None], tenants: Sequence[str | None],
                     content_hashes: list[str | None], texts: Sequence[Any], *, source: str = "<corpus>") -> CorpusManifest:
        """A manifest from equal-length columns (values already validated; ``None`` hashes are computed
        from the text when needed). Columns other than the ids and hashes may be arrow string arrays,
        read one value at a time."""
        ids, docs, versions, status, successors, tenant, text = (
            _Column(c) if not isinstance(c, (list, _Column)) else c
            for c in (chunk_ids, doc_ids, doc_versions, statuses, superseded_by, tenants, texts))
        self = cls.__new__(cls)
        self._set(ids, docs, versions, status, successors, tenant, content_hashes, text, source=source)
        return self

    def _set(self, chunk_ids: Sequence[str], doc_ids: Sequence[str], doc_versions: Sequence[str | None],
             statuses: Sequence[str], superseded_by: Sequence[str | None], tenants: Sequence[str | None],
             content_hashes: list[str | None], texts: Sequence[Any], *, source: str) -> None:
        self.source = source
        self.chunk_ids, self.doc_ids, self.doc_versions, self.statuses = chunk_ids, doc_ids, doc_versions, statuses
        self.superseded_by, self.tenants, self._hashes, self._texts = superseded_by, tenants, content_hashes, texts
        self._index: dict[str, int] | None = None  # chunk id -> position, built when first needed
        if isinstance(chunk_ids, _Column):
            import pyarrow.compute as pc

            # no Python dict of a million ids; unique() is the faster hash count (a null id would
            # count as one value, hence the correction)
            distinct = len(pc.unique(chunk_ids.array)) - (1 if chunk_ids.array.null_count else 0)
        else:
            self._index = dict(zip(chunk_ids, range(len(chunk_ids))))
            distinct = len(self._index)
        if distinct != len(chunk_ids):
            seen: set[str] = set()
            for cid in chunk_ids:
                if cid in seen:
                    raise InputError(f"repeats chunk id {cid!r}", path=source, field="chunk_id",
                                     hint="each chunk appears once in a corpus version")
                seen.add(cid)
        self._latest: dict[str, str | None] = {}
        self._docs: dict[str, Any] | None = None  # doc id -> its distinct versions
        self._multi: dict[str, list[str]] | None = None  # the same, for documents with several versions only

    def _ix(self) -> dict[str, int]:
        if self._index is None:
            ids = self.chunk_ids.array.to_pylist() if isinstance(self.chunk_ids, _Column) else self.chunk_ids
            self._index = dict(zip(ids, range(len(ids))))
        return self._index

    def positions(self, chunk_ids: Sequence[str]) -> Any:
        """The position of each id in this corpus (numpy int64; -1 when absent), in one pass: a
        hash join in arrow for a corpus read by the fast path, dict lookups otherwise."""
        import numpy as np

        if self._index is None and isinstance(self.chunk_ids, _Column):
            import pyarrow as pa
            import pyarrow.compute as pc

            found = pc.index_in(pa.array(list(chunk_ids), pa.string()), value_set=self.chunk_ids.array)
            return found.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
        get = self._ix().get
        return np.fromiter((get(c, -1) for c in chunk_ids), dtype=np.int64, count=len(chunk_ids))

    def hash_at(self, i: int) -> str | None:
        """The content hash of chunk ``i``: as given, else sha256 of its text, else None."""
        h = self._hashes[i]
        if h is None:
            text = self.text_at(i)
            if text is not None:
                h = self._hashes[i] = content_hash(text)
        return h

    def text_at(self, i: int) -> str | None:
        return self._texts[i]

    def take(self, name: str, indices: list[int]) -> list[Any]:
        """The values of column ``name`` (``doc_ids``, ``doc_versions``, ``statuses``, ``superseded_by``,
        ``tenants``) at ``indices``, in one pass."""
        col = getattr(self, name)
        if isinstance(col, _Column):
            import pyarrow as pa

            return col.array.take(pa.array(indices, pa.int64())).to_pylist()
        return [col[i] for i in indices]

    def hashes_at(self, indices: list[int]) -> list[str | None]:
        """:meth:`hash_at` of many chunks, reading the texts that need hashing in one pass."""
        need = [i for i in indices if self._hashes[i] is None]
        if need and isinstance(self._texts, _Column):
            import pyarrow as pa

            for i, text in zip(need, self._texts.array.take(pa.array(need, pa.int64())).to_pylist()):
                if text is not None:
                    self._hashes[i] = content_hash(text)
        return [self.hash_at(i) for i in indices]

    def content_changed(self, older: CorpusManifest, mine: Sequence[int], theirs: Sequence[int]) -> list[bool]:
        """For each pair, whether chunk ``mine[k]`` here and chunk ``theirs[k]`` of ``older`` have
        content hashes that are both known and differ (:meth:`hash_at`). Pairs where neither side was
        given a hash compare their texts instead, in arrow: equal texts have equal sha256, so the
        answer is the same without hashing a single text."""
        out = [False] * len(mine)
        plain = [k for k, (i, j) in enumerate(zip(mine, theirs)) if self._hashes[i] is None and older._hashes[j] is None]
        if plain:
            a = self._texts_taken([mine[k] for k in plain])
            b = older._texts_taken([theirs[k] for k in plain])
            import pyarrow.compute as pc

            for k, differ in zip(plain, pc.not_equal(a, b).to_pylist()):
                out[k] = bool(differ)  # null: a text is missing, so no hash on that side
        rest = [k for k in range(len(mine)) if self._hashes[mine[k]] is not None or older._hashes[theirs[k]] is not None]
        if rest:
            new_h = self.hashes_at([mine[k] for k in rest])
            old_h = older.hashes_at([theirs[k] for k in rest])
            for k, a_h, b_h in zip(rest, new_h, old_h):
                out[k] = a_h is not None and b_h is not None and a_h != b_h
        return out

    def _texts_taken(self, indices: list[int]) -> Any:
        import pyarrow as pa

        if isinstance(self._texts, _Column):
            return self._texts.array.take(pa.array(indices, pa.int64()))
        return pa.array([self._texts[i] for i in indices], pa.string())

    def __len__(self) -> int:
        return len(self.chunk_ids)

    def __contains__(self, chunk_id: object) -> bool:
        return chunk_id in self._ix()

    def __iter__(self) -> Iterator[ChunkRecord]:
        return (self._record(i) for i in range(len(self.chunk_ids)))

    def index_of(self, chunk_id: str) -> int | None:
        return self._ix().get(chunk_id)

    def get(self, chunk_id: str) -> ChunkRecord | None:
        i = self._ix().get(chunk_id)
        return None if i is None else self._record(i)

    def _record(self, i: int) -> ChunkRecord:
        return ChunkRecord(self.chunk_ids[i], self.doc_ids[i], self.doc_versions[i], self.statuses[i],
                           self.superseded_by[i], self.tenants[i], self.hash_at(i), self.text_at(i))

    def latest_version(self, doc_id: str) -> str | None:
        """The newest version of ``doc_id`` among this corpus's chunks (natural order; of two versions
        that compare equal, such as ``01`` and ``1``, the greater text), or None."""
        if doc_id in self._latest:
            return self._latest[doc_id]
        several = self.multi_version_docs().get(doc_id)
        if several is not None:
            newest = self._latest[doc_id] = max(several, key=lambda v: (version_key(v), v))
            return newest
        if self._docs is None and isinstance(self.doc_ids, _Column) and isinstance(self.doc_versions, _Column):
            import pyarrow as pa
            import pyarrow.compute as pc

            pairs = pa.table({"doc": self.doc_ids.array, "version": self.doc_versions.array})
            pairs = pairs.filter(pc.is_valid(pairs.column("version")))
            grouped = pairs.group_by("doc").aggregate([("version", "distinct")])
            self._docs = dict(zip(grouped.column("doc").to_pylist(), grouped.column("version_distinct").to_pylist()))
        if self._docs is None:
            docs: dict[str, set[str]] = {}
            for doc, version in zip(self.doc_ids, self.doc_versions):
                if version is not None:
                    have = docs.get(doc)
                    if have is None:
                        docs[doc] = {version}
                    else:
                        have.add(version)
            self._docs = docs
        versions = self._docs.get(doc_id)
        latest = None
        if versions:
            latest = next(iter(versions)) if len(versions) == 1 else max(versions, key=lambda v: (version_key(v), v))
        self._latest[doc_id] = latest
        return latest

    def multi_version_docs(self) -> dict[str, list[str]]:
        """Documents with chunks of more than one ``doc_version``, and those versions (any order).
        A document of one version has no newer version of itself, so only these need comparing."""
        if self._multi is not None:
            return self._multi
        if isinstance(self.doc_ids, _Column) and isinstance(self.doc_versions, _Column):
            import pyarrow as pa
            import pyarrow.compute as pc

            pairs = pa.table({"doc": self.doc_ids.array, "version": self.doc_versions.array})
            pairs = pairs.filter(pc.is_valid(pairs.column("version")))
            grouped = pairs.group_by("doc").aggregate([("version", "distinct")])
            grouped = grouped.filter(pc.greater(pc.list_value_length(grouped.column("version_distinct")), 1))
            self._multi = dict(zip(grouped.column("doc").to_pylist(), grouped.column("version_distinct").to_pylist()))
        else:
            docs: dict[str, set[str]] = {}
            for doc, version in zip(self.doc_ids, self.doc_versions):
                if version is not None:
                    docs.setdefault(doc, set()).add(version)
            self._multi = {d: sorted(v) for d, v in docs.items() if len(v) > 1}
        return self._multi

    def has_newer_version(self, doc_id: str, version: str) -> str | None:
        """The newest version of ``doc_id`` when it is newer than ``version``, else None."""
        latest = self.latest_version(doc_id)
        if latest is None or latest == version:
            return None
        return latest if version_key(latest) > version_key(version) else None

    def status_counts(self) -> dict[str, int]:
        out = dict.fromkeys(STATUSES, 0)
        for s in self.statuses:
            out[s] += 1
        return out

    def diff(self, newer: CorpusManifest) -> CorpusDiff:
        """What changed from this version to ``newer``; chunks absent from ``newer`` are retired."""
        mine, theirs = self._ix(), newer._ix()
        added = [c for c in newer.chunk_ids if c not in mine]
        retired, changed, status_changed, version_changed = [], [], [], []
        for i, cid in enumerate(self.chunk_ids):
            j = theirs.get(cid)
            if j is None:
                retired.append(cid)
                continue
            old_h, new_h = self.hash_at(i), newer.hash_at(j)
            if old_h is not None and new_h is not None and old_h != new_h:
                changed.append(cid)
            if self.statuses[i] != newer.statuses[j]:
                status_changed.append((cid, self.statuses[i], newer.statuses[j]))
            if self.doc_versions[i] != newer.doc_versions[j]:
                version_changed.append((cid, self.doc_versions[i], newer.doc_versions[j]))
        return CorpusDiff(tuple(added), tuple(retired), tuple(changed), tuple(status_changed), tuple(version_changed))


@dataclass(frozen=True)
class CorpusDiff:
    """From an older corpus version to a newer one. ``status_changed`` and ``version_changed`` hold
    ``(chunk_id, old, new)``; ``retired`` lists chunks absent from the newer version."""

    added: tuple[str, ...]
    retired: tuple[str, ...]
    content_changed: tuple[str, ...]
    status_changed: tuple[tuple[str, str, str], ...]
    version_changed: tuple[tuple[str, str | None, str | None], ...]

    @property
    def unchanged(self) -> bool:
        return not (self.added or self.retired or self.content_changed or self.status_changed or self.version_changed)
