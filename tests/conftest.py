"""Shared test helpers. Conformance data is read from ../shared (beside the checkout), never copied."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
FIXTURES = SHARED / "fixtures"


def shared_path(*parts: str) -> Path:
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} not present: the shared conformance data sits beside the checkout in CI")
    return path


@pytest.fixture
def fixtures() -> Path:
    return shared_path("fixtures")
