"""``rankgate gold validate|stale|diff`` end to end on the demo data and a corpus that moved on:
a retired chunk, a superseded document version, edited text, a deprecated chunk."""

from __future__ import annotations

import csv
import json
import math
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rankgate.cli.main import main
from rankgate.corpus import load_manifest, manifest_from_records
from rankgate.goldset import min_detectable_drop, read_gold_file
from rankgate.goldset.records import _collect

from .hostile import assert_refused
from .conftest import examples

DEMO = Path(__file__).resolve().parents[1] / "src" / "rankgate" / "demo" / "data"
GOLDEN = Path(__file__).parent / "golden"
UPDATE = bool(os.environ.get("RANKGATE_UPDATE_GOLDEN"))


def check(name: str, text: str) -> None:
    path = GOLDEN / name
    if UPDATE:
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"{name} changed; set RANKGATE_UPDATE_GOLDEN=1 to accept"


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _write(path: Path, rows: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n" for r in rows),
                    encoding="utf-8")
    return path


@pytest.fixture
def moved(tmp_path: Path) -> Path:
    """The demo corpus one release later (corpus_new.jsonl):

    * doc_export#c1 is gone (retired), and so is doc_pricing_2023#c1 (a must-not-retrieve entry);
    * doc_export#c2 is superseded by a new version of the export page (doc_export#c2-v2, 2026-06-01);
    * doc_export#c3's text was edited;
    * doc_pricing_2026#c1 is deprecated.
    """
    rows = []
    for row in _lines(DEMO / "corpus.jsonl"):
        cid = row["chunk_id"]
        if cid in ("doc_export#c1", "doc_pricing_2023#c1"):
            continue
        if cid == "doc_export#c2":
            rows.append({**row, "status": "superseded", "superseded_by": "doc_export#c2-v2"})
            rows.append({**row, "chunk_id": "doc_export#c2-v2", "doc_version": "2026-06-01",
                         "text": row["text"] + " Scheduled exports are now on every plan."})
            continue
        if cid == "doc_export#c3":
            row = {**row, "text": row["text"].replace("7 days", "14 days")}
        if cid == "doc_pricing_2026#c1":
            row = {**row, "status": "deprecated"}
        rows.append(row)
    return _write(tmp_path / "corpus_new.jsonl", rows)


def _run(argv: list[object], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    capsys.readouterr()
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    return code, out.out


# -- corpus manifest ------------------------------------------------------------------------------
def test_manifest_reads_demo_corpus_and_computes_hashes() -> None:
    m = load_manifest(DEMO / "corpus.jsonl")
    assert len(m) == 165
    c = m.get("doc_pricing_2023#c1")
    assert c is not None and c.status == "superseded" and c.doc_id == "doc_pricing_2023"
    import hashlib

    assert c.content_hash == hashlib.sha256(c.text.encode()).hexdigest()
    assert m.get("doc_getting_started#c1").status == "active"  # "current" is a synonym
    assert m.status_counts() == {"active": 155, "deprecated": 2, "superseded": 8, "retired": 0}


def test_manifest_diff_names_retired_changed_and_added(moved: Path) -> None:
    d = load_manifest(DEMO / "corpus.jsonl").diff(load_manifest(moved))
    assert d.added == ("doc_export#c2-v2",)
    assert set(d.retired) == {"doc_export#c1", "doc_pricing_2023#c1"}
    assert d.content_changed == ("doc_export#c3",)
    assert ("doc_export#c2", "active", "superseded") in d.status_changed
    assert ("doc_pricing_2026#c1", "active", "deprecated") in d.status_changed
    assert not d.unchanged


def test_manifest_from_parquet_and_folder_equals_jsonl(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = _lines(DEMO / "corpus.jsonl")
    folder = tmp_path / "corpus"
    folder.mkdir()
    pq.write_table(pa.Table.from_pylist(rows[:100]), folder / "a.parquet")
    _write(folder / "b.jsonl", rows[100:])
    a, b = load_manifest(DEMO / "corpus.jsonl"), load_manifest(folder)
    assert list(a) == list(b)


def test_manifest_status_rules() -> None:
    m = manifest_from_records([
        {"chunk_id": "a"}, {"chunk_id": "b", "superseded_by": "c"}, {"chunk_id": "c", "status": "Retired"},
        {"chunk_id": "d", "content_hash": "abc", "doc_version": "v10"}, {"chunk_id": "d#2", "doc_id": "d", "doc_version": "v9"},
    ])
    assert [r.status for r in m] == ["active", "superseded", "retired", "active", "active"]
    assert m.get("a").content_hash is None and m.get("d").content_hash == "abc"
    assert m.latest_version("d") == "v10"  # natural order, not text order


# -- power ---------------------------------------------------------------------------------------
def test_min_detectable_drop_by_hand_and_scipy() -> None:
    # by hand: (1.959964 + 0.841621) * sqrt(0.5 * 0.5 / 39) = 2.801585 * 0.080064 = 0.22431
    assert min_detectable_drop(39, 0.5) == pytest.approx(0.22431, abs=1e-5)
    stats = pytest.importorskip("scipy.stats")
    for n, p in ((39, 0.75), (136, 0.8), (18, 0.65), (1000, 0.95)):
        z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)
        assert min_detectable_drop(n, p) == pytest.approx(z * math.sqrt(p * (1 - p) / n), rel=1e-9)
    # the figure is the drop at which a one-sided... two-sided 5% test of one proportion has 80% power
    n, p = 200, 0.7
    d = min_detectable_drop(n, p)
    se = math.sqrt(p * (1 - p) / n)
    power = stats.norm.cdf(d / se - stats.norm.ppf(0.975))
    assert power == pytest.approx(0.8, abs=1e-9)
    assert min_detectable_drop(0) == math.inf


# -- reading gold files --------------------------------------------------------------------------
def test_fast_and_collecting_paths_agree_on_a_clean_file() -> None:
    fast = read_gold_file(DEMO / "gold.jsonl")
    records = [(i, json.loads(line)) for i, line in enumerate((DEMO / "gold.jsonl").read_text().splitlines(), 1)]
    slow, problems = _collect(records, [], str(DEMO / "gold.jsonl"))
    assert problems == [] and list(fast.queries) == slow


def _bad_gold(tmp_path: Path) -> Path:
    rows: list = _lines(DEMO / "gold.jsonl")[:6]
    rows[1] = {**rows[1], "relevant_chunks": [{"chunk_id": "doc_export#c3", "grade": "high"}]}  # line 2: schema
    rows.append('{"query_id": "q_broken", ')  # line 7: not JSON
    rows.append({**rows[0], "query": "again"})  # line 8: duplicate of q_0001
    rows.append({"query_id": "q_none", "relevant_chunks": [{"chunk_id": "doc_export#c3", "grade": 0}]})  # line 9
    rows.append({"query_id": "q_ghost", "relevant_chunks": ["doc_nowhere#c1"], "must_not_retrieve": ["doc_gone#c9"],
                 "tags": {"lang": "de"}, "source_of_query": "incident", "tier": "gold"})  # line 10
    return _write(tmp_path / "gold_bad.jsonl", rows)


def _config(tmp_path: Path, extra: str = "") -> Path:
    text = (DEMO / "ship-criteria.yaml").read_text().replace(
        "    label: recall@5 (relevant chunks in the top 5)\n",
        "    label: recall@5 (relevant chunks in the top 5)\n    owner: search-quality\n")
    path = tmp_path / "ship-criteria.yaml"
    path.write_text(text + extra)
    return path


def test_validate_lists_every_problem_golden(tmp_path: Path, moved: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gold = _bad_gold(tmp_path)
    code, out = _run(["gold", "validate", "--gold", gold, "--corpus", moved, "--config", _config(tmp_path),
                      "--as-of", "2026-06-01"], capsys)
    assert code == 1
    for text in ("| error | 2 |", "| error | 7 |", "repeats query id 'q\\_0001' of line 1", "unmarked\\_no\\_answer",
                 "'doc\\_nowhere\\#c1', which is not in the corpus", "'doc\\_gone\\#c9', which is not in the corpus",
                 "'doc\\_export\\#c2' as relevant, but it is superseded", "search-quality"):
        assert text in out, text
    check("gold_validate.md", out)
    code, text_out = _run(["gold", "validate", "--gold", gold, "--format", "text", "--as-of", "2026-06-01"], capsys)
    assert code == 1 and "error: line 2:" in text_out


def test_validate_demo_is_clean_and_says_what_the_gates_can_see(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _run(["gold", "validate", "--gold", DEMO / "gold.jsonl", "--corpus", DEMO / "corpus.jsonl",
                      "--config", DEMO / "ship-criteria.yaml", "--as-of", "2026-06-01"], capsys)
    assert code == 0
    assert "| recall\\_at\\_5 | lang=de | 39 | 19 pp | 5 pp | cannot see regression\\_max |" in out
    assert "median age 48 days as of 2026-06-01" in out
    assert "| production\\_log | 110 | 76.4% |" in out


def test_validate_without_corpus_skips_referential_checks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gold = _write(tmp_path / "g.jsonl", [{"query_id": "q1", "relevant_chunks": ["nowhere"]}])
    code, out = _run(["gold", "validate", "--gold", gold, "--as-of", "2026-01-01"], capsys)
    assert code == 0 and "PASS" in out


# -- stale ---------------------------------------------------------------------------------------
def test_stale_on_moved_corpus_golden(tmp_path: Path, moved: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_dir = tmp_path / "review"
    code, out = _run(["gold", "stale", "--gold", DEMO / "gold.jsonl", "--corpus", moved, "--since",
                      DEMO / "corpus.jsonl", "-o", out_dir], capsys)
    assert code == 0
    check("gold_stale.md", out)
    rows = list(csv.DictReader((out_dir / "stale.csv").open(encoding="utf-8")))
    got = {(r["query_id"], r["chunk_id"]): r["reason"] for r in rows}
    assert got[("q_0001", "doc_export#c1")] == "retired"
    assert got[("q_0001", "doc_export#c2")] == "superseded;newer_doc_version"
    assert got[("q_0002", "doc_export#c3")] == "content_changed;newer_doc_version"
    assert got[("q_0003", "doc_pricing_2026#c1")] == "deprecated"
    assert got[("q_0003", "doc_pricing_2023#c1")] == "retired"
    assert next(r for r in rows if r["kind"] == "must_not_retrieve")["chunk_id"] == "doc_pricing_2023#c1"
    assert f"**{len(rows)} of 190 gold ids are stale" in out
    assert [f.name for f in out_dir.iterdir()] == ["stale.csv"]  # no temp file left behind


def test_stale_without_since_calls_absent_chunks_missing(moved: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _run(["gold", "stale", "--gold", DEMO / "gold.jsonl", "--corpus", moved, "--format", "text"], capsys)
    assert code == 0
    assert "q_0001  doc_export#c1" in out and "missing" in out and "content_changed" not in out


@pytest.mark.parametrize("limit, code", [("2%", 1), ("0.05", 0), ("3", 1), ("50", 0)])
def test_stale_max_stale_labels_from_ship_criteria(tmp_path: Path, moved: Path, capsys: pytest.CaptureFixture[str],
                                                   limit: str, code: int) -> None:
    # 7 of 190 labels are stale in the moved corpus (3.7%)
    config = _config(tmp_path, f"max_stale_labels: {limit if limit[-1] != '%' else repr(limit)}\n")
    got, out = _run(["gold", "stale", "--gold", DEMO / "gold.jsonl", "--corpus", moved, "--since", DEMO / "corpus.jsonl",
                     "--config", config], capsys)
    assert got == code, out
    assert ("over the limit" in out) == (code == 1)


def test_stale_on_unchanged_corpus_finds_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _run(["gold", "stale", "--gold", DEMO / "gold.jsonl", "--corpus", DEMO / "corpus.jsonl",
                      "--since", DEMO / "corpus.jsonl"], capsys)
    assert code == 0 and "**0 of 190 gold ids are stale (0.0%; the gold ids are 156 graded labels and 34 must-not-retrieve ids)**" in out


# -- diff ----------------------------------------------------------------------------------------
def test_diff_golden(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = _lines(DEMO / "gold.jsonl")
    new = [dict(r) for r in rows if r["query_id"] != "q_0144"]
    new[0]["relevant_chunks"] = [{"chunk_id": "doc_export#c2", "grade": 2}, {"chunk_id": "doc_export#c4", "grade": 1}]
    new[1]["must_not_retrieve"] = ["doc_export#c1"]
    new[2]["query"] = "what does the team plan cost per member"
    new.append({"query_id": "q_0200", "relevant_chunks": ["doc_export#c3"], "source_of_query": "incident"})
    new_path = _write(tmp_path / "gold_v2.jsonl", new)
    code, out = _run(["gold", "diff", DEMO / "gold.jsonl", new_path], capsys)
    assert code == 0
    assert "144 → 144 queries: 1 added, 1 removed, 2 relabelled, 1 edited otherwise, 140 unchanged" in out
    assert "doc\\_export\\#c2 grade 3→2" in out and "must\\_not +doc\\_export\\#c1" in out
    check("gold_diff.md", out)
    code, out = _run(["gold", "diff", DEMO / "gold.jsonl", DEMO / "gold.jsonl", "--format", "text"], capsys)
    assert code == 0 and "the files are identical" in out


# -- hostile input -------------------------------------------------------------------------------
def test_hostile_inputs_are_refused(tmp_path: Path, moved: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "stale.csv").write_text("old review list\n")
    gold = DEMO / "gold.jsonl"
    missing = tmp_path / "nope.jsonl"
    assert_refused(["gold", "validate", "--gold", missing], out, names=[missing], capsys=capsys)
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes(b'{"query_id": "q\xe9", "relevant_chunks": ["a"]}\n')
    assert_refused(["gold", "validate", "--gold", latin], out, names=[latin], capsys=capsys, contains=["UTF-8"])
    dup = _write(tmp_path / "dup_corpus.jsonl", [{"chunk_id": "a", "text": "x"}, {"chunk_id": "a", "text": "y"}])
    assert_refused(["gold", "stale", "--gold", gold, "--corpus", dup, "-o", out], out, names=[dup], capsys=capsys,
                   contains=["repeats chunk id 'a'"])
    status = _write(tmp_path / "status_corpus.jsonl", [{"chunk_id": "a", "status": "archived"}])
    assert_refused(["gold", "validate", "--gold", gold, "--corpus", status], out, names=[status], capsys=capsys,
                   contains=[":1:", "field 'status'"])
    bad_gold = _bad_gold(tmp_path)
    assert_refused(["gold", "stale", "--gold", bad_gold, "--corpus", moved, "-o", out], out, names=[bad_gold],
                   capsys=capsys, contains=["gold validate"])
    assert_refused(["gold", "diff", gold, bad_gold], out, names=[bad_gold], capsys=capsys)
    cfg = _config(tmp_path, "max_stale_labels: 150%\n")
    assert_refused(["gold", "stale", "--gold", gold, "--corpus", moved, "--config", cfg, "-o", out], out,
                   names=[cfg], capsys=capsys, contains=["max_stale_labels"])
    cfg2 = tmp_path / "owner.yaml"
    cfg2.write_text("gates:\n  - metric: recall@5\n    threshold: 0.5\n    owner: ''\n")
    assert_refused(["gold", "validate", "--gold", gold, "--config", cfg2], out, names=[cfg2], capsys=capsys,
                   contains=["owner"])
    empty_dir = tmp_path / "empty"
    empty_dir.mkdir()
    assert_refused(["gold", "stale", "--gold", gold, "--corpus", empty_dir], out, names=[empty_dir], capsys=capsys)
    assert_refused(["gold", "validate", "--gold", gold, "--as-of", "June"], out, capsys=capsys)
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    assert_refused(["gold", "stale", "--gold", gold, "--corpus", moved, "-o", a_file], out, names=[a_file],
                   capsys=capsys)


# -- the manifest's fast path equals the row reader -------------------------------------------------

_value = st.one_of(st.none(), st.sampled_from(["", "current", "Deprecated", "superseded", "retired", "archived", " "]),
                   st.text(max_size=6), st.integers(-2, 2), st.lists(st.integers(0, 9), max_size=1))
_row = st.fixed_dictionaries({"chunk_id": st.one_of(st.sampled_from(["a", "b#1", "c#2", "d", "e#x#y", ""]), st.none(), st.integers(0, 3))},
                             optional={k: _value for k in ("doc_id", "doc_version", "version", "status", "superseded_by",
                                                           "tenant", "content_hash", "text", "content", "title")}
                             | {"metadata": st.fixed_dictionaries({"tenant": st.sampled_from(["acme", "globex"])})})


def _outcome(read):
    from rankgate.errors import InputError

    try:
        return list(read())
    except InputError as exc:
        return str(exc)


@settings(max_examples=examples(80), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(_row, min_size=1, max_size=5, unique_by=lambda r: str(r.get("chunk_id"))), parquet=st.booleans())
def test_manifest_fast_path_equals_row_reader(tmp_path: Path, rows: list, parquet: bool) -> None:
    from rankgate.corpus.manifest import CorpusManifest, _jsonl_rows, _parquet_rows, _read_file

    path = tmp_path / ("c.parquet" if parquet else "c.jsonl")
    if parquet:
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            pq.write_table(pa.Table.from_pylist(rows), path)
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            return  # mixed types arrow cannot store in one column
    else:
        _write(path, rows)
    slow = _outcome(lambda: CorpusManifest(_parquet_rows(str(path)) if parquet else _jsonl_rows(str(path)), str(path)))
    fast = _outcome(lambda: _read_file(str(path)))
    assert fast == slow


def test_manifest_fast_path_on_demo_files(moved: Path) -> None:
    from rankgate.corpus.columnar import jsonl_fast
    from rankgate.corpus.manifest import CorpusManifest, _jsonl_rows

    for path in (DEMO / "corpus.jsonl", moved):
        fast = jsonl_fast(str(path))
        assert fast is not None  # the demo's files take the fast path
        assert list(fast) == list(CorpusManifest(_jsonl_rows(str(path)), str(path)))


# -- ship criteria: owner and max_stale_labels ------------------------------------------------------
def test_gate_config_owner_and_max_stale_labels() -> None:
    from rankgate.errors import ConfigError
    from rankgate.gating.config import config_from_dict

    gate = {"metric": "recall@5", "threshold": 0.5}
    c = config_from_dict({"gates": [{**gate, "owner": "search-quality"}], "max_stale_labels": "2%"})
    assert c.gates[0].owner == "search-quality" and c.max_stale_share == pytest.approx(0.02) and c.max_stale_labels is None
    c = config_from_dict({"gates": [gate], "max_stale_labels": 10})
    assert c.gates[0].owner is None and c.max_stale_labels == 10 and c.max_stale_share is None
    assert config_from_dict({"gates": [gate], "max_stale_labels": 0.05}).max_stale_share == 0.05
    for bad in (-1, 1.5, "lots", True):
        with pytest.raises(ConfigError, match="max_stale_labels"):
            config_from_dict({"gates": [gate], "max_stale_labels": bad})


def test_stale_csv_is_never_half_written(tmp_path: Path, moved: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    import errno

    out = tmp_path / "review"
    out.mkdir()
    (out / "stale.csv").write_text("the previous review list\n")
    real_replace = os.replace

    def failing(src: str, dst: str) -> None:
        name = os.path.basename(src)
        if name.startswith(".rankgate-") and not name.startswith(".rankgate-old-"):
            raise OSError(errno.EIO, "Input/output error")  # the new file cannot be moved into place
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", failing)
    assert_refused(["gold", "stale", "--gold", DEMO / "gold.jsonl", "--corpus", moved, "-o", out], out,
                   names=["stale.csv"], capsys=capsys)
    assert (out / "stale.csv").read_text() == "the previous review list\n"


# -- gold validate --baseline: the bootstrap figure ------------------------------------------------
def test_validate_baseline_bootstrap_by_hand(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Four queries; the baseline finds the relevant chunk of three: recall@5 values 1, 0, 1, 1.
    x̄ = 0.75, σ̂² = (3·0.25² + 0.75²)/4 = 0.1875, SE = √(0.1875/4) = 0.21651, and at 95% confidence
    and 80% power δ = (1.95996 + 0.84162)·0.21651 = 0.6066: 61 pp (the binomial figure at the
    threshold p = 0.8 says 2.80158·√(0.16/4) = 0.560: 56 pp). German (2 queries, values 1 and 1)
    has no spread: the binomial figure at its level (clipped to 0.99) applies: 2.80158·√(0.99·0.01/2)
    = 0.197, 20 pp. English (values 1 and 0, mean 0.5): δ = 2.80158·0.5/√2 = 0.99, more than the
    whole level: no drop is visible."""
    from rankgate.stats.power import bootstrap_se, min_detectable_drop_bootstrap

    assert bootstrap_se([1, 0, 1, 1]) == pytest.approx(math.sqrt(0.1875 / 4))
    assert min_detectable_drop_bootstrap([1, 0, 1, 1]) == pytest.approx(2.80158 * 0.216506, abs=1e-4)
    assert min_detectable_drop_bootstrap([1.0]) == math.inf and min_detectable_drop_bootstrap([1, 1]) is None
    langs = ["en", "en", "de", "de"]
    gold = _write(tmp_path / "gold.jsonl", [
        {"query_id": f"q{i}", "query": f"question {i}", "relevant_chunks": [{"chunk_id": f"d{i}#c1", "grade": 1}],
         "tags": {"lang": lang}} for i, lang in enumerate(langs, start=1)])
    run = _write(tmp_path / "run.jsonl", [
        {"query_id": f"q{i}", "topk": [{"chunk_id": f"d{i if i != 2 else 9}#c1", "score": 1.0}]} for i in range(1, 5)])
    config = tmp_path / "ship.yaml"
    config.write_text("gates:\n  - name: recall\n    metric: recall@5\n    threshold: 0.8\n    regression_max: 0.05\n"
                      "    segments: [lang]\n    min_queries: 2\n    owner: search\n", encoding="utf-8")
    base = ["gold", "validate", "--gold", gold, "--config", config, "--as-of", "2026-06-01"]
    code, out = _run(base, capsys)
    assert code == 0 and "| recall | all queries | 4 | 56 pp |" in out and "binomial approximation" in out
    code, out = _run([*base, "--baseline", run], capsys)
    assert code == 0 and "| recall | all queries | 4 | 61 pp |" in out, out
    assert "| recall | lang=de | 2 | 20 pp |" in out and "| recall | lang=en | 2 | none, too few queries |" in out
    assert "bootstrap standard error of baseline run.jsonl" in out
    # the same figures from the run's summary.json (per-query values kept by evaluate --out)
    assert main(["evaluate", "--gold", str(gold), "--run", str(run), "--metrics", "recall@5", "--out",
                 str(tmp_path / "ev")]) == 0
    code, from_summary = _run([*base, "--baseline", tmp_path / "ev" / "summary.json"], capsys)
    assert from_summary.replace("summary.json", "run.jsonl") == out
    # the same from a packed summary (as evaluate writes from 1,000 queries on)
    from unittest import mock

    import rankgate.gating.baseline

    with mock.patch.object(rankgate.gating.baseline, "COMPACT_FROM", 1):
        assert main(["evaluate", "--gold", str(gold), "--run", str(run), "--metrics", "recall@5", "--out",
                     str(tmp_path / "packed")]) == 0
    assert "encoding" in json.loads((tmp_path / "packed" / "summary.json").read_text(encoding="utf-8"))["per_query"]
    code, from_packed = _run([*base, "--baseline", tmp_path / "packed" / "summary.json"], capsys)
    assert from_packed.replace("summary.json", "run.jsonl") == out
    # a summary without per-query values: said, and the binomial figure kept
    summary = json.loads((tmp_path / "ev" / "summary.json").read_text(encoding="utf-8"))
    summary.pop("per_query", None)
    (tmp_path / "means.json").write_text(json.dumps(summary), encoding="utf-8")
    code, out = _run([*base, "--baseline", tmp_path / "means.json"], capsys)
    assert code == 0 and "has no per-query values" in out and "| recall | all queries | 4 | 56 pp |" in out
    assert_refused(["gold", "validate", "--gold", gold, "--baseline", run], tmp_path / "none", capsys=capsys,
                   contains=["--baseline needs --config"])


# -- terminal output at 80 columns; label ages ------------------------------------------------------
def test_terminal_reports_fit_80_columns_golden(tmp_path: Path, moved: Path, capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """--format text (what a terminal gets by default) stays within COLUMNS; ids are not cut."""
    from rich.cells import cell_len

    monkeypatch.setenv("COLUMNS", "80")
    gold = _bad_gold(tmp_path)
    code, out = _run(["gold", "validate", "--gold", gold, "--corpus", moved, "--config", _config(tmp_path),
                      "--as-of", "2026-06-01", "--format", "text"], capsys)
    assert code == 1 and max(cell_len(line) for line in out.splitlines()) <= 80
    assert "recall_at_5          lang=de" in out and "doc_nowhere#c1" in out
    check("gold_validate_80.txt", out)
    code, out = _run(["gold", "stale", "--gold", DEMO / "gold.jsonl", "--corpus", moved, "--since",
                      DEMO / "corpus.jsonl", "--format", "text"], capsys)
    assert code == 0 and max(cell_len(line) for line in out.splitlines()) <= 80
    assert "doc_pricing_2023#c1" in out and "must-not" in out
    check("gold_stale_80.txt", out)
    rows = _lines(DEMO / "gold.jsonl")
    rows[0]["relevant_chunks"] = [{"chunk_id": "doc_export#c2", "grade": 2}]
    code, out = _run(["gold", "diff", DEMO / "gold.jsonl", _write(tmp_path / "v2.jsonl", rows), "--format", "text"],
                     capsys)
    assert code == 0 and max(cell_len(line) for line in out.splitlines()) <= 80
    monkeypatch.setenv("COLUMNS", "120")  # a wider terminal gets wider tables
    code, wide = _run(["gold", "validate", "--gold", gold, "--corpus", moved, "--config", _config(tmp_path),
                       "--as-of", "2026-06-01", "--format", "text"], capsys)
    assert 80 < max(cell_len(line) for line in wide.splitlines()) <= 120


def test_labels_without_a_date_are_of_unknown_age(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [{"query_id": "q1", "relevant_chunks": ["a"], "created": "2026-05-01"},
            {"query_id": "q2", "relevant_chunks": ["a"]},
            {"query_id": "q3", "relevant_chunks": ["a"], "created": "last week"},
            {"query_id": "q4", "relevant_chunks": ["a"], "created": "2026-07-01"}]
    code, out = _run(["gold", "validate", "--gold", _write(tmp_path / "g.jsonl", rows), "--as-of", "2026-06-01"], capsys)
    assert code == 0
    # q2 and q3 count as unknown, not as made today: the median of 31 and -30 days is 0.5, of 31, 0, 0 it would be 0
    assert ("created: 2 dated, 2 of unknown age (1 without created, 1 not a date YYYY-MM-DD); oldest 2026-05-01, "
            "newest 2026-07-01, median age 0.5 days as of 2026-06-01; 1 dated after 2026-06-01") in out
    assert "| warning | 3 | q3 | bad\\_created | created 'last week' is not a date YYYY-MM-DD" in out
    assert "| warning | 4 | q4 | future\\_created | created 2026-07-01 is after 2026-06-01 |" in out


def test_power_note_names_the_ship_criteria_confidence(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """At 90% confidence: z = 1.64485 + 0.84162 = 2.48647; four queries at a 0.8 threshold give
    2.48647·√(0.16/4) = 0.497, 50 pp (56 pp at 95%)."""
    gold = _write(tmp_path / "gold.jsonl", [{"query_id": f"q{i}", "relevant_chunks": [f"d{i}"]} for i in range(4)])
    config = tmp_path / "ship.yaml"
    config.write_text("defaults: {confidence: 0.9}\ngates:\n  - name: recall\n    metric: recall@5\n    threshold: 0.8\n"
                      "    regression_max: 0.05\n    owner: search\n", encoding="utf-8")
    code, out = _run(["gold", "validate", "--gold", gold, "--config", config, "--as-of", "2026-06-01"], capsys)
    assert code == 0 and "| recall | all queries | 4 | 50 pp |" in out and "90% confidence and 80% power" in out
