"""docs/gating.md and action.yml: the examples users copy must be valid and say what the code does."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from rankgate.errors import ConfigError
from rankgate.gates import parse_config
from rankgate.report.comment import MARKER

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "gating.md"


def blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.DOTALL)


def test_the_example_config_is_valid():
    (example,) = [b for b in blocks("yaml") if b.startswith("# ship-criteria.yaml")]
    config = parse_config(example, path="ship-criteria.yaml")
    assert [g.name for g in config.gates] == ["retrieval_recall_at_5", "no_retired_docs"]
    assert config.gates[1].max == 0.0


def test_the_example_workflows_parse_and_upsert_by_the_marker():
    workflows = [yaml.safe_load(b) for b in blocks("yaml") if b.startswith("# .github/workflows/")]
    assert [w["name"] for w in workflows] == ["rankgate baseline", "rankgate gate"]
    gate_steps = workflows[1]["jobs"]["gate"]["steps"]
    script = next(s for s in gate_steps if s.get("uses", "").startswith("actions/github-script"))["with"]["script"]
    assert f"const marker = '{MARKER}';" in script
    assert "rankgate-baseline.yml" in next(s["run"] for s in gate_steps if s.get("name", "").startswith("Fetch"))


def test_the_composite_action_parses_and_uses_the_same_marker():
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    assert action["runs"]["using"] == "composite"
    assert set(action["inputs"]) >= {"config", "gold", "candidate", "baseline"}
    scripts = [s["with"]["script"] for s in action["runs"]["steps"] if "github-script" in s.get("uses", "")]
    assert len(scripts) == 1 and f"const marker = '{MARKER}';" in scripts[0]


CASES = {
    "gates[0].treshold": "gates:\n  - name: r\n    metric: recall@5\n    treshold: 0.85\n",
    "gates[0].severity": "gates:\n  - name: r\n    metric: recall@5\n    threshold: 0.85\n    on: mean\n    severity: fatal\n",
    "gates[0].metric": "gates:\n  - name: r\n    metric: recal@5\n    threshold: 0.8\n",
    "gates[1].threshold": "gates:\n  - metric: recall@5\n    threshold: 0.8\n  - metric: forbidden@5\n    threshold: 0\n",
}


@pytest.mark.parametrize("key", sorted(CASES))
def test_the_error_messages_shown_in_the_docs_are_the_real_ones(key):
    (text,) = [b for b in blocks("text") if "treshold" in b]
    shown = next(line for line in text.splitlines() if f"'{key}'" in line)
    with pytest.raises(ConfigError) as err:
        parse_config(CASES[key], path="ship-criteria.yaml")
    assert str(err.value) == shown
