"""Diagnosis: the retrieval debugging playbook as rules. Numbers in, findings out; no I/O.

Each rule reads a few numbers from :class:`Signals` and returns a :class:`Finding` (or nothing). A
finding always carries the numbers that triggered it (``evidence`` in words, ``numbers`` exactly) and
what to try. A rule whose numbers are absent (no raw candidate list, no doc-level recall, no
no-answer queries…) stays silent rather than guess.

The rules, in the order findings are listed (most fundamental first):

=====================  ==================================================================================
``missing_queries``    gold queries absent from the run (they score 0)
``not_retrieved``      many queries have no relevant chunk anywhere in the list: a candidate-generation gap
``ranked_low``         recall@k far below recall at depth: found, but ranked too low
``chunk_split``        doc-level recall well above chunk-level: the chunker splits answers
``reranker_hurts``     the reranked list scores worse than the raw candidate list
``weak_segment``       a segment clearly below all queries (or its CI below a gate floor)
``lexical_rescue``     a lexical baseline finds many of the system's misses: add lexical/hybrid retrieval
``router_skew``        a source fills many slots but supplies almost none of the relevant chunks
``forbidden``          must_not_retrieve items retrieved
``stale``              items newer than the query's as_of retrieved
``false_evidence``     no-answer queries get confident evidence
``distractors``        precision@k low while recall@k is high: most of the context is distractors
``low_judged``         little of the top 10 (or of the whole list, when the run is shorter) is judged: the
                       gold set is going stale
=====================  ==================================================================================

Cut-offs live in :class:`Thresholds`; pass your own to :func:`diagnose` to tune them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeGuard

from rankgate.metrics.display import fmt_delta, fmt_score, fmt_sig, fmt_value

__all__ = ["RULES", "Finding", "SegmentSignal", "Signals", "SourceSignal", "Thresholds", "diagnose"]

SEVERITIES = ("problem", "warning", "info")


@dataclass(frozen=True)
class Finding:
    """One diagnosis: what is wrong, the numbers that show it, and what to try."""

    rule: str
    severity: str  # problem | warning | info
    title: str
    evidence: str
    advice: str
    numbers: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class SegmentSignal:
    """One segment's mean and interval of one metric."""

    field: str
    label: str
    metric: str
    n: int
    mean: float
    ci_low: float
    ci_high: float


@dataclass(frozen=True)
class SourceSignal:
    """Where the retrieved items came from (a router's or a hybrid retriever's sources)."""

    source: str
    share_of_slots: float  # share of all retrieved items that came from this source
    share_of_found: float  # share of the relevant items found that came from this source
    items: int = 0


@dataclass(frozen=True)
class Signals:
    """The numbers the rules read. ``None`` (or NaN) means "not measured": rules needing it stay silent.

    Metric means are keyed by canonical name (``recall@5``, ``precision@5``, ``ndcg@5``…).
    """

    k: int = 5
    depth: int | None = None  # the run's longest list: a shorter run passes on fewer than k chunks
    means: Mapping[str, float] = field(default_factory=dict)
    evaluated: int = 0  # gold queries evaluated
    answerable: int = 0  # of which have a relevant item
    missing_from_run: int = 0
    deep_k: int | None = None  # depth of the list used for "retrieved at all"
    deep_recall: float | None = None  # recall@deep_k (of the raw candidate list when there is one)
    deep_from_raw: bool = False  # deep_recall measures the raw (pre-rerank) candidate list
    knee: int | None = None  # the k-sweep's knee of recall@k (the report's chart marks it)
    knee_recall: float | None = None  # recall@knee
    never_found: float | None = None  # share of answerable queries with no relevant item in the whole list
    chunk_recall10: float | None = None
    doc_recall10: float | None = None
    precision_ceiling: float | None = None  # best possible precision@k given the gold set
    distinct_docs: float | None = None  # mean distinct_docs@k
    segments: tuple[SegmentSignal, ...] = ()
    floors: Mapping[str, float] = field(default_factory=dict)  # gate floors (threshold) per metric
    forbidden_queries: int = 0
    forbidden_checked: int = 0  # queries that have a must_not_retrieve list
    forbidden_examples: tuple[str, ...] = ()
    stale_queries: int = 0
    stale_checked: int = 0
    stale_examples: tuple[str, ...] = ()
    judged10: float | None = None  # judged@judged_k
    judged_k: int = 10  # 10, or the run's depth when its lists are shorter
    judged_ceiling: float | None = None  # best possible judged@judged_k: mean of min(judgements, judged_k) / judged_k
    no_answer: int = 0
    false_evidence: float | None = None
    min_score: float | None = None
    top_score_no_answer: float | None = None  # median top-1 score on no-answer queries
    top_score_answered: float | None = None  # median top-1 score where rank 1 is relevant
    raw: Mapping[str, float] = field(default_factory=dict)  # stage metrics of the raw candidate list
    final: Mapping[str, float] = field(default_factory=dict)  # the same metrics of the final list
    sources: tuple[SourceSignal, ...] = ()
    misses10: int = 0  # answerable queries with no relevant item in the top 10
    lexical_rescued: int | None = None  # of those, how many the lexical baseline has in its top 10
    lexical_label: str = "the lexical baseline"


@dataclass(frozen=True)
class Thresholds:
    """Cut-offs of the rules (shares are 0–1; gaps are absolute differences)."""

    ranked_low_gap: float = 0.15  # recall@deep − recall@k at least this
    ranked_low_problem_gap: float = 0.25
    never_found: float = 0.15  # share of queries with no relevant item retrieved at all
    chunk_split_gap: float = 0.15  # doc-level − chunk-level recall@10
    reranker_loss: float = 0.02  # final ndcg@k below raw by more than this
    segment_gap: float = 0.10  # segment mean below all queries by at least this …
    segment_min_queries: int = 5  # … over at least this many queries
    segment_floor_gap: float = 0.05  # below a gate floor counts when at least this far below all queries
    segment_max_findings: int = 5
    lexical_rescue_share: float = 0.25  # the lexical baseline finds at least this share of the misses …
    lexical_rescue_min: int = 2  # … and at least this many
    router_min_slots: float = 0.25  # a source with at least this share of slots …
    router_max_found: float = 0.05  # … that supplies at most this share of the relevant items found
    false_evidence: float = 0.5  # false-evidence rate at least this
    distractor_recall: float = 0.75  # recall@k at least this …
    distractor_precision: float = 0.30  # … while precision@k at most this
    distractor_diversity: float = 0.6  # distinct docs@k / k at most this: near-duplicates take the slots
    low_judged: float = 0.6  # judged@10 below this …
    low_judged_ratio: float = 0.6  # … and below this share of what the gold set's judgements allow


def _ok(x: float | None) -> TypeGuard[float]:
    return x is not None and not (isinstance(x, float) and math.isnan(x))


def _examples(ids: tuple[str, ...]) -> str:
    if not ids:
        return ""
    shown = ", ".join(ids[:3])
    return f" (e.g. {shown}{', …' if len(ids) > 3 else ''})"


# -- the rules ------------------------------------------------------------------------------------
def missing_queries(s: Signals, t: Thresholds) -> Finding | None:
    if s.missing_from_run < 1:
        return None
    return Finding(
        "missing_queries", "problem", "Queries missing from the run",
        f"{s.missing_from_run} of {s.evaluated} gold queries have no ranking in the run; they score 0 on every metric.",
        "Check the retrieval job for errors, timeouts or filtered queries; a query that retrieves nothing should "
        "still be written, with an empty list.",
        {"missing_from_run": s.missing_from_run, "evaluated": s.evaluated},
    )


def not_retrieved(s: Signals, t: Thresholds) -> Finding | None:
    if not _ok(s.never_found) or s.never_found < t.never_found or s.answerable == 0:
        return None
    depth = f"top {s.deep_k}" if s.deep_k else "list"
    count = round(s.never_found * s.answerable)
    return Finding(
        "not_retrieved", "problem", "The right chunks are not retrieved at all",
        f"{fmt_value('recall@1', s.never_found)} of answerable queries ({count} of {s.answerable}) have no relevant chunk "
        f"anywhere in the {depth}.",
        "This is a candidate-generation gap, not a ranking one: check that those documents are indexed (and in the "
        "right version), then try hybrid retrieval (lexical + dense), query rewriting, or a model that knows the "
        "domain's vocabulary. A reranker cannot fix what was never retrieved.",
        {"never_found": s.never_found, "answerable": s.answerable},
    )


def ranked_low(s: Signals, t: Thresholds) -> Finding | None:
    name = f"recall@{s.k}"
    rk = s.means.get(name)
    if not _ok(rk) or not _ok(s.deep_recall) or not s.deep_k or s.deep_k <= s.k:
        return None
    gap = s.deep_recall - rk
    if gap < t.ranked_low_gap:
        return None
    where = f"raw candidate recall@{s.deep_k}" if s.deep_from_raw else f"recall@{s.deep_k}"
    if s.deep_from_raw:
        advice = (f"The reranker is not lifting them into the top {s.k}: try a stronger reranker, rerank more "
                  f"candidates, or pass a larger k to the generator.")
    elif s.knee is not None and s.k < s.knee < s.deep_k:
        # the k-sweep's knee says how far a larger k pays; past it, only reranking brings the rest up
        at = f" (recall@{s.knee} {fmt_value(name, s.knee_recall)})" if _ok(s.knee_recall) else ""
        advice = (f"Pass the top {s.knee} to the generator instead of {s.k}: that is the k-sweep's knee{at}, past which "
                  f"each extra chunk adds little. The relevant chunks ranked below {s.knee} need a reranker over the "
                  f"top {s.deep_k} to reach the top {s.k}.")
    elif s.knee is not None:
        advice = (f"Try a reranker over the top {s.deep_k} to lift them into the top {s.k}. A larger k buys little here: "
                  f"the k-sweep's knee is at k = {s.knee}, and the relevant chunks sit further down.")
    else:
        advice = f"Try a reranker over the top {s.deep_k}, or pass a larger k to the generator."
    return Finding(
        "ranked_low", "problem" if gap >= t.ranked_low_problem_gap else "warning",
        "The right chunks are retrieved but ranked low",
        f"{name} {fmt_value(name, rk)} but {where} {fmt_value(name, s.deep_recall)} "
        f"({fmt_value(name, gap)} of the relevant chunks sit at ranks {s.k + 1}–{s.deep_k}).",
        advice,
        {name: rk, f"recall@{s.deep_k}": s.deep_recall, "gap": gap},
    )


def chunk_split(s: Signals, t: Thresholds) -> Finding | None:
    if not _ok(s.doc_recall10) or not _ok(s.chunk_recall10):
        return None
    gap = s.doc_recall10 - s.chunk_recall10
    if gap < t.chunk_split_gap:
        return None
    m = f"recall@{min(10, s.depth) if s.depth else 10}"  # never past the run's depth
    return Finding(
        "chunk_split", "warning", "The chunker splits answers across chunks",
        f"doc-level {m} {fmt_value(m, s.doc_recall10)} but chunk-level "
        f"{fmt_value(m, s.chunk_recall10)}: the right documents come back, the labelled chunks do not.",
        "Try larger chunks or more overlap, chunk on section boundaries, or retrieve small chunks and pass their "
        "parent section. If the labels are too narrow instead, label the other chunks that answer too.",
        {"doc_recall@10": s.doc_recall10, "chunk_recall@10": s.chunk_recall10, "gap": gap},
    )


def reranker_hurts(s: Signals, t: Thresholds) -> Finding | None:
    name = f"ndcg@{s.k}"
    raw, final = s.raw.get(name), s.final.get(name)
    if not _ok(raw) or not _ok(final) or raw - final <= t.reranker_loss:
        return None
    return Finding(
        "reranker_hurts", "problem", "The reranker makes the ranking worse",
        f"{name} of the raw candidate list {fmt_value(name, raw)}, after reranking {fmt_value(name, final)} "
        f"({fmt_delta(name, final - raw)}).",
        "Check that the reranker sees the same text the retriever indexed (titles, language), that its scores are "
        "sorted the right way round, and that it suits the domain; compare on the stage table below.",
        {f"raw {name}": raw, f"final {name}": final},
    )


def weak_segment(s: Signals, t: Thresholds) -> list[Finding]:
    """One finding per segment (all its weak metrics together), the widest gaps first."""
    weak: dict[tuple[str, str], list[tuple[float, SegmentSignal, float, bool]]] = {}
    for seg in s.segments:
        overall = s.means.get(seg.metric)
        if not _ok(overall) or not _ok(seg.mean) or seg.n < t.segment_min_queries:
            continue
        gap = overall - seg.mean
        floor = s.floors.get(seg.metric)
        clear = gap >= t.segment_gap and _ok(seg.ci_high) and seg.ci_high < overall
        # a gate floor flags a segment clearly worse than all queries whose CI reaches below the floor
        below_floor = (floor is not None and gap >= t.segment_floor_gap and _ok(seg.ci_low)
                       and seg.ci_low < floor <= overall)
        if clear or below_floor:
            weak.setdefault((seg.field, seg.label), []).append((gap, seg, overall, below_floor))
    found = []
    for (fld, label), rows in weak.items():
        parts, numbers = [], {}
        for _gap, seg, overall, below_floor in rows:
            m = seg.metric
            ci = "" if not _ok(seg.ci_low) else f", 95% CI {fmt_value(m, seg.ci_low)} to {fmt_value(m, seg.ci_high)}"
            part = f"{m} {fmt_value(m, seg.mean)} vs {fmt_value(m, overall)} overall ({seg.n} queries{ci})"
            if below_floor:
                part += f", its CI lower bound below the gate floor of {fmt_value(m, s.floors[m])}"
            parts.append(part)
            numbers[m] = seg.mean
            numbers[f"{m} overall"] = overall
        advice = "Read this segment's misses below."
        if "lang" in fld.lower():
            advice += (" For a language: check the analyzer/stemmer and the embedding model cover it, and that its "
                       "documents exist in that language (or cross-lingual retrieval is on).")
        else:
            advice += " Look for vocabulary, document types or tenants this segment needs that the index handles poorly."
        widest = max(r[0] for r in rows)
        found.append((widest, Finding("weak_segment", "warning", f"Weak segment: {fld}={label}",
                                      f"segment {fld}={label} " + "; ".join(parts) + ".", advice, numbers)))
    found.sort(key=lambda x: -x[0])
    return [f for _, f in found[: t.segment_max_findings]]


def lexical_rescue(s: Signals, t: Thresholds) -> Finding | None:
    if s.lexical_rescued is None or s.misses10 == 0:
        return None
    share = s.lexical_rescued / s.misses10
    if s.lexical_rescued < t.lexical_rescue_min or share < t.lexical_rescue_share:
        return None
    return Finding(
        "lexical_rescue", "warning", "A lexical retriever finds what this system misses",
        f"{s.lexical_label} has a relevant chunk in its top 10 for {s.lexical_rescued} of the {s.misses10} queries "
        f"this run misses ({fmt_value('recall@1', share)}).",
        "Those queries likely hinge on exact terms (names, codes, error messages). Try hybrid retrieval (fuse "
        "lexical and dense results, e.g. reciprocal rank fusion) or route such queries to the lexical index.",
        {"rescued": s.lexical_rescued, "misses": s.misses10},
    )


def router_skew(s: Signals, t: Thresholds) -> list[Finding]:
    out = []
    for src in s.sources:
        if src.share_of_slots >= t.router_min_slots and src.share_of_found <= t.router_max_found:
            out.append(Finding(
                "router_skew", "warning", f"Source {src.source} takes slots but finds little",
                f"{src.source} fills {fmt_value('recall@1', src.share_of_slots)} of the retrieved slots but supplies "
                f"{fmt_value('recall@1', src.share_of_found)} of the relevant chunks found.",
                "Check the router's rules or the fusion weights for this source; its items push better ones out of the list.",
                {"share_of_slots": src.share_of_slots, "share_of_found": src.share_of_found},
            ))
    return out


def forbidden(s: Signals, t: Thresholds) -> Finding | None:
    if s.forbidden_queries < 1:
        return None
    return Finding(
        "forbidden", "problem", "Forbidden items retrieved",
        f"{s.forbidden_queries} of {s.forbidden_checked} queries with a must_not_retrieve list retrieve one of those "
        f"items in their top {s.k}{_examples(s.forbidden_examples)}.",
        "Filter retired, superseded or other-tenant documents out at query time (metadata filter on status, version "
        "or tenant), or remove them from the index; gate on forbidden@k with max: 0.",
        {"queries": s.forbidden_queries, "checked": s.forbidden_checked},
    )


def stale(s: Signals, t: Thresholds) -> Finding | None:
    if s.stale_queries < 1:
        return None
    return Finding(
        "stale", "warning", "Items newer than the gold set's as_of date retrieved",
        f"{s.stale_queries} of {s.stale_checked} queries with an as_of date retrieve items whose doc_version is newer"
        f"{_examples(s.stale_examples)}.",
        "The corpus moved on since these queries were labelled: the labels may miss the newer documents. Re-judge "
        "these queries against the current corpus (the report's stale table lists them); if the index should not hold "
        "those versions yet, filter by version.",
        {"queries": s.stale_queries, "checked": s.stale_checked},
    )


def false_evidence(s: Signals, t: Thresholds) -> Finding | None:
    if s.no_answer < 1 or not _ok(s.false_evidence) or s.false_evidence < t.false_evidence:
        return None
    line = "any returned item counts (no confidence line set)" if s.min_score is None else f"score ≥ {fmt_sig(s.min_score)}"
    count = round(s.false_evidence * s.no_answer)
    numbers: dict[str, float] = {"false_evidence": s.false_evidence, "no_answer": s.no_answer}
    advice = "Give unanswerable questions no context: add a score cut-off or an answerability check before generation."
    if _ok(s.top_score_no_answer) and _ok(s.top_score_answered):
        numbers.update(top_score_no_answer=s.top_score_no_answer, top_score_answered=s.top_score_answered)
        if s.top_score_no_answer < s.top_score_answered:
            advice += (f" Median top score is {fmt_sig(s.top_score_no_answer, 3)} on no-answer queries vs "
                       f"{fmt_sig(s.top_score_answered, 3)} where rank 1 is relevant: try a line between them "
                       f"(--min-score) and watch recall.")
        else:
            advice += (f" Scores do not separate them (median top score {fmt_sig(s.top_score_no_answer, 3)} on no-answer "
                       f"queries vs {fmt_sig(s.top_score_answered, 3)} on answered ones): a score cut-off will not work; "
                       "consider an answerability classifier.")
    return Finding(
        "false_evidence", "warning", "No-answer queries get confident evidence",
        f"{count} of {s.no_answer} no-answer queries ({fmt_value('false_evidence', s.false_evidence)}) retrieve "
        f"evidence: {line}.",
        advice, numbers,
    )


def distractors(s: Signals, t: Thresholds) -> Finding | None:
    r, p = s.means.get(f"recall@{s.k}"), s.means.get(f"precision@{s.k}")
    if not _ok(r) or not _ok(p):
        return None
    # a run shorter than k passes on only `passed` chunks: its empty slots are not distractors
    passed = min(s.k, s.depth) if s.depth else s.k
    share = p * s.k / passed
    if r < t.distractor_recall or share > t.distractor_precision:
        return None
    evidence = (f"precision@{s.k} {fmt_value('precision@1', p)} while recall@{s.k} {fmt_value('recall@1', r)}: about "
                f"{round((1 - share) * passed)} of the {passed} chunks passed on are not relevant")
    if _ok(s.precision_ceiling):
        evidence += f" (with this gold set's labels at most {fmt_value('precision@1', s.precision_ceiling)} could be)"
    numbers = {f"recall@{s.k}": r, f"precision@{s.k}": p}
    low_diversity = _ok(s.distinct_docs) and s.distinct_docs / s.k <= t.distractor_diversity
    if _ok(s.distinct_docs):
        numbers[f"distinct_docs@{s.k}"] = s.distinct_docs
        evidence += f"; distinct docs@{s.k} is {fmt_score(s.distinct_docs, 1)} of {s.k}"
    if low_diversity:
        advice = ("Check diversity: near-duplicate chunks of the same documents take the slots. Deduplicate by "
                  "document or use MMR so the other slots carry something new.")
    else:
        advice = ("Check diversity and distractors: the other slots are other documents. If the generator is "
                  "distracted by them, pass fewer chunks (a reranker score cut-off or a smaller k).")
    return Finding("distractors", "warning" if low_diversity else "info",
                   "Most of the context is distractors", evidence + ".", advice, numbers)


def low_judged(s: Signals, t: Thresholds) -> Finding | None:
    # A sparse gold set (one label per query) caps judged@10 at 10%: only a shortfall against that cap
    # says the system retrieves what the annotators never saw.
    if not _ok(s.judged10) or not _ok(s.judged_ceiling) or s.judged_ceiling <= 0:
        return None
    if s.judged10 >= t.low_judged or s.judged10 >= t.low_judged_ratio * s.judged_ceiling:
        return None
    jk = f"judged@{s.judged_k}"
    return Finding(
        "low_judged", "warning", "The gold set is going stale",
        f"only {fmt_value(jk, s.judged10)} of the top {s.judged_k} has a judgement ({jk}), where the gold set's "
        f"judgements would allow {fmt_value(jk, s.judged_ceiling)}; unjudged items count as not relevant, "
        "so these scores may understate the system.",
        "Judge the unjudged items that this system ranks high (the top-k items without a grade), especially after a "
        "corpus or index change.",
        {jk: s.judged10, "ceiling": s.judged_ceiling},
    )


Rule = Callable[[Signals, Thresholds], "Finding | list[Finding] | None"]
RULES: tuple[tuple[str, Rule], ...] = (
    ("missing_queries", missing_queries),
    ("not_retrieved", not_retrieved),
    ("ranked_low", ranked_low),
    ("chunk_split", chunk_split),
    ("reranker_hurts", reranker_hurts),
    ("weak_segment", weak_segment),
    ("lexical_rescue", lexical_rescue),
    ("router_skew", router_skew),
    ("forbidden", forbidden),
    ("stale", stale),
    ("false_evidence", false_evidence),
    ("distractors", distractors),
    ("low_judged", low_judged),
)


def diagnose(signals: Signals, thresholds: Thresholds | None = None) -> tuple[Finding, ...]:
    """Every finding the rules make from ``signals``, problems first, then in rule order."""
    t = thresholds or Thresholds()
    out: list[Finding] = []
    for _, rule in RULES:
        got = rule(signals, t)
        if got is None:
            continue
        out.extend(got if isinstance(got, list) else [got])
    return tuple(sorted(out, key=lambda f: SEVERITIES.index(f.severity)))
