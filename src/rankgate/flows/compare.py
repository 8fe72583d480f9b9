"""Compare runs on one gold set, paired by query: two runs in detail (segments, most-changed queries),
three or more against a baseline; a freshness what-if per run, a query rewrite, or a fused run.

Each run is scored once into an :class:`~rankgate.flows.evaluate.Evaluation`; the comparison reads
those. Runs are named by :func:`run_labels`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rankgate.errors import F, UsageError
from rankgate._util import progress
from rankgate._util.constraints import BY, COUNT, FLAG, NAMES, PATH, PATHS, PERMUTATIONS, TEXT, Param, Shape, check
from rankgate.flows._inputs import FilePath, paths
from rankgate.flows.evaluate import RANKING, SCORING, SCORING_KEYWORDS, STATISTICS, EvaluateRequest, Evaluation, Scorer, \
    Scoring, Statistics, Warn, freshness_of, input_name, ranked, scoring_with

if TYPE_CHECKING:  # pragma: no cover
    from rankgate.experiments.rewrite import RewriteEffect
    from rankgate.io.load import GoldInput, RunInput
    from rankgate.model.gold_run import Gold
    from rankgate.stats.paired import PairedComparison

__all__ = ["CompareRequest", "CompareResult", "run_comparison", "run_labels"]


def run_labels(paths: list[str]) -> list[str]:
    """The runs' names (:func:`rankgate.model.results.run_names`: file names, the path where two share one)."""
    from rankgate.model.results import run_names

    return run_names(paths)


def _run_list(value: Any) -> tuple[Any, ...] | None:
    """``runs`` as a tuple: paths (a single path is one run), and runs given in memory (a loaded run, a dict,
    records, a table) as they are; None when it is no list of runs."""
    paths = PATHS.read(value)
    if paths is not None:
        return paths
    if not isinstance(value, (list, tuple)) or not value or any(v is None for v in value):
        return None
    return tuple(PATH.read(v) if isinstance(v, (str, os.PathLike)) else v for v in value)


_RUNS = Param("runs", Shape("a path, or a list of runs (paths or runs in memory)", _run_list), (),
              help="the runs compared")


@dataclass(frozen=True)
class CompareRequest:
    """Runs on ``gold`` (paths, or loaded or in memory as :func:`rankgate.evaluate` takes them): the first is
    the baseline unless ``baseline`` names another (file name or path as given, or label). ``labels``: the runs'
    names, in order (needed for runs given in memory; default for files: their ``system`` or file names).
    ``by``: segments (two runs); ``enforce_as_of``: each run's freshness what-if (two
    runs); ``rewrite``: one rewrite log, or two runs ORIGINAL REWRITTEN; ``fuse``: a fusion method
    (``rrf``, ``rrf(k=N)``, ``combsum``, ``combmnz``) whose fused run is compared with the runs (without
    ``gold`` only built). ``permutations``: sign flips of the randomisation test (0: no p-values);
    ``top``: most-changed queries listed (two runs). ``metrics``, ``k``, ``level``: the scoring's, given one
    by one instead of as ``scoring`` (not both; set in :attr:`scoring` when the request is built)."""

    runs: tuple[RunInput, ...]
    gold: GoldInput | None = None
    scoring: Scoring = field(default_factory=Scoring)
    statistics: Statistics = field(default_factory=Statistics)
    baseline: str | None = None
    by: tuple[str, ...] = ()
    enforce_as_of: bool = False
    rewrite: bool = False
    permutations: int = 10000
    top: int = 10
    fuse: str | None = None
    fused_run: bool = False  # the fused run is wanted as JSONL (to write), with or without gold
    labels: tuple[str, ...] = ()
    metrics: str | Sequence[str] | None = None
    k: int | None = None
    level: str | None = None
    ranking: str = "final"  # final, raw or both (rankgate.flows.evaluate.RANKING)

    def __post_init__(self) -> None:
        def put(attr: str, value: Any) -> None:
            object.__setattr__(self, attr, value)

        put("ranking", check(RANKING, self.ranking, caller="CompareRequest"))
        # Every field but the gold set checked here (a UsageError naming it; numpy scalars made plain).
        put("runs", check(_RUNS, self.runs, caller="CompareRequest"))
        put("labels", check(Param("labels", NAMES, ()), self.labels, caller="CompareRequest"))
        if self.labels and len(self.labels) != len(self.runs):
            raise UsageError(f"labels names {len(self.labels)} runs but {len(self.runs)} are compared: give one label "
                             "per run, in the order of runs")
        if not self.labels and not all(isinstance(r, (str, os.PathLike)) for r in self.runs):
            raise UsageError("runs given in memory need labels: give labels=('baseline', 'candidate'), one per run")
        if len(set(self.labels)) != len(self.labels):
            raise UsageError(f"labels must name each run once; got {', '.join(map(repr, self.labels))}"[:300])
        put("scoring", scoring_with(check(SCORING, self.scoring, caller="CompareRequest"),
                                    {name: getattr(self, name) for name in SCORING_KEYWORDS}, "CompareRequest"))
        for name in SCORING_KEYWORDS:  # (now in the scoring: a replace() of the request gives them once)
            put(name, None)
        put("statistics", check(STATISTICS, self.statistics, caller="CompareRequest"))
        put("by", check(BY, self.by, caller="CompareRequest"))
        for attr in ("baseline", "fuse"):
            put(attr, check(TEXT, getattr(self, attr), caller="CompareRequest", name=attr))
        for attr in ("enforce_as_of", "rewrite", "fused_run"):
            put(attr, check(FLAG, getattr(self, attr), caller="CompareRequest", name=attr))
        put("permutations", check(PERMUTATIONS, self.permutations, caller="CompareRequest", field="permutations"))
        put("top", check(COUNT, self.top, caller="CompareRequest", field="top"))

    def check(self) -> None:
        """The combinations of options that cannot run (said before anything is read)."""
        if self.fused_run and not self.fuse:
            raise UsageError(f"{F.fused_run} needs {F.fuse} METHOD (rrf, combsum or combmnz)")
        if self.ranking != "final":
            for name, given in (("rewrite", self.rewrite), ("fuse", self.fuse), ("enforce_as_of", self.enforce_as_of)):
                if given:
                    raise UsageError(f"{F(name)} compares the final lists; give it without {F.ranking} {self.ranking}")
        if self.rewrite:
            for name, given in (("fuse", self.fuse), ("enforce_as_of", self.enforce_as_of), ("baseline", self.baseline)):
                if given:
                    raise UsageError(f"{F.rewrite} cannot be combined with {F(name)}: the original query's results are the "
                                     "baseline")
            if self.gold is None:
                raise UsageError(f"the following arguments are required: {F.gold}")
            if len(self.runs) > 2:
                raise UsageError(f"{F.rewrite} takes one rewrite log or two runs (ORIGINAL REWRITTEN); got {len(self.runs)}")
            return
        if self.fuse:
            return  # checked with the method (run_comparison)
        if self.gold is None:
            raise UsageError(f"the following arguments are required: {F.gold}")
        if len(self.runs) < 2:
            raise UsageError(f"compare needs at least two runs; got {len(self.runs)}")
        if len(self.runs) > 2:
            self._check_many()

    def _check_many(self) -> None:
        if self.by:
            raise UsageError(f"{F.by} compares segments of two runs; with more runs, compare two at a time for segments")
        if self.enforce_as_of:
            raise UsageError(f"{F.enforce_as_of} compares two runs; with more runs (or {F.fuse}), compare two at a time")

    def inputs(self) -> tuple[FilePath, ...]:
        """The files the request reads (an output may be none of them): the gold set when a path, the doc
        map, the runs (or the rewrite log)."""
        return paths(self.gold, self.scoring.doc_map, *self.runs)

    def names(self) -> list[str]:
        """The runs' names before they are read: ``labels`` when given, else :func:`run_labels` of the paths."""
        return list(self.labels) if self.labels else run_labels(_files(self.runs))

    @property
    def stats(self) -> dict[str, Any]:
        st = self.statistics
        return {"seed": st.seed, "resamples": st.resamples, "n_permutations": self.permutations,
                "confidence": st.confidence}


@dataclass(frozen=True)
class CompareResult:
    """The comparison (:func:`rankgate.stats.paired.compare`'s: a :class:`~rankgate.stats.paired.Comparison`
    for two runs, else a :class:`~rankgate.stats.paired.MultiComparison`; None when ``--fuse`` without a gold
    set only built the fused run), the evaluation of each run, and the parts asked for."""

    comparison: PairedComparison | None
    labels: tuple[str, ...]
    evaluations: tuple[Evaluation, ...] = ()
    freshness: Mapping[str, Any] | None = None  # label -> FreshnessWhatIf (enforce_as_of)
    rewrite: RewriteEffect | None = None
    fusion: str | None = None  # the method, as named
    fused_jsonl: str | None = None  # the fused run, when asked for
    runs_fused: int = 0
    warnings: tuple[str, ...] = ()

    @property
    def confidence(self) -> float:
        return self.evaluations[0].confidence if self.evaluations else 0.95

    @property
    def two_runs(self) -> bool:
        """The two-run form (segments, most-changed queries)."""
        return self.comparison is not None and self.comparison.detailed


def run_comparison(req: CompareRequest, *, on_warning: Warn | None = None) -> CompareResult:
    """Score every run once and compare them (see :class:`CompareRequest`)."""
    req.check()
    scorer = Scorer(req.scoring, on_warning)
    if req.rewrite:
        out = _rewrite(req, scorer)
    elif req.fuse:
        out = _fuse(req, scorer)
    elif len(req.runs) == 2:
        out = _two(req, scorer)
    else:
        out = _many(req, scorer, list(req.runs), list(req.runs), req.names())
    from dataclasses import replace

    return replace(out, warnings=tuple(scorer.warnings))


def _files(runs: Sequence[object]) -> list[str]:
    """The paths among ``runs`` (all of them when no labels are given: runs in memory need labels)."""
    return [os.fspath(r) for r in runs if isinstance(r, (str, os.PathLike))]


def _baseline_index(req: CompareRequest, paths: Sequence[object], labels: list[str]) -> int:
    if req.baseline is None:
        return 0
    for i, (path, label) in enumerate(zip(paths, labels)):
        if req.baseline == label or (isinstance(path, (str, os.PathLike)) and req.baseline == os.fspath(path)):
            return i
    raise UsageError(f"{F.baseline} {req.baseline!r} names none of the runs: {', '.join(labels)}")


def _evaluation(req: CompareRequest, gold: Any, run: Any, result: Any, freshness: Any = None) -> Evaluation:
    """A run's evaluation as the comparison uses it (no intervals of its own: the comparison's are paired)."""
    st = req.statistics
    sub = EvaluateRequest(gold, run, req.scoring, Statistics(st.seed, 0, st.confidence), by=req.by,
                          enforce_as_of=freshness is not None, ranking=req.ranking)
    return Evaluation(sub, result, freshness=freshness)


def _load_gold(req: CompareRequest) -> Gold:
    from rankgate.io import load_gold

    assert req.gold is not None  # (CompareRequest.check asks for it before anything is compared)
    with progress.stage(f"reading {input_name(req.gold, 'the gold set')}"):
        return load_gold(req.gold, format=req.scoring.gold_format, columns=req.scoring.column_map(),
                         fields=req.scoring.fields)


def _two(req: CompareRequest, scorer: Scorer) -> CompareResult:
    from rankgate.stats.paired import compare

    paths, given = list(req.runs), list(req.labels)
    if _baseline_index(req, paths, req.names()) == 1:
        paths.reverse()
        given.reverse()
    labels = given or run_labels(_files(paths))
    gold = _load_gold(req)
    freshness: dict[str, Any] | None = None
    if req.enforce_as_of:
        whatifs = [freshness_of(scorer, req.statistics, gold, path, req.by) for path in paths]
        evaluations = [_evaluation(req, gold, p, w.enforced, w) for p, w in zip(paths, whatifs)]
        freshness = dict(zip(labels, whatifs))
    else:
        metrics = ranked(req.scoring, req.ranking)  # (None: the final list, the scoring's metrics)
        evaluations = [_evaluation(req, gold, p, scorer.score(gold, p, metrics=metrics)) for p in paths]
    base, cand = (e.result for e in evaluations)
    labels = given or _named(_files(paths), evaluations)
    _check_alike(scorer, [base, cand], labels, 0)
    st = req.statistics
    with progress.stage(comparing_stage(req, 2)):
        result = compare([base, cand], labels=given or None, by=req.by, statistics=st, n_permutations=req.permutations,
                         top=req.top)
    return CompareResult(result, tuple(labels), tuple(evaluations), freshness)


def _rewrite(req: CompareRequest, scorer: Scorer) -> CompareResult:
    """Original against rewritten query results: the comparison, plus the rewrite's own effect."""
    from rankgate.stats.paired import compare
    from rankgate.experiments.rewrite import rewrite_effect

    texts: dict[str, dict[str, str]] = {}
    original: Any
    rewritten: Any
    if len(req.runs) == 1:
        from rankgate.io.rewrite import read_rewrite_runs

        first = req.runs[0]
        if not isinstance(first, (str, os.PathLike)):
            raise UsageError("a rewrite log is a file (records with 'original' and 'rewritten' results): give its path")
        log = read_rewrite_runs(first)
        original, rewritten, texts, labels = log.original, log.rewritten, log.texts, ("original", "rewritten")
    else:
        original, rewritten = req.runs
        labels = tuple(req.names())  # type: ignore[assignment]
    gold = _load_gold(req)
    st = req.statistics
    effect = rewrite_effect(original, rewritten, lambda run, metrics: scorer.score(gold, run, metrics=",".join(metrics)),
                            k=req.scoring.k or 10, by=req.by, statistics=st, texts=texts, labels=labels)
    evaluations = [_evaluation(req, gold, r, scorer.score(gold, r)) for r in (original, rewritten)]
    with progress.stage(comparing_stage(req, 2)):
        result = compare([e.result for e in evaluations], labels=list(labels), by=req.by, statistics=st,
                         n_permutations=req.permutations, top=req.top)
    return CompareResult(result, tuple(labels), tuple(evaluations), rewrite=effect)


def _named(paths: list[str], evaluations: list[Any]) -> list[str]:
    """The runs' names once they are read: the ``system`` each file gives, where it gives one no other run
    shares (:func:`rankgate.model.results.run_names`)."""
    from rankgate.model.results import run_names, run_system

    return run_names(paths, [run_system(e.result) for e in evaluations])


def _check_alike(scorer: Scorer, results: list[Any], names: list[str], baseline: int) -> None:
    """Warn when a run was scored on another version of the gold set than the baseline (runs that carry
    their own references may have been labelled against different gold files), or ranked by another rule
    (a TREC file against a JSONL one: the difference is then partly the rule's); the sentences are
    :mod:`rankgate.gating.alike`'s, as the gate and the report say them."""
    from rankgate.gating.alike import alike_warnings

    for line in alike_warnings(results, names, baseline):
        scorer.warn(f"warning: {line}")


def _many(req: CompareRequest, scorer: Scorer, runs: list[Any], paths: Sequence[object], names: list[str]) -> CompareResult:
    """Runs (paths or loaded runs) against a baseline; ``paths`` as given, for ``baseline`` to match."""
    from rankgate.stats.paired import compare

    req._check_many()
    baseline = _baseline_index(req, paths, names)
    gold = _load_gold(req)
    metrics = ranked(req.scoring, req.ranking)  # (None: the final list, the scoring's metrics)
    evaluations = [_evaluation(req, gold, r, scorer.score(gold, r, metrics=metrics)) for r in runs]
    results = [e.result for e in evaluations]
    if not req.labels and len(paths) == len(evaluations) and all(isinstance(p, (str, os.PathLike)) for p in paths):
        names = _named(_files(paths), evaluations)
    _check_alike(scorer, results, names, baseline)
    st = req.statistics
    with progress.stage(comparing_stage(req, len(results))):
        result = compare(results, labels=names, baseline=baseline, statistics=st, n_permutations=req.permutations)
    return CompareResult(result, tuple(names), tuple(evaluations))


def comparing_stage(req: CompareRequest, runs: int) -> str:
    """What the terminal says while the runs are compared (:mod:`rankgate._util.progress`)."""
    by = f", by {', '.join(req.by)}" if req.by else ""
    return f"comparing {runs} runs (paired intervals and p-values{by})"


def _fuse(req: CompareRequest, scorer: Scorer) -> CompareResult:
    from dataclasses import replace

    from rankgate.io import load_run
    from rankgate.retrieval.fusion import fuse, parse_fusion, run_jsonl

    method = parse_fusion(str(req.fuse))
    if len(req.runs) < 2:
        raise UsageError(f"{F.fuse} needs at least two runs; got {len(req.runs)}")
    if req.gold is None and not req.fused_run:
        raise UsageError(f"{F.fuse} without {F.gold} only builds the fused run: give {F(fused_run=True)} (or {F.gold} to compare)")
    labels = req.names()
    s = req.scoring
    from rankgate.io.trec import trec_eval_lines

    with progress.stage(f"reading {len(req.runs)} runs"), trec_eval_lines(s.trec):  # (--trec: as trec_eval reads them)
        loaded = [load_run(path, format=s.run_format, columns=s.column_map(), fields=s.fields) for path in req.runs]
    with progress.stage(f"fusing them ({method})"):
        fused = fuse(loaded, method, labels=labels, ties=s.ties)
    name = str(method)
    if req.gold is None:
        return CompareResult(None, (), fusion=name, fused_jsonl=run_jsonl(fused), runs_fused=len(loaded))
    if name in labels:
        raise UsageError(f"a run is already named {name!r}; rename it to compare it with the fused run")
    out = _many(req, scorer, [*loaded, fused], [*req.runs, name], [*labels, name])
    return replace(out, fusion=name, fused_jsonl=run_jsonl(fused) if req.fused_run else None, runs_fused=len(loaded))
