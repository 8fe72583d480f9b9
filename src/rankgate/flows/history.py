"""``rankgate history``: summaries recorded over time, their trends, any two compared paired, the dashboard.

Four use cases, each a frozen request in and a frozen result out (:mod:`rankgate.history` does the work):

* :func:`run_add` (:class:`HistoryAddRequest`): record summaries in a store; every file is read and checked
  before the first is written, so a bad file adds nothing.
* :func:`run_show` (:class:`HistoryShowRequest`): each metric's series over the last entries, with the change
  and the version changes.
* :func:`run_compare` (:class:`HistoryCompareRequest`): two entries (ids, commits or dates) through the paired
  comparison of :func:`rankgate.stats.paired.compare`, as ``rankgate compare`` compares two runs.
* :func:`run_report` (:class:`HistoryReportRequest`): what the dashboard shows: the gated series, the breaches,
  the owners' view.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rankgate.errors import F, InputError, UsageError
from rankgate._util import progress
from rankgate.flows._inputs import FilePath
from rankgate.stats.options import Statistics

if TYPE_CHECKING:  # pragma: no cover
    from rankgate.history.series import Breach, EntryInfo, Owner, Series
    from rankgate.history.store import Added
    from rankgate.stats.paired import Comparison

__all__ = ["HistoryAddRequest", "HistoryAdded", "HistoryCompare", "HistoryCompareRequest", "HistoryReport",
           "HistoryReportRequest", "HistoryShow", "HistoryShowRequest", "run_add", "run_compare", "run_report",
           "run_show"]

KIND_NAMES = ("evaluate", "gate", "answers", "traces")
MAX_LAST = 10_000


# -- add ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class HistoryAddRequest:
    """Summaries (``files``) recorded in the store ``store`` at ``commit`` of ``branch``, dated ``when`` (ISO 8601).
    Left None: the commit is ``$GITHUB_SHA`` or the current folder's git ``HEAD`` ("" outside a repository), the
    branch ``$GITHUB_REF_NAME`` or git's current branch, the time now."""

    files: tuple[str, ...]
    store: str
    commit: str | None = None
    branch: str | None = None
    when: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.files, (str, os.PathLike)):
            object.__setattr__(self, "files", (os.fspath(self.files),))
        if not self.files:
            raise UsageError("nothing to record: give one or more summary files (evaluate, gate, traces or answers)")
        for name in ("commit", "branch"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or any(c.isspace() for c in value) or len(value) > 200):
                raise UsageError(f"{F(name)} must be one word (a commit SHA, a branch name); got {value!r}"[:200])

    def inputs(self) -> tuple[FilePath, ...]:
        return tuple(self.files)


@dataclass(frozen=True)
class HistoryAdded:
    """What each file became: an entry added, replaced or left unchanged (in the order given)."""

    added: tuple[Added, ...]
    store: str


def parse_when(text: str | None, name: str = "when") -> int:
    """``text`` (ISO 8601 date or time; a time without offset is UTC) as microseconds since the epoch; now when
    None."""
    from rankgate.stats.calibration import parse_time

    if text is None:
        return int(dt.datetime.now(dt.timezone.utc).timestamp() * 1_000_000)
    when = parse_time(text)
    if when is None:
        raise UsageError(f"{F(name)} must be an ISO 8601 date or time (2026-05-01, 2026-05-01T09:30:00Z); got {text!r}"[:200])
    return int(when.timestamp() * 1_000_000)


def run_add(req: HistoryAddRequest) -> HistoryAdded:
    """Read every file, then record each (see :class:`HistoryAddRequest`)."""
    from rankgate.history.context import default_branch, default_commit
    from rankgate.history.entries import read_entry
    from rankgate.history.store import open_store

    store = open_store(req.store, create=True)
    when_us = parse_when(req.when)
    commit = default_commit() if req.commit is None else req.commit
    branch = default_branch() if req.branch is None else req.branch
    with progress.stage(f"reading {len(req.files)} summar{'y' if len(req.files) == 1 else 'ies'}"):
        read = [read_entry(path) for path in req.files]
    added_us = parse_when(None)
    with progress.stage(f"recording in {req.store}"):
        out = tuple(store.add(e, commit=commit, branch=branch, when_us=when_us, added_us=added_us) for e in read)
    return HistoryAdded(out, req.store)


# -- show -----------------------------------------------------------------------------------------------
def _last(value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_LAST:
        raise UsageError(f"{F.last} must be a count from 1 to {MAX_LAST:,}; got {value!r}")
    return value


@dataclass(frozen=True)
class HistoryShowRequest:
    """The series of ``metric`` (every metric when None) over all queries, or per segment of the field ``by``,
    over the ``last`` points of each."""

    store: str
    metric: str | None = None
    by: str | None = None
    last: int = 12

    def __post_init__(self) -> None:
        _last(self.last)

    def inputs(self) -> tuple[FilePath, ...]:
        return ()


@dataclass(frozen=True)
class HistoryShow:
    """The store's entries (oldest first) and each series cut to its last points."""

    store: str
    entries: tuple[EntryInfo, ...]
    series: tuple[Series, ...]
    last: int
    by: str | None = None


def _canonical(metric: str) -> str:
    from rankgate.errors import RankgateError

    try:
        from rankgate.metrics import parse_metric

        return str(parse_metric(metric))
    except RankgateError:
        return metric


def run_show(req: HistoryShowRequest) -> HistoryShow:
    from dataclasses import replace

    from rankgate.history.series import entries, series
    from rankgate.history.store import open_store
    from rankgate.stats.segments import display_field

    store = open_store(req.store)
    with progress.stage(f"reading {req.store}"):
        snap = store.snapshot()
    try:
        infos = entries(snap)
        by = display_field(req.by) if req.by else ""
        metrics = [_canonical(req.metric)] if req.metric else []
        found = series(snap, infos, metrics=metrics, field=by)
        if not found and infos and (req.metric or req.by):
            known = sorted({(r[0], r[1]) for r in snap.fetch("SELECT DISTINCT metric, field FROM r WHERE row = 'metric'")})
            names = sorted({m for m, _ in known})
            fields = sorted({f for _, f in known if f})
            what = f"{F.metric} {req.metric!r}" if req.metric else f"{F.by} {req.by!r}"
            raise UsageError(f"no entry records {what}{' by ' + repr(req.by) if req.metric and req.by else ''}; metrics "
                             f"recorded: {', '.join(names) or 'none'}; segment fields: {', '.join(fields) or 'none'}"[:600])
    finally:
        snap.close()
    cut = tuple(replace(s, points=s.points[-req.last:]) for s in found)
    return HistoryShow(req.store, tuple(infos), cut, req.last, by or None)


# -- compare --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class HistoryCompareRequest:
    """Two entries, each named by its id (or a prefix of 4 or more digits), a commit (or a prefix), or a date or
    time (the newest entry at or before it), compared paired: ``a`` is the baseline. ``kind``: only entries of this
    kind (evaluate, gate, answers) are named."""

    store: str
    a: str
    b: str
    kind: str | None = None
    statistics: Statistics = field(default_factory=Statistics)
    permutations: int = 10000
    top: int = 10

    def __post_init__(self) -> None:
        if self.kind is not None and self.kind not in KIND_NAMES[:3]:
            raise UsageError(f"{F.kind} must be one of evaluate, gate, answers (the kinds with per-query values); "
                             f"got {self.kind!r}"[:200])
        for name in ("a", "b"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name).strip():
                raise UsageError(f"{F(name)} must name an entry: its id, a commit or a date")

    def inputs(self) -> tuple[FilePath, ...]:
        return ()


@dataclass(frozen=True)
class HistoryCompare:
    """The comparison of two entries (:class:`~rankgate.stats.paired.Comparison`), the entries, and what the
    comparison must be read with (another gold set: the sentence every comparison says)."""

    comparison: Comparison
    baseline: EntryInfo
    candidate: EntryInfo
    labels: tuple[str, str]
    warnings: tuple[str, ...] = ()

    @property
    def confidence(self) -> float:
        return self.comparison.confidence


def entry_label(info: EntryInfo) -> str:
    """How outputs name an entry: ``<commit, 7 digits> (<date>)``, or its id when it has no commit."""
    day = dt.datetime.fromtimestamp(info.when_us / 1_000_000, dt.timezone.utc).strftime("%Y-%m-%d")
    return f"{info.commit[:7] or info.entry} ({day})"


def resolve(infos: Sequence[EntryInfo], selector: str, kind: str | None, name: str) -> EntryInfo:
    """The entry ``selector`` names among those with per-query values (see :class:`HistoryCompareRequest`)."""
    from rankgate.history.entries import KINDS
    from rankgate.stats.calibration import parse_time

    text = selector.strip()
    usable = [i for i in infos if i.per_query and (kind is None or i.kind == kind)]
    lower = text.lower()
    hexy = len(lower) >= 4 and all(c in "0123456789abcdef" for c in lower)
    by_id = [i for i in usable if hexy and i.entry.startswith(lower)]
    by_commit = [i for i in usable if len(text) >= 4 and i.commit.lower().startswith(lower)]
    if by_id and by_commit and {i.entry for i in by_id} != {i.entry for i in by_commit}:
        raise UsageError(f"{F(name)} {text!r} is the start of both an entry id and a commit: give more digits")
    found = by_id or by_commit
    if not found:
        when = parse_time(text) if len(text) >= 10 else None
        if when is not None:
            end = int(when.timestamp() * 1_000_000)
            if len(text) == 10:  # a date: the whole day
                end += 86_400_000_000 - 1
            before = [i for i in usable if i.when_us <= end]
            if before:
                newest = max(i.when_us for i in before)
                found = [i for i in before if i.when_us == newest]
    if not found:
        what = "entries with per-query values" + (f" of kind {kind}" if kind else "")
        raise UsageError(f"{F(name)} {text!r} names none of the store's {what} (give an entry id, a commit or a date; "
                         "rankgate history show --json lists them)"[:300])
    best = min(KINDS.index(i.kind) for i in found)
    found = [i for i in found if KINDS.index(i.kind) == best]
    if len({i.entry for i in found}) > 1:
        listed = ", ".join(f"{i.entry} ({i.kind}, {i.commit[:7] or 'no commit'})" for i in found[:5])
        raise UsageError(f"{F(name)} {text!r} names {len(found)} entries: {listed}; give an entry id"[:400])
    return found[0]


def run_compare(req: HistoryCompareRequest) -> HistoryCompare:
    from rankgate.history.series import entries
    from rankgate.history.store import open_store
    from rankgate.stats.paired import compare

    store = open_store(req.store)
    snap = store.snapshot()
    try:
        infos = entries(snap)
    finally:
        snap.close()
    base, cand = resolve(infos, req.a, req.kind, "a"), resolve(infos, req.b, req.kind, "b")
    labels = (entry_label(base), entry_label(cand))
    if labels[0] == labels[1]:
        labels = (f"{labels[0]} {base.entry}", f"{labels[1]} {cand.entry}")
    with progress.stage("reading both entries' per-query values"):
        pa_, pb_ = store.per_query(base.entry), store.per_query(cand.entry)
    results = _paired_results(pa_, pb_, base, cand, store)
    warnings = []
    if base.gold_sha256 and cand.gold_sha256 and base.gold_sha256 != cand.gold_sha256:
        from rankgate.gating.alike import gold_versions_warning

        warnings.append(gold_versions_warning(labels[1], cand.gold_sha256, labels[0], base.gold_sha256))
    st = req.statistics
    with progress.stage("comparing the two entries (paired intervals and p-values)"):
        comparison = compare(results[0], results[1], baseline_label=labels[0], candidate_label=labels[1],
                             statistics=st, n_permutations=req.permutations, top=req.top)
    return HistoryCompare(comparison, base, cand, labels, tuple(warnings))


def _ordered(metrics: Any) -> list[str]:
    """The metrics in the order evaluate and answers list them by default (the first is the one whose most-changed
    queries are listed), then the others as the summary has them."""
    from rankgate.flows.answers import DEFAULT_METRICS as ANSWERS
    from rankgate.scoring.options import DEFAULT_METRICS

    order = [*DEFAULT_METRICS.split(","), *ANSWERS.split(",")]
    names = list(metrics)
    return sorted(names, key=lambda m: (order.index(m) if m in order else len(order), names.index(m)))


def _paired_results(a: Any, b: Any, base: EntryInfo, cand: EntryInfo, store: Any) -> tuple[Any, Any]:
    """The two entries' per-query values as evaluation results whose query ids pair them: the hashed ids when
    both name their queries, else the queries' positions in the gold file when both lists are the same."""
    import numpy as np

    from rankgate.model.results import EvaluationResult

    assert a is not None and b is not None  # (resolve picks entries with per-query values)

    def result(pq: Any, ids: tuple[str, ...], info: EntryInfo) -> EvaluationResult:
        if pq.missing_at is not None:
            missing = tuple(ids[i] for i in sorted(pq.missing_at) if i < len(ids))
        else:
            missing = tuple(q for q in ids if q in pq.missing_from_run)
        values = {m: np.asarray(pq.values[m], dtype=np.float64) for m in _ordered(pq.values)}
        ranks = None if pq.first_relevant_rank is None else np.asarray(pq.first_relevant_rank, dtype=np.int64)
        return EvaluationResult(query_ids=ids, metric_names=tuple(values), values=values, first_relevant_rank=ranks,
                                missing_from_run=missing, inputs={"run": {"path": info.entry}})

    if a.ids and b.ids:
        return result(a, a.ids, base), result(b, b.ids, cand)
    na, nb = (p.n if p.n is not None else len(p.ids) for p in (a, b))
    same_list = ((a.ids_sha256 is not None and a.ids_sha256 == b.ids_sha256)
                 or (bool(base.gold_sha256) and base.gold_sha256 == cand.gold_sha256))
    if not same_list or na != nb:
        raise InputError(f"entries {base.entry} and {cand.entry} name their queries only by the digest of the gold "
                         "set's query list, and the lists differ (another gold set): no query can be paired",
                         path=store.path, hint="compare their means with rankgate history show, or score both on one "
                                               "gold set")
    ids = tuple(f"#{i + 1}" for i in range(na))
    return result(a, ids, base), result(b, ids, cand)


# -- report ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class HistoryReportRequest:
    """The dashboard of the store: ``title`` heads the page; ``recent``: the entries listed at its end."""

    store: str
    title: str = "rankgate history"
    recent: int = 30

    def inputs(self) -> tuple[FilePath, ...]:
        return ()


@dataclass(frozen=True)
class HistoryReport:
    """What the dashboard shows: the entries, the series of every gated scope (or every metric over all
    queries, when no gate outcome is recorded), every breach, the owners' view, and "now" (the newest entry)."""

    store: str
    title: str
    entries: tuple[EntryInfo, ...]
    series: tuple[Series, ...]
    breaches: tuple[Breach, ...]
    owners: tuple[Owner, ...]
    now_us: int
    recent: int


HEADLINE_CAP = 24  # series drawn when no gate names the metrics


def run_report(req: HistoryReportRequest) -> HistoryReport:
    from rankgate.history.series import breaches, entries, gated_scopes, owners, series
    from rankgate.history.store import open_store

    store = open_store(req.store)
    with progress.stage(f"reading {req.store}"):
        snap = store.snapshot()
    try:
        with progress.stage("computing the series and the breaches"):
            infos = entries(snap)
            scopes = gated_scopes(snap)
            found = (series(snap, infos, scopes=scopes) if scopes
                     else series(snap, infos, field="")[:HEADLINE_CAP])
            now_us = max((i.when_us for i in infos), default=0)
            broken = breaches(snap, infos)
            people = owners(snap, infos, broken, now_us)
    finally:
        snap.close()
    return HistoryReport(req.store, req.title, tuple(infos), tuple(found), tuple(broken), tuple(people), now_us,
                         req.recent)
