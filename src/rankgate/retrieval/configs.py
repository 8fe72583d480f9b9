"""Named retriever configurations, including the two that ``rankgate demo`` compares.

The demo tells a story every team that ships multilingual search meets sooner or later:

* **baseline** ``bm25-multilingual``: BM25 with per-language analysis. Each chunk is stemmed and
  stopword-filtered in its own language (its ``lang`` field), each query in the reader's locale (its
  ``tags.lang``), English when unknown. Titles are prepended to chunk text.
* **candidate** ``bm25-english`` (the "pull request"): "simplify analysis to one English analyser".
  One stemmer, one stopword list, no locale plumbing; English is most of the traffic and its results
  hold up or get slightly better. German and Spanish words are no longer stemmed in their own
  language, so "Rechnungen" stops matching "Rechnung": the German segment regresses clearly while
  the overall mean moves little. A gate that checks segments catches it; one on the overall mean
  does not.

Measured on the built-in demo data (136 answerable queries: 79 English, 39 German, 18 Spanish),
recall@5 baseline → candidate: overall 0.831 → 0.801, English 0.797 → 0.797, German 0.872 → 0.782,
Spanish 0.889 → 0.861; nDCG@10 overall 0.769 → 0.744, English 0.743 → 0.756, German 0.806 → 0.700.
``tests/test_retrieval.py`` keeps these numbers honest.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rankgate.retrieval.base import Retriever
from rankgate.retrieval.presets import DEMO

__all__ = ["RetrieverConfig", "demo_configs"]


@dataclass(frozen=True)
class RetrieverConfig:
    """A named retriever setup: which retriever, with which options, and why."""

    name: str
    retriever: str
    options: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""

    def build(self, **overrides: Any) -> Retriever:
        """A fresh retriever with these options (``overrides`` win); its run records say ``name``."""
        from rankgate.retrieval.registry import get_retriever

        options = {"name": self.name, **self.options, **overrides}
        return get_retriever(self.retriever, **options)


def demo_configs() -> dict[str, RetrieverConfig]:
    """The demo's ``{"baseline": …, "candidate": …}`` configurations (see the module docstring)."""
    return {role: RetrieverConfig(**{**fields, "options": dict(fields["options"])}) for role, fields in DEMO.items()}
