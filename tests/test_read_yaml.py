"""One YAML reader (configfile.read_yaml) and one abstention-file reader for every command."""

from __future__ import annotations

import pytest

from rankgate._util.configfile import MAX_BYTES, read_yaml
from rankgate.errors import ConfigError
from rankgate.traces.abstention import read_abstention, read_threshold


def test_bad_yaml_names_the_file_and_line(tmp_path) -> None:
    p = tmp_path / "x.yaml"
    p.write_text("a: 1\nb: [1,\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"x\.yaml:3: is not valid YAML: expected the node content"):
        read_yaml(str(p), "test")


def test_a_byte_that_is_not_utf8_names_its_line(tmp_path) -> None:
    p = tmp_path / "x.yaml"
    p.write_bytes(b"a: 1\nb: \xff\n")
    with pytest.raises(ConfigError, match=r"x\.yaml:2: is not UTF-8 text"):
        read_yaml(str(p), "test")


def test_empty_missing_and_huge_files(tmp_path) -> None:
    p = tmp_path / "x.yaml"
    p.write_text("", encoding="utf-8")
    assert read_yaml(str(p), "field map") is None
    with pytest.raises(ConfigError, match=r"does not exist \(check the abstention path\)"):
        read_yaml(str(tmp_path / "none.yaml"), "abstention")
    p.write_text("a: " + "x" * MAX_BYTES + "\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"KiB a config file may be \(is this the right field map file\?\)"):
        read_yaml(str(p), "field map")


def test_a_bom_and_crlf_are_read(tmp_path) -> None:
    p = tmp_path / "x.yaml"
    p.write_bytes(b"\xef\xbb\xbfa: 1\r\nb: [x, y]\r\n")
    assert read_yaml(str(p), "test") == {"a": 1, "b": ["x", "y"]}


@pytest.mark.parametrize("text, needs_curve, message", [
    ("threshold: 0.3\n", False, "has no 'abstention' mapping (write it with rankgate calibrate-abstention)"),
    ("abstention: {threshold: 0.3}\ncurve: 5\n", True, "field 'curve' must be a list of steps with a numeric coverage"),
    ("abstention: {threshold: 0.3, n: 10}\n", True, "field 'abstention.target_precision' must be a number; got None"),
])
def test_the_abstention_reader(tmp_path, text, needs_curve, message) -> None:
    p = tmp_path / "a.yaml"
    p.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        read_abstention(str(p), curve=needs_curve)
    assert str(info.value) == f"{p}: {message}"


@pytest.mark.parametrize("value, message", [
    ("null", "must be a number; got None (write it with rankgate calibrate-abstention (a null threshold means none was found))"),
    (".inf", "must be a finite number; got inf (write it with rankgate calibrate-abstention, or pass --abstention-threshold)"),
])
def test_the_threshold_is_a_finite_number(tmp_path, value, message) -> None:
    p = tmp_path / "a.yaml"
    p.write_text(f"abstention: {{threshold: {value}}}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        read_threshold(str(p))
    assert str(info.value) == f"{p}: field 'abstention.threshold' {message}"
    p.write_text("abstention: {threshold: 0.25}\n", encoding="utf-8")
    assert read_threshold(str(p)) == 0.25


def test_report_and_traces_sample_refuse_a_bad_file_with_the_same_line(tmp_path, capsys) -> None:
    from rankgate.cli.main import main

    bad = tmp_path / "a.yaml"
    bad.write_text("abstention: [1,\n", encoding="utf-8")
    gold = tmp_path / "gold.jsonl"
    gold.write_text('{"query_id": "q1", "relevant_chunks": ["a"]}\n', encoding="utf-8")
    capsys.readouterr()
    assert main(["report", "--gold", str(gold), "--run", str(gold), "--abstention", str(bad),
                 "-o", str(tmp_path / "r.html")]) == 2
    report = capsys.readouterr().err.split(": error: ", 1)[1]
    assert main(["traces", "sample", "--traces", str(gold), "--abstention", str(bad), "-o", str(tmp_path / "c.jsonl")]) == 2
    sample = capsys.readouterr().err.split(": error: ", 1)[1]
    assert report == sample and f"{bad}:2: is not valid YAML" in report
    assert not (tmp_path / "r.html").exists() and not (tmp_path / "c.jsonl").exists()
