"""Evaluate one run: the result and every part the request asks for (intervals, segments, k-sweep,
latency, routing and entity linking, freshness, judged bounds), each computed once.

:class:`Scoring` holds how a run is scored (the engine's options) and :class:`Statistics` the bootstrap's;
compare and report take the same two. :class:`Scorer` scores runs with them: it reads a ``doc_map``
file once and says each warning line once, however many times a flow scores.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from rankgate._util import progress
from rankgate._util.constraints import BY, FILE, FLAG, Param, Shape, check, plain
from rankgate.errors import F, UsageError
from rankgate.flows._inputs import FilePath, paths
from rankgate.scoring.options import DEFAULT_METRICS, Scoring, load_doc_map
from rankgate.stats.options import Statistics

if TYPE_CHECKING:  # pragma: no cover
    from rankgate.experiments.cost import CostSummary
    from rankgate.experiments.resources import ResourceSummary
    from rankgate.experiments.freshness import FreshnessWhatIf
    from rankgate.experiments.latency import LatencySummary
    from rankgate.io.load import GoldInput, RunInput
    from rankgate.model.results import EvaluationResult
    from rankgate.stats.pooling import Bounds
    from rankgate.stats.segments import SegmentSummary
    from rankgate.stats.sweep import KSweep

__all__ = [
    "DEFAULT_METRICS", "SCORING_KEYWORDS", "Evaluation", "EvaluateRequest", "Scorer", "Scoring", "Statistics",
    "load_doc_map", "read_pipes_once", "run_evaluation", "scoring_with",
]


Warn = Callable[[str], None]


def input_name(given: Any, default: str = "the run") -> str:
    """How a progress line names an input: a path's file name, a loaded input's source file, else ``default``."""
    source = os.fspath(given) if isinstance(given, (str, os.PathLike)) else getattr(given, "source", None)
    return os.path.basename(source) or source if isinstance(source, str) and source else default


def scoring_stage(gold: Any, run: Any, level: str = "chunk") -> str:
    """What the terminal says while a run is scored (:mod:`rankgate._util.progress`): ``reading and scoring
    run.jsonl`` (a file still to read), ``scoring run.jsonl`` (loaded), ``… (document level)``."""
    if isinstance(run, (str, os.PathLike)):
        head = "reading and scoring"
    elif isinstance(gold, (str, os.PathLike)):
        head = f"reading {input_name(gold)}, scoring"
    else:
        head = "scoring"
    return f"{head} {input_name(run)}{' (document level)' if level == 'doc' else ''}"


def intervals_stage(stats: Statistics) -> str:
    """What the terminal says while the bootstrap draws the intervals."""
    return f"intervals ({stats.resamples:,} resamples)"


class Scorer:
    """Scores runs with one :class:`Scoring`: the ``doc_map`` file is read once (a pipe delivers its
    content once) and each warning line is said once (a flow that scores one run several times, for a
    sweep, a baseline or the stages, says it once). ``on_warning`` hears each line as it is found;
    :attr:`warnings` keeps them. ``doc_map`` and ``columns``: mappings already read (``rankgate.gate``'s
    options), used instead of the scoring's file and ``--columns`` text."""

    def __init__(self, scoring: Scoring, on_warning: Warn | None = None, *, doc_map: Mapping[str, str] | None = None,
                 columns: Mapping[str, str] | None = None) -> None:
        self.scoring = scoring
        self.warnings: list[str] = []
        self._on_warning = on_warning
        self._doc_map: Any = doc_map
        self._doc_map_read = doc_map is not None
        self._columns = columns

    def column_map(self) -> Mapping[str, str] | None:
        """Which column holds each field (the mapping given, else the scoring's ``--columns`` text read)."""
        return self._columns if self._columns is not None else self.scoring.column_map()

    @property
    def doc_map(self) -> dict[str, str] | None:
        if not self._doc_map_read:
            self._doc_map = load_doc_map(self.scoring.doc_map)
            self._doc_map_read = True
        return self._doc_map

    def warn(self, line: str) -> None:
        """Say ``line`` (once)."""
        if line and line not in self.warnings:
            self.warnings.append(line)
            if self._on_warning is not None:
                self._on_warning(line)

    def load(self, gold: Any, run: Any) -> tuple[Any, Any]:
        """The gold set and run loaded (each left as it is when already loaded)."""
        from rankgate.io.load import load_gold, load_run
        from rankgate.model.gold_run import Gold, Run
        from rankgate.io.trec import trec_eval_lines

        s, columns = self.scoring, self.column_map()
        g = gold if isinstance(gold, Gold) else load_gold(gold, format=s.gold_format, columns=columns, fields=s.fields)
        with trec_eval_lines(s.trec):  # (--trec: a TREC run's lines as trec_eval reads them)
            r = run if isinstance(run, Run) else load_run(run, format=s.run_format, columns=columns, fields=s.fields)
        return g, r

    def score(self, gold: Any, run: Any, *, metrics: str | Sequence[str] | None = None, level: str | None = None,
              warn: bool = True) -> EvaluationResult:
        """``run`` scored against ``gold`` (paths or loaded); ``metrics`` and ``level`` override the
        scoring's; ``warn``: say when no run id meets a gold id, and how the inputs were read. A metric named
        on the raw candidates (``recall@50 (raw)``, :mod:`rankgate.metrics.rankings`) is scored on the run's
        ``raw_topk`` lists (:meth:`score_raw`)."""
        from rankgate.scoring.raw import asks_raw

        if asks_raw(self.scoring.metrics if metrics is None else metrics):
            return self.score_raw(gold, run, metrics=self.scoring.metrics if metrics is None else metrics,
                                  level=level, warn=warn)
        from rankgate.scoring.engine import evaluate, id_mismatch_line, ties_lines

        s = self.scoring if level is None or level == self.scoring.level else replace(self.scoring, level=level)
        name = os.fspath(run) if isinstance(run, (str, os.PathLike)) else getattr(run, "source", "run")
        with progress.stage(scoring_stage(gold, run, s.level)):
            result = evaluate(gold, run, s.metrics if metrics is None else metrics, scoring=s, doc_map=self.doc_map,
                              columns=self._columns)
        said = []
        if warn:
            from rankgate.io.nearmiss import near_miss_line

            # when no id matches, and how the inputs were read (joined lists, near-misses of text matching)
            said = [id_mismatch_line(result), *(result.info.get("notices") or ()),
                    near_miss_line(result.info.get("near_misses"))]
        # (a large run scored without the compiled code: said here, never written into a file)
        for line in [*said, result.info.get("build_notice"), *ties_lines(result)]:
            if line:
                self.warn(f"{name}: {line}")
        return result

    def score_raw(self, gold: Any, run: Any, *, metrics: Any, level: str | None = None,
                  warn: bool = True) -> EvaluationResult:
        """``metrics`` with raw-ranking rows among them: the final rows scored as :meth:`score` scores them, the raw
        rows on the run's ``raw_topk`` lists (:mod:`rankgate.scoring.raw`), in one result. A run with no raw list
        is an input error naming the file and the field; one with raw lists on some records only is said once."""
        from rankgate.scoring.raw import coverage, metric_names, raw_metrics, require_raw, with_raw

        final, raws = raw_metrics(metric_names(metrics))
        # the final rows (or, for raw rows alone, the run as scored: its inputs, hashes and facts)
        frame = self.score(gold, run, metrics=final or raws, level=level, warn=warn)
        g, r = self.load(gold, run)
        raw = require_raw(r, "the raw-ranking rows (" + ", ".join(f"{m} (raw)" for m in raws) + ")")
        cover = coverage(r)
        if cover.partial:
            self.warn(f"{r.source}: {cover.notice()}")
        raw_result = self.score(g, raw, metrics=raws, level=level, warn=False)
        return with_raw(frame if final else None, raw_result, cover, base=frame)

    def sweep_kwargs(self) -> dict[str, Any]:
        """The scoring as :func:`rankgate.stats.sweep.k_sweep` passes it on to :func:`rankgate.evaluate`."""
        s = self.scoring
        return {"trec": s.trec, "complete": s.complete, "level": s.level, "doc_sep": s.doc_sep, "doc_map": self.doc_map,
                "dedupe": s.dedupe, "gold_format": s.gold_format, "run_format": s.run_format, "ties": s.ties,
                "columns": self.column_map(), "fields": s.fields}


def read_pipes_once(scoring: Scoring, gold: Any, run: Any, again: bool) -> tuple[Any, Any]:
    """(gold, run) to evaluate: as given, or loaded where one is a pipe and ``again`` (the flow reads the
    inputs a second time: a pipe delivers its content once)."""
    if again:
        from rankgate.io.load import load_gold, load_run
        from rankgate.io.source import is_pipe

        columns = scoring.column_map()
        if isinstance(gold, (str, os.PathLike)) and is_pipe(os.fspath(gold)):  # (not in-memory data)
            gold = load_gold(gold, format=scoring.gold_format, columns=columns, fields=scoring.fields)
        if isinstance(run, (str, os.PathLike)) and is_pipe(os.fspath(run)):
            from rankgate.io.trec import trec_eval_lines

            with trec_eval_lines(scoring.trec):
                run = load_run(run, format=scoring.run_format, columns=columns, fields=scoring.fields)
    return gold, run


def freshness_of(scorer: Scorer, stats: Statistics, gold: Any, run: Any, by: Sequence[str] = ()) -> Any:
    """The freshness what-if of ``run`` on ``gold`` (paths or loaded), scored by ``scorer``."""
    from rankgate.experiments.freshness import freshness_what_if

    g, r = scorer.load(gold, run)
    return freshness_what_if(g, r, lambda g_, r_: scorer.score(g_, r_, warn=False), by=list(by), statistics=stats)


def components_of(scorer: Scorer, stats: Statistics, gold: Any, run: Any, *, routing: bool, entity_linking: bool,
                  by: Sequence[str] = ()) -> dict[str, Any]:
    """The routing and entity-linking analyses asked for: name -> result."""
    if not (routing or entity_linking):
        return {}
    g, r = scorer.load(gold, run)
    k = scorer.scoring.k or 5
    recall = scorer.score(g, r, metrics=f"recall@{k}", warn=False)
    out: dict[str, Any] = {}
    if routing:
        from rankgate.experiments.routing import routing_analysis

        out["routing"] = routing_analysis(g, r, recall, k=k, statistics=stats)
    if entity_linking:
        from rankgate.experiments.linking import linking_analysis

        out["entity_linking"] = linking_analysis(g, r, recall, k=k, by=list(by), statistics=stats)
    return out


def judged_bounds(scorer: Scorer, stats: Statistics, gold: Any, run: Any, judged: str,
                  calibration: str | None) -> Any:
    """precision@k and ndcg@k with lower/upper bounds and the corrected estimate (k: the scoring's, else 10)."""
    from rankgate.stats.pooling import bounds, read_calibration, read_judged

    s = scorer.scoring
    g, r = scorer.load(gold, run)
    labels, failed = read_judged(judged, g)
    cal = read_calibration(calibration) if calibration else None
    return bounds(g, r, labels, k=s.k or 10, calibration=cal, judge_failed=failed, ties=s.ties, statistics=stats)


def _cutoffs(value: Any) -> str | tuple[Any, ...] | None:
    """``ks`` as :func:`rankgate.stats.sweep.parse_ks` reads it: one string, or a tuple of integers (or their
    text); None when it is neither."""
    if isinstance(value, str):
        return str(value)
    if isinstance(value, (Mapping, bytes, bytearray)) or not hasattr(value, "__iter__"):
        return None
    items = tuple(plain(v) for v in value)
    return items if all(isinstance(v, (int, str)) and not isinstance(v, bool) for v in items) else None


SCORING = Param("scoring", Scoring, None, help="how runs are scored (Scoring(metrics=..., k=...))")
#: The scoring options a request also takes one by one, as a convenience that builds its ``scoring``
#: (``EvaluateRequest(gold, run, metrics="recall@5,mrr", k=10)``): None is "not given".
SCORING_KEYWORDS = ("metrics", "k", "level")


def scoring_with(scoring: Scoring, given: Mapping[str, Any], caller: str) -> Scoring:
    """``scoring`` with the loose keywords of a request (:data:`SCORING_KEYWORDS` given, not None) set in it,
    each checked under ``caller``'s name. Said one way only: with a ``scoring`` other than the default, a
    keyword given too is refused, naming it."""
    loose = {name: value for name, value in given.items() if value is not None}
    if not loose:
        return scoring
    if scoring != Scoring():
        names = ", ".join(loose)
        raise UsageError(f"{caller} takes the scoring options as scoring= or as keywords, not both: drop {names} or "
                         f"set {'it' if len(loose) == 1 else 'them'} in the Scoring")
    from rankgate._util.constraints import K, LEVEL
    from rankgate.metrics.spec import METRICS

    params = {"metrics": METRICS, "k": K, "level": LEVEL}
    return replace(scoring, **{name: check(params[name], value, caller=caller, name=name) for name, value in loose.items()})


STATISTICS = Param("statistics", Statistics, None, help="the bootstrap's seed, resamples and confidence")
_KS = Param("ks", Shape("cutoffs: a string such as '1,3,5,10' or a list of integers", _cutoffs), "1,3,5,10,20")
#: Which ranking of the run evaluate and compare score (:mod:`rankgate.metrics.rankings`): the final list
#: (``topk``), the raw candidates (``raw_topk``, rows named ``<metric> (raw)``), or both.
RANKING = Param("ranking", str, "final", choices=("final", "raw", "both"),
                help="the ranking scored: final (topk), raw (the raw candidates, raw_topk) or both")


def ranked(scoring: Scoring, ranking: str) -> list[str] | None:
    """The metrics to score for ``ranking`` (None for the final list: the scoring's own)."""
    if ranking == "final":
        return None
    from rankgate.metrics.rankings import ranked_metrics
    from rankgate.scoring.raw import metric_names

    return ranked_metrics(metric_names(scoring.metrics), ranking)


@dataclass(frozen=True)
class EvaluateRequest:
    """One evaluation: ``gold`` and ``run`` (paths, or loaded), how to score, and the parts wanted.

    ``by``: segment fields; ``sweep``: metric families for a k-sweep over ``ks``; ``enforce_as_of``: the
    freshness what-if (the result is then the enforced run's); ``routing``/``entity_linking``: the
    component analyses; ``judged`` (with ``calibration``): bounds of an incomplete gold set;
    ``latency``: per-stage latency when the run logs it. ``statistics.resamples`` 0: no intervals.
    ``metrics``, ``k``, ``level``: the scoring's, given one by one instead of as ``scoring`` (not both); they
    are set in :attr:`scoring` when the request is built, and read None afterwards.
    """

    gold: GoldInput
    run: RunInput
    scoring: Scoring = field(default_factory=Scoring)
    statistics: Statistics = field(default_factory=Statistics)
    by: tuple[str, ...] = ()
    sweep: str | None = None
    ks: str = "1,3,5,10,20"
    enforce_as_of: bool = False
    routing: bool = False
    entity_linking: bool = False
    judged: str | None = None
    calibration: str | None = None
    latency: bool = True
    metrics: str | Sequence[str] | None = None
    k: int | None = None
    level: str | None = None
    ranking: str = "final"

    def __post_init__(self) -> None:
        # Every field but the inputs checked here (a UsageError naming it); ``by`` as a tuple of names.
        object.__setattr__(self, "ranking", check(RANKING, self.ranking, caller="EvaluateRequest"))
        if self.ranking != "final" and self.enforce_as_of:
            raise UsageError(f"{F.enforce_as_of} scores the final list; give it without {F.ranking} {self.ranking}")
        def put(attr: str, value: Any) -> None:
            object.__setattr__(self, attr, value)

        put("scoring", scoring_with(check(SCORING, self.scoring, caller="EvaluateRequest"),
                                    {name: getattr(self, name) for name in SCORING_KEYWORDS}, "EvaluateRequest"))
        for name in SCORING_KEYWORDS:  # (now in the scoring: a replace() of the request gives them once)
            put(name, None)
        put("statistics", check(STATISTICS, self.statistics, caller="EvaluateRequest"))
        put("by", check(BY, self.by, caller="EvaluateRequest"))
        if self.sweep is not None:  # metric families written without @k ("recall,ndcg")
            from rankgate.metrics.spec import METRICS

            put("sweep", check(METRICS, self.sweep, caller="EvaluateRequest", name="sweep"))
        put("ks", check(_KS, self.ks, caller="EvaluateRequest"))
        for attr in ("enforce_as_of", "routing", "entity_linking", "latency"):
            put(attr, check(FLAG, getattr(self, attr), caller="EvaluateRequest", name=attr))
        for attr in ("judged", "calibration"):
            put(attr, check(FILE, getattr(self, attr), caller="EvaluateRequest", name=attr))
        if self.calibration and not self.judged:
            raise UsageError(f"{F.calibration} needs {F.judged} (the labels it corrects)")

    def inputs(self) -> tuple[FilePath, ...]:
        """The files the request reads (an output may be none of them): the gold set and the run when given
        as paths, the doc map, the judged labels and their calibration."""
        return paths(self.gold, self.run, self.scoring.doc_map, self.judged, self.calibration)

    @property
    def reads_twice(self) -> bool:
        """Whether the inputs are read more than once (a pipe is then loaded first)."""
        return bool(self.sweep or self.enforce_as_of or self.routing or self.entity_linking or self.judged
                    or self.ranking != "final")


@dataclass(frozen=True)
class Evaluation:
    """What :func:`run_evaluation` computed: the result and each part the request asked for (None, or
    empty, when not asked for or not applicable)."""

    request: EvaluateRequest
    result: EvaluationResult
    cis: Mapping[str, tuple[float, float]] | None = None
    segments: SegmentSummary | None = None
    sweep: KSweep | None = None
    latency: LatencySummary | None = None
    components: Mapping[str, Any] = field(default_factory=dict)  # routing, entity_linking
    freshness: FreshnessWhatIf | None = None
    bounds: Bounds | None = None
    warnings: tuple[str, ...] = ()
    cost: CostSummary | None = None  # cost per query, when the run logs a cost object (cost_of)
    resources: ResourceSummary | None = None  # cpu_ms / memory_mb percentiles, when the run logs them (never gated)

    @property
    def confidence(self) -> float:
        return self.request.statistics.confidence

    def sections(self) -> dict[str, Any]:
        """The parts computed beside the result, by kind: segments, sweep, routing, entity_linking, latency,
        freshness, bounds (those computed). :mod:`rankgate.render.sections` declares how each kind is
        written (its ``summary.json`` data, markdown, terminal, HTML) and in which order."""
        parts = {"segments": self.segments, "sweep": self.sweep, **self.components, "latency": self.latency,
                 "cost": self.cost, "resources": self.resources,
                 "freshness": self.freshness, "bounds": self.bounds}
        return {kind: part for kind, part in parts.items() if part is not None}

    def parts(self) -> dict[str, Any]:
        """The summary's parts beside the metrics, as plain data: the statistics, then each section's
        ``to_dict()`` (as ``summary.json`` holds them)."""
        return {"statistics": self.request.statistics.to_dict(),
                **{kind: part.to_dict() for kind, part in self.sections().items()}}


def run_evaluation(req: EvaluateRequest, *, on_warning: Warn | None = None,
                   meanwhile: Callable[[EvaluationResult], None] | None = None,
                   scorer: Scorer | None = None) -> Evaluation:
    """Evaluate ``req.run`` and compute what ``req`` asks for, each part once.

    ``on_warning`` hears each warning line as it is found (they are in :attr:`Evaluation.warnings` too);
    ``meanwhile(result)`` runs on this thread while the intervals are drawn on another (the compiled
    bootstrap releases the GIL): a caller's work that needs only the result, such as writing it out.
    ``scorer``: one shared with other evaluations of the same command (a doc map read once, each
    warning said once).
    """
    scorer = scorer if scorer is not None else Scorer(req.scoring, on_warning)
    stats = req.statistics
    gold, run = read_pipes_once(req.scoring, req.gold, req.run, req.reads_twice)
    freshness = None
    if req.enforce_as_of:
        freshness = freshness_of(scorer, stats, gold, run, req.by)
        result = freshness.enforced
    else:
        # (a renderer says when no id matches, with the numbers); --ranking raw|both: the raw rows too
        result = scorer.score(gold, run, metrics=ranked(req.scoring, req.ranking), warn=False)
    cis = cost = None
    if stats.resamples:
        from concurrent.futures import ThreadPoolExecutor

        with progress.stage(intervals_stage(stats)), ThreadPoolExecutor(max_workers=1) as pool:
            pending = pool.submit(intervals_of, result, stats)
            if meanwhile is not None:
                meanwhile(result)
            # (the cost summary's other parts while the intervals are drawn; its means over all queries are theirs)
            cost = cost_of(result, req.by, stats, lambda: pending.result()[1] or {})
            cis = pending.result()[0]
    else:
        if meanwhile is not None:
            meanwhile(result)
        cost = cost_of(result, req.by, stats)
    segments = sweep = latency = bounds = None
    if req.by:
        from rankgate.stats.segments import segment_summary

        with progress.stage(f"segments by {', '.join(req.by)}"):
            segments = segment_summary(result, list(req.by), statistics=stats)
    components = components_of(scorer, stats, gold, run, routing=req.routing, entity_linking=req.entity_linking,
                               by=req.by)
    if req.latency and result.info.get("latency_ms"):
        from rankgate.experiments.latency import latency_summary

        latency = latency_summary(result, by=list(req.by), statistics=stats)
    if req.sweep:
        from rankgate.stats.sweep import k_sweep

        with progress.stage(f"k-sweep of {req.sweep}"):
            sweep = k_sweep(gold, run, req.sweep, req.ks, evaluate_kwargs=scorer.sweep_kwargs(), by=req.by or None)
    if req.judged:
        bounds = judged_bounds(scorer, stats, gold, run, req.judged, req.calibration)
    return Evaluation(req, result, cis, segments, sweep, latency, components, freshness, bounds,
                      tuple(scorer.warnings), cost=cost,
                      resources=resources_of(result, req.by, stats))


def resources_of(result: EvaluationResult, by: Sequence[str], stats: Statistics) -> ResourceSummary | None:
    """The run's process samples per query (``cpu_ms``, ``memory_mb``: percentiles with intervals, per segment
    of ``by``, :mod:`rankgate.experiments.resources`), or None when the run logs neither."""
    if not result.info.get("resources"):
        return None
    from rankgate.experiments.resources import resource_summary

    return resource_summary(result, by=list(by), statistics=stats)


def intervals_of(result: EvaluationResult, stats: Statistics) -> tuple[dict[str, tuple[float, float]],
                                                                       dict[str, tuple[float, float]] | None]:
    """Every metric's interval (:func:`~rankgate.stats.bootstrap.metric_cis`) and, when the run logs a cost, the
    cost summary's intervals over all queries, drawn in the same pass (:func:`cost_of`'s ``overall``; else None)."""
    if not result.info.get("cost"):
        from rankgate.stats.bootstrap import metric_cis

        return metric_cis(result, statistics=stats), None
    from rankgate.experiments.cost import metric_and_cost_cis

    return metric_and_cost_cis(result, statistics=stats)


def cost_of(result: EvaluationResult, by: Sequence[str], stats: Statistics,
            overall: Callable[[], Mapping[str, tuple[float, float]]] | None = None) -> CostSummary | None:
    """Cost per query (mean and p95 of each key of the run's ``cost`` objects, with intervals, per segment of
    ``by``: :mod:`rankgate.experiments.cost`), or None when the run logs no cost. ``overall``: gives its
    intervals over all queries as :func:`intervals_of` drew them (asked for last: they may be being drawn)."""
    if not result.info.get("cost"):
        return None
    from rankgate.experiments.cost import cost_summary

    with progress.stage("cost per query"):
        return cost_summary(result, by=list(by), statistics=stats, overall=overall)
