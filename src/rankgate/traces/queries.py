"""Every SQL statement of the trace analysis, in one place, written once for DuckDB and Spark SQL.

The statements use the part of SQL both engines read with the same meaning: joins, ``GROUP BY``,
``CASE``, ``count``/``sum``/``min``/``max``, ``row_number() OVER``, ``NOT EXISTS``, ``md5``,
``GROUPING SETS`` and ``CAST(… AS DOUBLE)``. The constructs that differ are on an allow-list,
:class:`Dialect`, filled in per engine:

``ordered_concat(expr, order)``  the values of a group joined in ``order`` (DuckDB ``string_agg … ORDER
                                 BY``; Spark ``array_join(transform(array_sort(collect_list(struct…))))``)
``quantiles(col, ps)``           the exact quantiles of a group at the levels ``ps``, as an array, with
                                 linear interpolation between order statistics (numpy's default):
                                 DuckDB ``quantile_cont(col, [ps])``, Spark ``percentile(col, array(ps))``.
                                 One sort per column and group serves every level (the one-level form
                                 ``percentile_cont(p) WITHIN GROUP`` sorted once per level: 2.6x the time).

``lists``                        whether the engine has list values (DuckDB): then one grouping of the
                                 items gives each request's item facts, its top-k candidates and its
                                 context sources at once (:meth:`Plan.req_items`), where Spark reads
                                 the items once per statement (the items of a Parquet file are decoded
                                 each time they are read: DuckDB decodes every field of the list of
                                 structs). Both give the same rows; a test runs DuckDB both ways.

Rates are returned as whole-number counts (``*_k`` of ``*_n``) and divided in Python, so both
engines give the same bits; sums of floating-point values (RBO, Jaccard) may differ in the last
place between engines (summation order), which the parity test allows to 1e-12.

Tables the statements read (registered by :mod:`.engines`): ``requests`` (the canonical table plus
``w``, the start of the request's window in microseconds since the epoch), ``items``, ``citations``,
``feedback``, ``rbo_w(m, s, l, w)`` (:func:`.similarity.rbo_weights`), and when a corpus manifest is
given ``manifest(item_id, doc_id, status)`` and ``stale_pairs(doc_id, version, stale, current)``.
"""

from __future__ import annotations

from dataclasses import dataclass

from rankgate.model.conversations import FIRST_TURN, FOLLOW_UP
from rankgate.traces.cost import COST_COLUMNS

__all__ = ["COSTS", "COST_Q", "DUCKDB", "RESOURCES", "SPARK", "Dialect", "Plan"]

BAD_STATUSES = ("deprecated", "superseded", "retired")
STAGES_MS = ("parse", "retrieval", "rerank", "synthesis", "total")
RESOURCES = ("cpu_ms", "memory_mb")  # per-request process samples, summarised as the latency is
COSTS = COST_COLUMNS  # what each request cost, a column per key (rankgate.traces.cost): mean and p95
COST_Q = (0.95,)
LATENCY_Q = (0.5, 0.95, 0.99)
SCORE_Q = (0.1, 0.5, 0.9)
MAX_DOUBLE = 1.7976931348623157e308
SEP = "chr(31)"


@dataclass(frozen=True)
class Dialect:
    """The allow-list of constructs written differently per engine."""

    name: str
    concat_template: str
    quantiles_template: str
    lists: bool = False

    def ordered_concat(self, expr: str, order: str) -> str:
        return self.concat_template.format(expr=expr, order=order, sep=SEP)

    def quantiles(self, col: str, ps: tuple[float, ...]) -> str:
        return self.quantiles_template.format(col=col, ps=", ".join(repr(float(p)) for p in ps))


DUCKDB = Dialect("duckdb", "string_agg({expr}, {sep} ORDER BY {order})", "quantile_cont({col}, [{ps}])", lists=True)
SPARK = Dialect("spark", "array_join(transform(array_sort(collect_list(named_struct('o', {order}, 'v', {expr}))), "
                         "x -> x.v), {sep})", "percentile({col}, array({ps}))")

# the request columns Plan.rq keeps (with the --by fields): what counts, quantiles, the segments and the
# low-confidence examples read
RQ_COLUMNS = ("request_id", "w", "query_key", "query_text", "status", "http_status", "client_abort", "fallback",
              *(f"{s}_ms" for s in STAGES_MS), "soft_deadline_ms", "retry_attempts", "privacy_mode",
              "sensitive_tokens", "leaked_tokens", "blocked", "secure_fields", "bypassed", *RESOURCES, *COSTS)

# the quantile columns of Plan.quantiles: (column, name prefix, levels)
QUANTILE_COLUMNS = tuple((f"{s}_ms", s, LATENCY_Q) for s in STAGES_MS) + (("top1", "top1", SCORE_Q),
                                                                          ("margin", "margin", SCORE_Q)) \
    + tuple((r, r, LATENCY_Q) for r in RESOURCES) + tuple((c, c, COST_Q) for c in COSTS)


def _lit(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


@dataclass(frozen=True)
class Plan:
    """What the statements are built for: the stages to read, the segment fields, the options."""

    dialect: Dialect
    score_stage: str
    context_stage: str
    list_stage: str
    by: tuple[str, ...] = ()
    threshold: float | None = None
    manifest: bool = False
    k: int = 10
    min_support: int = 2
    width_us: int = 86_400_000_000
    p: float = 0.9

    # -- materialised per-request facts ---------------------------------------------------------------
    def req_items(self, facts: bool = True, lists: tuple[str, ...] = ()) -> str:
        """Per request: the item facts (``facts``: top-1 and top-2 score, items, context items with a
        known and with a bad status) and, where the dialect has lists, the ``lists`` asked for:
        ``tk``: ``ids``, the ids of its list-stage items within the first k ranks in (rank, item_id)
        order, and ``once``, whether no id is repeated there (for :meth:`topk_lists`); ``ctx``: the
        (item_id, source) of its context items with a source (for :meth:`req_src`); all from one
        grouping of the items."""
        status = ", coalesce(m.status, i.status) AS st" if self.manifest else ", i.status AS st"
        join = " LEFT JOIN manifest m ON m.item_id = i.item_id" if self.manifest else ""
        if not facts:  # (the status is for the facts only)
            status = join = ""
        bad = ", ".join(_lit(s) for s in BAD_STATUSES)
        sc, cx, ls = _lit(self.score_stage), _lit(self.context_stage), _lit(self.list_stage)
        cols = []
        if facts:
            cols += [f"max(CASE WHEN stage = {sc} AND rank = 1 THEN score END) AS top1",
                     f"max(CASE WHEN stage = {sc} AND rank = 2 THEN score END) AS top2",
                     "count(*) AS n_items",
                     f"sum(CASE WHEN stage = {cx} AND st IS NOT NULL THEN 1 ELSE 0 END) AS n_ctx_known",
                     f"sum(CASE WHEN stage = {cx} AND st IN ({bad}) THEN 1 ELSE 0 END) AS n_ctx_bad"]
        if "tk" in lists:
            cols.append(f"list(struct_pack(rank := rank, item_id := item_id)) FILTER (WHERE stage = {ls} AND "
                        f"rank <= {int(self.k)}) AS tk")
        if "ctx" in lists:
            cols.append(f"list(struct_pack(item_id := item_id, source := source)) FILTER (WHERE stage = {cx} AND "
                        "source IS NOT NULL) AS ctx")
        fields = "i.request_id, i.stage, i.rank, i.score" + (", i.item_id, i.source" if lists else "")
        sql = ("\nSELECT request_id,\n  " + ",\n  ".join(cols)
               + f"\nFROM (SELECT {fields}{status} FROM items i{join}) t\nGROUP BY request_id")
        if "tk" in lists:  # the ids in (rank, item_id) order, and whether none is repeated
            sql = ("SELECT * EXCLUDE (tk), list_unique(ids) = len(ids) AS once FROM (SELECT *, "
                   f"[x.item_id FOR x IN list_sort(tk)] AS ids FROM ({sql}) a) b")
        return sql

    def req_top1(self, rank1: bool = False, arrow: bool = True) -> str:
        """:meth:`req_items` reduced to the top-1 score (what the low-confidence share needs): only
        the rank-1 items of the score stage are read. ``rank1``: the files' items are read from
        ``rank1_files`` (request_id and each stage's rank-1 score, :mod:`.native`), those held as
        Arrow rows (``arrow``) from ``items_arrow``; a request without a rank-1 item in the score stage
        then has a NULL row where it had none, the same in :meth:`rq`."""
        if rank1 and self.score_stage in ("candidate", "reranked", "packed"):
            rows = f"SELECT request_id, {self.score_stage} AS score FROM rank1_files"
            if arrow:
                rows += (f" UNION ALL SELECT request_id, score FROM items_arrow "
                         f"WHERE stage = {_lit(self.score_stage)} AND rank = 1")
            return f"""
SELECT request_id, max(score) AS top1, CAST(NULL AS DOUBLE) AS top2, CAST(NULL AS BIGINT) AS n_items,
  CAST(NULL AS BIGINT) AS n_ctx_known, CAST(NULL AS BIGINT) AS n_ctx_bad
FROM ({rows}) t GROUP BY request_id"""
        return f"""
SELECT request_id, max(score) AS top1, CAST(NULL AS DOUBLE) AS top2, CAST(NULL AS BIGINT) AS n_items,
  CAST(NULL AS BIGINT) AS n_ctx_known, CAST(NULL AS BIGINT) AS n_ctx_bad
FROM items WHERE stage = {_lit(self.score_stage)} AND rank = 1 GROUP BY request_id"""

    def rq(self, items: bool = True, facts: str = "req_items") -> str:
        """The requests with their per-request item facts from the table ``facts`` (``items=False``:
        none were computed; the item columns are NULL and their counts 0). Only the request columns
        the window x segment statements read are kept (:data:`RQ_COLUMNS` and the ``by`` fields)."""
        cols = ", ".join(f"r.{c}" for c in dict.fromkeys(RQ_COLUMNS + tuple(f for f in self.by if f != "source")))
        if not items:
            return f"""
SELECT {cols}, CAST(NULL AS DOUBLE) AS top1, CAST(NULL AS DOUBLE) AS top2, CAST(NULL AS DOUBLE) AS margin,
  0 AS n_items, 0 AS n_ctx_known, 0 AS n_ctx_bad
FROM requests r"""
        # two finite scores can differ by more than the largest double (1.7e308 and -1.7e308): such a
        # margin is recorded as that largest double, never as infinity (summary.json holds finite numbers)
        d = "ri.top1 - ri.top2"
        margin = f"CASE WHEN {d} > {MAX_DOUBLE!r} THEN {MAX_DOUBLE!r} WHEN {d} < {-MAX_DOUBLE!r} THEN {-MAX_DOUBLE!r} ELSE {d} END"
        return f"""
SELECT {cols}, ri.top1, ri.top2, {margin} AS margin, coalesce(ri.n_items, 0) AS n_items,
  coalesce(ri.n_ctx_known, 0) AS n_ctx_known, coalesce(ri.n_ctx_bad, 0) AS n_ctx_bad
FROM requests r LEFT JOIN {facts} ri ON ri.request_id = r.request_id"""

    def req_src(self) -> str:
        """A request's sources: those of the items it cited, else those of its context items (where
        the dialect has lists, the context items are ``req_items.ctx``)."""
        if self.dialect.lists:
            ctx = "SELECT request_id, c.item_id AS item_id, c.source AS source FROM (SELECT request_id, unnest(ctx) AS c FROM req_items) u"
        else:
            ctx = f"SELECT request_id, item_id, source FROM items WHERE stage = {_lit(self.context_stage)} AND source IS NOT NULL"
        return f"""
WITH ctx AS ({ctx}),
cited AS (SELECT DISTINCT c.request_id, x.source FROM citations c
          JOIN ctx x ON x.request_id = c.request_id AND x.item_id = c.item_id)
SELECT request_id, source FROM cited
UNION ALL
SELECT DISTINCT x.request_id, x.source FROM ctx x
  LEFT JOIN (SELECT DISTINCT request_id FROM cited) h ON h.request_id = x.request_id
  WHERE h.request_id IS NULL"""

    def seg(self) -> str:
        """``rq`` once per segment: all traffic (field ''), then each --by field."""
        parts = ["SELECT r.*, r.w AS win, '' AS seg_field, '' AS seg_value FROM rq r"]
        for f in self.by:
            if f == "source":
                parts.append("SELECT r.*, r.w AS win, 'source' AS seg_field, s.source AS seg_value "
                             "FROM rq r JOIN req_src s ON s.request_id = r.request_id")
            elif f == "turn":  # (derived: a conversation's first turn, or a follow-up)
                parts.append(f"SELECT r.*, r.w AS win, 'turn' AS seg_field, CASE WHEN r.turn IS NULL THEN '(none)' "
                             f"WHEN r.turn <= 1 THEN {_lit(FIRST_TURN)} ELSE {_lit(FOLLOW_UP)} END AS seg_value FROM rq r")
            else:
                parts.append(f"SELECT r.*, r.w AS win, {_lit(f)} AS seg_field, "
                             f"coalesce(CAST(r.{f} AS STRING), '(none)') AS seg_value FROM rq r")
        return "\nUNION ALL\n".join(parts)

    # -- window x segment aggregates ---------------------------------------------------------------------
    def counts(self, seg: str = "seg", names: frozenset[str] | None = None) -> str:
        """Whole-number counts per window and segment; ``names``: only these columns (and n_requests)."""
        low = (f"sum(CASE WHEN top1 < {float(self.threshold)!r} THEN 1 ELSE 0 END)" if self.threshold is not None
               else "CAST(NULL AS BIGINT)")
        error = "(http_status >= 400 OR (http_status IS NULL AND status = 'error'))"
        abort = "(coalesce(client_abort, false) OR coalesce(http_status, 0) = 499)"
        answered = "(coalesce(status, 'ok') <> 'error' AND coalesce(http_status, 0) < 400)"
        sql = f"""
SELECT win, seg_field, seg_value,
  count(*) AS n_requests,
  sum(CASE WHEN top1 IS NOT NULL THEN 1 ELSE 0 END) AS scored_n,
  {low} AS lowconf_k,
  sum(CASE WHEN {answered} THEN 1 ELSE 0 END) AS answered_n,
  sum(CASE WHEN {answered} AND n_items = 0 THEN 1 ELSE 0 END) AS noresult_k,
  sum(CASE WHEN fallback IS NOT NULL THEN 1 ELSE 0 END) AS fallback_n,
  sum(CASE WHEN fallback THEN 1 ELSE 0 END) AS fallback_k,
  sum(CASE WHEN n_ctx_known > 0 THEN 1 ELSE 0 END) AS ctxreq_n,
  sum(CASE WHEN n_ctx_bad > 0 THEN 1 ELSE 0 END) AS ctxreq_k,
  sum(n_ctx_known) AS ctxitem_n,
  sum(n_ctx_bad) AS ctxitem_k,
  sum(CASE WHEN http_status IS NOT NULL OR status IS NOT NULL THEN 1 ELSE 0 END) AS err_n,
  sum(CASE WHEN {error} AND NOT {abort} THEN 1 ELSE 0 END) AS err_k,
  sum(CASE WHEN {abort} THEN 1 ELSE 0 END) AS abort_k,
  sum(CASE WHEN total_ms IS NOT NULL AND soft_deadline_ms IS NOT NULL THEN 1 ELSE 0 END) AS timeout_n,
  sum(CASE WHEN total_ms > soft_deadline_ms THEN 1 ELSE 0 END) AS timeout_k,
  sum(CASE WHEN retry_attempts IS NOT NULL THEN 1 ELSE 0 END) AS retry_n,
  sum(CASE WHEN retry_attempts > 0 THEN 1 ELSE 0 END) AS retry_k,
  sum(CASE WHEN retry_attempts > 0 THEN retry_attempts ELSE 0 END) AS retries,
  sum(CASE WHEN sensitive_tokens IS NOT NULL THEN 1 ELSE 0 END) AS privacy_n,
  sum(sensitive_tokens) AS sensitive,
  sum(CASE WHEN sensitive_tokens IS NOT NULL THEN coalesce(leaked_tokens, 0) ELSE 0 END) AS leaked,
  sum(CASE WHEN privacy_mode = 'block' AND sensitive_tokens > 0 THEN 1 ELSE 0 END) AS block_n,
  sum(CASE WHEN privacy_mode = 'block' AND sensitive_tokens > 0 AND blocked THEN 1 ELSE 0 END) AS block_k,
  sum(CASE WHEN secure_fields IS NOT NULL THEN 1 ELSE 0 END) AS secure_req_n,
  sum(secure_fields) AS secure,
  sum(CASE WHEN secure_fields IS NOT NULL THEN coalesce(bypassed, 0) ELSE 0 END) AS bypassed
FROM {seg} GROUP BY win, seg_field, seg_value"""
        if names is None:
            return sql
        # one column a line: keep the lines of the named columns
        head, _, rest = sql.partition("  count(*) AS n_requests,\n")
        body, _, tail = rest.rpartition("\nFROM ")
        keep = [line.rstrip(",") for line in body.split("\n") if line.rsplit(" AS ", 1)[-1].rstrip(",") in names]
        return head + ",\n".join(["  count(*) AS n_requests", *keep]) + "\nFROM " + tail

    def quantiles(self, seg: str = "seg", columns: tuple[tuple[str, str, tuple[float, ...]], ...] = QUANTILE_COLUMNS
                  ) -> str:
        """Exact quantiles per window and segment, and over the whole period (rows with ``win`` NULL;
        one pass: the same multiset of values as a period-only statement, so the same quantiles).
        Each column of :data:`QUANTILE_COLUMNS` gives ``<name>_q`` (an array, one value per level,
        NULL when the group has no value) and ``<name>_n``."""
        d = self.dialect
        cols = []
        for col, name, ps in columns:
            cols += [f"{d.quantiles(col, ps)} AS {name}_q", f"count({col}) AS {name}_n"]
        return ("SELECT win, seg_field, seg_value,\n  " + ",\n  ".join(cols)
                + f"\nFROM {seg} GROUP BY GROUPING SETS ((win, seg_field, seg_value), (seg_field, seg_value))")

    def means(self, columns: tuple[str, ...], seg: str = "seg") -> str:
        """The mean of each of ``columns`` per window and segment and over the whole period (rows with ``win``
        NULL), as :meth:`quantiles` groups: ``<column>_mean`` (NULL when the group has no value)."""
        cols = ",\n  ".join(f"avg({c}) AS {c}_mean" for c in columns)
        return (f"SELECT win, seg_field, seg_value,\n  {cols}\n"
                f"FROM {seg} GROUP BY GROUPING SETS ((win, seg_field, seg_value), (seg_field, seg_value))")

    def feedback(self, seg: str = "seg") -> str:
        return f"""
SELECT s.win, s.seg_field, s.seg_value, count(*) AS fb_n, sum(CASE WHEN f.negative THEN 1 ELSE 0 END) AS fb_k
FROM {seg} s JOIN feedback f ON f.request_id = s.request_id GROUP BY s.win, s.seg_field, s.seg_value"""

    def feedback_by_source(self) -> str:
        return """
SELECT r.w AS win, s.source, count(*) AS fb_n, sum(CASE WHEN f.negative THEN 1 ELSE 0 END) AS fb_k
FROM req_src s JOIN requests r ON r.request_id = s.request_id JOIN feedback f ON f.request_id = s.request_id
GROUP BY r.w, s.source"""

    # -- stale citations ---------------------------------------------------------------------------------
    def citation_pairs(self) -> str:
        """The distinct (document, cited version) pairs, for the manifest to judge in Python."""
        return """
SELECT DISTINCT coalesce(c.doc_id, m.doc_id) AS doc_id, c.version
FROM citations c LEFT JOIN manifest m ON m.item_id = c.item_id
WHERE c.version IS NOT NULL AND coalesce(c.doc_id, m.doc_id) IS NOT NULL"""

    def cit(self) -> str:
        return """
SELECT c.request_id, coalesce(c.doc_id, m.doc_id) AS doc_id, c.version, sp.stale, sp.current_version
FROM citations c LEFT JOIN manifest m ON m.item_id = c.item_id
JOIN stale_pairs sp ON sp.doc_id = coalesce(c.doc_id, m.doc_id) AND sp.version = c.version"""

    def citations(self, seg: str = "seg") -> str:
        return f"""
SELECT s.win, s.seg_field, s.seg_value, count(*) AS cit_n, sum(c.stale) AS cit_k
FROM {seg} s JOIN cit c ON c.request_id = s.request_id GROUP BY s.win, s.seg_field, s.seg_value"""

    def stale_examples(self, limit: int = 20) -> str:
        return f"""
SELECT doc_id, version, current_version, count(*) AS n FROM cit WHERE stale = 1
GROUP BY doc_id, version, current_version ORDER BY n DESC, doc_id, version LIMIT {int(limit)}"""

    # -- instability ---------------------------------------------------------------------------------------
    def topk_lists(self) -> str:
        """Where the dialect has lists: each request's :meth:`topk` items as one list in position order
        (from ``req_items.ids``). Sorted by (rank, item_id), a list without a repeated id is its own
        answer; one with a repeated id keeps each id where it first occurs (its first rank)."""
        k = int(self.k)
        return f"""
WITH s AS (SELECT request_id, ids, once FROM req_items WHERE len(ids) > 0)
SELECT request_id, ids[1:{k}] AS ids FROM s WHERE once
UNION ALL
SELECT request_id, list(item_id ORDER BY first)[1:{k}] AS ids FROM (
  SELECT request_id, item_id, min(i) AS first
  FROM (SELECT request_id, unnest(ids) AS item_id, generate_subscripts(ids, 1) AS i FROM s WHERE NOT once) u
  GROUP BY request_id, item_id
) d GROUP BY request_id"""

    def topk(self) -> str:
        """The distinct items among the first k ranks of each request's result list, at positions 1.. in
        rank order (an item listed twice counts at its first rank). Where the dialect has lists, from
        :meth:`topk_lists`."""
        if self.dialect.lists:
            return ("SELECT request_id, unnest(ids) AS item_id, CAST(generate_subscripts(ids, 1) AS BIGINT) AS pos "
                    "FROM topk_lists")
        return f"""
SELECT request_id, item_id, pos FROM (
  SELECT request_id, item_id, row_number() OVER (PARTITION BY request_id ORDER BY rank, item_id) AS pos
  FROM (SELECT request_id, item_id, min(rank) AS rank FROM items
        WHERE stage = {_lit(self.list_stage)} AND rank <= {int(self.k)} GROUP BY request_id, item_id) d
) t WHERE pos <= {int(self.k)}"""

    def separator_in_ids(self) -> str:
        """How many listed ids hold the signature's separator (U+001F): see :meth:`lists`."""
        return f"SELECT count(*) AS n FROM topk WHERE instr(item_id, {SEP}) > 0"

    def lists(self, separator_in_ids: bool = False) -> str:
        """One row per request with a result list: window, query key, versions, list signature, length.
        Two lists share a signature only when they are the same ids in the same order: the ids are
        joined by U+001F, and when some id holds that character each id gets its length in front, so
        that it cannot make two different lists alike (0.4 s more at 10M listed items, so only then)."""
        d = self.dialect
        if d.lists and not separator_in_ids:  # the list of ids joined as string_agg would join them
            return f"""
SELECT r.request_id, r.w, r.query_key, r.ts,
  concat(coalesce(r.index_version, ''), {SEP}, coalesce(r.corpus_version, '')) AS ver,
  md5(array_to_string(t.ids, {SEP})) AS sig, CAST(len(t.ids) AS BIGINT) AS len
FROM requests r JOIN topk_lists t ON t.request_id = r.request_id"""
        entry = "concat(CAST(length(item_id) AS STRING), ':', item_id)" if separator_in_ids else "item_id"
        return f"""
SELECT r.request_id, r.w, r.query_key, r.ts,
  concat(coalesce(r.index_version, ''), {SEP}, coalesce(r.corpus_version, '')) AS ver, t.sig, t.len
FROM requests r JOIN (
  SELECT request_id, md5({d.ordered_concat(entry, 'pos')}) AS sig, count(*) AS len FROM topk GROUP BY request_id
) t ON t.request_id = r.request_id"""

    def pair_heads(self) -> str:
        """Each request against the reference list of its query key in the previous window: the list
        most requests got there (ties: the earliest first seen), if at least ``min_support`` agreed."""
        return f"""
WITH sup AS (
  SELECT w, query_key, sig, count(*) AS support, min(ts) AS first_ts, min(request_id) AS rep
  FROM lists GROUP BY w, query_key, sig
), ranked AS (
  SELECT w, query_key, rep, support,
    row_number() OVER (PARTITION BY w, query_key ORDER BY support DESC, first_ts, rep) AS rn
  FROM sup
), ref AS (
  SELECT w, query_key, rep FROM ranked WHERE rn = 1 AND support >= {int(self.min_support)}
)
SELECT a.request_id, a.w, ref.rep AS ref_id, a.len AS len_a, b.len AS len_b,
  CASE WHEN a.ver = b.ver THEN 1 ELSE 0 END AS same_ver, CASE WHEN a.sig = b.sig THEN 1 ELSE 0 END AS same_list
FROM lists a JOIN ref ON ref.query_key = a.query_key AND ref.w = a.w - {int(self.width_us)}
JOIN lists b ON b.request_id = ref.rep"""

    def common(self) -> str:
        """The items a request shares with its reference, with m = the larger of their two positions,
        for the pairs whose lists differ. (A list equal to its reference shares every item at its own
        position: m = 1..len, which :meth:`pairs` and :meth:`same_list_terms` use without a join.)
        Where the dialect has lists, only the lists of those pairs are unnested (not every request's
        positions, twice)."""
        if self.dialect.lists:
            return """
WITH d AS (SELECT request_id, ref_id FROM pair_heads WHERE same_list = 0),
x AS (SELECT d.request_id, unnest(t.ids) AS item_id, generate_subscripts(t.ids, 1) AS pos
      FROM d JOIN topk_lists t ON t.request_id = d.request_id),
y AS (SELECT d.request_id, unnest(t.ids) AS item_id, generate_subscripts(t.ids, 1) AS pos
      FROM d JOIN topk_lists t ON t.request_id = d.ref_id)
SELECT x.request_id, CAST(CASE WHEN x.pos > y.pos THEN x.pos ELSE y.pos END AS BIGINT) AS m
FROM x JOIN y ON y.request_id = x.request_id AND y.item_id = x.item_id"""
        return """
SELECT p.request_id, CASE WHEN x.pos > y.pos THEN x.pos ELSE y.pos END AS m
FROM pair_heads p JOIN topk x ON x.request_id = p.request_id
JOIN topk y ON y.request_id = p.ref_id AND y.item_id = x.item_id
WHERE p.same_list = 0"""

    def pairs(self) -> str:
        """The pairs with their common-item count and RBO (the RBO here orders the examples only)."""
        return """
SELECT p.request_id, p.w, p.ref_id, p.len_a, p.len_b, p.same_ver, p.same_list,
  CASE WHEN p.same_list = 1 THEN p.len_a ELSE count(c.m) END AS n_common,
  CASE WHEN p.same_list = 1 THEN 1.0 ELSE coalesce(sum(rw.w), 0.0) END AS rbo
FROM pair_heads p LEFT JOIN common c ON c.request_id = p.request_id
LEFT JOIN rbo_w rw ON rw.m = c.m
  AND rw.s = CASE WHEN p.len_a < p.len_b THEN p.len_a ELSE p.len_b END
  AND rw.l = CASE WHEN p.len_a < p.len_b THEN p.len_b ELSE p.len_a END
GROUP BY p.request_id, p.w, p.ref_id, p.len_a, p.len_b, p.same_ver, p.same_list"""

    def instability(self, seg: str = "seg") -> str:
        """Compared lists per window, segment and version match (same_ver): how many, how many changed."""
        return f"""
SELECT s.win, s.seg_field, s.seg_value, p.same_ver, count(*) AS n, sum(1 - p.same_list) AS changed
FROM {seg} s JOIN pairs p ON p.request_id = s.request_id GROUP BY s.win, s.seg_field, s.seg_value, p.same_ver"""

    def rbo_terms(self, seg: str = "seg") -> str:
        """How often each RBO weight w(m, s, l) occurs: RBO sums are formed in Python from these whole
        numbers (math.fsum), so they do not depend on the engine's summation order."""
        return f"""
SELECT s.win, s.seg_field, s.seg_value, p.same_ver, c.m,
  CASE WHEN p.len_a < p.len_b THEN p.len_a ELSE p.len_b END AS s_len,
  CASE WHEN p.len_a < p.len_b THEN p.len_b ELSE p.len_a END AS l_len, count(*) AS n
FROM {seg} s JOIN pairs p ON p.request_id = s.request_id JOIN common c ON c.request_id = p.request_id
GROUP BY s.win, s.seg_field, s.seg_value, p.same_ver, c.m,
  CASE WHEN p.len_a < p.len_b THEN p.len_a ELSE p.len_b END, CASE WHEN p.len_a < p.len_b THEN p.len_b ELSE p.len_a END"""

    def same_list_terms(self, seg: str = "seg") -> str:
        """How many pairs of equal lists there are of each length: each adds one common item at every
        m = 1..len with s = l = len to :meth:`rbo_terms`' counts (summed in Python)."""
        return f"""
SELECT s.win, s.seg_field, s.seg_value, p.same_ver, p.len_a AS len, count(*) AS n
FROM {seg} s JOIN pairs p ON p.request_id = s.request_id WHERE p.same_list = 1
GROUP BY s.win, s.seg_field, s.seg_value, p.same_ver, p.len_a"""

    def jaccard_terms(self, seg: str = "seg") -> str:
        """How often each Jaccard value common / (|A| + |B| - common) occurs (see rbo_terms)."""
        return f"""
SELECT s.win, s.seg_field, s.seg_value, p.same_ver, p.n_common, p.len_a + p.len_b AS len_sum, count(*) AS n
FROM {seg} s JOIN pairs p ON p.request_id = s.request_id
GROUP BY s.win, s.seg_field, s.seg_value, p.same_ver, p.n_common, p.len_a + p.len_b"""

    def unstable_examples(self, limit: int = 10) -> str:
        return f"""
SELECT p.request_id, p.ref_id, p.w, p.n_common, p.len_a, p.len_b, r.query_key, r.query_text
FROM pairs p JOIN requests r ON r.request_id = p.request_id
WHERE p.same_ver = 1 AND p.same_list = 0
ORDER BY round(p.rbo, 9), p.w, p.request_id LIMIT {int(limit)}"""

    def list_items(self, ids: list[str]) -> str:
        return ("SELECT request_id, item_id, pos FROM topk WHERE request_id IN ("
                + ", ".join(_lit(i) for i in ids) + ") ORDER BY request_id, pos")

    # -- examples for the report ---------------------------------------------------------------------------
    def low_confidence_examples(self, limit: int = 20) -> str:
        return f"""
SELECT query_key, min(query_text) AS query_text, count(*) AS n, min(top1) AS min_top1, max(top1) AS max_top1
FROM rq WHERE top1 < {float(self.threshold or 0.0)!r}
GROUP BY query_key ORDER BY n DESC, query_key LIMIT {int(limit)}"""

    def retries_by_reason(self) -> str:
        return """
SELECT coalesce(retry_reason, '(none)') AS reason, count(*) AS requests, sum(retry_attempts) AS retries
FROM requests WHERE retry_attempts > 0 GROUP BY coalesce(retry_reason, '(none)') ORDER BY retries DESC, reason"""

    def stages(self) -> str:
        return "SELECT stage, count(*) AS n FROM items GROUP BY stage"

    def presence(self) -> str:
        """Which request columns hold any value at all (a signal on an all-null column is not measurable)."""
        cols = ("fallback", "http_status", "status", "soft_deadline_ms", "total_ms", "retry_attempts",
                "sensitive_tokens", "privacy_mode", "secure_fields") + tuple(f"{s}_ms" for s in STAGES_MS[:-1]) \
            + RESOURCES + COSTS
        return "SELECT " + ", ".join(f"count({c}) AS {c}" for c in cols) + " FROM requests"
