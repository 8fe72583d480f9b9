"""``rankgate gold stale``: which labels has the corpus left behind? Pure: a gold file and corpus
manifests in, a :class:`StaleReport` out.

A *label* is one judged chunk of a query (``relevant_chunks``, any grade) or one ``must_not_retrieve``
entry. A judged chunk is stale, for each of these reasons that holds (in this order):

``missing``            not in the new corpus, and not in ``--since`` either (or no ``--since`` given)
``retired``            in the ``--since`` corpus, absent from the new one; or status ``retired``
``superseded``         status ``superseded`` (the detail names ``superseded_by``)
``deprecated``         status ``deprecated``
``content_changed``    its content hash differs between ``--since`` and the new corpus
``newer_doc_version``  its document has chunks of a newer ``doc_version`` in the new corpus

A ``must_not_retrieve`` entry is stale only when its chunk is no longer in the corpus (``missing`` or
``retired``): a negative test that can no longer fail. Deprecated and superseded chunks are exactly
what such lists are for.

``--since`` is the corpus the labels were made against (their ``corpus_version``); without it,
content changes and retirements cannot be told from ids that never existed.
"""

from __future__ import annotations

from dataclasses import dataclass

from rankgate.corpus import CorpusManifest
from rankgate.goldset.records import GoldFile

__all__ = ["REASONS", "StaleLabel", "StaleReport", "stale_labels"]

REASONS = ("missing", "retired", "superseded", "deprecated", "content_changed", "newer_doc_version")


@dataclass(frozen=True)
class StaleLabel:
    query_id: str
    chunk_id: str
    kind: str  # "relevant" (a judged chunk, any grade) or "must_not_retrieve"
    grade: int | None
    reasons: tuple[str, ...]
    detail: str

    @property
    def reason(self) -> str:
        return ";".join(self.reasons)


@dataclass(frozen=True)
class StaleReport:
    gold_path: str
    corpus_path: str
    since_path: str | None
    labels: int  # gold ids: graded labels (judged chunks, any grade) + must_not_retrieve ids
    stale: tuple[StaleLabel, ...]
    max_stale_labels: int | None = None
    max_stale_share: float | None = None
    must_not: int = 0  # of ``labels``, the must_not_retrieve ids

    @property
    def graded(self) -> int:
        """Of ``labels``, the graded labels (what ``gold validate`` counts)."""
        return self.labels - self.must_not

    @property
    def share(self) -> float:
        return len(self.stale) / self.labels if self.labels else 0.0

    def by_reason(self) -> dict[str, int]:
        out = dict.fromkeys(REASONS, 0)
        for s in self.stale:
            for r in s.reasons:
                out[r] += 1
        return out

    @property
    def over_limit(self) -> bool:
        """True when the ship criteria's ``max_stale_labels`` is exceeded."""
        if self.max_stale_labels is not None and len(self.stale) > self.max_stale_labels:
            return True
        return self.max_stale_share is not None and self.share > self.max_stale_share + 1e-12

    @property
    def exit_code(self) -> int:
        return 1 if self.over_limit else 0


def stale_labels(gold: GoldFile, corpus: CorpusManifest, since: CorpusManifest | None = None, *,
                 max_stale_labels: int | None = None, max_stale_share: float | None = None) -> StaleReport:
    """Every stale label of ``gold`` against ``corpus`` (see module docs), in gold order.

    The corpus is asked about all labels at once: their positions in one hash join, their columns in
    one take, content changes by comparing the two versions' texts (or hashes when given), and newer
    document versions only for documents that have more than one."""
    flat = [(q, label) for q in gold.queries for label in q.labels]
    ids = [label.chunk_id for _, label in flat]
    must_not = [cid for q in gold.queries for cid in q.must_not_retrieve]
    pos = corpus.positions(ids + must_not).tolist()  # one hash join per corpus
    pos, here = pos[:len(ids)], pos[len(ids):]
    at = [i for i in pos if i >= 0]
    statuses, by = corpus.take("statuses", at), corpus.take("superseded_by", at)
    versions, docs = corpus.take("doc_versions", at), corpus.take("doc_ids", at)
    changed = [False] * len(at)
    retired: list[bool] = [False] * len(ids)  # absent here, present in --since
    if since is not None:
        back = since.positions(ids + must_not).tolist()
        back, there = back[:len(ids)], back[len(ids):]
        pairs = [(k, j) for k, j in enumerate(b for i, b in zip(pos, back) if i >= 0) if j >= 0]
        for (k, _), differ in zip(pairs, corpus.content_changed(since, [at[k] for k, _ in pairs],
                                                                [j for _, j in pairs])):
            changed[k] = differ
        retired = [i < 0 and j >= 0 for i, j in zip(pos, back)]
    multi = corpus.multi_version_docs()
    out: list[StaleLabel] = []
    rows_of: dict[str, list[StaleLabel]] = {}
    k = 0  # position in the columns taken above
    for (q, label), i, gone in zip(flat, pos, retired):
        cid = label.chunk_id
        rows = rows_of.setdefault(q.query_id, [])
        if i < 0:
            if gone:
                rows.append(StaleLabel(q.query_id, cid, "relevant", label.grade, ("retired",), "absent from the new corpus"))
            else:
                rows.append(StaleLabel(q.query_id, cid, "relevant", label.grade, ("missing",), "not in the corpus"))
            continue
        reasons: list[str] = []
        details: list[str] = []
        status = statuses[k]
        if status != "active":
            reasons.append(status)
            details.append(f"{status}" + (f" by {by[k]}" if by[k] else ""))
        if changed[k]:
            reasons.append("content_changed")
            details.append("text changed")
        version, doc = versions[k], docs[k]
        if version is not None and doc in multi:  # one version: nothing newer
            newer = corpus.has_newer_version(doc, version)
            if newer is not None:
                reasons.append("newer_doc_version")
                details.append(f"{doc} {version} → {newer}")
        k += 1
        if reasons:
            rows.append(StaleLabel(q.query_id, cid, "relevant", label.grade, tuple(reasons), "; ".join(details)))
    if since is None:
        there = [-1] * len(must_not)
    m = 0
    for q in gold.queries:
        out.extend(rows_of.get(q.query_id, ()))
        for cid in q.must_not_retrieve:
            i, j = here[m], there[m]
            m += 1
            if i >= 0:
                continue
            if j >= 0:
                out.append(StaleLabel(q.query_id, cid, "must_not_retrieve", None, ("retired",),
                                      "absent from the new corpus: the check tests nothing"))
            else:
                out.append(StaleLabel(q.query_id, cid, "must_not_retrieve", None, ("missing",),
                                      "not in the corpus: the check tests nothing"))
    return StaleReport(gold.path, corpus.source, None if since is None else since.source, len(ids) + len(must_not),
                       tuple(out), max_stale_labels, max_stale_share, must_not=len(must_not))


def stale_labels_reference(gold: GoldFile, corpus: CorpusManifest, since: CorpusManifest | None = None, *,
                 max_stale_labels: int | None = None, max_stale_share: float | None = None) -> StaleReport:
    """:func:`stale_labels` label by label through the dict lookups: the plain reference the fast
    path is tested against."""
    index_of = corpus.index_of
    found = [(q, label, index_of(label.chunk_id)) for q in gold.queries for label in q.labels]
    at = [i for _, _, i in found if i is not None]
    statuses, by = corpus.take("statuses", at), corpus.take("superseded_by", at)
    versions, docs = corpus.take("doc_versions", at), corpus.take("doc_ids", at)
    changed: set[int] = set()
    if since is not None:
        pairs = [(i, j) for i, j in ((i, since.index_of(corpus.chunk_ids[i])) for i in at) if j is not None]
        new_h = corpus.hashes_at([i for i, _ in pairs])
        old_h = since.hashes_at([j for _, j in pairs])
        changed = {i for (i, _), a, b in zip(pairs, old_h, new_h) if a is not None and b is not None and a != b}
    out: list[StaleLabel] = []
    total = 0
    k = 0  # position in the columns taken above
    rows_of: dict[str, list[StaleLabel]] = {}
    for q, label, i in found:
        total += 1
        cid = label.chunk_id
        rows = rows_of.setdefault(q.query_id, [])
        if i is None:
            if since is not None and cid in since:
                rows.append(StaleLabel(q.query_id, cid, "relevant", label.grade, ("retired",), "absent from the new corpus"))
            else:
                rows.append(StaleLabel(q.query_id, cid, "relevant", label.grade, ("missing",), "not in the corpus"))
            continue
        reasons: list[str] = []
        details: list[str] = []
        status = statuses[k]
        if status != "active":
            reasons.append(status)
            details.append(f"{status}" + (f" by {by[k]}" if by[k] else ""))
        if i in changed:
            reasons.append("content_changed")
            details.append("text changed")
        version = versions[k]
        if version is not None:
            newer = corpus.has_newer_version(docs[k], version)
            if newer is not None:
                reasons.append("newer_doc_version")
                details.append(f"{docs[k]} {version} → {newer}")
        k += 1
        if reasons:
            rows.append(StaleLabel(q.query_id, cid, "relevant", label.grade, tuple(reasons), "; ".join(details)))
    for q in gold.queries:
        out.extend(rows_of.get(q.query_id, ()))
        for cid in q.must_not_retrieve:
            total += 1
            if cid in corpus:
                continue
            if since is not None and cid in since:
                out.append(StaleLabel(q.query_id, cid, "must_not_retrieve", None, ("retired",),
                                      "absent from the new corpus: the check tests nothing"))
            else:
                out.append(StaleLabel(q.query_id, cid, "must_not_retrieve", None, ("missing",),
                                      "not in the corpus: the check tests nothing"))
    return StaleReport(gold.path, corpus.source, None if since is None else since.source, total, tuple(out),
                       max_stale_labels, max_stale_share, must_not=sum(len(q.must_not_retrieve) for q in gold.queries))
