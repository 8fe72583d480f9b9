"""`rankgate demo`: the whole loop runs end to end, says what the seeded numbers are, and is reproducible.

The pipeline runs once for the module (about a second); the CLI tests run it twice more.
The pinned numbers were measured on the built-in data with seed 0; if one changes, the demo's story
(docs/demo.md, the terminal text) may have changed with it: check both before updating a number.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rankgate.cli.main import main
from rankgate.demo import run_demo
from rankgate.demo.pipeline import DEMO_METRICS, MARKER
from rankgate.demo.story import render
from rankgate.errors import UsageError

FILES = (
    "data/corpus.jsonl",
    "data/gold.jsonl",
    "data/ship-criteria.yaml",
    "data/answers.jsonl",
    "data/answer-labels.jsonl",
    "data/traces.jsonl",
    "runs/baseline.jsonl",
    "runs/candidate.jsonl",
    "baseline/metrics.csv",
    "baseline/summary.json",
    "candidate/metrics.csv",
    "candidate/summary.json",
    "compare.md",
    "pr-comment.md",
    "gate.json",
    "answers/answers.csv",
    "answers/summary.json",
    "validity/summary.json",
    "validity/validity.md",
    "report.html",
)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("demo") / "rankgate-demo"
    return run_demo(out, seed=0)


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# -- outputs ------------------------------------------------------------------------------------
def test_every_output_is_written_and_listed(demo) -> None:
    assert [o.relative for o in demo.outputs] == list(FILES)
    for o in demo.outputs:
        assert o.path == demo.out_dir / o.relative
        assert o.path.is_file() and o.path.stat().st_size > 0, o.relative
        assert o.what
    assert (demo.out_dir / MARKER).is_file()
    assert set(_files(demo.out_dir)) == set(FILES) | {MARKER}


def test_data_copies_are_the_packaged_files(demo) -> None:
    packaged = Path(__file__).resolve().parents[1] / "src" / "rankgate" / "demo" / "data"
    for name in ("corpus.jsonl", "gold.jsonl", "ship-criteria.yaml", "answers.jsonl", "answer-labels.jsonl",
                 "traces.jsonl"):
        assert (demo.out_dir / "data" / name).read_bytes() == (packaged / name).read_bytes()


def test_runs_are_deterministic_files(demo) -> None:
    for role in ("baseline", "candidate"):
        lines = (demo.out_dir / "runs" / f"{role}.jsonl").read_text(encoding="utf-8").splitlines()
        assert len(lines) == 144
        first = json.loads(lines[0])
        assert "latency_ms" not in first  # timing would make the file differ run to run
        assert first["system"] == demo.runs[0 if role == "baseline" else 1].config.name
        assert len(first["topk"]) <= 100


def test_runs_record_their_artifacts_and_the_report_shows_them(demo) -> None:
    """The chunking of the corpus and the preset's settings are on every run record (no embedding model, no
    reranker: the demo has none); the report's "Run artifacts" block and compare.md show them."""
    for run in demo.runs:
        first = json.loads((demo.out_dir / "runs" / f"{run.role}.jsonl").read_text(encoding="utf-8").splitlines()[0])
        assert first["chunker"] == {"method": "paragraphs, written as chunks (no splitter run)",
                                    "documents": demo.corpus["documents"], "chunks": demo.corpus["chunks"]}
        assert first["retriever"] == {"kind": run.config.retriever, **run.config.options}
        assert "embedding_model" not in first and "reranker" not in first
    html = (demo.out_dir / "report.html").read_text(encoding="utf-8")
    block = html[html.index('<div class="artifacts"'):]
    block = block[:block.index("</tbody>")]
    rows = {r.split("</td>")[0]: r for r in block.split("<tr><td>")[1:]}
    assert set(rows) == {"index version", "chunker", "system", "retriever settings"}
    assert "paragraphs, written as chunks" in rows["chunker"] and "differs" not in rows["chunker"]
    assert "differs" in rows["retriever settings"]  # the pull request's one change: the analyser
    compare = (demo.out_dir / "compare.md").read_text(encoding="utf-8")
    assert "### Run artifacts" in compare and "| chunker | {&quot;" not in compare


def test_summaries_name_inputs_relative_to_the_demo_folder(demo) -> None:
    summary = json.loads((demo.out_dir / "candidate" / "summary.json").read_text(encoding="utf-8"))
    assert summary["inputs"]["gold"]["path"] == "data/gold.jsonl"
    assert summary["inputs"]["run"]["path"] == "runs/candidate.jsonl"
    assert len(summary["inputs"]["run"]["sha256"]) == 64
    assert set(summary["segments"]["tags.lang"]) == {"de", "en", "es"}
    resampling = summary["statistics"].pop("resampling")  # the demo's gold set has conversations
    assert summary["statistics"] == {"seed": 0, "resamples": 2000, "confidence": 0.95}
    assert resampling["unit"] == "conversation"
    assert (resampling["conversations"], resampling["follow_ups"], resampling["depend_on_earlier_turns"]) == (132, 12, 10)
    assert resampling["turns"] == summary["queries"]["evaluated"]


# -- the numbers --------------------------------------------------------------------------------
def test_facts_about_the_data(demo) -> None:
    assert demo.corpus["chunks"] == 165 and demo.corpus["documents"] == 66
    assert demo.gold["queries"] == 144 and demo.gold["answerable"] == 136 and demo.gold["no_answer"] == 8
    assert demo.gold["languages"] == {"en": 84, "de": 41, "es": 19}
    assert demo.gold["with_forbidden"] == 33
    assert demo.changes == {"stemmer": ("auto", "en"), "stopwords": ("auto", "en")}
    assert demo.baseline.result.metric_names == DEMO_METRICS


PINNED = {
    # (role, metric, lang or None): mean, measured with the built-in data
    ("baseline", "recall@5", None): 0.8308823529411765,
    ("candidate", "recall@5", None): 0.8014705882352942,
    ("baseline", "ndcg@10", None): 0.7694200104704979,
    ("candidate", "ndcg@10", None): 0.7435410648628407,
    ("baseline", "hit@5", None): 0.8455882352941176,
    ("candidate", "hit@5", None): 0.8235294117647058,
    ("baseline", "mrr", None): 0.731490234982882,
    ("candidate", "mrr", None): 0.7095626558039484,
    ("baseline", "forbidden@5", None): 15 / 33,
    ("candidate", "forbidden@5", None): 15 / 33,
    ("baseline", "recall@5", "de"): 34 / 39,
    ("candidate", "recall@5", "de"): 0.782051282051282,
    ("baseline", "ndcg@10", "de"): 0.806009462574399,
    ("candidate", "ndcg@10", "de"): 0.7003187391553741,
    ("baseline", "recall@5", "en"): 0.7974683544303798,
    ("candidate", "recall@5", "en"): 0.7974683544303798,
    ("baseline", "ndcg@10", "en"): 0.7426908884511039,
    ("candidate", "ndcg@10", "en"): 0.7559668128152336,
    ("baseline", "ndcg@10", "es"): 0.8074540108860524,
    ("candidate", "ndcg@10", "es"): 0.7826542101046268,
}


@pytest.mark.parametrize(("role", "metric", "lang"), list(PINNED))
def test_seeded_means_are_the_measured_ones(demo, role: str, metric: str, lang: str | None) -> None:
    run = demo.baseline if role == "baseline" else demo.candidate
    assert run.mean(metric, lang) == pytest.approx(PINNED[(role, metric, lang)], abs=1e-9)


def test_the_german_change_and_its_interval(demo) -> None:
    row = demo.change("ndcg@10", "de")
    assert row.n == 39
    assert row.delta == pytest.approx(-0.10569072341902486, abs=1e-9)
    assert (row.ci_low, row.ci_high) == pytest.approx((-0.2153701338024551, -0.0049121255554338515), abs=1e-9)
    recall = demo.change("recall@5", "de")
    assert recall.delta == pytest.approx(-0.08974358974358976, abs=1e-9)
    assert recall.ci_low < 0 < recall.ci_high  # a bigger drop in points, but not established with 39 queries


def test_the_overall_mean_hides_a_german_regression(demo) -> None:
    """The story of the demo, as relations that must hold whatever the exact numbers."""
    ndcg, recall = demo.change("ndcg@10"), demo.change("recall@5")
    de, en = demo.change("ndcg@10", "de"), demo.change("ndcg@10", "en")
    # overall: a small drop, within the 0.05 / 5 pp regression limits and not established
    assert -0.05 < ndcg.delta < 0 and ndcg.ci_low < 0 < ndcg.ci_high
    assert -0.05 < recall.delta < 0 and recall.ci_low < 0 < recall.ci_high
    # German: beyond the limit and the interval excludes zero; English: no worse
    assert de.delta < -0.05 and de.ci_high < 0
    assert en.delta >= 0 and demo.change("recall@5", "en").delta == 0
    assert de.delta < 3 * ndcg.delta  # concentrated: several times the overall change
    for m in ("recall@5", "ndcg@10", "hit@5"):
        assert min(demo.languages, key=lambda lang: demo.change(m, lang).delta) == "de"


def test_forbidden_chunks_are_a_finding_for_both(demo) -> None:
    for run, stale, tenant in ((demo.baseline, 13, 2), (demo.candidate, 12, 3)):
        fb = run.forbidden
        assert fb.checked == 33 and len(fb.queries) == 15
        assert (len(fb.stale), len(fb.other_tenant)) == (stale, tenant)
        assert set(fb.stale) | set(fb.other_tenant) == set(fb.queries)


# -- the gate -----------------------------------------------------------------------------------
def test_the_gate_fails_on_the_german_segment_only(demo) -> None:
    outcome = demo.gate
    assert not outcome.passed and outcome.exit_code == 1
    status = {r.gate.name: r.status for r in outcome.results}
    assert status == {"recall_at_5": "pass", "ranking_quality": "fail", "any_answer_in_top_5": "pass",
                      "no_forbidden_chunks": "warn"}
    [failed] = demo.failed_checks()
    assert (failed.metric, failed.kind, failed.field, failed.segment) == ("ndcg@10", "regression", "tags.lang", "de")
    noted = [c for r in outcome.results for c in r.checks if "within noise" in c.note]
    assert [(c.metric, c.segment) for c in noted] == [("recall@5", "de")]
    # every check over all queries passes: without per-language checks, the PR would merge
    assert all(c.status != "fail" for r in outcome.results if r.gate.severity == "error"
               for c in r.checks if c.field is None)
    assert demo.gate_overall_only.passed


def test_gate_files_say_the_same(demo) -> None:
    data = json.loads((demo.out_dir / "gate.json").read_text(encoding="utf-8"))
    assert data["passed"] is False and data["exit_code"] == 1
    assert data["candidate"] == "bm25-english (pull request)"
    assert data["baseline"] == {"kind": "run", "label": "bm25-multilingual (main)", "rule": "paired"}
    comment = (demo.out_dir / "pr-comment.md").read_text(encoding="utf-8")
    # (the four blocking gates: recall@5, nDCG@10, hit@5 and the cost per query, which passes)
    assert comment.startswith("<!-- rankgate:gate -->\n## ❌ Retrieval gate failed: 1 of 4 blocking gates")
    assert "### Cost gates" in comment and [g["status"] for g in data["cost"]] == ["pass"]
    assert "for lang = de dropped from 0.806 to 0.700" in comment
    # the regressed queries are shown with their text, as `rankgate gate` shows them from the same gold set
    assert "kann man jährlich bezahlen" in comment
    assert data["queries"]["items"][0]["query"] == "kann man jährlich bezahlen"
    compare = (demo.out_dir / "compare.md").read_text(encoding="utf-8")
    assert "Most regressed queries on ndcg@10" in compare


def test_the_report_shows_the_same_verdict(demo) -> None:
    html = (demo.out_dir / "report.html").read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>")
    assert "rankgate demo: bm25-english (pull request) against bm25-multilingual (main)" in html
    assert "for lang = de dropped from 0.806 to 0.700" in html
    import hashlib
    import re

    for name in ("data/gold.jsonl", "runs/candidate.jsonl", "runs/baseline.jsonl"):  # the header hashes each input
        sha = hashlib.sha256((demo.out_dir / name).read_bytes()).hexdigest()
        assert re.search(re.escape(name) + r"</code>.{0,200}" + sha[:12], html, re.DOTALL), name
    assert str(demo.out_dir) not in html  # inputs are named relative to the demo folder


def test_a_missing_report_dependency_is_a_note_not_a_crash(demo, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from rankgate.demo.pipeline import _write_report

    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if it were not installed
    folder = tmp_path / "copy"
    for rel in ("data/gold.jsonl", "data/ship-criteria.yaml", "runs/baseline.jsonl", "runs/candidate.jsonl"):
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes((demo.out_dir / rel).read_bytes())
    (folder / "report.html").write_text("an earlier demo's report", encoding="utf-8")
    assert _write_report(folder / "report.html", folder, demo.config) == "matplotlib"
    assert not (folder / "report.html").exists()


def test_the_files_are_what_the_commands_write(demo, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """The commands the demo suggests reproduce its files from inside the demo folder."""
    monkeypatch.chdir(demo.out_dir)
    assert main(["evaluate", "--gold", "data/gold.jsonl", "--run", "runs/baseline.jsonl", "--metrics",
                 ",".join(DEMO_METRICS), "--by", "lang", "--out", str(tmp_path)]) == 0
    for name in ("metrics.csv", "summary.json"):
        assert (tmp_path / name).read_bytes() == (demo.out_dir / "baseline" / name).read_bytes(), name
    code = main(["gate", "--config", "data/ship-criteria.yaml", "--gold", "data/gold.jsonl", "--baseline",
                 "runs/baseline.jsonl", "--candidate", "runs/candidate.jsonl", "--no-step-summary",
                 "--baseline-label", "bm25-multilingual (main)", "--candidate-label", "bm25-english (pull request)",
                 "--comment", str(tmp_path / "comment.md")])
    assert code == 1
    assert (tmp_path / "comment.md").read_text(encoding="utf-8").splitlines()[:6] == \
        (demo.out_dir / "pr-comment.md").read_text(encoding="utf-8").splitlines()[:6]
    capsys.readouterr()


def test_layer_two_answers_and_grid(demo, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The demo's answers land in every grid cell the data was written for, offline, and the command
    the story suggests reproduces answers/ byte for byte."""
    s = demo.answers
    assert s["judge"]["identity"]["backend"] == "lexical"
    cells = {cell: c["count"] for cell, c in s["grid"]["cells"].items()}
    assert cells == {"ok": 10, "generation problem": 10, "retrieval problem": 4, "corpus problem": 4, "lucky": 1,
                     "undetermined": 0}
    assert s["queries"]["refusals"] == ["q_0023", "q_0029", "q_0057", "q_0136", "q_0141", "q_0142"]
    assert s["human"]["cell"]["agree"] == 24 and s["human"]["items"] == 29
    # abstentions of each kind (two records say refused: true themselves)
    assert {m: (e["count"], e["of"]) for m, e in s["abstention"]["metrics"].items()} == {
        "abstention_rate": (6, 29), "correct_abstention": (3, 5), "false_abstention": (2, 19), "unsupported_answer": (2, 5)}
    html = (demo.out_dir / "report.html").read_text(encoding="utf-8")
    assert '<section id="answers">' in html and "corpus problem" in html
    monkeypatch.chdir(demo.out_dir)
    assert main(["answers", "--answers", "data/answers.jsonl", "--gold", "data/gold.jsonl", "--corpus",
                 "data/corpus.jsonl", "--human", "data/answer-labels.jsonl", "--no-cache", "--out", str(tmp_path)]) == 0
    for name in ("answers.csv", "summary.json"):
        assert (tmp_path / name).read_bytes() == (demo.out_dir / "answers" / name).read_bytes(), name


# -- the terminal story -------------------------------------------------------------------------
def test_the_story_tells_what_happened(demo) -> None:
    text = render(demo, elapsed=1.25)
    for expected in (
        "1. Data: Taskfolio",
        "165 chunks from 66 documents",
        "baseline   bm25-multilingual",
        "stemmer auto -> en, stopwords auto -> en",
        "recall@5       83.1% (",
        "German (39)     −9.0 pp (−23.1 to +3.8 pp)    −0.106 (−0.215 to −0.005)",
        "'kann man jährlich bezahlen'",
        "FAIL, 1 of 4 blocking gates fail",
        "❌ nDCG@10 (ranking quality) for lang = de dropped from 0.806 to 0.700",
        "without `segments: [lang]`), the gate",
        "15 of 33 queries were shown a chunk they must not get",
        "exits 0",
        "runs/candidate.jsonl",
        "rankgate gate --config",
        "6. Answers (layer two): 29 answers",
        "ok 10, generation problem 10",
        "Abstention: correct_abstention 60.0% (3 of 5 no-answer queries refused)",
        "7. Production (offline <-> online)",
        "144 of 144 gold queries matched 879 of 879 production requests",
        "recall@5 × negative_feedback: queries that miss recall@5 offline get negative feedback 3× as",
        "9. Next",
        "Done in 1.2 s.",
    ):
        assert expected in text, expected
    folder = str(demo.out_dir)
    assert all(len(line) <= 100 for line in text.splitlines() if folder not in line)  # paths are as long as they are
    assert "exits with the gate's code, 1." in render(demo, strict=True)
    noted = render(dataclasses.replace(demo, notes=("report.html was not written: it needs x.",)))
    assert "   report.html was not written: it needs x." in noted


@pytest.mark.parametrize("width", [80])
def test_the_story_wraps_to_the_terminal_width_without_splitting_a_word(demo, width) -> None:
    from rich.cells import cell_len

    wide, narrow = render(demo, width=100), render(demo, width=width)
    folder = str(demo.out_dir)
    too_long = [line for line in narrow.splitlines() if cell_len(line) > width and folder not in line]
    assert not too_long, too_long
    # the same words in the same order: wrapping only moves line breaks (and adds a command's " \")
    def words(text: str) -> list[str]:
        return [w for w in text.split() if w != "\\"]

    assert words(narrow) == words(wide)
    assert "   German (39)     −9.0 pp (−23.1 to +3.8 pp)    −0.106 (−0.215 to −0.005)" in narrow  # tables keep columns


@pytest.mark.parametrize("width", [76, 72, 60, 40])
def test_the_score_tables_fit_narrower_terminals(demo, width) -> None:
    from rich.cells import cell_len

    text = render(demo, width=width)
    folder = str(demo.out_dir)
    tables = text[text.index("3. Scores"):text.index("5. Gate")]  # the score and change tables, the examples
    assert [line for line in tables.splitlines() if cell_len(line) > width] == []
    if width >= 60:  # above the narrowest terminals, only a path longer than the line may overflow
        assert [line for line in text.splitlines() if cell_len(line) > width and folder not in line
                and "rankgate-demo/" not in line] == []
    for value in ("83.1% (76.9% to 88.7%)", "−9.0 pp (−23.1 to +3.8 pp)", "−0.106 (−0.215 to −0.005)"):
        assert value in tables  # every number is still there, whole


@pytest.mark.slow  # (the full tier: heavy, and what it guards is covered lighter by default)
def test_cli_wraps_to_columns(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    from rich.cells import cell_len

    env = {**os.environ, "COLUMNS": "80"}
    out = subprocess.run([sys.executable, "-m", "rankgate", "demo", "--out", str(tmp_path / "d")], capture_output=True,
                         text=True, encoding="utf-8", env=env, cwd=tmp_path, timeout=300, check=False)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert max(cell_len(line) for line in lines) <= 80
    assert "     rankgate retrieve --corpus corpus.jsonl --gold gold.jsonl \\" in lines


# -- the command --------------------------------------------------------------------------------
def test_cli_exits_0_writes_identical_files_and_1_with_strict(demo, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "again"
    assert main(["demo", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "FAIL, 1 of 4 blocking gates fail" in text and "exits 0" in text
    assert _files(out) == _files(demo.out_dir)  # same seed, byte-identical files, in another folder

    assert main(["demo", "--out", str(out), "--strict"]) == 1  # a second run may overwrite its own folder
    assert "exits with the gate's code, 1" in capsys.readouterr().out
    assert _files(out) == _files(demo.out_dir)


@pytest.mark.slow  # (the full tier: heavy, and what it guards is covered lighter by default)
def test_another_seed_changes_only_the_statistics(demo, tmp_path: Path) -> None:
    other = run_demo(tmp_path / "seed1", seed=1)
    a, b = _files(demo.out_dir), _files(other.out_dir)
    same = {k for k in a if a[k] == b[k]}
    assert {"runs/baseline.jsonl", "runs/candidate.jsonl", "baseline/metrics.csv", "data/gold.jsonl"} <= same
    assert "baseline/summary.json" not in same and "gate.json" not in same
    assert other.baseline.mean("ndcg@10") == demo.baseline.mean("ndcg@10")
    assert json.loads(b["gate.json"])["statistics"]["seed"] == 1


def test_refuses_a_folder_of_other_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mine = tmp_path / "notes.txt"
    mine.write_text("keep me", encoding="utf-8")
    assert main(["demo", "--out", str(tmp_path)]) == 2
    assert "not empty and was not written by rankgate demo" in capsys.readouterr().err
    assert sorted(os.listdir(tmp_path)) == ["notes.txt"] and mine.read_text(encoding="utf-8") == "keep me"
    (tmp_path / "file").write_text("x", encoding="utf-8")
    assert main(["demo", "--out", str(tmp_path / "file")]) == 2


@pytest.mark.parametrize("seed", [-1, True, 1.5])
def test_bad_seed_is_a_usage_error(tmp_path: Path, seed) -> None:
    with pytest.raises(UsageError, match="seed"):
        run_demo(tmp_path / "x", seed=seed)
    assert not (tmp_path / "x").exists()


def test_the_command_module_imports_nothing_heavy() -> None:
    code = ("import sys, rankgate.cli.demo, rankgate.demo; "
            "heavy = [m for m in ('numpy', 'pyarrow', 'bm25s', 'yaml', 'rich') if m in sys.modules]; "
            "print(','.join(heavy))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""


# -- offline <-> online ------------------------------------------------------------------------------
def test_the_validity_section_is_what_rankgate_validity_writes(demo, tmp_path, monkeypatch) -> None:
    a = demo.validity
    assert a.matching.matched == 144 and a.matching.requests == 879
    row = a.row("recall@5", "negative_feedback")
    assert row is not None and row.kind == "link" and row.contrast.rd_low > 0
    assert a.row("recall@5", "fallback").kind == "link"
    monkeypatch.chdir(demo.out_dir)
    assert main(["validity", "--gold", "data/gold.jsonl", "--run", "runs/baseline.jsonl", "--traces",
                 "data/traces.jsonl", "--out", str(tmp_path)]) == 0
    for name in ("summary.json", "validity.md"):
        assert (tmp_path / name).read_bytes() == (demo.out_dir / "validity" / name).read_bytes(), name
