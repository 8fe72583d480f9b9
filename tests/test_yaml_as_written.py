"""Ids are text as written in every YAML file rankgate reads, and counts are decimal integers.

PyYAML follows YAML 1.1: a plain 0012 is 10 (octal), 0x1F 31, 1_0 10, 12:30 750 (base 60), yes True,
2024-01-05 a date. The sample contract (samples and outputs), the ship criteria, the trace monitors and
the field map keep ids, names and labels as the text written, and refuse a number written in another
base or spelling where they read one (k, grades, scores, thresholds), naming file, line and field.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rankgate.cli.main import main

from .conftest import examples

# Spellings YAML 1.1 reads as something other than the text: ints in four bases and with underscores,
# base-60 ints and floats, booleans, floats with an exponent, infinities and NaN, dates and times; and
# two it keeps (1e3 has no dot, 0o17 is YAML 1.2 only), which must stay as they are too.
SPELLINGS = ("0012", "0x1F", "0b101", "1_0", "12:30", "190:20:30.15", "+12", "-0", "yes", "No", "on", "OFF",
             "true", "1.50", "1.0e+3", ".inf", "-.Inf", ".nan", "2024-01-05", "2024-01-05 10:00:00", "1e3", "0o17")


def _rows(out: Path) -> dict[str, dict[str, str]]:
    """metrics.csv by query id; a text that a spreadsheet would run as a formula (-.Inf) is written with
    a leading ' (render/exports.py), taken off here."""
    def cell(text: str) -> str:
        return text[1:] if text[:2] in ("'-", "'+", "'=", "'@") else text

    with open(out / "metrics.csv", newline="") as fh:
        return {cell(row["query_id"]): {k: cell(v) for k, v in row.items()} for row in csv.DictReader(fh)}


def _samples_yaml(ids, *, outputs: bool = False) -> str:
    lines = ["samples:"]
    for i, sid in enumerate(ids):
        lines += [f"  - id: {sid}", f"    input: {{question: q{i}}}", "    expected_output:", f"      - {sid}",
                  f"      - d-{i}", "    metadata:", "      k: 3", f"      group: {sid}"]
        if outputs:
            lines += ["    output:", f"      - {sid}"]
    return "\n".join(lines) + "\n"


def _jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


# -- the sample contract -------------------------------------------------------------------------------
def test_sample_ids_and_relevant_ids_are_read_as_written(tmp_path):
    """The audit's case: a YAML gold set scored against the system's JSONL run, which writes its ids
    as they are; YAML 1.1 turned 0012 into "10" and every such query scored 0 without a word."""
    gold = tmp_path / "samples.yaml"
    gold.write_text(_samples_yaml(SPELLINGS), encoding="utf-8")
    run = _jsonl(tmp_path / "run.jsonl", [{"query_id": s, "retrieved": [s]} for s in SPELLINGS])
    out = tmp_path / "out"
    assert main(["evaluate", "--gold", str(gold), "--run", str(run), "-m", "hit@1", "--by", "metadata.group",
                 "--resamples", "0", "-o", str(out)]) == 0
    rows = _rows(out)
    assert list(rows) == list(SPELLINGS)
    assert {s: rows[s]["hit@1"] for s in SPELLINGS} == {s: "1.0" for s in SPELLINGS}
    assert [rows[s]["metadata.group"] for s in SPELLINGS] == list(SPELLINGS)  # segment values as written


def test_outputs_keyed_and_listed_by_ids_as_written(tmp_path):
    gold = _jsonl(tmp_path / "gold.jsonl", [{"query_id": s, "relevant": [s, "x"]} for s in SPELLINGS])
    outputs = tmp_path / "outputs.yaml"
    # keys, bare ids and {id: …} items; an id quoted in one place and plain in another is the same id
    outputs.write_text("".join(f"{s}:\n  retrieved:\n    - {{id: {s}, text: {s}}}\n    - x\n" if i % 2 else
                               f"'{s}': [{s}, 'x']\n" for i, s in enumerate(SPELLINGS)), encoding="utf-8")
    out = tmp_path / "out"
    assert main(["evaluate", "--gold", str(gold), "--run", str(outputs), "-m", "recall@2", "--resamples", "0",
                 "-o", str(out)]) == 0
    assert {q: r["recall@2"] for q, r in _rows(out).items()} == {s: "1.0" for s in SPELLINGS}


def test_ids_yaml_1_1_would_merge_stay_apart(tmp_path, capsys):
    """0x1F and 31 (and yes and true) were one id to YAML 1.1: a repeated query, or two relevant ids
    counted once. They are four ids."""
    samples = tmp_path / "samples.yaml"
    samples.write_text("samples:\n"
                       "  - {id: 0x1F, expected_output: [yes, true], output: [true, yes]}\n"
                       "  - {id: 31, expected_output: [010, 8], output: [8]}\n", encoding="utf-8")
    assert main(["gold", "validate", "--gold", str(samples)]) == 0
    assert "2 queries, 4 graded labels" in capsys.readouterr().out
    out = tmp_path / "out"
    assert main(["evaluate", "--gold", str(samples), "--run", str(samples), "-m", "recall@2", "--resamples", "0",
                 "-o", str(out)]) == 0
    assert {q: r["recall@2"] for q, r in _rows(out).items()} == {"0x1F": "1.0", "31": "0.5"}


def test_a_samples_file_carrying_its_outputs_and_null_ids(tmp_path, capsys):
    samples = tmp_path / "samples.yml"
    samples.write_text(_samples_yaml(SPELLINGS, outputs=True), encoding="utf-8")
    out = tmp_path / "out"
    assert main(["evaluate", "--gold", str(samples), "--run", str(samples), "-m", "hit@1", "--resamples", "0",
                 "-o", str(out)]) == 0
    assert set(_rows(out)) == set(SPELLINGS)
    # a plain null is null, not the text "null": an id that is missing (quote it to mean the text)
    samples.write_text("samples:\n  - id: ~\n    expected_output: [a]\n", encoding="utf-8")
    assert main(["evaluate", "--gold", str(samples), "--run", str(samples)]) == 2
    assert f"{samples}:2: field 'samples[0].id' is missing or not a string; got None" in capsys.readouterr().err
    samples.write_text("samples:\n  - {id: 'null', expected_output: [~, a], output: [a]}\n", encoding="utf-8")
    assert main(["evaluate", "--gold", str(samples), "--run", str(samples)]) == 2
    assert "items must be ids or objects; item 0 is None" in capsys.readouterr().err


_ID = st.one_of(
    st.from_regex(r"0[0-7]{1,6}", fullmatch=True),
    st.from_regex(r"0x[0-9a-fA-F]{1,8}", fullmatch=True),
    st.from_regex(r"0b[01]{1,12}", fullmatch=True),
    st.from_regex(r"[1-9][0-9]{0,2}(_[0-9]{1,3}){1,2}", fullmatch=True),
    st.from_regex(r"-?[1-9][0-9]?(:[0-5][0-9]){1,3}(\.[0-9]{1,2})?", fullmatch=True),
    st.from_regex(r"[+-]?[0-9]{1,4}\.[0-9]{0,4}([eE][-+][0-9]{1,2})?", fullmatch=True),
    st.from_regex(r"20[0-9]{2}-[01][0-9]-[0-3][0-9]", fullmatch=True),
    st.sampled_from(["yes", "Yes", "YES", "no", "No", "NO", "on", "On", "ON", "off", "Off", "OFF", "true", "False",
                     ".inf", "-.inf", "+.INF", ".NaN", "1e3", "0o17"]),
)


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(st.tuples(_ID, st.booleans()), min_size=1, max_size=6, unique_by=lambda t: t[0]))
def test_every_spelling_round_trips_as_written(ids):
    """Ids YAML 1.1 reads as numbers, booleans or dates, written plain or quoted, come back as the text."""
    import tempfile

    from rankgate.io.tools.contract import read_contract_gold, read_contract_run

    def w(text: str, quoted: bool) -> str:
        return f"'{text}'" if quoted else text

    with tempfile.TemporaryDirectory() as tmp:
        samples = Path(tmp) / "s.yaml"
        samples.write_text("samples:\n" + "".join(
            f"  - id: {w(s, q)}\n    expected_output: {{{w(s, not q)}: 2}}\n    output: [{w(s, q)}]\n"
            for s, q in ids), encoding="utf-8")
        gold, run = read_contract_gold(str(samples)), read_contract_run(str(samples))
    want = [s for s, _ in ids]
    assert list(gold.query_ids) == want and list(run.query_ids) == want
    assert [str(x) for x in gold.j_doc.to_pylist()] == want and gold.j_grade.tolist() == [2] * len(want)
    assert [str(x) for x in run.r_doc.to_pylist()] == want


@pytest.mark.parametrize("where, text, got", [
    ("metadata", "010", "010, which YAML reads as 8"),
    ("metadata", "0x1F", "0x1F, which YAML reads as 31"),
    ("metadata", "1_0", "1_0, which YAML reads as 10"),
    ("metadata", "1:30", "1:30, which YAML reads as 90"),
    ("metadata", "0b101", "0b101, which YAML reads as 5"),
    ("sample", "07", "07, which YAML reads as 7"),
])
def test_k_is_a_decimal_integer_only(tmp_path, capsys, where, text, got):
    samples = tmp_path / "samples.yaml"
    k = f"    metadata: {{k: {text}}}\n" if where == "metadata" else f"    k: {text}\n"
    samples.write_text(f"samples:\n  - id: a\n    expected_output: [x]\n{k}    output: [x]\n", encoding="utf-8")
    assert main(["evaluate", "--gold", str(samples), "--run", str(samples)]) == 2
    err = capsys.readouterr().err.strip()
    field = "samples[0].metadata.k" if where == "metadata" else "samples[0].k"
    assert err == (f"rankgate evaluate: error: {samples}:4: field '{field}' must be written in decimal digits; "
                   f"got {got} (write the number in decimal digits, e.g. 10 or 0.5)")


@pytest.mark.parametrize("text, message", [
    ("'10'", "field 'k' must be a positive integer up to 1,000,000,000; got '10'"),  # quoted: text
    ("1e3", "got '1e3'"), (".inf", "got inf"), ("10.0", "got 10.0"), ("yes", "got True"),
])
def test_k_spellings_that_are_no_count_are_refused(tmp_path, capsys, text, message):
    samples = tmp_path / "samples.yaml"
    samples.write_text(f"samples:\n  - id: a\n    expected_output: [x]\n    metadata: {{k: {text}}}\n", encoding="utf-8")
    assert main(["evaluate", "--gold", str(samples), "--run", str(samples)]) == 2
    assert message in capsys.readouterr().err


def test_grades_scores_and_ranks_are_decimal_numbers(tmp_path, capsys):
    gold = tmp_path / "samples.yaml"
    gold.write_text("samples:\n  - id: a\n    expected_output: {x: 0x2}\n", encoding="utf-8")
    run = _jsonl(tmp_path / "run.jsonl", [{"query_id": "a", "retrieved": ["x"]}])
    assert main(["evaluate", "--gold", str(gold), "--run", str(run)]) == 2
    assert (f"{gold}:3: field 'samples[0].expected_output.x' must be written in decimal digits; got 0x2, "
            "which YAML reads as 2") in capsys.readouterr().err
    gold.write_text("samples:\n  - id: a\n    expected_output: [{id: x, grade: 2}]\n    metadata: {k: 10}\n",
                    encoding="utf-8")
    outputs = tmp_path / "outputs.yaml"
    outputs.write_text("a:\n  retrieved:\n    - {id: x, score: 1_0.5}\n", encoding="utf-8")
    assert main(["evaluate", "--gold", str(gold), "--run", str(outputs)]) == 2
    assert (f"{outputs}:3: field 'a.retrieved[0].score' must be written in decimal digits; got 1_0.5, "
            "which YAML reads as 10.5") in capsys.readouterr().err
    # decimal numbers, and a run's own fields, read as YAML values
    outputs.write_text("a:\n  retrieved:\n    - {id: x, score: 10.5, rank: 1}\n  latency_ms: {retrieve: 12}\n",
                       encoding="utf-8")
    out = tmp_path / "out"
    assert main(["evaluate", "--gold", str(gold), "--run", str(outputs), "-m", "hit@1", "--resamples", "0",
                 "-o", str(out)]) == 0
    assert _rows(out)["a"]["latency_ms.retrieve"] == "12.0"


# -- the ship criteria -----------------------------------------------------------------------------------
def test_ship_criteria_names_are_text_and_counts_decimal(tmp_path, capsys):
    from rankgate.gating.config import load_config

    gold = _jsonl(tmp_path / "gold.jsonl", [{"query_id": "0012", "relevant": ["0x1F"], "0012": "yes"},
                                            {"query_id": "b", "relevant": ["x"], "0012": "no"}])
    run = _jsonl(tmp_path / "run.jsonl", [{"query_id": "0012", "retrieved": ["0x1F"]},
                                          {"query_id": "b", "retrieved": ["x"]}])
    config = tmp_path / "ship-criteria.yaml"
    config.write_text("gates:\n  - name: 0012\n    metric: hit@1\n    threshold: 0.5\n    segments: [0012]\n"
                      "    owner: 0x1F\n    label: 12:30\n    severity: error\n"
                      "latency:\n  - stage: 1_0\n    median_ms: 60\n    segments: on\n"
                      "evaluate: {k: 10, doc_sep: 0}\n", encoding="utf-8")
    cfg = load_config(str(config))
    (g,) = cfg.gates
    assert (g.name, g.segments, g.owner, g.label, g.threshold) == ("0012", ("0012",), "0x1F", "12:30", 0.5)
    assert (cfg.latency[0].stage, cfg.latency[0].segments) == ("1_0", ("on",))
    assert cfg.evaluate == {"k": 10, "doc_sep": "0"}
    config.write_text("gates:\n  - {metric: hit@1, threshold: 0.5, segments: [0012]}\n", encoding="utf-8")
    assert main(["gate", "--config", str(config), "--gold", str(gold), "--candidate", str(run)]) == 0
    assert "0 of 3" in capsys.readouterr().out  # all queries, and both values of the field 0012
    for line, text, field in ((4, "evaluate:\n  k: 010\n", "evaluate.k"),
                              (3, "defaults: {resamples: 2_000}\n", "defaults.resamples"),
                              (3, "max_stale_labels: 0x10\n", "max_stale_labels")):
        config.write_text("gates:\n  - {metric: hit@1, threshold: 0.5}\n" + text, encoding="utf-8")
        assert main(["gate", "--config", str(config), "--gold", str(gold), "--candidate", str(run)]) == 2
        err = capsys.readouterr().err
        assert f"{config}:{line}: field '{field}' must be written in decimal digits; got " in err, err
    # a threshold stays a number, in decimal digits: YAML 1.1 reads 0:0.5 (base 60) as 0.5
    config.write_text("gates:\n  - {metric: hit@1, threshold: 0:0.5}\n", encoding="utf-8")
    assert main(["gate", "--config", str(config), "--gold", str(gold), "--candidate", str(run)]) == 2
    assert "field 'gates[0].threshold' must be written in decimal digits; got 0:0.5, which YAML reads as 0.5" in \
        capsys.readouterr().err


# -- the trace monitors and the field map ------------------------------------------------------------
def test_monitor_names_are_text_and_counts_decimal(tmp_path):
    from rankgate.errors import ConfigError
    from rankgate.traces.monitors import parse_monitors

    m = parse_monitors("monitors:\n  - {signal: error_rate_per_1k, max: 20, name: 0012, owner: yes}\n")
    assert (m.monitors[0].name, m.monitors[0].owner, m.monitors[0].max) == ("0012", "yes", 20.0)
    with pytest.raises(ConfigError, match=r"<monitors>:2: field 'monitors\[0\].min_n' must be written in decimal "
                                          r"digits; got 010, which YAML reads as 8"):
        parse_monitors("monitors:\n  - {signal: error_rate_per_1k, max: 20, min_n: 010}\n")


def _langfuse(tmp_path: Path, name: str, value: str) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = tmp_path / "export"
    (root / "observations_v2").mkdir(parents=True)
    (root / "scores").mkdir()
    obs = {"id": "obs1", "trace_id": "t1", "type": "RETRIEVER", "name": "vector-search", "parent_observation_id": None,
           "start_time": "2026-05-29 13:46:19.963000", "end_time": "2026-05-29 13:46:20.011000",
           "input": "{\"query\":\"refund window?\"}", "output": "{\"documents\":[{\"id\":\"kb/policy\",\"score\":0.8}]}",
           "level": "DEFAULT", "session_id": "s-1"}
    (root / "observations_v2" / "a.jsonl").write_text(json.dumps(obs) + "\n", encoding="utf-8")
    pq.write_table(pa.Table.from_pylist([{"id": "s1", "trace_id": "t1", "observation_id": None, "name": name,
                                          "value": None, "string_value": value, "data_type": "CATEGORICAL",
                                          "comment": None}]), root / "scores" / "b.parquet")
    return root


def test_field_map_names_and_labels_are_text(tmp_path, capsys):
    export = _langfuse(tmp_path, "0012", "off")
    fm = tmp_path / "map.yaml"
    fm.write_text("feedback_names: [0012, yes]\nnegative_labels: [no, off]\nnegative_below: 0.5\n", encoding="utf-8")
    out = tmp_path / "out"
    assert main(["traces", "analyze", "--traces", str(export), "--field-map", str(fm), "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["retrieval"]["negative_feedback_rate"] == {"value": 1.0, "n": 1, "k": 1}
    capsys.readouterr()
    fm.write_text("feedback_names: [0012]\nnegative_below: 0x1\n", encoding="utf-8")
    assert main(["traces", "analyze", "--traces", str(export), "--field-map", str(fm), "--out", str(tmp_path / "o2")]) == 2
    assert (f"{fm}:2: field 'negative_below' must be written in decimal digits; got 0x1, which YAML reads as 1"
            in capsys.readouterr().err)
