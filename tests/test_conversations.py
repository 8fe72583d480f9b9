"""Conversations as the unit of analysis: the fields, the cluster bootstrap, its outputs.

The hand-computed cases: two conversations A = (1, 1) and B = (0) give cluster-bootstrap means ΣS/ΣN of
exactly 1 (AA, a quarter of resamples), 0 (BB, a quarter) and 2/3 (AB or BA, half); the sign-flip test of
changes (+1, +1 | +1) flips two conversation sums (+2, +1), of which two of four flips reach |3|.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from rankgate.cli.main import main
from rankgate.errors import InputError
from rankgate.io.load import load_gold, load_run
from rankgate.stats.bootstrap import (bootstrap_ci, grouped_bootstrap_cis, grouped_cluster_cis, metric_cis,
                                      paired_bootstrap_ci, randomization_test)
from rankgate.stats.clusters import effective_n


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


# -- the statistics, by hand ----------------------------------------------------------------------------

def test_the_cluster_bootstrap_draws_whole_conversations():
    values, conv = [1.0, 1.0, 0.0], ["A", "A", "B"]
    # quantiles 0.3 and 0.7 both fall in the half of resamples whose mean is 2/3 (AB, BA)
    assert bootstrap_ci(values, rng=0, clusters=conv, confidence=0.4) == (2 / 3, 2 / 3)
    # 0.2 and 0.8 fall in the quarters of AA (1) and BB (0)
    assert bootstrap_ci(values, rng=0, clusters=conv, confidence=0.6) == (0.0, 1.0)
    # one conversation says nothing about spread
    assert all(math.isnan(x) for x in bootstrap_ci([1.0, 0.0, 1.0], rng=0, clusters=[7, 7, 7]))


def test_the_paired_test_flips_each_conversations_summed_change():
    base, cand = [0.0, 0.0, 0.0], [1.0, 1.0, 1.0]
    clustered = randomization_test(base, cand, rng=0, resamples=20000, clusters=["A", "A", "B"])
    naive = randomization_test(base, cand, rng=0, resamples=20000)
    assert abs(clustered - 0.5) < 0.02  # 2 of the 4 flips of (+2, +1) reach |3|
    assert abs(naive - 0.25) < 0.02  # 2 of the 8 flips of (+1, +1, +1)


def test_one_turn_per_conversation_gives_the_query_bootstrap_bit_for_bit():
    x = np.random.default_rng(3).random(41)
    x[::5] = np.nan
    for n in (3, 5, 41):
        got, want = bootstrap_ci(x[:n], rng=9, clusters=np.arange(n)), bootstrap_ci(x[:n], rng=9)
        assert np.array(got).tobytes() == np.array(want).tobytes() and not math.isnan(got[0])
    ok = x[~np.isnan(x)]
    offsets = [0, 3, 10, ok.size]
    got = grouped_cluster_cis(ok, offsets, np.arange(ok.size), seed=4)
    want = grouped_bootstrap_cis(ok, offsets, seed=4)
    assert got[0].tobytes() == want[0].tobytes() and got[1].tobytes() == want[1].tobytes()


def test_a_group_alone_and_among_others_gets_the_same_interval():
    rng = np.random.default_rng(5)
    x, conv = rng.random(30), rng.integers(0, 9, 30)
    low, high = grouped_cluster_cis(x, [0, 12, 30], conv, seed=2)
    assert (low[1], high[1]) == bootstrap_ci(x[12:], rng=2, clusters=conv[12:])
    pb = paired_bootstrap_ci(np.zeros(30), x, rng=2, clusters=conv)
    assert pb == bootstrap_ci(x, rng=2, clusters=conv)


def test_effective_n_by_hand():
    assert effective_n([1, 1, 0, 0], [0, 0, 1, 1]) == pytest.approx(2.0)  # two alike pairs: two units
    assert effective_n([1, 0, 1, 0.5], [0, 1, 2, 3]) == pytest.approx(4.0)  # one turn each: n
    # A = (1, 0), B = (1, 0): turns within a conversation differ, conversations alike: n/var_cluster → n
    assert effective_n([1, 0, 1, 0], [0, 0, 1, 1]) == 4.0
    assert math.isnan(effective_n([1, 0], [0, 0]))


# -- the gold set's and the run's fields -----------------------------------------------------------------

GOLD = [
    {"query_id": "a1", "relevant": ["d1"], "conversation_id": "A", "turn": 1},
    {"query_id": "a2", "relevant": ["d2"], "conversation_id": "A", "turn": 2, "depends_on_turns": [1]},
    {"query_id": "a3", "relevant": ["d3"], "conversation_id": "A", "turn": 3, "depends_on_turns": [2, 1]},
    {"query_id": "b1", "relevant": ["d1"], "conversation_id": "B", "turn": 1},
    {"query_id": "b2", "relevant": ["d2"], "conversation_id": "B", "turn": 2},
    {"query_id": "c1", "relevant": ["d3"], "conversation_id": 7, "turn": 1},
    {"query_id": "s1", "relevant": ["d1"]},
]
RUN = [
    {"query_id": "a1", "topk": ["d1"]}, {"query_id": "a2", "topk": ["d2"]}, {"query_id": "a3", "topk": ["d3"]},
    {"query_id": "b1", "topk": ["x"]}, {"query_id": "b2", "topk": ["x"]}, {"query_id": "c1", "topk": ["d3"]},
    {"query_id": "s1", "topk": ["x", "d1"]},
]


def test_gold_fields_are_read_and_kept(tmp_path):
    gold = load_gold(_jsonl(tmp_path / "g.jsonl", GOLD))
    assert gold.fields["conversation_id"] == ["A", "A", "A", "B", "B", "7", None]
    assert gold.fields["turn"] == [1, 2, 3, 1, 2, 1, None]
    assert gold.fields["depends_on_turns"] == [None, [1], [1, 2], None, None, None, None]


@pytest.mark.parametrize("change, field, words", [
    ({"turn": 0}, "turn", "positive integer"),
    ({"turn": "2"}, "turn", "positive integer"),
    ({"turn": True}, "turn", "positive integer"),
    ({"conversation_id": ""}, "conversation_id", "non-empty string"),
    ({"conversation_id": ["A"]}, "conversation_id", "non-empty string"),
    ({"depends_on_turns": [2]}, "depends_on_turns", "earlier turns"),
    ({"depends_on_turns": 1}, "depends_on_turns", "list of earlier turn numbers"),
    ({"turn": 1}, "turn", "repeats it"),  # b2 becomes a second turn 1 of conversation B
])
def test_bad_conversation_fields_name_file_line_and_field(tmp_path, change, field, words):
    rows = [dict(r) for r in GOLD]
    rows[4].update(change)
    with pytest.raises(InputError) as err:
        load_gold(_jsonl(tmp_path / "g.jsonl", rows))
    assert err.value.field == field and err.value.line == 5 and words in str(err.value)
    assert "g.jsonl:5" in str(err.value)


def test_a_table_gold_set_with_repeated_turns_names_both_queries(tmp_path):
    rows = [{"query_id": r["query_id"], "chunk_id": r["relevant"][0], "grade": 1,
             "conversation_id": str(r.get("conversation_id", "")) or None, "turn": r.get("turn")} for r in GOLD]
    rows[4]["turn"] = 1
    with pytest.raises(InputError, match="'b1' does; query 'b2' repeats it"):
        load_gold(rows)


def test_run_records_carry_conversations_checked_as_the_gold_sets(tmp_path):
    rows = [dict(r, conversation_id="X", turn=i + 1) for i, r in enumerate(RUN)]
    run = load_run(_jsonl(tmp_path / "r.jsonl", rows))
    assert run.fields["conversation_id"] == ["X"] * 7 and run.fields["turn"] == list(range(1, 8))
    rows[2]["turn"] = -1
    with pytest.raises(InputError) as err:
        load_run(_jsonl(tmp_path / "r.jsonl", rows))
    assert err.value.line == 3 and err.value.field == "turn"


# -- what the commands show ----------------------------------------------------------------------------

def _evaluate(gold, run):
    from rankgate import evaluate

    return evaluate(gold, run, metrics=["hit@1", "recall@5"])


def test_results_resample_conversations_and_split_follow_ups(tmp_path):
    from rankgate.stats.segments import segment_summary

    result = _evaluate(_jsonl(tmp_path / "g.jsonl", GOLD), _jsonl(tmp_path / "r.jsonl", RUN))
    assert result.fields["turn"] == ("first", "follow_up", "follow_up", "first", "follow_up", "first", None)
    cis = metric_cis(result, seed=0, resamples=500)
    codes = [0, 0, 0, 1, 1, 2, 3]  # A, B, 7, and s1 on its own
    assert cis["hit@1"] == bootstrap_ci(result["hit@1"], rng=0, resamples=500, clusters=codes)
    assert cis["hit@1"] != metric_cis(result, seed=0, resamples=500, clusters=False)["hit@1"]
    seg = segment_summary(result, "turn", seed=0, resamples=500)
    row = seg.row("turn", "follow_up", "hit@1")
    assert (row.n, row.mean) == (3, 2 / 3)
    # the follow-ups' conversations are A (1, 1) and B (0): the hand-computed case above
    assert (row.ci_low, row.ci_high) == bootstrap_ci([1.0, 1.0, 0.0], rng=0, resamples=500, clusters=[0, 0, 1])


def test_a_run_gives_conversations_when_the_gold_set_has_none(tmp_path):
    gold = [{k: v for k, v in r.items() if k not in ("conversation_id", "turn", "depends_on_turns")} for r in GOLD]
    run = [dict(r, conversation_id=g.get("conversation_id"), turn=g.get("turn")) for r, g in zip(RUN, GOLD)]
    result = _evaluate(_jsonl(tmp_path / "g.jsonl", gold), _jsonl(tmp_path / "r.jsonl", run))
    assert result.fields["conversation_id"] == ("A", "A", "A", "B", "B", "7", None)
    assert result.fields["turn"][:3] == ("first", "follow_up", "follow_up")


def test_evaluate_says_what_it_resampled(tmp_path, capsys):
    gold, run, out = _jsonl(tmp_path / "g.jsonl", GOLD), _jsonl(tmp_path / "r.jsonl", RUN), tmp_path / "out"
    assert main(["evaluate", "--gold", gold, "--run", run, "-m", "hit@1", "--by", "turn", "--resamples", "300",
                 "--out", str(out)]) == 0
    shown = capsys.readouterr().out
    assert "intervals resample 4 conversations (7 turns)" in shown
    assert "follow_up" in shown and "first" in shown
    summary = json.loads((out / "summary.json").read_text())
    res = summary["statistics"]["resampling"]
    assert (res["unit"], res["conversations"], res["turns"], res["follow_ups"], res["depend_on_earlier_turns"]) == \
        ("conversation", 4, 7, 3, 2)
    assert set(res["effective_n"]) == {"hit@1"}
    assert set(summary["segments"]["turn"]) == {"first", "follow_up", "(none)"}


def test_without_conversations_nothing_changes(tmp_path, capsys):
    gold = [{k: v for k, v in r.items() if k not in ("conversation_id", "turn", "depends_on_turns")} for r in GOLD]
    out = tmp_path / "out"
    assert main(["evaluate", "--gold", _jsonl(tmp_path / "g.jsonl", gold), "--run", _jsonl(tmp_path / "r.jsonl", RUN),
                 "-m", "hit@1", "--out", str(out)]) == 0
    assert "intervals resample" not in capsys.readouterr().out
    assert "resampling" not in json.loads((out / "summary.json").read_text())["statistics"]


def test_compare_resamples_conversations_in_pairs(tmp_path, capsys):
    gold = _jsonl(tmp_path / "g.jsonl", GOLD)
    base = _jsonl(tmp_path / "b.jsonl", RUN)
    better = [dict(r, topk=[r["topk"][-1]] if r["query_id"] != "b1" else ["d1"]) for r in RUN]
    cand = _jsonl(tmp_path / "c.jsonl", better)
    assert main(["compare", "--gold", gold, base, cand, "-m", "hit@1", "--json"]) in (0, 1)
    data = json.loads(capsys.readouterr().out)
    st = data["statistics"]
    assert st["resampling"]["conversations"] == 4 and "conversation" in st["interval"]
    row = next(r for r in data["rows"] if r["field"] is None)
    # changes: b1 +1, s1 +1 (the others unchanged): conversation sums B = +1, s1 = +1 and two zeros
    assert row["delta"] == pytest.approx(2 / 7)


# -- the simulation: correlated turns ------------------------------------------------------------------

@pytest.mark.slow
def test_the_cluster_bootstrap_covers_at_nominal_level_where_the_per_turn_one_does_not():
    """2,000 simulated gold sets of 150 conversations of 2–5 turns each, every turn's value its conversation's
    level plus its own noise (intra-conversation correlation 0.5), true mean 0. Resampling turns as if they
    were independent understates the spread (about 80% of its 95% intervals hold the true mean); resampling
    conversations holds it in 95% ± 2 points."""
    rng = np.random.default_rng(20261202)
    sims, conversations = 2000, 150
    naive = clustered = 0
    for s in range(sims):
        turns = rng.integers(2, 6, conversations)
        conv = np.repeat(np.arange(conversations), turns)
        values = rng.normal(size=conversations)[conv] + rng.normal(size=conv.size)
        lo, hi = bootstrap_ci(values, rng=s, resamples=1000)
        naive += lo <= 0.0 <= hi
        lo, hi = bootstrap_ci(values, rng=s, resamples=1000, clusters=conv)
        clustered += lo <= 0.0 <= hi
    assert naive / sims < 0.88
    assert abs(clustered / sims - 0.95) <= 0.02, clustered / sims


def test_the_report_shows_follow_ups_apart(tmp_path):
    gold, run, out = _jsonl(tmp_path / "g.jsonl", GOLD), _jsonl(tmp_path / "r.jsonl", RUN), tmp_path / "r.html"
    assert main(["report", "--gold", gold, "--run", run, "-m", "hit@1", "--resamples", "200", "-o", str(out)]) == 0
    page = out.read_text(encoding="utf-8")
    section = page[page.index('id="follow-ups"'):]
    section = section[:section.index("</section>")]
    # hit@1: first turns a1, b1, c1 = (1, 0, 1); follow-ups a2, a3, b2 = (1, 1, 0)
    assert "<td>hit@1</td><td>66.7%</td>" in section and section.count("66.7%") >= 2
    assert "intervals resample 4 conversations (7 turns)" in section
    assert "2 follow-ups name earlier turns" in section
    assert "intervals resample 4 conversations (7 turns)" in page[page.index('id="method"'):]


def test_the_gate_resamples_conversations_and_gates_follow_ups(tmp_path):
    gold, run = _jsonl(tmp_path / "g.jsonl", GOLD), _jsonl(tmp_path / "r.jsonl", RUN)
    config = tmp_path / "ship.yaml"
    config.write_text("gates:\n  - name: hit\n    metric: hit@1\n    threshold: 0.5\n    segments: [turn]\n"
                      "defaults: {seed: 0, resamples: 200, confidence: 0.95}\n", encoding="utf-8")
    comment, outcome = tmp_path / "c.md", tmp_path / "o.json"
    code = main(["gate", "--config", str(config), "--gold", gold, "--candidate", run, "--comment", str(comment),
                 "--json-out", str(outcome)])
    assert code in (0, 1)
    data = json.loads(outcome.read_text())
    res = data["statistics"]["resampling"]
    assert (res["conversations"], res["turns"]) == (4, 7)
    assert "intervals resample 4 conversations (7 turns)" in comment.read_text(encoding="utf-8")
    assert set(data["segments"]["turn"]) >= {"first", "follow_up"}
