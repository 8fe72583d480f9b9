"""The code passes ruff and mypy with the settings in pyproject.toml.

Both are pinned in the ``test`` extra, so ``pip install '.[test]'`` brings them; where one is absent
the test skips with one line saying what to install (in CI, where ``RANKGATE_REQUIRE_LINT`` is set,
it fails instead).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # ruff and mypy over the whole tree: the full tier

ROOT = Path(__file__).resolve().parents[1]


def _tool(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        message = f"{module} is not installed: pip install '.[test]'"
        if os.environ.get("RANKGATE_REQUIRE_LINT"):
            pytest.fail(message)
        pytest.skip(message)


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *argv], cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_finds_nothing():
    _tool("ruff")
    done = _run(["ruff", "check", "--no-cache", "--output-format", "concise", "src", "tests", "benchmarks"])
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_finds_nothing(tmp_path):
    _tool("mypy")
    done = _run(["mypy", "--cache-dir", str(tmp_path / "mypy-cache")])  # files and settings: pyproject.toml
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr
