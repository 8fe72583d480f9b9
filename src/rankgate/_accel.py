"""The compiled kernels (``rankgate._kernels``), when this installation has them.

They are built from ``_kernels.c`` at install time where a C compiler is available; without one the
build skips them and every caller uses its numpy fallback, which gives the same results (the tests
run both). Set ``RANKGATE_PURE_PYTHON=1`` to force the fallbacks.
"""

from __future__ import annotations

import os
from types import ModuleType

__all__ = ["kernels"]


def _load() -> ModuleType | None:
    if os.environ.get("RANKGATE_PURE_PYTHON", "") not in ("", "0"):
        return None
    try:
        from . import _kernels
    except ImportError:
        return None
    return _kernels


kernels: ModuleType | None = _load()
