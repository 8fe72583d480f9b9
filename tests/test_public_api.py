"""The public surface is pinned, and start-up stays light."""

from __future__ import annotations

import json
import subprocess
import sys

import rankgate

from .conftest import ROOT

HEAVY = ["numpy", "pyarrow", "duckdb", "pandas", "scipy", "matplotlib", "pyspark", "rich", "yaml", "bm25s", "torch"]


def test_all_is_pinned():
    assert sorted(rankgate.__all__) == sorted([
        "EvaluationResult", "Metric", "MetricDefinition", "__version__", "evaluate", "gate", "load_gold",
        "load_run", "parse_metric", "register_metric",
    ])
    for name in rankgate.__all__:
        assert getattr(rankgate, name) is not None


def _modules_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys, json; print(json.dumps(sorted(sys.modules)))"], cwd=ROOT,
                         capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def test_import_and_help_load_nothing_heavy():
    for code in ("import rankgate",
                 "import contextlib, io\nfrom rankgate.cli import main\nwith contextlib.redirect_stdout(io.StringIO()):\n"
                 "    try: main(['--help'])\n    except SystemExit: pass",
                 "import contextlib, io\nfrom rankgate.cli import main\nwith contextlib.redirect_stdout(io.StringIO()):\n"
                 "    try: main(['evaluate', '--help'])\n    except SystemExit: pass"):
        loaded = _modules_after(code)
        heavy = sorted(m for m in HEAVY if m in loaded)
        assert not heavy, f"{code!r} imported {heavy}"


def test_evaluate_keeps_pandas_out():
    # pyarrow imports pandas (when installed) on many conversions; rankgate's own paths avoid them.
    code = ("import rankgate\n"
            "rankgate.evaluate('examples/gold.jsonl', 'examples/run.jsonl', ['ndcg@10', 'fresh@5', 'forbidden@3'])\n"
            "rankgate.evaluate('examples/gold.jsonl', 'examples/run.jsonl', ['mrr'], level='doc')\n")
    loaded = _modules_after(code)
    assert "pandas" not in loaded and "scipy" not in loaded
