"""The terminal view of an evaluation: the retrieval panel, then what was (not) evaluated.

Run it to see it: ``python -m rankgate.render.terminal gold.jsonl run.jsonl``.
"""

from __future__ import annotations

from rankgate.model.results import EvaluationResult
from rankgate.render.lines import coverage_lines

__all__ = ["coverage_lines", "print_evaluation"]  # coverage_lines: re-exported from .lines


def print_evaluation(result: EvaluationResult, cis=None, confidence: float = 0.95, console=None) -> None:
    """The retrieval panel with every requested metric, then what was (not) evaluated."""
    from rich.console import Console

    from rankgate.render.panel import retrieval_panel

    console = console or Console()
    console.print(retrieval_panel(result, cis, confidence, metrics=list(result.metric_names), title=None))
    console.print()
    for line in coverage_lines(result):
        console.print(line, highlight=False, markup=False)


if __name__ == "__main__":  # pragma: no cover
    import sys

    from rankgate.scoring.engine import evaluate

    print_evaluation(evaluate(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "recall@5,mrr,ndcg@10"))
