"""The report's use case: load the gold set and the runs once, score each on every metric the report
shows, draw the intervals and segments, compare with a baseline, check the ship criteria, and run the
component experiments asked for. :func:`run_report` returns a :class:`ReportEvaluation`;
:func:`rankgate.render.build.assemble` turns it into the :class:`~rankgate.render.model.Report`
(lists, curves, diagnosis) that the HTML renders.

Same inputs and seed ⇒ the same numbers: statistics are seeded and nothing reads the clock.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from rankgate._util import progress
from rankgate.errors import F, UsageError
from rankgate.flows._inputs import FilePath, config_file, paths
from rankgate.scoring.options import Scoring
from rankgate.stats.options import Statistics

if TYPE_CHECKING:  # pragma: no cover
    from rankgate.experiments.freshness import FreshnessWhatIf
    from rankgate.experiments.rewrite import RewriteEffect
    from rankgate.gating.baseline import BaselineSummary
    from rankgate.gating.config import GateConfig
    from rankgate.gating.decide import GateOutcome
    from rankgate.io import Gold, Run
    from rankgate.flows.evaluate import Evaluation, Scorer
    from rankgate.io.load import GoldInput, RunInput
    from rankgate.model.results import EvaluationResult

__all__ = [
    "AUTO_FIELDS_MAX_LABELS", "EXPERIMENT_METRICS", "SWEEP_FAMILIES", "Baseline", "Inputs", "Lexical", "ReportEvaluation",
    "ReportRequest", "Shown", "StageScores", "judged_k", "k_raw", "panel_metrics", "raw_run", "run_report", "sweep_ks",
]

SWEEP_FAMILIES = ("recall", "ndcg")
AUTO_FIELDS_MAX_LABELS = 20
#: What the component experiments score (the freshness what-if's runs; the rewrite names its own).
EXPERIMENT_METRICS = ("recall@5", "ndcg@10", "mrr")


def panel_metrics(k: int = 5) -> list[str]:
    """The retrieval panel: recall@1, @3, @5 (and @k), ndcg@k, precision@k, distinct_docs@k, mrr."""
    ks = sorted({1, 3, 5, k})
    return [f"recall@{c}" for c in ks] + [f"ndcg@{k}", f"precision@{k}", f"distinct_docs@{k}", "mrr"]


def sweep_ks(depth: int) -> tuple[int, ...]:
    """k = 1…20, then 30, 50, 100, never past the run's depth (the longest list), and the depth itself:
    a curve past the depth would only repeat its last value. ``depth`` 0 (an empty run) gives 1…20."""
    top = 20 if depth <= 0 else min(20, depth)
    ks = set(range(1, top + 1)) | {c for c in (30, 50, 100) if c < depth}
    if depth > 0:
        ks.add(depth)
    return tuple(sorted(ks))


def judged_k(depth: int) -> int:
    """The cutoff of the judged@k the diagnosis reads: 10, or the run's depth when it is shorter."""
    return max(1, min(10, depth)) if depth > 0 else 10


def raw_run(run: Run) -> Run | None:
    """The raw candidate lists (``raw_topk`` beside ``topk``) as a run of their own, or None
    (:func:`rankgate.scoring.raw.raw_run`, which evaluate, compare and the gate share)."""
    from rankgate.scoring.raw import raw_run as of_run

    return of_run(run)


def k_raw(run: Run, raw: Run) -> int:
    """The raw list's cutoff (:func:`rankgate.scoring.raw.k_raw`)."""
    from rankgate.scoring.raw import k_raw as cutoff

    return cutoff(run, raw)


@dataclass(frozen=True)
class ReportRequest:
    """One report: the inputs it reads, how every run is scored (``scoring``, with the ship criteria's
    ``evaluate`` options already applied where the caller gave none: see :func:`rankgate.render.build.report`),
    how every interval is drawn (``statistics``), and what the page shows.

    ``scoring``'s ``k`` is the page's cutoff (:attr:`k`: 5 when None); its ``metrics`` are not read: the page
    names the metrics it shows, and ``metrics`` adds some to the panel. ``by``: the segment fields (None: intent,
    source_of_query and tags with 2–20 labels). ``enforce_as_of``, ``routing``, ``entity_linking``, ``rewrite`` (a
    rewrite log): the component experiments; ``answers`` (a summary.json path or its ``answers`` part),
    ``judged`` and ``calibration``: layer two and the bounds of an incomplete gold set, at ``judged_k`` (the
    command line's ``--k``; None: 10).
    """

    gold: GoldInput
    run: RunInput
    scoring: Scoring = field(default_factory=Scoring)
    statistics: Statistics = field(default_factory=Statistics)
    by: str | Iterable[str] | None = None
    min_score: float | None = None
    metrics: tuple[str, ...] = ()
    top_misses: int = 50
    title: str | None = None
    generated_at: str | None = None
    queries: str | None = None
    sources_dir: str | None = None
    baseline: RunInput | BaselineSummary | None = None  # a run, or the means of one (a summary.json path)
    lexical: RunInput | None = None
    config: GateConfig | None = None
    enforce_as_of: bool = False
    routing: bool = False
    entity_linking: bool = False
    rewrite: str | None = None
    answers: str | Mapping[str, Any] | None = None
    bounds: Mapping[str, Any] | None = None
    judged: str | None = None
    calibration: str | None = None
    judged_k: int | None = None

    def __post_init__(self) -> None:
        from rankgate._util.constraints import COUNT, FILE, FLAG, K, NAMES, TEXT, Param, check
        from rankgate.flows.evaluate import SCORING, STATISTICS

        def put(attr: str, value: Any) -> None:
            object.__setattr__(self, attr, value)

        # Every field but the inputs, the config and the layer-two parts checked here (a UsageError naming
        # it; numpy scalars made plain); a bound is named as the field, which the command line names by its option.
        put("scoring", check(SCORING, self.scoring, caller="ReportRequest"))
        put("statistics", check(STATISTICS, self.statistics, caller="ReportRequest"))
        self.scoring.column_map()  # (the --columns text read now: a mistake in it stops the report before any work)
        put("by", check(Param("by", NAMES, None, optional=True), self.by, caller="ReportRequest"))
        put("min_score", check(Param("min_score", float, None, optional=True), self.min_score, caller="ReportRequest"))
        put("metrics", check(Param("metrics", NAMES, ()), self.metrics, caller="ReportRequest"))
        put("top_misses", check(COUNT, self.top_misses, caller="ReportRequest", field="top_misses"))
        for attr in ("title", "generated_at"):
            put(attr, check(TEXT, getattr(self, attr), caller="ReportRequest", name=attr))
        for attr in ("queries", "sources_dir", "rewrite", "judged", "calibration"):
            put(attr, check(FILE, getattr(self, attr), caller="ReportRequest", name=attr))
        for attr in ("enforce_as_of", "routing", "entity_linking"):
            put(attr, check(FLAG, getattr(self, attr), caller="ReportRequest", name=attr))
        if self.judged_k is not None:
            put("judged_k", check(K, self.judged_k, caller="ReportRequest", name="judged_k"))
        if self.calibration and not self.judged:
            raise UsageError(f"{F.calibration} needs {F.judged} (the labels it corrects)")

    @property
    def k(self) -> int:
        """The page's cutoff (the panel's @k, the lists, the segments): the scoring's ``k``, else 5."""
        from rankgate.scoring.engine import DEFAULT_K

        return self.scoring.k or DEFAULT_K

    def inputs(self) -> tuple[FilePath, ...]:
        """The files the request reads (an output may be none of them): the gold set, run, baseline and
        lexical run given as paths, the ship criteria, the doc map, the queries, the answers summary, the
        judged labels and their calibration, the rewrite log."""
        return paths(self.gold, self.run, self.baseline, self.lexical, config_file(self.config), self.scoring.doc_map,
                     self.queries, self.answers, self.judged, self.calibration, self.rewrite)

    def on_disk(self, arg: Any, loaded: Any) -> Any:
        """A loaded input's file, when ``sources_dir`` says where it is (else ``arg`` itself)."""
        if isinstance(arg, (str, os.PathLike)) or self.sources_dir is None:
            return arg
        source = str(getattr(loaded, "source", ""))
        path = os.path.join(self.sources_dir, source)
        return path if source and not os.path.isabs(source) and os.path.isfile(path) else arg


@dataclass(frozen=True)
class Inputs:
    """The loaded gold set and run, the files read (with their sha256) and the query texts.

    ``hashing``: the files read, each with its sha256 or the computation of it still going on (the
    files are hashed on threads while the run is scored); :attr:`files` waits for them."""

    gold: Gold
    run: Run
    hashing: tuple[tuple[str, str, Any], ...]
    query_texts: Mapping[str, str]

    @property
    def files(self) -> tuple[tuple[str, str, str | None], ...]:
        """``(role, path, sha256)`` of each file read."""
        return tuple((role, path, sha.result() if hasattr(sha, "result") else sha) for role, path, sha in self.hashing)


@dataclass(frozen=True)
class Shown:
    """What the page shows of the run beside its :class:`~rankgate.flows.evaluate.Evaluation`: the run's depth
    (its longest list), the k-sweep's cutoffs, the panel's metrics, the gated ones, the false-evidence metric
    (empty without no-answer queries), the segment fields (None: none) and the segments' metrics."""

    depth: int
    ks: tuple[int, ...]
    panel: tuple[str, ...]
    gated: tuple[str, ...]
    false_evidence: str
    fields: tuple[str, ...] | None
    segment_metrics: tuple[str, ...]


@dataclass(frozen=True)
class Baseline:
    """The baseline: a run (scored and compared query by query) or a summary of means."""

    result: EvaluationResult | None = None
    summary: BaselineSummary | None = None
    comparison: Any = None  # Comparison | None
    label: str | None = None
    file: tuple[str, str, str | None] | None = None
    run: Run | None = None


@dataclass(frozen=True)
class Lexical:
    """The lexical baseline shown beside the misses."""

    label: str | None = None
    panel: tuple[tuple[str, float], ...] = ()
    result: EvaluationResult | None = None
    run: Run | None = None
    file: tuple[str, str, str | None] | None = None


@dataclass(frozen=True)
class StageScores:
    """Raw candidates (``raw_topk``) against the final list: the raw run, its result, and each stage
    metric's mean over the queries with a raw list, ``(metric, raw, final)``."""

    raw: Run | None = None
    raw_result: EvaluationResult | None = None
    k_raw: int = 0
    queries: int = 0
    rows: tuple[tuple[str, float, float], ...] = ()
    change: Any = None  # the paired comparison final − raw on those queries (rankgate.stats.paired.Comparison)


@dataclass(frozen=True)
class ReportEvaluation:
    """Everything the report shows, computed: what :func:`rankgate.render.build.assemble` reads.

    ``main``: the run's :class:`~rankgate.flows.evaluate.Evaluation`, as ``rankgate evaluate`` computes one: the
    result on every metric the page reads, the intervals of the panel and the k-sweep, the segments, the routing
    and entity-linking analyses, the freshness what-if (beside the run as logged: ``main.result`` is never the
    enforced run's) and the judged bounds. The rest is what only the page needs: ``shown`` (which metrics and
    cutoffs it shows), the baseline, the lexical run, the raw candidates, recall at document level, the gate's
    verdict, the rewrite's effect, layer two's answers and the bounds as the page shows them; ``doc_map``: the
    scoring's chunk → document map as read; ``warnings``: the lines the scorer said."""

    request: ReportRequest
    inputs: Inputs
    main: Evaluation
    shown: Shown
    baseline: Baseline
    lexical: Lexical
    stages: StageScores
    doc_level: Mapping[str, float]
    outcome: GateOutcome | None
    run_label: str
    rewrite: RewriteEffect | None = None
    answers: Mapping[str, Any] | None = None
    bounds: Mapping[str, Any] | None = None
    doc_map: Mapping[str, str] | None = None
    warnings: tuple[str, ...] = ()

    @property
    def freshness(self) -> FreshnessWhatIf | None:
        """The freshness what-if (``main.freshness``)."""
        return self.main.freshness

    @property
    def components(self) -> Mapping[str, Any]:
        """The routing and entity-linking analyses (``main.components``)."""
        return self.main.components


def _dedupe(names: Iterable[str]) -> list[str]:
    from rankgate.metrics import parse_metric

    return list(dict.fromkeys(str(parse_metric(n)) for n in names))


def _sha(source: Any) -> str | None:
    from rankgate.io.source import sha256_file

    return sha256_file(os.fspath(source)) if isinstance(source, (str, os.PathLike)) and os.path.isfile(source) else None


def _path(source: Any, loaded: Run | None = None) -> str:
    if isinstance(source, (str, os.PathLike)):
        return os.fspath(source)
    return loaded.source if loaded is not None else str(getattr(source, "source", ""))


def _label(source: Any, loaded: Run, *others: str) -> str:
    """How the report names a run: its file name, or its whole path when another run shares the file name
    (``others``: the paths of the other runs). One rule for legends, tables, the gate and the title."""
    from rankgate.model.results import run_names

    return run_names([_path(source, loaded), *others])[0]


def _auto_fields(result: EvaluationResult) -> list[str]:
    preferred = ["intent", "segment", "source_of_query"] + sorted(k for k in result.fields if k.startswith("tags."))
    out = []
    for key in preferred:
        if key in result.fields:
            labels = {v for v in result.fields[key] if v is not None}
            if 2 <= len(labels) <= AUTO_FIELDS_MAX_LABELS:
                out.append(key)
    return out


def run_report(req: ReportRequest, *, on_warning: Callable[[str], None] | None = None) -> ReportEvaluation:
    """Load, score and decide everything the report shows (see the module docs). Every run (the run, the
    baseline, the lexical run, the raw candidates, the document level, the experiments' runs) is scored by one
    :class:`~rankgate.flows.evaluate.Scorer` with the request's scoring: the doc map is read once, and
    ``on_warning`` hears each warning line once."""
    from rankgate.flows.evaluate import Scorer, input_name, judged_bounds

    answers = _answers(req.answers)
    bounds, judged = req.bounds, None
    if req.judged:  # (read before the inputs; at the cutoff --k gives, else 10: the bounds read the inputs only)
        judged = judged_bounds(Scorer(replace(req.scoring, k=req.judged_k)), req.statistics, req.gold, req.run,
                               req.judged, req.calibration)
        bounds = judged.to_dict()
    # (every scoring names its metrics; the scoring's own are what the experiments score)
    scorer = Scorer(replace(req.scoring, metrics=EXPERIMENT_METRICS), on_warning)
    doc_map = scorer.doc_map  # (read before the inputs, once)
    cfg = req.config
    with progress.stage(f"reading {input_name(req.gold, 'the gold set')} and {input_name(req.run)}"):
        inputs = load_inputs(req.gold, req.run, req)
    main, shown = evaluate_main(inputs, req, cfg, scorer)
    run_label = _label(req.run, inputs.run, *(_path(x) for x in (req.baseline, req.lexical) if x is not None))
    with progress.stage(f"comparing with {input_name(req.baseline, 'the baseline')}"):
        base = collect_baseline(req.baseline, inputs, main, shown, req, scorer, req.run, run_label)
    lex = collect_lexical(req.lexical, inputs, req, scorer, req.run, base)
    stages = score_stages(inputs, req, scorer)
    outcome = None
    if cfg is not None:
        from rankgate.gating.decide import decide

        st = req.statistics
        same = (cfg.seed, cfg.resamples, cfg.confidence) == (st.seed, st.resamples, st.confidence)
        with progress.stage("checking the ship criteria"):
            outcome = decide(cfg, main.result, base.result if base.result is not None else base.summary,
                             baseline_label=base.label, candidate_label=run_label, intervals=main.cis if same else None)
    doc_level = _doc_level(inputs, main.result, shown, req, scorer)
    freshness, rewrite, components = _experiments(req, inputs, scorer)
    main = replace(main, components=components, freshness=freshness, bounds=judged, warnings=tuple(scorer.warnings))
    return ReportEvaluation(req, inputs, main, shown, base, lex, stages, doc_level, outcome, run_label, rewrite,
                            answers, bounds, doc_map, main.warnings)


def _answers(answers: str | Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The ``answers`` part of a ``rankgate answers`` summary.json (a path), or the part as given."""
    if answers is None or isinstance(answers, Mapping):
        return answers
    import json

    from rankgate.io.source import check_file, open_text
    from rankgate.errors import InputError

    check_file(answers, "answers summary")
    try:
        with open_text(answers) as fh:
            data = json.load(fh)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise InputError("is not a JSON summary", path=answers, hint="pass the summary.json `rankgate answers` wrote") from None
    if not isinstance(data, dict) or not isinstance(data.get("answers"), dict):
        raise InputError("has no 'answers' part", path=answers, hint="pass the summary.json `rankgate answers` wrote")
    return data["answers"]


def load_inputs(gold: Any, run: Any, req: ReportRequest) -> Inputs:
    """Load the gold set and the run; list the files read (sha256) and find the query texts."""
    from rankgate.io import load_gold, load_run
    from rankgate.io.jsonl_fast import LineTexts
    from rankgate.io.inputs import beir_folder, beir_query_texts, gold_files, run_files, sha256_files
    from rankgate.io.source import sha256_file

    from concurrent.futures import ThreadPoolExecutor

    from rankgate.io.load import gold_first

    # The gold set is read while the run is; the files are hashed on threads while the run is scored.
    pool = ThreadPoolExecutor(max_workers=2)

    from rankgate.io.trec import trec_eval_lines

    trec_lines = req.scoring.trec  # (--trec: TREC lines read as trec_eval reads them)
    run_format, columns, fields = req.scoring.run_format, req.scoring.column_map(), req.scoring.fields

    def read_run() -> Run:
        lazy = _run_with_lazy_texts(run, req)
        if lazy is not None:
            return lazy
        with trec_eval_lines(trec_lines):  # (--trec: a TREC run's lines as trec_eval reads them)
            return load_run(run, format=run_format, columns=columns, fields=fields)

    try:
        g, r = gold_first(pool.submit(load_gold, gold, format=req.scoring.gold_format, columns=columns, fields=fields),
                          read_run)
        if isinstance(r.items.get("text"), LineTexts):
            from rankgate.io.nearmiss import compares_texts

            if compares_texts(g):  # (the near-miss check compares every text: read them all now)
                with trec_eval_lines(trec_lines):
                    r = load_run(run, format=run_format, columns=columns, fields=fields)
        read, run_read = gold_files(req.on_disk(gold, g)), run_files(req.on_disk(run, r))
        files: list[tuple[str, str, Any]] = [
            ("gold", g.source, pool.submit(sha256_files, read) if read else None),
            ("run", r.source, pool.submit(sha256_files, run_read) if run_read else None)]
    finally:
        pool.shutdown(wait=False)  # (the hashing goes on; Inputs.files waits for it)
    query_texts: dict[str, str] = {}
    folder = beir_folder(gold) if "query" not in g.fields and req.queries is None else None
    if req.queries is not None:  # --queries: a queries file beside a gold set without texts (TREC qrels, CSV)
        from rankgate.io.inputs import read_query_texts

        query_texts = read_query_texts(os.fspath(req.queries))
        files.insert(1, ("gold queries", os.fspath(req.queries), sha256_file(os.fspath(req.queries))))
    elif folder is not None:  # BEIR: the query text lives beside the qrels
        qpath, query_texts = beir_query_texts(folder)
        files.insert(1, ("gold queries", qpath, sha256_file(qpath)))
    return Inputs(g, r, tuple(files), query_texts)


def _run_with_lazy_texts(run: Any, req: ReportRequest) -> Run | None:
    """The run with its item texts left in the file until a page shows one
    (:func:`rankgate.io.load.load_run_lazy_texts`), when nothing else the report computes reads every
    text: no component experiment, no asked or gated metric that reads item columns. None: the run is
    read as usual."""
    if req.enforce_as_of or req.routing or req.entity_linking or req.rewrite:
        return None
    from rankgate.io.load import load_run_lazy_texts
    from rankgate.scoring.engine import reads_items
    from rankgate.errors import RankgateError
    from rankgate.metrics import parse_metrics

    asked = [*req.metrics, *(req.config.metrics if req.config is not None else ())]
    try:
        if asked and reads_items(parse_metrics(list(asked))):
            return None
    except RankgateError:  # (read as usual: the metric's own check names the error)
        return None
    return load_run_lazy_texts(run, format=req.scoring.run_format, columns=req.scoring.column_map(),
                               fields=req.scoring.fields)


def evaluate_main(inputs: Inputs, req: ReportRequest, cfg: Any, scorer: Scorer) -> tuple[Evaluation, Shown]:
    """Score the run on the panel, the k-sweep, the diagnosis's metrics and the gated ones; the intervals of
    the panel and the k-sweep; the segments. The run's :class:`~rankgate.flows.evaluate.Evaluation` (its
    experiments and judged bounds added by :func:`run_report`) and what the page shows of it."""
    from rankgate._util.arrow import code_counts
    from rankgate.flows.evaluate import EvaluateRequest, Evaluation, cost_of, intervals_stage, resources_of
    from rankgate.metrics.display import fmt_sig
    from rankgate.stats.bootstrap import metric_cis
    from rankgate.stats.sweep import sweep_specs

    g, r, k = inputs.gold, inputs.run, req.k
    depth = int(code_counts(r.r_query, len(r.query_ids)).max()) if len(r.r_query) else 0  # the longest list
    ks = sweep_ks(depth)
    has_versions = "doc_version" in r.items and "as_of" in g.fields
    has_no_answer = "no_answer" in g.fields
    fe = f"false_evidence{'' if req.min_score is None else f'(min_score={fmt_sig(req.min_score)})'}@{k}"
    panel = _dedupe([*panel_metrics(k), *req.metrics])
    extra = ["hit@10", "recall@10", f"judged@{judged_k(depth)}", *(["forbidden"] if "must_not_retrieve" in g.fields else []),
             *(["fresh"] if has_versions else []), *([fe] if has_no_answer else [])]
    gated = list(cfg.metrics) if cfg is not None else []
    all_metrics = _dedupe([*panel, *sweep_specs(list(SWEEP_FAMILIES), ks), *extra, *gated])
    result = scorer.score(g, r, metrics=all_metrics)
    fe = str(next((m for m in result.metric_names if m.startswith("false_evidence")), "")) or ""
    # The panel's intervals and the k-sweep's in one call: a metric's interval does not depend on the
    # others drawn with it, and queries are drawn once for all of them.
    sweep = [m for m in sweep_specs(list(SWEEP_FAMILIES), ks) if m not in panel]
    with progress.stage(intervals_stage(req.statistics)):
        cis = metric_cis(result, statistics=req.statistics, metrics=[*panel, *sweep])
    fields = _auto_fields(result) if req.by is None else None
    if req.by is not None:
        from rankgate.stats.segments import field_key, split_fields

        fields = [field_key(result, f) for f in split_fields(req.by)]
    seg_metrics = _dedupe([f"recall@{k}", f"ndcg@{k}", f"precision@{k}", "mrr", *[m for m in gated if m in result.values]])
    segments = None
    if fields:
        from rankgate.stats.segments import segment_summary

        with progress.stage(f"segments by {', '.join(map(str, fields))}"):
            segments = segment_summary(result, fields, metrics=seg_metrics, statistics=req.statistics)
    asked = EvaluateRequest(req.gold, req.run, req.scoring, req.statistics, by=tuple(fields or ()),
                            enforce_as_of=req.enforce_as_of, routing=req.routing, entity_linking=req.entity_linking,
                            judged=req.judged, calibration=req.calibration, latency=False)
    return (Evaluation(asked, result, cis=cis, segments=segments, cost=cost_of(result, fields or (), req.statistics),
                       resources=resources_of(result, fields or (), req.statistics)),
            Shown(depth, ks, tuple(panel), tuple(gated), fe, None if fields is None else tuple(fields),
                  tuple(seg_metrics)))


def collect_baseline(baseline: Any, inputs: Inputs, main: Evaluation, shown: Shown, req: ReportRequest,
                     scorer: Scorer, run: Any, run_label: str) -> Baseline:
    """Same metrics on the baseline run and the paired comparison, or the means of a baseline summary."""
    if baseline is None:
        return Baseline()
    from rankgate.gating.baseline import BaselineSummary, summary_or_run
    from rankgate.io import load_run
    from rankgate.stats.sweep import sweep_specs

    from rankgate.io.trec import trec_eval_lines

    def run_and_sha(path: str) -> tuple[Run, str | None]:
        with trec_eval_lines(req.scoring.trec):
            br = load_run(path, format=req.scoring.run_format, columns=req.scoring.column_map(),
                          fields=req.scoring.fields)
        return br, _sha(req.on_disk(path, br))

    loaded: BaselineSummary | tuple[Run, str | None]
    if isinstance(baseline, BaselineSummary):
        loaded = baseline
    elif isinstance(baseline, (str, os.PathLike)):  # a summary.json or a run (a pipe is read once)
        loaded = summary_or_run(os.fspath(baseline), run_and_sha)
    else:
        with trec_eval_lines(req.scoring.trec):
            base_run = load_run(baseline, format=req.scoring.run_format, columns=req.scoring.column_map(),
                                fields=req.scoring.fields)
        loaded = (base_run, _sha(req.on_disk(baseline, base_run)))
    if isinstance(loaded, BaselineSummary):
        return Baseline(summary=loaded, label=os.path.basename(loaded.source))
    br, base_sha = loaded
    label = _label(baseline, br, _path(run, inputs.run))
    result = scorer.score(inputs.gold, br,
                          metrics=_dedupe([*shown.panel, *sweep_specs(list(SWEEP_FAMILIES), shown.ks), *shown.gated]))
    from rankgate.stats.paired import compare

    cmp = compare(result, main.result,
                  metrics=[*shown.panel, *[m for m in shown.segment_metrics if m not in shown.panel]],
                  by=shown.fields or (), statistics=req.statistics,
                  baseline_label=label, candidate_label=run_label)
    return Baseline(result, None, cmp, label, ("baseline", br.source, base_sha), br)


def collect_lexical(lexical: Any, inputs: Inputs, req: ReportRequest, scorer: Scorer, run: Any,
                    base: Baseline) -> Lexical:
    """The lexical run's panel and result, shown beside the misses."""
    if lexical is None:
        return Lexical()
    from rankgate.io import load_run

    k = req.k
    from rankgate.io.trec import trec_eval_lines

    with trec_eval_lines(req.scoring.trec):
        lr = load_run(lexical, format=req.scoring.run_format, columns=req.scoring.column_map(), fields=req.scoring.fields)
    label = _label(lexical, lr, _path(run, inputs.run), *([_path(base.run)] if base.result is not None else []))
    lres = scorer.score(inputs.gold, lr, metrics=_dedupe([f"recall@{k}", "hit@10", f"ndcg@{k}", "mrr"]))
    return Lexical(label, tuple((m, lres.summary(m).mean) for m in lres.metric_names), lres, lr,
                   ("lexical baseline", lr.source, _sha(req.on_disk(lexical, lr))))


def score_stages(inputs: Inputs, req: ReportRequest, scorer: Scorer) -> StageScores:
    """Raw candidates (``raw_topk``) against the final list, on the queries with a raw list."""
    import numpy as np

    g, r, k = inputs.gold, inputs.run, req.k
    raw = raw_run(r)
    if raw is None:
        return StageScores()
    kr = k_raw(r, raw)
    stage_metrics = _dedupe([f"recall@{kr}", f"mrr@{kr}", f"recall@{k}", f"ndcg@{k}", f"precision@{k}"])
    raw_result = scorer.score(g, raw, metrics=stage_metrics)
    fin = scorer.score(g, r, metrics=stage_metrics)
    have = set(raw.query_ids)
    mask = np.asarray([q in have for q in raw_result.query_ids], dtype=bool)
    rs, fs = raw_result.subset(mask), fin.subset(mask)
    from rankgate.stats.paired import compare

    # final − raw on the same queries: paired intervals and tests, Holm across the stage rows
    with progress.stage("stages: final list against the raw candidates"):
        change = compare(rs, fs, metrics=stage_metrics, statistics=req.statistics,
                         baseline_label="raw candidates", candidate_label="final list")
    return StageScores(raw, raw_result, kr, int(mask.sum()),
                       tuple((m, rs.summary(m).mean, fs.summary(m).mean) for m in stage_metrics), change)


def _doc_level(inputs: Inputs, result: EvaluationResult, shown: Shown, req: ReportRequest,
               scorer: Scorer) -> dict[str, float]:
    """recall@10 at chunk and at document level, when chunk ids name their documents."""
    g, r = inputs.gold, inputs.run
    level, sep = req.scoring.level, req.scoring.doc_sep
    if not (level == "chunk" and (scorer.doc_map or (sep and _any_contains(g.j_doc, sep)))):
        return {}
    dk = min(10, shown.depth) if shown.depth else 10  # never past the run's depth (a top-5 run: recall@5)
    m = f"recall@{dk}"
    doc_result = scorer.score(g, r, metrics=[m], level="doc")
    chunk = result if m in result.metric_names else scorer.score(g, r, metrics=[m])
    return {"chunk": chunk.summary(m).mean, "doc": doc_result.summary(m).mean, "k": float(dk)}


def _any_contains(ids: Any, text: str) -> bool:
    """Whether any id holds ``text`` (on the arrow array: no Python string per id)."""
    from rankgate._util.arrow import none_contains

    if len(ids) == 0 or none_contains(ids, text):  # (usual: a search of the bytes, no pyarrow.compute import)
        return False
    import pyarrow.compute as pc

    return bool(pc.any(pc.match_substring(ids, text, ignore_case=False)).as_py())


def _experiments(req: ReportRequest, inputs: Inputs, scorer: Scorer) -> tuple[Any, Any, dict[str, Any]]:
    """The component experiments the request asks for: the freshness what-if, the rewrite's effect and
    the routing and entity-linking analyses (on the inputs as loaded once, scored by the report's scorer, as
    :func:`rankgate.flows.evaluate.run_evaluation` computes them)."""
    if not (req.enforce_as_of or req.routing or req.entity_linking or req.rewrite):
        return None, None, {}
    from rankgate.flows.evaluate import components_of, freshness_of

    gold, run, stats = inputs.gold, inputs.run, req.statistics
    by = list(req.by or [])
    freshness = freshness_of(scorer, stats, gold, run, by) if req.enforce_as_of else None
    rewrite = None
    if req.rewrite:
        from rankgate.io.rewrite import read_rewrite_runs
        from rankgate.experiments.rewrite import rewrite_effect

        log = read_rewrite_runs(req.rewrite)
        rewrite = rewrite_effect(log.original, log.rewritten, lambda r, m: scorer.score(gold, r, metrics=list(m)),
                                 k=req.scoring.k or 10, by=by, statistics=stats, texts=log.texts)
    components = components_of(scorer, stats, gold, run, routing=req.routing, entity_linking=req.entity_linking, by=by)
    return freshness, rewrite, components
