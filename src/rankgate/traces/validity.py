"""Offline ↔ online validity: does the offline metric on the gold set predict what users of the same queries
experience in production? (``rankgate validity``, docs/validity.md.)

Three steps, each its own function:

1. **The trace side** (:func:`outcome_counts`): per query, how many production requests each online
   outcome applies to and how many of them were bad, counted by one SQL statement on the trace engine
   (:mod:`.engines`: DuckDB, or Spark with the same text) grouped by the request's ``query_key``; the
   keys are then read as the query key of the join (below). Whole-number counts only, so both engines
   give the same figures.
2. **The join** (:func:`analyse`): a gold query and a production request are the same query when their
   keys are equal. The default key (``key="text"``) is :func:`query_text_key`: ``text_id`` of
   :mod:`rankgate.io.shapes` of the query text normalised as the trace model normalises it
   (:func:`rankgate.traces.model.normalise_query`), on both sides. ``key="query_key"`` joins the gold
   set's ``query_key`` field with the traces' ``query_key`` (:func:`rankgate.traces.model.query_key`),
   for gold sets that carry the production key. Every gold query and every request that does not join
   is counted with its reason.
3. **The statistics** (:mod:`rankgate.stats.risk`): per offline metric × online outcome (× segment), the
   bad-outcome rate of the requests of queries that *miss* the metric (value below ``fail_below``) and of
   those that pass it, their difference and ratio with cluster-robust intervals, the AUC of the metric's
   values, the power to see a difference of ``effect`` (10 points by default) and a verdict in words
   (:func:`words`), decided by the one verdict rule (:func:`rankgate.stats.verdict.verdict`, Holm within
   the headline rows and within each segment field's rows, as ``compare`` does).

The online outcomes (:data:`OUTCOMES`), each over the requests it applies to:

``negative_feedback``  requests with feedback; bad: any of it negative
``low_confidence``     requests with a top-1 score; bad: under the abstention threshold (needs one)
``fallback``           requests that log ``fallback``; bad: it is true
``abstention``         answered requests (no error); bad: no retrieved item
``incident``           requests that log a status or a deadline; bad: an error (4xx/5xx, client aborts
                       excluded) or a total time past the soft deadline

An outcome no request carries is *not measurable* (a note says what is missing), never 0.

The ``validity`` monitor of ``traces check`` (:func:`parse_monitor`, :func:`check_monitor`) runs the same
analysis for the gated metric and one outcome and raises a flag when the metric stops separating good
from bad outcomes while the data have the power to see it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rankgate.errors import F, InputError, UsageError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from rankgate.stats.risk import Contrast

__all__ = ["DEFAULT_METRICS", "KEYS", "OUTCOMES", "KeyedOutcomes", "Matching", "Outcome", "ValidityAnalysis",
           "ValidityMonitor", "ValidityRow", "analyse", "check_monitor", "outcome_counts", "parse_monitor",
           "query_text_key", "words"]

DEFAULT_METRICS = "hit@5,recall@5,mrr"
KEYS = ("text", "query_key")
#: Fewer queries than this on either side (missing or passing the metric) "cannot be told", whatever the interval
#: says: a cluster-robust variance read from fewer clusters is too unsure (its intervals come out too narrow).
MIN_GROUP_QUERIES = 10


@dataclass(frozen=True)
class Outcome:
    name: str
    label: str      # for tables
    phrase: str     # "queries that miss hit@5 offline get <phrase> 3.1× as often online"


OUTCOMES: Mapping[str, Outcome] = {o.name: o for o in (
    Outcome("negative_feedback", "negative feedback", "negative feedback"),
    Outcome("low_confidence", "low confidence", "a low-confidence top score"),
    Outcome("fallback", "fallback", "a fallback"),
    Outcome("abstention", "abstention (no result)", "no result"),
    Outcome("incident", "incident (error or timeout)", "an error or a timeout"),
)}


def query_text_key(text: str | None) -> str | None:
    """The join key of a query text: ``text_id`` of its normalised form; None for no text (or only
    whitespace and punctuation)."""
    from rankgate.io.shapes import text_id
    from rankgate.traces.model import normalise_query

    norm = normalise_query(text) if isinstance(text, str) else ""
    return text_id(norm) if norm else None


# -- 1. the trace side ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class KeyedOutcomes:
    """Per join key: the requests each outcome applies to (``n``) and the bad ones (``k``)."""

    keys: tuple[str, ...]
    n: Mapping[str, np.ndarray]          # outcome -> applicable requests per key
    k: Mapping[str, np.ndarray]          # outcome -> bad requests per key
    requests: np.ndarray                 # requests per key
    total: int                           # every request of the traces
    unkeyed: int                         # requests without a key (no query text)
    absent: Mapping[str, str]            # outcome -> why it is not measurable


_REQ_COLUMNS = ("request_id", "query_key", "query_text", "status", "http_status", "client_abort", "fallback",
                "total_ms", "soft_deadline_ms")


def _items_sql(score_stage: str) -> str:
    stage = "'" + score_stage.replace("'", "''") + "'"
    return (f"SELECT request_id, max(CASE WHEN stage = {stage} AND rank = 1 THEN score END) AS top1, "
            "count(*) AS n_items FROM items GROUP BY request_id")


def _counts_sql(threshold: float | None, items: bool, text: bool) -> str:
    """The one statement of the trace side: per ``query_key``, each outcome's applicable and bad requests
    (whole numbers), and a query text of the key. Plain SQL both engines read alike (``LEFT JOIN``,
    ``CASE``, ``sum``, ``min``, ``GROUP BY``)."""
    low = (f"sum(CASE WHEN i.top1 < {float(threshold)!r} THEN 1 ELSE 0 END)" if threshold is not None
           else "CAST(0 AS BIGINT)")
    answered = "(coalesce(r.status, 'ok') <> 'error' AND coalesce(r.http_status, 0) < 400)"
    error = "(r.http_status >= 400 OR (r.http_status IS NULL AND r.status = 'error'))"
    abort = "(coalesce(r.client_abort, false) OR coalesce(r.http_status, 0) = 499)"
    late = "(r.total_ms > r.soft_deadline_ms)"
    logged = ("(r.http_status IS NOT NULL OR r.status IS NOT NULL OR "
              "(r.total_ms IS NOT NULL AND r.soft_deadline_ms IS NOT NULL))")
    item_join = "LEFT JOIN v_items i ON i.request_id = r.request_id" if items else \
        "LEFT JOIN (SELECT CAST(NULL AS STRING) AS request_id, CAST(NULL AS DOUBLE) AS top1) i ON i.request_id = r.request_id"
    no_item = "i.request_id IS NULL"
    where = "WHERE r.query_text IS NOT NULL " if text else ""
    return f"""
SELECT r.query_key AS qk, min(r.query_text) AS qt, count(*) AS n,
  sum(CASE WHEN f.request_id IS NOT NULL THEN 1 ELSE 0 END) AS negative_feedback_n,
  sum(CASE WHEN f.neg > 0 THEN 1 ELSE 0 END) AS negative_feedback_k,
  sum(CASE WHEN i.top1 IS NOT NULL THEN 1 ELSE 0 END) AS low_confidence_n,
  {low} AS low_confidence_k,
  sum(CASE WHEN r.fallback IS NOT NULL THEN 1 ELSE 0 END) AS fallback_n,
  sum(CASE WHEN r.fallback THEN 1 ELSE 0 END) AS fallback_k,
  sum(CASE WHEN {answered} THEN 1 ELSE 0 END) AS abstention_n,
  sum(CASE WHEN {answered} AND {no_item} THEN 1 ELSE 0 END) AS abstention_k,
  sum(CASE WHEN {logged} THEN 1 ELSE 0 END) AS incident_n,
  sum(CASE WHEN ({error} AND NOT {abort}) OR {late} THEN 1 ELSE 0 END) AS incident_k
FROM v_requests r
LEFT JOIN (SELECT request_id, max(CASE WHEN negative THEN 1 ELSE 0 END) AS neg FROM feedback GROUP BY request_id) f
  ON f.request_id = r.request_id
{item_join}
{where}GROUP BY r.query_key"""


def _register_items(tables: Any, backend: Any) -> tuple[bool, dict[str, int]]:
    """Register ``items`` (on DuckDB, the items left in Parquet files are a view over them); whether
    there are any, and the rows per stage."""
    items = tables.items
    sources = tuple(getattr(tables, "item_sources", ()))
    if sources and backend.name != "duckdb":
        items, sources = tables.all_items(), ()
    stages: dict[str, int] = {}
    if sources:
        from rankgate.traces.native import items_view

        if items.num_rows:
            backend.register("v_items_arrow", items)
        backend.view("items", items_view(sources, "v_items_arrow" if items.num_rows else None))
        for s in sources:
            for st, c in s.stages.items():
                stages[st] = stages.get(st, 0) + c
        table = "v_items_arrow"
    else:
        backend.register("items", items)
        table = "items"
    if items.num_rows:
        for st, c in backend.rows(f"SELECT stage, count(*) AS n FROM {table} GROUP BY stage"):
            stages[st] = stages.get(st, 0) + int(c)
    return bool(stages), stages


def outcome_counts(tables: Any, *, backend: Any = None, threshold: float | None = None, key: str = "text"
                   ) -> KeyedOutcomes:
    """Per join key, each outcome's applicable and bad requests (module docs, step 1). ``tables``: the
    canonical :class:`~.model.TraceTables`; ``backend``: a :class:`~.engines.TraceBackend` (default a new
    DuckDB one); ``threshold``: the abstention threshold (low confidence: a top-1 score under it)."""
    import numpy as np

    if key not in KEYS:
        raise UsageError(f"{F.key} must be one of {', '.join(KEYS)}; got {key!r}")
    own = backend is None
    if backend is None:
        from rankgate.traces.engines import DuckDBBackend

        backend = DuckDBBackend()
    try:
        req = tables.requests
        backend.register("v_requests", req.select(list(_REQ_COLUMNS)))
        backend.register("feedback", tables.feedback)
        has_items, stages = _register_items(tables, backend)
        if has_items:
            score_stage = next((s for s in ("candidate", "reranked", "packed") if stages.get(s)), "candidate")
            backend.keep("v_items", _items_sql(score_stage))
        rows = backend.rows(_counts_sql(threshold, has_items, key == "text"))
        if getattr(tables, "item_sources", ()) and backend.name == "duckdb":
            from rankgate.traces.native import check_unchanged

            check_unchanged(tables.item_sources)
    finally:
        if own:
            backend.close()
    rows.sort(key=lambda row: row[0])  # (an engine returns groups in any order; the keys' order is the query keys')
    names = list(OUTCOMES)
    index: dict[str, int] = {}
    per: list[list[int]] = []
    unkeyed = tables.requests.num_rows - sum(int(r[2]) for r in rows)
    cache: dict[str, str | None] = {}
    for row in rows:
        if key == "text":
            text = row[1]
            if text not in cache:
                cache[text] = query_text_key(text)
            k = cache[text]
        else:
            k = row[0]
        if k is None:
            unkeyed += int(row[2])
            continue
        counts = [int(row[2])] + [int(v or 0) for v in row[3:]]
        at = index.get(k)
        if at is None:
            index[k] = len(per)
            per.append(counts)
        else:
            per[at] = [a + b for a, b in zip(per[at], counts)]
    arr = np.asarray(per, dtype=np.int64).reshape(len(per), 1 + 2 * len(names))
    n = {o: arr[:, 1 + 2 * j] for j, o in enumerate(names)}
    k_ = {o: arr[:, 2 + 2 * j] for j, o in enumerate(names)}
    absent: dict[str, str] = {}
    if tables.feedback.num_rows == 0:
        absent["negative_feedback"] = "not measurable (no feedback in the traces)"
    if threshold is None:
        absent["low_confidence"] = "not measurable (no abstention threshold: give abstention or abstention_threshold)"
    elif not has_items:
        absent["low_confidence"] = "not measurable (no retrieved items in the traces)"
    if not has_items:
        absent["abstention"] = "not measurable (no retrieved items in the traces)"
    if req.column("fallback").null_count == req.num_rows:
        absent["fallback"] = "not measurable (no request logs fallback)"
    for o in names:
        if o not in absent and int(n[o].sum()) == 0 and tables.requests.num_rows:
            absent[o] = f"not measurable (no request the {OUTCOMES[o].label} outcome applies to)"
    return KeyedOutcomes(tuple(index), n, k_, arr[:, 0], tables.requests.num_rows, unkeyed, absent)


# -- 2. the join, 3. the statistics -------------------------------------------------------------------
@dataclass(frozen=True)
class Matching:
    """How the gold queries and the production requests joined."""

    gold_queries: int
    matched: int                        # gold queries with at least one production request
    gold_unmatched: Mapping[str, int]   # reason -> gold queries
    requests: int                       # every request of the traces
    requests_matched: int
    requests_unmatched: Mapping[str, int]  # reason -> requests
    key: str

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "gold_queries": self.gold_queries, "matched": self.matched,
                "gold_unmatched": dict(self.gold_unmatched), "requests": self.requests,
                "requests_matched": self.requests_matched, "requests_unmatched": dict(self.requests_unmatched)}


@dataclass(frozen=True)
class ValidityRow:
    """One offline metric against one online outcome, over all matched queries or one segment."""

    metric: str
    outcome: str
    field: str | None                   # the segment field (None: all matched queries)
    segment: str | None
    contrast: Contrast
    p_holm: float
    family: int
    verdict: str                        # the verdict rule's word (rankgate.stats.verdict)
    kind: str                           # link | reversed | none | cannot be told | not significant
    sentence: str

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"metric": self.metric, "outcome": self.outcome}
        if self.field is not None:
            d["field"], d["segment"] = self.field, self.segment
        d.update(self.contrast.to_dict())
        d["p_holm"] = None if math.isnan(self.p_holm) else self.p_holm
        d.update({"family": self.family, "verdict": self.verdict, "kind": self.kind, "sentence": self.sentence})
        return d


@dataclass(frozen=True)
class ValidityAnalysis:
    matching: Matching
    rows: tuple[ValidityRow, ...]
    metrics: tuple[str, ...]
    outcomes: tuple[str, ...]           # the outcomes asked for (measured or not)
    absent: Mapping[str, str]           # outcome -> why it is not measurable
    by: tuple[str, ...]
    fail_below: float
    effect: float
    confidence: float
    notes: tuple[str, ...] = field(default=())

    def row(self, metric: str, outcome: str, field: str | None = None, segment: str | None = None
            ) -> ValidityRow | None:
        for r in self.rows:
            if (r.metric, r.outcome, r.field, r.segment) == (metric, outcome, field, segment):
                return r
        return None

    def headline(self) -> tuple[ValidityRow, ...]:
        return tuple(r for r in self.rows if r.field is None)

    def to_dict(self) -> dict[str, Any]:
        return {"matching": self.matching.to_dict(), "metrics": list(self.metrics), "outcomes": list(self.outcomes),
                "not_measurable": dict(self.absent), "by": list(self.by), "fail_below": self.fail_below,
                "effect": self.effect, "confidence": self.confidence, "notes": list(self.notes),
                "rows": [r.to_dict() for r in self.rows]}


def words(metric: str, outcome: str, c: Contrast, verdict: str) -> tuple[str, str]:
    """``(kind, sentence)`` of one row: the verdict rule's word (``verdict``) said for a link between a
    metric and an outcome. ``better`` (the failing queries' bad-outcome rate is higher) is a link,
    ``worse`` a reversed one; a difference within noise is "no link" when the data had the power to see
    ``effect`` (80 %), else "cannot be told"."""
    from rankgate.metrics.display import fmt_count, fmt_share, fmt_share_change, fmt_times
    from rankgate.stats.verdict import BETTER, NA, NOISE, UNCHANGED, WORSE

    phrase = OUTCOMES[outcome].phrase
    who = f"queries that miss {metric} offline get {phrase}"
    rd_ci = f"{fmt_share_change(c.rd_low)} to {fmt_share_change(c.rd_high)}"
    effect = f"{fmt_share_change(c.effect).lstrip('+')}"
    small = c.fail_queries < MIN_GROUP_QUERIES or c.pass_queries < MIN_GROUP_QUERIES
    if c.fail_n and c.pass_n and c.fail_k + c.pass_k in (0, c.fail_n + c.pass_n):
        when = "never happened on" if c.fail_k == 0 else "happened on every one of"
        return "cannot be told", (f"{OUTCOMES[outcome].label} {when} the {fmt_count(c.fail_n + c.pass_n)} matched "
                                  "requests: there is nothing to tell apart")
    if verdict in (BETTER, WORSE) and not small:
        if math.isfinite(c.rr) and not math.isnan(c.rr_low):
            size = f"{fmt_times(c.rr)} as often online (CI {fmt_times(c.rr_low).rstrip('×')}–{fmt_times(c.rr_high)})"
        else:  # a rate of 0 on one side: the difference says it
            more = "more" if c.rd > 0 else "less"
            size = (f"{fmt_share_change(abs(c.rd)).lstrip('+')} {more} often online "
                    f"({fmt_share(c.fail_rate)} vs {fmt_share(c.pass_rate)}; difference CI {rd_ci})")
        if verdict == BETTER:
            return "link", f"{who} {size}"
        return "reversed", (f"reversed: {who} {size}, so less often than queries that pass it: the metric points "
                            "the wrong way for this outcome")
    if verdict == NA or small or c.power < 0.8:
        why = (f"{fmt_count(c.fail_queries)} miss and {fmt_count(c.pass_queries)} pass {metric}" if small else
               f"a {effect} difference would be seen with {fmt_share(c.power, 0)} power"
               + (f"; the smallest seen with 80% is {fmt_share_change(c.detectable).lstrip('+')}"
                  if math.isfinite(c.detectable) else ""))
        return "cannot be told", f"at {fmt_count(c.queries)} matched queries this cannot be told ({why})"
    rates = f"{fmt_share(c.fail_rate)} vs {fmt_share(c.pass_rate)}; difference {fmt_share_change(c.rd)}, CI {rd_ci}"
    if verdict in (NOISE, UNCHANGED):
        return "none", f"no link: {who} about as often online as queries that pass it ({rates})"
    return "not significant", f"{verdict}: {who} more often online ({rates})"


def analyse(query_ids: Sequence[str], keys: Sequence[str | None], values: Mapping[str, np.ndarray],
            traces: KeyedOutcomes, *, segments: Mapping[str, Sequence[str]] | None = None,
            outcomes: Sequence[str] | None = None, fail_below: float = 0.5, effect: float = 0.10,
            confidence: float = 0.95, key: str = "text", no_key_reason: str = "no query text") -> ValidityAnalysis:
    """The join and the statistics (module docs, steps 2 and 3). ``query_ids``/``keys``: the gold queries
    and their join keys (None: the query has none, counted under ``no_key_reason``); ``values``: metric
    -> per-query values aligned with them (NaN: not applicable); ``segments``: field -> one label per
    query. Raises :class:`~rankgate.errors.InputError` when no gold query joins any request."""
    import numpy as np

    from rankgate.stats.bootstrap import holm
    from rankgate.stats.risk import risk_contrast
    from rankgate.stats.verdict import verdict as verdict_of

    if not 0 < effect < 1:
        raise UsageError(f"{F.effect} must lie between 0 and 1 (a difference of two shares); got {effect}")
    wanted = tuple(outcomes) if outcomes else tuple(OUTCOMES)
    for o in wanted:
        if o not in OUTCOMES:
            raise UsageError(f"{F.outcomes}: unknown outcome {o!r}; outcomes: {', '.join(OUTCOMES)}")
    index = {k: i for i, k in enumerate(traces.keys)}
    gold_reasons: dict[str, int] = {}
    pos = np.full(len(query_ids), -1, dtype=np.int64)
    seen: set[str] = set()
    for i, k in enumerate(keys):
        if k is None:
            gold_reasons[no_key_reason] = gold_reasons.get(no_key_reason, 0) + 1
        elif k in seen:
            gold_reasons["the same query as an earlier gold query"] = \
                gold_reasons.get("the same query as an earlier gold query", 0) + 1
        elif k not in index:
            seen.add(k)
            gold_reasons["no production request"] = gold_reasons.get("no production request", 0) + 1
        else:
            seen.add(k)
            pos[i] = index[k]
    matched = pos >= 0
    used = np.zeros(len(traces.keys), dtype=bool)
    used[pos[matched]] = True
    req_matched = int(traces.requests[used].sum())
    req_reasons: dict[str, int] = {}
    if traces.unkeyed:
        req_reasons["no query text" if key == "text" else "no query key"] = traces.unkeyed
    other = traces.total - traces.unkeyed - req_matched
    if other:
        req_reasons["query not in the gold set"] = other
    matching = Matching(len(query_ids), int(matched.sum()), gold_reasons, traces.total, req_matched, req_reasons, key)
    if not matched.any():
        raise InputError(
            f"no gold query matches a production request ({len(query_ids):,} gold queries, {traces.total:,} "
            f"requests; joined on {'the normalised query text' if key == 'text' else 'query_key'})",
            path="<validity>",
            hint=("check that the traces log the query text and that gold and traces are of the same product"
                  if key == "text" else "check that the gold set's query_key field holds the traces' query_key"))
    measured = tuple(o for o in wanted if o not in traces.absent)
    groups: list[tuple[str | None, str | None, np.ndarray]] = [(None, None, matched)]
    for name, labels in (segments or {}).items():
        lab = np.asarray([str(x) for x in labels], dtype=object)
        for label in sorted(set(lab[matched].tolist())):
            groups.append((name, label, matched & (lab == label)))
    raw: list[tuple[str, str, str | None, str | None, Contrast]] = []
    for seg_field, seg_value, mask in groups:
        for metric, vals in values.items():
            v = np.asarray(vals, dtype=np.float64)
            ok = mask & ~np.isnan(v)
            fail = ok & (v < fail_below)
            pas = ok & ~(v < fail_below)
            for o in measured:
                n_o, k_o = traces.n[o], traces.k[o]
                f_i, p_i = pos[fail], pos[pas]
                c = risk_contrast(k_o[f_i], n_o[f_i], k_o[p_i], n_o[p_i], x1=v[fail], x0=v[pas], effect=effect,
                                  confidence=confidence)
                raw.append((metric, o, seg_field, seg_value, c))
    rows: list[ValidityRow] = []
    families: dict[str | None, list[int]] = {}
    for i, r in enumerate(raw):
        families.setdefault(r[2], []).append(i)
    p_holm = [math.nan] * len(raw)
    for members in families.values():
        ps = [raw[i][4].p_value for i in members]
        testable = [j for j, p in zip(members, ps) if not math.isnan(p)]
        if testable:
            adj = holm([raw[j][4].p_value for j in testable])
            for j, a in zip(testable, adj):
                p_holm[j] = float(a)
    for i, (metric, o, seg_field, seg_value, c) in enumerate(raw):
        family = len(families[seg_field])
        word = verdict_of(c.rd, c.rd_low, c.rd_high, c.p_value, p_holm[i], family, higher_is_better=True,
                          confidence=confidence, n=c.queries if c.fail_n and c.pass_n else 0)
        kind, sentence = words(metric, o, c, word)
        rows.append(ValidityRow(metric, o, seg_field, seg_value, c, p_holm[i], family, word, kind, sentence))
    return ValidityAnalysis(matching, tuple(rows), tuple(values), wanted, {o: traces.absent[o] for o in wanted
                                                                          if o in traces.absent},
                            tuple(segments or {}), fail_below, effect, confidence)


# -- the monitor of traces check ----------------------------------------------------------------------------
MONITOR_KEYS = ("gold", "run", "metric", "outcome", "key", "fail_below", "effect", "min_power", "confidence",
                "severity", "owner", "name", "gold_format", "run_format")


@dataclass(frozen=True)
class ValidityMonitor:
    """The ``validity:`` block of a monitors file (docs/validity.md, "The monitor")."""

    gold: str
    run: str
    metric: str
    outcome: str = "negative_feedback"
    key: str = "text"
    fail_below: float = 0.5
    effect: float = 0.10
    min_power: float = 0.8
    confidence: float = 0.95
    severity: str = "error"
    owner: str | None = None
    name: str = "validity"
    gold_format: str | None = None
    run_format: str | None = None
    line: int | None = field(default=None, compare=False)


def parse_monitor(r: Any, node: Any, base: str) -> ValidityMonitor:
    """The ``validity:`` block read with the monitors file's reader ``r`` (errors name file:line:key);
    ``base``: the folder of the monitors file, which relative paths are read from."""
    import os

    from rankgate._util.configfile import SEVERITIES

    d = r.mapping(node, "validity", MONITOR_KEYS)
    for required in ("gold", "run", "metric"):
        if required not in d:
            raise r.fail(f"validity.{required}", node.line, "is required",
                         "name the gold set, the run it was gated on and the gated metric (docs/validity.md)")
    kw: dict[str, Any] = {}
    for k, item in d.items():
        at = f"validity.{k}"
        if k in ("gold", "run"):
            p = r.text(item, at)
            kw[k] = p if os.path.isabs(p) else os.path.join(base, p)
        elif k == "metric":
            kw[k] = r.text(item, at)
            _check_metric(kw[k], lambda msg, _i=item, _at=at: r.fail(_at, _i.line, msg))
        elif k == "outcome":
            kw[k] = r.choice(item, at, tuple(OUTCOMES))
        elif k == "key":
            kw[k] = r.choice(item, at, KEYS)
        elif k in ("fail_below", "effect", "min_power", "confidence"):
            v = r.number(item, at, share=True)
            if not 0 < v < 1 and not (k == "fail_below" and 0 < v <= 1):
                raise r.fail(at, item.line, f"must lie between 0 and 1; got {v}")
            kw[k] = v
        elif k == "severity":
            kw[k] = r.choice(item, at, SEVERITIES)
        else:  # owner, name, gold_format, run_format
            kw[k] = r.text(item, at)
    return ValidityMonitor(line=node.line, **kw)


def _check_metric(spec: str, fail: Any) -> None:
    from rankgate.metrics.info import metric_info

    try:
        info = metric_info(spec)
    except Exception as exc:  # noqa: BLE001 - the parser's own message, said at the config's line
        raise fail(f"is not a metric rankgate knows ({exc})") from None
    if not info.higher_is_better:
        raise fail(f"{spec} is better low; validity reads metrics that are better high (hit, recall, mrr, ndcg…)")


@dataclass(frozen=True)
class MonitorResult:
    """What the validity monitor found: a flag's detail, or why it could not decide."""

    flagged: bool
    decided: bool
    value: float          # the risk difference (nan: none)
    queries: int
    detail: str


def check_monitor(m: ValidityMonitor, analysis: ValidityAnalysis) -> MonitorResult:
    """The monitor's rule on the analysis of its metric and outcome: **flagged** when the data have the power
    (``min_power``) to see a risk difference of ``effect`` and the metric does not separate (the difference's
    interval does not lie wholly above 0: no link, or a reversed one); **undecided** (never silent) when the
    power is short, with the smallest difference it could see; else it passes."""
    from rankgate.metrics.display import fmt_count, fmt_share, fmt_share_change

    if m.outcome in analysis.absent:
        return MonitorResult(False, False, math.nan, 0, f"{m.outcome}: {analysis.absent[m.outcome]}")
    row = analysis.row(analysis.metrics[0], m.outcome)
    assert row is not None
    c = row.contrast
    if c.power < m.min_power or c.fail_queries < MIN_GROUP_QUERIES or c.pass_queries < MIN_GROUP_QUERIES:
        smallest = fmt_share_change(c.detectable).lstrip("+") if math.isfinite(c.detectable) else "none"
        return MonitorResult(False, False, c.rd, c.queries,
                             f"undecidable at {fmt_count(c.queries)} matched queries (power {fmt_share(c.power, 0)} "
                             f"to see {fmt_share_change(m.effect).lstrip('+')}; smallest visible: {smallest})")
    separates = row.kind == "link"
    detail = f"{m.metric} vs {m.outcome}: {row.sentence}"
    return MonitorResult(not separates, True, c.rd, c.queries, detail)
