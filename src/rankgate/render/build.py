"""Build the report: the :class:`~rankgate.render.model.Report` the HTML shows, assembled from what the
report flow (:func:`rankgate.flows.report.run_report`) computed — the lists behind the numbers, the
curves, the panel and the diagnosis. :func:`report` is the Python entry (a ``Scoring`` and a ``Statistics``
as values, like every flow's request); :func:`build_report`, its loose keywords, is kept for one release.

Same inputs and seed ⇒ the same report: statistics are seeded, lists follow the ranking rule and gold
order, and nothing reads the clock (``generated_at`` is shown only when passed in).
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from rankgate import __version__
from rankgate._util.jsonable import exact_mean
from rankgate.io import Gold, Run
from rankgate.gating.diagnosis import SegmentSignal, Signals, SourceSignal, diagnose
from rankgate.flows.evaluate import Evaluation
from rankgate.flows.report import (
    AUTO_FIELDS_MAX_LABELS, SWEEP_FAMILIES, Baseline, ReportEvaluation, ReportRequest, Shown, collect_baseline,
    collect_lexical, evaluate_main, judged_k, load_inputs, panel_metrics, run_report, sweep_ks,
)
from rankgate.model.results import EvaluationResult
from rankgate.render import details as dt
from rankgate.render.model import Curve, Latency, PanelRow, Report, Stages
from rankgate.scoring.options import Scoring
from rankgate.stats.options import Statistics
from rankgate.stats.sweep import knee  # (one Kneedle for the report's curves and the segments')

if TYPE_CHECKING:  # pragma: no cover
    from rankgate.gating.config import GateConfig

__all__ = [
    "AUTO_FIELDS_MAX_LABELS", "SWEEP_FAMILIES", "ReportRequest", "assemble", "build_report", "collect_baseline",
    "collect_lexical", "collect_lists", "evaluate_main", "judged_k", "knee", "load_inputs", "panel_metrics", "report",
    "sweep_ks",
]


def _artifacts(result: EvaluationResult, base: EvaluationResult | None, run_label: str,
               baseline_label: str | None) -> Any:
    """The "Run artifacts" block (:mod:`rankgate.render.artifacts`): each run's recorded index, chunker, models."""
    from rankgate.render.artifacts import run_artifacts

    return run_artifacts(result.info.get("run") or {}, None if base is None else (base.info.get("run") or {}),
                         run_label=run_label, baseline_label=baseline_label or "baseline")


def _fact(value: Any) -> str:
    import json

    values = value if isinstance(value, list) else [value]
    return "; ".join(v if isinstance(v, str) else json.dumps(v, sort_keys=True, ensure_ascii=False) for v in values)


def _latency(result: EvaluationResult, base: EvaluationResult | None) -> tuple[Latency, ...]:
    def stats(res: EvaluationResult | None) -> dict[str, tuple[int, float, float]]:
        lat = {} if res is None else dict(res.info.get("latency_ms") or {})
        if len(lat) > 1:
            cols = list(lat.values())
            lat["total"] = [None if any(c[i] is None for c in cols) else math.fsum(c[i] for c in cols)
                            for i in range(len(cols[0]))]
        out = {}
        for stage, vals in lat.items():
            x = np.asarray([v for v in vals if v is not None], dtype=np.float64)
            if x.size:
                out[stage] = (int(x.size), float(np.percentile(x, 50)), float(np.percentile(x, 90)))
        return out

    cur, old = stats(result), stats(base)
    return tuple(Latency(s, n, med, p90, *old.get(s, (0, math.nan, math.nan))[1:]) for s, (n, med, p90) in cur.items())


def _histogram(result: EvaluationResult, depth: int) -> tuple[tuple[str, int], ...]:
    no_answer = set(result.no_answer)
    answerable = np.asarray([q not in no_answer for q in result.query_ids], dtype=bool)
    ranks = np.asarray(result.first_relevant_rank)[answerable]
    edges = [(1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (6, 10), (11, 20), (21, 50), (51, 100), (101, None)]
    out = []
    for lo, hi in edges:
        if lo > max(depth, 1):
            break
        sel = (ranks >= lo) & ((ranks <= hi) if hi is not None else True)
        label = str(lo) if lo == hi else (f"{lo}–{hi}" if hi is not None else f"{lo}+")
        out.append((label, int(sel.sum())))
    out.append(("not found", int((ranks == 0).sum())))
    return tuple(out)


def _curves(result: EvaluationResult, ks: tuple[int, ...], cis: Mapping[str, tuple[float, float]] | None = None) -> tuple[Curve, ...]:
    """The k-sweep's curves; the interval of each point from ``cis`` (the panel's, drawn together), none without."""
    from rankgate.stats.sweep import sweep_from_result

    sw = sweep_from_result(result, list(SWEEP_FAMILIES), ks, resamples=0)
    nan = (math.nan, math.nan)
    return tuple(Curve(c.metric, sw.ks, c.means, tuple((cis or {}).get(s, nan)[0] for s in c.specs),
                       tuple((cis or {}).get(s, nan)[1] for s in c.specs), knee(sw.ks, c.means)) for c in sw.curves)


def _segment_knees(result: EvaluationResult, ks: tuple[int, ...], by: Any, fields: Any) -> tuple[Any, ...]:
    """Each segment value's k-sweep knee, for the fields asked for with ``--by`` (the fields the report picks
    by itself get none: a knee per value of every field would bury the curves)."""
    if by is None or not fields:
        return ()
    from rankgate.stats.sweep import segment_knees, sweep_from_result

    sw = sweep_from_result(result, list(SWEEP_FAMILIES), ks, resamples=0)
    return segment_knees(result, sw.curves, sw.ks, fields)


@dataclass(frozen=True)
class DetailLists:
    """The lists behind the numbers, and how many there are in all."""

    misses: tuple[Any, ...]
    misses_total: int
    rescued: int | None  # misses the lexical run finds in its top 10 (None without one)
    forbidden: tuple[Any, ...]
    stale: tuple[Any, ...]
    forbidden_total: int
    stale_total: int
    forbidden_checked: int
    stale_checked: int
    no_answer: tuple[Any, ...]


@dataclass(frozen=True)
class StageNumbers:
    """Raw candidates against the final list, and where the source table reads from."""

    stages: Stages | None
    raw_result: EvaluationResult | None
    sources: tuple[Any, ...]
    sources_from: str


def report(
    gold: Any,
    run: Any,
    *,
    scoring: Scoring | None = None,
    statistics: Statistics | None = None,
    baseline: Any = None,
    lexical: Any = None,
    by: str | Iterable[str] | None = None,
    config: Any = None,
    min_score: float | None = None,
    metrics: Sequence[str] = (),
    top_misses: int = 50,
    title: str | None = None,
    generated_at: str | None = None,
    queries: str | None = None,
    sources_dir: str | None = None,
    answers: Mapping[str, Any] | None = None,
    bounds: Mapping[str, Any] | None = None,
) -> Report:
    """Evaluate ``run`` (and ``baseline``, ``lexical``) against ``gold`` and gather the report: the
    :class:`~rankgate.render.model.Report` that :func:`rankgate.render.html.render_html` writes.

    Args:
        gold, run, baseline, lexical: paths or loaded objects, as :func:`rankgate.evaluate` takes.
            ``baseline`` (a run, or the summary.json of one) adds deltas with paired CIs; ``lexical`` (e.g. a
            BM25 run) is shown beside the misses.
        scoring: how every run is scored (:class:`~rankgate.scoring.options.Scoring`: ``k`` is the page's
            cutoff, 5 when None; its ``metrics`` are not read, see ``metrics``), used as it is. None: the
            default ``Scoring()`` with the ship criteria's ``evaluate`` options (k, level, doc_sep, ties).
        statistics: the seed, resamples and confidence of every interval. Default ``Statistics()``.
        by: segment fields; ``None`` picks intent, source_of_query and tags with 2–20 labels.
        config: ship criteria (path, :class:`~rankgate.gating.config.GateConfig` or dict): adds the
            gate verdict and the floors of the segments.
        min_score: confidence line of ``false_evidence`` on no-answer queries.
        metrics: extra metrics for the panel.
        answers, bounds: layer two (the ``answers`` part of a ``rankgate answers`` summary) and the
            bounds of an incomplete gold set (``evaluate --judged``), shown in their own sections.
        sources_dir: the folder that relative ``source`` names of inputs given as loaded objects
            refer to, so that their files are hashed too (the demo shows ``data/gold.jsonl``).
        queries: a queries file (BEIR ``queries.jsonl``, ``id<TAB>text``, TREC topics) whose texts show
            beside query ids when the gold set has none; a BEIR folder's own ``queries.jsonl`` is found.
    """
    from rankgate._util.constraints import check
    from rankgate.flows.evaluate import SCORING, STATISTICS

    cfg = _config(config)
    if scoring is None:
        from rankgate.gating.config import evaluate_options

        scoring = Scoring(**evaluate_options(cfg))
    statistics = check(STATISTICS, statistics, caller="report") if statistics is not None else Statistics()
    req = ReportRequest(
        gold, run, check(SCORING, scoring, caller="report"), statistics, by=by, min_score=min_score,
        metrics=tuple(metrics), top_misses=top_misses, title=title, generated_at=generated_at, queries=queries,
        sources_dir=sources_dir, baseline=baseline, lexical=lexical, config=cfg, answers=answers, bounds=bounds,
    )
    return assemble(run_report(req))


#: ``build_report``'s keywords that :func:`report` takes as a ``Scoring`` or a ``Statistics``.
LOOSE = frozenset({"k", "level", "doc_sep", "doc_map", "seed", "resamples", "confidence", "gold_format", "run_format",
                   "trec", "complete", "dedupe", "ties", "columns"})


def build_report(
    gold: Any,
    run: Any,
    *,
    baseline: Any = None,
    lexical: Any = None,
    by: str | Iterable[str] | None = None,
    config: Any = None,
    k: int | None = None,
    level: str | None = None,
    doc_sep: str | None = None,
    doc_map: str | os.PathLike[str] | None = None,
    min_score: float | None = None,
    metrics: Sequence[str] = (),
    top_misses: int = 50,
    seed: int = 0,
    resamples: int = 2000,
    confidence: float = 0.95,
    title: str | None = None,
    generated_at: str | None = None,
    gold_format: str | None = None,
    run_format: str | None = None,
    queries: str | None = None,
    sources_dir: str | None = None,
    answers: Mapping[str, Any] | None = None,
    bounds: Mapping[str, Any] | None = None,
    **evaluate_kwargs: Any,
) -> Report:
    """:func:`report` with the scoring and statistics options as loose keywords, kept for one release (rankgate
    0.3 removes it): ``k``, ``level``, ``doc_sep``, ``doc_map`` (a file), ``gold_format``, ``run_format`` and
    ``evaluate_kwargs`` (``trec``, ``complete``, ``dedupe``, ``ties``, ``columns``) become ``scoring=Scoring(...)``,
    ``seed``, ``resamples`` and ``confidence`` become ``statistics=Statistics(...)``. ``k``, ``level``,
    ``doc_sep`` and ``ties`` left None take the config's ``evaluate`` options. No ``evaluator``: every run is
    scored with the report's scoring."""
    from rankgate._util.constraints import check_options
    from rankgate.gating.config import evaluate_options

    if "evaluator" in evaluate_kwargs:
        from rankgate.errors import UsageError

        raise UsageError("build_report takes no evaluator any more: every run is scored with the report's scoring "
                         "(report(..., scoring=Scoring(...)))")
    cfg = _config(config)
    extra = check_options(evaluate_kwargs, ("trec", "complete", "dedupe", "ties", "columns"), caller="build_report",
                          target="rankgate.evaluate")
    opts = evaluate_options(cfg, {"k": k, "level": level, "doc_sep": doc_sep, "ties": extra.get("ties")})
    scoring = Scoring(k=opts.get("k") or None, level=opts.get("level") or "chunk", doc_sep=opts.get("doc_sep", "#"),
                      ties=opts.get("ties"), doc_map=_doc_map_file(doc_map), gold_format=gold_format,
                      run_format=run_format, columns=_columns_text(extra.get("columns")),
                      **{n: extra[n] for n in ("trec", "complete", "dedupe") if n in extra})
    statistics = Statistics(seed=seed, resamples=resamples, confidence=confidence)
    return report(gold, run, scoring=scoring, statistics=statistics, baseline=baseline, lexical=lexical, by=by,
                  config=cfg, min_score=min_score, metrics=metrics, top_misses=top_misses, title=title,
                  generated_at=generated_at, queries=queries, sources_dir=sources_dir, answers=answers, bounds=bounds)


def _doc_map_file(doc_map: Any) -> Any:
    """``build_report``'s ``doc_map``: a file, as :class:`~rankgate.scoring.options.Scoring` takes it."""
    if isinstance(doc_map, Mapping):
        from rankgate.errors import UsageError

        raise UsageError("build_report's doc_map is a file now (TSV chunk_id<TAB>doc_id, or one JSON object), as "
                         "Scoring(doc_map=PATH) takes it: write the mapping to a file and pass its path")
    return doc_map


def _columns_text(columns: Any) -> str | None:
    """``build_report``'s ``columns`` (a mapping of fields to column names) as the ``--columns`` text
    :class:`~rankgate.scoring.options.Scoring` holds."""
    if columns is None or isinstance(columns, str):
        return columns
    from rankgate._util.constraints import COLUMNS, check
    from rankgate.io.formats import parse_columns

    mapping = check(COLUMNS, columns, caller="build_report")
    text = ",".join(f"{name}={column}" for name, column in mapping.items())
    if parse_columns(text) != mapping:
        from rankgate.errors import UsageError

        raise UsageError(f"build_report's columns {mapping!r} cannot be written as FIELD=COLUMN text (a name holds "
                         "',' or '=' or spaces at an end); pass Scoring(columns=TEXT) to report()"[:300])
    return text


def _lists(run: Run, result: EvaluationResult | None) -> dt.RankedLists:
    """The run's lists, ranked by the rule its evaluation used."""
    return dt.RankedLists(run, ties=(result.info.get("ties") if result is not None else None))


@dataclass(frozen=True)
class Views:
    """The run's lists (ranked by its evaluation's rule) and the gold set indexed at the level evaluated."""

    lists: dt.RankedLists
    gold_index: dt.GoldIndex


def _views(ev: ReportEvaluation) -> Views:
    from rankgate.scoring.engine import doc_mapper

    scoring = ev.request.scoring
    doc_of = doc_mapper(scoring.doc_sep, dict(ev.doc_map) if ev.doc_map else None)
    return Views(_lists(ev.inputs.run, ev.main.result),
                 dt.GoldIndex(ev.inputs.gold, scoring.level, doc_of, ev.inputs.query_texts))


def stage_numbers(ev: ReportEvaluation, views: Views) -> StageNumbers:
    """Raw candidates (``raw_topk``) against the final list, and the source table."""
    st, main = ev.stages, ev.main
    stages = None
    if st.raw_result is not None:
        conf = ev.request.statistics.confidence
        changes = tuple((m, row.ci_low, row.ci_high, row.verdict(conf)) for m, _, _ in st.rows
                        for row in [st.change.row(m)] if row is not None) if st.change is not None else ()
        stages = Stages(st.k_raw, ev.request.k, st.queries, st.rows, changes, conf)
    raw, raw_result = st.raw, st.raw_result
    src_lists = _lists(raw, raw_result) if raw is not None and "source" in raw.items else views.lists
    sources = dt.source_rows(src_lists, views.gold_index,
                             raw_result if raw_result is not None and src_lists is not views.lists else main.result)
    return StageNumbers(stages, raw_result, tuple(sources), "raw_topk" if src_lists is not views.lists else "topk")


def assemble(ev: ReportEvaluation) -> Report:
    """The report, from what the report flow computed: the lists behind the numbers, the panel, the curves,
    the component experiments' sections and the diagnosis."""
    views = _views(ev)
    stage = stage_numbers(ev, views)
    lex = ev.lexical
    pair = (lex.result, _lists(lex.run, lex.result)) if lex.result is not None and lex.run is not None else None
    details = collect_lists(ev.main, ev.shown, views, pair, ev.request)
    page = _report(ev, views, stage, details)
    signals = _signals(page, ev.main.result, stage.raw_result, views.gold_index, views.lists, ev.request.min_score,
                       details.rescued)
    page = dataclasses.replace(page, findings=diagnose(signals), answers=ev.answers, bounds=ev.bounds)
    sections = experiment_sections(ev)
    return dataclasses.replace(page, experiments=sections) if sections else page


def experiment_sections(ev: ReportEvaluation) -> tuple[tuple[str, str, str], ...]:
    """The component experiments computed, as (anchor, title, HTML section)."""
    from rankgate.render.sections import experiment_html

    from rankgate.render.conversations import followup_section

    follow = followup_section(ev.main.result, list(ev.shown.panel), ev.request.statistics)  # first turns vs follow-ups
    return experiment_html({"freshness": ev.main.freshness, "rewrite": ev.rewrite, **ev.main.components,
                            "cost": ev.main.cost, "resources": ev.main.resources},
                           ev.request.statistics.confidence) + ((follow,) if follow else ())


def _panel_rows(main: Evaluation, shown: Shown, base: Baseline, confidence: float) -> tuple[PanelRow, ...]:
    rows = []
    result, cmp, cis = main.result, base.comparison, main.cis or {}
    for m in shown.panel:
        s = result.summary(m)
        row = PanelRow(m, s.mean, s.n, *cis[m], definition=result.definitions.get(m, ""))
        if cmp is not None:
            d = cmp.row(m)
            row = dataclasses.replace(row, baseline=d.baseline, delta=d.delta, delta_low=d.ci_low, delta_high=d.ci_high,
                                      p_value=d.p_holm, verdict=d.verdict(confidence))
        elif base.summary is not None:
            st = base.summary.lookup(m, None, None)
            if st is not None and not math.isnan(st.mean):
                row = dataclasses.replace(row, baseline=st.mean, delta=s.mean - st.mean)
        rows.append(row)
    return tuple(rows)


def collect_lists(main: Evaluation, shown: Shown, views: Views,
                  lexical: tuple[EvaluationResult, dt.RankedLists] | None, req: ReportRequest) -> DetailLists:
    """The lists behind the numbers: misses, offending items, no-answer queries (up to ``top_misses`` each)."""
    result, gidx, lists, limit = main.result, views.gold_index, views.lists, req.top_misses
    misses, misses_total, rescued = dt.misses(result, lists, gidx, limit=limit, fields=list(shown.fields or []),
                                              lexical=lexical)
    forb, stale, ftotal, stotal, fchecked, schecked = dt.offences(result, lists, gidx, req.k, limit=limit)
    no_answer = dt.no_answer_items(result, lists, gidx, shown.false_evidence or None, limit=limit)
    return DetailLists(tuple(misses), misses_total, rescued, tuple(forb), tuple(stale), ftotal, stotal, fchecked, schecked,
                       tuple(no_answer))


def _report(ev: ReportEvaluation, views: Views, stage: StageNumbers, details: DetailLists) -> Report:
    """The report's numbers and lists, from the parts the steps gathered."""
    inputs, main, shown, base, lex, req = ev.inputs, ev.main, ev.shown, ev.baseline, ev.lexical, ev.request
    cfg = req.config
    doc_level, outcome, run_label = ev.doc_level, ev.outcome, ev.run_label
    result, k = main.result, req.k
    floors: dict[str, float] = {}
    if cfg is not None:
        for gt in cfg.gates:
            if gt.threshold is not None:
                floors[gt.metric] = max(floors.get(gt.metric, -math.inf), gt.threshold)
    base_result, cmp = base.result, base.comparison
    files = list(inputs.files) + [f for f in (base.file, lex.file) if f is not None]
    fe = shown.false_evidence
    from rankgate.render.incidents import incident_view

    return Report(
        incidents=incident_view(inputs.gold, result, k),
        title=req.title or f"Retrieval report: {run_label}",
        version=__version__,
        generated_at=req.generated_at,
        inputs=tuple(files),
        facts=_facts(result, inputs.gold),
        counts={
            "evaluated": len(result.query_ids),
            "no_answer": len(result.no_answer),
            "missing_from_run": len(result.missing_from_run),
            "not_in_gold": len(result.not_in_gold),
            "duplicates_dropped": int(result.info.get("duplicates_dropped") or 0),
        },
        input_notes=_input_notes(result),
        resample_unit=_resample_unit(result),
        k=k,
        level=req.scoring.level,
        seed=req.statistics.seed,
        resamples=req.statistics.resamples,
        confidence=req.statistics.confidence,
        panel=_panel_rows(main, shown, base, req.statistics.confidence),
        latency=_latency(result, base_result),
        artifacts=_artifacts(result, base_result, run_label, base.label),
        run_label=run_label,
        baseline_label=base.label,
        changes_tested=cmp.holm_families[0][1] if cmp is not None else 0,
        lexical_label=lex.label,
        lexical_panel=lex.panel,
        curves=_curves(result, shown.ks, main.cis),
        baseline_curves=_curves(base_result, shown.ks) if base_result is not None else (),
        segment_knees=_segment_knees(result, shown.ks, req.by, shown.fields),
        depth=shown.depth,
        rank_histogram=_histogram(result, shown.depth),
        baseline_rank_histogram=_histogram(base_result, shown.depth) if base_result is not None else (),
        segments=main.segments,
        segment_deltas={(x.field, x.segment, x.metric): x.delta for x in cmp.rows if x.field is not None} if cmp is not None else {},
        floors=floors,
        segments_auto=req.by is None and bool(shown.fields),
        misses=details.misses,
        misses_total=details.misses_total,
        offences_forbidden=details.forbidden,
        offences_stale=details.stale,
        forbidden_total=details.forbidden_total,
        stale_total=details.stale_total,
        forbidden_checked=details.forbidden_checked,
        stale_checked=details.stale_checked,
        stages=stage.stages,
        sources=stage.sources,
        sources_from=stage.sources_from,
        no_answer=details.no_answer,
        false_evidence_metric=fe,
        false_evidence_rate=result.summary(fe).mean if fe else math.nan,
        doc_level=dict(doc_level),
        gate=outcome,
    )


def _config(config: Any) -> GateConfig | None:
    if config is None:
        return None
    from rankgate.gating.config import as_config

    return as_config(config)


def _facts(result: EvaluationResult, g: Gold) -> tuple[tuple[str, str], ...]:
    names = {"system": "system", "index_version": "index version", "chunker": "chunker", "embedding_model": "embedding model",
             "reranker": "reranker", "corpus_version": "corpus version (run)"}
    out = []
    run_facts = result.info.get("run") or {}
    for key, label in names.items():
        if run_facts.get(key):
            out.append((label, _fact(run_facts[key])))
    gold_facts = result.info.get("gold") or {}
    if gold_facts.get("corpus_version"):
        out.append(("corpus version (gold)", _fact(gold_facts["corpus_version"])))
    from rankgate.scoring.engine import RULE_NAMES

    rule, differ = result.info.get("ties"), result.info.get("ties_differ") or 0
    if rule in RULE_NAMES:
        other = "--ties id" if rule == "input" else "--ties input"
        text = RULE_NAMES[rule] if not differ else (
            f"{RULE_NAMES[rule]}; {differ} {'query' if differ == 1 else 'queries'} with tied scores or explicit ranks "
            f"would be ordered differently by {other}")
        out.append(("ranking rule", text))
    return tuple(out)


def _signals(rep: Report, result: EvaluationResult, raw_result: EvaluationResult | None, gidx: dt.GoldIndex,
             lists: dt.RankedLists, min_score: float | None, rescued: int | None) -> Signals:
    k = rep.k
    means = {m: result.summary(m).mean for m in result.metric_names}
    no_answer = set(result.no_answer)
    answerable = [i for i, q in enumerate(result.query_ids) if q not in no_answer]
    deep_src = raw_result if raw_result is not None else result
    deep_k: int | None
    if raw_result is not None and rep.stages is not None:
        deep_k = rep.stages.k_raw
        deep = {m: raw for m, raw, _ in rep.stages.rows}.get(f"recall@{deep_k}")
    else:
        deep_k = 50 if rep.depth >= 50 else (rep.depth if rep.depth > k else None)
        deep = means.get(f"recall@{deep_k}") if deep_k else None
    fr = np.asarray(deep_src.first_relevant_rank)
    if deep_src is result:  # (the usual case: the same queries in the same order)
        never_count = int((fr[np.asarray(answerable, dtype=np.int64)] == 0).sum())
    else:
        di = deep_src.query_index()
        never_count = sum(1 for i in answerable if result.query_ids[i] in di and int(fr[di[result.query_ids[i]]]) == 0)
    never = never_count / len(answerable) if answerable else None
    ceiling = None
    in_gold = np.fromiter((gidx.index[q] for q in result.query_ids), dtype=np.int64, count=len(result.query_ids))
    if answerable:
        slots = min(k, rep.depth) if rep.depth > 0 else k  # a shorter run cannot fill k slots
        relevant = gidx.relevant_counts()[in_gold[np.asarray(answerable, dtype=np.int64)]]
        ceiling = exact_mean(np.minimum(relevant, slots) / k)
    jk = judged_k(rep.depth)
    jceil = None
    if result.query_ids:
        # at most min(judgements, jk) of a query's top jk can be judged
        jceil = exact_mean(np.minimum(gidx.judged_counts()[in_gold], jk) / jk)
    segs: tuple[SegmentSignal, ...] = ()
    if rep.segments is not None:
        segs = tuple(SegmentSignal(r.field.removeprefix("tags."), r.label, r.metric, r.n, r.mean, r.ci_low, r.ci_high)
                     for r in rep.segments.rows if r.metric == f"recall@{k}" or r.metric in rep.floors)
    tops = lists.top_scores()
    na_scores = [tops[q] for q in result.no_answer if q in tops]
    frr = np.asarray(result.first_relevant_rank).tolist()
    ans_scores = [tops[q] for q, r in zip(result.query_ids, frr) if r == 1 and q in tops]
    st = {m: (raw, fin) for m, raw, fin in rep.stages.rows} if rep.stages else {}
    recall_curve = next((c for c in rep.curves if c.metric == "recall"), None)
    knee_k = recall_curve.knee if recall_curve is not None else None
    knee_recall = (recall_curve.means[recall_curve.ks.index(knee_k)]
                   if recall_curve is not None and knee_k is not None else None)
    return Signals(
        k=k, depth=rep.depth, means=means, knee=knee_k, knee_recall=knee_recall, evaluated=len(result.query_ids), answerable=len(answerable),
        missing_from_run=len(result.missing_from_run), deep_k=deep_k, deep_recall=deep,
        deep_from_raw=raw_result is not None, never_found=never,
        chunk_recall10=rep.doc_level.get("chunk"), doc_recall10=rep.doc_level.get("doc"),
        precision_ceiling=ceiling, distinct_docs=means.get(f"distinct_docs@{k}"), segments=segs, floors=rep.floors,
        forbidden_queries=rep.forbidden_total, forbidden_checked=rep.forbidden_checked,
        forbidden_examples=tuple(o.query_id for o in rep.offences_forbidden),
        stale_queries=rep.stale_total, stale_checked=rep.stale_checked,
        stale_examples=tuple(o.query_id for o in rep.offences_stale),
        judged10=means.get(f"judged@{jk}"), judged_k=jk, judged_ceiling=jceil, no_answer=len(result.no_answer),
        false_evidence=rep.false_evidence_rate if rep.false_evidence_metric else None, min_score=min_score,
        top_score_no_answer=dt.median(na_scores) if na_scores else None,
        top_score_answered=dt.median(ans_scores) if ans_scores else None,
        raw={m: v[0] for m, v in st.items()}, final={m: v[1] for m, v in st.items()},
        sources=tuple(SourceSignal(s.source, s.share_of_slots, s.share_of_found, s.items) for s in rep.sources
                      if not math.isnan(s.share_of_found)),
        misses10=rep.misses_total, lexical_rescued=rescued, lexical_label=rep.lexical_label or "the lexical baseline",
    )


def _resample_unit(result: Any) -> str:
    """What the intervals resample: ``conversations`` when the queries form them (stats/clusters.py), else ``queries``."""
    from rankgate.stats.clusters import conversation_codes

    return "queries" if conversation_codes(result) is None else "conversations"


def _input_notes(result: Any) -> tuple[str, ...]:
    """The readers' notices and the near-misses of text matching, as the terminal says them."""
    from rankgate.io.nearmiss import near_miss_line

    near = near_miss_line(result.info.get("near_misses"))
    from rankgate.stats.clusters import resampling_line

    units = resampling_line(result)  # conversations: the unit the intervals resample (stats/clusters.py)
    return tuple([*(result.info.get("notices") or ()), *([near] if near else []), *([units] if units else [])])
