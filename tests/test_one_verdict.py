"""One verdict in every output: ``rankgate compare`` (terminal, markdown, JSON), ``rankgate report`` (the HTML panel)
and ``rankgate gate`` (the JSON outcome and the PR comment) word each change of one pair of runs alike, and adding
``--by`` changes no headline verdict (segment rows are a Holm family of their own).

The rule itself (:func:`rankgate.stats.verdict.verdict`) is checked on hand-computed numbers first.
"""

from __future__ import annotations

import html
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

from rankgate.stats.bootstrap import holm
from rankgate.stats.verdict import correction_line, not_significant, verdict

NAN = math.nan


# -- the rule, on hand-computed numbers -----------------------------------------------------------
def test_worse_when_the_corrected_p_is_below_alpha():
    # three metric rows with raw p 0.004, 0.02, 0.30: Holm multiplies the smallest by 3 -> 0.012 < 0.05
    adjusted = holm([0.004, 0.02, 0.30]).tolist()
    assert adjusted == pytest.approx([0.012, 0.04, 0.30])
    assert verdict(-0.12, -0.20, -0.05, 0.004, adjusted[0], 3) == "worse"
    assert verdict(+0.12, 0.05, 0.20, 0.004, adjusted[0], 3) == "better"
    # lower is better (a latency, forbidden@k): a rise is worse
    assert verdict(+0.12, 0.05, 0.20, 0.004, adjusted[0], 3, higher_is_better=False) == "worse"


def test_not_significant_when_the_interval_excludes_zero_but_the_corrected_p_does_not():
    # raw p 0.02 alone would be "worse"; over 36 rows Holm gives at least 0.02 * 36 = 0.72 for it
    adjusted = holm([0.02] + [0.5] * 35)
    assert adjusted[0] == pytest.approx(0.72)
    word = verdict(-0.295, -0.477, -0.136, 0.02, float(adjusted[0]), 36)
    assert word == "not significant after correcting for 36 comparisons" == not_significant(36)
    # the same change tested alone: no correction, so "worse"
    assert verdict(-0.295, -0.477, -0.136, 0.02, 0.02, 1) == "worse"
    # one row whose test and interval disagree: nothing was corrected, and the phrase says only that
    assert verdict(-0.1, -0.2, -0.01, 0.06, 0.06, 1) == "not significant"
    # α follows the confidence: at 90% (α 0.10) a corrected p of 0.08 is "worse"
    assert verdict(-0.1, -0.2, -0.01, 0.02, 0.08, 4, confidence=0.90) == "worse"
    assert verdict(-0.1, -0.2, -0.01, 0.02, 0.08, 4, confidence=0.95) == not_significant(4)


def test_within_noise_only_when_the_interval_includes_zero():
    assert verdict(-0.05, -0.12, +0.02, 0.20, 0.60, 3) == "within noise"
    # a corrected p below α with an interval touching 0 is still "worse": the test decides, the interval only
    # says whether a "not significant" change looked real on its own
    assert verdict(-0.05, -0.12, 0.0, 0.01, 0.03, 3) == "worse"
    # without intervals, the uncorrected p plays the interval's part
    assert verdict(-0.05, NAN, NAN, 0.20, 0.60, 3) == "within noise"
    assert verdict(-0.05, NAN, NAN, 0.01, 0.09, 3) == not_significant(3)


def test_unchanged_na_and_p_values_off():
    assert verdict(0.0, 0.0, 0.0, 1.0, 1.0, 3) == "unchanged"
    assert verdict(NAN, NAN, NAN, NAN, NAN, 3, n=0) == "n/a"
    assert verdict(0.1, 0.05, 0.2, NAN, NAN, 3, n=0) == "n/a"
    # p-values off (0 permutations): the interval decides
    assert verdict(-0.1, -0.2, -0.01, NAN, NAN, 3) == "worse"
    assert verdict(-0.1, -0.2, +0.01, NAN, NAN, 3) == "within noise"


def test_the_correction_line_names_each_family():
    assert correction_line(3, [("area", 36)]) == ("Holm-corrected across the 3 metric rows; each field's segments "
                                                  "apart: across 36 segment rows (area)")
    assert correction_line(1, []) == "Holm-corrected across the 1 metric row"


# -- one pair of runs, every output -----------------------------------------------------------------
AREAS = ("auth", "billing", "search", "export")
METRICS = ("recall@1", "recall@3", "recall@5", "ndcg@5", "precision@5", "distinct_docs@5", "mrr")


def _write_pair(tmp: Path) -> dict[str, Path]:
    """40 queries, 10 per area, one relevant chunk each. The candidate moves the relevant chunk from rank 1 to
    rank 3 for every auth query and half the billing ones (a clear drop in recall@1, nDCG@5 and MRR), lifts two
    search queries from rank 2 to 1, and keeps every list's items (recall@3, @5, precision@5 and distinct docs
    unchanged)."""
    gold, base, cand = [], [], []
    for i in range(40):
        q, area = f"q{i:02d}", AREAS[i // 10]
        gold.append({"query_id": q, "query": f"question {i}", "relevant_chunks": [f"d{i}#c1"], "tags": {"area": area}})
        items = [f"d{i}#c1"] + [f"n{i}_{j}#c1" for j in range(4)]
        b_rank = 2 if area == "search" and i % 5 == 0 else 1
        c_rank = 3 if area == "auth" or (area == "billing" and i % 2 == 0) else 1
        if area == "search":
            c_rank = 1

        def ranked(rank: int, items: list[str] = items) -> list[dict]:
            order = items[1:rank] + [items[0]] + items[rank:]
            return [{"chunk_id": c, "score": 10.0 - r} for r, c in enumerate(order)]

        base.append({"query_id": q, "topk": ranked(b_rank)})
        cand.append({"query_id": q, "topk": ranked(c_rank)})
    paths = {}
    for name, rows in (("gold", gold), ("base", base), ("cand", cand)):
        paths[name] = tmp / f"{name}.jsonl"
        paths[name].write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return paths


def _config(tmp: Path, segments: bool) -> Path:
    lines = ["gates:"]
    for m in METRICS:
        lines += [f"  - name: g_{m.replace('@', '_')}", f"    metric: {m}", "    regression_max: 0.5"]
        if segments:
            lines.append("    segments: [area]")
    lines.append("defaults: {seed: 0, resamples: 1000, confidence: 0.95}")
    path = tmp / f"criteria-{segments}.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _terminal_verdicts(text: str) -> dict[str, str]:
    """The verdict at the end of each metric's line of the compare table (a wide terminal: no wrapping)."""
    out = {}
    for line in text.splitlines():
        for m in METRICS:
            if line.startswith(m + " "):
                tail = line.rstrip()
                out[m] = next(w for w in _ALL_WORDS if tail.endswith(" " + w))
    return out


_ALL_WORDS = sorted({"better", "worse", "within noise", "unchanged", "n/a",
                     *(not_significant(n) for n in range(1, 200))}, key=len, reverse=True)


def _markdown_verdicts(md: str) -> dict[str, str]:
    out = {}
    for line in md.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        name = cells[0].replace("\\", "")
        if name in METRICS:
            out[name] = cells[-1]
    return out


def _html_verdicts(page: str) -> dict[str, str]:
    out = {}
    for m in METRICS:
        row = re.search(r'<td class="metric"[^>]*><code>' + re.escape(m) + r"</code></td>(.*?)</tr>", page, re.S)
        assert row, m
        out[m] = html.unescape(re.findall(r"<td[^>]*>([^<]*)</td>", row.group(1))[-1])
    return out


def _comment_verdicts(md: str) -> dict[str, str]:
    out = {}
    for line in md.replace("\\_", "_").splitlines():
        for m in METRICS:
            if f"<sub>{m}</sub>" in line:
                change = [c.strip() for c in line.strip("|").split("|")][3]
                out[m] = change.split("<br>")[1]
    return out


def _run(main, capsys, args: list[str]) -> str:
    code = main(args)
    out = capsys.readouterr().out
    assert code in (0, 1), (args, out)
    return out


@pytest.fixture()
def pair(tmp_path: Path) -> dict[str, Path]:
    return _write_pair(tmp_path)


def test_compare_report_and_gate_give_every_headline_row_one_verdict_with_and_without_by(pair, tmp_path, capsys,
                                                                                         monkeypatch):
    from rankgate.cli.main import main

    monkeypatch.setenv("COLUMNS", "250")
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    gold, base, cand = (str(pair[k]) for k in ("gold", "base", "cand"))
    stats = ["--seed", "0", "--resamples", "1000"]
    seen: dict[str, dict[str, str]] = {}
    segment_words: dict[str, dict[tuple[str, str], str]] = {}
    for by in ([], ["--by", "area"]):
        tag = "by" if by else "plain"
        compare = ["compare", "--gold", gold, base, cand, "--metrics", ",".join(METRICS), *stats, *by]
        seen[f"compare terminal {tag}"] = _terminal_verdicts(_run(main, capsys, compare))
        seen[f"compare markdown {tag}"] = _markdown_verdicts(_run(main, capsys, [*compare, "--markdown"]))
        data = json.loads(_run(main, capsys, [*compare, "--json"]))
        seen[f"compare json {tag}"] = {r["metric"]: r["verdict"] for r in data["rows"] if r["field"] is None}
        segment_words[f"compare {tag}"] = {(r["metric"], r["segment"]): r["verdict"]
                                           for r in data["rows"] if r["field"] is not None}
        page = tmp_path / f"report-{tag}.html"
        _run(main, capsys, ["report", "--gold", gold, "--run", cand, "--baseline", base, *stats, *by, "-o", str(page)])
        seen[f"report html {tag}"] = _html_verdicts(page.read_text(encoding="utf-8"))
        comment, outcome = tmp_path / f"comment-{tag}.md", tmp_path / f"gate-{tag}.json"
        _run(main, capsys, ["gate", "--config", str(_config(tmp_path, bool(by))), "--gold", gold, "--baseline", base,
                            "--candidate", cand, "--comment", str(comment), "--json-out", str(outcome),
                            "--no-step-summary"])
        gate = json.loads(outcome.read_text(encoding="utf-8"))
        seen[f"gate json {tag}"] = {c["metric"]: c["verdict"] for g in gate["gates"] for c in g["checks"]
                                    if c["kind"] == "regression" and c["field"] is None}
        segment_words[f"gate {tag}"] = {(mv["metric"], mv["segment"]): mv["verdict"]
                                        for mv in gate["segments_moved"]}
        seen[f"pr comment {tag}"] = _comment_verdicts(comment.read_text(encoding="utf-8"))

    expected = seen["compare json plain"]
    assert set(expected) == set(METRICS)
    assert expected["recall@1"] == expected["mrr"] == expected["ndcg@5"] == "worse"  # the drop reads as one
    assert expected["recall@5"] == expected["precision@5"] == "unchanged"
    for where, words in seen.items():
        assert words == expected, where
    # the gate's segment lines use the same rule and the same family (its gated metrics × areas) as compare --by
    moved = segment_words["gate by"]
    assert moved and all(segment_words["compare by"][key] == word for key, word in moved.items())
    # every auth query lost its first place (CI −100 to −100 pp), but 28 segment rows were tested at once
    assert segment_words["compare by"][("recall@1", "auth")] == "not significant after correcting for 28 comparisons"
    # each output says how the segment rows were corrected
    md = _run(main, capsys, ["compare", "--gold", gold, base, cand, "--metrics", ",".join(METRICS), *stats,
                             "--by", "area", "--markdown"])
    assert "Holm-corrected across the 7 metric rows; each field's segments apart: across 28 segment rows (area)" in md
    comment_md = (tmp_path / "comment-by.md").read_text(encoding="utf-8")
    assert "across 28 segment rows (area)" in comment_md


def test_headline_p_values_do_not_depend_on_segments(pair):
    from rankgate.scoring.engine import evaluate
    from rankgate.stats.paired import compare

    base = evaluate(str(pair["gold"]), str(pair["base"]), list(METRICS))
    cand = evaluate(str(pair["gold"]), str(pair["cand"]), list(METRICS))
    alone = compare([base, cand], resamples=200, n_permutations=2000)
    split = compare([base, cand], by="area", resamples=200, n_permutations=2000)
    head = [r for r in split.rows if r.field is None]
    assert [(r.p_value, r.p_holm, r.family) for r in alone.rows] == [(r.p_value, r.p_holm, r.family) for r in head]
    assert {r.family for r in split.rows if r.field is not None} == {len(METRICS) * len(AREAS)}
    # the footer counts changed queries for every metric, not only the first: 10 auth + 5 billing queries lost
    # first place, 2 search queries gained it
    assert dict(alone.changed_by_metric) == {"recall@1": 17, "recall@3": 0, "recall@5": 0, "ndcg@5": 17,
                                             "precision@5": 0, "distinct_docs@5": 0, "mrr": 17}
    assert alone.to_dict()["queries"]["changed_by_metric"]["mrr"] == 17


# -- the gate table fits GitHub's 800 px ----------------------------------------------------------
def _width(text: str) -> int:
    """Pixels of the widest unbreakable run of a cell at GitHub's 14 px font (8 px a character, generous)."""
    lines = re.sub(r"</?sub>", "", text).split("<br>")
    return max((len(word) * 8 for line in lines for word in line.split(" ")), default=0)


def test_the_gate_table_fits_800_px_with_the_limit_and_the_change_on_one_line_each(pair, tmp_path, capsys):
    from rankgate.cli.main import main

    comment = tmp_path / "comment.md"
    _run(main, capsys, ["gate", "--config", str(_config(tmp_path, True)), "--gold", str(pair["gold"]), "--baseline",
                        str(pair["base"]), "--candidate", str(pair["cand"]), "--comment", str(comment),
                        "--no-step-summary"])
    md = comment.read_text(encoding="utf-8")
    table = md.split("### Gates", 1)[1].split("\n\n")[1].splitlines()
    head, rows = table[0], table[2:]
    assert head.count("|") - 1 == 5  # five columns (from eight): icon, gate, baseline → candidate, change, limit
    widths = np.zeros(5)
    for row in rows:
        cells = [c.strip() for c in row.strip().strip("|").split(" | ")]
        assert len(cells) == 5, row
        widths = np.maximum(widths, [_width(c) for c in cells])
        change, limit = cells[3].split("<br>")[0], cells[4]
        assert " " not in change and " " not in limit and "<br>" not in limit  # never wrapped
    assert widths.sum() + 5 * 26 <= 800, widths  # 13 px of padding each side of a cell
