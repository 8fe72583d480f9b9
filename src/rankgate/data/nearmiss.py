"""Near-misses of text matching: a retrieved text that is not a reference text but almost is.

Contexts known only by their texts are matched exactly (:func:`rankgate.data.shapes.normalise_text`):
a chunk that lost its final period, or was re-chunked one word shorter, is another item and scores 0.
That rule stays (the numbers are exact and reproducible); this module finds such pairs so that the
zeros are explained: for each query, every relevant reference text that was not retrieved is
compared with every retrieved text that is not judged, and a pair whose normalised texts are within
a small edit distance is a near-miss. The numbers are not changed.

Bounded: texts are compared only when their lengths are close; the common start and end are
skipped and the edit distance is computed on what is left, at most :data:`MAX_MIDDLE` characters
each; at most :data:`MAX_PAIRS` pairs are compared in one evaluation (then the count says so).
"""

from __future__ import annotations

from typing import Any

from .models import Gold, Run
from .shapes import normalise_text

__all__ = ["MAX_PAIRS", "near_distance", "near_miss_line", "near_misses"]

MAX_PAIRS = 20_000  # pairs of texts compared in one evaluation
MAX_MIDDLE = 256  # characters left after the common start and end, per text
MAX_EXAMPLES = 5  # kept in summary.json
SHOWN = 3  # shown in the line


def allowed_distance(length: int) -> int:
    """The largest edit distance that is still a near-miss for texts about ``length`` long: 1 per 20
    characters, at least 1 and at most 3 (a lost period, a changed dash, a word re-chunked)."""
    return max(1, min(3, length // 20))


def near_distance(a: str, b: str, limit: int) -> int | None:
    """The edit distance (Levenshtein) of ``a`` and ``b`` when it is at most ``limit``, else None."""
    if abs(len(a) - len(b)) > limit:
        return None
    start = 0
    top = min(len(a), len(b))
    while start < top and a[start] == b[start]:
        start += 1
    end = 0
    while end < top - start and a[len(a) - 1 - end] == b[len(b) - 1 - end]:
        end += 1
    x, y = a[start:len(a) - end], b[start:len(b) - end]
    if len(x) > MAX_MIDDLE or len(y) > MAX_MIDDLE:
        return None
    previous = list(range(len(y) + 1))
    for i, cx in enumerate(x, start=1):
        current = [i] + [0] * len(y)
        for j, cy in enumerate(y, start=1):
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (cx != cy))
        if min(current) > limit:
            return None
        previous = current
    d = previous[-1]
    return d if d <= limit else None


def near_misses(g: Gold, r: Run) -> dict[str, Any] | None:
    """Near-misses between the reference texts of ``g`` and the retrieved texts of ``r`` (both matched
    by text: ``t:`` ids), or None when there are none or the inputs hold no texts to compare."""
    texts = r.items.get("text")
    if not g.notes or not texts:
        return None
    relevant: dict[str, dict[str, tuple[str, str]]] = {}  # query id -> {reference id: (normalised, as given)}
    judged: dict[str, set[str]] = {}
    docs = g.j_doc.to_pylist()
    for qi, d, grade, note in zip(g.j_query.tolist(), docs, g.j_grade.tolist(), g.notes):
        qid = g.query_ids[qi]
        judged.setdefault(qid, set()).add(d)
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
