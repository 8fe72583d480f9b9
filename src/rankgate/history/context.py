"""Where a summary recorded without ``--commit`` or ``--branch`` comes from: the CI's variables, else git."""

from __future__ import annotations

import os
import subprocess

__all__ = ["default_branch", "default_commit"]


def _git(*args: str) -> str:
    """git's answer in the current folder, or "" (no git, not a repository, a detached HEAD for ``branch``)."""
    try:
        proc = subprocess.run(["git", *args], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    return proc.stdout.strip() if proc.returncode == 0 else ""


def default_commit() -> str:
    """``$GITHUB_SHA``, else the current folder's git HEAD, else ""."""
    return os.environ.get("GITHUB_SHA", "").strip() or _git("rev-parse", "HEAD")


def default_branch() -> str:
    """``$GITHUB_REF_NAME`` on a branch, else git's current branch, else ""."""
    if os.environ.get("GITHUB_REF", "").startswith("refs/heads/"):
        return os.environ.get("GITHUB_REF_NAME", "").strip() or os.environ["GITHUB_REF"].removeprefix("refs/heads/")
    return _git("branch", "--show-current")
