"""Gold sets and runs: models, loaders for every accepted format, and the ranking rule."""

from __future__ import annotations

from .load import GOLD_FORMATS, RUN_FORMATS, load_gold, load_run
from .models import Gold, Run

__all__ = ["GOLD_FORMATS", "RUN_FORMATS", "Gold", "Run", "load_gold", "load_run"]
