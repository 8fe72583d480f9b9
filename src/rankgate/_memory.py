"""Process-wide memory tuning for the command line.

An evaluation of a 10M-row run makes many short-lived arrays of tens of megabytes. glibc serves each
from a fresh ``mmap`` and returns it on ``free``, so the kernel zeroes new pages for every one of
them: measured at a third of all CPU time on 10M rows. Serving large blocks from the heap and keeping
freed memory for the next array removes most of that, and lowers peak memory too. Only the
``rankgate`` command does this (a library must not change its host's allocator); elsewhere it is a
no-op.
"""

from __future__ import annotations

import sys

_M_TRIM_THRESHOLD = -1
_M_MMAP_MAX = -4


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
    return ok
