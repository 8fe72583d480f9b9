"""``rankgate label agreement`` as text: each pair of annotators, everyone (Fleiss), each annotator against the judge,
and the items they disagree on."""

from __future__ import annotations

from rankgate.labels.agreement import Agreement, PairAgreement
from rankgate.render.numbers import fmt_confidence, fmt_count, fmt_score, fmt_share

__all__ = ["agreement_text", "kappa_words"]


def kappa_words(kappa: float | None) -> str:
    """Landis and Koch's words for a κ: a reading aid, not a verdict."""
    if kappa is None or kappa != kappa:
        return "not measurable"
    for bound, word in ((0.0, "poor"), (0.2, "slight"), (0.4, "fair"), (0.6, "moderate"), (0.8, "substantial")):
        if kappa <= bound:
            return word
    return "almost perfect"


def _ci(ci: tuple[float, float]) -> str:
    return f"[{fmt_score(ci[0], 2)}, {fmt_score(ci[1], 2)}]"


def _pair_line(p: PairAgreement, conf: str) -> str:
    return (f"  {p.first} · {p.second}: {fmt_count(p.n)} items, {fmt_share(p.agreement)} equal, κ {fmt_score(p.kappa, 2)} "
            f"{conf} {_ci(p.kappa_ci)} ({kappa_words(p.kappa)})")


def agreement_text(a: Agreement) -> str:
    conf = fmt_confidence(a.confidence)
    lines = [f"{fmt_count(a.labels)} labels by {fmt_count(len(a.annotators))} annotators "
             f"({', '.join(a.annotators) or 'none'}), scale {a.scale}"]
    for f in a.facets:
        weights = f"{f.weights}-weighted" if f.weights else "unweighted"
        title = "grades" if f.name == "grade" else f"'{f.name}'"
        lines.append("")
        lines.append(f"Agreement on {title} (Cohen's κ {weights}; intervals {conf}, bootstrap over items):")
        if not f.pairs:
            lines.append("  no item was labelled by two annotators (serve with --overlap to share some)")
        lines += [_pair_line(p, conf) for p in f.pairs]
        if f.fleiss_items:
            lines.append(f"  everyone (Fleiss' κ, unweighted): {fmt_count(f.fleiss_items)} items, "
                         f"κ {fmt_score(f.fleiss, 2)} {conf} {_ci(f.fleiss_ci)} ({kappa_words(f.fleiss)})")
        if f.judge:
            lines.append("  against the judge:")
            lines += ["  " + _pair_line(p, conf) for p in f.judge]
        if f.disagreements:
            lines.append(f"  items they disagree on (widest first, {fmt_count(len(f.disagreements))} shown):")
            for d in f.disagreements:
                given = ", ".join(f"{who} {value}" for who, value in d["labels"].items())
                item = f"{d['query_id']}/{d['id']}" if d["id"] else str(d["query_id"])
                lines.append(f"    {item}: {given}")
    return "\n".join(lines) + "\n"
