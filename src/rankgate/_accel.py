"""The compiled kernels (``rankgate._kernels``, ``rankgate._reader``), when this installation has them.

They are built from ``_kernels.c`` and ``_reader.c`` at install time where a C compiler is available;
without one the build skips them and every caller uses its fallback (numpy, pyarrow's CSV reader),
which gives the same results (the tests run both). Set ``RANKGATE_PURE_PYTHON=1`` to force the fallbacks.
"""

from __future__ import annotations

import os
from types import ModuleType

__all__ = ["kernels", "reader"]


def _load(name: str) -> ModuleType | None:
    if os.environ.get("RANKGATE_PURE_PYTHON", "") not in ("", "0"):
        return None
    import importlib

    try:
        return importlib.import_module(f"rankgate.{name}")
    except ImportError:
        return None


kernels: ModuleType | None = _load("_kernels")
"""Inner loops of the engine and the bootstrap (``_kernels.c``)."""
reader: ModuleType | None = _load("_reader")
"""The TREC line reader (``_reader.c``)."""
