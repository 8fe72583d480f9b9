"""Several runs against one baseline: paired numbers per (run, metric), Holm across the whole table,
renderers (terminal at 80 columns, markdown, JSON) and the command."""

from __future__ import annotations

import io
import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from rankgate.stats.paired import compare, compare_systems
from rankgate.errors import UsageError
from rankgate.render.compare import (
    multi_comparison_dict,
    multi_comparison_markdown,
    multi_comparison_renderable,
)
from rankgate.model.results import EvaluationResult
from rankgate.stats.bootstrap import holm, paired_bootstrap_ci, randomization_test

from .test_compare import DATA, check_golden, make_pair

IDS = tuple(f"q{i}" for i in range(1, 9))


def result(recall: list[float], mrr: list[float], path: str) -> EvaluationResult:
    return EvaluationResult(IDS, ("recall@5", "mrr"), {"recall@5": np.array(recall), "mrr": np.array(mrr)},
                            inputs={"run": {"path": path}})


def three_runs() -> list[EvaluationResult]:
    nan = math.nan
    base = result([1, 0, 1, 0, 1, 0, 1, nan], [1, 0, 0.5, 0, 1, 0, 0.25, nan], "runs/base.jsonl")
    up = result([1, 1, 1, 1, 1, 1, 1, nan], [1, 1, 1, 0.5, 1, 0.5, 1, nan], "runs/up.jsonl")
    same = result([1, 0, 1, 0, 1, 0, 1, nan], [1, 0, 0.5, 0, 1, 0, 0.25, nan], "runs/same.jsonl")
    return [base, up, same]


def test_rows_by_hand() -> None:
    runs = three_runs()
    cmp = compare_systems(runs, resamples=400, n_permutations=999, seed=5)
    assert (cmp.baseline, cmp.systems, cmp.metrics) == ("base.jsonl", ("up.jsonl", "same.jsonl"), ("recall@5", "mrr"))
    assert [(r.metric, r.system) for r in cmp.rows] == [
        ("recall@5", "up.jsonl"), ("recall@5", "same.jsonl"), ("mrr", "up.jsonl"), ("mrr", "same.jsonl")]
    up = cmp.row("recall@5", "up.jsonl")
    assert (up.n, up.baseline, up.candidate, up.delta) == (7, 4 / 7, 1.0, 1.0 - 4 / 7)  # q8 applies nowhere
    b, c = runs[0]["recall@5"][:7], runs[1]["recall@5"][:7]
    assert (up.ci_low, up.ci_high) == paired_bootstrap_ci(b, c, rng=5, resamples=400)
    assert up.p_value == randomization_test(b, c, rng=5, resamples=999)
    same = cmp.row("mrr", "same.jsonl")
    assert (same.delta, same.p_value, same.verdict()) == (0.0, 1.0, "unchanged")
    # Holm over the four rows, by hand: p-values sorted ascending, scaled by 4, 3, 2, 1, running maximum
    ps = [r.p_value for r in cmp.rows]
    order = sorted(range(4), key=lambda i: ps[i])
    want, running = [0.0] * 4, 0.0
    for j, i in enumerate(order):
        running = max(running, min(1.0, (4 - j) * ps[i]))
        want[i] = running
    assert [r.p_holm for r in cmp.rows] == pytest.approx(want, abs=0, rel=1e-15)


def test_holm_by_hand_and_against_statsmodels() -> None:
    assert holm([0.01, 0.04, 0.03, 0.005]).tolist() == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, math.nan, 0.01]).tolist()[::2] == pytest.approx([0.5, 0.02])
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    rng = np.random.default_rng(11)
    for size in (1, 2, 7, 40):
        p = rng.uniform(0, 0.2, size)
        p[::3] = p[0]  # ties
        _, want, _, _ = multitest.multipletests(p, method="holm")
        assert holm(p) == pytest.approx(want, abs=1e-15)


def test_two_runs_give_the_same_numbers_as_compare() -> None:
    base, cand = make_pair()
    pair = compare(base, cand, metrics=["recall@5", "ndcg@10"], resamples=300, n_permutations=300)
    many = compare_systems([base, cand], metrics=["recall@5", "ndcg@10"], resamples=300, n_permutations=300)
    for m in ("recall@5", "ndcg@10"):
        a, b = pair.row(m), many.row(m, "cand.jsonl")
        assert (a.n, a.baseline, a.candidate, a.ci_low, a.ci_high, a.p_value, a.p_holm) == \
               (b.n, b.baseline, b.candidate, b.ci_low, b.ci_high, b.p_value, b.p_holm)
    assert many.pairings[0].only_in_baseline == ("q25",) and many.pairings[0].only_in_system == ("q26",)
    assert many.pairings[0].missing_from_run == ("q21",)
    assert many.not_compared == ()  # metrics= given


def test_a_rows_numbers_do_not_depend_on_the_other_runs() -> None:
    """Each row draws from its own generator seeded with the seed: adding a run changes only Holm."""
    runs = three_runs()
    all3 = compare_systems(runs, resamples=300, n_permutations=300, seed=2)
    two = compare_systems(runs[:2], resamples=300, n_permutations=300, seed=2)
    for m in ("recall@5", "mrr"):
        a, b = all3.row(m, "up.jsonl"), two.row(m, "up.jsonl")
        assert (a.ci_low, a.ci_high, a.p_value) == (b.ci_low, b.ci_high, b.p_value)
        assert a.p_holm >= b.p_holm


def test_baseline_by_name_or_index_and_bad_use() -> None:
    runs = three_runs()
    by_name = compare_systems(runs, baseline="up.jsonl", resamples=0, n_permutations=0)
    by_index = compare_systems(runs, baseline=1, resamples=0, n_permutations=0)
    assert json.dumps(multi_comparison_dict(by_name)) == json.dumps(multi_comparison_dict(by_index))
    assert by_name.systems == ("base.jsonl", "same.jsonl")
    assert by_name.row("recall@5", "base.jsonl").delta == pytest.approx(-3 / 7)
    with pytest.raises(UsageError, match="no run is named 'nope'; the runs are: base.jsonl, up.jsonl"):
        compare_systems(runs, baseline="nope")
    with pytest.raises(UsageError, match="labels must differ"):
        compare_systems(runs, labels=["a", "a", "b"])
    with pytest.raises(UsageError, match="two or more"):
        compare_systems(runs[:1])
    with pytest.raises(UsageError, match="index below 3"):
        compare_systems(runs, baseline=3)


def test_json_is_byte_identical_and_names_every_number() -> None:
    texts = {json.dumps(multi_comparison_dict(compare_systems(three_runs(), resamples=200, n_permutations=200)),
                        sort_keys=True, allow_nan=False) for _ in range(2)}
    assert len(texts) == 1
    data = json.loads(texts.pop())
    assert data["baseline"] == "base.jsonl" and data["runs"] == ["up.jsonl", "same.jsonl"]
    row = data["rows"][0]
    assert set(row) == {"metric", "run", "n", "baseline", "mean", "delta", "ci_low", "ci_high", "p_value", "p_holm",
                        "higher_is_better", "holm_family_size", "verdict"}
    assert data["statistics"]["correction"] == "Holm across every (run, metric) row (the headline rows)"
    assert data["statistics"]["holm_families"] == [{"rows": "headline", "size": len(data["rows"])}]


def test_terminal_golden_fits_80_columns() -> None:
    from rich.console import Console

    cmp = compare_systems(three_runs(), resamples=500, n_permutations=999)
    console = Console(width=80, color_system=None, force_terminal=False, record=True, file=io.StringIO())
    console.print(multi_comparison_renderable(cmp))
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "up.jsonl" in text and "same.jsonl" in text  # labels are not squeezed away
    check_golden("systems_vs_baseline.txt", text)


def test_markdown_golden() -> None:
    check_golden("systems_vs_baseline.md", multi_comparison_markdown(compare_systems(three_runs(), resamples=500, n_permutations=999)))


# -- the command ------------------------------------------------------------------------------------
def test_three_runs_end_to_end(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from rankgate.cli.main import main

    third = tmp_path / "copy.jsonl"
    shutil.copy(DATA / "base.jsonl", third)
    args = ["compare", "--gold", str(DATA / "gold.jsonl"), str(DATA / "base.jsonl"), str(DATA / "cand.jsonl"), str(third),
            "--metrics", "recall@5,mrr,bpref", "--resamples", "300", "--permutations", "300"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "2 runs vs base.jsonl (baseline)" in out and "copy.jsonl" in out and "q39" in out
    assert "Holm-corrected across the 6 rows (2 runs × 3 metrics)" in out.replace("\n", " ")

    assert main(args + ["--json", "--baseline", "cand.jsonl"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["baseline"] == "cand.jsonl" and data["runs"] == ["base.jsonl", "copy.jsonl"]
    copy = next(r for r in data["rows"] if r["run"] == "copy.jsonl" and r["metric"] == "recall@5")
    assert copy["delta"] > 0 and copy["n"] == 40

    out_md = tmp_path / "cmp.md"
    assert main(args + ["--markdown", "-o", str(out_md)]) == 0
    assert out_md.read_text(encoding="utf-8").startswith("**2 runs** vs **base.jsonl** (baseline)")


def test_two_runs_on_the_command_line_keep_the_two_run_output(capsys: pytest.CaptureFixture[str]) -> None:
    from rankgate.cli.main import main

    args = ["compare", "--gold", str(DATA / "gold.jsonl"), str(DATA / "base.jsonl"), str(DATA / "cand.jsonl"),
            "--metrics", "recall@5", "--resamples", "200", "--permutations", "200"]
    assert main(args) == 0
    assert capsys.readouterr().out.startswith("cand.jsonl (candidate) vs base.jsonl (baseline)")
    assert main(args + ["--baseline", "cand.jsonl"]) == 0  # naming the second run swaps the roles
    assert capsys.readouterr().out.startswith("base.jsonl (candidate) vs cand.jsonl (baseline)")


@pytest.mark.parametrize("extra,message", [
    (["--by", "lang"], "--by compares segments of two runs"),
    (["--baseline", "other.jsonl"], "--baseline 'other.jsonl' names none of the runs"),
])
def test_bad_options_with_three_runs(capsys: pytest.CaptureFixture[str], tmp_path: Path, extra: list[str], message: str) -> None:
    from .hostile import assert_refused

    third = tmp_path / "copy.jsonl"
    shutil.copy(DATA / "base.jsonl", third)
    assert_refused(["compare", "--gold", DATA / "gold.jsonl", DATA / "base.jsonl", DATA / "cand.jsonl", third, *extra],
                   tmp_path, capsys=capsys, contains=[message])


def test_one_run_or_no_gold_is_a_usage_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from .hostile import assert_refused

    assert_refused(["compare", "--gold", DATA / "gold.jsonl", DATA / "base.jsonl"], tmp_path, capsys=capsys,
                   contains=["at least two runs"])
    assert_refused(["compare", DATA / "base.jsonl", DATA / "cand.jsonl"], tmp_path, capsys=capsys, contains=["--gold"])


def test_one_compare_for_two_or_more_runs() -> None:
    """compare() takes a list: two results give the two-run comparison, three or more the several-runs one, and
    one set of renderers renders both; compare(base, cand) and compare_systems give the same as before."""
    from rankgate.render.compare import comparison_dict, comparison_markdown, comparison_renderable
    from rankgate.stats.paired import Comparison, MultiComparison, PairedComparison

    runs = three_runs()
    kw = {"resamples": 200, "n_permutations": 200, "seed": 3}
    many = compare(runs, baseline="up.jsonl", **kw)
    assert isinstance(many, MultiComparison) and isinstance(many, PairedComparison) and not many.detailed
    old = compare_systems(runs, baseline="up.jsonl", **kw)
    assert json.dumps(comparison_dict(many)) == json.dumps(multi_comparison_dict(old))
    assert comparison_markdown(many) == multi_comparison_markdown(old)
    assert (many.baseline_name, many.run_names) == ("up.jsonl", ("base.jsonl", "same.jsonl"))
    text = io.StringIO()
    from rich.console import Console

    Console(file=text, width=80, color_system=None).print(comparison_renderable(many))
    assert "2 runs vs up.jsonl (baseline)" in text.getvalue()

    base, cand = make_pair()
    pair = compare([cand, base], baseline=1, by="lang", **kw)
    assert isinstance(pair, Comparison) and pair.detailed
    assert json.dumps(comparison_dict(pair)) == json.dumps(compare(base, cand, by="lang", **kw).to_dict())
    named = compare([base, cand], labels=["old", "new"], **kw)
    assert (named.baseline_name, named.run_names) == ("old", ("new",))
    assert comparison_markdown(named) == comparison_markdown(compare(base, cand, baseline_label="old",
                                                                     candidate_label="new", **kw))


def test_one_compare_says_what_it_cannot_do() -> None:
    runs = three_runs()
    with pytest.raises(UsageError, match="by= compares segments of two results"):
        compare(runs, by="lang")
    with pytest.raises(UsageError, match="two or more EvaluationResult"):
        compare(runs[:1])
    with pytest.raises(UsageError, match="labels="):
        compare(runs[0], runs[1], labels=["a", "b"])
    with pytest.raises(UsageError, match="labels=, one per result"):
        compare(runs[:2], baseline_label="a")
    with pytest.raises(UsageError, match="no run is named"):
        compare(runs, baseline="nope")
