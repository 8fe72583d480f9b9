"""A run's ``cost`` objects held as columns: what the compiled JSONL scanner gives for the ``cost`` field.

A run's per-query fields are lists, one value per query; ``cost`` is an object per query
(``{"tokens_in": 1840, "usd": 0.0021}``), and a 100,000-query run's objects built one by one, then
checked and split into a column per key one by one, cost more than reading the rest of the run.
:class:`CostColumn` holds them as a column per key instead (a number per query and whether the query
logs the key), already checked (every value a finite number >= 0), and is the per-query list when
read as one: ``len``, indexing, slicing and iteration give the objects (keys in order of first
appearance, whole numbers as int where a key's values all are), and it compares equal to the list of
objects the line-by-line parser gives. The cost summaries read :attr:`CostColumn.columns` directly.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, overload

import numpy as np

__all__ = ["CostColumn"]


class CostColumn(Sequence[dict[str, Any] | None]):
    """Per-query cost objects as columns: ``columns`` maps each key to ``(values, logged)``, two arrays of one
    entry per query (``values`` int64 or float64; ``logged`` bool, False where the query's object lacks the
    key); ``present`` says which queries have a cost object at all (None where not)."""

    __slots__ = ("columns", "present")

    def __init__(self, columns: dict[str, tuple[np.ndarray, np.ndarray]], present: np.ndarray):
        self.columns = columns
        self.present = present

    def __len__(self) -> int:
        return int(self.present.size)

    def _one(self, q: int) -> dict[str, Any] | None:
        if not self.present[q]:
            return None
        return {key: values[q].item() for key, (values, logged) in self.columns.items() if logged[q]}

    @overload
    def __getitem__(self, i: int) -> dict[str, Any] | None: ...

    @overload
    def __getitem__(self, i: slice) -> CostColumn: ...

    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return CostColumn({k: (v[i], m[i]) for k, (v, m) in self.columns.items()}, self.present[i])
        n = len(self)
        q = int(i)
        if q < 0:
            q += n
        if not 0 <= q < n:
            raise IndexError("cost column index out of range")
        return self._one(q)

    def __iter__(self) -> Iterator[dict[str, Any] | None]:
        return iter(self.tolist())

    def tolist(self) -> list[dict[str, Any] | None]:
        """The objects, one per query (None where a query logs no cost), as the parser gives them."""
        keys = list(self.columns)
        values = [self.columns[k][0].tolist() for k in keys]
        logged = [self.columns[k][1] for k in keys]
        out: list[dict[str, Any] | None] = [None] * len(self)
        for q in np.flatnonzero(self.present).tolist():
            out[q] = {k: v[q] for k, v, m in zip(keys, values, logged) if m[q]}
        return out

    def __eq__(self, other: object) -> bool:
        if isinstance(other, CostColumn):
            other = other.tolist()
        if not isinstance(other, (list, tuple)):
            return NotImplemented
        return self.tolist() == list(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"CostColumn({len(self)} queries, keys {list(self.columns)})"

    @staticmethod
    def joined(parts: Sequence[tuple[CostColumn | None, int]]) -> CostColumn:
        """Columns of runs read one after another (each with its number of queries; None: a part without
        cost) as one run's, keys in order of first appearance."""
        keys = list(dict.fromkeys(k for part, _ in parts if part is not None for k in part.columns))
        cols: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for key in keys:
            vals, marks = [], []
            for part, n in parts:
                got = None if part is None else part.columns.get(key)
                if got is None:
                    vals.append(np.zeros(n, dtype=np.int64))
                    marks.append(np.zeros(n, dtype=bool))
                else:
                    vals.append(got[0])
                    marks.append(got[1])
            kinds = {v.dtype.kind for v, m in zip(vals, marks) if m.any()}
            dtype = np.int64 if kinds <= {"i"} else np.float64
            cols[key] = (np.concatenate([v.astype(dtype, copy=False) for v in vals]), np.concatenate(marks))
        present = np.concatenate([np.zeros(n, dtype=bool) if part is None else part.present for part, n in parts])
        return CostColumn(cols, present)

    def as_floats(self, key: str) -> np.ndarray:
        """The key's values as float64, NaN where a query does not log it."""
        values, logged = self.columns[key]
        return np.where(logged, values.astype(np.float64), np.nan)
