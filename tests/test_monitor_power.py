"""Monitors that know their power: every monitor says per window whether its rule would see a change of its
``detect:`` size at the traffic it had, or that it cannot decide and the smallest change it sees
(docs/traces.md, "Power"). Hand-computed cases of each computation, "cannot decide" for each monitor kind at
low traffic (and "decided" at high traffic, so that the statement is not vacuous), the ``detect:`` key's
errors, and the generated trace set whose bad-feedback source is never passed over in silence."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

from rankgate.cli.main import main
from rankgate.errors import ConfigError
from rankgate.gating.config import parse_monitors
from rankgate.render.traces import check_markdown
from rankgate.stats.power import rate_seen_above, rate_seen_below, shift_seen
from rankgate.traces.monitors import Monitor, MonitorConfig, check_monitors
from rankgate.traces.power import Detect, detect_target, parse_detect, rows_for_shift
from rankgate.traces.signals import SignalValue, TraceSummary

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

DAY = 86_400_000_000
Z80 = 0.8416212335729143  # the standard normal's 0.8 quantile


def _summary(signal: str, points: list[tuple[float | None, int, int | None]], segment: str = "all") -> TraceSummary:
    values = tuple(SignalValue(i * DAY, segment, signal, x, n, k) for i, (x, n, k) in enumerate(points))
    return TraceSummary(DAY, "1d", tuple(i * DAY for i in range(len(points))), (), values, (), (), (), (), (), ())


def _power(signal: str, points: list[tuple[float | None, int, int | None]], monitor: Monitor):
    out = check_monitors(_summary(signal, points), MonitorConfig((monitor,)))
    (p,) = out.power
    return out, p


def _tail(n: int, k: int, p: float) -> float:
    """P(Bin(n, p) >= k) summed term by term (independent of the beta function the code uses)."""
    return 1.0 - sum(math.comb(n, j) * p ** j * (1 - p) ** (n - j) for j in range(k))


def _solve(f, target: float) -> float:
    lo, hi = 0.0, 1.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if f(mid) < target else (lo, mid)
    return (lo + hi) / 2


# -- the formulas, by hand ---------------------------------------------------------------------------------
def test_binomial_inverses_by_hand():
    assert rate_seen_above(10, 1) == pytest.approx(1 - 0.2 ** (1 / 10), rel=1e-12)  # 1 - (1-p)^10 = 0.8
    assert rate_seen_above(3, 3) == pytest.approx(0.8 ** (1 / 3), rel=1e-12)      # p^3 = 0.8
    assert rate_seen_above(100, 2) == pytest.approx(_solve(lambda p: _tail(100, 2, p), 0.8), rel=1e-9)
    assert rate_seen_below(10, 0) == pytest.approx(1 - 0.8 ** (1 / 10), rel=1e-12)  # (1-p)^10 = 0.8
    assert rate_seen_above(10, 0) == 0.0 and rate_seen_above(10, 11) == math.inf
    assert shift_seen(5.0, 2.0) == pytest.approx(5.0 + 2 * Z80)


def test_robust_z_rate_window_smallest_change_by_hand():
    """Median 0 errors per 1,000, MAD floor 1 (limit 3.5 / 0.6745 = 5.19 per 1,000): a window of 100 requests
    flags from 1 error; 1 - (1 - p)^100 = 0.8 gives p = 1.597%, 15.97 per 1,000. A detect size of 15 per 1,000
    is just out of reach; about 108 requests see it."""
    pts = [(0.0, 100, 0)] * 4 + [(0.0, 100, 0)]
    _, p = _power("error_rate_per_1k", pts, Monitor("e", "error_rate_per_1k", mad_floor=1.0, detect=Detect("abs", 15.0)))
    now = p.now
    assert now.status == "underpowered" and now.level == 0.0
    assert now.smallest == pytest.approx(1000 * (1 - 0.2 ** (1 / 100)), rel=1e-9)
    assert now.target == 15.0
    # the rows a window needs: the fewest n with P(Bin(n, 1.5%) >= 1) >= 0.8 (each count of 1 flags: 1000/n > 5.19)
    assert now.rows_needed == math.ceil(math.log(0.2) / math.log(1 - 0.015))
    assert p.to_dict()["undecided"] == {"underpowered": 2} and p.windows == 2 and p.warmup == 3


def test_proportion_window_uses_the_rule_itself():
    """The proportion rule's fewest flagging count k* (Newcombe at 99% against 18/120), then the binomial:
    the smallest rate is where P(Bin(14, p) >= k*) = 0.8."""
    from rankgate.stats.bootstrap import newcombe_interval

    pts = [(0.15, 40, 6), (0.15, 40, 6), (0.15, 40, 6), (4 / 14, 14, 4)]
    m = Monitor("f", "negative_feedback_rate", change="proportion", min_n=10, confidence=0.99)
    _, p = _power("negative_feedback_rate", pts, m)
    k_star = next(k for k in range(15) if newcombe_interval(k, 14, 18, 120, confidence=0.99)[0] > 0)
    rate = _solve(lambda q: _tail(14, k_star, q), 0.8)
    assert p.now.smallest == pytest.approx(rate - 0.15, rel=1e-7)
    assert p.now.target == pytest.approx(0.15)  # 2x: 15% to 30%
    assert p.now.status == "underpowered" and p.detect == "2x"


def test_shift_window_by_hand():
    """Latency: medians 98..102 ms, MAD 1, no floors, z 3.5: L = 5.189 ms, σ = 1.4826 ms; a window of 250 rows
    against baselines of 1,000 scatters by σ·2, so it sees 5.189 + 0.8416 · 2.965 = 7.685 ms."""
    base = [(100.0, 1000, None), (102.0, 1000, None), (98.0, 1000, None), (101.0, 1000, None), (99.0, 1000, None)]
    for detect, status in ((Detect("abs", 5.0), "underpowered"), (Detect("abs", 8.0), "decided"),
                           (Detect("x", 2.0), "decided")):
        _, p = _power("latency.total.p95", [*base, (100.0, 250, None)],
                      Monitor("l", "latency.total.p95", detect=detect, baseline_windows=5, min_baseline=5))
        assert p.now.smallest == pytest.approx(3.5 / 0.6745 + Z80 * 2 / 0.6745, rel=1e-9)
        assert p.now.status == status
    assert rows_for_shift(3.5 / 0.6745, 1 / 0.6745, 1000, 6.0) == math.ceil(
        1000 * (Z80 / 0.6745 / (6.0 - 3.5 / 0.6745)) ** 2) == 2368
    assert rows_for_shift(3.5 / 0.6745, 1 / 0.6745, 1000, 5.0) is None  # within the limit: no traffic helps


def test_detect_sizes_in_signal_units():
    assert detect_target(Detect("x", 2.0), "negative_feedback_rate", "up", 0.15, None) == pytest.approx(0.15)
    assert detect_target(Detect("x", 2.0), "negative_feedback_rate", "up", 0.6, None) == pytest.approx(0.4)  # to 100%
    assert detect_target(Detect("x", 2.0), "redaction_efficacy", "down", 0.99, None) == pytest.approx(0.01)  # 1% -> 2%
    assert detect_target(Detect("x", 2.0), "instability.rbo", "down", 0.9, None) == pytest.approx(0.1)
    assert detect_target(Detect("x", 2.0), "latency.total.p95", "up", 40.0, None) == 40.0
    assert detect_target(Detect("x", 2.0), "latency.total.p95", "down", 40.0, None) == 20.0
    assert detect_target(Detect("sd", 4.0), "top1_score.p50", "up", 0.7, 0.01) == pytest.approx(0.04)
    assert detect_target(Detect("abs", 0.05), "fallback_rate", "down", 0.02, None) == pytest.approx(0.02)  # to 0
    assert parse_detect("5pp", "fallback_rate") == Detect("abs", 0.05)
    assert parse_detect(" 1.5X ", "latency.total.p95") == Detect("x", 1.5)
    assert str(parse_detect("3sd", "margin.p50")) == "3sd"


# -- each kind cannot decide at low traffic, and decides at high traffic ----------------------------------------
@pytest.mark.parametrize("kind", ["proportion", "robust_z rate", "robust_z shift", "max"])
def test_each_monitor_kind_says_it_cannot_decide_at_low_traffic(kind):
    if kind == "proportion":
        signal, m = "negative_feedback_rate", Monitor("m", "negative_feedback_rate", change="proportion", min_n=1)
        low, high = [(0.15, 20, 3)] * 3 + [(0.2, 10, 2)], [(0.15, 2000, 300)] * 3 + [(0.15, 1000, 150)]
    elif kind == "robust_z rate":
        signal, m = "fallback_rate", Monitor("m", "fallback_rate", mad_floor=0.005, min_n=1)
        low, high = [(0.05, 40, 2)] * 3 + [(0.05, 40, 2)], [(0.05, 4000, 200)] * 3 + [(0.05, 4000, 200)]
    elif kind == "robust_z shift":
        signal, m = "latency.total.p95", Monitor("m", "latency.total.p95", min_n=1)
        base = [(100.0, 1000, None), (104.0, 1000, None), (96.0, 1000, None)]
        low, high = [*base, (100.0, 2, None)], [*base, (100.0, 1000, None)]
    else:
        signal, m = "fallback_rate", Monitor("m", "fallback_rate", change="none", max=0.5, min_n=100)
        low, high = [(0.05, 40, 2)] * 4, [(0.05, 400, 20)] * 4
    out, p = _power(signal, low, m)
    assert not p.decides and p.undecided and p.now.status in ("underpowered", "too few rows")
    if kind != "max":
        assert p.now.smallest is not None and p.now.smallest > p.now.target > 0
    md = check_markdown(out, _summary(signal, low), MonitorConfig((m,)))
    assert "could not decide" in md and "| m | all |" in md
    _, p = _power(signal, high, m)
    assert p.decides and p.now.status == "decided"


def test_flat_zero_baseline_asks_for_a_size_and_a_flag_counts_as_seen():
    pts = [(0.0, 1000, 0)] * 3 + [(0.0, 1000, 0)]
    out, p = _power("secure_field_bypass_rate", pts, Monitor("b", "secure_field_bypass_rate", mad_floor=0.01))
    assert p.now.status == "size 0" and not p.decides
    assert "no change; write a size in the signal's units" in check_markdown(
        out, _summary("secure_field_bypass_rate", pts), MonitorConfig((Monitor("b", "secure_field_bypass_rate"),)))
    pts = [(0.0, 1000, 0)] * 3 + [(0.5, 1000, 500)]
    out, p = _power("secure_field_bypass_rate", pts, Monitor("b", "secure_field_bypass_rate", mad_floor=0.01))
    assert out.flags and p.now.status == "flagged" and p.decides


# -- the detect key ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("value, line, match", [
    ("'5%'", 3, "write 0.05 \\(or 5pp\\) for 5 points"),
    ("1x", 3, "more than 1x"),
    ("0", 3, "above 0"),
    ("-2", 3, "above 0"),
    ("often", 3, "must be a size"),
    ("[2x]", 3, "must be a size"),
    ("010", 3, "decimal"),
])
def test_detect_key_errors_name_file_line_and_key(value, line, match):
    with pytest.raises(ConfigError, match=match) as exc:
        parse_monitors(f"monitors:\n  - signal: fallback_rate\n    detect: {value}\n", path="m.yaml")
    assert f"m.yaml:{line}:" in str(exc.value) and "detect" in str(exc.value)


@pytest.mark.parametrize("text, match", [
    ("  - {signal: latency.total.p95, detect: 5pp}\n", "pp \\(points\\) applies to shares"),
    ("  - {signal: fallback_rate, change: none, max: 0.2, detect: 2x}\n", "applies to a change rule"),
    ("  - {signal: top1_score.p50, detect: 3sd}\n", "within the rule's own limit \\(z 3.5\\)"),
    ("  - {signal: top1_score.p50, z: 2.5, detect: 3sd}\n  - {signal: margin.p50, detect: 3sd, z: 2}\n", None),
])
def test_detect_key_against_the_rule(text, match):
    if match is None:
        cfg = parse_monitors("monitors:\n" + text, path="m.yaml")
        assert [str(m.detect) for m in cfg.monitors] == ["3sd", "3sd"]
        return
    with pytest.raises(ConfigError, match=match) as exc:
        parse_monitors("monitors:\n" + text, path="m.yaml")
    assert "m.yaml:2:" in str(exc.value)


def test_default_monitors_carry_their_sizes():
    from rankgate.gating.config import load_monitors

    sizes = {m.signal: (str(m.detect) if m.detect else None) for m in load_monitors(None).monitors}
    assert sizes["error_rate_per_1k"] == "15" and sizes["instability.rbo"] == "0.15"
    assert sizes["negative_feedback_rate"] is None and sizes["latency.total.p95"] is None  # the 2x default


# -- the generated trace sets --------------------------------------------------------------------------------
def _check(tmp_path: Path, per_day: int) -> tuple[dict, dict, str]:
    from trace_gen import Spec, generate

    truth = generate(tmp_path, Spec(days=12, per_day=per_day, seed=0), formats=("parquet",))
    flags, md = tmp_path / "flags.json", tmp_path / "flags.md"
    code = main(["traces", "check", "--traces", str(tmp_path / truth["files"]["parquet"][0]),
                 "--json-out", str(flags), "--summary", str(md)])
    assert code == 1  # (the error burst and the others)
    (inc,) = [i for i in truth["incidents"] if i["signal"] == "negative_feedback"]
    return json.loads(flags.read_text()), inc, md.read_text()


def test_bad_feedback_source_at_400_a_day_is_flagged_or_said_undecidable(tmp_path):
    """The issue's case: 12 days at 400 requests a day, the wiki source's feedback turns bad on day 10."""
    data, inc, md = _check(tmp_path, 400)
    day, seg = inc["start"][:10], "source=wiki"
    flagged = any(f["window"][:10] == day and f["segment"] == seg for f in data["flags"])
    (wiki,) = [p for p in data["power"] if p["monitor"] == "negative_feedback_rate" and p["segment"] == seg]
    said = {w["window"][:10]: w["status"] for w in wiki["undecided_windows"]}
    assert flagged or said.get(day) in ("underpowered", "too few rows", "thin baseline")
    assert not flagged  # (at this traffic it is the second: the statement must be there)
    assert 0 < next(w["n"] for w in wiki["undecided_windows"] if w["window"][:10] == day) < 20  # the votes it had
    assert not wiki["decides"] and wiki["detect"] == "2x"
    now = wiki["now"]
    assert 0 < now["detect_change"] < now["smallest_change"] < 1 and now["n"] > 0
    assert now["rows_needed"] is None or now["rows_needed"] > now["n"]
    row = next(line for line in md.splitlines() if line.startswith("| negative\\_feedback\\_rate | source=wiki |"))
    assert " pp | 2x: " in row and "too few rows" in row
    assert "Power (80%):" in md


@pytest.mark.slow
def test_bad_feedback_source_at_the_generators_volume_is_flagged(tmp_path):
    data, inc, _ = _check(tmp_path, 2000)
    assert (inc["start"][:10], "source=wiki") in {(f["window"][:10], f["segment"]) for f in data["flags"]}
    (wiki,) = [p for p in data["power"] if p["monitor"] == "negative_feedback_rate" and p["segment"] == "source=wiki"]
    assert inc["start"][:10] not in {w["window"][:10] for w in wiki["undecided_windows"]}  # flagged: seen
    others = {p["monitor"] for p in data["power"] if p["segment"] == "all" and not p["decides"]}
    assert others <= {"instability.rbo"}  # (the corpus change day has too few comparable lists)


def test_analyze_writes_the_power_to_summary_json(tmp_path):
    from trace_gen import Spec, generate

    truth = generate(tmp_path, Spec(days=7, per_day=300, seed=1), formats=("parquet",))
    assert main(["traces", "analyze", "--traces", str(tmp_path / truth["files"]["parquet"][0]),
                 "--out", str(tmp_path / "out")]) == 0
    power = json.loads((tmp_path / "out" / "summary.json").read_text())["monitor_power"]
    assert {p["monitor"] for p in power} >= {"negative_feedback_rate", "error_rate_per_1k", "latency.total.p95"}
    assert all(set(p) >= {"detect", "decides", "now", "undecided"} for p in power)
