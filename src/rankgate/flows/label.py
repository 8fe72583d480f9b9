"""Human labels (``rankgate label``): serve a queue or the browse view to label in, export the labels, measure the
annotators' agreement. See :mod:`rankgate.labels` and docs/labels.md.

* :func:`prepare_serve` reads the queue (or scores the runs for the browse view, with the :class:`Scorer` every flow
  scores with), opens and binds the database, claims it for this server, binds the socket and builds the app: a
  :class:`LabelServer` the caller prints the address of and runs (:func:`rankgate.labels.server.run_server`).
* :func:`run_export` reads the labels in force into the shapes rankgate reads; with ``into_gold`` it also prepares the
  gold set with the graded chunks added (:func:`write_into_gold` writes it atomically, after checking that the file
  did not change meanwhile).
* :func:`run_agreement` measures the annotators against each other, and against a judge's labels when given.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rankgate.flows._inputs import FilePath, paths

if TYPE_CHECKING:  # pragma: no cover
    import socket

    from starlette.applications import Starlette

    from rankgate.labels.agreement import Agreement
    from rankgate.labels.export import GoldMerge
    from rankgate.labels.pages import BrowseView
    from rankgate.labels.store import LabelStore

__all__ = ["AgreementRequest", "AgreementResult", "ExportRequest", "ExportResult", "LabelServer", "ServeRequest",
           "prepare_serve", "run_agreement", "run_export", "write_into_gold"]

SCALE_NAMES = ("0-3", "0-2", "binary", "verdict")


@dataclass(frozen=True, slots=True)
class ServeRequest:
    db: str                                  # the labels database (made when missing)
    queue: str | None = None                 # a queue rankgate writes
    gold: str | None = None                  # with runs: the browse view
    runs: tuple[str, ...] = ()
    annotator: str | None = None             # the name of every session that gives none
    scale: str | None = None                 # None: 0-2 for relevance, verdict for answers
    host: str = "127.0.0.1"
    port: int = 8765
    allow_remote: bool = False
    overlap: float = 0.0                     # share of the queue's items labelled by two annotators
    guide: str | None = None                 # markdown shown beside the cards
    depth: int = 10                          # the browse view's top k
    by: str | None = None                    # the gold field the browse view's segments come from
    corpus: str | None = None                # texts of retrieved items the runs did not log
    ties: str | None = None

    def inputs(self) -> tuple[FilePath, ...]:
        """The files the request reads: the queue, the gold set, the runs, the guide, the corpus manifest (the
        database is read and written)."""
        return paths(self.queue, self.gold, *self.runs, self.guide, self.corpus)

    def __post_init__(self) -> None:
        from rankgate._util.constraints import FILE, PATHS, TEXT, check_fields, typed
        from rankgate.errors import F, UsageError

        check_fields(self, "ServeRequest", db=TEXT, queue=FILE, gold=FILE, runs=typed(PATHS), annotator=TEXT,
                     scale=TEXT, host=TEXT, port=typed(int), overlap=typed(float), guide=FILE, depth=typed(int),
                     by=TEXT, corpus=FILE, ties=TEXT)
        if not self.db:
            raise UsageError(f"{F.db} must name the labels database")
        if self.queue is None and not (self.gold and self.runs):
            raise UsageError(f"give a queue, or {F.gold} and {F.runs} for the browse view")
        if bool(self.gold) != bool(self.runs):
            raise UsageError(f"the browse view needs both {F.gold} and {F.runs}")
        if self.scale is not None and self.scale not in SCALE_NAMES:
            raise UsageError(f"{F.scale} must be one of {', '.join(SCALE_NAMES)}; got {self.scale!r}")
        if not 0.0 <= float(self.overlap) <= 1.0:
            raise UsageError(f"{F.overlap} must be a share between 0 and 1; got {self.overlap!r}")
        if not 0 <= self.port <= 65535:
            raise UsageError(f"{F.port} must be 0 to 65535; got {self.port}")
        if self.depth < 1:
            raise UsageError(f"{F.depth} must be a positive integer; got {self.depth}")


@dataclass
class LabelServer:
    """What :func:`prepare_serve` made ready: the app, its database and socket, and what to print."""

    app: Starlette
    store: LabelStore
    sock: socket.socket
    url: str                                 # the address with the session token
    what: str                                # "pool.jsonl: 30 items, scale 0-2, overlap 0.1" …
    warnings: tuple[str, ...] = ()

    def close(self) -> None:
        self.sock.close()
        self.store.close()


def _default_scale(kind: str) -> str:
    return "verdict" if kind == "answer" else "0-2"


def prepare_serve(req: ServeRequest) -> LabelServer:
    import secrets

    from rankgate.errors import F, UsageError
    from rankgate.labels.app import AppConfig, build_app
    from rankgate.labels.pages import render_guide
    from rankgate.labels.queue import read_queue
    from rankgate.labels.scales import SCALES
    from rankgate.labels.server import bind, check_host, is_loopback
    from rankgate.labels.store import LabelStore

    check_host(req.host, allow_remote=req.allow_remote)
    queue = read_queue(req.queue) if req.queue else None
    if queue is not None and req.scale is not None and (req.scale == "verdict") != (queue.kind == "answer"):
        raise UsageError(f"{F.scale} {req.scale} does not fit a queue of {queue.kind} items (relevance takes 0-3, 0-2 "
                         "or binary; answers take verdict)")
    guide = ""
    if req.guide:
        from rankgate.io.source import check_file, text_lines

        check_file(req.guide, "guide")
        guide = render_guide("".join(line for _, line in text_lines(req.guide)))
    browse = _browse(req) if req.gold else None
    try:  # (after the inputs are read: a bad queue or host is named with or without the extra; before the database)
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        raise UsageError(f"the labelling app needs the 'label' extra ({exc.name} is not installed): "
                         "pip install 'rankgate[label]'") from None
    store = LabelStore.open(req.db, create=True)
    try:
        existing = store.meta.get("scale")
        name = req.scale or existing or _default_scale(queue.kind if queue else "relevance")
        scale = SCALES[name]
        if browse is not None and scale.kind != "grade":
            raise UsageError(f"the browse view grades retrieved items; {F.scale} {name} is for answers")
        if queue is not None:
            store.bind_queue(queue, scale, req.overlap)
        if browse is not None:
            store.bind_browse(scale)
        sock = bind(req.host, req.port)
        try:
            host, port = sock.getsockname()[:2]
            shown = f"[{host}]" if ":" in host else host
            token = secrets.token_urlsafe(24)
            url = f"http://{shown}:{port}/?token={token}"
            store.claim_server(url.split("?")[0])
            loop = is_loopback(req.host)
            hosts = (f"{shown}", "127.0.0.1", "localhost", "[::1]") if loop else None
            app = build_app(AppConfig(store, scale, token, annotator=req.annotator, guide=guide, browse=browse,
                                      queue=queue is not None, hosts=hosts,
                                      title=f"{os.path.basename(req.queue or req.gold or '')} · rankgate label"))
        except BaseException:
            sock.close()
            raise
    except BaseException:
        store.close()
        raise
    parts = []
    if queue is not None:
        parts.append(f"{os.path.basename(queue.path)}: {len(queue.items)} {queue.shape.replace('_', ' ')} items")
    if browse is not None:
        parts.append(f"browse {len(browse.queries)} queries of {', '.join(browse.runs)} (top {browse.depth})")
    what = "; ".join(parts) + f", scale {scale.name}" + (f", overlap {req.overlap:g}" if req.overlap else "")
    warnings = () if loop else (f"serving on {req.host}, which other machines can reach: anyone with the address and "
                                "its token can label; stop with Ctrl-C when done",)
    return LabelServer(app, store, sock, url, what, warnings)


def _browse(req: ServeRequest) -> BrowseView:
    """Each query's top ``depth`` in every run, the items' ranks and gold grades, and the per-query values of
    ``ndcg@depth`` and ``hit@depth`` computed by the scoring every flow uses (:class:`Scorer`)."""
    import math

    from rankgate.flows.evaluate import Scorer
    from rankgate.flows.pool import run_labels
    from rankgate.labels.pages import BrowseItem, BrowseQuery, BrowseView
    from rankgate.scoring.options import Scoring
    from rankgate.stats.pooling import ranked

    assert req.gold is not None
    metric, hit = f"ndcg@{req.depth}", f"hit@{req.depth}"
    scorer = Scorer(Scoring(metrics=(metric, hit), ties=req.ties))
    gold, _ = scorer.load(req.gold, req.runs[0])
    runs = [scorer.load(gold, r)[1] for r in req.runs]
    names = run_labels(req.runs)
    results = [scorer.score(gold, run, warn=False) for run in runs]
    lists = [ranked(run, ties=req.ties) for run in runs]
    corpus = None
    if req.corpus:
        from rankgate.corpus import load_manifest

        corpus = load_manifest(req.corpus)
    judged = gold.judgements()
    questions = gold.field("query")
    segments = gold.field(req.by) if req.by else gold.field("segment")
    if req.by and all(s is None for s in segments):
        from rankgate.model.results import EvaluationResult  # noqa: F401  (fields live on results too)

        segments = list(results[0].fields.get(req.by, (None,) * len(gold.query_ids)))
    index = [{q: i for i, q in enumerate(r.query_ids)} for r in results]
    out = []
    for qi, q in enumerate(gold.query_ids):
        values: list[float | None] = []
        for r, at in zip(results, index):
            v = float(r[metric][at[q]]) if q in at else math.nan
            values.append(None if math.isnan(v) else v)
        last = results[-1]
        h = float(last[hit][index[-1][q]]) if q in index[-1] else math.nan
        relevant = any(g > 0 for g in judged.get(q, {}).values())
        positions = [{d: rank for rank, (d, _) in enumerate(lst.get(q, []), start=1)} for lst in lists]
        tops = []
        for lst in lists:
            items = []
            for d, text in lst.get(q, [])[:req.depth]:
                if text is None:
                    text = next((t for other in lists for dd, t in other.get(q, []) if dd == d and t is not None), None)
                if text is None and corpus is not None:
                    i = corpus.index_of(d)
                    text = None if i is None else corpus.text_at(i)
                items.append(BrowseItem(d, text, tuple(p.get(d) for p in positions), judged.get(q, {}).get(d)))
            tops.append(tuple(items))
        first, end = values[0], values[-1]
        moved = (end - first) if first is not None and end is not None else 0.0
        out.append(BrowseQuery(q, str(questions[qi] or ""), "" if segments[qi] is None else str(segments[qi]),
                               tuple(values), relevant and h == 0.0, moved, tuple(tops)))
    return BrowseView(tuple(names), metric, req.depth, tuple(out), req.by)


# -- export ----------------------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ExportRequest:
    db: str
    into_gold: str | None = None             # a JSONL gold set the graded chunks are added to
    resolve: str = "leave-out"               # annotators who disagree: leave-out, lowest, highest
    every: bool = False                      # each label on its own line (an audit file)

    def inputs(self) -> tuple[FilePath, ...]:
        """The database and the gold set (which :func:`write_into_gold` rewrites, by design)."""
        return paths(self.db, self.into_gold)

    def __post_init__(self) -> None:
        from rankgate._util.constraints import FILE, TEXT, check_fields, typed
        from rankgate.errors import F, UsageError
        from rankgate.labels.export import RESOLVE

        check_fields(self, "ExportRequest", db=TEXT, into_gold=FILE, resolve=TEXT, every=typed(bool))
        if self.resolve not in RESOLVE:
            raise UsageError(f"{F.resolve} must be one of {', '.join(RESOLVE)}; got {self.resolve!r}")
        if self.every and self.into_gold:
            raise UsageError(f"{F.every} writes every label, one line each; {F.into_gold} takes one label per item")


@dataclass(frozen=True)
class ExportResult:
    text: str                                # the JSONL
    lines: int
    labels: int
    kind: str                                # relevance or answer
    scale: str
    disagreements: tuple[tuple[str, str], ...]
    gold: GoldMerge | None = None
    gold_sha256: str | None = None           # the gold file the merge was made from
    notes: tuple[str, ...] = field(default_factory=tuple)


def run_export(req: ExportRequest) -> ExportResult:
    import json

    from rankgate.errors import F, UsageError
    from rankgate.labels.export import export_lines, merge_into_gold
    from rankgate.labels.store import LabelStore

    store = LabelStore.open(req.db)
    try:
        meta = store.meta
        scale = store.scale
        rows = list(store.labels())
        kind = meta.get("kind", "relevance")
        exported = export_lines(rows, queue=meta.get("queue", "browse"), kind=kind, resolve=req.resolve,
                                every=req.every)
        payloads = store.payloads([(str(r["query_id"]), str(r["id"])) for r in exported.records]) \
            if req.into_gold and kind == "relevance" else {}
    finally:
        store.close()
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in exported.records)
    notes = []
    if scale.name == "0-3" and kind == "relevance":
        notes.append("labels on the 0-3 scale: evaluate --judged and judge calibrate --human read 0-2 grades")
    merge = digest = None
    if req.into_gold:
        if kind != "relevance":
            raise UsageError(f"{F.into_gold}: the database holds verdicts on answers, not grades of chunks")
        from rankgate.io.source import sha256_file

        digest = sha256_file(req.into_gold)
        merge = merge_into_gold(exported.records, req.into_gold, payloads)
    return ExportResult(text, len(exported.records), exported.labels, kind, scale.name, exported.disagreements,
                        merge, digest, tuple(notes))


def write_into_gold(req: ExportRequest, result: ExportResult) -> None:
    """Write the merged gold set (all or nothing), refusing when the file changed since it was read."""
    from rankgate._util.atomic import write_bytes
    from rankgate.errors import InputError
    from rankgate.io.source import sha256_file

    if req.into_gold is None or result.gold is None:
        return
    if sha256_file(req.into_gold) != result.gold_sha256:
        raise InputError("changed while the labels were merged", path=req.into_gold, hint="export again")
    write_bytes(req.into_gold, result.gold.data)


# -- agreement -------------------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class AgreementRequest:
    db: str
    judge_labels: str | None = None          # a judge's labels {query_id, id, grade}
    weights: str | None = "linear"           # of graded scales: linear, quadratic, None
    seed: int = 0
    resamples: int = 2000
    confidence: float = 0.95

    def inputs(self) -> tuple[FilePath, ...]:
        return paths(self.db, self.judge_labels)

    def __post_init__(self) -> None:
        from rankgate._util.constraints import FILE, TEXT, check_fields
        from rankgate.errors import F, UsageError
        from rankgate.stats.options import Statistics

        check_fields(self, "AgreementRequest", db=TEXT, judge_labels=FILE)
        if self.weights not in ("linear", "quadratic", None):
            raise UsageError(f"{F.weights} must be linear, quadratic or none; got {self.weights!r}")
        Statistics(seed=self.seed, resamples=self.resamples, confidence=self.confidence)


@dataclass(frozen=True)
class AgreementResult:
    agreement: Agreement
    db: str


def run_agreement(req: AgreementRequest) -> AgreementResult:
    from rankgate.labels.agreement import measure
    from rankgate.labels.store import LabelStore

    store = LabelStore.open(req.db)
    try:
        scale = store.scale
        rows = list(store.labels())
    finally:
        store.close()
    judge = None
    if req.judge_labels:
        from rankgate.judges.files import read_labels

        judge, _ = read_labels(req.judge_labels)
    agreement = measure(rows, scale, judge=judge, weights=req.weights, confidence=req.confidence,
                        resamples=req.resamples, seed=req.seed)
    return AgreementResult(agreement, req.db)
