"""bpref, infap, rbp and err: per-query values equal trec_eval v10's bit for bit (built from the oracle
source with full-precision output), trec_eval's own expected outputs, and, for err, which trec_eval
lacks, hand-computed values from the paper's definition and gdeval's outputs."""

from __future__ import annotations

import shutil
import subprocess
import tarfile
from collections import defaultdict
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rankgate
from rankgate.errors import MetricSpecError
from rankgate.metrics import parse_metric

from .conftest import shared_path, examples

# trec_eval measure (as -m takes it) -> our spec; rbp ignores -l in trec_eval, so it takes no rel here.
MEASURES = {"bpref": "bpref{rel}", "infAP": "infap{rel}", "rbp": "rbp", "rbp.p=0.5": "rbp(p=0.5)", "rbp.p=0.99": "rbp(p=0.99)"}


@pytest.fixture(scope="session")
def trec_eval(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """trec_eval 10.0 built from the oracle source in a temporary folder, printing %.17g (see the
    oracles' README); skips where there is no C compiler."""
    tarballs = sorted(shared_path("oracles").glob("trec_eval-*.tar.gz"))
    if not tarballs:
        pytest.skip("no trec_eval source in ../shared/oracles")
    if shutil.which("make") is None or shutil.which("gcc") is None:
        pytest.skip("building trec_eval needs make and gcc")
    root = tmp_path_factory.mktemp("trec_eval")
    with tarfile.open(tarballs[-1]) as tar:
        tar.extractall(root, filter="data")
    src = next(root.glob("trec_eval*"))
    for name in ("meas_print_single.c", "meas_print_final.c"):
        path = src / name
        path.write_text(path.read_text().replace("%6.4f", "%.17g"))
    subprocess.run(["make", "-s", "-j2", "-C", str(src)], check=True, capture_output=True)
    return src / "trec_eval"


def run_trec_eval(binary: Path, qrels: Path, run: Path, measure: str, *, level: int = 1) -> dict[str, float]:
    """Per-query values of one measure (``-q``, ``-c``: queries missing from the run score 0)."""
    out = subprocess.run([str(binary), "-q", "-c", f"-l{level}", "-m", measure, str(qrels), str(run)],
                         capture_output=True, text=True, check=True).stdout
    values = {}
    for line in out.splitlines():
        _, qid, value = line.split()
        if qid != "all":
            values[qid] = float(value)
    return values


def assert_same_as_trec_eval(binary: Path, qrels: Path, run: Path, *, level: int = 1) -> int:
    rel = "" if level == 1 else f"(rel={level})"
    specs = {m: s.format(rel=rel) for m, s in MEASURES.items()}
    result = rankgate.evaluate(str(qrels), str(run), sorted(set(specs.values())), trec=True, complete=True)
    index = result.query_index()
    checked = 0
    for measure, spec in specs.items():
        for qid, want in run_trec_eval(binary, qrels, run, measure, level=level).items():
            got = result[spec][index[qid]]
            assert got == want, f"{run.name} {measure} ({spec}) for {qid}: {got!r} vs trec_eval {want!r}"
            checked += 1
    return checked


@pytest.mark.parametrize("qrels,level", [("qrels.test", 1), ("qrels.rel_level", 1), ("qrels.rel_level", 2)])
def test_trec_eval_test_suite_bit_for_bit(trec_eval: Path, qrels: str, level: int) -> None:
    d = shared_path("fixtures", "trec_eval")
    assert assert_same_as_trec_eval(trec_eval, d / qrels, d / "results.test", level=level) == 3 * len(MEASURES)


@pytest.mark.parametrize("case", ["ties_docno_desc", "ties_partial", "extra_query_in_run", "no_relevant_docs", "graded",
                                  "negative_grades", "float32_collision", "short_run_vs_k", "missing_query_in_run"])
def test_edge_cases_bit_for_bit(trec_eval: Path, case: str) -> None:
    d = shared_path("fixtures", "edge_cases")
    assert assert_same_as_trec_eval(trec_eval, d / f"{case}.qrels", d / f"{case}.run") > 0


@pytest.mark.parametrize("name", ["input.rutcor03100.gz", "input.MU03rob01.gz"])
def test_robust03_runs_bit_for_bit(trec_eval: Path, tmp_path: Path, name: str) -> None:
    import gzip

    qrels = shared_path("fixtures", "robust03", "robust03_qrels.txt")
    run = tmp_path / name.removesuffix(".gz")  # trec_eval reads plain text
    run.write_bytes(gzip.decompress(shared_path("fixtures", "robust03", "runs", name).read_bytes()))
    assert assert_same_as_trec_eval(trec_eval, qrels, run) > 300


docs = st.sampled_from([f"d{i}" for i in range(10)])


@st.composite
def collections(draw):
    """Qrels with grades -1..3 (−1: pooled but unjudged), runs with many tied scores."""
    qrels, run = {}, {}
    for q in range(draw(st.integers(1, 4))):
        judged = draw(st.dictionaries(docs, st.integers(-1, 3), min_size=1, max_size=8))
        if max(judged.values()) < 0:  # trec_eval cannot compute a query judged only "pooled, unjudged"
            judged[draw(docs)] = draw(st.integers(0, 3))
        qrels[f"q{q}"] = judged
        retrieved = draw(st.lists(docs, unique=True, min_size=1, max_size=10))
        run[f"q{q}"] = {d: draw(st.integers(0, 8)) / 4 for d in retrieved}
    return qrels, run


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(collections(), st.sampled_from([1, 2]))
def test_generated_collections_bit_for_bit(trec_eval: Path, tmp_path: Path, data, level: int) -> None:
    qrels, run = data
    qpath, rpath = tmp_path / "qrels", tmp_path / "run"
    qpath.write_text("".join(f"{q} 0 {d} {g}\n" for q, j in qrels.items() for d, g in j.items()))
    rpath.write_text("".join(f"{q} Q0 {d} 0 {s!r} sys\n" for q, r in run.items() for d, s in r.items()))
    assert_same_as_trec_eval(trec_eval, qpath, rpath, level=level)


def parse_expected(path: Path) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = defaultdict(dict)
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] in ("bpref", "infAP", "rbp"):
            out[parts[0]][parts[1]] = float(parts[2])
    return out


@pytest.mark.parametrize("expected,qrels,run,level,complete", [
    ("out.test.aq", "qrels.test", "results.test", 1, False),
    ("out.test.aqc", "qrels.test", "results.trunc", 1, True),
    ("out.test.aql", "qrels.rel_level", "results.test", 2, False),
])
def test_trec_eval_expected_outputs(expected: str, qrels: str, run: str, level: int, complete: bool) -> None:
    """trec_eval's own expected outputs (4 decimals), no build needed: per query and the mean."""
    d = shared_path("fixtures", "trec_eval")
    want = parse_expected(d / expected)
    assert set(want) == {"bpref", "infAP", "rbp"}
    rel = "" if level == 1 else f"(rel={level})"
    specs = {"bpref": f"bpref{rel}", "infAP": f"infap{rel}", "rbp": "rbp"}
    result = rankgate.evaluate(str(d / qrels), str(d / run), list(specs.values()), trec=True, complete=complete)
    index = result.query_index()
    for measure, per_query in want.items():
        for qid, value in per_query.items():
            got = result.summary(specs[measure]).mean if qid == "all" else result[specs[measure]][index[qid]]
            assert round(got, 4) == pytest.approx(value, abs=1e-9), (expected, measure, qid, got, value)


# -- hand-computed values from the papers' definitions -------------------------------------------
def test_err_by_hand() -> None:
    """Chapelle et al. 2009, g_max = 3 (the gold set's highest grade): R(g) = (2^g − 1) / 8."""
    gold = {"a": {"x": 3, "y": 1, "z": 0}, "b": {"x": 2}}
    run = {"a": ["y", "n", "x", "z"], "b": ["n", "x"]}
    r = rankgate.evaluate(gold, run, ["err", "err@2", "err(max_grade=4)", "err(max_grade=2)"])
    r_y, r_x = 1 / 8, 7 / 8
    assert r["err"][0] == pytest.approx(r_y / 1 + (1 - r_y) * r_x / 3)
    assert r["err@2"][0] == pytest.approx(r_y)
    assert r["err"][1] == pytest.approx((3 / 8) / 2)  # grade 2 at rank 2, scale of the whole gold set
    assert r["err(max_grade=4)"][0] == pytest.approx(1 / 16 + (15 / 16) * (7 / 16) / 3)
    # grades above max_grade count as max_grade: x (3) is "perfect" at R = 3/4
    assert r["err(max_grade=2)"][0] == pytest.approx(1 / 4 + (3 / 4) * (3 / 4) / 3)


# gdeval.pl (the TREC Web track's ERR, maximum grade fixed at 4), as ir_measures 0.4.3 runs it and
# prints it (5 decimals), on trec_eval's test run: an implementation independent of this one.
GDEVAL_ERR = {
    "qrels.test": {"10": {"301": 0.01879, "302": 0.13425, "303": 0.0}, "20": {"301": 0.0275, "302": 0.1541, "303": 0.00329}},
    "qrels.rel_level": {"10": {"301": 0.01879, "302": 0.62265, "303": 0.0},
                        "20": {"301": 0.0275, "302": 0.62412, "303": 0.00987}},
}


@pytest.mark.parametrize("qrels", sorted(GDEVAL_ERR))
def test_err_equals_gdeval(qrels: str) -> None:
    d = shared_path("fixtures", "trec_eval")
    specs = {k: f"err(max_grade=4)@{k}" for k in GDEVAL_ERR[qrels]}
    result = rankgate.evaluate(str(d / qrels), str(d / "results.test"), list(specs.values()), trec=True)
    index = result.query_index()
    for k, per_query in GDEVAL_ERR[qrels].items():
        for qid, want in per_query.items():
            assert round(float(result[specs[k]][index[qid]]), 5) == want, (qrels, k, qid)


def test_err_scale_is_the_gold_sets_not_the_evaluated_queries() -> None:
    """In trec mode a gold query missing from the run is not evaluated; err's g_max still is the gold set's."""
    gold = {"a": {"x": 1}, "b": {"x": 3}}
    run = {"a": ["x"]}
    assert rankgate.evaluate(gold, run, ["err"], trec=True).means["err"] == pytest.approx(1 / 8)
    assert rankgate.evaluate(gold, run, ["err"]).values["err"][0] == pytest.approx(1 / 8)


def test_rbp_by_hand() -> None:
    """Moffat & Zobel 2008: binary RBP = (1 − p) Σ p^(i−1) r_i; graded as trec_eval: g / highest grade."""
    gold = {"a": {"x": 1, "y": 1, "z": 0}, "b": {"x": 4, "y": 2}}
    run = {"a": ["x", "n", "y"], "b": ["y", "x", "n"]}
    r = rankgate.evaluate(gold, run, ["rbp", "rbp(p=0.5)", "rbp(rel=3)", "rbp@1"])
    assert r["rbp"][0] == pytest.approx(0.1 * (1 + 0.81))
    assert r["rbp(p=0.5)"][0] == pytest.approx(0.5 * (1 + 0.25))
    assert r["rbp"][1] == pytest.approx(0.1 * (2 / 4 + 0.9 * 4 / 4))
    assert r["rbp(rel=3)"][1] == pytest.approx(0.1 * 0.9)
    assert r["rbp@1"][1] == pytest.approx(0.1 * 0.5)


def test_bpref_and_infap_by_hand() -> None:
    """bpref: R = 2 relevant, N = 3 judged non-relevant; the unjudged u and pooled-unjudged p are skipped."""
    gold = {"a": {"r1": 1, "r2": 1, "n1": 0, "n2": 0, "n3": 0, "p": -1}}
    run = {"a": ["n1", "u", "r1", "p", "n2", "r2"]}
    r = rankgate.evaluate(gold, run, ["bpref", "infap"])
    assert r["bpref"][0] == pytest.approx(((1 - 1 / 2) + (1 - 2 / 2)) / 2)
    eps = 1e-5
    # r1 at rank 3: 2 above, 1 of them in the pool (n1), 0 relevant and 1 non-relevant judged above
    p3 = 1 / 3 + (2 / 3) * (1 / 2) * ((0 + eps) / (0 + 1 + 2 * eps))
    # r2 at rank 6: 5 above, 4 in the pool (n1, r1, p, n2), 1 relevant and 2 non-relevant judged above
    p6 = 1 / 6 + (5 / 6) * (4 / 5) * ((1 + eps) / (1 + 2 + 2 * eps))
    assert r["infap"][0] == pytest.approx((p3 + p6) / 2)


@pytest.mark.parametrize("text", ["rbp", "rbp(p=0.8)", "rbp(p=0.5,rel=2)@10", "err@20", "err(max_grade=4)@10",
                                  "bpref", "bpref(rel=2)", "infap@100"])
def test_specs_round_trip(text: str) -> None:
    assert str(parse_metric(text)) == text
    assert str(parse_metric("infAP")) == "infap"


@pytest.mark.parametrize("bad,message", [("rbp(p=1)", "between 0.0 and 1.0"), ("rbp(p=0)", "between"),
                                         ("rbp(p=x)", "must be float"), ("err(max_grade=-1)", ">= 0")])
def test_bad_parameters(bad: str, message: str) -> None:
    with pytest.raises(MetricSpecError, match=message):
        parse_metric(bad)


def test_listed_by_the_metrics_command(capsys: pytest.CaptureFixture[str]) -> None:
    from rankgate.cli.main import main

    assert main(["metrics"]) == 0
    out = capsys.readouterr().out
    for name in ("bpref@k", "infap@k", "rbp@k", "err@k", "Chapelle", "Moffat", "trec_eval: rbp"):
        assert name in out, name
