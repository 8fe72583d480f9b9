"""The metric names of the sample contract (``retrieval-hit-at-k`` …), as rankgate metrics.

Teams that score retrieval with the published sample contract name their metrics
``retrieval-hit-at-k``, ``retrieval-recall-at-k``, ``retrieval-mrr``, ``retrieval-ndcg-at-k`` and
``answer-containment-at-k``. Each is one of rankgate's metrics with the contract's rule for k: the
sample's own ``metadata.k``, else the command's k (``--k``, the ship criteria's ``evaluate.k``;
default 5). Unlike rankgate's own names these take no ``@k``: the rule above is the whole of their
cutoff, so ``retrieval-mrr`` is MRR cut at each sample's k (not trec_eval's ``recip_rank``) and
``retrieval-ndcg-at-k`` is nDCG with linear gains cut at each sample's k.

The registered names are identifiers (``retrieval_hit_at_k``); the hyphenated spellings are aliases,
and output columns use the registered names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rankgate.metrics.registry import MetricDefinition, get_metric, register
from rankgate.metrics.spec import Metric

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from rankgate.metrics.context import EvalContext, QueryView

__all__ = ["CONTRACT_METRICS"]

K_RULE = "k: the sample's metadata.k, else the command's k (default 5)"


class _Contract(MetricDefinition):
    """A contract name for ``base`` with the base's defaults and the per-sample rule for k."""

    base: ClassVar[str]
    cutoff = "query_k"
    per_sample_k: ClassVar[bool] = True  # no @k: see the module docs

    def _base(self) -> Metric:
        return Metric(self.base)

    def compute(self, ctx: EvalContext, metric: Metric, k: np.ndarray) -> np.ndarray:
        return get_metric(self.base).compute(ctx, self._base(), k)

    def reference(self, q: QueryView, metric: Metric, k: int | None) -> float:
        return get_metric(self.base).reference(q, self._base(), k)

    def describe(self, metric: Metric) -> str:
        return f"{self.name}: {get_metric(self.base).summary} [{K_RULE}]"


@register
class RetrievalHit(_Contract):
    name = "retrieval_hit_at_k"
    aliases = ("retrieval-hit-at-k",)
    base = "hit"
    summary = "1 if any relevant item is in the top k, else 0 (rankgate hit)."
    formula = f"hit@k = 1[|D_k ∩ G| > 0]; {K_RULE}"


@register
class RetrievalRecall(_Contract):
    name = "retrieval_recall_at_k"
    aliases = ("retrieval-recall-at-k",)
    base = "recall"
    summary = "Share of the relevant items found in the top k (rankgate recall)."
    formula = f"recall@k = |D_k ∩ G| / |G|; {K_RULE}"


@register
class RetrievalMRR(_Contract):
    name = "retrieval_mrr"
    aliases = ("retrieval-mrr",)
    base = "mrr"
    unit = "score"
    summary = "Reciprocal rank of the first relevant item within k, 0 if none (rankgate mrr@k)."
    formula = f"mrr@k = 1 / min{{i <= k : d_i ∈ G}}; {K_RULE}"


@register
class RetrievalNDCG(_Contract):
    name = "retrieval_ndcg_at_k"
    aliases = ("retrieval-ndcg-at-k",)
    base = "ndcg"  # linear gains, the default
    unit = "score"
    summary = "nDCG of the top k with linear gains (rankgate ndcg@k)."
    formula = f"ndcg@k = DCG@k / IDCG@k, gain g, discount log2(i+1); {K_RULE}"


@register
class AnswerContainment(_Contract):
    name = "answer_containment_at_k"
    aliases = ("answer-containment-at-k",)
    base = "containment"
    applies = "all"
    needs = frozenset({"text"})
    summary = "1 if the sample's expected_answer appears in the text of some top-k item (rankgate containment)."
    formula = f"containment@k = 1[∃ d ∈ D_k : norm(expected_answer) ⊂ norm(text(d))]; {K_RULE}"


CONTRACT_METRICS = ("retrieval_hit_at_k", "retrieval_recall_at_k", "retrieval_mrr", "retrieval_ndcg_at_k",
                    "answer_containment_at_k")
