"""The unjudged items of several runs' top-k, with texts, to be labelled (see :mod:`rankgate.stats.pooling`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rankgate.flows._inputs import FilePath, paths


@dataclass(frozen=True, slots=True)
class PoolRequest:
    gold: str
    runs: tuple[str, ...]               # runs whose top items are pooled
    depth: int = 10                     # items of each run's ranking pooled
    corpus: str | None = None           # manifest: texts of items the runs did not log
    ties: str | None = None

    def inputs(self) -> tuple[FilePath, ...]:
        """The files the request reads (an output may be none of them): the gold set, the runs and the corpus
        manifest."""
        return paths(self.gold, *self.runs, self.corpus)

    def __post_init__(self) -> None:
        from rankgate._util.constraints import FILE, PATHS, TEXT, check_fields, typed
        from rankgate.errors import F, UsageError

        # the types here (a UsageError naming the field; one path is one run, not its letters), the bounds below
        check_fields(self, "PoolRequest", runs=typed(PATHS), depth=typed(int), corpus=FILE, ties=TEXT)
        if self.depth < 1:
            raise UsageError(f"{F.depth} must be a positive integer; got {self.depth}")


@dataclass(frozen=True, slots=True)
class PoolResult:
    items: tuple[Any, ...]              # PoolItem: in gold order, then best rank, first run, id
    queries: int                        # queries with at least one item


def run_labels(paths: tuple[str, ...] | list[str]) -> list[str]:
    """The runs' names (:func:`rankgate.model.results.run_names`: file names, the path where two share one)."""
    from rankgate.model.results import run_names

    return run_names(list(paths))


def run_pool(req: PoolRequest) -> PoolResult:
    from rankgate.io import load_gold, load_run
    from rankgate.stats.pooling import pool_queue

    gold = load_gold(req.gold)
    runs = [load_run(path) for path in req.runs]
    corpus = None
    if req.corpus:
        from rankgate.corpus import load_manifest

        corpus = load_manifest(req.corpus)
    items = pool_queue(gold, runs, run_labels(req.runs), depth=req.depth, corpus=corpus, ties=req.ties)
    return PoolResult(tuple(items), len({i.query_id for i in items}))
