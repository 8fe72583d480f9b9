"""Which ranking of a run a metric is read on, and how its rows are named.

A run record may carry two rankings of one query: ``topk``, the final list (after reranking), and
``raw_topk``, the raw candidates the retriever handed to the reranker. Recall@50 of the raw
candidates says whether the reranker had a chance; nDCG@10 of the final list whether it used it.

A metric of the final list keeps its plain name (``ndcg@10``); a metric of the raw candidates is
named ``recall@50 (raw)`` in every output (terminal, markdown, CSV, ``summary.json``, the gate's
outcome and the Python result), so a row can never be read as the other ranking's. This module is the
one place that writes and reads that name; :func:`rankgate.metrics.info.metric_info` reads a ranked
name as its metric.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["FINAL", "RANKINGS", "RAW", "RAW_FIELD", "RAW_SUFFIX", "ranked_metrics", "ranked_name", "split_ranked"]

FINAL = "final"
RAW = "raw"
#: The rankings a metric can be read on (``--ranking``, a gate's ``ranking:``), the default first.
RANKINGS = (FINAL, RAW)
#: The run record's field holding the raw candidate list.
RAW_FIELD = "raw_topk"
RAW_SUFFIX = " (raw)"


def ranked_name(metric: str, ranking: str = FINAL) -> str:
    """The row name of ``metric`` read on ``ranking``: the metric itself for the final list,
    ``recall@50 (raw)`` for the raw candidates."""
    base, _ = split_ranked(metric)
    return base + RAW_SUFFIX if ranking == RAW else base


def split_ranked(name: str) -> tuple[str, str]:
    """``(metric, ranking)`` of a row name: ``recall@50 (raw)`` is ``("recall@50", "raw")``, any other
    name is itself on the final list."""
    if name.endswith(RAW_SUFFIX):
        return name[: -len(RAW_SUFFIX)].rstrip(), RAW
    return name, FINAL


def ranked_metrics(metrics: Iterable[str], ranking: str) -> list[str]:
    """The row names of ``metrics`` for ``--ranking``: ``final`` keeps them, ``raw`` names each on the
    raw candidates, ``both`` gives the final rows, then the raw ones."""
    names = [split_ranked(m)[0] for m in metrics]
    if ranking == "both":
        return list(dict.fromkeys([*names, *(ranked_name(m, RAW) for m in names)]))
    return list(dict.fromkeys(ranked_name(m, ranking) for m in names))
