"""``max_stale_labels`` inside ``rankgate gate``: given the corpus (``--corpus``) the gate counts the
gold set's stale labels and fails above the limit, naming the owner; without the corpus it says the
limit was not checked (never a silent pass)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rankgate.cli.main import main
from rankgate.demo.pipeline import run_demo
from rankgate.errors import ConfigError
from rankgate.gating.config import parse_config

from .test_gold import DEMO, _lines, _write
from .test_gold_versions import _gate


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("demo") / "d"
    run_demo(out, seed=0)
    return out


def _config(demo: Path, tmp_path: Path, stale: str) -> Path:
    text = (demo / "data" / "ship-criteria.yaml").read_text(encoding="utf-8") + stale
    path = tmp_path / "ship.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def next_release(tmp_path: Path) -> Path:
    """The demo corpus one release later: the export guide was rewritten (its chunks doc_export#c1..c3
    are gone, replaced by new ids) and the 2026 price page is deprecated; the gold set was not touched."""
    rows = []
    for row in _lines(DEMO / "corpus.jsonl"):
        if row["chunk_id"].startswith("doc_export#"):
            rows.append({**row, "chunk_id": row["chunk_id"].replace("#", "#v2-"), "doc_version": "2026-07-01"})
            continue
        if row["chunk_id"] == "doc_pricing_2026#c1":
            row = {**row, "status": "deprecated"}
        rows.append(row)
    return _write(tmp_path / "corpus_next.jsonl", rows)


def _argv(demo: Path, config: Path, tmp_path: Path, *extra: object) -> list[object]:
    return ["--config", config, "--gold", demo / "data" / "gold.jsonl", "--candidate", demo / "runs" / "candidate.jsonl",
            "--baseline", demo / "runs" / "baseline.jsonl", "--comment", tmp_path / "c.md", "--json-out",
            tmp_path / "o.json", *extra]


def test_a_corpus_change_without_a_gold_change_is_flagged(demo: Path, tmp_path: Path, next_release: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    config = _config(demo, tmp_path, "max_stale_labels: {max: 2%, owner: docs-team}\n")
    # the corpus the gold set was made on: nothing stale, the gate passes as before
    code, out, _ = _gate(_argv(demo, config, tmp_path, "--corpus", DEMO / "corpus.jsonl"), capsys)
    before = json.loads((tmp_path / "o.json").read_text(encoding="utf-8"))
    assert before["stale_labels"]["status"] == "pass" and code == (0 if before["passed"] else 1)
    assert "No stale" not in out and "Stale labels:" not in out  # within the limit: no sentence
    # the next release: the export guide's labels now point at chunks that no longer exist
    code, out, _ = _gate(_argv(demo, config, tmp_path, "--corpus", next_release), capsys)
    assert code == 1
    outcome = json.loads((tmp_path / "o.json").read_text(encoding="utf-8"))
    st = outcome["stale_labels"]
    assert st["status"] == "fail" and outcome["passed"] is False
    assert st["owner"] == "docs-team" and st["limit"] == "2.0%" and st["corpus"] == "corpus_next.jsonl"
    assert st["by_reason"]["missing"] >= 1 and st["by_reason"]["deprecated"] >= 1
    assert st["stale"] == sum(st["by_reason"].values()) and st["share"] == pytest.approx(st["stale"] / st["labels"])
    comment = (tmp_path / "c.md").read_text(encoding="utf-8")
    line = next(s for s in comment.splitlines() if s.startswith("❌ Stale labels:"))
    assert f"{st['stale']} of {st['labels']} gold ids (" in line and "graded labels and must-not-retrieve ids)" in line and "the limit is 2.0%" in line
    assert line.rstrip().endswith("Owner: docs-team.")
    assert f"| ❌ | stale labels | {st['share'] * 100:.1f}% ({st['stale']} of {st['labels']} gold ids) | — |" in comment
    assert "Retrieval gate failed" in comment.splitlines()[1]
    assert "Stale labels:" in out and "stale labels" in out  # the terminal says so too
    # the same numbers as 'rankgate gold stale' on the same files
    capsys.readouterr()
    assert main(["gold", "stale", "--gold", str(demo / "data" / "gold.jsonl"), "--corpus", str(next_release),
                 "--config", str(config), "--format", "text"]) == 1
    assert f"{st['stale']} of {st['labels']} gold ids are stale" in capsys.readouterr().out


def test_without_the_corpus_the_limit_is_not_checked_and_says_so(demo: Path, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    config = _config(demo, tmp_path, "max_stale_labels: 5\n")
    code, out, _ = _gate(_argv(demo, config, tmp_path), capsys)
    outcome = json.loads((tmp_path / "o.json").read_text(encoding="utf-8"))
    assert outcome["stale_labels"]["status"] == "not_checked" and outcome["stale_labels"]["share"] is None
    comment = (tmp_path / "c.md").read_text(encoding="utf-8")
    assert "Stale labels were not checked" in comment and "`--corpus`" in comment
    assert "not checked (no `--corpus`)" in comment
    assert "NOT CHECKED" in out and "Stale labels were not checked" in out
    assert code == (0 if outcome["passed"] else 1)  # not checked never fails, never passes silently


def test_warning_severity_reports_without_blocking(demo: Path, tmp_path: Path, next_release: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    config = _config(demo, tmp_path, "max_stale_labels: {max: 0, severity: warning}\n")
    _gate(_argv(demo, config, tmp_path, "--corpus", next_release), capsys)
    outcome = json.loads((tmp_path / "o.json").read_text(encoding="utf-8"))
    assert outcome["stale_labels"]["status"] == "warn"
    assert "(warning: does not block)" in (tmp_path / "c.md").read_text(encoding="utf-8")
    config = _config(demo, tmp_path, "")  # no limit: nothing to say about stale labels
    _gate(_argv(demo, config, tmp_path, "--corpus", next_release), capsys)
    assert json.loads((tmp_path / "o.json").read_text(encoding="utf-8"))["stale_labels"] is None


def test_stale_limit_config_forms() -> None:
    base = "gates:\n  - metric: recall@5\n    threshold: 0.5\n"
    c = parse_config(base + "max_stale_labels: {max: '3%', owner: docs-team, severity: warning}\n")
    assert (c.max_stale_share, c.stale_owner, c.stale_severity) == (0.03, "docs-team", "warning")
    c = parse_config(base + "max_stale_labels: 10\n")
    assert (c.max_stale_labels, c.stale_owner, c.stale_severity) == (10, None, "error")
    for bad, says in [("max_stale_labels: {owner: x}\n", "max_stale_labels.max"),
                      ("max_stale_labels: {max: 2%, ownr: x}\n", "did you mean 'owner'"),
                      ("max_stale_labels: {max: 2%, severity: fatal}\n", "error|warning")]:
        with pytest.raises(ConfigError) as err:
            parse_config(base + bad, path="ship.yaml")
        assert says in str(err.value) and "ship.yaml:4" in str(err.value)


def test_validate_with_the_demo_baseline_run_and_summary(demo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """gold validate --baseline on the demo: the demo's baseline run and its summary.json give the same
    bootstrap figures, which differ from the binomial ones."""
    base = ["gold", "validate", "--gold", str(demo / "data" / "gold.jsonl"), "--config",
            str(demo / "data" / "ship-criteria.yaml"), "--as-of", "2026-06-01"]
    capsys.readouterr()
    assert main(base) == 0
    binomial = capsys.readouterr().out
    assert main([*base, "--baseline", str(demo / "runs" / "baseline.jsonl")]) == 0
    from_run = capsys.readouterr().out
    assert "bootstrap standard error of baseline baseline.jsonl" in from_run
    table = [line for line in from_run.splitlines() if line.startswith("| recall\\_at\\_5 |")]
    assert table and table != [line for line in binomial.splitlines() if line.startswith("| recall\\_at\\_5 |")]
    summary = demo / "baseline" / "summary.json"
    if "per_query" in json.loads(summary.read_text(encoding="utf-8")):
        assert main([*base, "--baseline", str(summary)]) == 0
        assert capsys.readouterr().out.replace("summary.json", "baseline.jsonl") == from_run


def test_bad_inputs_of_the_stale_gate_are_refused(demo: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from .hostile import assert_refused

    out = tmp_path / "out"
    out.mkdir()
    typo = _config(demo, tmp_path, "max_stale_label: 2%\n")  # an unknown key: refused, with the right name
    assert_refused(["gate", *map(str, _argv(demo, typo, out))], out, names=[typo], capsys=capsys,
                   contains=["did you mean 'max_stale_labels'"])
    config = _config(demo, tmp_path, "max_stale_labels: 2%\n")
    dup = _write(tmp_path / "dup.jsonl", [{"chunk_id": "a"}, {"chunk_id": "a"}])
    assert_refused(["gate", *map(str, _argv(demo, config, out, "--corpus", dup))], out, names=[dup], capsys=capsys,
                   contains=["repeats chunk id 'a'"])
    missing = tmp_path / "nowhere.jsonl"
    assert_refused(["gate", *map(str, _argv(demo, config, out, "--corpus", missing))], out, names=[missing],
                   capsys=capsys)
    broken = tmp_path / "summary.json"
    broken.write_text('{"metrics": {"recall@5": {"mean": "high"}}}', encoding="utf-8")
    assert_refused(["gold", "validate", "--gold", str(demo / "data" / "gold.jsonl"), "--config",
                    str(demo / "data" / "ship-criteria.yaml"), "--baseline", str(broken)], out, names=[broken],
                   capsys=capsys)
