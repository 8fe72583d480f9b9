"""calibrate-abstention: the fixed-sequence Clopper–Pearson procedure, against hand-computed values and scipy."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import yaml
from scipy import stats as sps

from rankgate.cli.main import main
from rankgate.traces.abstention import calibrate, top_scores


def reference(scores, correct, target, delta, min_answered=30, levels=51):
    """Plain-Python statement of the procedure, with scipy's beta quantile."""
    seen = sorted(s for s in scores if not math.isnan(s))
    grid = []
    for j in range(levels):
        level = 1 - j / (levels - 1)
        v = seen[math.floor(level * (len(seen) - 1) + 1e-9)]  # the 'lower' quantile: an observed score
        if v not in grid:
            grid.append(float(v))
    grid.sort(reverse=True)
    best = None
    for t in grid:
        ans = [c for s, c in zip(scores, correct) if not math.isnan(s) and s >= t]
        m, k = len(ans), sum(ans)
        if m < min_answered:
            continue
        lb = 0.0 if k == 0 else sps.beta.ppf(delta, k, m - k + 1)
        if lb < target:
            break
        best = (t, m, k, lb)
    return best


def test_all_correct_bound_is_delta_to_the_one_over_m():
    scores = np.arange(101) / 100.0  # the grid's quantile levels land on 1.00, 0.98, …, 0.00 exactly
    correct = scores >= 0.5
    cal = calibrate(scores, correct, target_precision=0.9, delta=0.05)
    step = next(s for s in cal.curve if s.threshold == 0.5)
    assert step.answered == 51 and step.correct == 51
    assert step.lower_bound == pytest.approx(0.05 ** (1 / 51), abs=1e-12)  # k = m: LB = delta^(1/m)
    assert step.passed
    # looser steps add wrong answers; the first failure stops the walk
    ref = reference(scores.tolist(), correct.tolist(), 0.9, 0.05)
    assert cal.threshold == ref[0] and cal.answered == ref[1] and cal.lower_bound == pytest.approx(ref[3], abs=1e-10)
    assert cal.coverage == cal.answered / 101 and cal.precision == ref[2] / ref[1]
    failed = [s for s in cal.curve if s.passed is False]
    assert len(failed) == 1 and failed[0].threshold < cal.threshold
    assert all(s.lower_bound is None for s in cal.curve if s.threshold < failed[0].threshold)


def test_steps_with_fewer_than_30_answered_are_not_tested():
    cal = calibrate(np.arange(100) / 100.0, np.ones(100, bool))
    assert [s.passed for s in cal.curve if s.answered < 30] == [None] * sum(s.answered < 30 for s in cal.curve)
    assert cal.threshold == 0.0 and cal.coverage == 1.0


@pytest.mark.parametrize("seed", range(6))
def test_matches_reference_on_random_data(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(80, 600))
    s = np.round(rng.random(n), 3)
    y = rng.random(n) < s ** 0.3
    s[rng.random(n) < 0.05] = np.nan  # queries the run did not answer
    target, delta = [0.8, 0.9, 0.95][seed % 3], [0.05, 0.1][seed % 2]
    cal = calibrate(s, y, target_precision=target, delta=delta)
    ref = reference(s.tolist(), y.tolist(), target, delta)
    if ref is None:
        assert cal.threshold is None
    else:
        assert (cal.threshold, cal.answered) == (ref[0], ref[1])
        assert cal.lower_bound == pytest.approx(ref[3], abs=1e-9)
    for st in cal.curve:
        if st.lower_bound is not None and st.correct:
            assert st.lower_bound == pytest.approx(sps.beta.ppf(delta, st.correct, st.answered - st.correct + 1),
                                                   abs=1e-9)


def _files(tmp_path, n=200, seed=0, noanswer=0):
    rng = np.random.default_rng(seed)
    g, r = tmp_path / "gold.jsonl", tmp_path / "run.jsonl"
    with open(g, "w") as gf, open(r, "w") as rf:
        for i in range(n):
            conf = float(rng.random())
            if i < noanswer:
                gf.write(json.dumps({"query_id": f"q{i}", "relevant_chunks": [], "no_answer": True}) + "\n")
            else:
                gf.write(json.dumps({"query_id": f"q{i}", "relevant_chunks": [{"chunk_id": f"c{i}", "grade": 1}]})
                         + "\n")
            docs = [{"id": f"x{i}_{j}", "score": round(conf - 0.01 * j, 4)} for j in range(8)]
            if rng.random() < conf:
                docs[int(rng.integers(0, 5))]["id"] = f"c{i}"
            if i != n - 1:  # the last query is missing from the run
                rf.write(json.dumps({"query_id": f"q{i}", "results": docs}) + "\n")
    return g, r


def test_top_scores_no_answer_and_missing_queries(tmp_path):
    g, r = _files(tmp_path, n=50, noanswer=3)
    s, y, ids = top_scores(str(g), str(r), 5)
    assert len(ids) == 50 and math.isnan(s[-1]) and not y[-1]
    assert not y[:3].any()  # no-answer queries are never correct answers
    rows = [json.loads(x) for x in open(r)]
    assert s[5] == max(d["score"] for d in rows[5]["results"])


def test_cli_writes_the_contract_yaml(tmp_path, capsys):
    g, r = _files(tmp_path, n=400)
    out = tmp_path / "abstention.yaml"
    code = main(["calibrate-abstention", "--gold", str(g), "--run", str(r), "--target-precision", "0.8", "-o", str(out)])
    assert code == 0, capsys.readouterr()
    data = yaml.safe_load(out.read_text())
    a = data["abstention"]
    assert list(a) == ["threshold", "metric", "target_precision", "delta", "n", "answered", "coverage", "precision",
                       "lower_bound", "score_field", "gold", "run"]
    assert a["metric"] == "hit@5" and a["n"] == 400 and a["lower_bound"] >= 0.8 and len(a["gold"]) == 64
    assert "abstain when the top score is below" in capsys.readouterr().out
    code = main(["calibrate-abstention", "--gold", str(g), "--run", str(r), "--target-precision", "0.999",
                 "-o", str(out)])
    assert code == 1 and yaml.safe_load(out.read_text())["abstention"]["threshold"] is None


def test_cli_refuses_bad_options(tmp_path, capsys):
    from .hostile import assert_refused

    g, r = _files(tmp_path, n=40)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    assert_refused(["calibrate-abstention", "--gold", str(g), "--run", str(r), "--target-precision", "1.5",
                    "-o", str(out_dir / "a.yaml")], out_dir, names=["target-precision"], capsys=capsys)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"query_id": "q1", "results": [{"id": "a", "score": "high"}]}\n')
    assert_refused(["calibrate-abstention", "--gold", str(g), "--run", str(bad), "-o", str(out_dir / "a.yaml")],
                   out_dir, names=["bad.jsonl"], capsys=capsys)


def test_report_shows_the_abstention_section(tmp_path, capsys):
    from .hostile import assert_refused

    g, r = _files(tmp_path, n=300)
    ab = tmp_path / "abstention.yaml"
    assert main(["calibrate-abstention", "--gold", str(g), "--run", str(r), "--target-precision", "0.8",
                 "-o", str(ab)]) == 0
    html = tmp_path / "report.html"
    assert main(["report", "--gold", str(g), "--run", str(r), "--abstention", str(ab), "--resamples", "50",
                 "-o", str(html)]) == 0
    text = html.read_text()
    section = text[text.index('<section id="abstention">'):]
    section = section[:section.index("</section>")]
    a = yaml.safe_load(ab.read_text())["abstention"]
    assert "Abstain when the top score is below" in section and f"{a['answered']} of 300" in section
    assert 'aria-label="risk–coverage curve' in section and '<a href="#abstention">Abstention</a>' in text
    assert '<section id="abstention">' not in (tmp_path / "plain.html").read_text() if main(
        ["report", "--gold", str(g), "--run", str(r), "--resamples", "50", "-o", str(tmp_path / "plain.html")]) == 0 \
        else False
    ab.write_text("nothing: here\n")
    out_dir = tmp_path / "o"
    out_dir.mkdir()
    assert_refused(["report", "--gold", str(g), "--run", str(r), "--abstention", str(ab), "--resamples", "50",
                    "-o", str(out_dir / "r.html")], out_dir, names=["abstention.yaml"], capsys=capsys)
