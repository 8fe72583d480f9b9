"""Fuse several runs into one: reciprocal rank fusion, CombSUM and CombMNZ.

Each input run is first put in order by the one ranking rule (:mod:`rankgate.model.ranking`), the rule
its format asks for unless ``ties=`` forces one (a TREC run: score descending, ties by id descending;
a JSONL run: the file's order among equal scores); runs without scores keep their order. Then, for every query in any
run and every item any run retrieved for it:

``rrf(k=60)`` (Cormack, Clarke & Büttcher 2009)
    ``score(d) = Σ_runs 1 / (k + rank_run(d))``; a run that did not retrieve ``d`` adds nothing.
    Only ranks are read, so runs without scores fuse too.
``combsum`` (Fox & Shaw 1994)
    ``score(d) = Σ_runs norm_run(d)``, where each run's scores are min-max normalised per query:
    ``(s − min) / (max − min)`` over the items that run retrieved for that query, so its best item
    gets 1 and its worst 0; when all of them have the same score (or there is one) each gets 1.
    A run that did not retrieve ``d`` adds 0. Needs scores in every run.
``combmnz``
    CombSUM times the number of runs that retrieved ``d``.

Sums are taken in the order the runs are given (so the result is the same bits on every machine).
The fused run is ranked by the same rule as any run: fused score descending, ties by id descending;
queries keep the order of first appearance (the first run's order, then new ones from later runs).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from rankgate.io import Run, load_run
from rankgate._util.arrow import arrow_of, np_of
from rankgate.model.ranking import rank_rows, resolve_ties
from rankgate.errors import InputError, UsageError

__all__ = ["FUSION_METHODS", "FusionMethod", "fuse", "parse_fusion", "run_jsonl", "run_records", "write_run_jsonl"]

FUSION_METHODS = ("rrf", "combsum", "combmnz")
RRF_K = 60

_SPEC = re.compile(r"^\s*(?P<name>[a-z]+)\s*(?:\(\s*k\s*=\s*(?P<k>[^)\s]*)\s*\))?\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class FusionMethod:
    """A fusion method with its parameter; ``str()`` gives the canonical spec (``rrf(k=60)``)."""

    name: str
    k: int = RRF_K

    def __str__(self) -> str:
        return f"rrf(k={self.k})" if self.name == "rrf" else self.name


def parse_fusion(text: str | FusionMethod) -> FusionMethod:
    """Parse ``rrf``, ``rrf(k=60)``, ``combsum`` or ``combmnz``."""
    if isinstance(text, FusionMethod):
        return text
    m = _SPEC.match(text) if isinstance(text, str) else None
    if m is None or m["name"].lower() not in FUSION_METHODS:
        raise UsageError(f"unknown fusion method {text!r}; expected one of: rrf, rrf(k=60), combsum, combmnz")
    name = m["name"].lower()
    if m["k"] is None:
        return FusionMethod(name)
    if name != "rrf":
        raise UsageError(f"fusion method {name!r} takes no parameter; got {text!r}")
    if not m["k"].isdigit():
        raise UsageError(f"rrf's k must be a whole number >= 0; got {text!r} (e.g. rrf(k=60))")
    return FusionMethod(name, int(m["k"]))


def _ranked(run: Run, ties: str | None = None) -> tuple[np.ndarray, pa.Array, np.ndarray, np.ndarray | None]:
    """(query code, id, 1-based rank, score or None) of every row, in ranking order."""
    perm = rank_rows(run.r_query, run.r_doc, run.r_score, run.r_order, ties=resolve_ties(ties, run))
    query = run.r_query[perm].astype(np.int64)
    doc = run.r_doc.take(arrow_of(perm))
    if isinstance(doc, pa.ChunkedArray):
        doc = doc.combine_chunks()
    starts = np.searchsorted(query, query, side="left")  # grouped by query: first row of each row's query
    rank = np.arange(query.size, dtype=np.int64) - starts + 1
    score = None if run.r_score is None else run.r_score[perm].astype(np.float64)
    return query, doc, rank, score


def _minmax(query: np.ndarray, score: np.ndarray) -> np.ndarray:
    """Per-query min-max normalised scores; a query whose scores are all equal gets 1 for each."""
    nq = int(query.max()) + 1 if query.size else 0
    low = np.full(nq, np.inf)
    high = np.full(nq, -np.inf)
    np.minimum.at(low, query, score)
    np.maximum.at(high, query, score)
    lo, hi = low[query], high[query]
    span = hi - lo
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(span > 0, (score - lo) / np.where(span > 0, span, 1.0), 1.0)


def _refuse_duplicates(run: Run, name: str, query: np.ndarray, doc: pa.Array) -> None:
    """An id listed twice for one query would count twice in the fused score: refuse it, as evaluate does."""
    import pyarrow.compute as pc

    codes = np_of(pc.dictionary_encode(doc).indices, np.int64)
    keys = query * (int(codes.max(initial=0)) + 1) + codes
    ordered = np.sort(keys)
    repeated = ordered[1:][ordered[1:] == ordered[:-1]]
    if repeated.size:
        row = int(np.flatnonzero(keys == repeated[0])[0])
        raise InputError(
            f"lists {doc[row].as_py()!r} more than once for query {run.query_ids[int(query[row])]!r}",
            path=name, hint="each id may appear once per query in a run that is fused",
        )


def fuse(runs: Sequence[Run | str | os.PathLike[str]], method: str | FusionMethod = "rrf", *,
         labels: Sequence[str] | None = None, ties: str | None = None) -> Run:
    """Fuse ``runs`` (loaded runs or paths) with ``method`` into one scored :class:`Run`.

    ``ties``: the rule that ranks each input run (``"id"`` or ``"input"``; default: each run's own).

    See the module docs for the formulas, ties and items a run did not retrieve.
    """
    how = parse_fusion(method)
    if len(runs) < 2:
        raise UsageError(f"fusion needs at least two runs; got {len(runs)}")
    loaded = [load_run(r) for r in runs]
    names = list(labels) if labels is not None else [r.source for r in loaded]
    if how.name != "rrf":
        for run, name in zip(loaded, names):
            if run.r_score is None:
                raise UsageError(f"{how} needs scores, and run {name} has none (ranked lists only); fuse it with rrf")

    query_ids: list[str] = []
    index: dict[str, int] = {}
    for run in loaded:
        for q in run.query_ids:
            if q not in index:
                index[q] = len(query_ids)
                query_ids.append(q)

    all_query, all_doc, all_value = [], [], []
    for run, name in zip(loaded, names):
        query, doc, rank, score = _ranked(run, ties)
        _refuse_duplicates(run, name, query, doc)
        if how.name == "rrf" or score is None:  # (only rrf gets here without scores: checked above)
            value = 1.0 / (how.k + rank).astype(np.float64)
        else:
            value = _minmax(query, score)
        to_union = np.fromiter((index[q] for q in run.query_ids), dtype=np.int64, count=len(run.query_ids))
        all_query.append(to_union[query] if query.size else query)
        all_doc.append(doc)
        all_value.append(value)
    query = np.concatenate(all_query)
    doc = pa.concat_arrays([d.cast(pa.large_string()) for d in all_doc]) if all_doc else pa.array([], pa.large_string())
    value = np.concatenate(all_value)

    # One key per (query, item). The rows are laid out run after run, and bincount adds each key's
    # values in array order, so every fused score is ((0 + run 1) + run 2) + … in the order given.
    import pyarrow.compute as pc

    encoded = pc.dictionary_encode(doc)
    codes = np_of(encoded.indices, np.int64)
    width = len(encoded.dictionary) + 1
    keys = query * width + codes
    unique, inverse = np.unique(keys, return_inverse=True)
    fused = np.bincount(inverse, weights=value, minlength=unique.size)
    if how.name == "combmnz":
        fused = fused * np.bincount(inverse, minlength=unique.size)
    out_query = unique // width
    out_doc = encoded.dictionary.take(arrow_of(unique - out_query * width)).cast(pa.string())
    perm = rank_rows(out_query, out_doc, fused, None)
    return Run(
        query_ids=query_ids,
        r_query=out_query[perm],
        r_doc=out_doc.take(arrow_of(perm)),
        r_score=fused[perm],
        fields={"system": [str(how)] * len(query_ids)},
        source=f"{how} of " + ", ".join(names),
        ties="id",  # fused scores: ties by id descending, as ranked above
    )


def run_records(run: Run) -> list[dict]:
    """The run as JSONL records (``query_id``, ``system``, ``topk`` of ``chunk_id``/``score``), in
    ranking order; a query with nothing retrieved gets an empty ``topk``."""
    perm = rank_rows(run.r_query, run.r_doc, run.r_score, run.r_order, ties=resolve_ties(None, run))
    query = run.r_query[perm].tolist()
    docs = run.r_doc.take(arrow_of(perm)).to_pylist()
    scores = run.r_score[perm].tolist() if run.r_score is not None else None
    system = run.fields.get("system") or [None] * len(run.query_ids)
    records = [{"query_id": q, "topk": []} for q in run.query_ids]
    for rec, s in zip(records, system):
        if s is not None:
            rec["system"] = s
    for i, (q, d) in enumerate(zip(query, docs)):
        item = {"rank": len(records[q]["topk"]) + 1, "chunk_id": d}
        if scores is not None:
            item["score"] = scores[i]
        records[q]["topk"].append(item)
    return records


def run_jsonl(run: Run) -> str:
    """``run`` as the text of a JSONL run file (what :func:`write_run_jsonl` writes)."""
    return "".join(json.dumps(r, ensure_ascii=False, allow_nan=False, separators=(",", ":")) + "\n"
                   for r in run_records(run))


def write_run_jsonl(run: Run, path: str | os.PathLike[str]) -> None:
    """Write ``run`` as a JSONL run file at ``path``, atomically (a reader never sees half a file)."""
    from rankgate._util.atomic import write_bytes

    text = run_jsonl(run)
    try:
        write_bytes(os.fspath(path), text.encode("utf-8"))
    except OSError as exc:
        raise UsageError(f"cannot write the fused run to {os.fspath(path)}: {exc.strerror or exc}") from None
