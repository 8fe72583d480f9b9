"""The scales a person labels on: three relevance scales, and the verdicts of an answer.

A relevance queue defaults to ``0-2``, the judge's scale (``judges/prompts/context_relevance.md``), so that the
labels calibrate the judge as they are; ``0-3`` is the scale of graded gold sets (TREC's); ``binary`` is relevant or
not. An answer queue is labelled with two verdicts per card, ``faithful`` (the answer says only what its context
supports; no statement at all is ``null``) and ``correct`` (it agrees with the reference; ``null`` without one), the
fields ``rankgate answers --human`` reads.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SCALES", "Scale", "scale_named"]


@dataclass(frozen=True)
class Scale:
    name: str
    kind: str                                # "grade" (relevance) or "verdict" (answers)
    grades: tuple[tuple[int, str], ...]      # (key pressed = grade, what it means), lowest first

    @property
    def top(self) -> int:
        return self.grades[-1][0]

    def accepts(self, grade: object) -> bool:
        return isinstance(grade, int) and not isinstance(grade, bool) and any(g == grade for g, _ in self.grades)


SCALES: dict[str, Scale] = {
    "0-2": Scale("0-2", "grade", ((0, "not relevant"), (1, "on topic, no answer"), (2, "holds the answer"))),
    "0-3": Scale("0-3", "grade", ((0, "not relevant"), (1, "related"), (2, "relevant"), (3, "answers it fully"))),
    "binary": Scale("binary", "grade", ((0, "not relevant"), (1, "relevant"))),
    # the keys of each verdict: 1 yes, 0 no, 2 neither (no statement to check / no reference to check against)
    "verdict": Scale("verdict", "verdict", ((0, "no"), (1, "yes"), (2, "no statement"))),
}


def scale_named(name: str) -> Scale:
    from rankgate.errors import UsageError

    if name not in SCALES:
        raise UsageError(f"scale must be one of {', '.join(SCALES)}; got {name!r}")
    return SCALES[name]
