"""The report's Python entry: ``report(gold, run, scoring=, statistics=, …)``, and ``build_report`` (its loose
keywords, kept for one release) giving the same report; the flow scores every run with one scorer and keeps the
run's Evaluation."""

from __future__ import annotations

from pathlib import Path

import pytest

from rankgate.errors import UsageError
from rankgate.flows.evaluate import Evaluation, Scoring, Statistics
from rankgate.render.build import build_report, report
from rankgate.render.html import render_html, write_report

from .helpers import write_jsonl

DATA = Path(__file__).parent / "data" / "report"
GOLD, RUN, BASE, BM25 = (str(DATA / n) for n in ("gold.jsonl", "run.jsonl", "base.jsonl", "bm25.jsonl"))
CONFIG = str(DATA / "ship-criteria.yaml")


def test_report_and_build_report_give_the_same_report():
    page = {"baseline": BASE, "lexical": BM25, "by": ["lang"], "config": CONFIG, "min_score": 12.0,
            "metrics": ["map"], "top_misses": 3, "title": "T"}
    old = build_report(GOLD, RUN, k=10, ties="id", dedupe="first", seed=3, resamples=120, confidence=0.9, **page)
    new = report(GOLD, RUN, scoring=Scoring(k=10, ties="id", dedupe="first"),
                 statistics=Statistics(seed=3, resamples=120, confidence=0.9), **page)
    assert repr(new) == repr(old)  # (every field; NaN compares unequal, its repr does not)
    assert render_html(new) == render_html(old)
    assert new.k == 10 and new.seed == 3 and new.confidence == 0.9 and new.gate is not None


@pytest.mark.slow  # (the full tier: heavy, and what it guards is covered lighter by default)
def test_write_report_takes_either_form(tmp_path):
    a, b = tmp_path / "a.html", tmp_path / "b.html"
    write_report(str(a), GOLD, RUN, by=["lang"], statistics=Statistics(resamples=50, seed=1))
    write_report(str(b), GOLD, RUN, by=["lang"], resamples=50, seed=1)  # (build_report's keywords, for one release)
    assert a.read_bytes() == b.read_bytes()


def test_without_a_scoring_the_config_says_how_runs_are_scored(tmp_path):
    cfg = tmp_path / "ship.yaml"
    cfg.write_text("evaluate:\n  k: 10\n  ties: id\ngates:\n  - metric: recall@10\n    threshold: 0.5\n",
                   encoding="utf-8")
    stats = Statistics(resamples=0)
    assert report(GOLD, RUN, config=str(cfg), statistics=stats).k == 10
    assert report(GOLD, RUN, config=str(cfg), statistics=stats, scoring=Scoring(k=3)).k == 3  # (used as it is)
    assert build_report(GOLD, RUN, config=str(cfg), resamples=0).k == 10
    assert build_report(GOLD, RUN, config=str(cfg), resamples=0, k=3).k == 3


def test_build_report_refuses_what_a_scoring_cannot_hold(tmp_path):
    with pytest.raises(UsageError, match="no evaluator"):
        build_report(GOLD, RUN, evaluator=lambda g, r, m, lvl: None)
    with pytest.raises(UsageError, match="doc_map is a file"):
        build_report(GOLD, RUN, doc_map={"doc_export#c1": "doc_export"})
    with pytest.raises(UsageError, match="build_report was given the option 'kk'"):
        build_report(GOLD, RUN, kk=1)
    gold = tmp_path / "gold.csv"
    gold.write_text("qid,doc,rel\nq1,a,1\nq2,c,1\n", encoding="utf-8")
    run = tmp_path / "run.csv"
    run.write_text("qid,doc,score\nq1,a,3\nq1,x,2\nq2,y,5\nq2,c,4\n", encoding="utf-8")
    cols = {"query_id": "qid", "chunk_id": "doc", "grade": "rel"}  # (a mapping: written as the --columns text)
    assert build_report(str(gold), str(run), columns=cols, resamples=0).counts["evaluated"] == 2


def test_the_flow_keeps_the_runs_evaluation_and_says_each_warning_once(tmp_path):
    from rankgate.flows.report import ReportRequest, run_report

    gold = write_jsonl(tmp_path / "g.jsonl", [{"query_id": f"q{i}", "relevant_chunks": [f"d{i}#c1"]} for i in range(6)])
    # tied scores: each query ordered differently by the two tie rules, a line said once however often the run is scored
    run = write_jsonl(tmp_path / "r.jsonl", [{"query_id": f"q{i}", "topk": [
        {"chunk_id": f"d{i}#c1", "score": 1.0}, {"chunk_id": f"x{i}#c1", "score": 1.0}]} for i in range(6)])
    heard: list[str] = []
    ev = run_report(ReportRequest(str(gold), str(run), Scoring(ties="id"), Statistics(resamples=30), baseline=str(run),
                                  lexical=str(run)), on_warning=heard.append)
    assert isinstance(ev.main, Evaluation) and ev.main.warnings == ev.warnings == tuple(heard)
    assert heard and len(heard) == len(set(heard)), heard
    assert set(ev.shown.panel) <= set(ev.main.cis or {}) and ev.main.request.statistics.resamples == 30
    assert ev.freshness is None and dict(ev.components) == {} and ev.main.bounds is None
