"""The two published reference contracts, read as written: ship criteria whose gate names carry the
metric, and the metric package's samples with the system's outputs keyed by sample id."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rankgate
from rankgate.cli.main import main
from rankgate.errors import InputError, MetricSpecError

from .conftest import examples

DATA = Path(__file__).parent / "data" / "contract"
ALIASES = "retrieval-hit-at-k,retrieval-recall-at-k,retrieval-mrr,retrieval-ndcg-at-k,answer-containment-at-k"
NAMES = ("retrieval_hit_at_k", "retrieval_recall_at_k", "retrieval_mrr", "retrieval_ndcg_at_k", "answer_containment_at_k")


def _per_query(out: Path) -> dict[str, dict[str, str]]:
    import csv

    with open(out / "metrics.csv", newline="") as fh:
        return {row["query_id"]: row for row in csv.DictReader(fh)}


def _evaluate(tmp_path: Path, run: Path, *extra: str) -> tuple[dict, dict[str, dict[str, str]]]:
    out = tmp_path / "out"
    assert main(["evaluate", "--gold", str(DATA / "samples.yaml"), "--run", str(run), "-m", ALIASES,
                 "--resamples", "0", "-o", str(out), *extra]) == 0
    return json.loads((out / "summary.json").read_text()), _per_query(out)


def test_worked_example_of_the_sample_contract(tmp_path):
    summary, rows = _evaluate(tmp_path, DATA / "outputs.json")
    worked = rows["worked-example"]
    assert float(worked["retrieval_hit_at_k"]) == 1.0
    assert float(worked["retrieval_recall_at_k"]) == 1.0
    assert float(worked["retrieval_mrr"]) == 0.5
    assert round(float(worked["retrieval_ndcg_at_k"]), 4) == 0.6509
    graded = rows["graded"]  # k 3, gains 2 and 1 (linear): DCG 1 + 2/log2(4), IDCG 2 + 1/log2(3)
    assert float(graded["retrieval_ndcg_at_k"]) == pytest.approx(2.0 / (2.0 + 1.0 / math.log2(3)))
    assert float(graded["answer_containment_at_k"]) == 1.0
    assert summary["metrics"]["answer_containment_at_k"]["n"] == 1  # only the sample with an expected answer
    assert "metadata.k" in summary["definitions"]["retrieval_mrr"]


def test_k_per_sample_reaches_mrr_and_ndcg_and_else_the_configured_default(tmp_path):
    _, rows = _evaluate(tmp_path, DATA / "outputs.json")
    late = rows["default-k"]  # no metadata.k: k 5, and its one relevant item is 6th
    assert [float(late[n]) for n in NAMES[:4]] == [0.0, 0.0, 0.0, 0.0]
    _, rows = _evaluate(tmp_path / "k6", DATA / "outputs.json", "--k", "6")
    late = rows["default-k"]
    assert float(late["retrieval_mrr"]) == pytest.approx(1 / 6)
    assert float(late["retrieval_ndcg_at_k"]) == pytest.approx(1 / math.log2(7))
    assert float(rows["worked-example"]["retrieval_mrr"]) == 0.5  # its own k 5 still holds
    # everywhere else an explicit @k wins over the sample's k, as before
    r = rankgate.evaluate(str(DATA / "samples.yaml"), str(DATA / "outputs.json"), ["hit@1", "mrr"])
    assert r.values["hit@1"].tolist() == [0.0, 1.0, 0.0]
    assert r.values["mrr"].tolist() == pytest.approx([0.5, 1.0, 1 / 6])


OUTPUT_SHAPES = {
    "outputs.yaml": (
        "worked-example:\n  retrieved:\n    - {id: doc-7, text: a}\n    - {id: doc-3, text: b}\n    - {id: doc-1}\n"
        "    - {id: doc-9}\n    - {id: doc-2}\n"
        "graded: [doc-5, doc-8, doc-4]\n"
        "default-k: [doc-1, doc-2, doc-3, doc-4, doc-5, doc-6]\n"),
    "outputs.jsonl": (
        '{"id": "worked-example", "output": {"retrieved": [{"id": "doc-7"}, {"id": "doc-3"}, {"id": "doc-1"}, '
        '{"id": "doc-9"}, {"id": "doc-2"}]}}\n'
        '{"id": "graded", "output": ["doc-5", "doc-8", "doc-4"]}\n'
        '{"id": "default-k", "retrieved": ["doc-1", "doc-2", "doc-3", "doc-4", "doc-5", "doc-6"]}\n'),
    "with-outputs.yml": (
        "samples:\n"
        "  - id: worked-example\n    output: {retrieved: [{id: doc-7}, {id: doc-3}, {id: doc-1}, {id: doc-9}, {id: doc-2}]}\n"
        "  - id: graded\n    output: [doc-5, doc-8, doc-4]\n"
        "  - id: default-k\n    output: [doc-1, doc-2, doc-3, doc-4, doc-5, doc-6]\n"),
}


@pytest.mark.parametrize("name", sorted(OUTPUT_SHAPES))
def test_every_output_shape_gives_the_same_numbers(tmp_path, name):
    run = tmp_path / name
    run.write_text(OUTPUT_SHAPES[name])
    _, rows = _evaluate(tmp_path, run)
    _, want = _evaluate(tmp_path / "json", DATA / "outputs.json")
    for q in want:
        assert [rows[q][n] for n in NAMES[:4]] == [want[q][n] for n in NAMES[:4]], (name, q)


def test_samples_as_json_and_bare_list(tmp_path):
    import yaml

    samples = yaml.safe_load((DATA / "samples.yaml").read_text())
    (tmp_path / "samples.json").write_text(json.dumps(samples, indent=2))
    (tmp_path / "list.yaml").write_text(yaml.safe_dump(samples["samples"]))
    want = rankgate.evaluate(str(DATA / "samples.yaml"), str(DATA / "outputs.json"), ALIASES.split(","))
    for gold in ("samples.json", "list.yaml"):
        got = rankgate.evaluate(str(tmp_path / gold), str(DATA / "outputs.json"), ALIASES.split(","))
        assert got.query_ids == want.query_ids
        for n in NAMES[:4]:
            assert got.values[n].tolist() == want.values[n].tolist()


@pytest.mark.parametrize("text,where,message", [
    ("samples:\n  - id: a\n    input: {question: q}\n    expected_output: 5\n", ":2: field 'expected_output'", "list of ids"),
    ("samples:\n  - input: {question: q}\n    expected_output: [x]\n", ":2: field 'samples[0].id'", "missing"),
    ("samples:\n  - id: a\n    input: {question: [3]}\n    expected_output: [x]\n", ":2: field 'samples[0].input.question'",
     "string"),  # (a plain 3 is the text "3", as written)
    ("samples:\n  - id: a\n    metadata: {k: 0}\n    expected_output: [x]\n", ":2: field 'k'", "positive integer"),
    ("samples: [\n", ":2", "not valid YAML"),
])
def test_bad_samples_name_file_line_and_field(tmp_path, capsys, text, where, message):
    gold = tmp_path / "samples.yaml"
    gold.write_text(text)
    assert main(["evaluate", "--gold", str(gold), "--run", str(DATA / "outputs.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert f"{gold}{where}" in err and message in err
    assert "Traceback" not in err and len(err.splitlines()) == 1


def test_bad_output_names_the_sample(tmp_path, capsys):
    run = tmp_path / "outputs.yaml"
    run.write_text("worked-example: [doc-1]\ngraded: {ranked: [doc-4]}\n")
    assert main(["evaluate", "--gold", str(DATA / "samples.yaml"), "--run", str(run)]) == 2
    err = capsys.readouterr().err
    assert f"{run}:2: field 'graded' must be {{retrieved: [...]}} or a list of ids" in err


def test_yaml_aliases_are_bounded(tmp_path, monkeypatch):
    from rankgate.io.tools import contract

    monkeypatch.setattr(contract, "MAX_VALUES", 50)
    bomb = "a: &a [x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\nc: [*b, *b, *b, *b]\n"
    run = tmp_path / "bomb.yaml"
    run.write_text(bomb)
    with pytest.raises(InputError, match="more than 50 values"):
        rankgate.evaluate(str(DATA / "samples.yaml"), str(run), ["mrr"])


def test_contract_names_take_no_explicit_cutoff():
    with pytest.raises(MetricSpecError, match="metadata.k"):
        rankgate.parse_metric("retrieval-mrr@10")
    assert str(rankgate.parse_metric("Retrieval-NDCG-at-k")) == "retrieval_ndcg_at_k"


# -- ship criteria without metric: ---------------------------------------------------------------

def test_ship_criteria_as_written_gate_and_comment(tmp_path, capsys):
    cand = tmp_path / "candidate.json"
    outputs = json.loads((DATA / "outputs.json").read_text())
    outputs["worked-example"] = {"retrieved": [{"id": "doc-3"}, {"id": "doc-9"}]}
    outputs["default-k"] = ["doc-6"]
    cand.write_text(json.dumps(outputs))
    comment = tmp_path / "comment.md"
    code = main(["gate", "--config", str(DATA / "ship-criteria.yaml"), "--gold", str(DATA / "samples.yaml"),
                 "--baseline", str(DATA / "outputs.json"), "--candidate", str(cand), "--comment", str(comment),
                 "--json-out", str(tmp_path / "outcome.json"), "--no-step-summary"])
    assert code == 0
    text = comment.read_text()
    assert "Metrics read from gate names (no `metric:` given): retrieval\\_recall\\_at\\_5 as **recall@5**; " \
           "retrieval\\_mrr as **mrr**." in text
    outcome = json.loads((tmp_path / "outcome.json").read_text())
    gates = {g["name"]: g for g in outcome["gates"]}
    assert (gates["retrieval_recall_at_5"]["metric"], gates["retrieval_mrr"]["metric"]) == ("recall@5", "mrr")
    assert gates["retrieval_recall_at_5"]["metric_from_name"] is True
    assert (gates["retrieval_mrr"]["severity"], gates["retrieval_mrr"]["regression_max"]) == ("warning", 0.05)
    assert outcome["metrics"]["recall@5"]["mean"] == 1.0


def test_ship_criteria_with_metric_say_nothing_of_names(tmp_path):
    from rankgate.gating.config import load_config

    cfg = tmp_path / "c.yaml"
    cfg.write_text("gates:\n- name: retrieval_recall_at_5\n  metric: recall@10\n  threshold: 0.5\n")
    gate = load_config(str(cfg)).gates[0]
    assert (gate.metric, gate.metric_from_name) == ("recall@10", False)


@pytest.mark.parametrize("name,metric", [("retrieval_ndcg_at_10", "ndcg@10"), ("retrieval_hit_at_3", "hit@3"),
                                         ("retrieval_recall_at_k", "retrieval_recall_at_k"),
                                         ("retrieval_false_evidence_at_3", "false_evidence@3"), ("recall@5", "recall@5")])
def test_metric_read_from_gate_name(tmp_path, name, metric):
    from rankgate.gating.config import load_config

    cfg = tmp_path / "c.yaml"
    limit = "max: 0.1" if "false" in name else "threshold: 0.5"
    cfg.write_text(f"gates:\n- name: {name}\n  {limit}\n")
    gate = load_config(str(cfg)).gates[0]
    assert (gate.metric, gate.metric_from_name) == (metric, True)


@pytest.mark.parametrize("name", ["retrieval_recal_at_5", "recall_top5", "retrieval_mrr_at_0"])
def test_unreadable_gate_name_is_a_usage_error(tmp_path, capsys, name):
    cfg = tmp_path / "ship.yaml"
    cfg.write_text(f"gates:\n- threshold: 0.5\n  name: {name}\n")
    shutil.copy(DATA / "samples.yaml", tmp_path / "s.yaml")
    code = main(["gate", "--config", str(cfg), "--gold", str(tmp_path / "s.yaml"), "--candidate",
                 str(DATA / "outputs.json"), "--no-step-summary"])
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert f"{cfg}:3: field 'gates[0].name'" in err and "retrieval_<metric>[_at_<k>]" in err
    assert len(err.splitlines()) == 1


# -- --layout v0 -----------------------------------------------------------------------------------

def test_v0_summary_keys_error_rate_and_leaks_from_must_not_retrieve(tmp_path):
    gold = tmp_path / "g.jsonl"
    gold.write_text("\n".join(json.dumps(g) for g in [
        {"query_id": "q1", "relevant": ["a"], "must_not_retrieve": ["secret"]},
        {"query_id": "q2", "relevant": ["b"], "must_not_retrieve": ["secret"]},
        {"query_id": "q3", "relevant": ["c"]},
        {"query_id": "q4", "relevant": ["d"], "must_not_retrieve": ["secret"]},
    ]) + "\n")
    run = tmp_path / "r.jsonl"
    run.write_text("\n".join(json.dumps(r) for r in [
        {"query_id": "q1", "topk": ["a", "secret"], "errors": ["timeout", "retry"]},
        {"query_id": "q2", "topk": ["b"]},
        {"query_id": "q3", "topk": ["x", "c"], "errors": 0},
    ]) + "\n")
    out = tmp_path / "out"
    assert main(["evaluate", "--gold", str(gold), "--run", str(run), "--layout", "v0", "-o", str(out),
                 "--resamples", "0"]) == 0
    s = json.loads((out / "summary.json").read_text())
    assert set(s["quality"]) == {"p@5", "ndcg@10", "mrr@10"}
    assert s["quality"]["mrr@10"] == pytest.approx((1 + 1 + 0.5 + 0) / 4)
    assert s["operational"] == {"p50_ms": None, "p95_ms": None, "error_rate": pytest.approx(1 / 3)}  # q4 not answered
    assert s["privacy"] == {"leak_rate": 0.5}  # q1 leaked, q2 did not; q3 has no list, q4 no output
    assert s["privacy_detail"]["sources"] == ["gold must_not_retrieve in the top k"]
    rows = (out / "metrics.csv").read_text().splitlines()
    assert rows[1].endswith(",2,,1") and rows[3].endswith(",0,,")


# -- traces sample --abstention-threshold ---------------------------------------------------------

def test_traces_sample_takes_the_threshold_as_an_option_like_the_file(tmp_path, capsys):
    reqs = [{"request_id": f"r{i}", "timestamp": f"2026-05-01T10:00:0{i}Z", "query": f"q {i}", "status": "ok",
             "retrieved": [{"stage": "candidate", "rank": 1, "id": f"c{i}", "score": score}]}
            for i, score in enumerate([0.2, 0.9, 0.3])]
    traces = tmp_path / "t.jsonl"
    traces.write_text("".join(json.dumps(r) + "\n" for r in reqs))
    ab = tmp_path / "abstention.yaml"
    ab.write_text("abstention:\n  threshold: 0.5\n")
    by_file, by_option = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    assert main(["traces", "sample", "--traces", str(traces), "--abstention", str(ab), "-o", str(by_file)]) == 0
    assert main(["traces", "sample", "--traces", str(traces), "--abstention-threshold", "0.5", "-o", str(by_option)]) == 0
    assert by_option.read_bytes() == by_file.read_bytes()
    assert len(by_option.read_text().splitlines()) == 2  # the two requests under 0.5
    capsys.readouterr()
    assert main(["gold", "sample", "--traces", str(traces), "--abstention", str(ab), "--abstention-threshold", "0.5",
                 "-o", str(tmp_path / "c.jsonl")]) == 2
    assert "not both" in capsys.readouterr().err
    assert main(["traces", "sample", "--traces", str(traces), "--abstention-threshold", "nan",
                 "-o", str(tmp_path / "c.jsonl")]) == 2
    assert not (tmp_path / "c.jsonl").exists()


def test_samples_as_json_lines_and_a_bare_json_list(tmp_path):
    import yaml

    samples = yaml.safe_load((DATA / "samples.yaml").read_text())["samples"]
    (tmp_path / "samples.jsonl").write_text("".join(json.dumps(s) + "\n" for s in samples))
    (tmp_path / "list.json").write_text(json.dumps(samples))
    want = rankgate.evaluate(str(DATA / "samples.yaml"), str(DATA / "outputs.json"), ALIASES.split(","))
    for gold in ("samples.jsonl", "list.json"):
        got = rankgate.evaluate(str(tmp_path / gold), str(DATA / "outputs.json"), ALIASES.split(","))
        assert got.query_ids == want.query_ids
        for n in NAMES:
            assert got.values[n].tolist() == pytest.approx(want.values[n].tolist(), nan_ok=True)


# -- the contract names equal their base metric cut at each sample's k -----------------------------

DOCS = [f"d{i}" for i in range(8)]


@st.composite
def _samples(draw):
    n = draw(st.integers(1, 6))
    gold, run = [], {}
    for i in range(n):
        graded = draw(st.dictionaries(st.sampled_from(DOCS), st.integers(1, 3), min_size=1, max_size=4))
        sample = {"id": f"s{i}", "expected_output": graded}
        k = draw(st.none() | st.integers(1, 9))
        if k is not None:
            sample["metadata"] = {"k": k}
        gold.append(sample)
        run[f"s{i}"] = draw(st.lists(st.sampled_from(DOCS), unique=True, max_size=8))
    return gold, run, draw(st.integers(1, 9))


@settings(max_examples=examples(40), deadline=None)
@given(_samples())
def test_contract_names_are_their_base_metric_at_each_samples_k(case):
    gold, run, default_k = case
    got = rankgate.evaluate(gold, run, ["retrieval-hit-at-k", "retrieval-recall-at-k", "retrieval-mrr",
                                        "retrieval-ndcg-at-k"], k=default_k)
    for i, sample in enumerate(gold):
        k = (sample.get("metadata") or {}).get("k", default_k)
        one = rankgate.evaluate([{"query_id": sample["id"], "relevant": sample["expected_output"]}],
                                {sample["id"]: run[sample["id"]]}, [f"hit@{k}", f"recall@{k}", f"mrr@{k}", f"ndcg@{k}"])
        for name, base in zip(NAMES[:4], ("hit", "recall", "mrr", "ndcg")):
            assert got.values[name][i] == pytest.approx(one.values[f"{base}@{k}"][0]), (name, sample, run[sample["id"]])


def test_in_memory_samples_and_outputs():
    import yaml

    samples = yaml.safe_load((DATA / "samples.yaml").read_text())
    outputs = json.loads((DATA / "outputs.json").read_text())
    got = rankgate.evaluate(samples, outputs, ALIASES.split(","))
    want = rankgate.evaluate(str(DATA / "samples.yaml"), str(DATA / "outputs.json"), ALIASES.split(","))
    assert got.query_ids == want.query_ids
    for n in NAMES:
        assert got.values[n].tolist() == pytest.approx(want.values[n].tolist(), nan_ok=True)
    # rankgate's own mappings keep their meaning: {qid: {doc: score}} is scores, not an output
    scored = rankgate.evaluate({"q": ["a", "b"]}, {"q": {"b": 2.0, "a": 1.0}}, ["mrr"])
    assert scored.values["mrr"].tolist() == [1.0]


def test_gold_validate_reads_samples_and_lists_every_bad_sample(tmp_path, capsys):
    assert main(["gold", "validate", "--gold", str(DATA / "samples.yaml")]) == 0
    assert "3 queries, 5 graded labels, 0 must-not-retrieve ids" in capsys.readouterr().out
    bad = tmp_path / "samples.yaml"
    bad.write_text("samples:\n  - id: a\n    input: {question: q}\n    expected_output: 5\n"
                   "  - id: b\n    expected_output: [x]\n  - id: b\n    expected_output: [y]\n")
    assert main(["gold", "validate", "--gold", str(bad)]) == 1
    out = capsys.readouterr().out
    assert "| error | 2 |  | schema | field 'expected\\_output' must be a list of ids" in out
    assert "| error | 7 | b | duplicate | repeats query id 'b' of line 5 |" in out
