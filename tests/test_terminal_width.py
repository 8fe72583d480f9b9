"""Terminal output at 80 columns: names stay whole, nothing runs past the width (COLUMNS respected)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

from rich.cells import cell_len
from rich.console import Console

from rankgate.stats.paired import compare
from rankgate.render.compare import comparison_renderable

from .test_compare import check_golden, make_pair

DATA = Path(__file__).parent / "data" / "report"


def _render(renderable, width: int) -> str:
    console = Console(width=width, color_system=None, force_terminal=False, record=True, file=io.StringIO())
    console.print(renderable)
    return console.export_text()


def test_compare_table_at_80_columns_keeps_metric_names_whole():
    base, cand = make_pair()
    cmp = compare(base, cand, by=["lang"], resamples=500, n_permutations=999, top=5)
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
    from rankgate.scoring.engine import evaluate
    from rankgate.render.panel import print_panel

    gold = str(DATA / "gold.jsonl")
    metrics = ["recall@5", "distinct_docs@5", "mrr"]
    base, cand = evaluate(gold, str(DATA / "base.jsonl"), metrics), evaluate(gold, str(DATA / "run.jsonl"), metrics)
    cmp = compare(base, cand, resamples=200, n_permutations=199)
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

    from rankgate.cli.main import main

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
    from rankgate.render.terminal import coverage_lines

    one = rankgate.evaluate({"q1": {"a": 1}}, {"q1": {"a": 1.0}}, ["mrr"])
    two = rankgate.evaluate({"q1": {"a": 1}, "q2": {"b": 1}}, {"q1": {"a": 1.0}}, ["mrr"])
    assert coverage_lines(one)[0] == "1 gold query evaluated"
    assert coverage_lines(two)[0] == "2 gold queries evaluated"


# -- a long --by value at 80 columns: the label gives way, never a number ----------------------------

LONG = "customer-support-escalations-enterprise-tier-long-segment-name"


def _long_segment_result(run_shift: int = 0):
    from rankgate.scoring.engine import evaluate

    gold = [{"query_id": f"q{i}", "relevant": ["a"], "tags": {"team": LONG if i % 2 else "short"}} for i in range(30)]
    run = [{"query_id": f"q{i}", "topk": ["a"] if (i + run_shift) % 3 else ["b", "c", "a"],
            "latency_ms": {"retrieve": 10 + i, "rerank": 5 + i % 7}} for i in range(30)]
    return evaluate(gold, run, ["recall@1", "ndcg@10", "mrr"])


def _cells(text: str) -> list[str]:
    return [c.strip() for line in text.splitlines() for c in line.split("│")]


def test_segment_table_wraps_a_long_label_and_keeps_every_number_whole():
    from rankgate.render.numbers import fmt_value, fmt_value_ci
    from rankgate.render.tables import segment_table
    from rankgate.stats.segments import segment_summary

    summary = segment_summary(_long_segment_result(), ["tags.team"], resamples=200)
    text = _render(segment_table(summary), 80)
    assert max(cell_len(line) for line in text.splitlines()) <= 80
    cells = _cells(text)
    for r in summary.rows:  # every n, mean and interval in full, in a cell of its own
        assert str(r.n) in cells and fmt_value(r.metric, r.mean) in cells
        assert fmt_value_ci(r.metric, r.ci_low, r.ci_high) in cells
    assert "…" not in text and LONG.replace("-", "") in text.replace("\n", "").replace(" ", "").replace("│", "").replace("-", "")
    wide = _render(segment_table(summary), 200)  # at a normal width the label stays on its line
    assert any(line.startswith(f"team = {LONG} ") for line in wide.splitlines())


def test_compare_table_with_a_long_segment_keeps_numbers_whole_at_80_columns():
    from rankgate.render.numbers import fmt_delta_ci, fmt_value

    cmp = compare(_long_segment_result(1), _long_segment_result(0), by=["tags.team"], resamples=200,
                  n_permutations=199, top=3)
    text = _render(comparison_renderable(cmp), 80)
    assert max(cell_len(line) for line in text.splitlines()) <= 80
    table = text.split("Most")[0]
    for r in cmp.rows:
        for value in (fmt_value(r.metric, r.baseline), fmt_value(r.metric, r.candidate),
                      fmt_delta_ci(r.metric, r.ci_low, r.ci_high)):
            assert value in table, (value, table)
    assert "…" not in table.replace("ent…", "")  # only the segment label (shortened to 40) may end in one
    assert {"recall@1", "ndcg@10", "mrr"} <= {line.split()[0] for line in table.splitlines() if line.strip()}


def test_latency_table_stacks_intervals_under_values_when_narrow():
    from rankgate.experiments.latency import latency_summary
    from rankgate.render.experiments import latency_renderable

    summary = latency_summary(_long_segment_result(), by=["tags.team"], resamples=200)
    text = _render(latency_renderable(summary), 80)
    assert max(cell_len(line) for line in text.splitlines()) <= 80
    assert "…" not in text and "CI under each value" in text
    intervals = [w for line in text.splitlines()[1:] for w in line.split() if w.startswith("(")]
    assert len(intervals) == 4 * 3 * 3 and all(w.endswith(")") for w in intervals)  # 4 stats, 3 stages, 3 scopes
    wide = _render(latency_renderable(latency_summary(_long_segment_result(), resamples=200)), 120)
    assert "CI under each value" not in wide and "│ retrieve │ all queries │" in wide
