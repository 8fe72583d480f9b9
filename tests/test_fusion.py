"""Run fusion (RRF, CombSUM, CombMNZ): hand-computed scores, ties, missing items, the written run file,
and the command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rankgate
from rankgate.io import load_run
from rankgate.errors import InputError, UsageError
from rankgate.retrieval.fusion import fuse, parse_fusion, run_records, write_run_jsonl

from .test_compare import DATA
from .conftest import examples

A = {"q1": {"x": 3.0, "y": 2.0, "z": 1.0}, "q2": {"x": 5.0}}
B = {"q1": {"y": 0.9, "w": 0.5, "x": 0.1}, "q3": {"m": 1.0, "n": 1.0}}


def fused(method: str, *runs: dict) -> dict[str, list[tuple[str, float]]]:
    run = fuse([load_run(r) for r in runs], method)
    return {rec["query_id"]: [(i["chunk_id"], i["score"]) for i in rec["topk"]] for rec in run_records(run)}


def test_rrf_by_hand() -> None:
    got = fused("rrf", A, B)
    # q1: A ranks x, y, z; B ranks y, w, x. Each run adds 1 / (60 + rank); w and z come from one run only.
    assert got["q1"] == [("y", 1 / 62 + 1 / 61), ("x", 1 / 61 + 1 / 63), ("w", 1 / 62), ("z", 1 / 63)]
    assert got["q2"] == [("x", 1 / 61)]  # a query one run lacks keeps the other's items
    # q3: m and n tie in B; the ranking rule puts n (id descending) first, so it gets rank 1
    assert got["q3"] == [("n", 1 / 61), ("m", 1 / 62)]
    assert list(got) == ["q1", "q2", "q3"]  # first run's queries first, then new ones
    k1 = fused("rrf(k=1)", A, B)
    assert k1["q1"][0] == ("y", 1 / 3 + 1 / 2)


def test_equal_fused_scores_are_ordered_by_id_descending() -> None:
    got = fused("rrf", {"q": ["a", "b"]}, {"q": ["b", "a"]})
    assert got["q"] == [("b", 1 / 61 + 1 / 62), ("a", 1 / 61 + 1 / 62)]


def test_combsum_and_combmnz_by_hand() -> None:
    # min-max per run and query: A q1 (3, 2, 1) -> x 1, y 0.5, z 0; B q1 (0.9, 0.5, 0.1) -> y 1, w 0.5, x 0
    got = fused("combsum", A, B)
    assert got["q1"] == [("y", 1.5), ("x", 1.0), ("w", 0.5), ("z", 0.0)]
    assert got["q2"] == [("x", 1.0)]  # one item: it is the run's best, so 1
    assert got["q3"] == [("n", 1.0), ("m", 1.0)]  # all tied: each 1
    mnz = fused("combmnz", A, B)
    assert mnz["q1"] == [("y", 3.0), ("x", 2.0), ("w", 0.5), ("z", 0.0)]  # × runs that retrieved it (2, 2, 1, 1)


def test_sums_in_the_order_the_runs_are_given() -> None:
    c = {"q1": {"y": 0.25, "v": 0.0}}
    got = fused("combsum", A, B, c)
    assert dict(got["q1"])["y"] == (0.5 + 1.0) + 1.0


def test_runs_without_scores_fuse_with_rrf_only() -> None:
    ranked = {"q1": ["w", "x"]}
    assert fused("rrf", A, ranked)["q1"][0] == ("x", 1 / 61 + 1 / 62)
    with pytest.raises(UsageError, match="combsum needs scores, and run <run> has none"):
        fused("combsum", A, ranked)


def test_a_repeated_id_is_refused() -> None:
    twice = load_run([{"query_id": "q1", "retrieved": ["a", "b", "a"]}], label="twice.jsonl")
    with pytest.raises(InputError, match="twice.jsonl: lists 'a' more than once for query 'q1'"):
        fuse([load_run(A), twice])


@pytest.mark.parametrize("text,canonical", [("rrf", "rrf(k=60)"), ("RRF(k=10)", "rrf(k=10)"), ("rrf(k=0)", "rrf(k=0)"),
                                            ("combsum", "combsum"), ("CombMNZ", "combmnz")])
def test_method_spec_round_trips(text: str, canonical: str) -> None:
    assert str(parse_fusion(text)) == canonical
    assert parse_fusion(canonical) == parse_fusion(text)


@pytest.mark.parametrize("bad,message", [("borda", "unknown fusion method"), ("rrf(k=x)", "whole number"),
                                         ("combsum(k=3)", "takes no parameter"), ("rrf(k=-1)", "whole number")])
def test_bad_method_specs(bad: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_fusion(bad)


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from("abcdefgh"), st.integers(0, 4).map(float), min_size=1), min_size=2, max_size=4),
       st.sampled_from(["rrf", "combsum", "combmnz"]))
def test_fusion_equals_the_formula_spelled_out(lists: list[dict[str, float]], method: str) -> None:
    runs = [{"q": r} for r in lists]
    got = fused(method, *runs)["q"]
    want: dict[str, float] = {}
    for r in lists:
        ranked = sorted(r, key=lambda d: (-r[d], [-ord(c) for c in d]))
        lo, hi = min(r.values()), max(r.values())
        for rank, d in enumerate(ranked, 1):
            value = 1 / (60 + rank) if method == "rrf" else ((r[d] - lo) / (hi - lo) if hi > lo else 1.0)
            want[d] = want.get(d, 0.0) + value
    if method == "combmnz":
        want = {d: v * sum(d in r for r in lists) for d, v in want.items()}
    assert dict(got) == want
    assert [s for _, s in got] == sorted((s for _, s in got), reverse=True)


def test_written_run_reads_back_to_the_same_evaluation(tmp_path: Path) -> None:
    run = fuse([DATA / "base.jsonl", DATA / "cand.jsonl"], "rrf")
    path = tmp_path / "out" / "fused.jsonl"
    write_run_jsonl(run, path)
    first = path.read_bytes()
    write_run_jsonl(fuse([DATA / "base.jsonl", DATA / "cand.jsonl"], "rrf"), path)
    assert path.read_bytes() == first  # byte-identical run to run
    assert [p.name for p in path.parent.iterdir()] == ["fused.jsonl"]  # no temporary file left
    record = json.loads(first.decode().splitlines()[0])
    assert record["system"] == "rrf(k=60)" and record["topk"][0]["rank"] == 1
    gold = str(DATA / "gold.jsonl")
    specs = ["recall@5", "ndcg@10", "mrr"]
    assert rankgate.evaluate(gold, str(path), specs).means == rankgate.evaluate(gold, run, specs).means


# -- the command ------------------------------------------------------------------------------------
def test_fuse_and_compare_end_to_end(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from rankgate.cli.main import main

    out = tmp_path / "fused.jsonl"
    args = ["compare", "--gold", str(DATA / "gold.jsonl"), str(DATA / "base.jsonl"), str(DATA / "cand.jsonl"),
            "--fuse", "rrf", "--fused-run", str(out), "--metrics", "recall@5,mrr", "--resamples", "200",
            "--permutations", "200", "--json"]
    assert main(args) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["runs"] == ["cand.jsonl", "rrf(k=60)"]
    assert out.exists()
    assert main(args + ["--baseline", "rrf(k=60)"]) == 0  # the fused run can be the baseline
    assert json.loads(capsys.readouterr().out)["runs"] == ["base.jsonl", "cand.jsonl"]
    means = rankgate.evaluate(str(DATA / "gold.jsonl"), str(out), ["recall@5"]).means
    row = next(r for r in data["rows"] if r["run"] == "rrf(k=60)" and r["metric"] == "recall@5")
    assert row["mean"] == pytest.approx(means["recall@5"])


def test_fuse_without_gold_only_writes_the_run(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from rankgate.cli.main import main

    out = tmp_path / "fused.jsonl"
    assert main(["compare", str(DATA / "base.jsonl"), str(DATA / "cand.jsonl"), "--fuse", "combsum", "--fused-run", str(out)]) == 0
    assert "wrote the combsum fusion of 2 runs" in capsys.readouterr().err
    assert out.read_bytes() == b"".join(
        (json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        for r in run_records(fuse([DATA / "base.jsonl", DATA / "cand.jsonl"], "combsum")))


def test_a_bad_run_is_refused_and_no_fused_run_is_written(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from .hostile import assert_refused

    bad = tmp_path / "in" / "bad.jsonl"
    bad.parent.mkdir()
    bad.write_text('{"query_id": "q01", "topk": [{"chunk_id": "a", "score": "high"}]}\n')
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    assert_refused(["compare", str(DATA / "base.jsonl"), str(bad), "--fuse", "rrf", "--fused-run", str(out_dir / "f.jsonl")],
                   out_dir, names=[bad], capsys=capsys)
    assert_refused(["compare", str(DATA / "base.jsonl"), str(DATA / "cand.jsonl"), "--fuse", "rrf"], out_dir,
                   capsys=capsys, contains=["--fused-run"])
    assert_refused(["compare", "--gold", str(DATA / "gold.jsonl"), str(DATA / "base.jsonl"), str(DATA / "cand.jsonl"),
                    "--fused-run", str(out_dir / "f.jsonl")], out_dir, capsys=capsys, contains=["needs --fuse"])


def test_an_unwritable_fused_run_path_is_a_clear_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from .hostile import assert_refused

    blocker = tmp_path / "plain-file"
    blocker.write_text("not a folder\n")
    assert_refused(["compare", str(DATA / "base.jsonl"), str(DATA / "cand.jsonl"), "--fuse", "rrf",
                    "--fused-run", str(blocker / "fused.jsonl")], tmp_path, names=["fused.jsonl"], capsys=capsys,
                   contains=["cannot be written", "--fused-run"])
