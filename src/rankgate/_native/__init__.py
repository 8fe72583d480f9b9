"""The compiled extensions (``_kernels``, ``_reader`` and ``_remap`` here), when this installation has them.

They are built from the C files in ``c/`` (``setup.py`` lists which file goes into which extension) at
install time where a C compiler is available; without one the build skips them and every caller uses its
fallback (numpy, pyarrow's CSV reader, arrow's tokeniser), which gives the same results (the tests run both).

``RANKGATE_NATIVE`` chooses the build at import:

* ``auto`` (the default): the compiled code, with the widest CPU-specific variant the CPU runs
  (AVX-512 or AVX2 for the bootstrap's sums; the TREC and JSONL reader and the remap kernels have no
  CPU-specific path);
* ``baseline``: the compiled code with no CPU-specific path (the plain variants), so one machine can
  test every path;
* ``off``: no compiled code, every caller takes its fallback. ``RANKGATE_PURE_PYTHON=1`` (the older
  name) means the same and wins over ``RANKGATE_NATIVE``.

Another value runs as ``auto``; :data:`unknown_value` keeps it so the command line can say so.
"""

from __future__ import annotations

import os
from types import ModuleType
from typing import TYPE_CHECKING

__all__ = ["ENV", "LARGE_ROWS", "MODES", "describe", "kernels", "mode", "reader", "remap", "slow_notice",
           "unknown_value"]

ENV = "RANKGATE_NATIVE"
MODES = ("auto", "baseline", "off")
PURE_PYTHON_ENV = "RANKGATE_PURE_PYTHON"
"""The older switch: any value but empty or ``0`` is ``RANKGATE_NATIVE=off``."""


def _requested() -> tuple[str, str | None]:
    """The mode the environment asks for, and the value of ``RANKGATE_NATIVE`` when it is none of MODES."""
    if os.environ.get(PURE_PYTHON_ENV, "") not in ("", "0"):
        return "off", None
    value = os.environ.get(ENV, "")
    normalized = value.strip().lower()
    if normalized == "":
        return "auto", None
    if normalized in MODES:
        return normalized, None
    return "auto", value


mode, unknown_value = _requested()
"""``mode``: ``auto``, ``baseline`` or ``off``, as asked (an extension that is not built is None below
whatever the mode); ``unknown_value``: what ``RANKGATE_NATIVE`` held when it was none of MODES, else None."""


def _load(name: str) -> ModuleType | None:
    if mode == "off":
        return None
    import importlib

    try:
        module = importlib.import_module(f"rankgate._native.{name}")
    except ImportError:
        return None
    set_baseline = getattr(module, "set_baseline", None)
    if set_baseline is None:  # built from an older source: it cannot promise the baseline
        return module if mode == "auto" else None
    set_baseline(mode == "baseline")
    return module


if TYPE_CHECKING:  # mypy reads the stubs (_kernels.pyi, _reader.pyi, _remap.pyi) and checks every call against them
    from rankgate._native import _kernels as kernels
    from rankgate._native import _reader as reader
    from rankgate._native import _remap as remap
else:
    kernels: ModuleType | None = _load("_kernels")
    """Inner loops of the engine and the bootstrap (``c/rank.c``, ``c/bootstrap.c``, ``c/csv.c``); None when not
    built or switched off (every caller has its fallback)."""
    reader: ModuleType | None = _load("_reader")
    """The TREC and JSONL readers (``c/lines.c``, ``c/jsonl.c``, ``c/guard.c``)."""
    remap: ModuleType | None = _load("_remap")
    """Gold remapping's inner loops (``c/remap.c``), for :mod:`rankgate.goldset.remap`."""


def describe() -> str:
    """The active native build in a few words, as ``rankgate --version`` shows it: ``native: off``,
    ``native: baseline``, ``native: auto, kernels avx512f, reader plain``, or which extension is not built.
    The remap kernels are named only when they are not built: their variant is always ``plain``, and an
    installation with all three says what it said before they were an extension of their own."""
    if mode == "off":
        return "native: off"
    missing = [f"{name} not built" for name, module in (("kernels", kernels), ("reader", reader), ("remap", remap))
               if module is None]
    if mode == "baseline":
        return ", ".join(["native: baseline", *missing])
    parts = [f"{name} {getattr(module, 'variant', lambda: 'unknown')()}" for name, module in (("kernels", kernels), ("reader", reader)) if module]
    return ", ".join(["native: auto", *parts, *missing])


LARGE_ROWS = 1_000_000
"""Rows of a run from which running without the compiled code is said (:func:`slow_notice`)."""


def slow_notice(rows: int) -> str | None:
    """One line for a run of ``rows`` rows (from :data:`LARGE_ROWS`) read or scored without the compiled
    code, saying that it runs slower and how to get the compiled build; None otherwise."""
    missing = [name for name, module in (("kernels", kernels), ("reader", reader)) if module is None]
    if rows < LARGE_ROWS or not missing:
        return None
    what = " and ".join(f"rankgate._native.{'_kernels' if n == 'kernels' else '_reader'}" for n in missing)
    if mode == "off":
        return (f"{rows:,} rows without the compiled code ({what}: {ENV}=off or {PURE_PYTHON_ENV} is set): the same "
                f"numbers, several times slower; unset it to use the compiled code")
    return (f"{rows:,} rows without the compiled code ({what} not built: no C compiler at install time): the same "
            f"numbers, several times slower; install gcc and the Python headers (e.g. apt-get install gcc "
            f"python3-dev) and reinstall rankgate")
