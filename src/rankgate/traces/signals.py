"""The trace signals per time window and segment: :func:`summarize_traces` -> :class:`TraceSummary`.

Numbers in, numbers out; no files are written and nothing is rendered here (renderers live in
:mod:`rankgate.render.traces`). The tables are the canonical ones of :mod:`.model`; the SQL is in
:mod:`.queries`, run by an engine of :mod:`.engines`. docs/traces.md ("Signals") defines each signal.

Windows are aligned to the UTC epoch (a ``1d`` window starts at 00:00 UTC; ``1w`` on Monday).
Segments: all traffic (``all``), then each ``by`` field separately (``tenant=acme``). The field
``source`` puts a request under the sources of the items it cited (else of its context items).

A signal whose inputs are absent from the data is *not measurable* (``value=None`` and a note such
as ``not measurable (no fallback)``), never 0. A window or segment with no applicable row has
``value=None`` and ``n=0``.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rankgate.errors import F, UsageError
from rankgate.io.cost import COST_KEYS
from rankgate.traces.queries import COST_Q, COSTS, LATENCY_Q, QUANTILE_COLUMNS, RESOURCES, SCORE_Q, STAGES_MS, Plan

#: How the cost keys are named in the signals' labels and the tables (:mod:`rankgate.traces.cost`).
COST_LABELS = {"tokens_in": "input tokens", "tokens_out": "output tokens", "usd": "spend (USD)",
               "embed_ms": "embedding compute (ms)", "rerank_ms": "reranking compute (ms)"}

__all__ = ["SIGNALS", "SIGNAL_GROUPS", "SignalInfo", "SignalValue", "SourceFeedback", "TraceSummary",
           "parse_signals", "parse_window", "summarize_traces"]

SEGMENT_FIELDS = ("tenant", "surface", "adapter", "conversation_id", "data_source", "source", "index_version", "corpus_version",
                  "privacy_mode", "status", "top_k", "turn")  # (turn: first or follow_up, from the request's turn)
_UNITS = {"m": 60, "h": 3600, "d": 86_400, "w": 7 * 86_400}
_MONDAY_US = 4 * 86_400 * 1_000_000  # the epoch was a Thursday


@dataclass(frozen=True)
class SignalInfo:
    name: str
    group: str  # retrieval | operational | privacy
    unit: str  # share | per_1k | ms | score | count
    worse: str  # "up": a higher value is worse; "down": a lower one; "": neither
    label: str


def _catalogue() -> tuple[SignalInfo, ...]:
    s = [
        SignalInfo("low_confidence_rate", "retrieval", "share", "up", "requests whose top score is under the abstention threshold"),
    ]
    for c, lab in (("top1_score", "top-1 score"), ("margin", "top-1 minus top-2 score")):
        s += [SignalInfo(f"{c}.p{round(p * 100)}", "retrieval", "score", "", f"{lab}, p{round(p * 100)}") for p in SCORE_Q]
    s += [
        SignalInfo("no_result_rate", "retrieval", "share", "up", "answered requests with no retrieved item"),
        SignalInfo("fallback_rate", "retrieval", "share", "up", "requests where the application fell back"),
        SignalInfo("deprecated_context_rate", "retrieval", "share", "up",
                   "requests whose context holds a deprecated, superseded or retired item"),
        SignalInfo("deprecated_item_share", "retrieval", "share", "up",
                   "context items that are deprecated, superseded or retired"),
        SignalInfo("stale_citation_rate", "retrieval", "share", "up",
                   "citations of a version older than the document's current one"),
        SignalInfo("instability.rbo", "retrieval", "score", "down",
                   "RBO (p=0.9) with the previous window's list, same index/corpus version"),
        SignalInfo("instability.jaccard", "retrieval", "score", "down", "top-k Jaccard, same version"),
        SignalInfo("instability.changed_rate", "retrieval", "share", "up", "lists that changed, same version"),
        SignalInfo("corpus_changed.rbo", "retrieval", "score", "", "RBO with the previous window's list, new version"),
        SignalInfo("corpus_changed.jaccard", "retrieval", "score", "", "top-k Jaccard, new version"),
        SignalInfo("corpus_changed.changed_rate", "retrieval", "share", "", "lists that changed, new version"),
        SignalInfo("negative_feedback_rate", "retrieval", "share", "up", "feedback that is negative"),
        SignalInfo("error_rate_per_1k", "operational", "per_1k", "up", "4xx/5xx errors per 1,000 requests (client aborts excluded)"),
        SignalInfo("client_abort_rate", "operational", "share", "", "requests the client aborted (HTTP 499)"),
        SignalInfo("timeout_rate", "operational", "share", "up", "requests over their soft deadline"),
        SignalInfo("retry_rate", "operational", "share", "up", "requests that were retried"),
        SignalInfo("retries", "operational", "count", "", "retry attempts"),
    ]
    for stage in STAGES_MS:
        s += [SignalInfo(f"latency.{stage}.p{round(p * 100)}", "operational", "ms", "up", f"{stage} latency, p{round(p * 100)}")
              for p in LATENCY_Q]
    for res, unit, what in (("cpu_ms", "ms", "process CPU time per request"),
                            ("memory_mb", "MB", "process memory (RSS) per request")):
        s += [SignalInfo(f"resources.{res}.p{round(p * 100)}", "operational", unit, "up",
                         f"{what}, p{round(p * 100)}") for p in LATENCY_Q]
    for key in COST_KEYS:  # what a request cost (rankgate.traces.cost): the mean and the p95 per key
        unit = "usd" if key == "usd" else "ms" if key.endswith("_ms") else "count"
        what = COST_LABELS[key]
        s += [SignalInfo(f"cost.{key}.mean", "operational", unit, "up", f"{what} per request, mean"),
              SignalInfo(f"cost.{key}.p{round(COST_Q[0] * 100)}", "operational", unit, "up",
                         f"{what} per request, p{round(COST_Q[0] * 100)}")]
    s += [
        SignalInfo("redaction_efficacy", "privacy", "share", "down", "1 - leaked/sensitive tokens"),
        SignalInfo("block_efficacy", "privacy", "share", "down", "block-mode requests with sensitive tokens that were blocked"),
        SignalInfo("secure_field_bypass_rate", "privacy", "share", "up", "secure fields that were bypassed"),
    ]
    return tuple(s)


SIGNALS: tuple[SignalInfo, ...] = _catalogue()
#: The signals ``rankgate traces judge`` estimates from a judged sample (:mod:`.judge`), not computed here:
#: ``traces check --judge-dir`` hands them to the monitors (rules robust_z, min, max).
JUDGE_SIGNALS: tuple[SignalInfo, ...] = (
    SignalInfo("judge.context_relevance", "retrieval", "share", "down",
               "context items a judge grades relevant to the query (a sampled estimate)"),
    SignalInfo("judge.faithfulness", "retrieval", "share", "down",
               "answers a judge finds faithful to their context (a sampled estimate)"),
)
SIGNAL_INFO: Mapping[str, SignalInfo] = {s.name: s for s in SIGNALS + JUDGE_SIGNALS}


def _groups() -> dict[str, tuple[str, ...]]:
    names = [s.name for s in SIGNALS]
    return {
        "latency": tuple(n for n in names if n.startswith("latency.")),
        "resources": tuple(n for n in names if n.startswith("resources.")),
        "cost": tuple(n for n in names if n.startswith("cost.")),
        "errors": ("error_rate_per_1k", "client_abort_rate"),
        "fallback": ("fallback_rate",),
        "low_confidence": ("low_confidence_rate",),
        "scores": tuple(n for n in names if n.startswith(("top1_score.", "margin."))),
        "no_result": ("no_result_rate",),
        "deprecated": ("deprecated_context_rate", "deprecated_item_share"),
        "stale_citations": ("stale_citation_rate",),
        "instability": tuple(n for n in names if n.startswith(("instability.", "corpus_changed."))),
        "feedback": ("negative_feedback_rate",),
        "timeouts": ("timeout_rate",),
        "retries": ("retry_rate", "retries"),
        "privacy": ("redaction_efficacy", "block_efficacy", "secure_field_bypass_rate"),
    }


# the groups --signals selects (every signal is in exactly one); "headline" and "all" name sets of them
SIGNAL_GROUPS: Mapping[str, tuple[str, ...]] = _groups()
SIGNAL_SETS: Mapping[str, tuple[str, ...]] = {"headline": ("latency", "errors", "fallback", "low_confidence"),
                                              "all": tuple(SIGNAL_GROUPS)}


def top1_only(groups: frozenset[str] | None) -> bool:
    """Whether the item facts ``groups`` (:func:`parse_signals`) need are the top-1 score alone (the
    low-confidence share without the score, no-result or deprecated groups)."""
    return groups is not None and "low_confidence" in groups and not groups & {"scores", "no_result", "deprecated"}


def parse_signals(text: str | Iterable[str] | None) -> frozenset[str] | None:
    """The signal groups of a ``--signals`` value (``headline``, ``all`` or a comma list of groups and
    sets); None when that is every group (the whole analysis). UsageError naming the valid names."""
    if text is None:
        return None
    parts = [p.strip() for p in (text.split(",") if isinstance(text, str) else text)]
    if not any(parts):
        raise UsageError(f"{F.signals} is empty; give headline, all, or groups: " + ", ".join(SIGNAL_GROUPS))
    out: set[str] = set()
    for p in parts:
        if not p:
            continue
        if p in SIGNAL_SETS:
            out.update(SIGNAL_SETS[p])
        elif p in SIGNAL_GROUPS:
            out.add(p)
        else:
            raise UsageError(f"{F.signals} {p!r} is not a signal group; valid: {', '.join(SIGNAL_SETS)}, "
                             f"{', '.join(SIGNAL_GROUPS)}")
    return None if out == set(SIGNAL_GROUPS) else frozenset(out)


@dataclass(frozen=True)
class SignalValue:
    """One signal in one window and segment. ``window`` is the window start (microseconds since the
    epoch, UTC) or ``None`` for the whole period; ``k`` the numerator of a rate (else None)."""

    window: int | None
    segment: str
    signal: str
    value: float | None
    n: int
    k: int | None = None
    note: str | None = None


@dataclass(frozen=True)
class SourceFeedback:
    """Negative feedback on the requests of one source, with its Wilson interval; ``flagged`` when
    the interval lies above the overall rate of the same window."""

    window: int | None
    source: str
    n: int
    negative: int
    rate: float
    low: float
    high: float
    overall: float
    flagged: bool


@dataclass(frozen=True)
class TraceSummary:
    window_us: int
    window: str
    windows: tuple[int, ...]
    by: tuple[str, ...]
    values: tuple[SignalValue, ...]  # per window
    period: tuple[SignalValue, ...]  # the whole period
    feedback_by_source: tuple[SourceFeedback, ...]
    retries_by_reason: tuple[tuple[str, int, int], ...]
    unstable: tuple[Mapping[str, Any], ...]
    low_confidence: tuple[Mapping[str, Any], ...]
    stale_citations: tuple[Mapping[str, Any], ...]
    meta: Mapping[str, Any] = field(default_factory=dict)
    skipped: Mapping[str, Any] = field(default_factory=dict)
    groups: frozenset[str] | None = None  # the signal groups computed; None: every one

    def computed(self, group: str) -> bool:
        return self.groups is None or group in self.groups

    def value(self, signal: str, window: int | None = None, segment: str = "all") -> SignalValue | None:
        rows = self.period if window is None else self.values
        for v in rows:
            if v.signal == signal and v.segment == segment and v.window == window:
                return v
        return None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (summary.json): the whole period grouped as retrieval/operational/privacy,
        with ``operational.latency_ms.<stage>.{p50,p95,p99,n}``, then the windows."""
        def entry(v: SignalValue) -> dict[str, Any]:
            d: dict[str, Any] = {"value": _clean(v.value), "n": v.n}
            if v.k is not None:
                d["k"] = v.k
            if v.note:
                d["note"] = v.note
            return d

        out: dict[str, Any] = {"window": self.window, "windows": [iso(w) for w in self.windows], "by": list(self.by)}
        out.update({k: v for k, v in self.meta.items()})
        groups: dict[str, dict[str, Any]] = {"retrieval": {}, "operational": {"latency_ms": {}}, "privacy": {}}
        segments: dict[str, dict[str, Any]] = {}
        for v in self.period:
            info = SIGNAL_INFO[v.signal]
            if v.segment != "all":
                segments.setdefault(v.segment, {})[v.signal] = entry(v)
                continue
            if v.signal.startswith(("latency.", "resources.", "cost.")):
                kind, stage, q = v.signal.split(".")
                slot = groups["operational"].setdefault("latency_ms" if kind == "latency" else kind, {}).setdefault(
                    stage, {})
                slot[q] = _clean(v.value)
                slot["n"] = v.n
                if v.note:
                    slot["note"] = v.note
            else:
                groups[info.group][v.signal] = entry(v)
        if self.computed("retries"):
            groups["operational"]["retries_by_reason"] = [{"reason": r, "requests": n, "retries": k}
                                                          for r, n, k in self.retries_by_reason]
        if not groups["operational"]["latency_ms"] and not self.computed("latency"):
            del groups["operational"]["latency_ms"]
        out.update(groups)
        out["segments"] = segments
        if self.computed("feedback"):
            out["feedback_by_source"] = [
                {"source": f.source, "n": f.n, "negative": f.negative, "rate": f.rate, "low": f.low, "high": f.high,
                 "overall": f.overall, "flagged": f.flagged} for f in self.feedback_by_source if f.window is None]
        examples = {"unstable": ("instability", list(self.unstable)),
                    "low_confidence": ("low_confidence", list(self.low_confidence)),
                    "stale_citations": ("stale_citations", list(self.stale_citations))}
        out["examples"] = {k: v for k, (g, v) in examples.items() if self.computed(g)}
        out["skipped"] = dict(self.skipped)
        return out


def _clean(x: float | None) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


def iso(window_us: int | None) -> str:
    if window_us is None:
        return "all"
    return dt.datetime.fromtimestamp(window_us / 1e6, tz=dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


MAX_WINDOW_DAYS = 36_500  # 100 years: wider than any trace export, far inside the int64 microseconds


def parse_window(text: str) -> int:
    """``15m``, ``1h``, ``6h``, ``1d``, ``1w`` -> the window width in microseconds (at most
    :data:`MAX_WINDOW_DAYS`)."""
    m = re.fullmatch(r"\s*(\d{1,15})\s*([mhdw])\s*", str(text)[:100])
    if not m or int(m.group(1)) == 0:
        raise UsageError(f"{F.window} must be a whole number and a unit m, h, d or w (e.g. 1h, 1d); got {text!r:.60}")
    seconds = int(m.group(1)) * _UNITS[m.group(2)]
    if seconds > MAX_WINDOW_DAYS * 86_400:
        raise UsageError(f"{F.window} must be at most {MAX_WINDOW_DAYS}d (100 years); got {text!r:.60}")
    return seconds * 1_000_000


# -- the analysis ---------------------------------------------------------------------------------------
def summarize_traces(source: Any, *, by: Sequence[str] = (), backend: Any = None, window: str = "1d",
                     threshold: float | None = None, manifest: Any = None, k: int = 10, min_support: int = 2,
                     p: float = 0.9, examples: int = 10, signals: str | Iterable[str] | None = None) -> TraceSummary:
    """Every signal per window and segment (module docs). ``source``: :class:`~.model.TraceTables`
    or the paths :func:`~.read.read_traces` takes. ``backend``: a :class:`~.engines.TraceBackend`
    (default: a new DuckDB one). ``threshold``: the abstention threshold (top-1 score). ``manifest``:
    a :class:`rankgate.corpus.CorpusManifest` for item status and current document versions.
    ``k``: the list depth compared for instability; ``min_support``: requests that must agree on a
    window's list before it is a reference; ``p``: RBO's persistence. ``signals``: the signal groups
    to compute (:data:`SIGNAL_GROUPS`, ``"headline"``, a comma list; default every one): the
    statements other groups need are not run, and the summary holds the selected signals only."""
    import numpy as np
    import pyarrow as pa

    from rankgate.traces.model import TraceTables
    from rankgate.traces.similarity import rbo_weights

    if not isinstance(source, TraceTables):
        from rankgate.traces.read import read_traces

        source = read_traces(source)
    from rankgate.traces.model import current_field

    by = tuple(dict.fromkeys(current_field(f, "segments") for f in by))
    for f in by:
        if f not in SEGMENT_FIELDS:
            raise UsageError(f"{F.by} {f!r} is not a segment field; fields: {', '.join(SEGMENT_FIELDS)}")
    if k < 1:
        raise UsageError(f"the instability depth k must be at least 1; got {k}")
    width = parse_window(window)
    groups = parse_signals(signals)
    own = backend is None
    if backend is None:
        from rankgate.traces.engines import DuckDBBackend

        backend = DuckDBBackend()
    try:
        req = source.requests
        ts = np.asarray(req.column("ts").cast(pa.int64()).to_numpy(zero_copy_only=False))
        offset = _MONDAY_US if window.strip().endswith("w") else 0
        w = (ts - offset) // width * width + offset
        backend.register("requests", req.append_column("w", pa.array(w, pa.int64())))
        facts = _item_facts(source, backend)
        backend.register("citations", source.citations)
        backend.register("feedback", source.feedback)
        rw = rbo_weights(k, p)
        backend.register("rbo_w", pa.table({"m": [r[0] for r in rw], "s": [r[1] for r in rw], "l": [r[2] for r in rw],
                                            "w": [r[3] for r in rw]},
                                           schema=pa.schema([("m", pa.int64()), ("s", pa.int64()), ("l", pa.int64()),
                                                             ("w", pa.float64())])))
        stages = facts["stages"]
        plan = Plan(
            dialect=backend.dialect,
            score_stage=_first(stages, ("candidate", "reranked", "packed")),
            context_stage=_first(stages, ("packed", "reranked", "candidate")),
            list_stage=_first(stages, ("reranked", "candidate", "packed")),
            by=by, threshold=threshold, manifest=manifest is not None, k=k, min_support=min_support, width_us=width, p=p)
        if manifest is not None:
            facts["manifest"] = _manifest_table(manifest)
            backend.register("manifest", facts["manifest"])
        summary = _run(backend, plan, source, facts, width, window, manifest, examples, groups)
        if facts["sources"]:  # every statement read the files the checks saw
            from rankgate.traces.native import check_unchanged

            check_unchanged(facts["sources"])
        return summary
    finally:
        if own:
            backend.close()


def _item_facts(source: Any, backend: Any) -> dict[str, Any]:
    """Register ``items`` with ``backend`` and count what the plan needs: rows, scored rows, rows with
    a status, rows per stage. Items left in Parquet files (``source.item_sources``) are a view over
    the files on DuckDB, counted when they were read; other engines get them as Arrow rows."""
    items = source.items
    sources = tuple(getattr(source, "item_sources", ()))
    if sources and backend.name != "duckdb":
        items, sources = source.all_items(), ()
    n = items.num_rows
    facts: dict[str, Any] = {"rows": n, "scored": n - items.column("score").null_count,
                             "with_status": n - items.column("status").null_count, "stages": {}}
    if sources:
        from rankgate.traces.native import items_view

        if n:
            backend.register("items_arrow", items)
        backend.view("items", items_view(sources, "items_arrow" if n else None))
    else:
        backend.register("items", items)
    stages: dict[str, int] = {}
    if n:
        table = "items_arrow" if sources else "items"
        for s, c in backend.rows(f"SELECT stage, count(*) AS n FROM {table} GROUP BY stage"):
            stages[s] = stages.get(s, 0) + int(c)
    for src in sources:
        facts["rows"] += src.rows
        facts["scored"] += src.scored
        facts["with_status"] += src.with_status
        for s, c in src.stages.items():
            stages[s] = stages.get(s, 0) + c
    facts["stages"] = stages
    facts["sources"] = sources
    # each file's rank-1 scores, kept by its check pass (native.inspect(rank1=True)): the top-1 score
    # without decoding the items again
    facts["rank1"] = bool(sources) and all(s.rank1 is not None for s in sources)
    facts["rank1_arrow"] = bool(n)
    # every item decoded once by the reader (ItemSource.columns, rankgate.traces.item_columns): the
    # per-request item facts and lists come from those columns, and the files are not read again
    facts["columns"] = (tuple(p for s in sources for p in s.columns)
                        if sources and not n and all(getattr(s, "columns", None) for s in sources) else None)
    if facts["rank1"]:
        import pyarrow as pa

        backend.register("rank1_files", pa.concat_tables([s.rank1 for s in sources]))
    return facts


# the columns of Plan.counts each signal group reads
_COUNTS: Mapping[str, tuple[str, ...]] = {
    "low_confidence": ("scored_n", "lowconf_k"), "no_result": ("answered_n", "noresult_k"),
    "fallback": ("fallback_n", "fallback_k"), "deprecated": ("ctxreq_n", "ctxreq_k", "ctxitem_n", "ctxitem_k"),
    "errors": ("err_n", "err_k", "abort_k"), "timeouts": ("timeout_n", "timeout_k"),
    "retries": ("retry_n", "retry_k", "retries"),
    "privacy": ("privacy_n", "sensitive", "leaked", "block_n", "block_k", "secure_req_n", "secure", "bypassed"),
}


def _first(stages: Mapping[str, int], order: Iterable[str]) -> str:
    for s in order:
        if stages.get(s):
            return s
    return "candidate"


def _manifest_table(manifest: Any) -> Any:
    import pyarrow as pa

    def arr(col: Any) -> Any:
        a = getattr(col, "array", None)
        return (a if a is not None else pa.array(list(col), pa.string())).cast(pa.string())

    return pa.table({"item_id": arr(manifest.chunk_ids), "doc_id": arr(manifest.doc_ids),
                     "status": arr(manifest.statuses)})


def _keyed(rows: list[tuple[Any, ...]], names: Sequence[str]) -> dict[tuple[int, str, str], dict[str, Any]]:
    out: dict[tuple[int, str, str], dict[str, Any]] = {}
    for r in rows:
        out[(int(r[0]), r[1], r[2])] = dict(zip(names, r[3:]))
    return out


def _names(sql: str) -> list[str]:
    """The output column names of a statement of :mod:`.queries` (after the three key columns)."""
    head = sql[sql.upper().index("SELECT") + 6: sql.upper().rindex("FROM")].strip()
    return re.findall(r"\bAS\s+(\w+)\s*(?=,|$)", head)


def _run(backend: Any, plan: Plan, source: Any, facts: Mapping[str, Any], width: int, window: str, manifest: Any,
         examples: int, groups: frozenset[str] | None = None) -> TraceSummary:
    def want(*names: str) -> bool:
        return groups is None or any(g in groups for g in names)

    # per-request item facts: all of them, only the top-1 score, or none (then items are not read);
    # where the engine has lists, the same grouping of the items also keeps each request's top-k
    # candidates (instability) and context sources (req_src): the items are read once for all three
    item_facts = want("scores", "no_result", "deprecated")
    sources = want("feedback") or "source" in plan.by
    lists = tuple(n for n, on in (("tk", want("instability")), ("ctx", sources)) if on) if plan.dialect.lists else ()
    # items decoded once by the reader (rankgate.traces.item_columns): the same rows from those columns,
    # and the files are not read again
    columns = facts.get("columns") if plan.dialect.lists else None
    made: dict[str, Any] = {}
    if (item_facts or lists) and columns:
        from rankgate.traces.item_columns import req_tables

        made = req_tables(columns, score_stage=plan.score_stage, context_stage=plan.context_stage,
                          list_stage=plan.list_stage, k=plan.k, facts=item_facts, lists=lists,
                          manifest=facts.get("manifest") if item_facts else None)
        backend.register("req_items", made["req_items"])
    elif item_facts or lists:
        backend.keep("req_items", plan.req_items(facts=item_facts, lists=lists))
    table = "req_items"
    if not item_facts and want("low_confidence"):
        table = "req_top1"
        rank1 = facts.get("rank1", False)
        if columns and not rank1:
            from rankgate.traces.item_columns import rank1_table

            backend.register("rank1_files", rank1_table(columns))
            rank1 = True
        backend.keep(table, plan.req_top1(rank1=rank1, arrow=facts.get("rank1_arrow", True)))
    # (kept: every window x segment statement reads it)
    backend.keep("rq", plan.rq(items=want("scores", "no_result", "deprecated", "low_confidence"), facts=table))
    if sources:
        backend.keep("req_src", plan.req_src())
    backend.view("seg", plan.seg())
    presence = dict(zip(re.findall(r"\bAS\s+(\w+)", plan.presence()), backend.rows(plan.presence())[0]))
    tables: dict[str, dict[tuple[int, str, str], dict[str, Any]]] = {}
    names = None if groups is None else frozenset(n for g in groups for n in _COUNTS.get(g, ()))
    counts = plan.counts(names=names)
    tables["counts"] = _keyed(backend.rows(counts), _names(counts))
    if want("feedback"):
        tables["feedback"] = _keyed(backend.rows(plan.feedback()), _names(plan.feedback()))
    # quantiles per window, and over the whole period (win NULL) in the same pass; counts add up
    # (the process samples only where the traces carry them: a summary of traces without them stays as it was)
    def quantiled(col: str) -> bool:
        if col in RESOURCES:
            return want("resources") and bool(presence[col])
        if col in COSTS:  # (likewise the cost keys)
            return want("cost") and bool(presence[col])
        return want("scores" if col in ("top1", "margin") else "latency")

    q_cols = tuple(c for c in QUANTILE_COLUMNS if quantiled(c[0]))
    q_rows = _quantile_rows(backend.rows(plan.quantiles(columns=q_cols)), q_cols) if q_cols else []
    q_names = [n for _, name, ps in q_cols for n in [f"{name}_p{round(p * 100)}" for p in ps] + [f"{name}_n"]]
    tables["quantiles"] = _keyed([r for r in q_rows if r[0] is not None], q_names)
    period_q = _keyed([(0,) + tuple(r[1:]) for r in q_rows if r[0] is None], q_names)
    period_m: dict[tuple[int, str, str], dict[str, Any]] = {}
    costs = tuple(c for c in COSTS if want("cost") and presence[c])
    if costs:  # the means of the cost keys, grouped as the quantiles are (the period in the same pass)
        m_rows = backend.rows(plan.means(costs))
        m_names = [f"{c}_mean" for c in costs]
        tables["means"] = _keyed([r for r in m_rows if r[0] is not None], m_names)
        period_m = _keyed([(0,) + tuple(r[1:]) for r in m_rows if r[0] is None], m_names)
    if manifest is not None and want("stale_citations"):
        pairs = backend.rows(plan.citation_pairs())
        backend.register("stale_pairs", _stale_pairs(pairs, manifest))
        backend.keep("cit", plan.cit())
        tables["citations"] = _keyed(backend.rows(plan.citations()), ["cit_n", "cit_k"])
    if want("instability"):
        if "topk_lists" in made:
            backend.register("topk_lists", made["topk_lists"])
        elif plan.dialect.lists:
            backend.keep("topk_lists", plan.topk_lists())
        # (from the lists, the positions are an unnest away: a view, read by few statements)
        (backend.view if plan.dialect.lists else backend.keep)("topk", plan.topk())
        separator = made["separator"] if "separator" in made else backend.rows(plan.separator_in_ids())[0][0] > 0
        backend.keep("lists", plan.lists(separator_in_ids=separator))
        backend.keep("pair_heads", plan.pair_heads())
        backend.keep("common", plan.common())
        backend.keep("pairs", plan.pairs())
        tables["instability"] = _instability(backend, plan)

    # availability of each input over the whole data
    absent: dict[str, str] = {}
    n_items = facts["rows"]
    scored = facts["scored"] > 0
    item_status = facts["with_status"] > 0
    if not scored:
        for name in ("low_confidence_rate",) + tuple(s.name for s in SIGNALS if s.name.startswith(("top1_score", "margin"))):
            absent[name] = "not measurable (no score)"
    if plan.threshold is None:
        absent["low_confidence_rate"] = "not measurable (no abstention threshold)"
    if not presence["fallback"]:
        absent["fallback_rate"] = "not measurable (no fallback)"
    if not item_status and manifest is None:
        absent["deprecated_context_rate"] = absent["deprecated_item_share"] = "not measurable (no item status)"
    if manifest is None:
        absent["stale_citation_rate"] = "not measurable (no corpus manifest)"
    elif source.citations.column("version").null_count == source.citations.num_rows:
        absent["stale_citation_rate"] = "not measurable (no citation version)"
    if source.feedback.num_rows == 0:
        absent["negative_feedback_rate"] = "not measurable (no feedback)"
    if not presence["http_status"] and not presence["status"]:
        absent["error_rate_per_1k"] = "not measurable (no http_status)"
        absent["client_abort_rate"] = "not measurable (no http_status)"
    if not presence["soft_deadline_ms"] or not presence["total_ms"]:
        absent["timeout_rate"] = "not measurable (no soft_deadline_ms)" if not presence["soft_deadline_ms"] \
            else "not measurable (no total_ms)"
    if not presence["retry_attempts"]:
        absent["retry_rate"] = absent["retries"] = "not measurable (no retry_attempts)"
    for stage in STAGES_MS:
        if not presence[f"{stage}_ms"]:
            for q in LATENCY_Q:
                absent[f"latency.{stage}.p{round(q * 100)}"] = f"not measurable (no {stage}_ms)"
    unsampled = tuple(f"resources.{r}." for r in RESOURCES if not presence[r])  # left out, not "not measurable"
    unsampled += tuple(f"cost.{k}." for k, c in zip(COST_KEYS, COSTS) if not presence[c])  # (the same for costs)
    if not presence["sensitive_tokens"]:
        absent["redaction_efficacy"] = "not measurable (no sensitive_tokens)"
    if not presence["secure_fields"]:
        absent["secure_field_bypass_rate"] = "not measurable (no secure_fields)"
    if not presence["privacy_mode"]:
        absent["block_efficacy"] = "not measurable (no privacy_mode)"
    if n_items == 0:
        absent["no_result_rate"] = "not measurable (no retrieved items)"

    keys = sorted(set().union(*(t.keys() for t in tables.values())), key=_order(plan.by))
    values: list[SignalValue] = []
    for wkey in keys:
        facts = {name: tables[name].get(wkey, {}) for name in tables}
        values += _signals(wkey[0], wkey, facts, absent)
    sums: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    for wkey in keys:
        slot = sums.setdefault((wkey[1], wkey[2]), {})
        for name, t in tables.items():
            if name in ("quantiles", "means"):
                continue
            _add(slot.setdefault(name, {}), t.get(wkey, {}))
    period: list[SignalValue] = []
    for seg in sorted(sums, key=lambda s: _order(plan.by)((0,) + s)):
        facts = dict(sums[seg])
        facts["quantiles"] = period_q.get((0,) + seg, {})
        if period_m:
            facts["means"] = period_m.get((0,) + seg, {})
        period += _signals(None, (0,) + seg, facts, absent)

    # a rate with no applicable row over the whole period cannot be measured from these traces
    if not any(v.n for v in period if v.signal == "block_efficacy") and "block_efficacy" not in absent:
        absent["block_efficacy"] = "not measurable (no request in block mode with sensitive tokens)"
        values = [_absent(v, absent) for v in values]
        period = [_absent(v, absent) for v in period]
    fb: tuple[SourceFeedback, ...] = ()
    if want("feedback"):
        fb = _feedback_by_source(backend.rows(plan.feedback_by_source()), presence_feedback=source.feedback.num_rows > 0)
    unstable = _unstable_examples(backend, plan, examples) if want("instability") else ()
    low: tuple[dict[str, Any], ...] = ()
    if plan.threshold is not None and scored and want("low_confidence"):
        low = tuple({"query_key": r[0], "query_text": r[1], "n": int(r[2]), "min_top1": r[3], "max_top1": r[4]}
                    for r in backend.rows(plan.low_confidence_examples(examples)))
    stale: tuple[dict[str, Any], ...] = ()
    if manifest is not None and want("stale_citations"):
        stale = tuple({"doc_id": r[0], "version": r[1], "current_version": r[2], "n": int(r[3])}
                      for r in backend.rows(plan.stale_examples(examples)))
    retries = tuple((r[0], int(r[1]), int(r[2])) for r in backend.rows(plan.retries_by_reason())) \
        if want("retries") else ()
    windows = tuple(sorted({k[0] for k in keys}))
    meta = {"engine": backend.name, "score_stage": plan.score_stage, "context_stage": plan.context_stage,
            "list_stage": plan.list_stage, "instability_k": plan.k, "rbo_p": plan.p, "min_support": plan.min_support,
            "abstention_threshold": plan.threshold, "requests": source.requests.num_rows,
            "items": n_items, "formats": list(getattr(source, "formats", ()))}
    for key, n in sorted((getattr(source, "reading", None) or {}).items()):  # only what happened (non-zero)
        if n:
            meta[key] = int(n)
    if unsampled:
        values = [v for v in values if not v.signal.startswith(unsampled)]
        period = [v for v in period if not v.signal.startswith(unsampled)]
    if groups is not None:
        meta["signals"] = sorted(groups)
        chosen = {n for g in groups for n in SIGNAL_GROUPS[g]}
        values = [v for v in values if v.signal in chosen]
        period = [v for v in period if v.signal in chosen]
    skipped = source.skipped.as_dict() if hasattr(source.skipped, "as_dict") else {}
    return TraceSummary(window_us=width, window=window, windows=windows, by=plan.by, values=tuple(values),
                        period=tuple(period), feedback_by_source=fb, retries_by_reason=retries, unstable=unstable,
                        low_confidence=low, stale_citations=stale, meta=meta, skipped=skipped, groups=groups)


def _quantile_rows(rows: list[tuple[Any, ...]], columns: Sequence[tuple[str, str, tuple[float, ...]]] = QUANTILE_COLUMNS
                   ) -> list[tuple[Any, ...]]:
    """Rows of :meth:`Plan.quantiles` with each array of levels spread into one value per level."""
    out = []
    for r in rows:
        flat = list(r[:3])
        for (_, _, ps), q, n in zip(columns, r[3::2], r[4::2]):
            flat += list(q) if q is not None else [None] * len(ps)
            flat.append(n)
        out.append(tuple(flat))
    return out


def _instability(backend: Any, plan: Plan) -> dict[tuple[int, str, str], dict[str, Any]]:
    """Per window and segment: compared lists, changed lists, and the RBO and Jaccard sums, formed
    with math.fsum from whole-number counts (identical on every engine, in any order)."""
    from rankgate.traces.similarity import rbo_weight

    out: dict[tuple[int, str, str], dict[str, Any]] = {}
    terms: dict[tuple[int, str, str], dict[str, list[float]]] = {}

    def slot(row: tuple[Any, ...]) -> tuple[tuple[int, str, str], str]:
        return (int(row[0]), row[1], row[2]), ("same" if int(row[3]) == 1 else "diff")

    for row in backend.rows(plan.instability()):
        key, kind = slot(row)
        d = out.setdefault(key, {})
        d[f"{kind}_n"] = int(row[4])
        d[f"{kind}_changed"] = int(row[5])
    # how many common items have each weight w(m, s, l), per window, segment and kind: from the
    # pairs whose lists differ (rbo_terms), plus m = 1..len of every pair of equal lists
    counts: dict[tuple[tuple[int, str, str], str, int, int, int], int] = {}
    for row in backend.rows(plan.rbo_terms()):
        key, kind = slot(row)
        m, s_len, l_len, n = (int(x) for x in row[4:8])
        counts[(key, kind, m, s_len, l_len)] = counts.get((key, kind, m, s_len, l_len), 0) + n
    for row in backend.rows(plan.same_list_terms()):
        key, kind = slot(row)
        length, n = int(row[4]), int(row[5])
        for m in range(1, length + 1):
            counts[(key, kind, m, length, length)] = counts.get((key, kind, m, length, length), 0) + n
    weights: dict[tuple[int, int, int], float] = {}
    for (key, kind, m, s_len, l_len), n in counts.items():
        w = weights.get((m, s_len, l_len))
        if w is None:
            w = weights[(m, s_len, l_len)] = rbo_weight(m, s_len, l_len, plan.p)
        terms.setdefault(key, {}).setdefault(f"{kind}_rbo", []).append(n * w)
    for row in backend.rows(plan.jaccard_terms()):
        key, kind = slot(row)
        common, len_sum, n = (int(x) for x in row[4:7])
        terms.setdefault(key, {}).setdefault(f"{kind}_jaccard", []).append(n * (common / (len_sum - common)))
    for key, sums in terms.items():
        for name, parts in sums.items():
            out.setdefault(key, {})[name] = math.fsum(sorted(parts))
    return out


def _order(by: Sequence[str]) -> Any:
    rank = {f: i for i, f in enumerate(("",) + tuple(by))}
    return lambda key: (key[0], rank.get(key[1], 99), key[2] or "")


def _add(into: dict[str, Any], row: Mapping[str, Any]) -> None:
    for name, v in row.items():
        if v is None:
            into.setdefault(name, None)
        else:
            into[name] = (into.get(name) or 0) + v


def _stale_pairs(pairs: list[tuple[Any, ...]], manifest: Any) -> Any:
    import pyarrow as pa

    docs, versions, stale, current = [], [], [], []
    for doc, version in sorted(pairs):
        latest = manifest.latest_version(doc)
        if latest is None:
            continue  # a document the manifest does not know, or knows without versions
        docs.append(doc)
        versions.append(version)
        stale.append(1 if manifest.has_newer_version(doc, version) else 0)
        current.append(latest)
    return pa.table({"doc_id": pa.array(docs, pa.string()), "version": pa.array(versions, pa.string()),
                     "stale": pa.array(stale, pa.int64()), "current_version": pa.array(current, pa.string())})


def _segment(key: tuple[int, str, str]) -> str:
    return "all" if not key[1] else f"{key[1]}={key[2]}"


def _signals(window: int | None, key: tuple[int, str, str], facts: Mapping[str, Mapping[str, Any]],
             absent: Mapping[str, str]) -> list[SignalValue]:
    c, q = facts.get("counts", {}), facts.get("quantiles", {})
    fb, cit, ins = facts.get("feedback", {}), facts.get("citations", {}), facts.get("instability", {})
    seg = _segment(key)
    out: list[SignalValue] = []

    def num(d: Mapping[str, Any], name: str) -> int:
        v = d.get(name)
        return int(v) if v is not None else 0

    def rate(name: str, k: int, n: int, scale: float = 1.0) -> None:
        out.append(SignalValue(window, seg, name, scale * k / n if n else None, n, k))

    def mean(name: str, total: Any, n: int) -> None:
        out.append(SignalValue(window, seg, name, float(total) / n if n else None, n))

    rate("low_confidence_rate", num(c, "lowconf_k"), num(c, "scored_n"))
    for col, label in (("top1", "top1_score"), ("margin", "margin")):
        for p in SCORE_Q:
            out.append(SignalValue(window, seg, f"{label}.p{round(p * 100)}", _f(q.get(f"{col}_p{round(p * 100)}")),
                                   num(q, f"{col}_n")))
    rate("no_result_rate", num(c, "noresult_k"), num(c, "answered_n"))
    rate("fallback_rate", num(c, "fallback_k"), num(c, "fallback_n"))
    rate("deprecated_context_rate", num(c, "ctxreq_k"), num(c, "ctxreq_n"))
    rate("deprecated_item_share", num(c, "ctxitem_k"), num(c, "ctxitem_n"))
    rate("stale_citation_rate", num(cit, "cit_k"), num(cit, "cit_n"))
    same_n, diff_n = num(ins, "same_n"), num(ins, "diff_n")
    mean("instability.rbo", ins.get("same_rbo") or 0.0, same_n)
    mean("instability.jaccard", ins.get("same_jaccard") or 0.0, same_n)
    rate("instability.changed_rate", num(ins, "same_changed"), same_n)
    mean("corpus_changed.rbo", ins.get("diff_rbo") or 0.0, diff_n)
    mean("corpus_changed.jaccard", ins.get("diff_jaccard") or 0.0, diff_n)
    rate("corpus_changed.changed_rate", num(ins, "diff_changed"), diff_n)
    rate("negative_feedback_rate", num(fb, "fb_k"), num(fb, "fb_n"))
    rate("error_rate_per_1k", num(c, "err_k"), num(c, "err_n"), 1000.0)
    rate("client_abort_rate", num(c, "abort_k"), num(c, "err_n"))
    rate("timeout_rate", num(c, "timeout_k"), num(c, "timeout_n"))
    rate("retry_rate", num(c, "retry_k"), num(c, "retry_n"))
    out.append(SignalValue(window, seg, "retries", float(num(c, "retries")) if num(c, "retry_n") else None,
                           num(c, "retry_n")))
    for stage in STAGES_MS:
        for p in LATENCY_Q:
            out.append(SignalValue(window, seg, f"latency.{stage}.p{round(p * 100)}",
                                   _f(q.get(f"{stage}_p{round(p * 100)}")), num(q, f"{stage}_n")))
    for res in RESOURCES:
        for p in LATENCY_Q:
            out.append(SignalValue(window, seg, f"resources.{res}.p{round(p * 100)}",
                                   _f(q.get(f"{res}_p{round(p * 100)}")), num(q, f"{res}_n")))
    means = facts.get("means", {})
    for ck, col in zip(COST_KEYS, COSTS):
        n = num(q, f"{col}_n")
        out.append(SignalValue(window, seg, f"cost.{ck}.mean", _f(means.get(f"{col}_mean")), n))
        for p in COST_Q:
            out.append(SignalValue(window, seg, f"cost.{ck}.p{round(p * 100)}", _f(q.get(f"{col}_p{round(p * 100)}")), n))
    sens, leaked = num(c, "sensitive"), num(c, "leaked")
    out.append(SignalValue(window, seg, "redaction_efficacy", 1.0 - leaked / sens if sens else None, sens,
                           sens - leaked, None if sens or not num(c, "privacy_n") else "no sensitive tokens"))
    rate("block_efficacy", num(c, "block_k"), num(c, "block_n"))
    rate("secure_field_bypass_rate", num(c, "bypassed"), num(c, "secure"))
    return [_absent(v, absent) for v in out]


def _absent(v: SignalValue, absent: Mapping[str, str]) -> SignalValue:
    return SignalValue(v.window, v.segment, v.signal, None, 0, None, absent[v.signal]) if v.signal in absent else v


def _f(x: Any) -> float | None:
    return None if x is None else float(x)


def _feedback_by_source(rows: list[tuple[Any, ...]], *, presence_feedback: bool) -> tuple[SourceFeedback, ...]:
    from rankgate.stats.bootstrap import wilson_interval

    if not presence_feedback:
        return ()
    per: dict[int | None, dict[str, list[int]]] = {}
    for w, src, n, k in rows:
        for win in (int(w), None):
            slot = per.setdefault(win, {}).setdefault(src, [0, 0])
            slot[0] += int(n)
            slot[1] += int(k or 0)
    out: list[SourceFeedback] = []
    for win in sorted(per, key=lambda x: (x is None, x or 0)):
        srcs = per[win]
        tot_n = sum(v[0] for v in srcs.values())
        tot_k = sum(v[1] for v in srcs.values())
        overall = tot_k / tot_n if tot_n else math.nan
        for src in sorted(srcs):
            n, k = srcs[src]
            lo, hi = wilson_interval(k, n)
            out.append(SourceFeedback(win, src, n, k, k / n, lo, hi, overall, lo > overall))
    return tuple(out)


def _unstable_examples(backend: Any, plan: Plan, limit: int) -> tuple[Mapping[str, Any], ...]:
    rows = backend.rows(plan.unstable_examples(limit))
    if not rows:
        return ()
    ids = sorted({r[0] for r in rows} | {r[1] for r in rows})
    lists: dict[str, list[str]] = {}
    for rid, item, _pos in backend.rows(plan.list_items(ids)):
        lists.setdefault(rid, []).append(item)
    from rankgate.traces.similarity import jaccard, rbo

    return tuple({"request_id": r[0], "reference_id": r[1], "window": iso(int(r[2])),
                  "rbo": rbo(lists.get(r[0], []), lists.get(r[1], []), plan.p),
                  "jaccard": jaccard(lists.get(r[0], []), lists.get(r[1], [])), "query_key": r[6], "query_text": r[7],
                  "list": lists.get(r[0], []), "reference_list": lists.get(r[1], [])} for r in rows)

