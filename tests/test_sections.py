"""Sections declared once (rankgate.render.sections): every kind has its data form and a renderer per
medium, and evaluate's JSON, markdown and terminal outputs show exactly the sections the Evaluation has."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from rankgate.cli.main import main
from rankgate.render.sections import HTML_EXPERIMENTS, SECTION, SECTIONS, experiment_html, sections_of, summary_parts

LANGS = ("en", "de", "en", "de", "en", "en", "de", "en")


def _data(folder: Path) -> tuple[Path, Path, Path]:
    """A gold set and a run carrying what every section needs: as_of dates and dated items (freshness),
    expected sources and item sources (routing), entities and linked entities (entity linking), latency,
    a tag to segment by; and judge labels of items the gold set lacks (bounds)."""
    gold, run, labels = [], [], []
    for i, lang in enumerate(LANGS):
        q = f"q{i}"
        gold.append({"query_id": q, "query": f"question {i} about Acme", "relevant_chunks": [f"d{i}#c1"],
                     "as_of": "2026-01-01", "expected_source": lang, "entities": ["Acme", f"E{i}"],
                     "tags": {"lang": lang}})
        hits = [{"chunk_id": f"d{i}#c1" if i % 3 else f"new{i}#c1", "score": 3.0, "source": lang,
                 "doc_version": "2026-03-01" if i % 2 else "2025-06-01"},
                {"chunk_id": f"d{i}#c1" if not i % 3 else f"x{i}#c1", "score": 2.0, "source": "en",
                 "doc_version": "2025-02-01"},
                {"chunk_id": f"y{i}#c1", "score": 1.0, "source": "de", "doc_version": "2025-02-01"}]
        run.append({"query_id": q, "topk": hits, "latency_ms": {"retrieve": 10 + i, "rerank": 5 + i % 3},
                    "linked_entities": ["acme"] if i % 2 else ["Acme", f"E{i}"]})
        labels.append({"query_id": q, "id": f"y{i}#c1", "grade": i % 2})
    paths = folder / "gold.jsonl", folder / "run.jsonl", folder / "labels.jsonl"
    for path, rows in zip(paths, (gold, run, labels)):
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return paths


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return _data(tmp_path_factory.mktemp("sections"))


ALL = ["--by", "tags.lang", "--sweep", "recall", "--ks", "1,3", "--enforce-as-of", "--routing", "--entity-linking",
       "--k", "3", "--resamples", "50"]
EVALUATION_KINDS = {"segments", "sweep", "routing", "entity_linking", "latency", "freshness", "bounds"}


@pytest.fixture(scope="module")
def full(data):
    """An Evaluation with every kind of section it can have."""
    from rankgate.flows.evaluate import EvaluateRequest, Scoring, Statistics, run_evaluation

    gold, run, labels = data
    ev = run_evaluation(EvaluateRequest(str(gold), str(run), Scoring(k=3), Statistics(resamples=50), by=("tags.lang",),
                                        sweep="recall", ks="1,3", enforce_as_of=True, routing=True,
                                        entity_linking=True, judged=str(labels)))
    assert set(ev.sections()) == EVALUATION_KINDS
    return ev


def test_every_kind_has_its_data_form_and_a_renderer_per_medium():
    assert len(SECTION) == len(SECTIONS)  # one row per key
    for row in SECTIONS:
        assert row.key and row.title and callable(row.to_dict)
        assert callable(row.markdown) and callable(row.renderable)
        # HTML: its own section, or a named place of the report draws it (never both, never neither)
        assert (row.html is None) != (not row.html_elsewhere), row.key
    assert {r.key for r in SECTIONS if r.html is not None} == set(HTML_EXPERIMENTS) | {"bounds"}
    assert set(HTML_EXPERIMENTS) <= set(SECTION)


def test_each_kind_renders_its_part_in_every_medium(full):
    from rich.console import Console

    parts = {**full.sections(), "rewrite": None}
    for row, part in sections_of(full.sections()):
        data = row.to_dict(part)
        assert data == part.to_dict() and json.loads(json.dumps(data)) == data
        text = row.markdown(part, full.confidence)
        assert text.startswith("### ") and text.endswith("\n") and text.count("\n### ") == 0, row.key
        console = Console(file=io.StringIO(), width=160, record=True)
        console.print(row.renderable(part, full.confidence))
        assert console.export_text().strip(), row.key
        if row.html is not None:
            html = row.html(part, full.confidence)
            assert html.startswith("<section") and html.rstrip().endswith("</section>"), row.key
    anchors = [a for a, _, _ in experiment_html(parts, full.confidence)]
    assert anchors == ["freshness", "routing", "entity-linking"]  # the report's page order; no rewrite computed


def test_summary_holds_exactly_the_sections_computed(full):
    from rankgate.flows.evaluate import EvaluateRequest, Statistics, run_evaluation

    assert set(summary_parts(full)) == EVALUATION_KINDS | {"statistics"}
    assert summary_parts(full) == full.parts()
    bare = run_evaluation(EvaluateRequest(full.request.gold, full.request.run, statistics=Statistics(resamples=0),
                                          latency=False))
    assert bare.sections() == {} and set(summary_parts(bare)) == {"statistics"}


def test_a_part_without_a_declared_kind_is_refused():
    with pytest.raises(KeyError, match="no section kind declared"):
        list(sections_of({"segments": None, "costs": object()}))


def _headings(markdown: str) -> list[str]:
    return [line[4:] for line in markdown.splitlines() if line.startswith("### ")]


@pytest.mark.parametrize("options, kinds", [
    ([], {"latency"}),
    (["--by", "tags.lang", "--sweep", "recall", "--ks", "1,3"], {"segments", "sweep", "latency"}),
    (ALL, EVALUATION_KINDS - {"bounds"}),
    (ALL + ["--judged", "LABELS"], EVALUATION_KINDS),
])
def test_evaluate_outputs_show_exactly_the_sections_asked_for(data, full, capsys, monkeypatch, options, kinds):
    gold, run, labels = data
    monkeypatch.setenv("COLUMNS", "200")  # every table in its wide form
    options = [str(labels) if o == "LABELS" else o for o in options]
    base = ["evaluate", "--gold", str(gold), "--run", str(run), "--resamples", "50", *options]
    capsys.readouterr()
    assert main([*base, "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert {r.key for r in SECTIONS} & set(summary) == kinds
    assert main([*base, "--markdown"]) == 0
    # each section has one heading of its own: the output's headings are those of the kinds asked for, in order
    heading = {k: _headings(SECTION[k].markdown(part, 0.95))[0] for k, part in full.sections().items()}
    assert _headings(capsys.readouterr().out) == [heading[r.key] for r in SECTIONS if r.key in kinds]
    assert main(base) == 0
    terminal = capsys.readouterr().out
    titled = {"sweep": None, "segments": None}  # (their tables have no title: the other checks cover them)
    for key in EVALUATION_KINDS - set(titled):
        title = _title(SECTION[key].renderable(full.sections()[key], 0.95)).split(" (")[0]  # (the rest may wrap)
        assert (title in terminal) == (key in kinds), key


def _title(renderable: object) -> str:
    """The title of a section's (first) table in the terminal."""
    from rich.console import Group
    from rich.table import Table

    while not isinstance(renderable, Table):
        if isinstance(renderable, Group):
            renderable = next(r for r in renderable.renderables if isinstance(r, (Group, Table)) or hasattr(r, "build"))
        else:  # FitToWidth: its wide form
            renderable = renderable.build(False)  # type: ignore[attr-defined]
    return str(renderable.title)


def test_the_full_terminal_output_is_the_panel_then_each_section(data, full, capsys, monkeypatch):
    from rich.console import Console

    from rankgate.render.sections import sections_renderables
    from rankgate.render.terminal import print_evaluation

    gold, run, labels = data
    monkeypatch.setenv("COLUMNS", "150")
    capsys.readouterr()
    assert main(["evaluate", "--gold", str(gold), "--run", str(run), *ALL, "--judged", str(labels)]) == 0
    out = capsys.readouterr().out
    console = Console(file=io.StringIO(), width=150, record=True)
    print_evaluation(full.result, full.cis, full.confidence, console=console)
    for part in sections_renderables(full):
        console.print()
        console.print(part)
    assert out == console.export_text()
    assert len(sections_renderables(full)) == len(EVALUATION_KINDS)
