"""rankgate report: the HTML file's content, its determinism and self-containment, and the CLI."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from rankgate.cli.main import main
from rankgate.render.build import build_report, sweep_ks
from rankgate.render.html import render_html

DATA = Path(__file__).parent / "data" / "report"
ARGS = {"baseline": str(DATA / "base.jsonl"), "lexical": str(DATA / "bm25.jsonl"), "by": ["lang", "intent"],
        "config": str(DATA / "ship-criteria.yaml"), "resamples": 300}


@pytest.fixture(scope="module")
def full():
    return build_report(str(DATA / "gold.jsonl"), str(DATA / "run.jsonl"), **ARGS)


@pytest.fixture(scope="module")
def html(full):
    return render_html(full)


def test_same_inputs_give_byte_identical_html(full, html):
    again = build_report(str(DATA / "gold.jsonl"), str(DATA / "run.jsonl"), **ARGS)
    assert render_html(again) == html


def test_self_contained(html):
    # nothing the browser would fetch: no external src/href, no @import, no url() but data:
    assert not re.search(r"""(src|href)\s*=\s*["'](?!#)""", html)
    assert "@import" not in html
    assert not re.search(r"url\((?!#)", html)
    assert "Content-Security-Policy" in html and "default-src 'none'" in html
    assert html.count("<svg") >= 3  # k-sweep, rank histogram, one forest plot per segment field


def test_header_says_what_was_evaluated(full, html):
    assert dict(full.facts)["system"] == "hybrid-v3 + rerank-base"
    assert dict(full.facts)["index version"] == "idx-2026-05-01"
    assert '"algo": "sentences"' in dict(full.facts)["chunker"]
    assert dict(full.facts)["corpus version (gold)"] == "2026-05-01"
    roles = [role for role, _, sha in full.inputs if sha]
    assert roles == ["gold", "run", "baseline", "lexical baseline"]
    assert 'id="verdict"' in html and "Gate failed" in html  # forbidden@5 max 0 fails


def test_panel_has_the_seed_metrics_with_cis_and_deltas(full):
    assert [r.metric for r in full.panel] == ["recall@1", "recall@3", "recall@5", "ndcg@5", "precision@5",
                                              "distinct_docs@5", "mrr"]
    r5 = next(r for r in full.panel if r.metric == "recall@5")
    assert r5.ci_low <= r5.mean <= r5.ci_high
    assert r5.baseline == pytest.approx(9 / 13) and r5.delta == pytest.approx(10 / 13 - 9 / 13)
    assert r5.verdict in ("better", "worse", "within noise")
    assert [lat.stage for lat in full.latency] == ["retrieve", "rerank", "total"]


def test_sweep_curves_knee_and_baseline(full):
    assert full.curves[0].ks == sweep_ks(15) == tuple(range(1, 16))  # never past the run's depth (15)
    assert [c.metric for c in full.curves] == ["recall", "ndcg"]
    assert [c.metric for c in full.baseline_curves] == ["recall", "ndcg"]
    assert full.curves[0].knee is not None


def test_top_misses_list_gold_and_what_came_back(full):
    assert [m.query_id for m in full.misses] == ["q03", "q09", "q10"]
    q03 = full.misses[0]
    assert q03.first_relevant_rank == 14
    assert q03.gold[0].chunk_id == "doc_sso#c1" and q03.gold[0].note == "SSO on Business and Enterprise"
    assert q03.gold[0].rank == 14
    assert len(q03.retrieved) == 10 and q03.retrieved[0].snippet.startswith("Workspaces are backed up")
    assert q03.lexical_rank == 5 and q03.lexical[4].grade == 3
    assert full.misses[1].first_relevant_rank == 0  # q09: not retrieved at all


def test_forbidden_stale_stages_sources(full):
    assert [o.query_id for o in full.offences_forbidden] == ["q12"]
    assert [o.query_id for o in full.offences_stale] == ["q13", "q14"]
    assert full.stages.k_raw == 20 and full.stages.queries == 15
    metrics = [m for m, _, _ in full.stages.rows]
    assert metrics == ["recall@20", "mrr@20", "recall@5", "ndcg@5", "precision@5"]
    assert {s.source for s in full.sources} == {"dense", "keyword"} and full.sources_from == "raw_topk"


def test_segments_colour_what_the_gate_fails_and_nothing_it_passes(full, html):
    assert full.floors == {"recall@5": 0.75}
    pt = full.segments.get("tags.lang", "pt", "recall@5")
    assert pt.ci_low < 0.75
    assert re.search(r'<tr class="fail"><td data-v="pt">pt</td>', html), "the gate fails pt: its row is red"
    assert re.search(r'<tr><td data-v="en">en</td>', html), "the gate passes en: no colour"
    # intents are not gated per segment and no intent's whole CI lies below the floor: no colour either
    assert re.search(r'<tr><td data-v="billing">billing</td>', html)
    assert 'class="flag"' not in html


def test_no_answer_and_false_evidence(full):
    assert full.false_evidence_metric == "false_evidence@5"
    assert full.false_evidence_rate == 1.0
    assert {x.query_id for x in full.no_answer} == {"q14", "q15"}


def test_findings_are_rendered_with_their_evidence(full, html):
    rules = [f.rule for f in full.findings]
    assert "forbidden" in rules and "lexical_rescue" in rules and "ranked_low" in rules
    for f in full.findings:
        assert f'data-rule="{f.rule}"' in html


def test_user_text_is_escaped():
    gold = [{"query_id": "q<1>", "query": "<script>alert(1)</script>", "relevant_chunks": ["a#c1"]}]
    run = [{"query_id": "q<1>", "topk": [{"chunk_id": "b#c1", "score": 1.0, "text": "</table><b>x</b>"}]}]
    html = render_html(build_report(gold, run, resamples=0))
    assert "<script>alert" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<b>x</b>" not in html


def test_cli_writes_the_report(tmp_path, capsys):
    out = tmp_path / "r.html"
    code = main(["report", "--gold", str(DATA / "gold.jsonl"), "--run", str(DATA / "run.jsonl"), "--baseline",
                 str(DATA / "base.jsonl"), "--by", "lang", "--config", str(DATA / "ship-criteria.yaml"),
                 "--compare-bm25", str(DATA / "bm25.jsonl"), "--resamples", "300", "--generated-at", "build 42",
                 "-o", str(out)])
    assert code == 0
    text = out.read_text(encoding="utf-8")
    assert "build 42" in text and "Top misses" in text
    assert "gate failed" in capsys.readouterr().out
    # the same command again gives the same bytes
    again = tmp_path / "r2.html"
    main(["report", "--gold", str(DATA / "gold.jsonl"), "--run", str(DATA / "run.jsonl"), "--baseline",
          str(DATA / "base.jsonl"), "--by", "lang", "--config", str(DATA / "ship-criteria.yaml"),
          "--compare-bm25", str(DATA / "bm25.jsonl"), "--resamples", "300", "--generated-at", "build 42", "-o", str(again)])
    assert again.read_bytes() == out.read_bytes()


def test_cli_input_error_is_one_line(tmp_path, capsys):
    code = main(["report", "--gold", str(DATA / "gold.jsonl"), "--run", str(tmp_path / "nope.jsonl"), "-o",
                 str(tmp_path / "r.html")])
    assert code == 2
    err = capsys.readouterr().err
    assert "nope.jsonl" in err and err.count("\n") == 1
    assert not (tmp_path / "r.html").exists()


def test_report_command_imports_nothing_heavy():
    import subprocess

    code = ("import sys; import rankgate.cli.main as c; c.build_parser(); "
            "print(','.join(m for m in ('matplotlib', 'numpy', 'pyarrow', 'rich') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert "matplotlib" not in out


def test_trec_mode_does_not_list_no_answer_queries_as_misses():
    rep = build_report(str(DATA / "gold.jsonl"), str(DATA / "run.jsonl"), trec=True, resamples=0)
    assert [m.query_id for m in rep.misses] == ["q03", "q09", "q10"]


def test_terminal_panel_says_why_a_clear_change_is_not_significant():
    import io

    from rich.console import Console

    from rankgate.stats.paired import DeltaRow
    from rankgate.render.panel import retrieval_panel

    change = DeltaRow(metric="recall@5", field=None, segment=None, n=13, baseline=0.5, candidate=0.6, delta=0.1,
                   ci_low=0.02, ci_high=0.2, p_value=0.01, p_holm=0.12, family=12)

    class Cmp:  # a comparison whose one change has a CI clear of 0 and a Holm p of 0.12 over 12 metric rows
        confidence = 0.95
        rows = [change]
        holm_families = ((None, 12),)

        def row(self, m):
            return change

    from rankgate.scoring.engine import evaluate

    res = evaluate(str(DATA / "gold.jsonl"), str(DATA / "run.jsonl"), ["recall@5"])
    console = Console(width=200, record=True, file=io.StringIO(), color_system=None)
    console.print(retrieval_panel(res, {"recall@5": (0.5, 0.9)}, comparison=Cmp()))
    text = console.export_text()
    assert "not significant after correcting for 12 comparisons" in text
    assert "Holm-corrected across the 12 metric rows" in text and "within noise" not in text


def test_an_empty_list_without_a_title_reads_as_a_sentence():
    gold = [{"query_id": "q1", "query": "anything", "relevant_chunks": ["a#c1"]},
            {"query_id": "q2", "query": "no answer here", "relevant_chunks": [], "no_answer": True}]
    run = [{"query_id": "q1", "topk": ["a#c1"]}, {"query_id": "q2", "topk": []}]
    html = render_html(build_report(gold, run, resamples=0))
    assert ": nothing retrieved." not in html
    assert '<p class="muted">Nothing retrieved.</p>' in html
