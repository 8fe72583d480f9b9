"""A sampled judge on production traces (``rankgate traces judge``; docs/traces.md, "judge").

The steps, each a function here, so the flow (:mod:`rankgate.flows.traces_judge`) only strings them together:

1. :func:`sample_requests`: a **stratified sample** of the usable requests, drawn *on the trace engine* (DuckDB or
   Spark) by one SQL text. A request is usable when it did not fail (``status`` error), carries query text and has
   context items (the ``packed`` stage, else the last stage logged). A stratum is its window (the request time,
   aligned as ``traces analyze`` aligns it) and the values of the ``stratify`` fields: request fields, and
   ``source``, the source of its first context item. Within a stratum the requests are ordered by
   ``md5("<seed>:<request_id>")`` (then the id) and the first ``n_h`` are taken: the same traces and seed give the
   same sample on every engine, and a larger sample holds a smaller one (never ``TABLESAMPLE`` or ``rand()``, whose
   draws depend on the engine, its threads and the file layout). ``n_h`` comes from
   :func:`rankgate.stats.stratified.allocate` (two per stratum, the rest in proportion to the strata's sizes).
2. :func:`fetch_texts`: the texts the judge reads, for the sampled requests only: each context item's ``text``
   (or ``content``, ``page_content``) and the request's ``answer`` (or ``response``) as rankgate's trace JSONL or
   Parquet logs them (read again at the request's own line or row), else the item's text in the corpus manifest.
   A request whose context items are not all found is left out (counted as ``no text``).
3. :func:`judge_items` / :func:`run_judge`: the judge items of each task and the calls, through the one judge
   client (:mod:`rankgate.judges`: its cache, its workers, its call budget). ``context_relevance`` grades each
   context item against the query; ``faithfulness`` finds the answer's statements, then checks each against the
   joined context. Every text from production reaches the prompt through the prompt's data blocks
   (:func:`rankgate.judges.prompts.prompt_text`), never as instructions.
4. :func:`estimate`: per request, ``context_relevance`` is the share of its context items graded 1 or 2 and
   ``faithfulness`` is 1 when the share of its answer's statements the context supports is at least
   ``faithful_min`` (0 otherwise; an answer that states nothing has no value), as ``rankgate answers`` defines
   them (:func:`rankgate.metrics.answers.status`). The estimates per window, per segment (``field=value`` of each
   stratify field) and over the whole period are stratified means (:mod:`rankgate.stats.stratified`, which gives
   the variance formula), prediction-powered where human labels (``rankgate label export``) cover two or more
   judged requests of a stratum. They are the trace signals ``judge.context_relevance`` and ``judge.faithfulness``
   (:data:`rankgate.traces.signals.JUDGE_SIGNALS`), which ``traces check --judge-dir`` hands to the monitors.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rankgate.errors import F, InputError, UsageError
from rankgate.traces.recalibrate import STRATIFY_FIELDS

__all__ = ["JUDGE_TASKS", "SIGNAL_OF", "HumanLabels", "Judged", "RequestValue", "SampledRequest", "Texts",
           "TraceSample", "TracesEstimate", "check_judge_monitors", "estimate", "fetch_texts", "judge_items",
           "read_human_labels", "read_judge_signals", "request_values", "run_judge", "sample_requests", "sample_sql",
           "signal_values", "stratum_rows", "with_judge_signals"]

JUDGE_TASKS = ("context_relevance", "faithfulness")
#: The trace signal each task's estimate is written as.
SIGNAL_OF = {"context_relevance": "judge.context_relevance", "faithfulness": "judge.faithfulness"}
SEP = "\x1f"
_TEXT_KEYS = ("text", "content", "page_content")
_ANSWER_KEYS = ("answer", "response")


# -- 1. the sample, on the engine ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class SampledRequest:
    """One sampled request: its stratum (window start in µs since the epoch, and the stratify fields' values),
    its query, where it was read, its context items ``(item_id, rank, source)`` in rank order, and the
    conversation it belongs to (``conversation_id`` and ``turn``, when the trace says: the queues carry them)."""

    request_id: str
    window: int
    values: tuple[str, ...]
    query: str
    observed: str
    source_file: str
    source_line: int
    contexts: tuple[tuple[str, int, str | None], ...]
    conversation_id: str | None = None
    turn: int | None = None

    def conversation(self) -> dict[str, Any]:
        """``{conversation_id, turn}`` as given (none of them when the trace has neither)."""
        return {k: v for k, v in (("conversation_id", self.conversation_id), ("turn", self.turn)) if v is not None}

    @property
    def stratum(self) -> tuple[int, tuple[str, ...]]:
        return (self.window, self.values)


@dataclass(frozen=True)
class TraceSample:
    """The sample and the design it was drawn by: ``sizes`` (usable requests) and ``quota`` (drawn) per stratum
    ``(window, values)``; ``left_out``: the requests that could not be drawn, by reason."""

    requests: tuple[SampledRequest, ...]
    sizes: Mapping[tuple[int, tuple[str, ...]], int]
    quota: Mapping[tuple[int, tuple[str, ...]], int]
    stratify: tuple[str, ...]
    window: str
    window_us: int
    seed: int
    context_stage: str
    total: int
    left_out: Mapping[str, int]
    engine: str

    @property
    def usable(self) -> int:
        return sum(self.sizes.values())


def sample_sql(stratify: Sequence[str], seed: int) -> dict[str, str]:
    """The statements of the draw (one text for DuckDB and Spark: ``md5``, ``concat``, ``coalesce``, window
    ``row_number``, joins; module docs), over the registered tables ``tj_requests``, ``tj_items`` (context items)
    and, for the last statement, ``tj_quota``. Keys: ``units`` (kept), ``counts``, ``reasons``, ``draw``."""
    cols = ", ".join(f"coalesce({'l.source' if f == 'source' else 'r.' + f}, '') AS s{i}"
                     for i, f in enumerate(stratify))
    part = ", ".join(["w"] + [f"s{i}" for i in range(len(stratify))])
    usable = "(r.status IS NULL OR r.status <> 'error') AND r.query_text IS NOT NULL AND r.query_text <> ''"
    units = (f"SELECT r.request_id AS request_id, r.w AS w{', ' + cols if cols else ''}, "
             f"md5(concat('{int(seed)}', ':', r.request_id)) AS h "
             "FROM tj_requests r JOIN (SELECT request_id, source FROM (SELECT request_id, source, row_number() OVER "
             "(PARTITION BY request_id ORDER BY rank, item_id) AS rn FROM tj_items) x WHERE rn = 1) l "
             f"ON l.request_id = r.request_id WHERE {usable}")
    join = " AND ".join(f"q.{c} = u.{c}" for c in part.split(", "))
    return {
        "units": units,
        "counts": f"SELECT {part}, count(*) AS n FROM tj_units GROUP BY {part} ORDER BY {part}",
        "reasons": ("SELECT count(*) AS n, sum(CASE WHEN r.status = 'error' THEN 1 ELSE 0 END) AS failed, "
                    "sum(CASE WHEN (r.status IS NULL OR r.status <> 'error') AND (r.query_text IS NULL OR "
                    "r.query_text = '') THEN 1 ELSE 0 END) AS no_query FROM tj_requests r"),
        "draw": (f"SELECT u.request_id, {', '.join('u.' + c for c in part.split(', '))}, u.h FROM (SELECT request_id, "
                 f"{part}, h, row_number() OVER (PARTITION BY {part} ORDER BY h, request_id) AS rn FROM tj_units) u "
                 f"JOIN tj_quota q ON {join} WHERE u.rn <= q.quota_n "
                 f"ORDER BY {', '.join('u.' + c for c in part.split(', '))}, u.h, u.request_id"),
    }


def sample_requests(tables: Any, backend: Any, *, n: int, stratify: Sequence[str] = ("source",), seed: int = 0,
                    window: str = "1d", depth: int = 5) -> TraceSample:
    """Draw the stratified sample (module docs, step 1) on ``backend`` (:mod:`rankgate.traces.engines`)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from rankgate.stats.stratified import allocate
    from rankgate.traces.model import current_field
    from rankgate.traces.signals import parse_window

    stratify = tuple(dict.fromkeys(current_field(f, "stratify") for f in stratify))
    for f in stratify:
        if f not in STRATIFY_FIELDS:
            raise UsageError(f"{F.stratify}: cannot stratify production requests by {f!r}; fields: "
                             f"{', '.join(STRATIFY_FIELDS)}")
    if depth < 1:
        raise UsageError(f"{F.depth} must be at least 1; got {depth}")
    width = parse_window(window)
    req = tables.requests
    items = tables.all_items()
    stages = set(pc.unique(items["stage"]).to_pylist()) if items.num_rows else set()
    context_stage = next((s for s in ("packed", "reranked", "candidate") if s in stages), "packed")
    ctx = items.filter(pc.equal(items["stage"], context_stage)).select(["request_id", "rank", "item_id", "source"])
    ts = np.asarray(req.column("ts").cast(pa.int64()).to_numpy(zero_copy_only=False))
    offset = 4 * 86_400 * 1_000_000 if window.strip().endswith("w") else 0  # (weeks start on Monday, as analyze's)
    w = (ts - offset) // width * width + offset
    fields = [f for f in stratify if f != "source"]
    narrow = req.select(["request_id", "status", "query_text", *fields]).append_column("w", pa.array(w, pa.int64()))
    sql = sample_sql(stratify, seed)
    backend.register("tj_requests", narrow)
    backend.register("tj_items", ctx)
    backend.keep("tj_units", sql["units"])
    counts = backend.rows(sql["counts"])
    total, failed, no_query = (int(x or 0) for x in backend.rows(sql["reasons"])[0])
    # (strata and draws ordered here, by code point: no engine's string collation decides anything)
    sizes = {(int(r[0]), tuple(str(x) for x in r[1:-1])): int(r[-1]) for r in counts}
    keys = sorted(sizes)
    usable = sum(sizes.values())
    left_out = {"failed": failed, "no query text": no_query, "no context items": total - failed - no_query - usable}
    if not usable:
        raise InputError("holds no request the judge can read (each needs query text and context items, and must "
                         "not have failed)", path=", ".join(sorted(set(req["source_file"].to_pylist()))[:3]) or None)
    take = allocate([sizes[k] for k in keys], n)
    quota = dict(zip(keys, take))
    q_cols: dict[str, Any] = {"w": pa.array([k[0] for k in keys], pa.int64())}
    for i in range(len(stratify)):
        q_cols[f"s{i}"] = pa.array([k[1][i] for k in keys], pa.string())
    q_cols["quota_n"] = pa.array(take, pa.int64())
    backend.register("tj_quota", pa.table(q_cols))
    drawn = sorted(backend.rows(sql["draw"]), key=lambda r: (int(r[1]), tuple(str(x) for x in r[2:-1]), str(r[-1]),
                                                              str(r[0])))
    ids = [str(r[0]) for r in drawn]
    # the sampled requests' facts and context items, from the Arrow tables (a few rows)
    id_set = pa.array(ids, pa.string())
    rows = req.filter(pc.is_in(req["request_id"], id_set)).select(
        ["request_id", "ts", "query_text", "source_file", "source_line", "conversation_id", "turn"]).to_pylist()
    by_id = {r["request_id"]: r for r in rows}
    contexts: dict[str, list[tuple[str, int, str | None]]] = {}
    for it in ctx.filter(pc.is_in(ctx["request_id"], id_set)).sort_by(
            [("request_id", "ascending"), ("rank", "ascending"), ("item_id", "ascending")]).to_pylist():
        got = contexts.setdefault(it["request_id"], [])
        if len(got) < depth and all(it["item_id"] != g[0] for g in got):
            got.append((it["item_id"], int(it["rank"]), it["source"]))
    out = []
    for r in drawn:
        rid = str(r[0])
        fact = by_id[rid]
        out.append(SampledRequest(rid, int(r[1]), tuple(str(x) for x in r[2:-1]), fact["query_text"],
                                  fact["ts"].strftime("%Y-%m-%dT%H:%M:%S.%fZ"), fact["source_file"],
                                  int(fact["source_line"]), tuple(contexts.get(rid, ())), fact["conversation_id"],
                                  fact["turn"]))
    return TraceSample(tuple(out), sizes, quota, stratify, window, width, seed, context_stage, total, left_out,
                       backend.name)


# -- 2. the texts -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Texts:
    """The texts found for the sampled requests: ``contexts[request_id][item_id]`` and ``answers[request_id]``;
    ``from_trace`` / ``from_corpus`` count the context texts by where they were found."""

    contexts: Mapping[str, Mapping[str, str]]
    answers: Mapping[str, str]
    from_trace: int = 0
    from_corpus: int = 0


def _carried(obj: Any, rid: str, stage: str) -> tuple[dict[str, str], str | None]:
    """The context texts and the answer a rankgate trace record carries (nothing for another record)."""
    if not isinstance(obj, dict) or str(obj.get("request_id")) != rid:
        return {}, None
    texts: dict[str, str] = {}
    for it in obj.get("retrieved") or ():
        if isinstance(it, dict) and (it.get("stage") or "candidate") == stage and it.get("id") is not None:
            text = next((it[k] for k in _TEXT_KEYS if isinstance(it.get(k), str) and it.get(k)), None)
            if text is not None:
                texts.setdefault(str(it["id"]), text)
    answer = next((obj[k] for k in _ANSWER_KEYS if isinstance(obj.get(k), str) and str(obj[k]).strip()), None)
    return texts, answer


def fetch_texts(sample: TraceSample, corpus: Any = None) -> Texts:
    """The texts of the sampled requests (module docs, step 2): read again from each request's own line (JSONL) or
    row (Parquet), then the corpus manifest (``rankgate.corpus.CorpusManifest``) for context items still without."""
    wanted: dict[str, dict[int, SampledRequest]] = {}
    for r in sample.requests:
        wanted.setdefault(r.source_file, {})[r.source_line] = r
    contexts: dict[str, dict[str, str]] = {}
    answers: dict[str, str] = {}
    for path, lines in sorted(wanted.items()):
        if not os.path.isfile(path):
            continue
        if path.endswith((".parquet", ".pq")):
            found = _parquet_records(path, {r.request_id for r in lines.values()})
            for r in lines.values():
                texts, answer = _carried(found.get(r.request_id), r.request_id, sample.context_stage)
                contexts[r.request_id] = texts
                if answer is not None:
                    answers[r.request_id] = answer
            continue
        from rankgate.io.source import text_lines

        last = max(lines)
        for number, line in text_lines(path):
            at = lines.get(number)
            if at is not None:
                try:
                    obj = json.loads(line)
                except ValueError:
                    obj = None
                texts, answer = _carried(obj, at.request_id, sample.context_stage)
                contexts[at.request_id] = texts
                if answer is not None:
                    answers[at.request_id] = answer
            if number >= last:
                break
    from_trace = sum(1 for r in sample.requests for c in r.contexts if c[0] in contexts.get(r.request_id, {}))
    from_corpus = 0
    if corpus is not None:
        need = [(r.request_id, c[0]) for r in sample.requests for c in r.contexts
                if c[0] not in contexts.get(r.request_id, {})]
        where = corpus.positions([d for _, d in need]).tolist() if need else []
        for (rid, item), pos in zip(need, where):
            text = corpus.text_at(pos) if pos >= 0 else None
            if text:
                contexts.setdefault(rid, {})[item] = text
                from_corpus += 1
    return Texts(contexts, answers, from_trace, from_corpus)


def _parquet_records(path: str, ids: set[str]) -> dict[str, dict[str, Any]]:
    """The records of ``ids`` in a rankgate trace Parquet file (only its request_id, retrieved and answer columns)."""
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(path)
    names = set(pf.schema_arrow.names)
    if "request_id" not in names:
        return {}
    import pyarrow as pa

    cols = ["request_id"] + [c for c in ("retrieved", *_ANSWER_KEYS) if c in names]
    out: dict[str, dict[str, Any]] = {}
    for group in range(pf.num_row_groups):  # the ids first; the nested columns only of the row groups that hold one
        rids = [str(x) for x in pf.read_row_group(group, columns=["request_id"]).column(0).to_pylist()]
        hit = [i for i, x in enumerate(rids) if x in ids]
        if hit:
            part = pf.read_row_group(group, columns=cols).take(pa.array(hit, pa.int64())).to_pylist()
            for row in part:
                out[str(row["request_id"])] = row
    return out


# -- 3. the judge -------------------------------------------------------------------------------------------------
def judge_items(sample: TraceSample, texts: Texts, tasks: Sequence[str],
                statements: Mapping[str, tuple[str, ...] | None] | None = None) -> dict[str, list[Any]]:
    """The judge items of each task (module docs, step 3); with ``statements`` (the statements found per request),
    the support items of the second round. A request without every context text is not judged."""
    from rankgate.judges import JudgeItem

    out: dict[str, list[Any]] = {}
    for r in sample.requests:
        have = texts.contexts.get(r.request_id, {})
        if not r.contexts or any(c[0] not in have for c in r.contexts):
            continue
        answer = texts.answers.get(r.request_id)
        if statements is None:
            if "context_relevance" in tasks:
                for item, rank, _ in r.contexts:
                    out.setdefault("context_relevance", []).append(
                        JudgeItem(f"{r.request_id}{SEP}{rank}{SEP}{item}", {"question": r.query, "passage": have[item]}))
            if "faithfulness" in tasks and answer is not None:
                out.setdefault("statements", []).append(
                    JudgeItem(r.request_id, {"question": r.query, "answer": answer}))
        elif "faithfulness" in tasks and answer is not None:
            context = "\n\n".join(have[c[0]] for c in r.contexts)
            for j, s in enumerate(statements.get(r.request_id) or ()):
                out.setdefault("support", []).append(JudgeItem(f"{r.request_id}{SEP}s{j}",
                                                               {"statement": s, "context": context}))
    return out


@dataclass(frozen=True)
class Judged:
    """The labels per task and item key (``None``: the call failed, ``errors`` says why), and the calls."""

    labels: Mapping[str, Mapping[str, Any]]
    errors: Mapping[str, Mapping[str, str]]
    calls: Mapping[str, int]
    cached: Mapping[str, int]


def first_round_plan(client: Any, sample: TraceSample, texts: Texts, tasks: Sequence[str]) -> list[Any]:
    """The judge's plans (:class:`rankgate.judges.Plan`) of the calls known before any is sent."""
    items = judge_items(sample, texts, tasks)
    return [client.plan(task, items[task]) for task in ("context_relevance", "statements") if task in items]


def support_plan(client: Any, sample: TraceSample, texts: Texts) -> Any:
    """The support round as the dry run estimates it: one statement per sentence of each answer."""
    import re

    guess = {rid: tuple(s for s in re.split(r"(?<=[.!?])\s+", a.strip()) if s) for rid, a in texts.answers.items()}
    items = judge_items(sample, texts, ("faithfulness",), statements=guess).get("support", [])
    return client.plan("support", items)


def run_judge(client: Any, sample: TraceSample, texts: Texts, tasks: Sequence[str]) -> Judged:
    """Ask ``client`` for every label: context relevance and the statements first, then each statement's support.
    The client's call budget holds across both rounds; an item past it is an error ``call budget reached``."""
    labels: dict[str, dict[str, Any]] = {}
    errors: dict[str, dict[str, str]] = {}
    calls: dict[str, int] = {}
    cached: dict[str, int] = {}

    def run(task: str, items: list[Any]) -> None:
        got = client.run(task, items)
        labels[task] = {j.key: j.label for j in got if j.error is None}
        errors[task] = {j.key: str(j.error) for j in got if j.error is not None}
        calls[task] = len(got)
        cached[task] = sum(1 for j in got if j.cached)

    first = judge_items(sample, texts, tasks)
    for task in ("context_relevance", "statements"):
        if task in first:
            run(task, first[task])
    if "statements" in first:
        found = {k: tuple(str(s) for s in v) for k, v in labels.get("statements", {}).items()}
        second = judge_items(sample, texts, tasks, statements=found)
        if second.get("support"):
            run("support", second["support"])
    return Judged(labels, errors, calls, cached)


# -- human labels -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class HumanLabels:
    """``grades[(query_id, id)]`` (relevance, 0–2) and ``verdicts[query_id]`` (faithful: True, False, None)."""

    grades: Mapping[tuple[str, str], int] = field(default_factory=dict)
    verdicts: Mapping[str, bool | None] = field(default_factory=dict)
    files: tuple[str, ...] = ()


def read_human_labels(paths: Sequence[str]) -> HumanLabels:
    """Human labels as ``rankgate label export`` writes them (docs/labels.md): ``{query_id, id, grade}`` lines
    (grades 0–2) and ``{query_id, faithful}`` lines, in one file or several. ``query_id`` is the request id, or
    ``prod-<request_id>`` as the queues of production requests name it. A repeat or a value of another type is an
    input error naming the file and line."""
    from rankgate.io.jsonl import json_objects

    grades: dict[tuple[str, str], int] = {}
    verdicts: dict[str, bool | None] = {}
    where: dict[Any, tuple[str, int]] = {}
    for path in paths:
        for line, obj in json_objects(path, "human labels", "{query_id, id, grade} or {query_id, faithful}"):
            q = obj.get("query_id")
            if isinstance(q, int) and not isinstance(q, bool):
                q = str(q)
            if not isinstance(q, str) or not q:
                raise InputError("needs a query_id (the request id, or prod-<request id>)", path=path, line=line,
                                 field="query_id")
            if "grade" in obj:
                d = obj.get("id")
                if isinstance(d, int) and not isinstance(d, bool):
                    d = str(d)
                if not isinstance(d, str) or not d:
                    raise InputError("needs the id of the item graded", path=path, line=line, field="id")
                g = obj["grade"]
                if isinstance(g, bool) or g not in (0, 1, 2):
                    raise InputError(f"must be 0, 1 or 2 (the judge's scale); got {json.dumps(g)[:40]}", path=path,
                                     line=line, field="grade", hint="labels on 0-3 are for the gold set")
                key: Any = (q, d)
                if key in where:
                    raise InputError(f"grades ({q!r}, {d!r}) again (first at {where[key][0]}:{where[key][1]})",
                                     path=path, line=line)
                where[key] = (path, line)
                grades[key] = int(g)
            elif "faithful" in obj:
                v = obj["faithful"]
                if v is not None and not isinstance(v, bool):
                    raise InputError(f"must be true, false or null; got {json.dumps(v)[:40]}", path=path, line=line,
                                     field="faithful")
                if q in where:
                    raise InputError(f"labels the answer of {q!r} again (first at {where[q][0]}:{where[q][1]})",
                                     path=path, line=line)
                where[q] = (path, line)
                verdicts[q] = v
            else:
                raise InputError("is neither a relevance label {query_id, id, grade} nor an answer's "
                                 "{query_id, faithful}", path=path, line=line,
                                 hint="export the labels with rankgate label export")
    return HumanLabels(grades, verdicts, tuple(paths))


# -- 4. the estimates ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TracesEstimate:
    """One estimate: the ``task``'s ``signal`` in ``window`` (None: the whole period) and ``segment`` (``all`` or
    ``field=value``), with its interval, the requests judged (``n``) and usable (``size``), and the human labels
    that corrected it."""

    task: str
    signal: str
    window: int | None
    segment: str
    value: float | None
    se: float | None
    ci: tuple[float, float] | None
    n: int
    size: int
    coverage: float | None
    labelled: int
    corrected: int
    strata: int
    judge: float | None = None  # the judge's own estimate, when human labels corrected this one


@dataclass(frozen=True)
class RequestValue:
    """One judged request's value per task (None: not judged, failed or not applicable) and why not."""

    request_id: str
    values: Mapping[str, float | None]
    human: Mapping[str, float | None]
    notes: Mapping[str, str]
    grades: tuple[int | None, ...] = ()
    statements: int | None = None
    supported: int | None = None


def request_values(sample: TraceSample, texts: Texts, judged: Judged, tasks: Sequence[str], human: HumanLabels,
                   *, faithful_min: float = 0.8) -> list[RequestValue]:
    """Each sampled request's judge value and human value per task (module docs, step 4)."""
    from rankgate.metrics.answers import OK, AnswerLabels, status

    out = []
    for r in sample.requests:
        have = texts.contexts.get(r.request_id, {})
        values: dict[str, float | None] = {}
        hv: dict[str, float | None] = {}
        notes: dict[str, str] = {}
        grades: tuple[int | None, ...] = ()
        n_stmt = n_sup = None
        readable = bool(r.contexts) and all(c[0] in have for c in r.contexts)
        qids = (r.request_id, f"prod-{r.request_id}")
        if "context_relevance" in tasks:
            if not readable:
                values["context_relevance"], notes["context_relevance"] = None, "no text"
            else:
                keys = [f"{r.request_id}{SEP}{rank}{SEP}{item}" for item, rank, _ in r.contexts]
                lab = judged.labels.get("context_relevance", {})
                grades = tuple(lab.get(k) for k in keys)
                state, value = status("context_relevance", AnswerLabels(statements=(), context_relevance=grades))
                values["context_relevance"] = value if state == OK else None
                if state != OK:
                    errs = judged.errors.get("context_relevance", {})
                    notes["context_relevance"] = next((errs[k] for k in keys if k in errs), "judge error")
                human_grades = []
                for item, _, _ in r.contexts:
                    g = next((human.grades[(q, item)] for q in qids if (q, item) in human.grades), None)
                    human_grades.append(g)
                if human_grades and all(g is not None for g in human_grades):
                    hv["context_relevance"] = sum(1 for g in human_grades if g is not None and g >= 1) / len(human_grades)
        if "faithfulness" in tasks:
            answer = texts.answers.get(r.request_id)
            if not readable or answer is None:
                values["faithfulness"] = None
                notes["faithfulness"] = "no text" if not readable else "no answer logged"
            elif r.request_id in judged.errors.get("statements", {}):
                values["faithfulness"], notes["faithfulness"] = None, judged.errors["statements"][r.request_id]
            else:
                stmts = judged.labels.get("statements", {}).get(r.request_id)
                stmts = None if stmts is None else tuple(str(s) for s in stmts)
                sup_lab, sup_err = judged.labels.get("support", {}), judged.errors.get("support", {})
                support = tuple(sup_lab.get(f"{r.request_id}{SEP}s{j}") for j in range(len(stmts or ())))
                state, share = status("faithfulness", AnswerLabels(statements=stmts, support=support))
                if state == OK:
                    values["faithfulness"] = 1.0 if share >= faithful_min else 0.0
                    n_stmt, n_sup = len(stmts or ()), sum(1 for v in support if v == "supported")
                else:
                    values["faithfulness"] = None
                    err = next((sup_err[f"{r.request_id}{SEP}s{j}"] for j in range(len(stmts or ()))
                                if f"{r.request_id}{SEP}s{j}" in sup_err), None)
                    notes["faithfulness"] = err or ("no statement (a refusal)" if state != "judge_error" else "judge error")
            verdict = next((human.verdicts[q] for q in qids if q in human.verdicts), None)
            if verdict is not None:
                hv["faithfulness"] = 1.0 if verdict else 0.0
        out.append(RequestValue(r.request_id, values, hv, notes, grades, n_stmt, n_sup))
    return out


def estimate(sample: TraceSample, values: Sequence[RequestValue], tasks: Sequence[str], *,
             confidence: float = 0.95) -> list[TracesEstimate]:
    """Every estimate (module docs, step 4): per task, over the whole period then per window; in each, all
    traffic, then each stratify field's values (``field=value``), sorted."""
    from rankgate.stats.stratified import StratumData, stratified_mean

    by_id = {v.request_id: v for v in values}
    members: dict[tuple[int, tuple[str, ...]], list[RequestValue]] = {k: [] for k in sample.sizes}
    for r in sample.requests:
        members[r.stratum].append(by_id[r.request_id])
    windows = sorted({k[0] for k in sample.sizes})
    out: list[TracesEstimate] = []
    for task in tasks:
        data = {}
        for key, got in members.items():
            vals = tuple(v.values[task] for v in got if v.values.get(task) is not None)
            pairs = tuple((v.values[task], v.human[task]) for v in got
                          if v.values.get(task) is not None and v.human.get(task) is not None)
            data[key] = StratumData(sample.sizes[key], vals, pairs)  # type: ignore[arg-type]
        domains: list[tuple[int | None, str, list[Any]]] = []
        for win in [None, *windows]:
            keys = [k for k in sample.sizes if win is None or k[0] == win]
            domains.append((win, "all", keys))
            for i, f in enumerate(sample.stratify):
                for value in sorted({k[1][i] for k in keys}):
                    domains.append((win, f"{f}={value}", [k for k in keys if k[1][i] == value]))
        for win, segment, keys in domains:
            est, _ = stratified_mean([data[k] for k in sorted(keys)], confidence=confidence, bounds=(0.0, 1.0))
            judge = None
            if est.corrected:
                plain, _ = stratified_mean([StratumData(data[k].size, data[k].values) for k in sorted(keys)],
                                           confidence=confidence, bounds=(0.0, 1.0))
                judge = plain.value
            out.append(TracesEstimate(task, SIGNAL_OF[task], win, segment, est.value, est.se, est.ci, est.n, est.size,
                                      est.coverage, est.labelled, est.corrected, est.strata, judge))
    return out


def stratum_rows(sample: TraceSample, values: Sequence[RequestValue], tasks: Sequence[str], *,
                 confidence: float = 0.95) -> list[dict[str, Any]]:
    """Each stratum's design and estimate, for summary.json: window, values, usable, drawn, and per task n,
    labelled, mean and interval."""
    from rankgate.stats.stratified import StratumData, stratified_mean
    from rankgate.traces.signals import iso

    by_id = {v.request_id: v for v in values}
    members: dict[tuple[int, tuple[str, ...]], list[RequestValue]] = {k: [] for k in sample.sizes}
    for r in sample.requests:
        members[r.stratum].append(by_id[r.request_id])
    rows = []
    for key in sorted(sample.sizes):
        row: dict[str, Any] = {"window": iso(key[0]), **dict(zip(sample.stratify, key[1])),
                               "usable": sample.sizes[key], "drawn": sample.quota.get(key, 0)}
        for task in tasks:
            got = members[key]
            vals = tuple(v.values[task] for v in got if v.values.get(task) is not None)
            pairs = tuple((v.values[task], v.human[task]) for v in got
                          if v.values.get(task) is not None and v.human.get(task) is not None)
            est, _ = stratified_mean([StratumData(sample.sizes[key], vals, pairs)], confidence=confidence,  # type: ignore[arg-type]
                                     bounds=(0.0, 1.0))
            row[task] = {"n": est.n, "labelled": est.labelled, "value": est.value,
                         "ci": None if est.ci is None else list(est.ci), "corrected": bool(est.corrected)}
        rows.append(row)
    return rows


def signal_values(estimates: Sequence[TracesEstimate]) -> tuple[list[Any], list[Any]]:
    """``(per window, whole period)`` as :class:`rankgate.traces.signals.SignalValue` rows, for the monitors."""
    from rankgate.traces.signals import SignalValue

    values: list[SignalValue] = []
    period: list[SignalValue] = []
    for e in estimates:
        note = None if e.value is not None else "no request judged"
        v = SignalValue(e.window, e.segment, e.signal, e.value, e.n, None, note)
        (period if e.window is None else values).append(v)
    return values, period


# -- reading them back for traces check ---------------------------------------------------------------------------
SUMMARY = "summary.json"
KIND = "rankgate traces judge"


def read_judge_signals(folder: str) -> tuple[str, int, list[Any]]:
    """``(window, window_us, per-window signal values)`` of the folder ``rankgate traces judge -o`` wrote (its
    summary.json), for ``traces check --judge-dir``. An input error names the file when it is not such a summary."""
    from rankgate.traces.signals import SignalValue

    path = os.path.join(folder, SUMMARY) if os.path.isdir(folder) else folder
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except FileNotFoundError:
        raise InputError("does not exist", path=path, hint="pass the folder rankgate traces judge -o wrote") from None
    except ValueError as exc:
        raise InputError(f"is not JSON ({exc})", path=path) from None
    if not isinstance(data, dict) or data.get("kind") != KIND or not isinstance(data.get("signals"), list):
        raise InputError(f"is not the summary of {KIND} (no kind {KIND!r} and signals)", path=path,
                         hint="pass the folder rankgate traces judge -o wrote")
    out = []
    for i, s in enumerate(data["signals"]):
        try:
            if s["window"] == "all":
                continue
            out.append(SignalValue(int(s["window_us"]), str(s["segment"]), str(s["signal"]),
                                   None if s["value"] is None else float(s["value"]), int(s["n"]), None,
                                   s.get("note")))
        except (KeyError, TypeError, ValueError):
            raise InputError(f"signals[{i}] is not a signal (window, window_us, segment, signal, value, n)",
                             path=path) from None
    return str(data["design"]["window"]), int(data["design"]["window_us"]), out


def with_judge_signals(summary: Any, folder: str) -> Any:
    """``summary`` (:class:`rankgate.traces.signals.TraceSummary`) with the judge's per-window signals of ``folder``
    added, for the monitors; a UsageError when the judge's windows are not the summary's."""
    import dataclasses

    window, width, values = read_judge_signals(folder)
    if width != summary.window_us:
        raise UsageError(f"{F.judge_dir} holds estimates per {window} window; the check's windows are "
                         f"{summary.window}: run rankgate traces judge with {F.window} {summary.window}")
    return dataclasses.replace(summary, values=tuple(summary.values) + tuple(values))


def check_judge_monitors(config: Any, have: bool) -> None:
    """The monitors on judge signals can run: ``have`` (a judge folder given) and a rule that reads estimates
    (a sampled estimate has no count to test a proportion on). A UsageError naming the monitor otherwise."""
    for m in config.monitors:
        if not m.signal.startswith("judge."):
            continue
        if not have:
            raise UsageError(f"monitor {m.name!r} watches {m.signal}, which rankgate traces judge estimates: give "
                             f"{F.judge_dir} (the folder it wrote)")
        if m.change == "proportion":
            raise UsageError(f"monitor {m.name!r}: {m.signal} is an estimate from a sample, not a count of requests; "
                             f"use change: robust_z, or min")


def finite(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else x
