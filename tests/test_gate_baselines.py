"""A summary baseline keeps the paired rule: same verdict and numbers as gating against the run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rankgate.gating.baseline import hash_query_id, load_baseline_summary
from rankgate.cli.main import main
from rankgate.errors import InputError
from rankgate.flows.gate import gate
from rankgate.render.comment import comment_markdown

from .conftest import examples

DATA = Path(__file__).parent / "data" / "gate"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's gold set, runs and ship criteria, with the criteria's bootstrap seed set to 2."""
    from rankgate.demo.pipeline import run_demo

    out = tmp_path_factory.mktemp("demo") / "d"
    run_demo(out, seed=0)
    ship = out / "data" / "ship-criteria.yaml"
    text = ship.read_text(encoding="utf-8")
    assert "defaults: {seed: 0," in text
    ship.write_text(text.replace("defaults: {seed: 0,", "defaults: {seed: 2,"), encoding="utf-8")
    return out


def outcome(demo: Path, baseline) -> dict:
    out = gate(str(demo / "data" / "ship-criteria.yaml"), str(demo / "data" / "gold.jsonl"),
               str(demo / "runs" / "candidate.jsonl"), baseline)
    return out.to_dict()


def test_a_summary_baseline_gives_the_runs_verdict_and_numbers(demo, tmp_path, capsys):
    by_run = outcome(demo, str(demo / "runs" / "baseline.jsonl"))
    assert by_run["passed"] and by_run["baseline"]["rule"] == "paired"
    # a gate whose drop is beyond the limit but within noise: the paired rule is what lets it pass
    noisy = [c for g in by_run["gates"] for c in g["checks"] if "within noise" in (c["note"] or "")]
    assert noisy

    # main's baseline as the docs' workflow makes it: `rankgate gate --json` on the baseline run
    gate_json = tmp_path / "baseline-summary.json"
    code = main(["gate", "--config", str(demo / "data" / "ship-criteria.yaml"), "--gold", str(demo / "data" / "gold.jsonl"),
                 "--candidate", str(demo / "runs" / "baseline.jsonl"), "--json-out", str(gate_json), "--no-step-summary"])
    capsys.readouterr()
    assert code in (0, 1)
    for summary in (gate_json, demo / "baseline" / "summary.json"):  # gate --json, and evaluate --out's summary.json
        by_summary = outcome(demo, str(summary))
        assert by_summary["baseline"] == {"kind": "summary", "label": summary.name, "rule": "paired"}
        assert by_summary["gates"] == by_run["gates"]  # every check, value, interval and note
        assert by_summary["queries"] == by_run["queries"]  # regressed queries, not lowest-scoring
        assert by_summary["segments_moved"] == by_run["segments_moved"]
        assert by_summary["passed"] is True


def test_without_per_query_values_the_means_rule_decides_and_the_comment_says_so(demo, tmp_path):
    data = json.loads((demo / "baseline" / "summary.json").read_text(encoding="utf-8"))
    del data["per_query"]  # a summary from an older version
    old = tmp_path / "old-summary.json"
    old.write_text(json.dumps(data), encoding="utf-8")
    out = gate(str(demo / "data" / "ship-criteria.yaml"), str(demo / "data" / "gold.jsonl"),
               str(demo / "runs" / "candidate.jsonl"), str(old))
    assert out.rule == "means" and not out.passed  # the drop within noise now blocks: why the paired rule matters
    md = comment_markdown(out)
    assert "**Rule: means only.**" in md and "it has no per-query values" in md
    paired = comment_markdown(gate(str(demo / "data" / "ship-criteria.yaml"), str(demo / "data" / "gold.jsonl"),
                  str(demo / "runs" / "candidate.jsonl"), str(demo / "baseline" / "summary.json")))
    assert "**Rule: paired test.**" in paired and "paired by query (the summary keeps each query's values)" in paired


def test_another_gold_set_is_detected_and_falls_back_to_means(tmp_path, capsys):
    ship = tmp_path / "ship.yaml"
    ship.write_text("gates:\n  - metric: recall@5\n    regression_max: 0.03\ndefaults: {seed: 0, resamples: 200}\n",
                    encoding="utf-8")
    base = tmp_path / "base.json"
    assert main(["gate", "--config", str(ship), "--gold", str(DATA / "gold.jsonl"), "--candidate",
                 str(DATA / "base.jsonl"), "--json-out", str(base), "--no-step-summary"]) == 0
    capsys.readouterr()
    assert json.loads(base.read_text(encoding="utf-8"))["per_query"]["gold_sha256"]

    edited = tmp_path / "gold.jsonl"  # the same queries, one judgement changed: another gold set
    lines = (DATA / "gold.jsonl").read_text(encoding="utf-8").splitlines()
    lines[0] = lines[0].replace('"grade": 2', '"grade": 1')
    edited.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = gate(str(ship), str(edited), str(DATA / "cand.jsonl"), str(base))
    assert out.rule == "means"
    assert any("another gold set" in n for n in out.notes)
    assert "It is means only because it was computed on another gold set (the gold file's sha256 differs).\n" in comment_markdown(out)
    same = gate(str(ship), str(DATA / "gold.jsonl"), str(DATA / "cand.jsonl"), str(base))
    assert same.rule == "paired"


def test_query_ids_are_hashed_in_the_summary(tmp_path, capsys):
    ship = tmp_path / "ship.yaml"
    ship.write_text("gates:\n  - metric: recall@5\n    threshold: 0.1\ndefaults: {resamples: 200}\n", encoding="utf-8")
    out = tmp_path / "o.json"
    main(["gate", "--config", str(ship), "--gold", str(DATA / "gold.jsonl"), "--candidate", str(DATA / "base.jsonl"),
          "--json-out", str(out), "--no-step-summary"])
    capsys.readouterr()
    pq = json.loads(out.read_text(encoding="utf-8"))["per_query"]
    assert pq["id_hash"] == "sha256/16" and hash_query_id("q01") in pq["ids"]
    assert '"q01"' not in json.dumps(pq)
    assert len(pq["values"]["recall@5"]) == len(pq["ids"]) == len(pq["first_relevant_rank"])


@pytest.mark.parametrize("change, field", [
    (lambda pq: pq["values"]["recall@5"].pop(), "per_query.values.recall@5"),
    (lambda pq: pq["values"]["recall@5"].__setitem__(0, "1"), "per_query.values.recall@5[0]"),
    (lambda pq: pq.__setitem__("ids", pq["ids"][:1] * len(pq["ids"])), "per_query.ids"),
    (lambda pq: pq.__setitem__("id_hash", "md5"), "per_query.id_hash"),
    (lambda pq: pq["first_relevant_rank"].__setitem__(0, -1), "per_query.first_relevant_rank[0]"),
])
def test_a_damaged_per_query_block_is_an_input_error(tmp_path, capsys, change, field):
    ship = tmp_path / "ship.yaml"
    ship.write_text("gates:\n  - metric: recall@5\n    regression_max: 0.03\ndefaults: {resamples: 200}\n", encoding="utf-8")
    out = tmp_path / "o.json"
    main(["gate", "--config", str(ship), "--gold", str(DATA / "gold.jsonl"), "--candidate", str(DATA / "base.jsonl"),
          "--json-out", str(out), "--no-step-summary"])
    capsys.readouterr()
    data = json.loads(out.read_text(encoding="utf-8"))
    change(data["per_query"])
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_baseline_summary(str(bad))
    assert f"field '{field}'" in str(err.value) and str(bad) in str(err.value)
    folder = tmp_path / "outs"
    folder.mkdir()
    from .hostile import assert_refused

    assert_refused(["gate", "--config", str(ship), "--gold", str(DATA / "gold.jsonl"), "--candidate",
                    str(DATA / "cand.jsonl"), "--baseline", str(bad), "--json-out", str(folder / "o.json")], folder,
                   names=[str(bad)], capsys=capsys)


def test_the_quick_start_criteria_pass_on_a_gold_set_without_must_not_retrieve(tmp_path, capsys):
    """The docs' quick-start criteria have a forbidden@5 gate; most gold sets have no must_not_retrieve."""
    import re

    doc = (Path(__file__).resolve().parents[1] / "docs" / "gating.md").read_text(encoding="utf-8")
    (criteria,) = [b for b in re.findall(r"```yaml\n(.*?)```", doc, flags=re.DOTALL) if b.startswith("# ship-criteria")]
    ship = tmp_path / "ship-criteria.yaml"
    ship.write_text(criteria.replace("threshold: 0.85", "threshold: 0.5"), encoding="utf-8")
    gold = tmp_path / "gold.jsonl"
    gold.write_text("".join(line + "\n" for line in (DATA / "gold.jsonl").read_text(encoding="utf-8").splitlines()
                            if "must_not_retrieve" not in line), encoding="utf-8")
    comment = tmp_path / "c.md"
    code = main(["gate", "--config", str(ship), "--gold", str(gold), "--candidate", str(DATA / "base.jsonl"),
                 "--comment", str(comment), "--no-step-summary"])
    printed = capsys.readouterr().out
    assert code == 0, printed
    md = comment.read_text(encoding="utf-8")
    assert "forbidden@5 could not be checked: the metric applies to no query" in md
    assert "does not block; `not_applicable: error` in the gate makes it block" in md
    strict = tmp_path / "strict.yaml"
    strict.write_text(ship.read_text(encoding="utf-8").replace("    max: 0", "    max: 0\n    not_applicable: error"),
                      encoding="utf-8")
    assert main(["gate", "--config", str(strict), "--gold", str(gold), "--candidate", str(DATA / "base.jsonl"),
                 "--no-step-summary"]) == 1
    capsys.readouterr()


# -- property: for any results, a summary written from the baseline decides as the baseline itself --


@st.composite
def paired_results(draw):
    import numpy as np

    from rankgate.model.results import EvaluationResult

    n = draw(st.integers(2, 40))
    grid = st.sampled_from([0.0, 0.25, 0.5, 1.0, float("nan")])
    base = np.array(draw(st.lists(grid, min_size=n, max_size=n)))
    cand = np.array(draw(st.lists(grid, min_size=n, max_size=n)))
    lang = tuple(draw(st.lists(st.sampled_from(["de", "en", "fr"]), min_size=n, max_size=n)))
    ids = tuple(draw(st.lists(st.text(min_size=1, max_size=6), min_size=n, max_size=n, unique=True)))
    ranks_b = np.array(draw(st.lists(st.integers(0, 9), min_size=n, max_size=n)))
    ranks_c = np.array(draw(st.lists(st.integers(0, 9), min_size=n, max_size=n)))
    missing = tuple(q for q in ids if draw(st.booleans()) and len(q) % 3 == 0)
    gold = {"gold": {"path": "gold.jsonl", "sha256": "ab" * 32}}
    b = EvaluationResult(ids, ("recall@5",), {"recall@5": base}, {"tags.lang": lang}, ranks_b, missing_from_run=missing,
                         inputs={**gold, "run": {"path": "base.jsonl"}})
    c = EvaluationResult(ids, ("recall@5",), {"recall@5": cand}, {"tags.lang": lang}, ranks_c,
                         inputs={**gold, "run": {"path": "cand.jsonl"}})
    return b, c


PROPERTY_CONFIG = """\
gates:
  - metric: recall@5
    threshold: 0.3
    regression_max: 0.05
    segments: [lang]
defaults: {seed: 3, resamples: 100}
"""


@settings(max_examples=examples(40), deadline=None)
@given(paired_results())
def test_a_summary_of_the_baseline_decides_exactly_as_the_baseline_run(pair):
    from rankgate.gating.decide import BaselineSummary, decide, parse_config

    base, cand = pair
    config = parse_config(PROPERTY_CONFIG)
    by_run = decide(config, cand, base).to_dict()
    saved = json.loads(decide(config, base).to_json())  # the baseline's own --json outcome, through JSON
    by_summary = decide(config, cand, BaselineSummary.from_dict(saved, "baseline.json")).to_dict()
    assert by_summary["baseline"]["rule"] == "paired"
    assert by_summary["gates"] == by_run["gates"]
    assert by_summary["queries"] == by_run["queries"]
    assert by_summary["segments_moved"] == by_run["segments_moved"]
    assert by_summary["passed"] == by_run["passed"]


def test_a_summary_lacking_one_gated_metric_judges_only_that_gate_on_means(demo, tmp_path):
    data = json.loads((demo / "baseline" / "summary.json").read_text(encoding="utf-8"))
    del data["per_query"]["values"]["hit@5"]  # e.g. a summary written before hit@5 was gated
    partial = tmp_path / "partial-summary.json"
    partial.write_text(json.dumps(data), encoding="utf-8")
    by_run = outcome(demo, str(demo / "runs" / "baseline.jsonl"))
    out = outcome(demo, str(partial))
    assert out["baseline"]["rule"] == "paired"
    for g_run, g in zip(by_run["gates"], out["gates"]):
        if g["metric"] == "hit@5":  # means only, and says so on its checks
            assert all(c["kind"] != "regression" or "no paired test" in (c["note"] or "") for c in g["checks"])
        else:  # every other gate keeps the paired rule: the same checks as against the run (the verdicts' Holm
            # family is the metrics compared query by query: 3 here, 4 against the run)
            def numbers(gate: dict) -> dict:
                return {**gate, "checks": [{k: v for k, v in c.items() if k != "verdict"} for c in gate["checks"]]}

            assert numbers(g) == numbers(g_run)
    md = comment_markdown(gate(str(demo / "data" / "ship-criteria.yaml"), str(demo / "data" / "gold.jsonl"),
              str(demo / "runs" / "candidate.jsonl"), str(partial)))
    assert "Gates on hit@5 are judged on the change in means" in md and "no per-query values of hit@5" in md


# -- packed per-query values (from COMPACT_FROM queries on) --


@settings(max_examples=30, deadline=None)
@given(paired_results(), st.booleans())
def test_a_packed_summary_decides_exactly_as_the_baseline_run(pair, gold_known):
    """The packed block pairs as the lists do, named by the ordered ids' digest or, without the gold
    file's sha256, by every query's hash."""
    from dataclasses import replace
    from unittest import mock

    import rankgate.gating.baseline as bl
    from rankgate.gating.decide import BaselineSummary, decide, parse_config

    base, cand = pair
    if not gold_known:
        base = replace(base, inputs={"run": {"path": "base.jsonl"}})
        cand = replace(cand, inputs={"run": {"path": "cand.jsonl"}})
    config = parse_config(PROPERTY_CONFIG)
    by_run = decide(config, cand, base).to_dict()
    with mock.patch.object(bl, "COMPACT_FROM", 1):
        saved = json.loads(decide(config, base).to_json())
    pq = saved["per_query"]
    assert pq["encoding"] == "packed/1" and pq["n"] == len(base.query_ids)
    assert ("ids" in pq) is (not gold_known)
    by_summary = decide(config, cand, BaselineSummary.from_dict(saved, "baseline.json")).to_dict()
    assert by_summary["baseline"]["rule"] == "paired"
    assert by_summary["gates"] == by_run["gates"]
    assert by_summary["queries"] == by_run["queries"]
    assert by_summary["segments_moved"] == by_run["segments_moved"]
    assert by_summary["passed"] == by_run["passed"]


def test_columns_packed_on_two_threads_are_the_ones_packed_in_turn(monkeypatch):
    """Large per-query blocks are packed two columns at a time: the same texts, in the same order."""
    import numpy as np

    import rankgate.gating.baseline as bl

    rng = np.random.default_rng(4)
    columns = [rng.random(3000), np.full(3000, np.nan), rng.integers(0, 11, 3000) / 10, rng.random(1)]
    in_turn = [bl._pack(c, "<f8") for c in columns]
    monkeypatch.setattr(bl, "PACK_THREADS_FROM", 0)
    assert bl._pack_all(columns, "<f8") == in_turn


def _many_queries(tmp_path: Path, n: int = 1200) -> tuple[Path, Path, Path]:
    import random

    rng = random.Random(5)
    gold, base, cand = (tmp_path / name for name in ("gold.jsonl", "base.jsonl", "cand.jsonl"))
    with gold.open("w", encoding="utf-8") as g, base.open("w", encoding="utf-8") as b, \
            cand.open("w", encoding="utf-8") as c:
        for i in range(n):
            rel = [f"d{i}-{j}" for j in range(rng.randint(1, 3))]
            g.write(json.dumps({"query_id": f"q{i}", "relevant_chunks": [{"chunk_id": d, "grade": 1} for d in rel]}) + "\n")
            for fh, p in ((b, 0.7), (c, 0.68)):
                items = [f"x{i}-{j}" for j in range(8)] + [d for d in rel if rng.random() < p]
                rng.shuffle(items)
                fh.write(json.dumps({"query_id": f"q{i}", "topk": [{"chunk_id": d, "score": 20 - k}
                                                                   for k, d in enumerate(items)]}) + "\n")
    return gold, base, cand


def test_evaluate_packs_per_query_values_of_many_queries_and_a_gate_pairs_with_them(tmp_path, capsys):
    gold, base, cand = _many_queries(tmp_path)
    ship = tmp_path / "ship.yaml"
    ship.write_text("gates:\n  - metric: recall@5\n    regression_max: 0.05\n  - metric: ndcg@10\n    threshold: 0.1\n"
                    "defaults: {seed: 1, resamples: 200}\n", encoding="utf-8")
    out = tmp_path / "b"
    assert main(["evaluate", "--gold", str(gold), "--run", str(base), "--metrics", "recall@5,ndcg@10,mrr", "--out",
                 str(out), "--resamples", "0"]) == 0
    capsys.readouterr()
    text = (out / "summary.json").read_text(encoding="utf-8")
    pq = json.loads(text)["per_query"]
    assert pq["encoding"] == "packed/1" and pq["n"] == 1200 and "ids" not in pq and '"q1"' not in text
    by_run = gate(str(ship), str(gold), str(cand), str(base)).to_dict()
    by_summary = gate(str(ship), str(gold), str(cand), str(out / "summary.json")).to_dict()
    assert by_run["baseline"]["rule"] == by_summary["baseline"]["rule"] == "paired"
    assert by_summary["gates"] == by_run["gates"] and by_summary["queries"] == by_run["queries"]
    # the gate's own --json outcome packs too, and serves as the next baseline
    outcome_json = tmp_path / "o.json"
    main(["gate", "--config", str(ship), "--gold", str(gold), "--candidate", str(base), "--json-out", str(outcome_json),
          "--no-step-summary"])
    capsys.readouterr()
    assert json.loads(outcome_json.read_text(encoding="utf-8"))["per_query"]["encoding"] == "packed/1"
    assert gate(str(ship), str(gold), str(cand), str(outcome_json)).to_dict()["gates"] == by_run["gates"]
    # another order of the same gold queries is another gold file: means only, and said so
    lines = gold.read_text(encoding="utf-8").splitlines()
    shuffled = tmp_path / "gold2.jsonl"
    shuffled.write_text("\n".join(lines[1:] + lines[:1]) + "\n", encoding="utf-8")
    assert gate(str(ship), str(shuffled), str(cand), str(out / "summary.json")).rule == "means"


@pytest.mark.parametrize("change, field", [
    (lambda pq: pq["values"].__setitem__("recall@5", pq["values"]["recall@5"][:-8]), "per_query.values.recall@5"),
    (lambda pq: pq["values"].__setitem__("recall@5", "not base64!"), "per_query.values.recall@5"),
    (lambda pq: pq["values"].__setitem__("recall@5", [1.0]), "per_query.values.recall@5"),
    (lambda pq: pq.__setitem__("n", pq["n"] + 1), "per_query.values.recall@5"),
    (lambda pq: pq.__setitem__("n", -1), "per_query.n"),
    (lambda pq: pq.__setitem__("encoding", "packed/9"), "per_query.encoding"),
    (lambda pq: pq.__setitem__("ids_sha256", None), "per_query.ids_sha256"),
    (lambda pq: pq.__setitem__("missing_from_run", [pq["n"]]), "per_query.missing_from_run"),
    (lambda pq: pq.__setitem__("gold_sha256", None), "per_query.ids"),
])
def test_a_damaged_packed_block_is_an_input_error(tmp_path, capsys, change, field):
    gold, base, _ = _many_queries(tmp_path)
    out = tmp_path / "b"
    assert main(["evaluate", "--gold", str(gold), "--run", str(base), "--metrics", "recall@5", "--out", str(out),
                 "--resamples", "0"]) == 0
    capsys.readouterr()
    data = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    data["inputs"]["gold"]["sha256"] = None  # (so that the per_query block alone must vouch for the gold set)
    change(data["per_query"])
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_baseline_summary(str(bad))
    assert f"field '{field}'" in str(err.value) and str(bad) in str(err.value)


def test_a_packed_value_that_is_infinite_is_refused(tmp_path):
    import math

    from rankgate.gating.baseline import _pack

    data = {"metrics": {"recall@5": {"mean": 0.5, "n": 2}},
            "per_query": {"id_hash": "sha256/16", "gold_sha256": "ab" * 32, "encoding": "packed/1", "n": 2,
                          "ids_sha256": "cd" * 32, "values": {"recall@5": _pack([0.5, math.inf], "<f8")},
                          "first_relevant_rank": None, "missing_from_run": []}}
    bad = tmp_path / "inf.json"
    bad.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(InputError, match="finite numbers or NaN"):
        load_baseline_summary(str(bad))
    data["per_query"]["values"]["recall@5"] = _pack([0.5, math.nan], "<f8")
    bad.write_text(json.dumps(data), encoding="utf-8")
    assert math.isnan(load_baseline_summary(str(bad)).per_query.values["recall@5"][1])
