"""Process-wide memory tuning for the command line.

An evaluation of a 10M-row run makes many short-lived arrays of tens of megabytes. glibc serves each
from a fresh ``mmap`` and returns it on ``free``, so the kernel zeroes new pages for every one of
them: measured at a third of all CPU time on 10M rows. Serving large blocks from the heap and keeping
freed memory for the next array removes most of that, and lowers peak memory too. pyarrow is pointed
at the same allocator (its default is a pool of its own), so the buffers the CSV reader frees are
reused by the arrays that follow: five times fewer fresh huge pages on 10M rows. Every thread
allocates from the one heap (glibc otherwise gives threads heaps of their own, which it shrinks as
they free memory): the arrays a reader thread makes are freed by the scoring threads, and the next
block reuses their pages (100k x 100 on two cores: 1.37 -> 1.27 s; the report's peak memory
645 -> 522 MB). Only the
``rankgate`` command does this (a library must not change its host's allocator); elsewhere it is a
no-op, and a user's own ``ARROW_DEFAULT_MEMORY_POOL`` is left as it is.
"""

from __future__ import annotations

import os
import sys

_M_TRIM_THRESHOLD = -1
_M_MMAP_MAX = -4
_M_ARENA_MAX = -8


def keep_freed_memory() -> bool:
    """Ask glibc to keep freed memory for reuse; True if it accepted."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    ok = mallopt(_M_MMAP_MAX, 0) == 1
    ok = mallopt(_M_TRIM_THRESHOLD, 1 << 30) == 1 and ok  # give memory back only past 1 GiB of free top
    ok = mallopt(_M_ARENA_MAX, 1) == 1 and ok  # (before any thread allocates: this runs first)
    if ok and "pyarrow" not in sys.modules:  # read when pyarrow first allocates
        os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
    if ok and "numpy" not in sys.modules:  # read when numpy is imported
        # numpy asks for transparent huge pages on large arrays. Where the kernel compacts memory
        # to find them (THP defrag "madvise", common), one evaluation of 10M rows measured 0.4 to
        # 1.3 s of system time from run to run; with small pages, 0.6 s every time.
        os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")
    return ok
