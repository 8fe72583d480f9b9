"""Critical segments (issue 37): chosen values of a segment field with their own limits, always gated; the
k-sweep's knee per segment value; and an owner named wherever a gate of any kind fails."""

from __future__ import annotations

import datetime as dt
import json
import types
from pathlib import Path

import numpy as np
import pytest

from rankgate.cli.main import main
from rankgate.errors import ConfigError
from rankgate.gating.decide import decide, load_config, parse_config
from rankgate.model.results import EvaluationResult
from rankgate.render.comment import comment_markdown, gate_sentences

N_EN, N_BR, N_ES = 200, 150, 12
LANG = ["en"] * N_EN + ["pt-BR"] * N_BR + ["es-AR"] * N_ES


def result(values, *, metric="recall@5", lang=LANG, run="cand.jsonl") -> EvaluationResult:
    v = np.asarray(values, dtype=float)
    return EvaluationResult(tuple(f"q{i:03d}" for i in range(v.size)), (metric,), {metric: v}, {"tags.lang": tuple(lang)},
                            np.where(v > 0, 1, 0), inputs={"run": {"path": run}})


def baseline_values(seed=1):
    rng = np.random.default_rng(seed)
    return (rng.random(len(LANG)) < 0.9).astype(float)


def drop(values, lo, hi, count):
    """``values`` with ``count`` queries of positions lo..hi that had their answer losing it."""
    out = values.copy()
    out[np.flatnonzero(out[lo:hi] == 1)[:count] + lo] = 0.0
    return out


def config(segments: str, *, gate: str = "threshold: 0.5\n    regression_max: 0.05", min_queries: int = 30):
    return parse_config(f"gates:\n  - metric: recall@5\n    {gate}\n    owner: search\n    min_queries: {min_queries}\n"
                        f"    segments:\n{segments}defaults: {{seed: 0, resamples: 500}}\n", path="ship.yaml")


CHOSEN = "      lang:\n        pt-BR: {threshold: 0.85, owner: br-team}\n        es-AR: {regression_max: 0.05}\n"


def critical(outcome, value):
    return [c for c in outcome.results[0].checks if c.critical and c.segment == value]


# -- the decision ---------------------------------------------------------------------------------
def test_a_critical_segment_fails_on_a_clear_regression_and_passes_on_noise():
    base = baseline_values()
    # pt-BR loses 30 of its answers (−20 pp); the other languages are untouched, so all queries drop −8 pp
    out = decide(config(CHOSEN, gate="regression_max: 0.1"), result(drop(base, N_EN, N_EN + N_BR, 30)),
                 result(base, run="base.jsonl"))
    (reg,) = [c for c in critical(out, "pt-BR") if c.kind == "regression"]
    assert reg.status == "fail" and reg.value == pytest.approx(-0.2) and reg.ci_high < 0 and reg.verdict == "worse"
    overall = [c for c in out.results[0].checks if c.field is None]
    assert all(c.status == "pass" for c in overall)  # −8 pp overall is within the gate's own 10 pp
    assert not out.passed and out.results[0].status == "fail"
    # noise: a second draw of the same system swaps answers both ways; the chosen value passes
    rng = np.random.default_rng(7)
    noisy = base.copy()
    flip = rng.choice(np.arange(N_EN, N_EN + N_BR), 6, replace=False)
    noisy[flip] = 1 - noisy[flip]
    out = decide(config(CHOSEN, gate="regression_max: 0.1"), result(noisy), result(base, run="base.jsonl"))
    assert out.passed and all(c.status == "pass" for c in critical(out, "pt-BR"))


def test_the_chosen_values_threshold_decides_not_the_gates():
    base = baseline_values()
    cand = drop(base, N_EN, N_EN + N_BR, 20)  # pt-BR at about 78%: above the gate's 50%, below its own 85%
    out = decide(config(CHOSEN), result(cand))
    (br,) = [c for c in critical(out, "pt-BR") if c.kind == "threshold"]
    assert (br.kind, br.limit, br.status) == ("threshold", 0.85, "fail") and br.value < 0.85
    (es,) = [c for c in critical(out, "es-AR") if c.kind == "threshold"]  # es-AR keeps the gate's floor
    assert (es.limit, es.status) == (0.5, "pass")
    # en is not chosen and lang is not in the list form: it is not checked at all
    assert {c.segment for c in out.results[0].checks if c.field} == {"pt-BR", "es-AR"}
    assert not out.passed
    # the same values under the gate's own floor pass: the chosen value's limit is what failed
    out = decide(config("      lang: [pt-BR, es-AR]\n"), result(cand))
    assert out.passed and {c.limit for c in out.results[0].checks if c.kind == "threshold"} == {0.5}


def test_a_small_chosen_value_warns_and_is_still_gated():
    base = baseline_values()
    cand = base.copy()
    cand[N_EN + N_BR:] = 0.0  # es-AR (12 queries, min_queries 30) loses every answer
    out = decide(config(CHOSEN), result(cand))
    (es,) = [c for c in critical(out, "es-AR") if c.kind == "threshold"]
    assert es.status == "fail" and es.n == N_ES  # gated, not skipped
    warning = es.critical["warning"]
    assert warning.startswith("es-AR has 12 queries (min_queries 30); the gate sees a drop of ") and "pp at best" in warning
    assert "its limit is 5 pp" in warning
    # the list form skips the same segment
    listed = decide(config("      lang: all\n"), result(cand))
    assert {c.status for c in listed.results[0].checks if c.segment == "es-AR"} == {"skipped"}
    sentences = gate_sentences(out, markdown=False)
    assert any("es-AR has 12 queries" in s and "gated all the same" in s for s in sentences)


def test_an_unknown_chosen_value_names_its_line_and_the_values_there_are():
    cfg = config("      lang:\n        pt_BR: {threshold: 0.85}\n")
    with pytest.raises(ConfigError) as info:
        decide(cfg, result(baseline_values()))
    text = str(info.value)
    assert "ship.yaml:9" in text and "'pt_BR'" in text and "did you mean 'pt-BR'" in text
    assert "en, es-AR, pt-BR" in text


@pytest.mark.parametrize("segments, says", [
    ("      lang:\n        pt-BR: {threshold: 85}\n", "gates[0].segments.lang.pt-BR.threshold"),
    ("      lang:\n        pt-BR: {max: 0.1}\n", "is a ceiling"),
    ("      lang:\n        pt-BR: {treshold: 0.8}\n", "did you mean 'threshold'"),
    ("      lang: {}\n", "chooses no value"),
    ("      lang: 3\n", "must be 'all'"),
])
def test_bad_chosen_values_are_refused_where_they_are_written(segments, says):
    with pytest.raises(ConfigError) as info:
        config(segments)
    assert says in str(info.value) and "ship.yaml:" in str(info.value)


def test_the_comment_terminal_and_json_show_the_critical_segments():
    base = baseline_values()
    out = decide(config(CHOSEN), result(drop(base, N_EN, N_EN + N_BR, 30)), result(base, run="base.jsonl"))
    text = comment_markdown(out)
    table = text[text.index("### Critical segments"):]
    br = next(line for line in table.splitlines() if "lang = pt-BR" in line)
    assert br.startswith("| ❌ |") and "≥\u00a085%" in br and "worse" in br and "br-team" in br and "71.3%" in br
    es = next(line for line in table.splitlines() if "lang = es-AR" in line)
    assert es.startswith("| ✅ |") and "12 ⚠️" in es and "br-team" not in es and "search" not in es
    assert "Critical segment lang = pt-BR of retrieval recall@5" in text and "Owner: br-team." in text
    # the gates table keeps its own limits: the chosen value is not listed there under the gate's
    gates = text[text.index("### Gates"):text.index("### Critical segments")]
    assert "pt-BR" not in gates
    data = json.loads(out.to_json())
    g = data["gates"][0]
    assert g["critical_segments"][0] == {"field": "lang", "value": "pt-BR", "threshold": 0.85, "owner": "br-team"}
    assert {c["critical"]["owner"] for c in g["checks"] if c.get("critical") and c["segment"] == "pt-BR"} == {"br-team"}
    assert all("critical" not in c for c in g["checks"] if c["field"] is None)


def test_a_chosen_value_at_severity_warning_does_not_block():
    base = baseline_values()
    segments = "      lang:\n        pt-BR: {threshold: 0.85, severity: warning}\n"
    out = decide(config(segments), result(drop(base, N_EN, N_EN + N_BR, 30)))
    assert out.passed and out.results[0].status == "warn"
    assert [c.status for c in critical(out, "pt-BR") if c.kind == "threshold"] == ["fail"]


# -- the k-sweep's knee per segment ----------------------------------------------------------------
def _knee_files(tmp: Path) -> tuple[Path, Path]:
    """de queries find their chunk at rank 3, en queries at rank 10: recall@k's knee is 3 for de, 10 for en
    (Kneedle over k = 1, 3, 5, 10, 20: de 0,1,1,1,1 lies furthest above its chord at 3; en 0,0,0,1,1 at 10)."""
    gold, run = [], []
    for i in range(40):
        lang = "de" if i < 20 else "en"
        rank = 3 if lang == "de" else 10
        gold.append({"query_id": f"q{i}", "relevant_chunks": [f"rel{i}"], "tags": {"lang": lang}})
        topk = [{"chunk_id": f"x{i}_{r}", "score": 100 - r} for r in range(1, 21)]
        topk[rank - 1] = {"chunk_id": f"rel{i}", "score": 100 - rank}
        run.append({"query_id": f"q{i}", "topk": topk})
    (tmp / "gold.jsonl").write_text("".join(json.dumps(g) + "\n" for g in gold))
    (tmp / "run.jsonl").write_text("".join(json.dumps(r) + "\n" for r in run))
    return tmp / "gold.jsonl", tmp / "run.jsonl"


def test_the_sweep_gives_a_knee_per_segment_value(tmp_path, capsys, monkeypatch):
    gold, run = _knee_files(tmp_path)
    monkeypatch.setenv("COLUMNS", "160")
    assert main(["evaluate", "--gold", str(gold), "--run", str(run), "--sweep", "recall", "--by", "lang",
                 "-o", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    rows = {line.split("│")[0].strip(): line.split("│")[-1].strip() for line in printed.splitlines()
            if line.startswith(("lang = de", "lang = en", "all queries")) and "recall" in line}
    assert rows == {"lang = de": "3", "lang = en": "10", "all queries": "10"}
    sweep = json.loads((tmp_path / "out" / "summary.json").read_text())["sweep"]
    assert sweep["segments"]["tags.lang"]["de"]["recall"] == {"n": 20, "means": [0.0, 1.0, 1.0, 1.0, 1.0], "knee": 3}
    assert sweep["segments"]["tags.lang"]["en"]["recall"]["knee"] == 10 and sweep["knees"] == {"recall": 10}
    # without --by the sweep's output is as before
    assert main(["evaluate", "--gold", str(gold), "--run", str(run), "--sweep", "recall", "--json"]) == 0
    assert "segments" not in json.loads(capsys.readouterr().out)["sweep"]
    # the HTML report: a knee per value of the --by fields
    assert main(["report", "--gold", str(gold), "--run", str(run), "--by", "lang", "-o", str(tmp_path / "r.html")]) == 0
    html = (tmp_path / "r.html").read_text()
    knees = html[html.index("<h3>Knee by segment</h3>"):html.index("Where the first relevant chunk lands")]
    assert "<td>lang = de</td><td>recall</td>" in knees and "<td>lang = en</td><td>recall</td>" in knees
    rows = [r for r in knees.split("<tr>") if "<td>recall</td>" in r]
    assert [r.rsplit('<td class="n">', 1)[1].split("<")[0] for r in rows] == ["3", "10"]


# -- owners on every gate kind ---------------------------------------------------------------------
LEXICAL = {"backend": "lexical", "model": "lexical (token overlap baseline)", "version": "1"}


def _calibration(path: Path) -> Path:
    made = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    path.write_text(json.dumps({"calibration": {
        "task": "support", "n": 140, "agreement": 0.86, "kappa": 0.7, "sensitivity": 0.9, "specificity": 0.8,
        "judge": LEXICAL, "human_labels": {"sha256": "sha256:" + "ab" * 32, "items": 140}, "made": made}}))
    return path


@pytest.mark.parametrize("kind", ["quality", "judge", "stale labels"])
def test_every_gate_kind_names_its_owner_where_it_fails(kind, tmp_path):
    values = [1.0] * 60 + [0.0] * 40
    lang = ["en"] * 100
    stale = None
    if kind == "quality":
        text, res = "gates:\n  - metric: recall@5\n    threshold: 0.9\n    owner: search-team\n", result(values, lang=lang)
    elif kind == "judge":
        _calibration(tmp_path / "cal.json")
        text = ("gates:\n  - metric: faithfulness\n    threshold: 0.9\n    calibration: cal.json\n"
                "    owner: answers-team\n")
        res = result(values, metric="faithfulness", lang=lang)
    else:
        text = ("gates:\n  - metric: recall@5\n    threshold: 0.1\nmax_stale_labels: {max: 2%, owner: docs-team}\n")
        res = result(values, lang=lang)
        stale = types.SimpleNamespace(stale=[f"c{i}" for i in range(10)], labels=100, share=0.1,
                                      by_reason=lambda: {"retired": 10}, corpus_path="corpus.jsonl")
    owner = {"quality": "search-team", "judge": "answers-team", "stale labels": "docs-team"}[kind]
    cfg = tmp_path / "ship.yaml"
    cfg.write_text(text)
    out = decide(load_config(str(cfg)), res, stale=stale)
    assert not out.passed
    assert f"Owner: {owner}." in comment_markdown(out)
    assert any(f"Owner: {owner}." in s for s in gate_sentences(out, markdown=False))  # the terminal's sentences
    data = out.to_dict()
    assert owner in ([g["owner"] for g in data["gates"]] + [(data["stale_labels"] or {}).get("owner")])


def test_critical_languages_on_the_demo_runs(tmp_path, capsys):
    """The demo's two retrievers, gated with chosen languages of their own limits (the command line on the demo
    corpus and gold set): the comment's critical table names each chosen value, its limit and, where it fails,
    its owner; the gate's headline verdicts are those of the same config without the chosen values."""
    from .demo_runs import GOLD, demo_run

    base, cand = demo_run(tmp_path, "bm25-multilingual"), demo_run(tmp_path, "bm25-english")
    criteria = tmp_path / "ship.yaml"
    criteria.write_text(
        "gates:\n"
        "  - metric: recall@5\n"
        "    threshold: 0.5\n"
        "    regression_max: 0.05\n"
        "    min_queries: 30\n"
        "    segments: {lang: {de: {threshold: 0.99, owner: de-search}, es: {regression_max: 0.5}}}\n",
        encoding="utf-8")
    comment = tmp_path / "comment.md"
    code = main(["gate", "--config", str(criteria), "--gold", str(GOLD), "--candidate", str(cand), "--baseline",
                 str(base), "--comment", str(comment), "--no-step-summary", "--json"])
    outcome = json.loads(capsys.readouterr().out)
    assert code == 1  # de cannot reach 99%
    text = comment.read_text(encoding="utf-8")
    assert "Critical segments" in text and "de-search" in text
    (gate,) = outcome["gates"]
    chosen = {c["segment"]: c for c in gate["checks"] if c.get("critical")}
    assert {s for s in chosen} >= {"de", "es"}
    assert any(c["status"] == "fail" for c in gate["checks"] if c.get("critical") and c["segment"] == "de")
    # the headline checks are the same without the chosen values
    plain = tmp_path / "plain.yaml"
    plain.write_text("gates:\n  - {metric: recall@5, threshold: 0.5, regression_max: 0.05, min_queries: 30}\n",
                     encoding="utf-8")
    main(["gate", "--config", str(plain), "--gold", str(GOLD), "--candidate", str(cand), "--baseline", str(base),
          "--no-step-summary", "--json"])
    (plain_gate,) = json.loads(capsys.readouterr().out)["gates"]
    headline = [c for c in gate["checks"] if not c.get("segment")]
    assert [c["kind"] for c in headline] == ["threshold", "regression"]
    assert [(c["kind"], c["status"], c.get("verdict")) for c in headline] == \
        [(c["kind"], c["status"], c.get("verdict")) for c in plain_gate["checks"] if not c.get("segment")]
