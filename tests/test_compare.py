"""Paired comparison of two runs: numbers, reporting of unpaired queries, renderers, the command."""

from __future__ import annotations

import io
import json
import math
import os
from pathlib import Path

import numpy as np
import pytest

from rankgate.stats.paired import compare
from rankgate.errors import UsageError
from rankgate.metrics import higher_is_better, is_share
from rankgate.render.compare import comparison_markdown, comparison_renderable
from rankgate.model.results import EvaluationResult

HERE = Path(__file__).parent
GOLDEN = HERE / "golden"
DATA = HERE / "data" / "gate"
NAN = math.nan


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("RANKGATE_UPDATE_GOLDEN"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.read_text(encoding="utf-8") == text, f"{name} differs; rerun with RANKGATE_UPDATE_GOLDEN=1 and review the diff"


def make_pair() -> tuple[EvaluationResult, EvaluationResult]:
    """24 shared queries; German queries (every third) lose their answer in the candidate."""
    n = 24
    ids = [f"q{i:02d}" for i in range(1, n + 1)]
    intent = tuple("how_to" if i % 2 else "lookup" for i in range(1, n + 1))
    lang = tuple("de" if i % 3 == 0 else "en" for i in range(1, n + 1))
    base_rank = np.array([(i % 3) + 1 if i not in (4, 16) else 0 for i in range(1, n + 1)])
    cand_rank = np.array([0 if lang[i - 1] == "de" else (1 if i in (4, 16) else base_rank[i - 1]) for i in range(1, n + 1)])

    def values(rank: np.ndarray) -> dict[str, np.ndarray]:
        recall = (rank > 0).astype(float)
        ndcg = np.where(rank > 0, 1.0 / np.log2(np.maximum(rank, 1) + 1.0), 0.0)
        recall[22], ndcg[22] = NAN, NAN  # q23 is a no-answer query
        return {"recall@5": recall, "ndcg@10": ndcg}

    extra = {"judged@5": np.ones(n)}
    base = EvaluationResult(
        tuple(ids) + ("q25",), ("recall@5", "ndcg@10", "judged@5"),
        {k: np.append(v, 1.0) for k, v in {**values(base_rank), **extra}.items()},
        {"intent": intent + ("how_to",), "tags.lang": lang + ("en",)},
        np.append(base_rank, 1), inputs={"run": {"path": "runs/base.jsonl"}},
    )
    cand = EvaluationResult(
        tuple(ids) + ("q26",), ("recall@5", "ndcg@10"),
        {k: np.append(v, 0.0) for k, v in values(cand_rank).items()},
        {"intent": intent + ("lookup",), "tags.lang": lang + ("de",)},
        np.append(cand_rank, 0), missing_from_run=("q21",), inputs={"run": {"path": "runs/cand.jsonl"}},
    )
    return base, cand


def test_rows_pair_queries_and_use_only_queries_where_the_metric_applies():
    base, cand = make_pair()
    # 2,000 resamples: the upper end sits near 0 on a grid of 1/23, where 300 resamples are seed luck
    cmp = compare(base, cand, metrics=["recall@5"], by=["lang"], resamples=2000, n_permutations=999)
    row = cmp.row("recall@5")
    # 23 answerable paired queries; base misses q04 and q16; candidate loses the 8 German ones, gains q04, q16
    assert row.n == 23
    assert row.baseline == pytest.approx(21 / 23)
    assert row.candidate == pytest.approx(15 / 23)
    assert row.delta == pytest.approx(-6 / 23)
    assert row.ci_low <= row.delta <= row.ci_high <= 0
    de = cmp.row("recall@5", "tags.lang", "de")
    assert (de.n, de.baseline, de.candidate) == (8, 1.0, 0.0)
    assert de.verdict(0.95) == "worse"
    en = cmp.row("recall@5", "tags.lang", "en")
    assert en.delta > 0 and en.verdict(0.95) == "within noise"
    assert [r.field for r in cmp.rows[:3]] == [None, "tags.lang", "tags.lang"]


def test_holm_runs_within_each_family_headline_rows_apart_from_each_fields_segments():
    base, cand = make_pair()
    cmp = compare(base, cand, by=["lang", "intent"], resamples=0, n_permutations=999)
    assert len(cmp.rows) == 2 * (1 + 2 + 2)
    assert all(r.p_holm >= r.p_value for r in cmp.rows)
    assert cmp.holm_families == ((None, 2), ("tags.lang", 4), ("intent", 4))
    for field, size in cmp.holm_families:
        family = [r for r in cmp.rows if r.field == field]
        assert len(family) == size and {r.family for r in family} == {size}
        smallest = min(family, key=lambda r: r.p_value)
        assert smallest.p_holm == pytest.approx(min(1.0, smallest.p_value * size))
    alone = compare(base, cand, resamples=0, n_permutations=999)
    assert [r.p_holm for r in alone.rows] == [r.p_holm for r in cmp.rows if r.field is None]  # --by changes no headline
    assert all(math.isnan(r.ci_low) for r in cmp.rows)  # intervals were turned off
    data = cmp.to_dict()
    assert data["statistics"]["holm_families"] == [{"rows": "headline", "size": 2}, {"rows": "tags.lang", "size": 4},
                                                   {"rows": "intent", "size": 4}]
    assert {r["holm_family_size"] for r in data["rows"] if r["field"] is None} == {2}


def test_unpaired_and_missing_queries_are_reported_never_dropped_silently():
    base, cand = make_pair()
    cmp = compare(base, cand, resamples=0, n_permutations=0)
    assert cmp.only_in_baseline == ("q25",)
    assert cmp.only_in_candidate == ("q26",)
    assert cmp.missing_from_candidate_run == ("q21",)
    assert cmp.paired == 24
    assert cmp.not_compared == ("judged@5",)
    text = "\n".join(comparison_markdown(cmp).splitlines()[-6:])
    assert "q25" in text and "q26" in text and "q21" in text and "judged@5" in text


def test_most_regressed_queries_come_first_with_their_ranks():
    base, cand = make_pair()
    cmp = compare(base, cand, resamples=0, n_permutations=0, top=3)
    assert cmp.changed == 10
    # equal drops (1 -> 0): the one whose relevant item fell furthest first, then by query id
    assert [(c.query_id, c.baseline_rank, c.candidate_rank) for c in cmp.regressions] == [
        ("q03", 1, 0), ("q06", 1, 0), ("q09", 1, 0)]
    assert [c.query_id for c in cmp.improvements] == ["q04", "q16"]
    assert cmp.improvements[0].delta == 1.0
    q21 = compare(base, cand, resamples=0, n_permutations=0, top=20).regressions
    assert any(c.query_id == "q21" and c.note == "missing from candidate run" for c in q21)


def test_direction_of_metrics():
    assert higher_is_better("recall@5") and higher_is_better("ndcg(gain=exp)@10")
    assert not higher_is_better("forbidden@5") and not higher_is_better("redundancy@10")
    assert is_share("recall@5") and not is_share("ndcg@10") and not is_share("distinct_docs@5")


def test_lower_is_better_metrics_regress_upwards():
    ids = tuple(f"q{i}" for i in range(10))
    base = EvaluationResult(ids, ("forbidden@5",), {"forbidden@5": np.zeros(10)})
    cand = EvaluationResult(ids, ("forbidden@5",), {"forbidden@5": np.array([1.0] * 8 + [0.0] * 2)})
    cmp = compare(base, cand, resamples=200, n_permutations=200)
    assert cmp.row("forbidden@5").verdict() == "worse"
    assert len(cmp.regressions) == 8 and not cmp.improvements


def test_bad_use_is_a_usage_error():
    base, cand = make_pair()
    with pytest.raises(UsageError, match="no field or tag 'tier'"):
        compare(base, cand, by="tier")
    with pytest.raises(UsageError, match="was not evaluated"):
        compare(base, cand, metrics=["judged@5"])
    with pytest.raises(UsageError, match="EvaluationResult"):
        compare(base, {"recall@5": 1.0})


def test_json_is_byte_identical_run_to_run():
    base, cand = make_pair()
    texts = {json.dumps(compare(base, cand, by=["intent"], seed=3, resamples=200, n_permutations=200).to_dict(),
                        sort_keys=True) for _ in range(2)}
    assert len(texts) == 1


def test_terminal_table_golden():
    from rich.console import Console

    base, cand = make_pair()
    cmp = compare(base, cand, by=["lang"], resamples=500, n_permutations=999, top=5)
    console = Console(width=100, color_system=None, force_terminal=False, record=True, file=io.StringIO())
    console.print(comparison_renderable(cmp))
    check_golden("compare_table.txt", console.export_text())


def test_markdown_golden():
    base, cand = make_pair()
    cmp = compare(base, cand, by=["lang"], resamples=500, n_permutations=999, top=5)
    check_golden("compare.md", comparison_markdown(cmp))


# -- the command, end to end ----------------------------------------------------------------------
def test_compare_command_end_to_end(capsys, tmp_path):
    from rankgate.cli.main import main

    args = ["compare", "--gold", str(DATA / "gold.jsonl"), str(DATA / "base.jsonl"), str(DATA / "cand.jsonl"),
            "--metrics", "recall@5,mrr", "--by", "lang", "--resamples", "300", "--permutations", "300"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "recall@5" in out and "lang = de" in out and "q39" in out  # q39 is missing from the candidate run
    assert "\x1b[" not in out  # no colour codes when not a terminal

    assert main(args + ["--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["queries"]["missing_from_candidate_run"] == ["q39"]
    de = next(r for r in data["rows"] if r["segment"] == "de" and r["metric"] == "recall@5")
    assert (de["baseline"], de["candidate"], de["n"]) == (0.8, 0.0, 10)

    out_md = tmp_path / "cmp.md"
    assert main(args + ["--markdown", "-o", str(out_md)]) == 0
    assert out_md.read_text(encoding="utf-8").startswith("**cand.jsonl** (candidate) vs **base.jsonl** (baseline)")


def test_compare_command_rejects_bad_options(capsys):
    from rankgate.cli.main import main

    args = ["compare", "--gold", str(DATA / "gold.jsonl"), str(DATA / "base.jsonl"), str(DATA / "cand.jsonl")]
    assert main(args + ["--by", "tier"]) == 2
    assert "no field or tag 'tier'" in capsys.readouterr().err
    assert main(args + ["--permutations", "-1"]) == 2


def test_runs_are_named_by_one_rule():
    """compare, report and pool name runs the same way: the file name, or the path as given for the runs whose
    file name another run (another path) shares; the same path twice keeps its file name."""
    from rankgate.flows.compare import run_labels
    from rankgate.flows.pool import run_labels as pool_labels
    from rankgate.model.results import run_names

    paths = ["a/run.jsonl", "b/run.jsonl", "c/other.jsonl", "./d/x.trec", "./d/x.trec"]
    assert run_names(paths) == ["a/run.jsonl", "b/run.jsonl", "other.jsonl", "x.trec", "x.trec"]
    assert run_labels(paths) == pool_labels(paths) == run_names(paths)
    assert run_names(["runs/main.jsonl", "pr.jsonl"]) == ["main.jsonl", "pr.jsonl"]
