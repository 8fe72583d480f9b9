"""One command's run builds only that command's parser (the others cost ~0.1 s to import and build)."""
from __future__ import annotations

import subprocess
import sys

import pytest

from rankgate.cli.main import COMMANDS, _named_command, build_parser

from .conftest import ROOT


@pytest.mark.parametrize("argv, name", [
    (["traces", "analyze", "--traces", "x"], "traces"),
    (["--debug", "traces", "check"], "traces"),
    (["calibrate-abstention", "--gold", "g"], "calibrate_abstention"),
    (["calibrate_abstention"], None),     # not a command name: the full parser says which exist
    (["bogus", "traces"], None),
    (["--help"], None),
    ([], None),
])
def test_named_command(argv, name):
    assert _named_command(argv) == name


def test_one_command_parser_parses_like_the_full_one():
    argv = ["traces", "analyze", "--traces", "a.parquet", "--out", "o", "--signals", "headline", "--by", "tenant"]
    one = build_parser("traces")
    sub = next(a for a in one._actions if a.dest == "command")
    assert set(sub.choices) == {"traces"}
    assert vars(one.parse_args(argv)) == vars(build_parser().parse_args(argv))
    full = next(a for a in build_parser()._actions if a.dest == "command")
    assert len(set(full.choices)) == len(COMMANDS)


def test_running_one_command_imports_no_other_command():
    code = ("import sys\nfrom rankgate.cli.main import main\ntry:\n    main(['traces', 'analyze', '--help'])\n"
            "except SystemExit:\n    pass\n"
            "print(' '.join(sorted(m for m in sys.modules if m.startswith(('rankgate.cli.', 'rankgate.judges'))"
            ")))\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT / "src")})
    assert res.returncode == 0, res.stderr[-2000:]
    loaded = res.stdout.strip().splitlines()[-1].split()
    assert "rankgate.cli.traces" in loaded
    others = {f"rankgate.cli.{n}" for n in COMMANDS} - {"rankgate.cli.traces"}
    # (traces has a judge action, whose judge options take their bounds from rankgate.judges; nothing past it)
    allowed = {"rankgate.judges", "rankgate.judges.base", "rankgate.judges.client", "rankgate.judges.cache"}
    assert not others & set(loaded) and not any(m.startswith("rankgate.judges") and m not in allowed
                                                for m in loaded), loaded
