"""Gold versions and gate owners: a gate against a baseline scored on another version of the gold set
says so (stderr, PR comment, HTML report, JSON); a failing gate names its owner."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from rankgate.cli.main import main
from rankgate.demo.pipeline import run_demo

from .test_gold import _lines, _write


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("demo") / "d"
    run_demo(out, seed=0)
    return out


def _gate(argv: list[object], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["gate", *map(str, argv)])
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    return code, out.out, out.err


def _config(demo: Path, tmp_path: Path, owner: bool = True, floor: str | None = None) -> Path:
    text = (demo / "data" / "ship-criteria.yaml").read_text(encoding="utf-8")
    if owner:
        text = text.replace("    label: recall@5 (relevant chunks in the top 5)\n",
                            "    label: recall@5 (relevant chunks in the top 5)\n    owner: search-quality\n")
    if floor:
        text = text.replace("threshold: 0.75 ", f"threshold: {floor} ")
    path = tmp_path / "ship.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.slow  # (the full tier: heavy, and what it guards is covered lighter by default)
def test_gate_warns_when_the_baseline_summary_used_another_gold_version(
        demo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = _lines(demo / "data" / "gold.jsonl")
    rows[0]["relevant_chunks"] = [{"chunk_id": "doc_export#c2", "grade": 2}]  # relabelled: a new gold version
    gold_v2 = _write(tmp_path / "gold_v2.jsonl", rows)
    config = _config(demo, tmp_path, owner=False)
    base = ["--config", config, "--candidate", demo / "runs" / "candidate.jsonl",
            "--baseline", demo / "baseline" / "summary.json"]
    _, _, err = _gate([*base, "--gold", gold_v2, "--comment", tmp_path / "c.md", "--json-out", tmp_path / "o.json"], capsys)
    assert "warning: bm25-english was scored on another version of the gold set than the baseline summary.json" in err
    comment = (tmp_path / "c.md").read_text(encoding="utf-8")
    assert "**Different gold set versions:**" in comment and "gold diff" in comment
    versions = json.loads((tmp_path / "o.json").read_text(encoding="utf-8"))["gold_versions"]
    assert versions["differ"] is True and versions["baseline"] != versions["candidate"]
    # the same gold file: no warning
    _, _, err = _gate([*base, "--gold", demo / "data" / "gold.jsonl", "--comment", tmp_path / "c2.md",
                          "--json-out", tmp_path / "o2.json"], capsys)
    assert "another version of the gold set" not in err
    assert "Different gold set versions" not in (tmp_path / "c2.md").read_text(encoding="utf-8")
    assert json.loads((tmp_path / "o2.json").read_text(encoding="utf-8"))["gold_versions"]["differ"] is False
    # a gate outcome used as the next baseline carries its gold version on
    _, _, err = _gate([*base[:-1], tmp_path / "o.json", "--gold", demo / "data" / "gold.jsonl"], capsys)
    assert "another version of the gold set" in err


def test_gate_and_compare_say_the_same_sentence_for_two_gold_versions(
        demo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One sentence, written once (rankgate.gating.alike): the gate's on stderr and in the PR comment, and
    compare's for the same two runs scored on the same two gold files."""
    import sys

    import rankgate
    from rankgate.flows.compare import _check_alike

    rows = _lines(demo / "data" / "gold.jsonl")
    rows[0]["relevant_chunks"] = [{"chunk_id": "doc_export#c2", "grade": 2}]
    gold_v2 = _write(tmp_path / "gold_v2.jsonl", rows)
    comment = tmp_path / "c.md"
    _, _, err = _gate(["--config", _config(demo, tmp_path, owner=False), "--gold", gold_v2, "--candidate",
                       demo / "runs" / "candidate.jsonl", "--baseline", demo / "baseline" / "summary.json",
                       "--baseline-label", "baseline.jsonl", "--comment", comment], capsys)
    said_by_gate = [line.partition("warning: ")[2] for line in err.splitlines() if "warning: " in line]
    # the summary was written by evaluating baseline.jsonl on the first gold file
    results = [rankgate.evaluate(str(demo / "data" / "gold.jsonl"), str(demo / "runs" / "baseline.jsonl")),
               rankgate.evaluate(str(gold_v2), str(demo / "runs" / "candidate.jsonl"))]
    scorer = SimpleNamespace(warn=lambda line: print(f"rankgate compare: {line}", file=sys.stderr))
    _check_alike(scorer, results, ["baseline.jsonl", "bm25-english"], 0)  # the candidate is named by its system
    said_by_compare = [line.partition("warning: ")[2] for line in capsys.readouterr().err.splitlines()]
    assert said_by_gate == said_by_compare and len(said_by_gate) == 1
    assert said_by_gate[0].startswith("bm25-english was scored on another version of the gold set than the "
                                      "baseline baseline.jsonl (gold sha256 ")
    assert f"**Different gold set versions:** {said_by_gate[0]}." in comment.read_text(encoding="utf-8").replace("`", "")


def test_failing_gate_names_its_owner_in_comment_and_report(demo: Path, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    config = _config(demo, tmp_path, floor="0.99")  # recall_at_5 fails its floor
    code, _, _ = _gate(["--config", config, "--gold", demo / "data" / "gold.jsonl", "--candidate",
                        demo / "runs" / "candidate.jsonl", "--baseline", demo / "runs" / "baseline.jsonl",
                        "--comment", tmp_path / "c.md"], capsys)
    assert code == 1
    comment = (tmp_path / "c.md").read_text(encoding="utf-8")
    line = next(s for s in comment.splitlines() if "recall@5" in s and s.startswith("❌"))
    assert "Owner: search-quality." in line
    assert comment.count("Owner:") == 1  # gates without an owner, or that pass, name none
    capsys.readouterr()
    assert main(["report", "--gold", str(demo / "data" / "gold.jsonl"), "--run", str(demo / "runs" / "candidate.jsonl"),
                 "--baseline", str(demo / "runs" / "baseline.jsonl"), "--config", str(config), "-o",
                 str(tmp_path / "r.html")]) in (0, 1)
    assert "Owner: search-quality." in (tmp_path / "r.html").read_text(encoding="utf-8")


def test_compare_warns_on_runs_scored_on_other_gold_versions(capsys: pytest.CaptureFixture[str]) -> None:
    import sys

    from rankgate.flows.compare import _check_alike

    def result(sha: str | None) -> SimpleNamespace:
        return SimpleNamespace(inputs={"gold": {"path": "g", "sha256": sha}})

    # the compare flow warns through its scorer's callback; the command prints what it is given on stderr
    scorer = SimpleNamespace(warn=lambda line: print(f"rankgate compare: {line}", file=sys.stderr))
    _check_alike(scorer, [result("a" * 64), result("a" * 64), result("b" * 64), result(None)], ["A", "B", "C", "D"], 0)
    err = capsys.readouterr().err
    assert err.count("warning") == 1 and "C was scored on another version of the gold set than the baseline A" in err
