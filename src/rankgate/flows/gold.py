"""Keep a gold set fit to gate on as the corpus moves: validate it, find its stale labels, compare two
versions, and carry its labels across a re-chunking (see :mod:`rankgate.goldset`)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from rankgate._util import progress
from rankgate.flows._inputs import FilePath, paths


@dataclass(frozen=True, slots=True)
class ValidateRequest:
    gold: str
    corpus: str | None = None           # manifest: ids are checked against it
    config: str | None = None           # ship criteria: segment sizes and owners of its gates
    baseline: str | None = None         # a run or its summary.json: the drop each gated segment can see
    as_of: dt.date | None = None        # date label ages are counted to (None: today, UTC)

    def inputs(self) -> tuple[FilePath, ...]:
        """The files the request reads (an output may be none of them): the gold set, the corpus manifest, the
        ship criteria and the baseline."""
        return paths(self.gold, self.corpus, self.config, self.baseline)

    def __post_init__(self) -> None:
        from rankgate._util.constraints import FILE, check_fields, typed
        from rankgate.errors import F, UsageError

        check_fields(self, "ValidateRequest", corpus=FILE, config=FILE, baseline=FILE, as_of=typed(dt.date, optional=True))
        if self.baseline and not self.config:
            raise UsageError(f"{F.baseline} needs {F.config}: the ship criteria say which metrics and segments to size")


def run_validate(req: ValidateRequest) -> Any:
    """The :class:`~rankgate.goldset.ValidationReport`: findings, mix, label age, gate power, owners."""
    from rankgate.corpus import load_manifest
    from rankgate.gating.config import load_config
    from rankgate.goldset import read_gold_file, validate_gold

    config = load_config(req.config) if req.config else None
    corpus = load_manifest(req.corpus) if req.corpus else None
    gold = read_gold_file(req.gold)
    baseline, notes = None, list[str]()
    if req.baseline and config is not None:
        baseline, notes = _baseline_values(req.gold, req.baseline, gold, config)
    return validate_gold(gold, corpus, config, as_of=req.as_of, baseline=baseline,
                         baseline_path=req.baseline if baseline is not None else None, baseline_notes=notes)


def _baseline_values(gold_path: str, path: str, gold: Any, config: Any) -> tuple[Any, list[str]]:
    """metric -> query id -> the baseline's value, from a summary.json's per-query values or by
    scoring a baseline run on the gold set; and why it could not be used, when it could not."""
    import os

    from rankgate.gating.baseline import summary_or_run

    name = os.path.basename(path)
    if gold.problems:
        return None, [f"the baseline {name} was not used: the gold set has errors to fix first"]

    def scored(run_path: str) -> Any:
        from rankgate.gating.config import evaluate_options
        from rankgate.scoring.engine import evaluate
        from rankgate.scoring.raw import asks_raw

        if asks_raw(list(config.metrics)):  # a gate on the raw candidates: their rows scored beside the final ones
            from rankgate.flows.gate import scorer_of

            return scorer_of(config).score(gold_path, run_path)
        return evaluate(gold_path, run_path, list(config.metrics), **evaluate_options(config))

    found: Any = summary_or_run(path, scored)
    if hasattr(found, "values") and hasattr(found, "query_ids"):  # a run, scored
        return {m: dict(zip(found.query_ids, found.values[m].tolist())) for m in found.metric_names}, []
    per_query = found.per_query
    if per_query is None:
        return None, [f"the baseline summary {name} has no per-query values (write it with this version of "
                      "rankgate: evaluate --out or gate --json-out); the figures are the binomial approximation"]
    notes = []
    if per_query.gold_sha256 and per_query.gold_sha256 != gold.sha256:
        notes.append(f"the baseline summary {name} was scored on another version of the gold set; its values are "
                     "used for the queries both share")
    values = per_query.values_by_query([q.query_id for q in gold.queries])
    if values is None:
        return None, [f"the baseline summary {name} names its queries by one digest of their ids, and they are not "
                      "this gold set's queries; the figures are the binomial approximation"]
    return values, notes


def _read_clean(path: str, kept: list[tuple[str, Any]] | None = None) -> Any:
    """The gold file, or its first problem raised."""
    from rankgate.goldset import read_gold_file

    gold = read_gold_file(path, kept)
    problem = gold.first_problem()
    if problem is not None:
        raise problem
    return gold


@dataclass(frozen=True, slots=True)
class StaleRequest:
    gold: str
    corpus: str                         # the new corpus manifest
    since: str | None = None            # the corpus the labels were made against
    config: str | None = None           # ship criteria with max_stale_labels

    def inputs(self) -> tuple[FilePath, ...]:
        """The files the request reads (an output may be none of them): the gold set, both corpus manifests
        and the ship criteria."""
        return paths(self.gold, self.corpus, self.since, self.config)


def run_stale(req: StaleRequest) -> Any:
    """The :class:`~rankgate.goldset.StaleReport`: labels whose chunk was retired, deprecated, superseded or changed."""
    from rankgate.corpus import load_manifest
    from rankgate.gating.config import load_config
    from rankgate.goldset import stale_labels

    config = load_config(req.config) if req.config else None
    with progress.stage(f"reading {_name(req.gold)}"):
        gold = _read_clean(req.gold)
    with progress.stage(f"reading {' and '.join(_name(p) for p in (req.corpus, req.since) if p)}"):
        since = load_manifest(req.since) if req.since else None
        corpus = load_manifest(req.corpus)
    with progress.stage(f"checking {_labels(gold)} against the corpus"):
        return stale_labels(gold, corpus, since, max_stale_labels=config.max_stale_labels if config else None,
                            max_stale_share=config.max_stale_share if config else None)


def _name(path: str) -> str:
    """A file as a progress line names it."""
    import os

    return os.path.basename(path) or path


def _labels(gold: Any) -> str:
    """``12,000 labels``: how many graded items a gold file holds, for a progress line."""
    return f"{sum(len(q.labels) for q in gold.queries):,} labels"


@dataclass(frozen=True, slots=True)
class DiffRequest:
    old: str                            # the earlier gold file
    new: str                            # the later one

    def inputs(self) -> tuple[FilePath, ...]:
        """The files the request reads (an output may be none of them): both gold files."""
        return paths(self.old, self.new)


def run_diff(req: DiffRequest) -> Any:
    """The :class:`~rankgate.goldset.GoldDiff`: queries added, removed and relabelled."""
    from rankgate.goldset import diff_gold, read_gold_file

    old, new = read_gold_file(req.old), read_gold_file(req.new)
    for g in (old, new):
        problem = g.first_problem()
        if problem is not None:
            raise problem
    return diff_gold(old, new)


@dataclass(frozen=True, slots=True)
class RemapRequest:
    gold: str                           # a JSONL gold set (every field of each line is kept)
    old_corpus: str                     # the corpus the labels were made on (with text)
    new_corpus: str                     # the re-chunked corpus (with text)
    min_confidence: float = 0.8         # mappings applied at or above it; the rest are for review

    def inputs(self) -> tuple[FilePath, ...]:
        """The files the request reads (an output may be none of them): the gold set and both corpora."""
        return paths(self.gold, self.old_corpus, self.new_corpus)

    def __post_init__(self) -> None:
        from rankgate._util.constraints import check_fields, typed
        from rankgate.errors import F, UsageError

        check_fields(self, "RemapRequest", min_confidence=typed(float))
        if not 0.0 <= self.min_confidence <= 1.0:
            raise UsageError(f"{F.min_confidence} must be a number from 0 to 1; got {self.min_confidence}")
        if str(self.gold).endswith((".parquet", ".pq")):
            raise UsageError(f"{self.gold}: remap reads a JSONL gold set (it keeps every field of each line)")


@dataclass(frozen=True, slots=True)
class Remapped:
    result: Any                         # the RemapResult: a mapping per labelled chunk, with its confidence
    text: str                           # the proposed gold set (a query nothing happened to keeps its line)
    changed: Any                        # the queries whose labels moved
    conflicts: Any                      # the labels left for review


def run_remap(req: RemapRequest) -> Remapped:
    import json

    from rankgate.corpus import load_manifest
    from rankgate.goldset.remap import propose, remap_gold

    kept: list[tuple[str, Any]] = []  # every line with its object, read once (a pipe cannot be read twice)
    with progress.stage(f"reading {_name(req.gold)}"):
        gold = _read_clean(req.gold, kept)
    with progress.stage(f"reading {_name(req.old_corpus)} and {_name(req.new_corpus)}"):
        old, new = load_manifest(req.old_corpus), load_manifest(req.new_corpus)
    with progress.stage(f"finding the new chunks of {_labels(gold)}"):
        result = remap_gold(gold, old, new, min_confidence=req.min_confidence, require_texts=True)
    lines = [line for line, _ in kept]
    records = [obj for _, obj in kept]
    rows, changed, conflicts = propose(records, gold, result)
    # a query nothing happened to keeps its line as it was
    text = "".join((line if row is obj else json.dumps(row, ensure_ascii=False)) + "\n"
                   for line, obj, row in zip(lines, records, rows))
    return Remapped(result, text, changed, conflicts)
