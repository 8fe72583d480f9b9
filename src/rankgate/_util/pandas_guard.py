"""Keep pandas out of the ``rankgate`` process: no rankgate path needs it.

pyarrow looks for pandas the first time many of its functions run (``pa.array``, ``pa.scalar``,
compute functions given a Python value, ``to_numpy``…), to recognise pandas objects; where pandas
is installed, that import costs 0.2–0.4 s and a few hundred MB of address space, for nothing: the
command never hands pyarrow a pandas object. :func:`install` (called by the executable, never on
``import rankgate``) answers "not installed" to an import of pandas made by rankgate's or pyarrow's
own code, so pyarrow goes on without it. Anyone else in the process (pyspark, a plugin) still gets
pandas. Library users calling rankgate from Python are not affected.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["import_pandas", "install"]


def import_pandas(what: str) -> Any:
    """pandas, for a ``to_pandas()`` a user calls (``what`` names it): rankgate does not depend on pandas, so
    where it is missing the error says how to install it and what gives the same table without it."""
    try:
        import pandas
    except ImportError as exc:
        raise ImportError(f"{what} needs pandas, which is not installed: pip install pandas (or call "
                          f"{what.replace('to_pandas', 'to_arrow')}, which gives the same table as a pyarrow Table)") \
            from exc
    return pandas

_OWN = ("rankgate", "pyarrow", "duckdb")


class _Finder:
    """A meta path finder that refuses ``pandas`` to rankgate's, pyarrow's and DuckDB's Python code."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name != "pandas" and not name.startswith("pandas."):
            return None
        frame = sys._getframe(1)
        while frame is not None and frame.f_globals.get("__name__", "").startswith(("importlib", "_frozen_importlib")):
            frame = frame.f_back  # type: ignore[assignment]
        module = frame.f_globals.get("__name__", "") if frame is not None else ""
        if module.partition(".")[0] in _OWN:
            raise ModuleNotFoundError(f"No module named {name!r} (not used by rankgate)", name=name)
        return None


def install() -> None:
    """Refuse pandas to rankgate's own imports from now on in this process (module docs); a no-op
    when pandas is already imported."""
    if "pandas" in sys.modules or any(isinstance(f, _Finder) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, _Finder())
