"""docs/gating.md and action.yml: the examples users copy must be valid and say what the code does."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from rankgate.errors import ConfigError
from rankgate.gating.decide import parse_config

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "gating.md"


def blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.DOTALL)


def test_the_example_config_is_valid():
    (example,) = [b for b in blocks("yaml") if b.startswith("# ship-criteria.yaml")]
    config = parse_config(example, path="ship-criteria.yaml")
    assert [g.name for g in config.gates] == ["retrieval_recall_at_5", "no_retired_docs"]
    assert config.gates[1].max == 0.0


def test_the_example_workflows_use_the_action_pinned_by_its_ref():
    workflows = [yaml.safe_load(b) for b in blocks("yaml") if b.startswith("# .github/workflows/")]
    assert [w["name"] for w in workflows] == ["rankgate baseline", "rankgate gate"]
    for w in workflows:
        (job,) = w["jobs"].values()
        gate_steps = [s for s in job["steps"] if s.get("uses", "").endswith("/rankgate@<ref>")]
        assert len(gate_steps) == 1 and gate_steps[0]["uses"] == "<owner>/rankgate@<ref>"
    baseline_step = next(s for s in workflows[0]["jobs"]["baseline"]["steps"] if "rankgate@" in s.get("uses", ""))
    assert baseline_step["with"]["fail-on-gate"] == "false" and baseline_step["with"]["outcome"] == "baseline-summary.json"
    gate_steps = workflows[1]["jobs"]["gate"]["steps"]
    assert "rankgate-baseline.yml" in next(s["run"] for s in gate_steps if s.get("name", "").startswith("Fetch"))
    assert next(s for s in gate_steps if "rankgate@" in s.get("uses", ""))["with"]["baseline"] == "baseline/baseline-summary.json"


def test_no_doc_installs_rankgate_from_a_package_index():
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = doc.read_text(encoding="utf-8")
        assert not re.search(r"pip install (-U |--upgrade )?rankgate\b(?! @)", text), f"{doc.name} installs an unpublished package"
    assert "uses: ./third_party/rankgate" in DOC.read_text(encoding="utf-8")  # the vendored variant


def test_the_composite_action_installs_its_own_checkout_and_posts_from_python():
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    assert action["runs"]["using"] == "composite"
    assert set(action["inputs"]) >= {"config", "gold", "candidate", "baseline", "fail-on-gate", "post-comment"}
    steps = action["runs"]["steps"]
    install = next(s for s in steps if s.get("name") == "Install rankgate")
    assert install["env"]["ACTION_PATH"] == "${{ github.action_path }}" and '"${INSTALL:-$ACTION_PATH}"' in install["run"]
    gate_step = next(s for s in steps if s.get("id") == "gate")
    assert "--post-comment" in gate_step["run"] and gate_step["env"]["GITHUB_TOKEN"] == "${{ inputs.github-token }}"
    assert not any("github-script" in s.get("uses", "") for s in steps)  # the upsert is rankgate's own, tested


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
