"""``rankgate gold plan`` and ``gold sample --plan``: the queries each gated segment needs for its gate to see
``regression_max``, checked by simulating the gate's own paired test; the budget split against every split of
small budgets; the plan on the demo data in words, CSV and JSON; refusals; sampling to the plan's quotas."""

from __future__ import annotations

import csv
import io
import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest

from rankgate.cli.main import main
from rankgate.goldset import read_gold_file
from rankgate.goldset.plan import Cell, blindness, plan_labels, read_plan_quotas, split_budget
from rankgate.goldset.validate import validate_gold
from rankgate.gating.config import load_config, parse_config
from rankgate.stats.power import detection_z, drop_at, min_detectable_drop, queries_needed, share_sd

from .helpers import write_jsonl
from .test_gold import check  # (the golden files' one check: RANKGATE_UPDATE_GOLDEN=1 accepts a change)

DEMO = Path(__file__).resolve().parents[1] / "src" / "rankgate" / "demo" / "data"
GOLD, CONFIG = DEMO / "gold.jsonl", DEMO / "ship-criteria.yaml"

def run(argv: list[object], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exc:  # (argparse's refusals)
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


# -- the power formula, by simulation -------------------------------------------------------------
def _paired_shares(rng: np.random.Generator, datasets: int, n: int, p: float, drop: float) -> tuple[np.ndarray, np.ndarray]:
    """Paired 0/1 values (baseline, candidate) of ``datasets`` gold sets of ``n`` queries: the baseline a share at
    ``p``, the candidate ``drop`` lower, and the change spread as the plan assumes (the variance of one run,
    ``p(1 − p)``: a candidate correlated with the baseline at ρ = ½). Pairs (1, 0) have chance ``a``, (0, 1) ``e``."""
    var = p * (1 - p)
    a, e = (var + drop ** 2 + drop) / 2, (var + drop ** 2 - drop) / 2
    assert 0 <= e <= a <= p
    u = rng.random((datasets, n))
    base = (u < p).astype(float)
    cand = base.copy()
    cand[u < a] = 0.0                              # (1, 0): lost
    cand[(u >= p) & (u < p + e)] = 1.0             # (0, 1): gained
    return base, cand


def _gate_sees_drop_normal(base: np.ndarray, cand: np.ndarray, confidence: float) -> np.ndarray:
    """The gate's rule with the interval's limit as resamples grow (the ideal bootstrap: mean ± z·σ̂/√n)."""
    from rankgate.stats.bootstrap import normal_quantile

    d = cand - base
    n = d.shape[1]
    upper = d.mean(axis=1) + normal_quantile(1 - (1 - confidence) / 2) * d.std(axis=1) / math.sqrt(n)
    return upper < 0


def _gate_sees_drop_bootstrap(base: np.ndarray, cand: np.ndarray, confidence: float, resamples: int) -> np.ndarray:
    """The gate's own rule: its paired percentile-bootstrap interval lies below zero."""
    from rankgate.stats.bootstrap import paired_bootstrap_ci

    return np.array([paired_bootstrap_ci(b, c, rng=i, resamples=resamples, confidence=confidence)[1] < 0
                     for i, (b, c) in enumerate(zip(base, cand))])


CASES = [(0.8, 0.05), (0.5, 0.05), (0.75, 0.1)]  # (the gate's threshold, its regression_max)


@pytest.mark.parametrize("p, limit", CASES)
def test_planned_queries_reach_the_stated_power(p: float, limit: float) -> None:
    """2,000 simulated paired gold sets of the planned size: the gate's test sees a drop of regression_max about
    80% of the time (a few points over, from rounding n up); half as many queries see it far less often."""
    n = queries_needed(limit, share_sd(p), confidence=0.95, power=0.8)
    rng = np.random.default_rng(7)
    base, cand = _paired_shares(rng, 2000, n, p, limit)
    power = _gate_sees_drop_normal(base, cand, 0.95).mean()
    assert 0.78 <= power <= 0.85, (n, power)
    half_b, half_c = _paired_shares(rng, 2000, n // 2, p, limit)
    assert _gate_sees_drop_normal(half_b, half_c, 0.95).mean() < 0.6
    # a larger stated power asks for more queries, and reaches it
    n90 = queries_needed(limit, share_sd(p), confidence=0.95, power=0.9)
    assert n90 > n
    b90, c90 = _paired_shares(rng, 2000, n90, p, limit)
    assert 0.88 <= _gate_sees_drop_normal(b90, c90, 0.95).mean() <= 0.94


def test_planned_queries_reach_the_power_with_the_gates_bootstrap() -> None:
    """The same with the gate's own paired bootstrap (fewer data sets in the default tier: looser bounds)."""
    p, limit = 0.8, 0.05
    n = queries_needed(limit, share_sd(p))
    base, cand = _paired_shares(np.random.default_rng(11), 300, n, p, limit)
    power = _gate_sees_drop_bootstrap(base, cand, 0.95, resamples=500).mean()
    assert 0.72 <= power <= 0.88, (n, power)


@pytest.mark.slow
@pytest.mark.parametrize("p, limit", CASES)
def test_planned_queries_reach_the_power_with_the_gates_bootstrap_in_full(p: float, limit: float) -> None:
    n = queries_needed(limit, share_sd(p))
    base, cand = _paired_shares(np.random.default_rng(3), 2000, n, p, limit)
    power = _gate_sees_drop_bootstrap(base, cand, 0.95, resamples=2000).mean()
    assert 0.775 <= power <= 0.85, (n, power)


def test_a_one_sided_test_at_1_minus_confidence_would_promise_too_much() -> None:
    """Why the plan's α is (1 − c)/2: sized for a one-sided 5% test, the gate (a 95% interval below zero) sees the
    drop only about 70% of the time, not 80%."""
    from rankgate.stats.bootstrap import normal_quantile

    p, limit = 0.8, 0.05
    z = normal_quantile(0.95) + normal_quantile(0.8)
    n = math.ceil((z * share_sd(p) / limit) ** 2)
    base, cand = _paired_shares(np.random.default_rng(5), 2000, n, p, limit)
    assert _gate_sees_drop_normal(base, cand, 0.95).mean() < 0.75


def test_queries_needed_is_the_boundary_of_the_visible_drop() -> None:
    for sd in (0.1, 0.3, 0.4, 0.5):
        for limit in (0.01, 0.03, 0.05, 0.2):
            for conf, power in ((0.95, 0.8), (0.9, 0.9), (0.99, 0.5)):
                n = queries_needed(limit, sd, confidence=conf, power=power)
                assert drop_at(n, sd, confidence=conf, power=power) <= limit
                assert n == 1 or drop_at(n - 1, sd, confidence=conf, power=power) > limit
    assert queries_needed(0.05, share_sd(0.5)) == 785  # the worked example of stats/power.py
    assert drop_at(136, share_sd(0.75)) == pytest.approx(min_detectable_drop(136, 0.75), rel=1e-12)


# -- the budget split ---------------------------------------------------------------------------
def _best_by_brute_force(cells: list[Cell], budget: int, z: float) -> float:
    best = math.inf
    for split in itertools.product(range(budget + 1), repeat=len(cells)):
        if sum(split) == budget:
            best = min(best, max(blindness(c, x, z) for c, x in zip(cells, split)))
    return best


def test_the_greedy_split_is_as_good_as_every_split() -> None:
    z = detection_z()
    rng = np.random.default_rng(1)
    checked = 0
    for _ in range(60):
        cells = []
        for _ in range(int(rng.integers(2, 5))):
            terms = tuple((float(rng.uniform(0.1, 0.5)), float(rng.choice([0.03, 0.05, 0.1])), int(rng.integers(1, 6)))
                          for _ in range(int(rng.integers(1, 3))))
            weight = float(rng.choice([0.0, 0.1, 0.3, 0.6, 1.0]))
            cells.append(Cell(int(rng.integers(0, 6)), weight, terms))
        budget = int(rng.integers(1, 9))
        split = split_budget(cells, budget, z)
        assert sum(split) == budget and min(split) >= 0
        got = max(blindness(c, x, z) for c, x in zip(cells, split))
        best = _best_by_brute_force(cells, budget, z)
        assert got == best or math.isclose(got, best, rel_tol=1e-12), (cells, budget, split)
        checked += math.isfinite(best)
    assert checked > 20  # (most cases are finite: the check is not of infinities only)


def test_the_split_favours_traffic_and_leaves_segments_without_traffic() -> None:
    z = detection_z()
    busy, quiet, none = Cell(20, 0.7, ((0.4, 0.05, 15),)), Cell(20, 0.3, ((0.4, 0.05, 15),)), Cell(5, 0.0, ((0.4, 0.05, 15),))
    split = split_budget([busy, quiet, none], 100, z)
    assert split[0] > split[1] > 0 and split[2] == 0
    assert blindness(none, 0, z) == 0.0
    assert blindness(Cell(5, 0.5, ((0.4, 0.05, 15),)), 9, z) == math.inf  # under min_queries: not gated at all
    assert blindness(Cell(5, 0.5, ((0.4, 0.05, 15),)), 10, z) < math.inf


# -- the plan on the demo data ------------------------------------------------------------------
def test_plan_agrees_with_gold_validate() -> None:
    gold, config = read_gold_file(str(GOLD)), load_config(str(CONFIG))
    plan = plan_labels(gold, config)
    report = validate_gold(gold, None, config)
    seen = {(p.gate, p.field, p.value): p for p in report.power}
    assert plan.rows
    for r in plan.rows:
        p = seen[(r.gate, r.field, r.value)]
        assert (r.queries, r.detectable_drop) == (p.queries, p.detectable_drop)
        assert r.blind == (p.underpowered or not p.gated)
        assert drop_at(r.needed, r.spread) <= r.regression_max < drop_at(r.needed - 1, r.spread)


def test_gold_plan_names_the_segments_that_cannot_see_their_drop(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["gold", "plan", "--gold", GOLD, "--config", CONFIG], capsys)
    assert code == 0, err
    lines = out.splitlines()
    assert "9 of 9 gated groups cannot see their gate's drop (most labels needed first):" in lines
    assert "  recall_at_5 lang=es: 18 queries see 29 pp, not 5 pp; needs 589 queries: add 571 labels" in lines
    assert "  recall_at_5 lang=de: 39 queries see 19 pp, not 5 pp; needs 589 queries: add 550 labels" in lines
    assert "  any_answer_in_top_5 all queries: 136 queries see 10 pp, not 3 pp; needs 1,396 queries: add 1,260 labels" in lines
    needs = [int(line.rsplit("add ", 1)[1].split()[0].replace(",", "")) for line in lines if " add " in line]
    assert len(needs) == 9 and needs == sorted(needs, reverse=True)  # one line per segment, most needed first
    assert "Traffic: no traces given; every segment is planned from gold counts alone." in lines
    assert "paired, one-sided test of a drop at 2.5%" in lines[0]


def test_gold_plan_csv_and_json_golden(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "plan.csv"
    code, text, err = run(["gold", "plan", "--gold", GOLD, "--config", CONFIG, "--budget", "300", "-o", out], capsys)
    assert code == 0, err
    check("gold_plan.csv", out.read_text(encoding="utf-8"))
    check("gold_plan.txt", text)
    code, text, err = run(["gold", "plan", "--gold", GOLD, "--config", CONFIG, "--budget", "300", "--json"], capsys)
    assert code == 0, err
    data = json.loads(text)
    assert data["gold"]["path"] == str(GOLD)
    data["gold"]["path"], data["config"] = "gold.jsonl", "ship-criteria.yaml"  # (where the checkout lives)
    check("gold_plan.json", json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    rows = list(csv.DictReader(io.StringIO(out.read_text(encoding="utf-8"))))
    assert [r["labels_to_add"] for r in rows] == [str(r["labels_to_add"]) for r in data["rows"]]
    split = {r["segment"]: int(r["budget_labels"]) for r in rows if r["segment_field"] == "lang" and r["gate"] == "recall_at_5"}
    assert sum(split.values()) == 300 and split["es"] > split["en"]  # equal traffic: the smallest segment gets most
    assert {r["budget_labels"] for r in rows if r["segment_field"] == "all"} == {"300"}


@pytest.fixture(scope="module")
def demo_baseline(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from .demo_runs import demo_run

    return demo_run(tmp_path_factory.mktemp("plan-runs"))


def test_gold_plan_from_a_baseline_run_agrees_with_validate(demo_baseline: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    code, text, err = run(["gold", "plan", "--gold", GOLD, "--config", CONFIG, "--baseline", demo_baseline, "--json"],
                          capsys)
    assert code == 0, err
    plan = json.loads(text)
    code, report, err = run(["gold", "validate", "--gold", GOLD, "--config", CONFIG, "--baseline", demo_baseline,
                             "--format", "markdown"], capsys)
    assert "bootstrap standard error of baseline" in report
    gold, config = read_gold_file(str(GOLD)), load_config(str(CONFIG))
    from rankgate.flows.gold import _baseline_values

    values, _ = _baseline_values(str(GOLD), str(demo_baseline), gold, config)
    power = {(p.gate, p.field, p.value): p for p in validate_gold(gold, None, config, baseline=values).power}
    for r in plan["rows"]:
        p = power[(r["gate"], r["segment_field"], r["segment"])]
        assert r["spread_from"] == "baseline" and r["detectable_drop"] == p.detectable_drop
        assert r["queries_needed"] == max(queries_needed(r["regression_max"], p.spread), r["min_queries"])


# -- bad inputs ---------------------------------------------------------------------------------
def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "ship-criteria.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_refusals_exit_2_with_a_clear_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    no_limit = _config(tmp_path, "gates:\n  - metric: recall@5\n    threshold: 0.8\n    segments: [lang]\n")
    code, out, err = run(["gold", "plan", "--gold", GOLD, "--config", no_limit], capsys)
    assert code == 2 and not out
    assert "has no gate with regression_max" in err and "regression_max: 0.05" in err

    unknown = _config(tmp_path, "gates:\n  - metric: recall@5\n    regression_max: 0.05\n    segments: [langg]\n")
    code, out, err = run(["gold", "plan", "--gold", GOLD, "--config", unknown], capsys)
    assert code == 2 and not out
    assert "ship-criteria.yaml:4" in err and "'langg'" in err and "lang" in err.split("fields the gold set has:")[1]

    for budget in ("0", "-3"):
        code, out, err = run(["gold", "plan", "--gold", GOLD, "--config", CONFIG, "--budget", budget], capsys)
        assert code == 2 and "--budget" in err and f"got {budget}" in err, err
    code, out, err = run(["gold", "plan", "--gold", GOLD, "--config", CONFIG, "--power", "1.2"], capsys)
    assert code == 2 and "power" in err
    code, out, err = run(["gold", "plan", "--gold", GOLD, "--config", CONFIG, "-o", GOLD], capsys)
    assert code == 2 and "-o" in err  # never over an input
    assert GOLD.read_text(encoding="utf-8").count("\n") == 144


# -- traffic from traces, and sampling to the plan -----------------------------------------------
TENANTS = {"shared": 600, "acme": 250, "globex": 100, "initech": 50}


def _traces(tmp_path: Path) -> Path:
    rows = []
    for tenant, count in TENANTS.items():
        for i in range(count):
            rows.append({"request_id": f"{tenant}-{i}", "timestamp": f"2026-05-{1 + i % 28:02d}T10:00:00Z",
                         "query": f"question {i} of {tenant}", "tenant": tenant,
                         "retrieved": [{"stage": "candidate", "rank": 1, "id": f"doc_{i % 7}#c1", "score": 0.5}]})
    rows.append({"request_id": "no-tenant", "timestamp": "2026-05-02T10:00:00Z", "query": "who am i"})
    return write_jsonl(tmp_path / "traces.jsonl", rows)


SEGMENTED = """gates:
  - name: recall_at_5
    metric: recall@5
    threshold: 0.75
    regression_max: 0.1
    segments: [tenant, lang]
    min_queries: 10
"""


def test_traffic_shares_come_from_the_traces(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config, traces = _config(tmp_path, SEGMENTED), _traces(tmp_path)
    code, text, err = run(["gold", "plan", "--gold", GOLD, "--config", config, "--traces", traces, "--budget", "200",
                           "--json"], capsys)
    assert code == 0, err
    plan = json.loads(text)
    assert plan["traffic_fields"] == {"tenant": 1000} and plan["planned_from_gold_counts"] == ["lang"]
    rows = {(r["segment_field"], r["segment"]): r for r in plan["rows"]}
    assert rows[("tenant", "acme")]["traffic_share"] == 0.25 and rows[("tenant", "acme")]["traffic_requests"] == 250
    assert rows[("tenant", "initech")]["queries"] == 0  # production shows it, the gold set has none
    assert rows[("tenant", "initech")]["labels_to_add"] == rows[("tenant", "initech")]["queries_needed"]
    assert rows[("lang", "de")]["traffic_share"] is None
    budget = {k: r["budget_labels"] for k, r in rows.items() if k[0] != "all"}
    assert sum(budget.values()) == 200
    assert budget[("tenant", "initech")] >= 10  # under min_queries it is not gated at all: filled first
    code, text, err = run(["gold", "plan", "--gold", GOLD, "--config", config, "--traces", traces], capsys)
    assert "lang: the traces carry no such field; planned from gold counts alone." in text
    assert "Traffic: tenant from 1,000 requests." in text
    # 10.27 pp against a limit of 10 pp: not written as "10 pp, not 10 pp"
    assert "  recall_at_5 all queries: 136 queries see just over 10 pp, not 10 pp; needs 148 queries: add 12 labels; " \
        "100.0% of traffic" in text.splitlines()
    assert "  recall_at_5 tenant=initech: no query in the gold set; needs 148 queries: add 148 labels; 5.0% of traffic" \
        in text.splitlines()


def test_gold_sample_draws_each_segment_to_its_quota(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config, traces = _config(tmp_path, SEGMENTED), _traces(tmp_path)
    plan = tmp_path / "plan.csv"
    code, _, err = run(["gold", "plan", "--gold", GOLD, "--config", config, "--traces", traces, "--budget", "120",
                        "-o", plan], capsys)
    assert code == 0, err
    quotas = read_plan_quotas(str(plan))
    out = tmp_path / "candidates.jsonl"
    code, text, err = run(["gold", "sample", "--traces", traces, "--plan", plan, "-o", out], capsys)
    assert code == 0, err
    recs = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    got: dict[str, int] = {}
    for r in recs:
        assert r["sample_reason"] == "plan" and r["relevant_chunks"][0]["grade"] is None
        got[r["plan_segment"]] = got.get(r["plan_segment"], 0) + 1
        assert r["plan_segment"] == f"tenant={r['tags']['tenant']}"
    want = {f"{f}={v}": n for (f, v), n in quotas.items() if f == "tenant" and n}
    assert got == want and sum(want.values()) > 0
    assert len({r["query"] for r in recs}) == len(recs)
    assert "lang: the traces carry no such field, so its segments were not sampled" in text
    # the same plan and seed: the same file
    again = tmp_path / "again.jsonl"
    run(["gold", "sample", "--traces", traces, "--plan", plan, "-o", again], capsys)
    assert again.read_bytes() == out.read_bytes()


def test_gold_sample_says_when_the_traces_cannot_fill_a_quota(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    traces = _traces(tmp_path)
    plan = tmp_path / "plan.csv"
    plan.write_text("gate,metric,segment_field,segment,labels_to_add,budget_labels\n"
                    "g,recall@5,all,all queries,900,\n"
                    "g,recall@5,tenant,globex,150,\n"
                    "g,recall@5,tenant,acme,5,\n"
                    "h,ndcg@10,tenant,acme,7,\n", encoding="utf-8")
    assert read_plan_quotas(str(plan)) == {("tenant", "globex"): 150, ("tenant", "acme"): 7}
    out = tmp_path / "c.jsonl"
    code, text, err = run(["gold", "sample", "--traces", traces, "--plan", plan, "-o", out], capsys)
    assert code == 0, err
    assert "tenant=globex 100 of 150" in text and "tenant=acme 7 of 7" in text
    assert "tenant=globex: the traces hold 100 distinct queries of it, not the 150 the plan asks for" in text
    code, text, err = run(["gold", "sample", "--traces", traces, "--plan", plan, "--n", "5", "-o", out], capsys)
    assert code == 2 and "--plan" in err and "--n" in err
    bad = tmp_path / "bad.csv"
    bad.write_text("gate,segment\n", encoding="utf-8")
    code, text, err = run(["gold", "sample", "--traces", traces, "--plan", bad, "-o", out], capsys)
    assert code == 2 and "bad.csv:1" in err and "segment_field" in err
    bad.write_text("segment_field,segment,labels_to_add,budget_labels\ntenant,acme,many,\n", encoding="utf-8")
    code, text, err = run(["gold", "sample", "--traces", traces, "--plan", bad, "-o", out], capsys)
    assert code == 2 and "bad.csv:2" in err and "labels_to_add" in err


def test_a_plan_without_segments_spends_the_budget_on_all_queries() -> None:
    gold = read_gold_file(str(GOLD))
    config = parse_config("gates:\n  - metric: hit@5\n    threshold: 0.8\n    regression_max: 0.03\n", path="c.yaml")
    plan = plan_labels(gold, config, budget=50)
    (row,) = plan.rows
    assert row.budget == 50 and row.drop_after is not None and row.drop_after < row.detectable_drop
    assert plan.quotas() == {}


def test_segment_values_from_outside_are_inert(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A segment value with a terminal escape, a line break and a spreadsheet formula: one plain line on the
    terminal, a defused cell in plan.csv that gold sample reads back as the value itself."""
    records = [json.loads(line) for line in GOLD.read_text(encoding="utf-8").splitlines()]
    for r in records[:20]:
        r["tags"]["lang"] = "=HYPERLINK(1)\x1b[31m\nred"
    gold = write_jsonl(tmp_path / "gold.jsonl", records)
    out = tmp_path / "plan.csv"
    code, text, err = run(["gold", "plan", "--gold", gold, "--config", CONFIG, "-o", out], capsys)
    assert code == 0, err
    assert "\x1b" not in text and "lang==HYPERLINK(1) [31m red:" in text
    assert "'=HYPERLINK" in out.read_text(encoding="utf-8")
    assert ("lang", "=HYPERLINK(1)\x1b[31m\nred") in read_plan_quotas(str(out))
