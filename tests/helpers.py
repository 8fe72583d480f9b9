"""Helpers shared by the test modules (one definition each; conftest.py keeps fixtures and the run summary)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def write_jsonl(path: Path, rows: Iterable[Any], *, ensure_ascii: bool = True) -> Path:
    """Write one JSON object per line (a ``str`` row is written as it is: for deliberately bad lines), UTF-8."""
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r, ensure_ascii=ensure_ascii)) + "\n"
                            for r in rows), encoding="utf-8")
    return path


def scan_closed(path: Any) -> object:
    """What the compiled JSONL scanner alone gives for the run file (None: it declines), the file closed after."""
    from rankgate.io import jsonl_fast

    found = jsonl_fast._opened(str(path), 0)
    assert found is not None
    try:
        return jsonl_fast._scan_run(found, str(path))
    finally:
        found.close()
