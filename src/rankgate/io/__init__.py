"""Gold sets and runs: models, loaders for every accepted format, and the ranking rule.

The names below are imported on first use, so that the CLI can read the strings-only format table
(:mod:`rankgate.io.formats`) without loading numpy and pyarrow.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rankgate.io.formats import GOLD_FORMATS, RUN_FORMATS

if TYPE_CHECKING:
    from rankgate.io.load import load_gold, load_run
    from rankgate.model.gold_run import Gold, Run

__all__ = ["GOLD_FORMATS", "RUN_FORMATS", "Gold", "Run", "load_gold", "load_run"]


def __getattr__(name: str) -> Any:
    if name in ("Gold", "Run"):
        from rankgate.model import gold_run as models

        return getattr(models, name)
    if name in ("load_gold", "load_run"):
        from rankgate.io import load

        return getattr(load, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
