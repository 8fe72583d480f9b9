"""Follow the README's quick start and docs/gating.md word for word, in a fresh virtual environment.

What it does (all in a temporary folder; the checkout is not touched):

1. copies the checkout (the "action's checkout" and the README's working folder), makes a fresh venv;
2. runs the README's first command as written (``pip install . && rankgate demo``);
3. builds a user's repository (gold set and runs from the demo, the docs' ship criteria) and runs the
   docs' two workflows step by step, as GitHub Actions would: ``run:`` steps in bash with their
   ``env:`` and ``if:`` evaluated, ``uses: <owner>/rankgate@<ref>`` by running action.yml's own steps
   (its install step installs the copied checkout with pip), artifacts kept in a folder, ``gh`` and the
   REST API answered by local fakes on 127.0.0.1;
4. runs the docs' vendored-action variant and the quick-start command as written.

Exit 0 when everything the docs promise happened; otherwise one line per problem and exit 1.
Run from the checkout with a Python that has PyYAML: ``python .ci/follow_docs.py``. ``--venv DIR``
uses a virtual environment made just before (``.ci/run`` passes its own fresh ``.venv``, which saves
installing the dependencies a second time) instead of making one.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.fake_github import FakeGitHub

PROBLEMS: list[str] = []


START = __import__("time").monotonic()


def check(ok: bool, what: str) -> None:
    elapsed = __import__("time").monotonic() - START
    print(("  ok   " if ok else "  FAIL ") + what + f"  [{elapsed:.0f} s]", flush=True)
    if not ok:
        PROBLEMS.append(what)


def blocks(path: Path, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", path.read_text(encoding="utf-8"), flags=re.DOTALL)


# -- GitHub expressions: the subset the docs and action.yml use -----------------------------------
TOKEN = re.compile(r"\s+|'(?:[^']|'')*'|&&|\|\||==|!=|\(|\)|always\(\)|[A-Za-z_][A-Za-z0-9_.-]*|\d+")


def evaluate(expr: str, ctx: dict[str, Any]) -> Any:
    out, pos = [], 0
    while pos < len(expr):
        m = TOKEN.match(expr, pos)
        if not m:
            raise ValueError(f"cannot evaluate expression {expr!r} at {expr[pos:]!r}")
        tok, pos = m.group(0), m.end()
        if tok.isspace():
            continue
        if tok.startswith("'"):
            out.append(repr(tok[1:-1].replace("''", "'")))
        elif tok in ("&&", "||"):
            out.append(" and " if tok == "&&" else " or ")
        elif tok in ("==", "!=", "(", ")"):
            out.append(tok)
        elif tok == "always()":
            out.append("True")
        elif tok.isdigit():
            out.append(tok)
        else:
            value: Any = ctx
            for part in tok.split("."):
                value = value.get(part, "") if isinstance(value, dict) else ""
            out.append(repr(value if value is not None else ""))
    return eval("".join(out), {"__builtins__": {}}, {})  # tokens are literals and operators only


def expand(text: Any, ctx: dict[str, Any]) -> str:
    if not isinstance(text, str):
        return "" if text is None else str(text).lower() if isinstance(text, bool) else str(text)
    return re.sub(r"\$\{\{(.*?)\}\}", lambda m: _text(evaluate(m.group(1), ctx)), text, flags=re.DOTALL)


def _text(v: Any) -> str:
    return ("true" if v else "false") if isinstance(v, bool) else ("" if v is None else str(v))


def condition(cond: Any, ctx: dict[str, Any], job_ok: bool) -> bool:
    if cond is None:
        return job_ok
    text = str(cond).strip()
    text = text[3:-2] if text.startswith("${{") else text
    value = evaluate(text, ctx)
    return bool(value) if "always()" in text else job_ok and bool(value)


# -- a local runner for one job ---------------------------------------------------------------------
class Runner:
    def __init__(self, base: Path, env: dict[str, str], checkout: Path, github: dict[str, Any]) -> None:
        self.base, self.env, self.checkout, self.github = base, env, checkout, github
        self.artifacts = base / "artifacts"
        self.artifacts.mkdir(exist_ok=True)
        self.summary = base / "step-summary.md"
        self.log: list[str] = []

    def bash(self, script: str, env: dict[str, str], cwd: Path, outputs: dict[str, str]) -> int:
        out_file = self.base / "github-output"
        out_file.write_text("", encoding="utf-8")
        full = {**self.env, **env, "GITHUB_OUTPUT": str(out_file), "GITHUB_STEP_SUMMARY": str(self.summary)}
        proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script], cwd=cwd, env=full,
                              capture_output=True, text=True, check=False)
        self.log.append(proc.stdout + proc.stderr)
        for line in out_file.read_text(encoding="utf-8").splitlines():
            if "=" in line:
                k, v = line.split("=", 1)
                outputs[k] = v
        return proc.returncode

    def run_steps(self, steps: list[dict[str, Any]], workspace: Path, ctx: dict[str, Any]) -> bool:
        ok = True
        ctx.setdefault("steps", {})
        for step in steps:
            if not condition(step.get("if"), ctx, ok):
                continue
            outputs: dict[str, str] = {}
            env = {k: expand(v, ctx) for k, v in (step.get("env") or {}).items()}
            uses = step.get("uses", "")
            if "run" in step:
                code = self.bash(expand(step["run"], ctx), env, workspace, outputs)
            elif uses.startswith(("actions/checkout@", "actions/setup-python@")):
                code = 0  # the workspace is checked out and the venv's Python is on PATH
            elif uses.startswith("actions/upload-artifact@"):
                with_ = {k: expand(v, ctx) for k, v in (step.get("with") or {}).items()}
                src = workspace / with_["path"]
                if src.exists():
                    dest = self.artifacts / with_["name"]
                    dest.mkdir(parents=True, exist_ok=True)
                    shutil.copy(src, dest / src.name)
                    code = 0
                else:
                    code = 0 if with_.get("if-no-files-found") == "ignore" else 1
            elif uses == "<owner>/rankgate@<ref>" or uses.startswith("./"):
                action_path = self.checkout if uses.startswith("<owner>") else workspace / uses
                code = self.run_action(action_path, step.get("with") or {}, workspace, ctx, outputs)
            else:
                raise SystemExit(f"follow_docs: no local stand-in for `uses: {uses}`")
            if step.get("id"):
                ctx["steps"][step["id"]] = {"outputs": outputs}
            if code != 0:
                ok = False
        return ok

    def run_action(self, action_path: Path, with_: dict[str, Any], workspace: Path, ctx: dict[str, Any],
                   outputs: dict[str, str]) -> int:
        action = yaml.safe_load((action_path / "action.yml").read_text(encoding="utf-8"))
        inputs = {}
        for name, spec in action["inputs"].items():
            given = with_.get(name, spec.get("default", ""))
            inputs[name] = expand(given, ctx)
        inner = {**ctx, "inputs": inputs, "github": {**ctx["github"], "action_path": str(action_path)}, "steps": {}}
        ok = self.run_steps(action["runs"]["steps"], workspace, inner)
        for name, spec in (action.get("outputs") or {}).items():
            outputs[name] = expand(spec.get("value", ""), inner)
        return 0 if ok else 1


def _git(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode:
        raise SystemExit(f"follow_docs: git {' '.join(args)} failed: {proc.stderr.strip()[-300:]}")
    return proc.stdout.strip()


def follow_history(base: Path, checkout: Path, env: dict[str, str], source: Path) -> None:
    """docs/history.md's workflow on pushes to main, with a local bare repository standing in for GitHub's:
    the first push creates the history branch; a push rejected because another job pushed first is rebased and
    pushed again (both entries kept); a branch that refuses every push fails the step after its tries."""
    doc = ROOT / "docs" / "history.md"
    (block,) = [b for b in blocks(doc, "yaml") if b.startswith("# .github/workflows/rankgate-history.yml")]
    (job,) = yaml.safe_load(block)["jobs"].values()
    root = base / "history-run"
    origin, work, other = root / "origin.git", root / "work", root / "other"
    root.mkdir()
    genv = {**env, "GIT_AUTHOR_NAME": "dev", "GIT_AUTHOR_EMAIL": "dev@example.com", "GIT_COMMITTER_NAME": "dev",
            "GIT_COMMITTER_EMAIL": "dev@example.com", "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(root)}
    _git("init", "--quiet", "--bare", "--initial-branch=main", str(origin), env=genv)
    _git("clone", "--quiet", str(origin), str(work), env=genv)
    for folder in ("eval", "scripts"):
        shutil.copytree(source / folder, work / folder)
    (work / ".gitignore").write_text("run.jsonl\ngate.json\nrankgate-comment.md\n", encoding="utf-8")
    _git("add", "-A", cwd=work, env=genv)

    def push_main(message: str) -> str:
        _git("commit", "--quiet", "--allow-empty", "-m", message, cwd=work, env=genv)
        _git("push", "--quiet", "origin", "HEAD:refs/heads/main", cwd=work, env=genv)
        return _git("rev-parse", "HEAD", cwd=work, env=genv)

    def run(sha: str) -> tuple[bool, str]:
        (root / "tmp").mkdir(exist_ok=True)
        runner = Runner(base, {**genv, "GITHUB_EVENT_NAME": "push", "GITHUB_REF": "refs/heads/main",
                               "GITHUB_REF_NAME": "main", "GITHUB_SHA": sha, "GITHUB_WORKSPACE": str(work),
                               "RUNNER_TEMP": str(root / "tmp"), "CI": "true", "GITHUB_ACTIONS": "true"}, checkout, {})
        ctx = {"github": {"token": "bot-token", "base_ref": "", "event_name": "push", "ref_name": "main", "sha": sha,
                          "event": {"repository": {"default_branch": "main"}}}}
        ok = runner.run_steps(job["steps"], work, ctx)
        return ok, "".join(runner.log)

    def branch_files() -> list[str]:
        return _git("--git-dir", str(origin), "ls-tree", "-r", "--name-only", "rankgate-history", env=genv).splitlines()

    print("docs/history.md, the history workflow on main:", flush=True)
    first = push_main("first")
    ok, log = run(first)
    files = branch_files() if ok else []
    entries = [f for f in files if f.startswith("history/entries/")]
    check(ok and len(entries) == 1 and "index.html" in files and "history/rankgate-history.json" in files,
          "the first push to main creates the branch with one entry and the dashboard"
          + ("" if ok else ": " + log[-400:]))

    second = push_main("second")
    hook = work / ".git" / "hooks" / "pre-push"  # another job pushes its entry to the branch first, once
    _git("clone", "--quiet", "--branch", "rankgate-history", str(origin), str(other), env=genv)
    hook.write_text(textwrap.dedent(f"""\
        #!/bin/bash
        [ -e {str(root / 'raced')!r} ] && exit 0
        touch {str(root / 'raced')!r}
        cd {str(other)!r}
        rankgate history add {str(source / 'eval' / 'raced-outcome.json')!r} --store history --commit 0123456789abcdef \\
          --when 2020-01-01 >/dev/null
        git add -A && git commit --quiet -m "another job" && git push --quiet origin HEAD:refs/heads/rankgate-history
        """), encoding="utf-8")
    hook.chmod(0o755)
    ok, log = run(second)
    entries = [f for f in branch_files() if f.startswith("history/entries/")]
    check(ok and (root / "raced").exists() and "was rejected (try 1 of 5)" in log and len(entries) == 3,
          f"a push rejected because another job pushed first is rebased and pushed: 3 entries ({len(entries)})"
          + ("" if ok else ": " + log[-400:]))
    page = _git("--git-dir", str(origin), "show", "rankgate-history:index.html", env=genv)
    check(page.count("<tr><td>20") >= 3 and second[:12] in page and "0123456789ab" in page,
          "the dashboard on the branch lists every entry, the other job's too")

    third = push_main("third")
    hook.write_text("#!/bin/bash\nexit 1\n", encoding="utf-8")
    ok, log = run(third)
    said = not ok and "(try 4 of 5)" in log and "(try 5 of 5)" not in log and log.count("::error::") == 1
    check(said and "::error::rankgate history: could not push to the branch rankgate-history in 5 tries" in log,
          "a branch that refuses every push fails the step after 5 tries, with one error" + ("" if said else ": " + log[-400:]))


def copy_checkout(dest: Path) -> None:
    skip = shutil.ignore_patterns(".git", ".venv", "venv", "build", "dist", "*.egg-info", "__pycache__", "*.so",
                                  ".pytest_cache", "rankgate-demo", "node_modules", ".mypy_cache", ".ruff_cache")
    shutil.copytree(ROOT, dest, ignore=skip)


def main() -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", type=Path, help="an existing fresh virtual environment to use")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="rankgate-docs-"))
    try:
        return follow(base, args.venv.resolve() if args.venv else None)
    finally:
        if os.environ.get("RANKGATE_KEEP_WALKTHROUGH"):
            print(f"kept {base}")
        else:
            shutil.rmtree(base, ignore_errors=True)


def follow(base: Path, venv: Path | None) -> int:
    checkout = base / "rankgate"
    copy_checkout(checkout)
    if venv is None:
        venv = base / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_", "VIRTUAL_ENV", "PYTHONPATH"))}
    env.update(PATH=f"{venv / 'bin'}{os.pathsep}{base / 'bin'}{os.pathsep}{env.get('PATH', '')}", VIRTUAL_ENV=str(venv),
               PIP_DISABLE_PIP_VERSION_CHECK="1")

    print("README, Two commands (first line, as written):", flush=True)
    readme = ROOT / "README.md"
    (two,) = [b for b in blocks(readme, "bash") if "rankgate demo" in b]
    first = two.splitlines()[0].split("#", 1)[0].strip()
    check(first == "pip install . && rankgate demo", f"the README's first command is `{first}`")
    proc = subprocess.run(["bash", "-eo", "pipefail", "-c", first], cwd=checkout, env=env, capture_output=True, text=True, check=False)
    check(proc.returncode == 0, f"`{first}` exits 0" + ("" if proc.returncode == 0 else f" (got {proc.returncode}: {proc.stderr.strip()[-300:]})"))
    demo = checkout / "rankgate-demo"
    check((demo / "runs" / "candidate.jsonl").is_file(), "the demo wrote its runs")
    if PROBLEMS:
        return 1

    # a user's repository: the demo's gold set and runs, the docs' ship criteria, a stand-in retriever
    doc = ROOT / "docs" / "gating.md"
    repo = base / "repo"
    (repo / "eval").mkdir(parents=True)
    (repo / "scripts").mkdir()
    shutil.copy(demo / "data" / "gold.jsonl", repo / "eval" / "gold.jsonl")
    (criteria,) = [b for b in blocks(doc, "yaml") if b.startswith("# ship-criteria.yaml")]
    (repo / "eval" / "ship-criteria.yaml").write_text(criteria, encoding="utf-8")
    (repo / "scripts" / "retrieve.py").write_text(textwrap.dedent(f"""\
        # stand-in for the user's retriever: the demo's run of the branch being built
        import os, shutil, sys
        which = "candidate" if os.environ.get("GITHUB_EVENT_NAME") == "pull_request" else "baseline"
        shutil.copy({str(demo / 'runs')!r} + f"/{{which}}.jsonl", sys.argv[sys.argv.index("--out") + 1])
        """), encoding="utf-8")
    (base / "bin").mkdir()
    gh = base / "bin" / "gh"  # GitHub's CLI, answering from the local artifact folder
    gh.write_text(textwrap.dedent(f"""\
        #!{sys.executable}
        import shutil, sys
        from pathlib import Path
        store = Path({str(base / 'artifacts')!r})
        a = sys.argv[1:]
        if a[:2] == ["run", "list"]:
            print("4242" if (store / "rankgate-baseline").is_dir() else "")
        elif a[:2] == ["run", "download"]:
            name, dest = a[a.index("--name") + 1], Path(a[a.index("--dir") + 1])
            dest.mkdir(parents=True, exist_ok=True)
            for f in (store / name).iterdir():
                shutil.copy(f, dest / f.name)
        else:
            sys.exit("gh stand-in: unsupported " + " ".join(a))
        """), encoding="utf-8")
    gh.chmod(0o755)

    workflows = {yaml.safe_load(b)["name"]: yaml.safe_load(b) for b in blocks(doc, "yaml") if b.startswith("# .github/workflows/")}
    fake = FakeGitHub()
    try:
        event = base / "event.json"
        event.write_text(json.dumps({"pull_request": {"number": 17}}), encoding="utf-8")
        gh_env = {**env, "GITHUB_API_URL": fake.url, "GITHUB_REPOSITORY": "acme/search", "GITHUB_WORKSPACE": str(repo),
                  "RUNNER_TEMP": str(base / "tmp"), "CI": "true", "GITHUB_ACTIONS": "true"}
        (base / "tmp").mkdir()

        print("docs/gating.md, baseline workflow on main:", flush=True)
        runner = Runner(base, {**gh_env, "GITHUB_EVENT_NAME": "push", "GITHUB_REF": "refs/heads/main"}, checkout, {})
        ctx = {"github": {"token": "bot-token", "base_ref": "", "event_name": "push", "event": {}}}
        (job,) = workflows["rankgate baseline"]["jobs"].values()
        ok = runner.run_steps(job["steps"], repo, ctx)
        check(ok, "the baseline job succeeds" + ("" if ok else ": " + runner.log[-1][-400:]))
        stored = base / "artifacts" / "rankgate-baseline" / "baseline-summary.json"
        check(stored.is_file() and "per_query" in json.loads(stored.read_text(encoding="utf-8")),
              "it stores baseline-summary.json with per-query values as the artifact")

        print("docs/gating.md, gate workflow on a pull request (run twice):", flush=True)
        for attempt in (1, 2):
            pr = repo / "pr-comment.md"
            pr.unlink(missing_ok=True)
            shutil.rmtree(repo / "baseline", ignore_errors=True)
            runner = Runner(base, {**gh_env, "GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(event),
                                   "GITHUB_BASE_REF": "main"}, checkout, {})
            ctx = {"github": {"token": "bot-token", "base_ref": "main", "event_name": "pull_request",
                              "event": {"pull_request": {"number": 17}}}}
            (job,) = workflows["rankgate gate"]["jobs"].values()
            ok = runner.run_steps(job["steps"], repo, ctx)
            outcome = json.loads((repo / "outcome.json").read_text(encoding="utf-8"))
            check(ok == (outcome["exit_code"] == 0),
                  f"run {attempt}: the job's result follows the gate (exit {outcome['exit_code']}, job {'ok' if ok else 'failed'})")
            check(outcome["baseline"] == {"kind": "summary", "label": "main", "rule": "paired"},
                  f"run {attempt}: gated against main's summary with the paired rule ({outcome['baseline']})")
            check(outcome["candidate"] == "PR #17", f"run {attempt}: the candidate is named PR #17")
            check(len(fake.comments) == 1 and fake.comments[0]["body"] == pr.read_text(encoding="utf-8"),
                  f"run {attempt}: one sticky comment, equal to pr-comment.md ({len(fake.comments)} comments)")
            check((base / "artifacts" / "rankgate-outcome" / "outcome.json").is_file(), f"run {attempt}: outcome uploaded")
        posts = [m for m, p in fake.requests if m in ("POST", "PATCH")]
        check(posts == ["POST", "PATCH"], f"the first run created the comment and the second updated it ({posts})")

        print("docs/gating.md, the vendored action:", flush=True)
        (step_block,) = [b for b in blocks(doc, "yaml") if "./third_party/rankgate" in b]
        copy_checkout(repo / "third_party" / "rankgate")
        steps = yaml.safe_load(textwrap.dedent(step_block))
        (repo / "outcome.json").unlink()
        runner = Runner(base, {**gh_env, "GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(event)}, checkout, {})
        shutil.rmtree(repo / "baseline", ignore_errors=True)
        shutil.copytree(base / "artifacts" / "rankgate-baseline", repo / "baseline")
        ok = runner.run_steps(steps, repo, {"github": {"token": "bot-token", "base_ref": "main", "event_name": "pull_request",
                                                      "event": {"pull_request": {"number": 17}}}})
        written = repo / "rankgate-outcome.json"
        check(written.is_file() and json.loads(written.read_text(encoding="utf-8"))["baseline"]["rule"] == "paired",
              "the vendored copy installs, gates (paired) and writes its outcome")
    finally:
        fake.close()

    gate0 = json.loads((base / "artifacts" / "rankgate-baseline" / "baseline-summary.json").read_text(encoding="utf-8"))
    (repo / "eval" / "raced-outcome.json").write_text(json.dumps(gate0), encoding="utf-8")
    follow_history(base, checkout, env, repo)

    print("docs/gating.md, Quick start (the console command, as written):", flush=True)
    quick = base / "quick"
    quick.mkdir()
    shutil.copy(repo / "eval" / "ship-criteria.yaml", quick / "ship-criteria.yaml")
    shutil.copy(repo / "eval" / "gold.jsonl", quick / "gold.jsonl")
    shutil.copy(demo / "runs" / "candidate.jsonl", quick / "run.jsonl")
    shutil.copy(base / "artifacts" / "rankgate-baseline" / "baseline-summary.json", quick / "baseline-summary.json")
    (console,) = [b for b in blocks(doc, "console") if "rankgate gate --config ship-criteria.yaml" in b]
    command = console.split("$ ", 1)[1].split("\n\n")[0].strip()
    proc = subprocess.run(["bash", "-c", command], cwd=quick, env=env, capture_output=True, text=True, check=False)
    check(proc.returncode in (0, 1) and "Traceback" not in proc.stderr, f"the quick start command gives a verdict (exit {proc.returncode})")
    check((quick / "pr-comment.md").is_file() and (quick / "outcome.json").is_file(), "it writes pr-comment.md and outcome.json")

    print("docs/gating.md, From Python (the first block, up to the pure decision on your own results):", flush=True)
    (python_block,) = [b for b in blocks(doc, "python") if "rankgate.gate(" in b]
    runnable = python_block.split("# Pure decision")[0]
    proc = subprocess.run([str(venv / "bin" / "python"), "-c", runnable], cwd=quick, env=env, capture_output=True, text=True, check=False)
    check(proc.returncode == 0 and proc.stdout.startswith("<!-- rankgate:gate -->"),
          "rankgate.gate(...) runs and prints the PR comment" + ("" if proc.returncode == 0 else f": {proc.stderr[-300:]}"))

    print("docs/gating.md, Comparing two runs by hand:", flush=True)
    shutil.copy(demo / "runs" / "baseline.jsonl", quick / "base_run.jsonl")
    shutil.copy(demo / "runs" / "candidate.jsonl", quick / "cand_run.jsonl")
    (compare_block,) = [b for b in blocks(doc, "console") if "rankgate compare" in b]
    command = compare_block.split("$ ", 1)[1].strip()
    proc = subprocess.run(["bash", "-c", command], cwd=quick, env=env, capture_output=True, text=True, check=False)
    check(proc.returncode == 0 and "recall@5" in proc.stdout and "ndcg@10" in proc.stdout,
          f"`{command}` prints the comparison (exit {proc.returncode})")

    print("docs/gating.md, Without the action (pip install from the repository at a pinned ref):", flush=True)
    (step_block,) = [b for b in blocks(doc, "yaml") if "git+https://github.com/<owner>/rankgate@<ref>" in b]
    install = next(s["run"] for s in yaml.safe_load(textwrap.dedent(step_block)) if "pip install" in s.get("run", ""))
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, check=False)
    if head.returncode != 0:
        print("(not run: this checkout is not a git repository, so there is no ref to install)")
    else:  # the repository is this checkout, the ref its commit; a fresh venv, as on a runner
        git_venv = base / "git-venv"
        subprocess.run([sys.executable, "-m", "venv", str(git_venv)], check=True)
        git_env = {**env, "PATH": f"{git_venv / 'bin'}{os.pathsep}{env['PATH']}", "VIRTUAL_ENV": str(git_venv)}
        url = "file://localhost" + ROOT.resolve().as_uri().removeprefix("file://")  # (pip refuses git+file:///…@ref)
        command = (install.replace("https://github.com/<owner>/rankgate", url)
                   .replace("<ref>", head.stdout.strip()))
        proc = subprocess.run(["bash", "-eo", "pipefail", "-c", command], cwd=base, env=git_env, capture_output=True,
                              text=True, check=False)
        check(proc.returncode == 0, f"`{install}` installs (exit {proc.returncode}{': ' + proc.stderr.strip()[-300:] if proc.returncode else ''})")
        proc = subprocess.run([str(git_venv / "bin" / "rankgate"), "--version"], env=git_env, capture_output=True,
                              text=True, check=False)
        check(proc.returncode == 0 and "rankgate" in proc.stdout, f"the installed `rankgate --version` runs (exit {proc.returncode})")

    if PROBLEMS:
        print(f"follow_docs: {len(PROBLEMS)} problem(s)", file=sys.stderr)
        return 1
    print("follow_docs: the README quick start and docs/gating.md work as written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
