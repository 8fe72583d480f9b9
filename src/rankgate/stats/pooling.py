"""Pooling for incomplete gold sets, and precision/nDCG with bounds.

A gold set judges some items; a retriever returns others nobody judged, and counting those as not
relevant (what every metric does) makes precision a *lower bound*. This module

* builds the **pool** (:func:`pool_queue`): for each gold query, the union of several runs' top
  ``depth`` items that the gold set does not judge, with their texts, in a stable order — best rank
  in any run first, then the first run that has it, then the id — for humans or a judge to label;
* reads the labels back (:func:`read_judged`: JSONL ``{query_id, id, grade}``, as ``rankgate judge
  relevance`` writes them; a line with ``grade: null`` and a ``judge_error`` is an item the judge
  failed on, which stays unjudged and is counted);
* reports precision@k and nDCG@k three ways (:func:`bounds`), over the queries with a relevant gold
  item (the same queries for all three):

  ``lower``      gold only: unjudged items count as not relevant (the usual number; a true lower bound);
  ``upper``      gold + judge: the judge's grades taken at face value for items the gold set lacks;
  ``corrected``  the judge's labels corrected for its errors with the calibration's sensitivity Se and
                 specificity Sp (Rogan–Gladen): with ``p`` the share of judge-labelled items the judge
                 calls relevant (grade >= ``relevant_at``), the corrected share truly relevant is
                 ``π = clip((p + Sp − 1) / (Se + Sp − 1), 0, 1)``; each judge-positive item then counts
                 ``Se·π/p`` of a relevant item and each judge-negative one ``(1 − Se)·π/(1 − p)``
                 (their probabilities of being relevant given the label; together they add up to
                 ``π`` × the number of items). nDCG uses those expectations as gains (× the judge's grade
                 for positives, × ``relevant_at`` for negatives), the ideal list from the same gains.

  A judge that misses relevant items (low Se) makes ``corrected`` exceed ``upper``: then gold + judge
  is no upper bound, and the output says so. The interval of ``corrected`` is a percentile bootstrap
  over queries in which Se and Sp are redrawn each time: as binomial shares of the calibration's human
  positives and negatives when the file gives their counts, else from normal distributions matching
  its 95% intervals. Hit and recall are not reported here: they stay on the gold set alone.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rankgate._util.constraints import CONFIDENCE, RESAMPLES, SEED, check
from rankgate.errors import F, InputError, UsageError
from rankgate.stats.options import Statistics, taken

__all__ = ["Bounds", "Calibration", "PoolItem", "bounds", "pool_queue", "read_calibration", "read_judged",
           "rogan_gladen"]


# -- the pool ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PoolItem:
    query_id: str
    query: str | None
    id: str
    text: str
    runs: tuple[str, ...]  # labels of the runs that retrieved it within the depth
    best_rank: int

    def to_dict(self) -> dict[str, Any]:
        return {"query_id": self.query_id, "query": self.query, "id": self.id, "text": self.text,
                "runs": list(self.runs), "best_rank": self.best_rank}


def ranked(run: Any, *, ties: str | None = None) -> dict[str, list[tuple[str, str | None]]]:
    """Each query's ranked (id, text) list, by the one ranking rule (:mod:`rankgate.model.ranking`;
    ``ties``: ``"id"``, ``"input"`` or None for the rule the run's format asks for)."""
    from rankgate.model.ranking import rank_rows, resolve_ties

    perm = rank_rows(run.r_query, run.r_doc, run.r_score, run.r_order, ties=resolve_ties(ties, run))
    docs = run.r_doc.take(perm).to_pylist() if len(perm) else []
    texts = run.items.get("text")
    queries = run.r_query[perm].tolist()
    out: dict[str, list[tuple[str, str | None]]] = {}
    for pos, (qi, doc) in enumerate(zip(queries, docs)):
        out.setdefault(run.query_ids[qi], []).append((doc, None if texts is None else texts[int(perm[pos])]))
    return out


def pool_queue(gold: Any, runs: Sequence[Any], labels: Sequence[str], *, depth: int, corpus: Any = None,
               ties: str | None = None) -> list[PoolItem]:
    """The unjudged items of the union of the runs' top ``depth``, per gold query (see module docs).
    A text comes from a run that logged it, else the corpus; an item with neither is an input error."""
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise UsageError(f"{F.depth} must be a positive integer; got {depth!r}")
    judged = gold.judgements()
    questions = dict(zip(gold.query_ids, gold.field("query")))
    lists = [ranked(r, ties=ties) for r in runs]
    out: list[PoolItem] = []
    for q in gold.query_ids:
        seen: dict[str, list[Any]] = {}  # id -> [best rank, first run index, runs, text]
        for ri, (lst, label) in enumerate(zip(lists, labels)):
            for rank, (doc, text) in enumerate(lst.get(q, [])[:depth], start=1):
                if doc in judged[q]:
                    continue
                entry = seen.setdefault(doc, [rank, ri, [], text])
                entry[0] = min(entry[0], rank)
                if label not in entry[2]:
                    entry[2].append(label)
                if entry[3] is None:
                    entry[3] = text
        for doc, (rank, ri, names, text) in sorted(seen.items(), key=lambda kv: (kv[1][0], kv[1][1], kv[0])):
            if text is None and corpus is not None:
                i = corpus.index_of(doc)
                text = None if i is None else corpus.text_at(i)
            if text is None:
                raise InputError(f"retrieved {doc!r} for query {q!r} but no text for it is known",
                                 path=runs[ri].source,
                                 hint="pass --corpus with the corpus the runs searched, or log texts in the runs")
            out.append(PoolItem(q, questions.get(q), doc, text, tuple(names), rank))
    return out


# -- labels and calibration -------------------------------------------------------------------------
def read_judged(path: str, gold: Any) -> tuple[dict[tuple[str, str], int], int]:
    """``{(query_id, id): grade}`` from a labels JSONL, and the number of lines the judge failed on.
    A query the gold set lacks, a repeated item or a grade that is not 0/1/2 is an input error."""
    from rankgate.io.jsonl import json_objects

    known = set(gold.query_ids)
    out: dict[tuple[str, str], int] = {}
    where: dict[tuple[str, str], int] = {}
    failed = 0
    for line, obj in json_objects(path, "labels", "{query_id, id, grade}"):
        for key in ("query_id", "id"):
            if not isinstance(obj.get(key), (str, int)) or isinstance(obj.get(key), bool) or obj.get(key) == "":
                raise InputError(f"must be a non-empty string; got {obj.get(key)!r}", path=path, line=line, field=key)
        q, d, g = str(obj["query_id"]), str(obj["id"]), obj.get("grade")
        if q not in known:
            raise InputError(f"labels query {q!r}, which is not in the gold set", path=path, line=line, field="query_id")
        if g is None and (obj.get("judge_error") or obj.get("error")):
            failed += 1
            continue
        if isinstance(g, bool) or not isinstance(g, int) or g not in (0, 1, 2):
            raise InputError(f"must be 0, 1 or 2; got {json.dumps(g)}", path=path, line=line, field="grade")
        if (q, d) in out:
            raise InputError(f"labels ({q!r}, {d!r}) again (first at line {where[(q, d)]})", path=path, line=line)
        out[(q, d)] = g
        where[(q, d)] = line
    return out, failed


@dataclass(frozen=True)
class Calibration:
    sensitivity: float
    specificity: float
    sensitivity_ci: tuple[float, float] | None
    specificity_ci: tuple[float, float] | None
    positives: int | None  # human-relevant items (the base of Se), when the file says
    negatives: int | None
    n: int
    relevant_at: int
    agreement: float | None
    task: str
    source: str
    # What binds it to its judge and its time (rankgate.stats.calibration; None in files written before them),
    # and what drift between two calibrations reads.
    judge: Mapping[str, Any] | None = None      # the judge's identity: backend, model, prompts per task
    labels_sha256: str | None = None            # the canonical hash of the human labels it was computed on
    labels_n: int | None = None                 # how many there are
    made: str | None = None                     # its date, UTC ISO 8601
    kappa: float | None = None
    kappa_ci: tuple[float, float] | None = None
    weights: str | None = None
    confusion: Any = None                       # human grade x judge grade counts
    confidence: float | None = None


def read_calibration(path: str) -> Calibration:
    """A calibration file of ``rankgate judge calibrate`` (format in docs/judges.md)."""
    from rankgate.io.source import check_file, open_text

    check_file(path, "calibration")
    try:
        with open_text(path) as fh:
            whole = json.load(fh)
    except (ValueError, RecursionError, UnicodeDecodeError):
        raise InputError("is not a JSON calibration file", path=path, hint="pass the file `rankgate judge calibrate` wrote") from None
    cal = whole.get("calibration") if isinstance(whole, dict) else None
    if not isinstance(cal, dict):
        raise InputError("has no 'calibration' object", path=path, hint="pass the file `rankgate judge calibrate` wrote")

    def num(key: str, lo: float = 0.0, hi: float = 1.0, required: bool = True) -> float | None:
        v = cal.get(key)
        if v is None and not required:
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not lo <= v <= hi:
            raise InputError(f"must be a number between {lo:g} and {hi:g}; got {json.dumps(v)}", path=path,
                             field=f"calibration.{key}")
        return float(v)

    def ci(key: str) -> tuple[float, float] | None:
        v = cal.get(key)
        if isinstance(v, list) and len(v) == 2 and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v):
            return (float(v[0]), float(v[1]))
        return None

    def count(key: str) -> int | None:
        v = cal.get(key)
        if v is None:
            return None
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise InputError(f"must be a count; got {json.dumps(v)}", path=path, field=f"calibration.{key}")
        return v

    n = count("n")
    if n is None:
        raise InputError("is missing", path=path, field="calibration.n", hint="the number of human-labelled items")
    judge, labels_sha, labels_n, made = _binding(cal, path)
    weights = cal.get("weights")
    return Calibration(sensitivity=num("sensitivity") or 0.0, specificity=num("specificity") or 0.0,
                       sensitivity_ci=ci("sensitivity_ci"), specificity_ci=ci("specificity_ci"),
                       positives=count("positives"), negatives=count("negatives"), n=n,
                       relevant_at=int(cal.get("relevant_at") or 1), agreement=num("agreement", required=False),
                       task=str(cal.get("task") or ""), source=path, judge=judge, labels_sha256=labels_sha,
                       labels_n=labels_n, made=made, kappa=num("kappa", -1.0, 1.0, required=False),
                       kappa_ci=ci("kappa_ci"), weights=weights if isinstance(weights, str) else None,
                       confusion=cal.get("confusion"), confidence=num("confidence", required=False))


def _binding(cal: Mapping[str, Any], path: str) -> tuple[Mapping[str, Any] | None, str | None, int | None, str | None]:
    """The judge identity, label-set hash and size, and date of a calibration (rankgate.stats.calibration), each
    None when the file does not give it; a value of the wrong shape is an input error naming its field."""
    from rankgate.stats.calibration import parse_time, show_time

    judge = cal.get("judge")
    if judge is not None and not isinstance(judge, dict):
        raise InputError(f"must be the judge's identity (an object); got {json.dumps(judge)[:60]}", path=path,
                         field="calibration.judge")
    labels = cal.get("human_labels")
    sha = size = None
    if labels is not None:
        if not isinstance(labels, dict):
            raise InputError(f"must be an object {{sha256, items}}; got {json.dumps(labels)[:60]}", path=path,
                             field="calibration.human_labels")
        sha, size = labels.get("sha256"), labels.get("items")
        if not isinstance(sha, str) or not sha.startswith("sha256:"):
            raise InputError(f"must be 'sha256:<hex>'; got {json.dumps(sha)[:60]}", path=path,
                             field="calibration.human_labels.sha256")
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise InputError(f"must be a count; got {json.dumps(size)[:60]}", path=path,
                             field="calibration.human_labels.items")
    made = cal.get("made")
    if made is not None:
        when = parse_time(made)
        if when is None:
            raise InputError(f"must be a UTC time in ISO 8601 (2025-05-01T09:30:00Z); got {json.dumps(made)[:60]}",
                             path=path, field="calibration.made")
        made = show_time(when)
    return judge, sha, size, made


# -- Rogan–Gladen -----------------------------------------------------------------------------------
def rogan_gladen(p: float, se: float, sp: float) -> float:
    """The true prevalence from an apparent one: ``clip((p + Sp − 1)/(Se + Sp − 1), 0, 1)``; NaN when
    ``Se + Sp <= 1`` (a judge no better than chance cannot be corrected)."""
    j = se + sp - 1.0
    if j <= 0.0 or math.isnan(p):
        return math.nan
    return min(1.0, max(0.0, (p + sp - 1.0) / j))


def _weights(p: float, pi: float, se: float) -> tuple[float, float]:
    """Probability that a judge-positive / judge-negative item is relevant."""
    pos = se * pi / p if p > 0 else 0.0
    neg = (1.0 - se) * pi / (1.0 - p) if p < 1 else 0.0
    return min(pos, 1.0), min(neg, 1.0)


# -- bounds -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Bounds:
    """precision@k and nDCG@k lower / upper / corrected means over ``queries`` applicable queries."""

    k: int
    queries: int
    lower: dict[str, float]
    upper: dict[str, float]
    corrected: dict[str, float] | None
    corrected_ci: dict[str, tuple[float, float]] | None
    judged_items: int  # judge labels used (items the gold set lacks)
    judge_failed: int
    unlabelled_in_topk: int  # top-k items neither gold nor judge labels
    prevalence: dict[str, float] | None  # p (apparent) and pi (corrected)
    calibration: str | None
    above_upper: list[str]

    def to_dict(self) -> dict[str, Any]:
        def clean(d: Mapping[str, Any] | None) -> Any:
            if d is None:
                return None
            return {k: (None if isinstance(v, float) and math.isnan(v) else
                        [None if math.isnan(x) else x for x in v] if isinstance(v, tuple) else v) for k, v in d.items()}

        return {"k": self.k, "queries": self.queries, "lower": clean(self.lower), "upper": clean(self.upper),
                "corrected": clean(self.corrected), "corrected_ci": clean(self.corrected_ci),
                "judged_items": self.judged_items, "judge_failed": self.judge_failed,
                "unlabelled_in_topk": self.unlabelled_in_topk, "prevalence": clean(self.prevalence),
                "calibration": self.calibration, "above_upper": self.above_upper}


def _log2(i: int) -> float:
    return math.log2(i + 1)


def _dcg(gains: Sequence[float]) -> float:
    total = 0.0
    for i, g in enumerate(gains, start=1):
        if g > 0:
            total += g / _log2(i)
    return total


def _query_scores(top: list[str], gold: dict[str, int], judge: dict[str, int], k: int, w: tuple[float, float] | None,
                  relevant_at: int) -> tuple[float, float, int]:
    """(precision@k, nDCG@k, unlabelled items in the top k) of one query; ``w`` None: judge labels at
    face value (or ignored, when ``judge`` is empty); else the corrected expectations."""
    def gain_rel(d: str) -> tuple[float, float]:
        if d in gold:
            g = gold[d]
            return max(g, 0), 1.0 if g >= 1 else 0.0
        if d in judge:
            g = judge[d]
            if w is None:
                return max(g, 0), 1.0 if g >= relevant_at else 0.0
            prob = w[0] if g >= relevant_at else w[1]
            return prob * max(g, relevant_at), prob
        return 0.0, 0.0

    top = top[:k]
    scored = [gain_rel(d) for d in top]
    precision = sum(r for _, r in scored) / k
    ideal_pool = [float(max(g, 0)) for g in gold.values() if g > 0]
    ideal_pool += [gain_rel(d)[0] for d in judge if d not in gold]
    ideal = sorted((g for g in ideal_pool if g > 0), reverse=True)[:k]
    idcg = _dcg(ideal)
    ndcg = _dcg([g for g, _ in scored]) / idcg if idcg > 0 else 0.0
    unlabelled = sum(1 for d in top if d not in gold and d not in judge)
    return precision, ndcg, unlabelled


def bounds(gold: Any, run: Any, judged: Mapping[tuple[str, str], int], *, k: int, calibration: Calibration | None = None,
           judge_failed: int = 0,
           statistics: Statistics | None = None, seed: int = 0, resamples: int = 2000, confidence: float = 0.95,
           ties: str | None = None) -> Bounds:
    """precision@k and nDCG@k (linear gain) of ``run``: lower, upper and corrected (see module docs)."""
    seed, resamples, confidence = taken(statistics, seed, resamples, confidence, caller="bounds",
                                         defaults=(0, 2000, 0.95))
    check(RESAMPLES, resamples, caller="bounds", name="resamples")
    check(CONFIDENCE, confidence, caller="bounds")
    check(SEED, seed, caller="bounds")
    gold_j = gold.judgements()
    lists = ranked(run, ties=ties)
    judge_by_q: dict[str, dict[str, int]] = {q: {} for q in gold.query_ids}
    for (q, d), g in judged.items():
        if d not in gold_j.get(q, {}):
            judge_by_q.setdefault(q, {})[d] = g
    rel_at = calibration.relevant_at if calibration is not None else 1
    qids = [q for q in gold.query_ids if any(g >= 1 for g in gold_j[q].values())]
    tops = {q: [d for d, _ in lists.get(q, [])] for q in qids}
    lo = np.array([_query_scores(tops[q], gold_j[q], {}, k, None, rel_at)[:2] for q in qids]).reshape(-1, 2)
    up_rows = [_query_scores(tops[q], gold_j[q], judge_by_q[q], k, None, rel_at) for q in qids]
    up = np.array([r[:2] for r in up_rows]).reshape(-1, 2)
    unlabelled = sum(r[2] for r in up_rows)

    def mean(x: np.ndarray) -> float:
        return math.fsum(x.tolist()) / x.size if x.size else math.nan

    names = (f"precision@{k}", f"ndcg@{k}")
    lower = {n: mean(lo[:, i]) for i, n in enumerate(names)}
    upper = {n: mean(up[:, i]) for i, n in enumerate(names)}
    corrected = corrected_ci = prevalence = None
    above: list[str] = []
    n_judged = sum(len(v) for v in judge_by_q.values())
    if calibration is not None:
        pos = np.array([sum(1 for g in judge_by_q[q].values() if g >= rel_at) for q in qids], dtype=np.float64)
        tot = np.array([len(judge_by_q[q]) for q in qids], dtype=np.float64)

        table = _CorrectedTable(qids, tops, gold_j, judge_by_q, k, rel_at)

        def per_query(se: float, sp: float, idx: np.ndarray) -> np.ndarray:
            n_all = tot[idx].sum()
            p = pos[idx].sum() / n_all if n_all else math.nan
            pi = rogan_gladen(p, se, sp)
            if math.isnan(pi):
                return np.full((idx.size, 2), math.nan)
            return table.scores(*_weights(p, pi, se))[idx]

        everything = np.arange(len(qids))
        n_all = tot.sum()
        p_hat = pos.sum() / n_all if n_all else math.nan
        se, sp = calibration.sensitivity, calibration.specificity
        pi_hat = rogan_gladen(p_hat, se, sp)
        prevalence = {"apparent": p_hat, "corrected": pi_hat, "sensitivity": se, "specificity": sp}
        point = per_query(se, sp, everything)
        corrected = {n: mean(point[:, i]) for i, n in enumerate(names)}
        for n in names:
            if corrected[n] > upper[n] + 1e-12:
                above.append(n)
        corrected_ci = {n: (math.nan, math.nan) for n in names}
        if resamples and len(qids) >= 2 and not math.isnan(pi_hat):
            rng = np.random.default_rng(seed)
            draws = np.empty((resamples, 2))
            for b in range(resamples):
                idx = rng.integers(0, len(qids), len(qids))
                se_b, sp_b = _redraw(calibration, rng)
                vals = per_query(se_b, sp_b, idx)
                draws[b] = vals.mean(axis=0) if not np.isnan(vals).any() else math.nan
            alpha = 1.0 - confidence
            for i, n in enumerate(names):
                ok = draws[:, i][~np.isnan(draws[:, i])]
                if ok.size:
                    lo_q, hi_q = np.quantile(ok, [alpha / 2, 1 - alpha / 2])
                    corrected_ci[n] = (float(lo_q), float(hi_q))
    return Bounds(k=k, queries=len(qids), lower=lower, upper=upper, corrected=corrected, corrected_ci=corrected_ci,
                  judged_items=n_judged, judge_failed=judge_failed, unlabelled_in_topk=unlabelled,
                  prevalence=prevalence, calibration=None if calibration is None else calibration.source,
                  above_upper=above)


class _CorrectedTable:
    """The corrected precision@k and nDCG@k of every query at once, for any weights (w+, w−).

    Both are linear in the weights except the ideal DCG, whose list is the query's positive gold
    gains, its judge-positive items at w+·grade and its judge-negative ones at w−·relevant_at: the
    order of those value classes is the same for every query, so each query's ideal is a sum over
    classes of value × (H(end) − H(start)), H(m) = Σ_{i<=min(m,k)} 1/log2(i+1). Equal to
    :func:`_query_scores` with the same weights (a test checks it), without a loop over queries.
    """

    def __init__(self, qids: Sequence[str], tops: Mapping[str, list[str]], gold: Mapping[str, dict[str, int]],
                 judge: Mapping[str, dict[str, int]], k: int, rel_at: int) -> None:
        self.k = k
        self.rel_at = rel_at
        levels = sorted({g for q in qids for g in gold[q].values() if g > 0} | {0})
        jpos = sorted({g for q in qids for g in judge[q].values() if g >= rel_at} | {rel_at})
        self.gold_levels = np.array(levels[1:], dtype=np.float64)  # positive gold grades
        self.pos_levels = np.array(jpos, dtype=np.float64)
        n = len(qids)
        self.gold_counts = np.zeros((n, self.gold_levels.size))
        self.pos_counts = np.zeros((n, self.pos_levels.size))
        self.neg_counts = np.zeros(n)
        self.fixed = np.zeros((n, 2))  # gold part of (relevant in top k, DCG@k)
        self.pos_top = np.zeros((n, 2))  # judge positives in the top k: (count, Σ grade / log2(rank+1))
        self.neg_top = np.zeros((n, 2))  # judge negatives in the top k: (count, Σ rel_at / log2(rank+1))
        gi = {g: i for i, g in enumerate(levels[1:])}
        pi = {g: i for i, g in enumerate(jpos)}
        for i, q in enumerate(qids):
            for g in gold[q].values():
                if g > 0:
                    self.gold_counts[i, gi[g]] += 1
            for d, g in judge[q].items():
                if d in gold[q]:
                    continue
                if g >= rel_at:
                    self.pos_counts[i, pi[g]] += 1
                else:
                    self.neg_counts[i] += 1
            for rank, d in enumerate(tops[q][:k], start=1):
                disc = _log2(rank)
                if d in gold[q]:
                    g = gold[q][d]
                    self.fixed[i] += (1.0 if g >= 1 else 0.0, max(g, 0) / disc)
                elif d in judge[q]:
                    g = judge[q][d]
                    if g >= rel_at:
                        self.pos_top[i] += (1.0, g / disc)
                    else:
                        self.neg_top[i] += (1.0, rel_at / disc)
        self.harmonic = np.concatenate(([0.0], np.cumsum(1.0 / np.log2(np.arange(2, k + 2)))))

    def scores(self, w_pos: float, w_neg: float) -> np.ndarray:
        """(precision@k, nDCG@k) per query, for judge-positive weight ``w_pos`` and negative ``w_neg``."""
        k = self.k
        precision = (self.fixed[:, 0] + w_pos * self.pos_top[:, 0] + w_neg * self.neg_top[:, 0]) / k
        dcg = self.fixed[:, 1] + w_pos * self.pos_top[:, 1] + w_neg * self.neg_top[:, 1]
        values = np.concatenate((self.gold_levels, w_pos * self.pos_levels, [w_neg * self.rel_at]))
        counts = np.concatenate((self.gold_counts, self.pos_counts, self.neg_counts[:, None]), axis=1)
        keep = values > 0
        values, counts = values[keep], counts[:, keep]
        order = np.argsort(-values, kind="stable")
        values, counts = values[order], counts[:, order]
        end = np.minimum(np.cumsum(counts, axis=1), k).astype(np.int64)
        start = np.concatenate((np.zeros((counts.shape[0], 1), dtype=np.int64), end[:, :-1]), axis=1)
        idcg = ((self.harmonic[end] - self.harmonic[start]) * values).sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            ndcg = np.where(idcg > 0, dcg / np.where(idcg > 0, idcg, 1.0), 0.0)
        return np.stack((precision, ndcg), axis=1)


def _redraw(cal: Calibration, rng: np.random.Generator) -> tuple[float, float]:
    """Se and Sp for one bootstrap resample (see module docs)."""
    out = []
    for value, ci, count in ((cal.sensitivity, cal.sensitivity_ci, cal.positives),
                             (cal.specificity, cal.specificity_ci, cal.negatives)):
        if count:
            out.append(rng.binomial(count, value) / count)
        elif ci is not None and ci[1] > ci[0]:
            out.append(float(np.clip(rng.normal(value, (ci[1] - ci[0]) / (2 * 1.959963984540054)), 0.0, 1.0)))
        else:
            out.append(value)
    return out[0], out[1]
