"""``rankgate validity``: the statistics on hand-computed cases and on simulated data whose true link is known
(strong, none, reversed), the join, the command line, bad inputs, and the ``validity`` monitor of ``traces check``.

The full simulation (200 seeds per link at three sizes) is in the slow tier; the default tier runs 100 seeds per
link at one size (a fraction of a second: the statistics alone, no files).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from rankgate.cli.main import main
from rankgate.stats.risk import clustered_auc, clustered_rate, risk_contrast
from rankgate.stats.verdict import verdict
from rankgate.traces.validity import query_text_key, words

from .validity_sim import Sim, draw, write_inputs


# -- hand-computed cases ----------------------------------------------------------------------------------
def test_risk_difference_ratio_and_auc_by_hand() -> None:
    # failing queries: 5/10 and 3/10 bad; passing: 1/10 and 1/10 (the worked example of rankgate.stats.risk)
    c = risk_contrast([5, 3], [10, 10], [1, 1], [10, 10], x1=[0.0, 0.0], x0=[1.0, 1.0])
    assert (c.fail_rate, c.pass_rate) == (0.4, 0.1)
    assert c.rd == pytest.approx(0.3)
    # V1 = 2 * ((5 - 4)^2 + (3 - 4)^2) / 20^2 = 0.01, V0 = 0: SE 0.1, 95% interval 0.3 -+ 0.196
    assert c.rd_low == pytest.approx(0.3 - 0.1959964, abs=1e-6)
    assert c.rd_high == pytest.approx(0.3 + 0.1959964, abs=1e-6)
    assert c.rr == pytest.approx(4.0)
    # SE(log RR) = sqrt(0.01 / 0.16) = 0.25
    assert c.rr_low == pytest.approx(4 * math.exp(-1.959964 * 0.25), rel=1e-6)
    # AUC: each bad request of a failing query (8) sits below the 18 good passing ones and ties the 12 good
    # failing ones: (18 + 6) / 30 = 0.8; each bad passing one (2): (0 + 9) / 30 = 0.3; (8*0.8 + 2*0.3) / 10 = 0.7
    assert c.auc == pytest.approx(0.7)


def test_auc_without_clusters_is_the_mann_whitney_share() -> None:
    x = np.array([0.1, 0.5, 0.5, 0.9, 0.3])
    bad = np.array([1, 0, 1, 0, 1])
    auc, low, high = clustered_auc(x, bad, np.ones(5, dtype=int))
    # good values 0.5, 0.9 against bad 0.1, 0.5, 0.3: (1 + 0.5 + 1) + (1 + 1 + 1) = 5.5 of 6 pairs
    assert auc == pytest.approx(5.5 / 6)
    assert 0 <= low < auc < high <= 1


def test_one_request_per_query_gives_the_binomial_variance_with_the_small_sample_factor() -> None:
    k = np.array([1, 0, 0, 1, 0, 0, 0, 1])
    r, v = clustered_rate(k, np.ones(8, dtype=int))
    assert r == 3 / 8
    assert v == pytest.approx(r * (1 - r) / 7)  # m/(m-1) * sum((k - r)^2) / m^2 = r(1-r)/(m-1)


def test_no_request_and_a_single_query_are_said_not_guessed() -> None:
    assert all(math.isnan(x) for x in clustered_rate(np.array([], int), np.array([], int)))
    c = risk_contrast([2], [5], [1, 0], [5, 5])
    assert math.isnan(c.rd_low) and c.power == 0.0 and math.isinf(c.detectable)


# -- simulations where the true link is known ---------------------------------------------------------------
def _contrast(sim: Sim):
    d = draw(sim)
    f, p = d["fail"], ~d["fail"]
    return risk_contrast(d["k"][f], d["n"][f], d["k"][p], d["n"][p], x1=np.zeros(f.sum()), x0=np.ones(p.sum()))


def _coverage(link: str, seeds: range, queries: int = 300) -> tuple[float, list[str]]:
    covered, kinds = 0, []
    for seed in seeds:
        sim = Sim(queries=queries, link=link, seed=seed)
        c = _contrast(sim)
        covered += c.rd_low <= sim.truth <= c.rd_high
        word = verdict(c.rd, c.rd_low, c.rd_high, c.p_value, c.p_value, 1, confidence=0.95, n=c.queries)
        kinds.append(words("hit@5", "negative_feedback", c, word)[0])
    return covered / len(seeds), kinds


@pytest.mark.parametrize("link", ["strong", "none", "reversed"])
def test_the_interval_recovers_the_true_link(link: str) -> None:
    share, kinds = _coverage(link, range(100))
    assert share >= 0.9
    expected = {"strong": "link", "reversed": "reversed", "none": "none"}[link]
    assert kinds.count(expected) >= 85, kinds


@pytest.mark.slow
@pytest.mark.parametrize("link", ["strong", "none", "reversed"])
@pytest.mark.parametrize("queries,requests", [(300, 6.0), (1000, 3.0), (150, 20.0)])
def test_the_interval_recovers_the_true_link_in_200_seeds(link: str, queries: int, requests: float) -> None:
    covered = 0
    for seed in range(200):
        sim = Sim(queries=queries, link=link, seed=1000 + seed, mean_requests=requests)
        c = _contrast(sim)
        covered += c.rd_low <= sim.truth <= c.rd_high
    assert covered / 200 >= 0.9


@pytest.mark.parametrize("link", ["strong", "none"])
def test_too_few_queries_cannot_be_told(link: str) -> None:
    for seed in range(10):
        sim = Sim(queries=12, link=link, seed=seed, mean_requests=3.0)
        c = _contrast(sim)
        word = verdict(c.rd, c.rd_low, c.rd_high, c.p_value, c.p_value, 1, n=c.queries)
        kind, sentence = words("recall@5", "negative_feedback", c, word)
        assert kind == "cannot be told", sentence
        assert sentence.startswith("at 12 matched queries this cannot be told")


def test_no_link_at_a_small_size_is_cannot_be_told_not_no_link() -> None:
    c = _contrast(Sim(queries=40, link="none", seed=3))
    assert c.power < 0.8
    word = verdict(c.rd, c.rd_low, c.rd_high, c.p_value, c.p_value, 1, n=c.queries)
    assert words("recall@5", "negative_feedback", c, word)[0] == "cannot be told"


def test_the_link_sentence_says_how_many_times_as_often() -> None:
    c = risk_contrast([5, 3] * 5, [10, 10] * 5, [1, 1] * 5, [10, 10] * 5)
    kind, sentence = words("recall@5", "negative_feedback", c, "better")
    assert kind == "link"
    assert sentence.startswith("queries that miss recall@5 offline get negative feedback 4× as often online (CI ")


# -- the join key ------------------------------------------------------------------------------------------
def test_the_text_key_ignores_case_spaces_and_trailing_punctuation() -> None:
    assert query_text_key("Refund  window?") == query_text_key("refund window") == query_text_key(" REFUND window !")
    assert query_text_key("refund window") != query_text_key("refund windows")
    assert query_text_key(None) is None and query_text_key(" ?! ") is None
    assert query_text_key("x").startswith("t:")


# -- the command line ----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def strong(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return write_inputs(tmp_path_factory.mktemp("strong"), Sim(queries=300, link="strong", seed=1))


def _args(files: dict[str, Path], out: Path, *more: str) -> list[str]:
    return ["validity", "--gold", str(files["gold"]), "--run", str(files["run"]), "--traces", str(files["traces"]),
            "--out", str(out), *more]


def test_cli_writes_the_three_files_and_says_the_verdict(strong, tmp_path, capsys) -> None:
    assert main(_args(strong, tmp_path / "out", "--by", "half")) == 0
    text = capsys.readouterr().out
    assert "300 of 300 gold queries matched" in text
    assert "queries that miss hit@5 offline get negative feedback" in text and "× as often online (CI " in text
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["summary.json", "validity.csv", "validity.md"]
    data = json.loads((tmp_path / "out" / "summary.json").read_text())["validity"]
    assert data["matching"]["matched"] == 300 and data["matching"]["requests_unmatched"] == {}
    assert set(data["not_measurable"]) == {"low_confidence", "abstention", "incident"}
    rows = data["rows"]
    head = [r for r in rows if "field" not in r and r["metric"] == "hit@5" and r["outcome"] == "negative_feedback"][0]
    assert head["kind"] == "link" and head["risk_difference"]["ci"][0] > 0
    assert {r.get("segment") for r in rows} == {None, "a", "b"}
    csv = (tmp_path / "out" / "validity.csv").read_text().splitlines()
    assert csv[0].startswith("metric,outcome,field,segment,") and len(csv) == 1 + len(rows)


def test_cli_json_prints_the_summary(strong, tmp_path, capsys) -> None:
    assert main(_args(strong, tmp_path / "out", "--json", "--metrics", "recall@5", "--outcomes",
                      "negative_feedback")) == 0
    data = json.loads(capsys.readouterr().out)
    assert [(r["metric"], r["outcome"]) for r in data["validity"]["rows"]] == [("recall@5", "negative_feedback")]
    assert len(data["inputs"]["traces"]) == 64


def test_cli_counts_what_did_not_match(tmp_path, capsys) -> None:
    files = write_inputs(tmp_path / "in", Sim(queries=60, link="strong", seed=2))
    extra = json.dumps({"request_id": "zz", "timestamp": "2026-05-02T00:00:00Z", "query": "something else entirely"})
    untexted = json.dumps({"request_id": "zy", "timestamp": "2026-05-02T00:00:00Z"})
    with files["traces"].open("a") as fh:
        fh.write(extra + "\n" + untexted + "\n")
    with files["gold"].open("a") as fh:
        fh.write(json.dumps({"query_id": "new", "query": "never asked in production",
                             "relevant_chunks": [{"chunk_id": "c0"}]}) + "\n")
    assert main(_args(files, tmp_path / "out", "--json")) == 0
    m = json.loads(capsys.readouterr().out)["validity"]["matching"]
    assert m["gold_unmatched"] == {"no production request": 1}
    assert m["requests_unmatched"] == {"no query text": 1, "query not in the gold set": 1}


def test_no_match_at_all_exits_2(tmp_path, capsys) -> None:
    files = write_inputs(tmp_path / "in", Sim(queries=20, seed=4))
    files["traces"].write_text(json.dumps({"request_id": "a", "timestamp": "2026-05-02T00:00:00Z",
                                           "query": "unrelated", "feedback": [{"value": 0}]}) + "\n")
    assert main(_args(files, tmp_path / "out")) == 2
    err = capsys.readouterr().err
    assert "no gold query matches a production request (20 gold queries, 1 requests" in err
    assert not (tmp_path / "out").exists()


def test_traces_without_query_text_exit_2(tmp_path, capsys) -> None:
    files = write_inputs(tmp_path / "in", Sim(queries=20, seed=4))
    files["traces"].write_text(json.dumps({"request_id": "a", "timestamp": "2026-05-02T00:00:00Z",
                                           "feedback": [{"value": 0}]}) + "\n")
    assert main(_args(files, tmp_path / "out")) == 2
    assert "no request logs its query text" in capsys.readouterr().err


def test_an_outcome_the_traces_do_not_carry_exits_2(tmp_path, capsys) -> None:
    files = write_inputs(tmp_path / "in", Sim(queries=20, seed=4), fallback=False)
    assert main(_args(files, tmp_path / "out", "--outcomes", "fallback")) == 2
    err = capsys.readouterr().err
    assert "none of the online outcomes asked for can be measured" in err and "no request logs fallback" in err


def test_bad_options_exit_2(strong, tmp_path, capsys) -> None:
    assert main(_args(strong, tmp_path / "o1", "--outcomes", "thumbs")) == 2
    assert "--outcomes: unknown outcome 'thumbs'" in capsys.readouterr().err
    assert main(_args(strong, tmp_path / "o2", "--effect", "2")) == 2
    assert "--effect must lie between 0 and 1" in capsys.readouterr().err
    assert main(_args(strong, tmp_path / "o3", "--metrics", "forbidden@5")) == 2
    assert "forbidden@5 is better low" in capsys.readouterr().err
    assert main(_args(strong, tmp_path / "o4", "--key", "query_key")) == 2
    assert "no gold query has a query_key field" in capsys.readouterr().err


def test_the_query_key_join(tmp_path, capsys) -> None:
    from rankgate.traces.model import query_key

    files = write_inputs(tmp_path / "in", Sim(queries=40, seed=5))
    lines = [json.loads(x) for x in files["gold"].read_text().splitlines()]
    for rec in lines[::2]:  # half of the gold set carries the production key (text, no source, top_k or tenant)
        rec["query_key"] = query_key(rec["query"])
    files["gold"].write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert main(_args(files, tmp_path / "out", "--key", "query_key", "--json")) == 0
    m = json.loads(capsys.readouterr().out)["validity"]["matching"]
    # the traces' query_key is of the raw text: requests that wrote it in capitals and with spaces still join
    assert m["matched"] == 20 and m["gold_unmatched"] == {"no query_key field": 20}


# -- the monitor ---------------------------------------------------------------------------------------------
def _monitor_file(tmp_path: Path, files: dict[str, Path], **more: object) -> Path:
    extra = "".join(f"  {k}: {v}\n" for k, v in more.items())
    path = tmp_path / "monitors.yaml"
    path.write_text("monitors:\n  - {signal: fallback_rate, change: robust_z}\n"
                    f"validity:\n  gold: {files['gold'].name}\n  run: {files['run'].name}\n  metric: hit@5\n"
                    f"  outcome: negative_feedback\n  owner: search-oncall\n{extra}")
    return path


def test_monitor_config_is_read_and_its_errors_name_the_line(tmp_path) -> None:
    from rankgate.errors import ConfigError
    from rankgate.traces.monitors import parse_monitors

    files = {"gold": tmp_path / "g.jsonl", "run": tmp_path / "r.jsonl"}
    cfg = parse_monitors(_monitor_file(tmp_path, files, effect=0.05).read_text(), path=str(tmp_path / "monitors.yaml"))
    v = cfg.validity
    assert (v.metric, v.outcome, v.effect, v.owner) == ("hit@5", "negative_feedback", 0.05, "search-oncall")
    assert v.gold == str(tmp_path / "g.jsonl")
    with pytest.raises(ConfigError, match="validity.metric"):
        parse_monitors("monitors:\n  - {signal: fallback_rate}\nvalidity:\n  gold: g\n  run: r\n", path="m.yaml")
    with pytest.raises(ConfigError, match="validity.outcome"):
        parse_monitors("monitors:\n  - {signal: fallback_rate}\nvalidity:\n  gold: g\n  run: r\n  metric: hit@5\n"
                       "  outcome: thumbs\n", path="m.yaml")
    with pytest.raises(ConfigError, match="better low"):
        parse_monitors("monitors:\n  - {signal: fallback_rate}\nvalidity:\n  gold: g\n  run: r\n"
                       "  metric: forbidden@5\n", path="m.yaml")


def _monitor_outcome(tmp_path: Path, sim: Sim):
    from rankgate.flows.traces import TracesRequest
    from rankgate.flows.validity import ValidityRequest, run_validity
    from rankgate.traces.monitors import load_monitors
    from rankgate.traces.validity import check_monitor

    files = write_inputs(tmp_path, sim)
    m = load_monitors(str(_monitor_file(tmp_path, files))).validity
    assert TracesRequest((str(files["traces"]),))  # (what traces check is given)
    analysis = run_validity(ValidityRequest(m.gold, m.run, (str(files["traces"]),), metrics=m.metric,
                                            outcomes=(m.outcome,))).analysis
    return check_monitor(m, analysis)


@pytest.mark.slow  # (the full tier: heavy, and what it guards is covered lighter by default)
def test_monitor_flags_a_metric_that_stopped_separating(tmp_path) -> None:
    found = _monitor_outcome(tmp_path, Sim(queries=600, link="none", seed=7))
    assert found.decided and found.flagged
    assert "no link" in found.detail


def test_monitor_passes_a_metric_that_separates(tmp_path) -> None:
    found = _monitor_outcome(tmp_path, Sim(queries=300, link="strong", seed=7))
    assert found.decided and not found.flagged


def test_monitor_without_power_says_so_with_the_smallest_change_it_could_see(tmp_path) -> None:
    found = _monitor_outcome(tmp_path, Sim(queries=20, link="none", seed=7))
    assert not found.decided and not found.flagged
    assert found.detail.startswith("undecidable at 20 matched queries (power ")
    assert "smallest visible: " in found.detail


def test_traces_check_runs_the_validity_monitor(tmp_path, capsys) -> None:
    files = write_inputs(tmp_path, Sim(queries=600, link="none", seed=7))
    path = _monitor_file(tmp_path, files)
    code = main(["traces", "check", "--traces", str(files["traces"]), "--monitors", str(path), "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 1
    [flag] = [f for f in data["flags"] if f["signal"] == "validity"]
    assert flag["monitor"] == "validity" and flag["owner"] == "search-oncall" and "no link" in flag["detail"]
