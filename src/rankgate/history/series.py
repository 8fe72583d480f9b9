"""What the history says, computed from a store's rows: series, version changes, breaches, the owners' review.

Pure functions over a :class:`~rankgate.history.store.Snapshot`; nothing here prints or formats a number.

* A **series** is one metric over all queries or one segment (``metric, field, segment``), one point per commit
  in time order. A commit recorded as several kinds (evaluate's summary and the gate outcome of the same run)
  gives one point, of the first kind in :data:`~rankgate.history.entries.KINDS`. Each point says whether the gold
  set (its file's sha256) or the corpus version changed since the point before: a number is not comparable across
  such a change, and every output marks it.
* A **breach** is a gate whose outcome is ``fail`` or ``warn`` (a check failed, blocking or not). It opens at the
  first such outcome and closes (recovers) at the next ``pass`` of that gate; ``skipped`` outcomes neither open nor
  close one. The recovery rule is :data:`RECOVER_HOURS` (a degradation is resolved within 48 hours). Times are the
  entries' own (``--when``, else the time they were recorded) and "now" is the newest entry's time, so the same
  store always gives the same page.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rankgate.history.entries import KINDS

__all__ = ["DAY_US", "HOUR_US", "RECOVER_HOURS", "Breach", "EntryInfo", "Owner", "Point", "Review", "Series", "breaches",
           "entries", "owners", "series"]

HOUR_US = 3_600_000_000
DAY_US = 24 * HOUR_US
RECOVER_HOURS = 48  # a degradation of a metric is resolved within 48 hours (the metrics spec's rule)
WEEK_US = 7 * DAY_US
BAD = ("fail", "warn")
NO_OWNER = "(no owner)"


@dataclass(frozen=True)
class EntryInfo:
    """One recorded entry: what it is and when."""

    entry: str
    kind: str
    commit: str
    branch: str
    when_us: int
    added_us: int
    gold_sha256: str
    inputs_sha256: str
    content_sha256: str
    corpus_version: str
    label: str
    source: str
    per_query: bool = False

    @property
    def point_key(self) -> str:
        """What one point of a series stands for: the commit (its evaluate summary and its gate outcome are one
        point), or the entry when no commit was given; each traces summary is its own point (a period, not a build)."""
        return self.entry if self.kind == "traces" or not self.commit else self.commit


@dataclass(frozen=True)
class Point:
    """A series' value at one entry; ``changed``: what changed since the point before (``gold set``,
    ``corpus`` or both, joined by ``and``; "" when nothing did); ``outcome``: the worst status of the gate checks
    on this scope at this commit ("" when no gate checked it)."""

    entry: EntryInfo
    mean: float
    ci_low: float
    ci_high: float
    n: int
    changed: str = ""
    outcome: str = ""


@dataclass(frozen=True)
class Series:
    """One metric over all queries (``field == ""``) or one segment, in time order; ``limit``: the newest gate
    threshold (``check == "threshold"``, a floor) or ceiling (``"max"``) on this scope, NaN when none."""

    metric: str
    field: str
    segment: str
    points: tuple[Point, ...]
    limit: float = math.nan
    check: str = ""
    gates: tuple[str, ...] = ()

    @property
    def scope(self) -> str:
        return f"{self.field}={self.segment}" if self.field else "all queries"


@dataclass(frozen=True)
class Breach:
    """A gate in breach from ``start_us`` until ``end_us`` (None: still in breach); ``scopes``: where its checks
    failed at the newest failing outcome (``all queries``, ``lang=de``)."""

    gate: str
    metric: str
    owner: str
    start_us: int
    end_us: int | None
    scopes: tuple[str, ...]
    severity: str

    def hours(self, now_us: int) -> int:
        """Whole hours from the start to the recovery (or to ``now_us`` while open)."""
        return ((self.end_us if self.end_us is not None else now_us) - self.start_us) // HOUR_US

    def late(self, now_us: int) -> bool:
        """Over the recovery rule (:data:`RECOVER_HOURS`)."""
        return ((self.end_us if self.end_us is not None else now_us) - self.start_us) > RECOVER_HOURS * HOUR_US


@dataclass(frozen=True)
class Review:
    """One line of an owner's weekly review: the gate's metric over all queries now and a week before."""

    gate: str
    metric: str
    status: str
    now: float
    week_ago: float
    breaches: int            # breaches open at any time in the week
    late: int                # of which over the recovery rule
    changed: str             # the gold set or corpus changed in the week ("" when not)
    reason: str              # why it is on the list: in breach, recovered, moved, version change, or "ok"


@dataclass(frozen=True)
class Owner:
    """One owner's view: the breaches open now, the last ones closed, the weekly review."""

    owner: str
    open: tuple[Breach, ...]
    recovered: tuple[Breach, ...]
    review: tuple[Review, ...]


def entries(snap: Any) -> list[EntryInfo]:
    """Every entry of the snapshot, oldest first (by time, then by when it was recorded)."""
    with_pq = {r[0] for r in snap.fetch("SELECT DISTINCT entry FROM r WHERE row = 'pq'")}
    rows = snap.fetch("SELECT entry, kind, commit, branch, when_us, added_us, gold_sha256, inputs_sha256, "
                      "content_sha256, corpus_version, label, source FROM e ORDER BY when_us, added_us, entry")
    from dataclasses import replace

    return [replace(EntryInfo(*r), per_query=r[0] in with_pq) for r in rows]


def _priority(info: EntryInfo) -> tuple[int, int]:
    return (KINDS.index(info.kind) if info.kind in KINDS else len(KINDS), -info.added_us)


def series(snap: Any, infos: Sequence[EntryInfo], *, metrics: Sequence[str] = (), field: str | None = "",
           scopes: Sequence[tuple[str, str, str]] = ()) -> list[Series]:
    """The series of ``metrics`` (all when empty) over all queries (``field == ""``), one segment field
    (``field``), every scope (None), or exactly ``scopes`` (``(metric, field, segment)``, when given)."""
    by_id = {i.entry: i for i in infos}
    where, params = ["row = 'metric'"], []
    if scopes:
        where.append("(" + " OR ".join("(metric = ? AND field = ? AND segment = ?)" for _ in scopes) + ")")
        params += [x for s in scopes for x in s]
    else:
        if metrics:
            where.append("metric IN (" + ", ".join("?" for _ in metrics) + ")")
            params += list(metrics)
        if field is not None:
            where.append("field = ?")
            params.append(field)
    rows = snap.fetch("SELECT entry, metric, field, segment, mean, ci_low, ci_high, n FROM r WHERE "
                      + " AND ".join(where), params)
    grouped: dict[tuple[str, str, str], dict[str, tuple[EntryInfo, tuple[Any, ...]]]] = defaultdict(dict)
    for r in rows:
        info = by_id.get(r[0])
        if info is None:
            continue
        points = grouped[(r[1], r[2], r[3])]
        key = info.point_key
        if key not in points or _priority(info) < _priority(points[key][0]):
            points[key] = (info, r)
    checks = _checks(snap, by_id)
    out = []
    for (metric, f, segment), chosen in grouped.items():
        limit, check, gates, outcomes = checks.get((metric, f, segment), (math.nan, "", (), {}))
        pts: list[Point] = []
        gold = corpus = ""
        for info, r in sorted(chosen.values(), key=lambda p: (p[0].when_us, p[0].added_us, p[0].entry)):
            changed = []
            if info.gold_sha256:
                if gold and info.gold_sha256 != gold:
                    changed.append("gold set")
                gold = info.gold_sha256
            if info.corpus_version:
                if corpus and info.corpus_version != corpus:
                    changed.append("corpus")
                corpus = info.corpus_version
            pts.append(Point(info, _f(r[4]), _f(r[5]), _f(r[6]), -1 if r[7] is None else int(r[7]),
                             " and ".join(changed), outcomes.get(info.point_key, "")))
        out.append(Series(metric, f, segment, tuple(pts), limit, check, gates))
    out.sort(key=lambda s: (s.metric, s.field, s.segment != "", s.segment))
    return out


def _f(x: Any) -> float:
    return math.nan if x is None else float(x)


def _checks(snap: Any, by_id: dict[str, EntryInfo]) -> dict[tuple[str, str, str], tuple[float, str, tuple[str, ...],
                                                                                        dict[str, str]]]:
    """Per scope: the newest gate limit on it (threshold or max), the gates that check it, and the worst outcome of
    its checks per commit."""
    rank = {"fail": 3, "warn": 2, "pass": 1}
    rows = snap.fetch("SELECT entry, metric, field, segment, status, \"check\", \"limit\", gate, severity FROM r "
                      "WHERE row = 'check'")
    out: dict[tuple[str, str, str], Any] = {}
    newest: dict[tuple[str, str, str], int] = {}
    for entry, metric, f, segment, status, check, limit, gate, severity in rows:
        if status == "fail" and severity == "warning":
            status = "warn"  # a failing check of a gate that warns: reported, never blocking
        info = by_id.get(entry)
        if info is None:
            continue
        key = (metric, f, segment)
        lim, kind, gates, outcomes = out.setdefault(key, (math.nan, "", (), {}))
        if gate not in gates:
            gates = (*gates, gate)
        if check in ("threshold", "max") and limit is not None and info.when_us >= newest.get(key, -1):
            newest[key] = info.when_us
            lim, kind = float(limit), check
        if rank.get(status, 0) > rank.get(outcomes.get(info.point_key, ""), 0):
            outcomes[info.point_key] = status
        out[key] = (lim, kind, gates, outcomes)
    return out


def gated_scopes(snap: Any) -> list[tuple[str, str, str]]:
    """Every (metric, field, segment) a gate has checked, in a stable order."""
    return sorted(tuple(r) for r in snap.fetch("SELECT DISTINCT metric, field, segment FROM r WHERE row = 'check'"))


def breaches(snap: Any, infos: Sequence[EntryInfo]) -> list[Breach]:
    """Every breach of every gate, oldest first (see the module docs)."""
    by_id = {i.entry: i for i in infos}
    gates = snap.fetch("SELECT entry, gate, metric, status, owner, severity FROM r WHERE row = 'gate'")
    failing: dict[tuple[str, str], list[str]] = defaultdict(list)
    for entry, gate, field, segment in snap.fetch(
            "SELECT entry, gate, field, segment FROM r WHERE row = 'check' AND status IN ('fail', 'warn')"):
        failing[(entry, gate)].append(f"{field}={segment}" if field else "all queries")
    timeline: dict[str, list[tuple[EntryInfo, str, str, str, str]]] = defaultdict(list)
    for entry, gate, metric, status, owner, severity in gates:
        info = by_id.get(entry)
        if info is not None:
            timeline[gate].append((info, metric, status, owner, severity))
    out = []
    for gate, events in timeline.items():
        events.sort(key=lambda x: (x[0].when_us, x[0].added_us, x[0].entry))
        owner = next((o for _, _, _, o, _ in reversed(events) if o), "")
        start: tuple[EntryInfo, str, str] | None = None
        scopes: tuple[str, ...] = ()
        for info, metric, status, _, severity in events:
            if status in BAD:
                scopes = tuple(dict.fromkeys(failing.get((info.entry, gate), ()))) or scopes
                if start is None:
                    start = (info, metric, severity)
            elif status == "pass" and start is not None:
                out.append(Breach(gate, start[1], owner or NO_OWNER, start[0].when_us, info.when_us, scopes, start[2]))
                start, scopes = None, ()
        if start is not None:
            out.append(Breach(gate, start[1], owner or NO_OWNER, start[0].when_us, None, scopes, start[2]))
    out.sort(key=lambda b: (b.start_us, b.gate))
    return out


def owners(snap: Any, infos: Sequence[EntryInfo], found: Sequence[Breach], now_us: int, *,
           recovered: int = 5) -> list[Owner]:
    """Per owner (gates without one under ``(no owner)``): the breaches open now, the ``recovered`` newest closed
    ones, and the weekly review of every gate they own (the week up to ``now_us``)."""
    by_id = {i.entry: i for i in infos}
    rows = snap.fetch("SELECT entry, gate, metric, status, owner FROM r WHERE row = 'gate'")
    latest: dict[str, tuple[EntryInfo, str, str, str]] = {}
    for entry, gate, metric, status, owner in rows:
        info = by_id.get(entry)
        if info is None:
            continue
        if gate not in latest or (info.when_us, info.added_us) >= (latest[gate][0].when_us, latest[gate][0].added_us):
            latest[gate] = (info, metric, status, owner or latest.get(gate, (None, "", "", ""))[3])
    headline = {(s.metric,): s for s in series(snap, infos, metrics=sorted({m for _, m, _, _ in latest.values()}))}
    who: dict[str, list[str]] = defaultdict(list)
    for gate, (_, _, _, owner) in latest.items():
        who[owner or NO_OWNER].append(gate)
    out = []
    for owner in sorted(who, key=lambda o: (o == NO_OWNER, o)):
        mine = [b for b in found if b.owner == owner]
        review = []
        for gate in sorted(who[owner]):
            _, metric, status, _ = latest[gate]
            s = headline.get((metric,))
            review.append(_review(gate, metric, status, s, [b for b in mine if b.gate == gate], now_us))
        review.sort(key=lambda r: (r.reason == "ok", r.gate))
        closed = sorted((b for b in mine if b.end_us is not None), key=lambda b: b.end_us or 0, reverse=True)
        out.append(Owner(owner, tuple(b for b in mine if b.end_us is None), tuple(closed[:recovered]), tuple(review)))
    return out


def _review(gate: str, metric: str, status: str, s: Series | None, mine: list[Breach], now_us: int) -> Review:
    start = now_us - WEEK_US
    week = [b for b in mine if (b.end_us is None or b.end_us >= start) and b.start_us <= now_us]
    late = sum(1 for b in week if b.late(now_us))
    now = before = math.nan
    changed = ""
    if s is not None and s.points:
        now = s.points[-1].mean
        earlier = [p for p in s.points if p.entry.when_us <= start]
        before = earlier[-1].mean if earlier else s.points[0].mean
        changed = " and ".join(dict.fromkeys(c for p in s.points if p.entry.when_us > start and p.changed
                                             for c in p.changed.split(" and ")))
    if any(b.end_us is None for b in week):
        reason = "in breach, over 48 hours" if late else "in breach"
    elif week:
        reason = "recovered this week" + (", over 48 hours" if late else "")
    elif changed:
        reason = f"{changed} changed this week"
    else:
        reason = "ok"
    return Review(gate, metric, status, now, before, len(week), late, changed, reason)
