"""Golden files for the markdown panel (``rankgate evaluate --markdown``) and the rich terminal panel."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from rankgate.stats.paired import compare
from rankgate.model.results import EvaluationResult
from rankgate.stats.segments import segment_summary
from rankgate.stats.sweep import KSweep, SweepCurve

GOLDEN = Path(__file__).parent / "golden"
UPDATE = bool(os.environ.get("RANKGATE_UPDATE_GOLDEN"))


def fixed_result(shift: float = 0.0) -> EvaluationResult:
    nan = float("nan")
    values = {
        "recall@5": np.array([1.0, 0.5, 0.0, 1.0, nan]) - shift,
        "precision@5": np.array([0.4, 0.2, 0.0, 0.2, nan]),
        "ndcg@5": np.array([0.9, 0.4, 0.0, 1.0, nan]),
        "distinct_docs@5": np.array([5.0, 4.0, 3.0, 5.0, 2.0]),
        "mrr": np.array([1.0, 0.5, 0.0, 1.0, nan]),
    }
    return EvaluationResult(
        query_ids=("q1", "q2", "q3", "q4", "q5"),
        metric_names=tuple(values),
        values=values,
        fields={"intent": ("billing", "billing", "how_to", "how_to", None)},
        first_relevant_rank=np.array([1, 2, 0, 1, 0]),
        missing_from_run=("q3",),
        no_answer=("q5",),
        info={"latency_ms": {"retrieve": [10.0, 20.0, None, 30.0, 40.0], "rerank": [5.0, 5.0, None, 6.0, 8.0]}},
    )


CIS = {"recall@5": (0.25, 1.0), "precision@5": (0.05, 0.35), "ndcg@5": (0.2, 0.95), "distinct_docs@5": (3.0, 5.0),
       "mrr": (0.25, 1.0)}


def check(name: str, text: str) -> None:
    path = GOLDEN / name
    if UPDATE:
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"{name} changed; set RANKGATE_UPDATE_GOLDEN=1 to accept"


def test_markdown_panel_golden():
    from rankgate.render.markdown import evaluation_markdown

    res = fixed_result()
    segs = segment_summary(res, "intent", resamples=0)
    sweep = KSweep((1, 5), (SweepCurve("recall", ("recall@1", "recall@5"), (0.5, 0.625), (4, 4), (np.nan,) * 2,
                                       (np.nan,) * 2, 0.5625),))
    check("report_markdown.md", evaluation_markdown(res, CIS, 0.95, segments=segs, sweep=sweep))


def test_markdown_without_cis():
    from rankgate.render.markdown import evaluation_markdown

    text = evaluation_markdown(fixed_result(), None)
    assert "| metric | mean | n |" in text and "CI" not in text.split("\n\n")[1]


def test_terminal_panel_golden():
    from rich.console import Console

    from rankgate.render.panel import retrieval_panel

    base, cand = fixed_result(0.5), fixed_result()
    cmp = compare(base, cand, resamples=0, n_permutations=0)
    console = Console(width=130, record=True, color_system=None, force_terminal=False)
    console.print(retrieval_panel(cand, CIS, comparison=cmp))
    check("report_panel.txt", console.export_text())
