"""Build the report: evaluate the run (and a baseline, a lexical run), then gather every number and list
the HTML shows into a :class:`~rankgate.report.model.Report`.

Same inputs and seed ⇒ the same report: statistics are seeded, lists follow the ranking rule and gold
order, and nothing reads the clock (``generated_at`` is shown only when passed in).
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from .. import __version__
from ..data import Gold, Run, load_gold, load_run
from ..data.source import sha256_file
from ..diagnosis import SegmentSignal, Signals, SourceSignal, diagnose
from ..errors import UsageError
from ..results import EvaluationResult
from ..stats import metric_cis
from . import details as dt
from .model import Curve, Latency, PanelRow, Report, Stages

__all__ = ["build_report", "knee", "panel_metrics", "sweep_ks"]

Evaluator = Callable[[Gold, Run, list[str], str], EvaluationResult]
SWEEP_FAMILIES = ("recall", "ndcg")
AUTO_FIELDS_MAX_LABELS = 20


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


def knee(ks: Sequence[int], means: Sequence[float], k_max: int = 20) -> int | None:
    """Kneedle over k ≤ ``k_max``: the k where the curve, scaled to the unit square, lies furthest
    above the straight line from its first to its last point; None for a flat or non-rising curve."""
    pts = [(k, m) for k, m in zip(ks, means) if k <= k_max and not math.isnan(m)]
    if len(pts) < 3:
        return None
    x0, y0 = pts[0]
    x1, y1 = pts[-1]
    if y1 - y0 <= 1e-12:
        return None
    best, best_k = 0.0, None
    for k, m in pts:
        d = (m - y0) / (y1 - y0) - (k - x0) / (x1 - x0)
        if d > best + 1e-12:
            best, best_k = d, k
    return best_k


def _dedupe(names: Iterable[str]) -> list[str]:
    from ..metrics import parse_metric

    return list(dict.fromkeys(str(parse_metric(n)) for n in names))


def _sha(source: Any) -> str | None:
    return sha256_file(os.fspath(source)) if isinstance(source, (str, os.PathLike)) and os.path.isfile(source) else None


def _path(source: Any, loaded: Run | None = None) -> str:
    if isinstance(source, (str, os.PathLike)):
        return os.fspath(source)
    return loaded.source if loaded is not None else str(getattr(source, "source", ""))


def _label(source: Any, loaded: Run, *others: str) -> str:
    """How the report names a run: its file name, or its whole path when another run shares the file name
    (``others``: the paths of the other runs). One rule for legends, tables, the gate and the title."""
    path = _path(source, loaded)
    name = os.path.basename(path) or path
    return path if any(os.path.basename(o) == name and o != path for o in others) else name


def _fact(value: Any) -> str:
    import json

    values = value if isinstance(value, list) else [value]
    return "; ".join(v if isinstance(v, str) else json.dumps(v, sort_keys=True, ensure_ascii=False) for v in values)


def _auto_fields(result: EvaluationResult) -> list[str]:
    preferred = ["intent", "segment", "source_of_query"] + sorted(k for k in result.fields if k.startswith("tags."))
    out = []
    for key in preferred:
        if key in result.fields:
            labels = {v for v in result.fields[key] if v is not None}
            if 2 <= len(labels) <= AUTO_FIELDS_MAX_LABELS:
                out.append(key)
    return out


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


def _curves(result: EvaluationResult, ks: tuple[int, ...], seed: int, n_resamples: int, confidence: float) -> tuple[Curve, ...]:
    from ..sweep import sweep_from_result

    sw = sweep_from_result(result, list(SWEEP_FAMILIES), ks, seed=seed, n_resamples=n_resamples, confidence=confidence)
    return tuple(Curve(c.metric, sw.ks, c.means, c.ci_low, c.ci_high, knee(sw.ks, c.means)) for c in sw.curves)


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
    doc_map: Mapping[str, str] | None = None,
    min_score: float | None = None,
    metrics: Sequence[str] = (),
    top_misses: int = 50,
    seed: int = 0,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    title: str | None = None,
    generated_at: str | None = None,
    gold_format: str | None = None,
    run_format: str | None = None,
    evaluator: Evaluator | None = None,
    queries: str | None = None,
    sources_dir: str | None = None,
    **evaluate_kwargs: Any,
) -> Report:
    """Evaluate ``run`` (and ``baseline``, ``lexical``) against ``gold`` and gather the report.

    Args:
        gold, run, baseline, lexical: paths or loaded objects, as :func:`rankgate.evaluate` takes.
            ``baseline`` adds deltas with paired CIs; ``lexical`` (e.g. a BM25 run) is shown beside
            the misses.
        by: segment fields; ``None`` picks intent, source_of_query and tags with 2–20 labels.
        config: ship criteria (path, :class:`~rankgate.gate_config.GateConfig` or dict): adds the
            gate verdict; its ``evaluate`` options apply where ``k``/``level``/``doc_sep`` are None.
        min_score: confidence line of ``false_evidence`` on no-answer queries.
        metrics: extra metrics for the panel.
        sources_dir: the folder that relative ``source`` names of inputs given as loaded objects
            refer to, so that their files are hashed too (the demo shows ``data/gold.jsonl``).
        queries: a queries file (BEIR ``queries.jsonl``, ``id<TAB>text``, TREC topics) whose texts show
            beside query ids when the gold set has none; a BEIR folder's own ``queries.jsonl`` is found.
        evaluator: ``(gold, run, metrics, level) -> EvaluationResult``; default :func:`rankgate.evaluate`
            with ``k``, ``doc_sep``, ``doc_map`` and ``evaluate_kwargs`` (``dedupe``, ``trec``…).
    """
    from ..engine import DEFAULT_K, _doc_mapper

    cfg = _config(config)
    opts = dict(cfg.evaluate) if cfg is not None else {}
    # The report's lists follow the same ranking rule as its numbers.
    ties = evaluate_kwargs.setdefault("ties", opts.get("ties", "id"))
    columns = evaluate_kwargs.get("columns")
    k = k or opts.get("k") or DEFAULT_K
    level = level or opts.get("level") or "chunk"
    doc_sep = doc_sep if doc_sep is not None else opts.get("doc_sep", "#")
    if evaluator is None:
        from ..engine import evaluate

        def evaluator(g: Gold, r: Run, ms: list[str], lvl: str) -> EvaluationResult:
            return evaluate(g, r, ms, k=k, level=lvl, doc_sep=doc_sep, doc_map=dict(doc_map) if doc_map else None,
                            **evaluate_kwargs)

    g = load_gold(gold, format=gold_format, columns=columns)
    r = load_run(run, format=run_format, columns=columns)
    from ..data.inputs import beir_folder, beir_query_texts, gold_files, run_files, sha256_files

    def on_disk(arg: Any, loaded: Any) -> Any:  # a loaded input's file, when sources_dir says where it is
        if isinstance(arg, (str, os.PathLike)) or sources_dir is None:
            return arg
        source = str(getattr(loaded, "source", ""))
        path = os.path.join(sources_dir, source)
        return path if source and not os.path.isabs(source) and os.path.isfile(path) else arg

    read, run_read = gold_files(on_disk(gold, g)), run_files(on_disk(run, r))
    inputs = [("gold", g.source, sha256_files(read) if read else None),
              ("run", r.source, sha256_files(run_read) if run_read else None)]
    query_texts: dict[str, str] = {}
    folder = beir_folder(gold) if "query" not in g.fields and queries is None else None
    if queries is not None:  # --queries: a queries file beside a gold set without texts (TREC qrels, CSV)
        from ..data.inputs import read_query_texts

        query_texts = read_query_texts(os.fspath(queries))
        inputs.insert(1, ("gold queries", os.fspath(queries), sha256_file(os.fspath(queries))))
    elif folder is not None:  # BEIR: the query text lives beside the qrels
        qpath, query_texts = beir_query_texts(folder)
        inputs.insert(1, ("gold queries", qpath, sha256_file(qpath)))
    lists = dt.RankedLists(r, ties=ties)
    depth = lists.depth
    ks = sweep_ks(depth)
    has_versions = "doc_version" in r.items and "as_of" in g.fields
    has_no_answer = "no_answer" in g.fields
    fe = f"false_evidence{'' if min_score is None else f'(min_score={min_score:g})'}@{k}"
    panel = _dedupe([*panel_metrics(k), *metrics])
    extra = ["hit@10", "recall@10", f"judged@{judged_k(depth)}", *(["forbidden"] if "must_not_retrieve" in g.fields else []),
             *(["fresh"] if has_versions else []), *([fe] if has_no_answer else [])]
    gated = list(cfg.metrics) if cfg is not None else []
    from ..sweep import sweep_specs

    all_metrics = _dedupe([*panel, *sweep_specs(list(SWEEP_FAMILIES), ks), *extra, *gated])
    result = evaluator(g, r, all_metrics, level)
    fe = str(next((m for m in result.metric_names if m.startswith("false_evidence")), "")) or ""
    cis = metric_cis(result, seed=seed, n_resamples=n_resamples, confidence=confidence, metrics=panel)
    doc_of = _doc_mapper(doc_sep, dict(doc_map) if doc_map else None)
    gidx = dt.GoldIndex(g, level, doc_of, query_texts)

    fields = _auto_fields(result) if by is None else None
    if by is not None:
        from ..segments import field_key, split_fields

        fields = [field_key(result, f) for f in split_fields(by)]
    seg_metrics = _dedupe([f"recall@{k}", f"ndcg@{k}", f"precision@{k}", "mrr", *[m for m in gated if m in result.values]])
    segments = None
    if fields:
        from ..segments import segment_summary

        segments = segment_summary(result, fields, metrics=seg_metrics, seed=seed, n_resamples=n_resamples,
                                   confidence=confidence)

    # Baseline: same metrics, paired comparison, its curves.
    base_result = base_summary = cmp = None
    base_label = None
    run_label = _label(run, r, *(_path(x) for x in (baseline, lexical) if x is not None))
    if baseline is not None:
        from ..baseline import BaselineSummary, summary_or_run

        def run_and_sha(path: str) -> tuple[Run, str | None]:
            br = load_run(path, format=run_format, columns=columns)
            return br, _sha(on_disk(path, br))

        loaded: BaselineSummary | tuple[Run, str | None]
        if isinstance(baseline, BaselineSummary):
            loaded = baseline
        elif isinstance(baseline, (str, os.PathLike)):  # a summary.json or a run (a pipe is read once)
            loaded = summary_or_run(os.fspath(baseline), run_and_sha)
        else:
            base_run = load_run(baseline, format=run_format, columns=columns)
            loaded = (base_run, _sha(on_disk(baseline, base_run)))
        if isinstance(loaded, BaselineSummary):
            base_summary = loaded
            base_label = os.path.basename(base_summary.source)
        else:
            br, base_sha = loaded
            inputs.append(("baseline", br.source, base_sha))
            base_label = _label(baseline, br, _path(run, r))
            base_result = evaluator(g, br, _dedupe([*panel, *sweep_specs(list(SWEEP_FAMILIES), ks), *gated]), level)
            from ..compare import compare

            cmp = compare(base_result, result, metrics=[*panel, *[m for m in seg_metrics if m not in panel]],
                          by=fields or (), seed=seed, n_resamples=n_resamples, confidence=confidence,
                          baseline_label=base_label, candidate_label=run_label)

    rows = []
    for m in panel:
        s = result.summary(m)
        row = PanelRow(m, s.mean, s.n, *cis[m], definition=result.definitions.get(m, ""))
        if cmp is not None:
            d = cmp.row(m)
            row = dataclasses.replace(row, baseline=d.baseline, delta=d.delta, delta_low=d.ci_low, delta_high=d.ci_high,
                                      p_value=d.p_holm, verdict=d.verdict(confidence))
        elif base_summary is not None:
            st = base_summary.lookup(m, None, None)
            if st is not None and not math.isnan(st.mean):
                row = dataclasses.replace(row, baseline=st.mean, delta=s.mean - st.mean)
        rows.append(row)
    seg_deltas = {}
    if cmp is not None:
        seg_deltas = {(x.field, x.segment, x.metric): x.delta for x in cmp.rows if x.field is not None}

    # Lexical baseline beside the misses.
    lex = None
    lex_label = None
    lexical_panel: tuple[tuple[str, float], ...] = ()
    if lexical is not None:
        lr = load_run(lexical, format=run_format, columns=columns)
        inputs.append(("lexical baseline", lr.source, _sha(on_disk(lexical, lr))))
        lex_label = _label(lexical, lr, _path(run, r), *([_path(baseline, br)] if base_result is not None else []))
        lres = evaluator(g, lr, _dedupe([f"recall@{k}", "hit@10", f"ndcg@{k}", "mrr"]), level)
        lex = (lres, dt.RankedLists(lr, ties=ties))
        lexical_panel = tuple((m, lres.summary(m).mean) for m in lres.metric_names)

    misses, misses_total, rescued = dt.misses(result, lists, gidx, limit=top_misses, fields=list(fields or []), lexical=lex)
    forb, stale, ftotal, stotal, fchecked, schecked = dt.offences(result, lists, gidx, k, limit=top_misses)
    no_answer = dt.no_answer_items(result, lists, gidx, fe or None, limit=top_misses)

    # Stages: raw candidates vs the final list.
    stages = None
    raw = dt.raw_run(r)
    raw_result = None
    if raw is not None:
        kr = dt.k_raw(r, raw)
        stage_metrics = _dedupe([f"recall@{kr}", f"mrr@{kr}", f"recall@{k}", f"ndcg@{k}", f"precision@{k}"])
        raw_result = evaluator(g, raw, stage_metrics, level)
        fin = evaluator(g, r, stage_metrics, level)
        have = set(raw.query_ids)
        mask = np.asarray([q in have for q in raw_result.query_ids], dtype=bool)
        rs, fs = raw_result.subset(mask), fin.subset(mask)
        stages = Stages(kr, k, int(mask.sum()), tuple((m, rs.summary(m).mean, fs.summary(m).mean) for m in stage_metrics))
    src_lists = dt.RankedLists(raw, ties=ties) if raw is not None and "source" in raw.items else lists
    sources = dt.source_rows(src_lists, gidx, raw_result if src_lists is not lists else result)

    # Doc level against chunk level.
    doc_level: dict[str, float] = {}
    if level == "chunk" and (doc_map or (doc_sep and any(doc_sep in d for d in g.j_doc.to_pylist()))):
        dk = min(10, depth) if depth else 10  # never past the run's depth (a top-5 run: recall@5)
        m = f"recall@{dk}"
        doc_result = evaluator(g, r, [m], "doc")
        chunk = result if m in result.metric_names else evaluator(g, r, [m], level)
        doc_level = {"chunk": chunk.summary(m).mean, "doc": doc_result.summary(m).mean, "k": float(dk)}

    outcome = None
    if cfg is not None:
        from ..gates import decide

        outcome = decide(cfg, result, base_result if base_result is not None else base_summary,
                         baseline_label=base_label, candidate_label=run_label)
    floors = {}
    if cfg is not None:
        for gt in cfg.gates:
            if gt.threshold is not None:
                floors[gt.metric] = max(floors.get(gt.metric, -math.inf), gt.threshold)

    curves = _curves(result, ks, seed, n_resamples, confidence)
    base_curves = _curves(base_result, ks, seed, 0, confidence) if base_result is not None else ()

    facts = _facts(result, g)
    counts = {
        "evaluated": len(result.query_ids),
        "no_answer": len(result.no_answer),
        "missing_from_run": len(result.missing_from_run),
        "not_in_gold": len(result.not_in_gold),
        "duplicates_dropped": int(result.info.get("duplicates_dropped") or 0),
    }
    from .incidents import incident_view

    report = Report(
        incidents=incident_view(g, result, k),
        title=title or f"Retrieval report: {run_label}",
        version=__version__,
        generated_at=generated_at,
        inputs=tuple(inputs),
        facts=facts,
        counts=counts,
        k=k,
        level=level,
        seed=seed,
        n_resamples=n_resamples,
        confidence=confidence,
        panel=tuple(rows),
        latency=_latency(result, base_result),
        run_label=run_label,
        baseline_label=base_label,
        changes_tested=len(cmp.rows) if cmp is not None else 0,
        lexical_label=lex_label,
        lexical_panel=lexical_panel,
        curves=curves,
        baseline_curves=base_curves,
        depth=depth,
        rank_histogram=_histogram(result, depth),
        baseline_rank_histogram=_histogram(base_result, depth) if base_result is not None else (),
        segments=segments,
        segment_deltas=seg_deltas,
        floors=floors,
        segments_auto=by is None and bool(fields),
        misses=tuple(misses),
        misses_total=misses_total,
        offences_forbidden=tuple(forb),
        offences_stale=tuple(stale),
        forbidden_total=ftotal,
        stale_total=stotal,
        forbidden_checked=fchecked,
        stale_checked=schecked,
        stages=stages,
        sources=tuple(sources),
        sources_from="raw_topk" if src_lists is not lists else "topk",
        no_answer=tuple(no_answer),
        false_evidence_metric=fe,
        false_evidence_rate=result.summary(fe).mean if fe else math.nan,
        doc_level=doc_level,
        gate=outcome,
    )
    signals = _signals(report, result, raw_result, gidx, lists, min_score, rescued)
    return dataclasses.replace(report, findings=diagnose(signals))


def _config(config: Any):
    if config is None:
        return None
    from ..gate_config import GateConfig, config_from_dict, load_config

    if isinstance(config, GateConfig):
        return config
    if isinstance(config, Mapping):
        return config_from_dict(config)
    if isinstance(config, (str, os.PathLike)):
        return load_config(os.fspath(config))
    raise UsageError(f"config must be a path, a GateConfig or a dict; got {type(config).__name__}")


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
    if result.info.get("ties") == "input":  # the default rule (id descending) is not listed
        out.append(("equal scores", "kept in input order (--ties input)"))
    return tuple(out)


def _signals(rep: Report, result: EvaluationResult, raw_result: EvaluationResult | None, gidx: dt.GoldIndex,
             lists: dt.RankedLists, min_score: float | None, rescued: int | None) -> Signals:
    k = rep.k
    means = {m: result.summary(m).mean for m in result.metric_names}
    no_answer = set(result.no_answer)
    answerable = [i for i, q in enumerate(result.query_ids) if q not in no_answer]
    deep_src = raw_result if raw_result is not None else result
    if raw_result is not None and rep.stages is not None:
        deep_k = rep.stages.k_raw
        deep = {m: raw for m, raw, _ in rep.stages.rows}.get(f"recall@{deep_k}")
    else:
        deep_k = 50 if rep.depth >= 50 else (rep.depth if rep.depth > k else None)
        deep = means.get(f"recall@{deep_k}") if deep_k else None
    fr = np.asarray(deep_src.first_relevant_rank)
    di = deep_src.query_index()
    found = [int(fr[di[result.query_ids[i]]]) for i in answerable if result.query_ids[i] in di]
    never = sum(1 for x in found if x == 0) / len(answerable) if answerable else None
    ceiling = None
    in_gold = np.fromiter((gidx.index[q] for q in result.query_ids), dtype=np.int64, count=len(result.query_ids))
    if answerable:
        slots = min(k, rep.depth) if rep.depth > 0 else k  # a shorter run cannot fill k slots
        relevant = gidx.relevant_counts()[in_gold[np.asarray(answerable, dtype=np.int64)]]
        ceiling = math.fsum((np.minimum(relevant, slots) / k).tolist()) / len(answerable)
    jk = judged_k(rep.depth)
    jceil = None
    if result.query_ids:
        # at most min(judgements, jk) of a query's top jk can be judged
        jceil = math.fsum((np.minimum(gidx.judged_counts()[in_gold], jk) / jk).tolist()) / len(result.query_ids)
    segs = ()
    if rep.segments is not None:
        segs = tuple(SegmentSignal(r.field.removeprefix("tags."), r.label, r.metric, r.n, r.mean, r.ci_low, r.ci_high)
                     for r in rep.segments.rows if r.metric == f"recall@{k}" or r.metric in rep.floors)
    tops = lists.top_scores()
    na_scores = [tops[q] for q in result.no_answer if q in tops]
    frr = result.first_relevant_rank
    ans_scores = [tops[q] for i, q in enumerate(result.query_ids) if int(frr[i]) == 1 and q in tops]
    st = {m: (raw, fin) for m, raw, fin in rep.stages.rows} if rep.stages else {}
    recall_curve = next((c for c in rep.curves if c.metric == "recall"), None)
    knee_k = recall_curve.knee if recall_curve is not None else None
    knee_recall = recall_curve.means[recall_curve.ks.index(knee_k)] if knee_k is not None else None
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
