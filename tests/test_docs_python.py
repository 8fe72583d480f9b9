"""docs/python.md: every example runs as written, in order, in an empty folder, and prints what its comments say.

A line ``print(...)  # text`` in an example claims that it prints ``text``; a block whose every ``print`` line
makes such a claim is checked line by line against what it printed.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "python.md"
_CLAIM = re.compile(r"^\s*print\(.*\)\s+#\s(?P<text>.*)$")


def blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.DOTALL)


def claims(block: str) -> list[str] | None:
    """What the block says it prints, one line per ``print`` line; None when a ``print`` line says nothing."""
    prints = [line for line in block.splitlines() if re.match(r"^\s*print\(", line)]
    found = [_CLAIM.match(line) for line in prints]
    return None if any(m is None for m in found) else [m.group("text").rstrip() for m in found if m is not None]


def test_the_page_covers_the_api():
    text = DOC.read_text(encoding="utf-8")
    for call in ("rankgate.evaluate(", "rankgate.compare(", "rankgate.gate(", "rankgate.report(", "assert_retrieval(",
                 ".to_pandas(", ".to_arrow(", "EvaluateRequest("):
        assert call in text, call
    assert len(blocks()) >= 8


def test_every_example_runs_and_prints_what_it_says(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "docs_python"}
    checked = 0
    for i, block in enumerate(blocks()):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(block, f"docs/python.md (example {i + 1})", "exec"), namespace)  # noqa: S102 - our own page
        said = claims(block)
        if said:
            assert out.getvalue().splitlines() == said, f"example {i + 1}:\n{block}"
            checked += len(said)
    assert checked >= 15  # (the claims are checked, not skipped)
    assert (tmp_path / "report.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
