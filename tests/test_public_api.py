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
        "EvaluationResult", "Metric", "MetricDefinition", "__version__", "compare", "evaluate", "gate", "load_gold",
        "load_run", "parse_metric", "register_metric", "report",
    ])
    for name in rankgate.__all__:
        assert getattr(rankgate, name) is not None


def test_judge_and_error_names_are_pinned():
    import rankgate.errors
    import rankgate.judges
    import rankgate.judges.testing

    assert sorted(rankgate.errors.__all__) == ["ConfigError", "InputError", "JudgeError", "MetricSpecError",
                                               "OutputError", "RankgateError", "UsageError"]
    assert sorted(rankgate.judges.__all__) == sorted([
        "BUDGET_REACHED", "DEFAULT_MAX_STATEMENTS", "MAX_REPEATS", "MAX_RETRIES", "MAX_STATEMENTS", "MAX_WORKERS",
        "TASKS", "TASK_FIELDS", "Judge", "JudgeCallError", "JudgeClient", "JudgeItem", "Judgement", "Label", "Plan",
        "RepeatVariance", "coverage", "open_judge", "repeat_variance"])
    assert sorted(rankgate.judges.testing.__all__) == ["ReplayJudge", "SUBJECT"]
    for module in (rankgate.errors, rankgate.judges, rankgate.judges.testing):
        for name in module.__all__:
            assert getattr(module, name) is not None


def _modules_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys, json; print(json.dumps(sorted(sys.modules)))"], cwd=ROOT,
                         capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def test_import_and_help_load_nothing_heavy():
    for code in ("import rankgate",
                 "import contextlib, io\nfrom rankgate.cli.main import main\nwith contextlib.redirect_stdout(io.StringIO()):\n"
                 "    try: main(['--help'])\n    except SystemExit: pass",
                 "import contextlib, io\nfrom rankgate.cli.main import main\nwith contextlib.redirect_stdout(io.StringIO()):\n"
                 "    try: main(['evaluate', '--help'])\n    except SystemExit: pass"):
        loaded = _modules_after(code)
        heavy = sorted(m for m in HEAVY if m in loaded)
        assert not heavy, f"{code!r} imported {heavy}"
    # the finder that keeps 0.1's module paths importable costs nothing either (importlib.abc would load
    # importlib.resources, tempfile and pathlib: twice the time of ``import rankgate``)
    assert not {"importlib.abc", "importlib.resources", "tempfile"} & _modules_after("import rankgate")


def test_evaluate_keeps_pandas_out():
    # pyarrow imports pandas (when installed) on many conversions; rankgate's own paths avoid them.
    code = ("import rankgate\n"
            "rankgate.evaluate('examples/gold.jsonl', 'examples/run.jsonl', ['ndcg@10', 'fresh@5', 'forbidden@3'])\n"
            "rankgate.evaluate('examples/gold.jsonl', 'examples/run.jsonl', ['mrr'], level='doc')\n")
    loaded = _modules_after(code)
    assert "pandas" not in loaded and "scipy" not in loaded
