"""Terminal output at 80 columns: names stay whole, nothing runs past the width (COLUMNS respected)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

from rich.cells import cell_len
from rich.console import Console

from rankgate.compare import compare
from rankgate.report.compare import comparison_renderable

from .test_compare import check_golden, make_pair

DATA = Path(__file__).parent / "data" / "report"


def _render(renderable, width: int) -> str:
    console = Console(width=width, color_system=None, force_terminal=False, record=True, file=io.StringIO())
    console.print(renderable)
    return console.export_text()


def test_compare_table_at_80_columns_keeps_metric_names_whole():
    base, cand = make_pair()
    cmp = compare(base, cand, by=["lang"], n_resamples=500, n_permutations=999, top=5)
    text = _render(comparison_renderable(cmp), 80)
    check_golden("compare_table_80.txt", text)
    lines = text.splitlines()
    assert max(cell_len(line) for line in lines) <= 80
    firsts = [line.split()[0] for line in lines[1:] if line.strip() and not line.startswith(("─", " "))]
    assert {"metric", "recall@5", "ndcg@10"} <= set(firsts)
    assert any(line.startswith("  lang = de ") for line in lines)
    assert lines[1].split()[-1] == "verdict"  # headers and verdicts wrap at spaces, never inside a word
    assert {w for line in lines[2:16] for w in line.split()} >= {"within", "noise"}
    assert not any(w in text.split() for w in ("verdic", "withi", "nois", "metri"))


def test_compare_command_follows_columns(tmp_path):
    env = {**os.environ, "COLUMNS": "80"}
    out = subprocess.run([sys.executable, "-m", "rankgate", "compare", "--gold", str(DATA / "gold.jsonl"),
                          str(DATA / "base.jsonl"), str(DATA / "run.jsonl"), "--by", "lang", "--resamples", "200"],
                         capture_output=True, text=True, encoding="utf-8", env=env, cwd=tmp_path, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert max(cell_len(line) for line in lines) <= 80, out.stdout
    assert any(line.startswith("recall@5 ") for line in lines), out.stdout


def test_panel_with_a_comparison_cuts_no_value_at_100_columns():
    from rankgate.engine import evaluate
    from rankgate.report.panel import print_panel

    gold = str(DATA / "gold.jsonl")
    metrics = ["recall@5", "distinct_docs@5", "mrr"]
    base, cand = evaluate(gold, str(DATA / "base.jsonl"), metrics), evaluate(gold, str(DATA / "run.jsonl"), metrics)
    cmp = compare(base, cand, n_resamples=200, n_permutations=199)
    console = Console(width=100, color_system=None, force_terminal=False, record=True, file=io.StringIO())
    print_panel(cand, {m: (0.1, 0.9) for m in metrics}, comparison=cmp, console=console)
    text = console.export_text()
    assert "…" not in text and max(cell_len(line) for line in text.splitlines()) <= 100
    assert "distinct_docs@5" in text


def test_gate_command_follows_columns(tmp_path):
    # a gate on a metric that applies to no query writes a long warning sentence: it wraps at COLUMNS
    crit = tmp_path / "crit.yaml"
    crit.write_text("gates:\n  - metric: recall@5\n    threshold: 0.1\n  - name: no_retired_docs\n"
                    "    metric: forbidden@5\n    max: 0\n")
    (tmp_path / "gold.jsonl").write_text('{"query_id": "q1", "relevant": ["a"]}\n')  # no must_not_retrieve
    (tmp_path / "run.jsonl").write_text('{"query_id": "q1", "topk": ["a", "b"]}\n')
    env = {**os.environ, "COLUMNS": "80"}
    out = subprocess.run([sys.executable, "-m", "rankgate", "gate", "--config", str(crit), "--gold",
                          "gold.jsonl", "--candidate", "run.jsonl", "--no-step-summary"],
                         capture_output=True, text=True, encoding="utf-8", env=env, cwd=tmp_path, timeout=120, check=False)
    assert out.returncode in (0, 1), out.stderr
    assert "could not be checked" in out.stdout
    assert max(cell_len(line) for line in out.stdout.splitlines()) <= 80, out.stdout


def test_every_help_fits_80_columns(monkeypatch, capsys):
    import pytest

    from rankgate.cli import main

    monkeypatch.setenv("COLUMNS", "80")
    for command in ([], ["evaluate"], ["compare"], ["gate"], ["report"], ["retrieve"], ["demo"], ["metrics"], ["gold"]):
        with pytest.raises(SystemExit):
            main([*command, "--help"])
        text = capsys.readouterr().out
        # argparse cannot wrap a long list of choices in the usage synopsis; everything else must fit
        long = [line for line in text.splitlines() if cell_len(line) > 80 and not line.lstrip().startswith("[")]
        assert long == [], (command, long)


def test_coverage_line_counts_one_query_in_the_singular():
    import rankgate
    from rankgate.report.terminal import coverage_lines

    one = rankgate.evaluate({"q1": {"a": 1}}, {"q1": {"a": 1.0}}, ["mrr"])
    two = rankgate.evaluate({"q1": {"a": 1}, "q2": {"b": 1}}, {"q1": {"a": 1.0}}, ["mrr"])
    assert coverage_lines(one)[0] == "1 gold query evaluated"
    assert coverage_lines(two)[0] == "2 gold queries evaluated"
