"""Near-misses of text matching: a retrieved text that is not a reference text but almost is.

Contexts known only by their texts are matched exactly (:func:`rankgate.io.shapes.normalise_text`):
a chunk that lost its final period, or was re-chunked one word shorter, is another item and scores 0.
That rule stays (the numbers are exact and reproducible); this module finds such pairs so that the
zeros are explained: for each query, every relevant reference text that was not retrieved is
compared with every retrieved text that is not judged, and a pair whose normalised texts are within
a small edit distance is a near-miss. The numbers are not changed.

Bounded: texts are compared only when their lengths are close; the common start and end are
skipped and the edit distance is computed on what is left (at most :data:`MAX_MIDDLE` characters
each, within a band around the diagonal); at most :data:`MAX_PAIRS` pairs are compared in one
evaluation (then the line says so).
"""

from __future__ import annotations

from typing import Any

from rankgate.model.gold_run import Gold, Run
from rankgate.io.shapes import normalise_text

__all__ = ["MAX_PAIRS", "near_distance", "near_miss_line", "near_misses"]

MAX_PAIRS = 5_000  # pairs of texts compared in one evaluation
MAX_MIDDLE = 128  # characters left after the common start and end, per text
MAX_EXAMPLES = 5  # kept in summary.json
SHOWN = 3  # shown in the line


def allowed_distance(length: int) -> int:
    """The largest edit distance that is still a near-miss for texts about ``length`` long: 1 per 20
    characters, at least 1 and at most 3 (a lost period, a changed dash, a word re-chunked)."""
    return max(1, min(3, length // 20))


def _common_prefix(a: str, b: str) -> int:
    """The length of the longest common start of ``a`` and ``b`` (a binary search of slice comparisons,
    which run in C: long texts that share most of their length cost no per-character loop)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def near_distance(a: str, b: str, limit: int) -> int | None:
    """The edit distance (Levenshtein) of ``a`` and ``b`` when it is at most ``limit``, else None."""
    if abs(len(a) - len(b)) > limit:
        return None
    start = _common_prefix(a, b)
    end = _common_prefix(a[start:][::-1], b[start:][::-1])
    x, y = a[start:len(a) - end], b[start:len(b) - end]
    if len(x) > MAX_MIDDLE or len(y) > MAX_MIDDLE:
        return None
    # Levenshtein within a band of ``limit`` cells around the diagonal (a cell outside it is more than
    # ``limit`` edits away): at most MAX_MIDDLE * (2 * limit + 1) cells per pair.
    far = limit + 1
    previous = [j if j <= limit else far for j in range(len(y) + 1)]
    for i in range(1, len(x) + 1):
        lo, hi = max(1, i - limit), min(len(y), i + limit)
        current = [far] * (len(y) + 1)
        current[0] = i if i <= limit else far
        cx = x[i - 1]
        for j in range(lo, hi + 1):
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (cx != y[j - 1]), far)
        if min(current[lo - 1:hi + 1]) > limit:
            return None
        previous = current
    d = previous[-1]
    return d if d <= limit else None


def compares_texts(g: Gold) -> bool:
    """Whether :func:`near_misses` may find anything for ``g`` in some run: a judgement matched by text
    (a ``t:`` id) has its reference text (a note). Else a run's texts need not be read for it."""
    if not g.notes:
        return False
    noted = [i for i, note in enumerate(g.notes) if isinstance(note, str)]
    return any(str(g.j_doc[i].as_py()).startswith("t:") for i in noted)


def near_misses(g: Gold, r: Run) -> dict[str, Any] | None:
    """Near-misses between the reference texts of ``g`` and the retrieved texts of ``r`` (both matched
    by text: ``t:`` ids), or None when there are none or the inputs hold no texts to compare."""
    texts = r.items.get("text")
    if not g.notes or not texts:
        return None
    import numpy as np

    noted = np.array([i for i, note in enumerate(g.notes) if isinstance(note, str)], dtype=np.int64)
    if not noted.size:
        return None
    # (only the judgements with a text, one by one: a gold set of ids has none; no compute kernel, as
    # pyarrow's would import pandas)
    by_text = [i for i in noted.tolist() if str(g.j_doc[i].as_py()).startswith("t:")]
    if not by_text:
        return None
    queries_by_text = set(g.j_query[by_text].tolist())
    relevant: dict[str, dict[str, tuple[str, str]]] = {}  # query id -> {reference id: (normalised, as given)}
    judged: dict[str, set[str]] = {}
    rows = np.flatnonzero(np.isin(g.j_query, list(queries_by_text)))
    for i, qi, grade in zip(rows.tolist(), g.j_query[rows].tolist(), g.j_grade[rows].tolist()):
        qid, d = g.query_ids[qi], g.j_doc[i].as_py()
        judged.setdefault(qid, set()).add(d)
        note = g.notes[i]
        if grade >= 1 and isinstance(note, str) and isinstance(d, str) and d.startswith("t:"):
            relevant.setdefault(qid, {})[d] = (normalise_text(note), note)
    if not relevant:
        return None
    retrieved: dict[str, list[tuple[str, str, str]]] = {}  # query id -> [(id, normalised, as given)]
    got: dict[str, set[str]] = {}
    for qi, d, text in zip(r.r_query.tolist(), r.r_doc.to_pylist(), texts):
        qid = r.query_ids[qi]
        got.setdefault(qid, set()).add(d)
        if qid in relevant and isinstance(text, str) and isinstance(d, str) and d.startswith("t:") \
                and d not in judged.get(qid, ()):
            retrieved.setdefault(qid, []).append((d, normalise_text(text), text))
    queries = dict(zip(g.query_ids, g.field("query")))
    count, compared, capped = 0, 0, False
    examples: list[dict[str, Any]] = []
    for qid, refs in relevant.items():
        if capped:
            break
        for ref_id, (ref, ref_shown) in refs.items():
            if ref_id in got.get(qid, ()):
                continue
            for _, text, shown in retrieved.get(qid, ()):
                if compared >= MAX_PAIRS:
                    capped = True
                    break
                compared += 1
                d = near_distance(text, ref, allowed_distance(max(len(text), len(ref))))
                if d is None:
                    continue
                count += 1
                if len(examples) < MAX_EXAMPLES:
                    examples.append({"query_id": qid, "query": queries.get(qid), "retrieved": shown,
                                     "reference": ref_shown, "distance": d})
            if capped:
                break
    if not count and not capped:
        return None
    return {"count": count, "pairs_compared": compared, "capped": capped, "examples": examples}


def _cut(text: str, limit: int = 70) -> str:
    return text if len(text) <= limit else "…" + text[-(limit - 1):]


def near_miss_line(found: dict[str, Any] | None) -> str | None:
    """One sentence about the near-misses (for the terminal and reports), or None."""
    if not found or not found.get("count"):
        if found and found.get("capped"):
            return (f"near-misses of text matching not checked past {found['pairs_compared']:,} pairs of texts "
                    "(the cap of one evaluation)")
        return None
    n = found["count"]
    shown = []
    for ex in found["examples"][:SHOWN]:
        who = ex["query"] or ex["query_id"]
        shown.append(f"for {_cut(who, 60)!r}: retrieved {_cut(ex['retrieved'])!r}, reference {_cut(ex['reference'])!r}")
    more = n - len(shown)
    line = (f"{n} retrieved {'text differs' if n == 1 else 'texts differ'} from a reference text only slightly "
            f"(edit distance up to 3 after normalising), so {'it counts' if n == 1 else 'they count'} as not relevant: "
            f"probably the same chunk, re-chunked or re-punctuated. E.g. " + "; ".join(shown)
            + (f"; {more} more" if more > 0 else ""))
    if found.get("capped"):
        line += f" (checked the first {found['pairs_compared']:,} pairs of texts only)"
    return line
