"""``--by`` is bounded: every segment is computed (and kept whole in summary.json and --json), a table for
people shows at most 50 segments of a field (the largest) with one line counting the rest, a field that
hardly groups its queries gets a note, and the work follows the number of values, not of segments.

The grouped statistics give each segment the numbers the one-segment functions give it, bit for bit; the
work is checked by counting calls, never by timing (benchmarks/segments_scaling.py times it).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rankgate._native as accel
from rankgate.stats import segments as seg_mod
from rankgate.stats import bootstrap as stats
from rankgate._util.jsonable import exact_mean
from rankgate.stats.paired import compare
from rankgate.model.results import EvaluationResult
from rankgate.stats.segments import MAX_SHOWN_SEGMENTS, SegmentRow, looks_like_id, ordered_labels, segment_summary, shown_segments
from rankgate.stats.bootstrap import (
    bootstrap_ci,
    grouped_bootstrap_cis,
    grouped_randomization_tests,
    holm,
    paired_bootstrap_ci,
    randomization_test,
    values_cis,
)

from .conftest import examples


def same(a: float, b: float) -> bool:
    """Equal as floats are stored (0.0 and -0.0 differ; NaN equals NaN)."""
    return np.float64(a).tobytes() == np.float64(b).tobytes()


# -- the grouped statistics are each group's own, bit for bit ----------------------------------------
VALUES = st.one_of(st.sampled_from([0.0, -0.0, 0.25, 0.5, 1.0, 1 / 3]), st.floats(-2.0, 2.0, allow_nan=False))
GROUPS = st.lists(st.one_of(st.lists(VALUES, max_size=10), st.lists(VALUES, min_size=120, max_size=140)), max_size=25)


def tiled(groups: list[list[float]]) -> tuple[np.ndarray, np.ndarray]:
    values = np.asarray([x for g in groups for x in g], dtype=np.float64)
    return values, np.concatenate(([0], np.cumsum([len(g) for g in groups]))).astype(np.int64)


@settings(max_examples=examples(60), deadline=None)
@given(GROUPS, st.integers(0, 4), st.sampled_from([0, 1, 7, 250, 251, 600]), st.sampled_from([0.8, 0.95]))
def test_grouped_intervals_are_those_of_each_group_alone(groups, seed, resamples, confidence) -> None:
    values, offsets = tiled(groups)
    low, high = grouped_bootstrap_cis(values, offsets, seed=seed, resamples=resamples, confidence=confidence)
    for j, g in enumerate(groups):
        want = bootstrap_ci(g, rng=seed, resamples=resamples, confidence=confidence)
        assert same(low[j], want[0]) and same(high[j], want[1]), (j, g, want, low[j], high[j])


def test_grouped_intervals_without_the_compiled_kernels(monkeypatch) -> None:
    rng = np.random.default_rng(4)
    groups = [list(np.round(rng.random(int(n)), 2)) for n in rng.integers(0, 9, size=40)]
    values, offsets = tiled(groups)
    monkeypatch.setattr(accel, "kernels", None)
    low, high = grouped_bootstrap_cis(values, offsets, seed=1, resamples=120)
    for j, g in enumerate(groups):
        want = bootstrap_ci(g, rng=1, resamples=120)
        assert same(low[j], want[0]) and same(high[j], want[1])


@settings(max_examples=examples(60), deadline=None)
@given(
    st.lists(st.one_of(st.lists(st.sampled_from([0.0, 0.0, -0.5, 0.5, 1.0, -1 / 3, 0.125]), max_size=20),
                       st.lists(st.sampled_from([0.0, 0.5, -1.0, 0.3]), min_size=125, max_size=140)), max_size=25),
    st.integers(0, 4), st.sampled_from([0, 1, 99, 1000]),
)
def test_grouped_p_values_are_those_of_each_group_alone(groups, seed, permutations) -> None:
    # sizes around the three paths: up to 8 nonzero differences, up to 128, more
    d, offsets = tiled(groups)
    p = grouped_randomization_tests(d, offsets, seed=seed, resamples=permutations)
    for j, g in enumerate(groups):
        want = randomization_test(np.zeros(len(g)), np.asarray(g), rng=seed, resamples=permutations)
        assert same(p[j], want), (j, g, want, p[j])


def test_grouped_statistics_refuse_offsets_that_do_not_tile_the_values() -> None:
    from rankgate.errors import UsageError

    with pytest.raises(UsageError, match="offsets must rise from 0"):
        grouped_bootstrap_cis(np.zeros(3), [0, 2], seed=0)
    with pytest.raises(UsageError, match="offsets must rise from 0"):
        grouped_randomization_tests(np.zeros(3), [0, 2, 1, 3], seed=0)


# -- segment_summary and compare give every segment its numbers of before --------------------------
def field_result(n: int = 400, seed: int = 0, labels: int = 60) -> tuple[EvaluationResult, EvaluationResult]:
    """Two runs' values on ``n`` queries: a 3-value field, a ``labels``-value field of mixed sizes, NaN for
    no-answer queries, and a metric that applies to some queries only."""
    rng = np.random.default_rng(seed)
    ids = tuple(f"q{i:04d}" for i in range(n))
    shop = tuple(f"s{int(x):03d}" for x in np.minimum(rng.geometric(0.05, size=n), labels) - 1)
    lang = tuple(rng.choice(["de", "en", "fr"], size=n).tolist())

    def values(r: np.random.Generator) -> dict[str, np.ndarray]:
        recall = np.round(r.random(n), 1) * (r.random(n) < 0.7)
        recall[::17] = np.nan
        ndcg = np.where(np.isnan(recall), np.nan, np.round(r.random(n), 3))
        some = np.where(r.random(n) < 0.4, np.nan, (r.random(n) < 0.5).astype(float))
        return {"recall@5": recall, "ndcg@10": ndcg, "forbidden@5": some}

    fields = {"tags.lang": lang, "tags.shop": shop}
    names = ("recall@5", "ndcg@10", "forbidden@5")
    base = EvaluationResult(ids, names, values(np.random.default_rng(seed + 1)), fields)
    cand = EvaluationResult(ids, names, values(np.random.default_rng(seed + 2)), fields)
    return base, cand


def test_segment_summary_gives_each_segment_the_numbers_it_has_alone() -> None:
    res, _ = field_result()
    s = segment_summary(res, ["lang", "shop", "lang+shop"], seed=3, resamples=300)
    want = []
    for field in s.by:
        key, labels = seg_mod.segment_labels(res, field)
        for label in ordered_labels(labels):
            idx = np.asarray([i for i, x in enumerate(labels) if x == label])
            vals = {m: res.values[m][idx] for m in res.metric_names}
            cis = values_cis(vals, 3, 300, 0.95)  # what each segment was given one at a time
            for m in res.metric_names:
                ok = vals[m][~np.isnan(vals[m])]
                want.append((key, label, m, idx.size, ok.size, exact_mean(ok), *cis[m]))
    got = [(r.field, r.label, r.metric, r.queries, r.n, r.mean, r.ci_low, r.ci_high) for r in s.rows]
    assert [w[:5] for w in want] == [g[:5] for g in got]
    assert all(same(a, b) for w, g in zip(want, got) for a, b in zip(w[5:], g[5:]))
    assert s.rows == tuple(SegmentRow(*g) for g in got)  # the rows compare as the tuple they stand for


def test_compare_gives_each_segment_the_numbers_it_has_alone() -> None:
    base, cand = field_result(seed=7)
    cmp = compare(base, cand, by=["lang", "shop"], seed=2, resamples=200, n_permutations=500)
    raw = []
    for metric in base.metric_names:
        scopes = [(None, None, np.arange(len(base.query_ids)))]
        for field in ("lang", "shop"):
            key, labels = seg_mod.segment_labels(base, field)
            scopes += [(key, lab, np.asarray([i for i, x in enumerate(labels) if x == lab])) for lab in ordered_labels(labels)]
        for key, lab, idx in scopes:
            vb, vc = base.values[metric][idx], cand.values[metric][idx]
            ok = ~(np.isnan(vb) | np.isnan(vc))
            b, c = vb[ok], vc[ok]
            raw.append((metric, key, lab, int(ok.sum()), exact_mean(b), exact_mean(c),
                        *paired_bootstrap_ci(b, c, rng=2, resamples=200),
                        randomization_test(b, c, rng=2, resamples=500)))
    # Holm within each family: the headline rows (field None), and each field's segment rows
    adjusted = np.full(len(raw), np.nan)
    for key in dict.fromkeys(r[1] for r in raw):
        family = [i for i, r in enumerate(raw) if r[1] == key]
        adjusted[family] = holm([raw[i][-1] for i in family])
    assert len(cmp.rows) == len(raw)
    for r, w, a in zip(cmp.rows, raw, adjusted):
        assert (r.metric, r.field, r.segment, r.n) == w[:4]
        for x, y in zip((r.baseline, r.candidate, r.ci_low, r.ci_high, r.p_value, r.p_holm), (*w[4:9], a)):
            assert same(x, y), (r, w)


# -- which segments a table shows ----------------------------------------------------------------------
def test_the_largest_segments_are_shown_largest_first_ties_in_field_order() -> None:
    sizes = {f"s{i:03d}": (3 if i % 7 == 0 else 2 if i % 11 == 0 else 1) for i in range(120)}
    shown = shown_segments(sizes, limit=50)
    threes = [k for k, n in sizes.items() if n == 3]
    twos = [k for k, n in sizes.items() if n == 2]
    ones = [k for k, n in sizes.items() if n == 1]
    assert list(shown.labels) == (threes + twos + ones)[:50]
    assert (shown.left_out, shown.values, shown.queries) == (70, 120, sum(sizes.values()))
    assert shown.left_out_queries == sum(sizes.values()) - sum(sizes[k] for k in shown.labels)
    small = shown_segments({"b": 1, "a": 5, "(none)": 2})
    assert small.labels == ("b", "a", "(none)") and small.left_out == 0  # a field that fits keeps its order


def test_an_id_like_field_has_more_values_than_half_its_queries() -> None:
    assert looks_like_id(9_812, 10_000) and looks_like_id(5_001, 10_000)
    assert not looks_like_id(5_000, 10_000)  # exactly half: two queries a segment groups them
    assert not looks_like_id(3, 5)  # a handful of labels over a handful of queries is readable


# -- what a person reads --------------------------------------------------------------------------------
def write_inputs(folder: Path, n: int, shop, *, uid: bool = True) -> tuple[Path, Path, Path]:
    """A gold set of ``n`` queries with ``lang`` (3 values), ``shop`` (label of query i: ``shop(i)``) and
    ``uid`` (a value per query), and two runs."""
    gold, base, cand = folder / "gold.jsonl", folder / "base.jsonl", folder / "cand.jsonl"
    with gold.open("w") as g, base.open("w") as b, cand.open("w") as c:
        for i in range(n):
            tags = {"lang": ["de", "en", "fr"][i % 3], "shop": shop(i), **({"uid": f"u{i:05d}"} if uid else {})}
            g.write(json.dumps({"query_id": f"q{i}", "relevant_chunks": [{"chunk_id": f"d{i}", "grade": 1}], "tags": tags}) + "\n")
            hit = [f"d{i}"] if i % 4 else []
            b.write(json.dumps({"query_id": f"q{i}", "topk": [*hit, "x1", "x2"]}) + "\n")
            c.write(json.dumps({"query_id": f"q{i}", "topk": ["x1", *hit, "x2"] if i % 5 else ["x1", "x2"]}) + "\n")
    return gold, base, cand


_SHOPS = [f"s{j:03d}" for j in range(120) for _ in range(1 + (j * 7) % 9)]  # 120 shops of 1 to 9 queries
SHOPS = [_SHOPS[(i * 7) % len(_SHOPS)] for i in range(len(_SHOPS))]  # (spread over the file: 7 and 600 are coprime)


def shop_of(i: int) -> str:
    return SHOPS[i]


def expected_shown(n: int) -> tuple[list[str], int, int]:
    sizes: dict[str, int] = {}
    for i in range(n):
        sizes[shop_of(i)] = sizes.get(shop_of(i), 0) + 1
    ordered = ordered_labels(list(sizes))
    kept = sorted(ordered, key=lambda k: (-sizes[k], ordered.index(k)))[:MAX_SHOWN_SEGMENTS]
    return kept, len(sizes) - len(kept), n - sum(sizes[k] for k in kept)


def cli(*args: str) -> int:
    from rankgate.cli.main import main

    return main(list(args))


def shops_in(text: str) -> list[str]:
    return list(dict.fromkeys(re.findall(r"shop = (s\d{3})", text)))


def test_evaluate_shows_the_50_largest_segments_and_a_line_for_the_rest(tmp_path, capsys) -> None:
    n = len(SHOPS)
    gold, base, _ = write_inputs(tmp_path, n, shop_of, uid=False)
    kept, left, left_queries = expected_shown(n)
    args = ("evaluate", "--gold", str(gold), "--run", str(base), "--by", "shop", "--by", "lang", "--resamples", "50")
    assert cli(*args) == 0
    out = capsys.readouterr().out
    assert shops_in(out) == kept
    line = f"shop: {left} more segments ({left_queries} queries) not shown, only the 50 largest; every one is in"
    assert line in " ".join(out.split())
    assert "lang = de" in out and "lang:" not in out  # a field that fits is whole, without a line
    assert "is it an id?" not in out

    assert cli(*args, "--markdown") == 0
    md = capsys.readouterr().out
    assert shops_in(md) == kept and line in md
    assert len([x for x in md.splitlines() if x.startswith("| shop = ")]) == 50 * 5  # 50 segments x 5 metrics

    assert cli(*args, "--out", str(tmp_path / "out")) == 0
    capsys.readouterr()
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert len(summary["segments"]["tags.shop"]) == 120  # every segment stays in summary.json
    assert cli(*args, "--json") == 0
    assert json.loads(capsys.readouterr().out)["segments"] == summary["segments"]


def test_a_field_of_ten_thousand_values_prints_a_bounded_table_and_a_note(tmp_path, capsys) -> None:
    # the audit's case at 10k values: a value per query (13 s and 60,000 lines before)
    n = 10_000
    gold, base, _ = write_inputs(tmp_path, n, lambda i: "s0")
    assert cli("evaluate", "--gold", str(gold), "--run", str(base), "--by", "uid", "--metrics", "recall@5,mrr") == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert len(lines) < 250
    assert len(set(re.findall(r"uid = (u\d{5})", out))) == 50
    flat = " ".join(out.split())
    assert "uid: 9,950 more segments (9,950 queries) not shown, only the 50 largest" in flat
    assert "uid has 10,000 values for 10,000 queries: a segment field should group queries; is it an id?" in flat
    assert cli("evaluate", "--gold", str(gold), "--run", str(base), "--by", "uid", "--metrics", "recall@5,mrr",
               "--json") == 0
    assert len(json.loads(capsys.readouterr().out)["segments"]["tags.uid"]) == n


def test_compare_shows_the_50_largest_segments_per_metric(tmp_path, capsys) -> None:
    n = len(SHOPS)
    gold, base, cand = write_inputs(tmp_path, n, shop_of)
    kept, left, left_queries = expected_shown(n)
    args = ("compare", "--gold", str(gold), str(base), str(cand), "--metrics", "recall@5,mrr", "--by", "shop",
            "--resamples", "50", "--permutations", "50")
    assert cli(*args) == 0
    out = capsys.readouterr().out
    assert shops_in(out) == kept
    flat = " ".join(out.split())
    assert f"shop: {left} more segments ({left_queries} queries) not shown, only the 50 largest; every one is in the --json output." in flat
    assert cli(*args, "--markdown") == 0
    md = capsys.readouterr().out
    assert len([x for x in md.splitlines() if x.startswith("| ↳ shop = ")]) == 2 * 50
    assert shops_in(md) == kept
    assert cli(*args, "--json") == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert len({r["segment"] for r in rows if r["field"] == "tags.shop"}) == 120
    assert cli(*args, "--by", "uid") == 0  # an id as a segment field: the note
    assert f"uid has {n} values for {n} queries" in " ".join(capsys.readouterr().out.split())
    # several runs have no segments to show: --by is refused there, as before
    assert cli("compare", "--gold", str(gold), str(base), str(cand), str(base), "--by", "shop") == 2
    assert "--by compares segments of two runs" in capsys.readouterr().err


def test_the_pr_comment_lists_50_failing_segments_and_counts_the_rest(tmp_path, capsys) -> None:
    n = 300
    gold, base, cand = write_inputs(tmp_path, n, shop_of)
    config = tmp_path / "ship.yaml"
    config.write_text("gates:\n  - name: recall\n    metric: recall@5\n    threshold: 0.99\n    min_queries: 1\n"
                      "    segments: [uid]\ndefaults: {seed: 0, resamples: 100}\n")
    comment = tmp_path / "comment.md"
    code = cli("gate", "--config", str(config), "--gold", str(gold), "--candidate", str(cand), "--comment", str(comment),
               "--json-out", str(tmp_path / "outcome.json"), "--no-step-summary")
    assert code == 1
    capsys.readouterr()
    text = comment.read_text()
    failing = re.findall(r"\| ↳ uid = (u\d{5}) \|", text)
    assert len(failing) == 50
    outcome = json.loads((tmp_path / "outcome.json").read_text())
    fails = [c for c in outcome["gates"][0]["checks"] if c["field"] == "tags.uid" and c["status"] == "fail"]
    assert f"… uid: {len(fails) - 50} more failing segments ({len(fails) - 50} queries) not shown" in text
    assert "uid has 300 values for 300 queries: a segment field should group queries; is it an id?" in text
    assert len(outcome["segments"]["tags.uid"]) == n  # the JSON outcome keeps every segment


def test_the_gate_prints_20_sentences_and_counts_the_rest(tmp_path, capsys) -> None:
    n = len(SHOPS)
    gold, base, cand = write_inputs(tmp_path, n, shop_of)
    config = tmp_path / "ship.yaml"
    config.write_text("gates:\n  - name: recall\n    metric: recall@5\n    regression_max: 0.01\n    min_queries: 1\n"
                      "    segments: [shop]\ndefaults: {seed: 0, resamples: 100}\n")
    cli("gate", "--config", str(config), "--gold", str(gold), "--candidate", str(cand), "--baseline", str(base),
        "--no-step-summary")
    printed = capsys.readouterr().out
    sentences = printed.count("❌ retrieval recall@5") + printed.count("ℹ️ retrieval recall@5 for shop = ")
    assert sentences == 20 and re.search(r"… and [\d,]+ more \(every check is in the JSON outcome: --json\)", printed)


def test_the_report_shows_the_50_largest_segments_and_a_line(tmp_path, capsys) -> None:
    n = len(SHOPS)
    gold, base, _ = write_inputs(tmp_path, n, shop_of)
    kept, left, left_queries = expected_shown(n)
    html = tmp_path / "report.html"
    assert cli("report", "--gold", str(gold), "--run", str(base), "--by", "shop", "--by", "uid", "-o", str(html)) == 0
    capsys.readouterr()
    text = html.read_text()
    table = text[text.index('data-field="tags.shop"'):]
    table = table[:table.index("</table>")]
    assert re.findall(r'<tr[^>]*><td data-v="(s\d{3})">', table) == kept
    assert f"shop: {left} more segments ({left_queries} queries) not shown, only the 50 largest" in text
    assert f"uid has {n} values for {n} queries" in text


# -- the work follows the values, not the segments (counted, not timed) ------------------------------------
def counting(monkeypatch, module, name: str) -> list[int]:
    calls: list[int] = []
    real = getattr(module, name)

    def wrapper(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, wrapper)
    return calls


def many_segments(n: int = 6000) -> tuple[EvaluationResult, EvaluationResult]:
    """``n`` queries, a field of n / 2 segments of 1 to 4 queries, two metrics with values that differ."""
    rng = np.random.default_rng(5)
    ids = tuple(f"q{i}" for i in range(n))
    labels = tuple(f"v{int(x)}" for x in np.sort(rng.integers(0, n // 2, size=n)))

    def values() -> dict[str, np.ndarray]:
        return {"recall@5": np.round(rng.random(n), 2), "mrr": np.round(rng.random(n), 2)}

    fields = {"tags.v": labels}
    return (EvaluationResult(ids, ("recall@5", "mrr"), values(), fields),
            EvaluationResult(ids, ("recall@5", "mrr"), values(), fields))


def test_intervals_of_thousands_of_segments_are_drawn_a_size_at_a_time(monkeypatch) -> None:
    res, _ = many_segments()
    sums = counting(monkeypatch, stats, "_resampled_sums")
    one_at_a_time = counting(monkeypatch, stats, "bootstrap_ci")
    s = segment_summary(res, "v", resamples=200)
    sizes = {r.n for r in s.rows if r.n >= 2}
    assert len(s.by) == 1 and len(s.sizes("tags.v")) > 2000
    assert len(sums) <= len(sizes) and not one_at_a_time  # one table per size (was: one per segment)


def test_p_values_of_thousands_of_segments_need_no_call_per_segment(monkeypatch) -> None:
    base, cand = many_segments()
    flips = counting(monkeypatch, stats, "_sign_flip_p")
    sums = counting(monkeypatch, stats, "_resampled_sums")
    cmp = compare(base, cand, by="v", resamples=100, n_permutations=200)
    assert len(cmp.rows) > 2 * 2000
    assert len(flips) == 2  # all queries, for each metric: the only scopes of more than 128 queries
    sizes = {r.n for r in cmp.rows if r.field is not None and r.n >= 2}
    assert len(sums) <= len(sizes) + 1  # a table for each segment size, and all queries


def test_tables_read_only_the_rows_they_show(monkeypatch) -> None:
    from rankgate.render.tables import segment_markdown, segment_table

    res, _ = many_segments()
    s = segment_summary(res, "v", resamples=0)
    made = counting(monkeypatch, seg_mod._FieldRows, "row")
    segment_markdown(s)
    segment_table(s)
    assert len(made) == 2 * MAX_SHOWN_SEGMENTS * 2  # two renderers x 50 segments x 2 metrics
    assert len(s.to_dict()["tags.v"]) == len(s.sizes("tags.v")) and len(made) == 2 * MAX_SHOWN_SEGMENTS * 2


@pytest.mark.slow  # (the full tier: heavy, and what it guards is covered lighter by default)
def test_a_gate_on_thousands_of_segments_looks_each_up_once(monkeypatch) -> None:
    from rankgate.gating.decide import decide, parse_config

    base, cand = many_segments()
    config = parse_config("gates:\n  - name: r\n    metric: recall@5\n    threshold: 0.5\n    regression_max: 0.1\n"
                          "    segments: [v]\ndefaults: {seed: 0, resamples: 100}\n", path="ship.yaml")
    made = counting(monkeypatch, seg_mod._FieldRows, "row")
    out = decide(config, cand, base)
    segments = len({c.segment for c in out.results[0].checks if c.field is not None})
    assert segments > 2000
    assert len(made) <= 3 * segments  # the check of each segment, its mover, and no scan per look-up
    assert not math.isnan(out.results[0].checks[0].value)


def test_experiment_tables_show_the_50_largest_segments_of_a_field(tmp_path, capsys) -> None:
    from rankgate.experiments.paired import paired_rows
    from rankgate.render.experiments import paired_markdown

    # a run that logs latency: evaluate's latency table is broken down by --by as well
    n = len(SHOPS)
    gold, base, _ = write_inputs(tmp_path, n, shop_of, uid=False)
    timed = tmp_path / "timed.jsonl"
    with base.open() as src, timed.open("w") as out:
        for i, line in enumerate(src):
            out.write(json.dumps({**json.loads(line), "latency_ms": {"retrieve": 10.0 + i % 17}}) + "\n")
    kept, left, left_queries = expected_shown(n)
    assert cli("evaluate", "--gold", str(gold), "--run", str(timed), "--by", "shop", "--resamples", "50", "--markdown") == 0
    md = capsys.readouterr().out
    latency = md[md.index("### Latency"):]
    assert len(set(re.findall(r"\| shop=(s\d{3}) \|", latency))) == 50
    assert f"shop: {left} more segments ({left_queries} queries) not shown" in latency

    res, other = field_result(n=600)
    rows = paired_rows(res, other, by=["shop"], resamples=50)
    text = paired_markdown(rows, before="a", after="b", confidence=0.95)
    assert len(set(re.findall(r"\| shop=(s\d{3}) \|", text))) == 50
    assert len({r.segment for r in rows if r.segment}) == len(set(res.fields["tags.shop"]))  # every one computed


@settings(max_examples=examples(40), deadline=None)
@given(st.lists(st.text(max_size=6), min_size=1, max_size=30), st.integers(0, 3))
def test_summary_json_writes_segments_from_columns_as_from_the_dict(labels, seed) -> None:
    from rankgate.render.exports import segments_json, summary_json

    rng = np.random.default_rng(seed)
    n = len(labels)
    recall = np.round(rng.random(n), 3)
    recall[rng.random(n) < 0.3] = np.nan
    res = EvaluationResult(tuple(f"q{i}" for i in range(n)), ("recall@5", "mrr"),
                           {"recall@5": recall, "mrr": np.where(rng.random(n) < 0.5, 1.0, 0.25)},
                           {"tags.weird": tuple(labels), "tags.empty": (None,) * n})
    s = segment_summary(res, ["weird", "empty", "weird+empty"], resamples=30)
    data = {"metrics": {"recall@5": {"mean": 0.5}}, "zz": [1, None]}
    assert summary_json(data, written={"segments": segments_json(s)}) == summary_json({**data, "segments": s.to_dict()})
