"""rankgate --trec against trec_eval v10's own test suite and edge cases (4-decimal outputs)."""

from __future__ import annotations

import re
from collections import defaultdict

import pytest

import rankgate
from rankgate.errors import InputError

from .conftest import shared_path

# trec_eval measure -> our spec; {k} is the cutoff parsed from the measure name.
SHARED_MEASURES = {
    r"map": "map",
    r"map_cut_(\d+)": "map@{k}",
    r"P_(\d+)": "precision@{k}",
    r"recall_(\d+)": "recall@{k}",
    r"ndcg": "ndcg",
    r"ndcg_cut_(\d+)": "ndcg@{k}",
    r"recip_rank": "mrr",
    r"success_(\d+)": "hit@{k}",
    r"Rprec": "rprec",
}


def parse_trec_eval_output(path) -> dict[str, dict[str, float]]:
    """{measure: {qid or 'all': value}} for the numeric measures of a `trec_eval -q` output."""
    out: dict[str, dict[str, float]] = defaultdict(dict)
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) != 3:
            continue
        try:
            out[parts[0]][parts[1]] = float(parts[2])
        except ValueError:
            continue
    return out


def our_spec(measure: str, rel: int) -> str | None:
    for pattern, template in SHARED_MEASURES.items():
        m = re.fullmatch(pattern, measure)
        if m:
            spec = template.format(k=m.group(1) if m.groups() else "")
            if rel != 1 and not spec.startswith("ndcg"):
                name, _, cut = spec.partition("@")
                spec = f"{name}(rel={rel})" + (f"@{cut}" if cut else "")
            return spec
    return None


def check_against(expected: dict[str, dict[str, float]], gold, run, *, rel: int = 1, complete: bool = False) -> int:
    specs = {m: our_spec(m, rel) for m in expected}
    specs = {m: s for m, s in specs.items() if s is not None}
    metrics = sorted(set(specs.values()))
    result = rankgate.evaluate(str(gold), str(run), metrics, trec=True, complete=complete)
    index = result.query_index()
    checked = 0
    for measure, spec in specs.items():
        values = result[spec]
        for qid, want in expected[measure].items():
            if qid == "all":
                got = result.summary(spec).mean
            else:
                got = values[index[qid]]
            assert round(got, 4) == pytest.approx(want, abs=1e-9), f"{measure} ({spec}) for {qid}: {got} vs {want}"
            checked += 1
    return checked


def test_all_trec_per_query():
    d = shared_path("fixtures", "trec_eval")
    n = check_against(parse_trec_eval_output(d / "out.test.aq"), d / "qrels.test", d / "results.test")
    assert n > 150


def test_complete_averaging_with_missing_topic():
    d = shared_path("fixtures", "trec_eval")
    n = check_against(parse_trec_eval_output(d / "out.test.aqc"), d / "qrels.test", d / "results.trunc", complete=True)
    assert n > 150


def test_relevance_level_two():
    d = shared_path("fixtures", "trec_eval")
    n = check_against(parse_trec_eval_output(d / "out.test.aql"), d / "qrels.rel_level", d / "results.test", rel=2)
    assert n > 150


def test_comment_lines_and_hash_ids():
    d = shared_path("fixtures", "trec_eval")
    check_against(parse_trec_eval_output(d / "out.test"), d / "qrels.test.with-comments", d / "results.test")
    check_against(parse_trec_eval_output(d / "out.comment.test"), d / "qrels.comment.test", d / "results.comment.test")


EDGE_CASES = ["ties_docno_desc", "ties_partial", "extra_query_in_run", "no_relevant_docs", "graded",
              "negative_grades", "float32_collision", "short_run_vs_k", "missing_query_in_run"]


@pytest.mark.parametrize("case", EDGE_CASES)
@pytest.mark.parametrize("complete", [False, True])
def test_edge_cases_v10(case, complete):
    d = shared_path("fixtures", "edge_cases")
    suffix = "v10_c" if complete else "v10"
    expected = parse_trec_eval_output(d / f"{case}.expected.{suffix}.txt")
    if not expected:
        pytest.skip(f"trec_eval v10 produced no output for {case} ({suffix})")
    check_against(expected, d / f"{case}.qrels", d / f"{case}.run", complete=complete)


def test_duplicate_doc_is_refused_like_trec_eval():
    d = shared_path("fixtures", "edge_cases")
    with pytest.raises(InputError, match="more than once"):
        rankgate.evaluate(str(d / "duplicate_doc_in_run.qrels"), str(d / "duplicate_doc_in_run.run"), ["map"], trec=True)


def test_reference_values_full_precision():
    import json

    for name, gold, run, rel in [
        ("trec_eval_test.json", ("trec_eval", "qrels.test"), ("trec_eval", "results.test"), 1),
        ("trec_eval_rel_level_l2.json", ("trec_eval", "qrels.rel_level"), ("trec_eval", "results.test"), 2),
    ]:
        ref = json.loads(shared_path("fixtures", "reference_values", name).read_text())
        per_query = ref["per_query"]
        measures = sorted({m for v in per_query.values() for m in v})
        specs = {m: our_spec(m, rel) for m in measures}
        specs = {m: s for m, s in specs.items() if s}
        result = rankgate.evaluate(str(shared_path("fixtures", *gold)), str(shared_path("fixtures", *run)),
                                   sorted(set(specs.values())), trec=True)
        index = result.query_index()
        assert len(specs) >= 10
        for qid, values in per_query.items():
            for m, spec in specs.items():
                if m in values:
                    assert result[spec][index[qid]] == pytest.approx(values[m], abs=1e-9), (name, qid, m)
