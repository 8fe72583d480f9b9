"""docs/history.md's workflow (the action with ``history-branch``) run step by step as GitHub Actions would, by
``.ci/follow_docs.py``'s local runner, against a local bare git repository standing in for GitHub's: offline, with
the rankgate of this environment (the action's install step is answered by a stand-in pip)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # the full tier: three runs of the workflow, each a gate and git pushes

ROOT = Path(__file__).resolve().parents[1]


def _follow_docs():
    spec = importlib.util.spec_from_file_location("follow_docs", ROOT / ".ci" / "follow_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_the_documented_history_workflow_records_retries_and_fails_as_said(tmp_path):
    from rankgate.demo.pipeline import run_demo

    fd = _follow_docs()
    demo = tmp_path / "demo"
    run_demo(demo, seed=0)
    source = tmp_path / "user"
    (source / "eval").mkdir(parents=True)
    (source / "scripts").mkdir()
    shutil.copy(demo / "data" / "gold.jsonl", source / "eval" / "gold.jsonl")
    (criteria,) = [b for b in fd.blocks(ROOT / "docs" / "gating.md", "yaml") if b.startswith("# ship-criteria.yaml")]
    (source / "eval" / "ship-criteria.yaml").write_text(criteria, encoding="utf-8")
    shutil.copy(demo / "gate.json", source / "eval" / "raced-outcome.json")
    json.loads((source / "eval" / "raced-outcome.json").read_text(encoding="utf-8"))
    (source / "scripts" / "retrieve.py").write_text(textwrap.dedent(f"""\
        import shutil, sys
        shutil.copy({str(demo / 'runs' / 'candidate.jsonl')!r}, sys.argv[sys.argv.index("--out") + 1])
        """), encoding="utf-8")
    shim = tmp_path / "bin"
    shim.mkdir()
    python = shim / "python"  # the action installs rankgate with pip: here it is installed already
    python.write_text(f'#!/bin/bash\nif [ "$1 $2 $3" = "-m pip install" ]; then exit 0; fi\nexec {sys.executable} "$@"\n',
                      encoding="utf-8")
    python.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_"))}
    env["PATH"] = f"{shim}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    fd.PROBLEMS.clear()
    fd.follow_history(tmp_path, ROOT, env, source)
    assert fd.PROBLEMS == []
