"""User text in charts is plain text: a segment value or a file name is shown as typed, never parsed
as TeX (matplotlib's math text) and never breaks the SVG."""

from __future__ import annotations

import re

import pytest

from rankgate.render import charts
from rankgate.render.build import build_report
from rankgate.render.html import render_html
from rankgate.render.model import Curve

from .helpers import write_jsonl as _write
from .conftest import sampled

HOSTILE = ["$x$", "$x^$", "$\\alpha", "$\\foo$", "un$balanced", "$_$", "two\nlines", "<script>alert(1)</script>",
           "_leading_underscore", "a & b"]


def _files(tmp_path, name="$x$"):
    gold, run, base = [], [], []
    for i in range(24):
        q = f"q{i:02d}"
        gold.append({"query_id": q, "query": f"question {i}", "relevant_chunks": [f"d{i}#c1"],
                     "intent": HOSTILE[i % len(HOSTILE)]})
        hits = [f"d{(i + j) % 24}#c1" for j in range(i % 4, i % 4 + 10)]
        run.append({"query_id": q, "topk": [{"chunk_id": c, "score": 10.0 - j} for j, c in enumerate(hits)]})
        base.append({"query_id": q, "topk": [{"chunk_id": c, "score": 10.0 - j} for j, c in enumerate(hits[::-1])]})
    return (_write(tmp_path / "gold.jsonl", gold), _write(tmp_path / f"{name}.jsonl", run),
            _write(tmp_path / f"{name}-base.jsonl", base))


@pytest.mark.parametrize("label", sampled(HOSTILE))
def test_each_chart_draws_a_hostile_label_as_text(label):
    curve = Curve("recall", (1, 2, 3), (0.2, 0.4, 0.5), knee=2)
    svgs = [charts.sweep_svg([curve], [curve], run_label=label, baseline_label=label),
            charts.rank_histogram_svg([("1", 3), ("not found", 1)], [("1", 2), ("not found", 2)], run_label=label,
                                      baseline_label=label),
            charts.segment_svg([(label, 0.5, 0.4, 0.6, 3), ("other", 0.6, 0.5, 0.7, 4)], metric="recall@5", overall=0.55)]
    shown = charts.plain(label)
    escaped = shown.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    for svg in svgs[:2]:
        assert escaped in svg  # the legend names the run exactly as given
    assert escaped + "  (n=3)" in svgs[2]  # the segment's tick label
    for svg in svgs:
        assert "<script" not in svg


def test_report_with_dollar_signs_in_segments_and_file_names(tmp_path):
    gold, run, base = _files(tmp_path, name="$\\alpha$x")
    rep = build_report(str(gold), str(run), baseline=str(base), by=["intent"], resamples=50)
    html = render_html(rep)
    assert "$x^$  (n=" in html and "$\\foo$  (n=" in html and "two lines  (n=" in html
    assert "$\\alpha$x.jsonl" in html
    assert "<script>alert" not in html
    assert len(re.findall(r"<svg", html)) >= 3
