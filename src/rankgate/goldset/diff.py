"""``rankgate gold diff``: what changed between two versions of a gold set. Pure: two gold files in,
a :class:`GoldDiff` out.

A query present in both is *relabelled* when its judged chunks or grades changed (a chunk added,
removed or regraded), when its ``must_not_retrieve`` list changed (as a set), or when its
``no_answer`` marking changed. Other field edits (query text, tags) are counted as ``edited``.
Queries keep the order of the file they come from (removed: OLD's order; the rest: NEW's).
"""

from __future__ import annotations

from dataclasses import dataclass

from rankgate.goldset.records import GoldFile, GoldQuery

__all__ = ["GoldDiff", "Relabel", "diff_gold"]


@dataclass(frozen=True)
class Relabel:
    query_id: str
    added: tuple[tuple[str, int], ...]  # (chunk id, grade)
    removed: tuple[tuple[str, int], ...]
    regraded: tuple[tuple[str, int, int], ...]  # (chunk id, old grade, new grade)
    must_not_added: tuple[str, ...]
    must_not_removed: tuple[str, ...]
    no_answer: tuple[bool, bool] | None  # (old, new) when it changed


@dataclass(frozen=True)
class GoldDiff:
    old_path: str
    new_path: str
    old_sha256: str
    new_sha256: str
    old_queries: int
    new_queries: int
    added: tuple[str, ...]
    removed: tuple[str, ...]
    relabelled: tuple[Relabel, ...]
    edited: tuple[str, ...]  # same labels, other fields changed

    @property
    def identical(self) -> bool:
        return self.old_sha256 == self.new_sha256

    @property
    def unchanged(self) -> int:
        return self.new_queries - len(self.added) - len(self.relabelled) - len(self.edited)


def _relabel(old: GoldQuery, new: GoldQuery) -> Relabel | None:
    a = {label.chunk_id: label.grade for label in old.labels}
    b = {label.chunk_id: label.grade for label in new.labels}
    added = tuple((c, g) for c, g in b.items() if c not in a)
    removed = tuple((c, g) for c, g in a.items() if c not in b)
    regraded = tuple((c, a[c], g) for c, g in b.items() if c in a and a[c] != g)
    mn_old, mn_new = set(old.must_not_retrieve), set(new.must_not_retrieve)
    mn_added = tuple(c for c in new.must_not_retrieve if c not in mn_old)
    mn_removed = tuple(c for c in old.must_not_retrieve if c not in mn_new)
    na = (old.no_answer, new.no_answer) if old.no_answer != new.no_answer else None
    if not (added or removed or regraded or mn_added or mn_removed or na):
        return None
    return Relabel(new.query_id, added, removed, regraded, mn_added, mn_removed, na)


def diff_gold(old: GoldFile, new: GoldFile) -> GoldDiff:
    """Queries added, removed, relabelled and otherwise edited from ``old`` to ``new``."""
    before = {q.query_id: q for q in old.queries}
    after = {q.query_id: q for q in new.queries}
    added = tuple(q.query_id for q in new.queries if q.query_id not in before)
    removed = tuple(q.query_id for q in old.queries if q.query_id not in after)
    relabelled: list[Relabel] = []
    edited: list[str] = []
    for q in new.queries:
        o = before.get(q.query_id)
        if o is None:
            continue
        r = _relabel(o, q)
        if r is not None:
            relabelled.append(r)
        elif o.fields != q.fields or [lab.note for lab in o.labels] != [lab.note for lab in q.labels]:
            edited.append(q.query_id)
    return GoldDiff(old.path, new.path, old.sha256, new.sha256, len(old.queries), len(new.queries), added, removed,
                    tuple(relabelled), tuple(edited))
