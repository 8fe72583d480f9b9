"""An evaluation as GitHub-flavoured markdown: the retrieval panel, latency, coverage, segments, k-sweep.

Numbers are written as in the PR comment (:mod:`rankgate.render.numbers`): shares as percentages,
scores with three decimals. Same inputs ⇒ the same text, so it can be pasted into a PR or diffed.

Run it to see it: ``python -m rankgate.render.markdown gold.jsonl run.jsonl``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

from rankgate.model.results import EvaluationResult
from rankgate.render.lines import coverage_lines, latency_lines
from rankgate.render.numbers import fmt_confidence, fmt_value, fmt_value_ci, md_escape

if TYPE_CHECKING:  # pragma: no cover
    from rankgate.stats.segments import SegmentSummary
    from rankgate.stats.sweep import KSweep

__all__ = ["evaluation_markdown", "latency_lines"]  # latency_lines: re-exported from .lines


def evaluation_markdown(
    result: EvaluationResult,
    cis: Mapping[str, tuple[float, float]] | None,
    confidence: float = 0.95,
    segments: SegmentSummary | None = None,
    sweep: KSweep | None = None,
) -> str:
    """The evaluation as markdown: a table of every metric (mean, interval, n), then latency, what was
    (not) evaluated, and the segment and k-sweep tables when given."""
    from rankgate.render.sections import SECTION

    conf = f"{fmt_confidence(confidence)} CI"
    lines = ["## Retrieval", ""]
    if cis:
        lines += [f"| metric | mean | {conf} | n |", "|:--|--:|--:|--:|"]
    else:
        lines += ["| metric | mean | n |", "|:--|--:|--:|"]
    for name in result.metric_names:
        s = result.summary(name)
        # a metric name is plain text from the registry's grammar: safe in a code span
        cells = [f"`{name}`" if not set(name) & set("`|<>") else md_escape(name), fmt_value(name, s.mean)]
        if cis:
            low, high = cis.get(name, (math.nan, math.nan))
            cells.append(fmt_value_ci(name, low, high))
        cells.append(str(s.n))
        lines.append("| " + " | ".join(cells) + " |")
    lat = latency_lines(result)
    if lat:
        lines += ["", "**Latency** " + "; ".join(lat)]
    lines += [""] + [f"- {md_escape(line, 300)}" for line in coverage_lines(result)]
    for key, part in (("segments", segments), ("sweep", sweep)):
        if part is not None:
            lines += ["", SECTION[key].markdown(part, confidence).rstrip("\n")]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # pragma: no cover
    import sys

    from rankgate.scoring.engine import evaluate
    from rankgate.stats.bootstrap import metric_cis

    res = evaluate(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "recall@5,precision@5,ndcg@5,mrr")
    sys.stdout.write(evaluation_markdown(res, metric_cis(res)))
