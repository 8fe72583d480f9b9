"""Every markdown writer keeps user and production text inert.

The writers are found, not listed: every function of ``rankgate.render`` whose name ends in
``_markdown``. Each is wrapped to record that it ran and to check what it returned; the commands
that write markdown then run on files whose query ids, chunk ids, segment values, gate labels,
owners and trace values are hostile (a heading, raw HTML with ``onerror``, an ``@mention``, ``|``,
newlines, a bidi control, backticks, a link). A writer no scenario reaches fails the test, so a new
writer needs a hostile case before it ships.

Inert means, outside fenced code blocks: no raw HTML tag, no live mention, no bidi control, no
heading, link or code span from the values, and every table row has its header's number of cells.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from rankgate.cli.main import main

EVIL = "x\n## Approved\n<img src=x onerror=alert(1)> @octocat | y \u202e `z` [l](u) *b*"
EVIL_ID = "c|<img/src=x/onerror=alert(1)>@octocat`[l](u)`#"  # no spaces: ids


def _strip_fences(text: str) -> str:
    out, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            out.append(line)
    return "\n".join(out)


def _cells(line: str) -> int:
    return len(re.findall(r"(?<!\\)\|", re.sub(r"\\\\", "", line)))


def assert_inert(md: str, where: str) -> None:
    text = _strip_fences(md)
    assert "\u202e" not in md, where
    assert not re.search(r"<\s*(img|b|script|a|svg)\b", text, re.I), (where, text)
    assert not re.search(r"(?<![A-Za-z0-9])@octocat", text), where
    for line in text.splitlines():
        assert not re.match(r"\s{0,3}#{1,6}\s+Approved", line), (where, line)
        assert "[l](u)" not in line and "`z`" not in line and "*b*" not in line, (where, line)
    lines = text.splitlines()
    i = 0
    while i < len(lines):  # a table: a header row, then a |---| row, then its rows
        if lines[i].startswith("|") and i + 1 < len(lines) and re.match(r"\|\s*:?-{3,}", lines[i + 1]):
            want = _cells(lines[i])
            j = i + 1
            while j < len(lines) and lines[j].startswith("|"):
                assert _cells(lines[j]) == want, (where, lines[i], lines[j])
                j += 1
            i = j
        else:
            i += 1


def writers() -> dict[str, tuple[Any, str]]:
    """``module.name`` -> (module, name) of every markdown writer in rankgate.render."""
    import rankgate.render as pkg

    found = {}
    for info in pkgutil.iter_modules(pkg.__path__):
        module = importlib.import_module(f"rankgate.render.{info.name}")
        for name, obj in vars(module).items():
            if name.endswith("_markdown") and callable(obj) and getattr(obj, "__module__", "") == module.__name__ \
                    and getattr(obj, "__name__", name) == name:  # (an alias kept for old callers is its function)
                found[f"{info.name}.{name}"] = (module, name)
    return found


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, int], set[str]]:
    """Wrap every writer: count its calls and check that what it returns is inert. Gives the counts
    and the names of all writers."""
    calls: dict[str, int] = {}
    found = writers()
    for key, (module, name) in found.items():
        real = getattr(module, name)

        def wrapped(*args: Any, _real: Callable[..., Any] = real, _key: str = key, **kwargs: Any) -> Any:
            out = _real(*args, **kwargs)
            calls[_key] = calls.get(_key, 0) + 1
            assert_inert(out if isinstance(out, str) else "\n".join(out), _key)
            return out

        monkeypatch.setattr(module, name, wrapped)
    return calls, set(found)


# -- hostile inputs -----------------------------------------------------------------------------------------
def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def _qid(i: int) -> str:
    return f"q{i}|<b>@octocat" if i % 3 == 0 else f"q{i}"


def _chunk(i: int, k: int) -> str:
    return f"{EVIL_ID}{i}-{k}" if k == 0 else f"d{i}#c{k}"


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("inert")
    n = 24
    gold = [{"query_id": _qid(i), "query": f"question {i} " + (EVIL if i % 4 == 0 else ""),
             "relevant_chunks": [{"chunk_id": _chunk(i, 0), "grade": 2}, {"chunk_id": _chunk(i, 1), "grade": 1}],
             "must_not_retrieve": [_chunk(i, 9)], "tags": {"tenant": EVIL if i % 2 else "acme"},
             "created": "2026-01-0" + str(1 + i % 9), "as_of": "2026-03-01",
             "expected_source": EVIL_ID if i % 2 else "kb", "entities": [EVIL_ID, f"e{i}"],
             "conversation_id": f"{EVIL_ID}{i // 3}" if i < 12 else None, "turn": 1 + i % 3 if i < 12 else None}
            for i in range(n)]

    def run(shift: int) -> list[dict]:
        pool = (0, 1, 2, 3, 9)
        return [{"query_id": _qid(i), "latency_ms": {"retrieve": 10.0 + i + shift, "rerank": 5.0 + (i * 7) % 11},
                 "cost": {"usd": 0.001 + 0.0001 * ((i + shift) % 4), "tokens_in": 900 + 10 * i, EVIL_ID: 1.0 + i % 2},
                 "cpu_ms": 100.0 + i, "memory_mb": 400.0 + shift, "adapter": EVIL if i % 2 else "llamaindex",
                 "chunker": {"method": EVIL, "tokens": 512 + shift}, "index_version": EVIL_ID + str(shift),
                 "linked_entities": [EVIL_ID] if (i + shift) % 2 else [f"e{i}"],
                 "topk": [{"chunk_id": _chunk(i, pool[(k + shift + i) % 5]), "score": 1.0 - k / 10,
                           "doc_version": f"2026-0{1 + (k + i) % 6}-01", "source": EVIL_ID if k % 2 else "kb"}
                          for k in range(5)]} for i in range(n)]

    corpus = [{"chunk_id": _chunk(i, k), "doc_id": f"d{i}", "text": f"text of chunk {k} of doc {i}. " + EVIL,
               "status": "retired" if k == 9 else "active"} for i in range(n) for k in (0, 1, 2, 3, 9)]
    corpus2 = [dict(r, text=r["text"] + " changed") if r["chunk_id"].endswith("-0") else dict(r) for r in corpus]
    for r in corpus2[0::10]:  # some of the hostile-id chunks lose most of their text: reviewed by hand
        r["text"] = r["text"].split(".")[0] + " and then many other words about quite another subject"
    gold2 = [dict(g, relevant_chunks=g["relevant_chunks"][:1]) if i % 5 == 0 else g for i, g in enumerate(gold)]
    criteria = tmp / "ship.yaml"
    criteria.write_text(json.dumps({"gates": [
        {"name": "recall_at_5", "metric": "recall@5", "threshold": 0.99, "regression_max": 0.01,
         "segments": ["tenant"], "min_queries": 1, "label": EVIL, "owner": "@octocat <img src=x onerror=alert(1)>"},
        {"name": "forbidden", "metric": "forbidden@5", "max": 0, "severity": "warning", "label": EVIL},
        {"name": "critical", "metric": "mrr", "threshold": 0.5, "label": EVIL, "min_queries": 30,
         "segments": {"tenant": {EVIL: {"threshold": 0.99, "owner": "@octocat <img src=x onerror=alert(1)>"},
                                 "acme": {"regression_max": 0.01}}}}],
        "latency": [{"stage": "retrieve", "median_ms": 5, "regression_max_ms": 1, "segments": ["tenant"],
                     "min_queries": 1}],
        "cost": [{"key": "usd", "mean_max": 0.0001, "regression_max": 0.0002, "segments": ["tenant"], "min_queries": 1,
                  "owner": "@octocat <img src=x onerror=alert(1)>", "label": EVIL}]}),
        encoding="utf-8")
    traces = [{"request_id": f"r{i}|@octocat", "timestamp": f"2026-05-{1 + i % 9:02d}T00:00:00Z",
               "query": EVIL, "tenant": EVIL if i % 2 else "acme", "status": "error" if i % 3 == 0 else "ok",
               "retrieved": [{"stage": "packed", "rank": 1, "id": EVIL_ID, "score": 0.5, "status": "deprecated"}]}
              for i in range(60)]
    # production requests of the gold queries (validity joins them on the query text)
    asked = [{"request_id": f"v{i}|@octocat", "timestamp": f"2026-05-{1 + i % 9:02d}T00:00:00Z",
              "query": gold[i % n]["query"], "tenant": EVIL if i % 2 else "acme",
              "status": "error" if i % 5 == 0 else "ok",
              "retrieved": [{"stage": "packed", "rank": 1, "id": EVIL_ID, "score": 0.5}]} for i in range(4 * n)]
    monitors = tmp / "monitors.yaml"
    monitors.write_text(json.dumps({"monitors": [
        {"name": "errors " + EVIL, "signal": "error_rate_per_1k", "max": 1, "segments": ["tenant"],
         "owner": EVIL}]}), encoding="utf-8")
    answers = [{"query_id": _qid(i), "answer": f"answer {i} " + EVIL,
                "contexts": [{"id": _chunk(i, k), "text": f"text of chunk {k} of doc {i}. " + EVIL} for k in (0, 2)]}
               for i in range(n)]
    answer_criteria = tmp / "answers.yaml"
    answer_criteria.write_text(json.dumps({"gates": [{"name": "hit", "metric": "hit@2", "threshold": 0.99,
                                                      "segments": ["tenant"], "min_queries": 1, "label": EVIL}]}),
                               encoding="utf-8")
    return {"answers": _jsonl(tmp / "answers.jsonl", answers), "answer_criteria": answer_criteria,
            "gold": _jsonl(tmp / "gold.jsonl", gold), "gold2": _jsonl(tmp / "gold2.jsonl", gold2),
            "base": _jsonl(tmp / "base.jsonl", run(0)), "cand": _jsonl(tmp / "cand.jsonl", run(1)),
            "third": _jsonl(tmp / "third|<b>@octocat`[l](u)`.jsonl", run(2)), "corpus": _jsonl(tmp / "corpus.jsonl", corpus),
            "corpus2": _jsonl(tmp / "corpus2.jsonl", corpus2), "criteria": criteria,
            "traces": _jsonl(tmp / "traces.jsonl", traces), "monitors": monitors,
            "asked": _jsonl(tmp / "asked.jsonl", asked),
            "trace": _jsonl(tmp / "trace.json", traces[1:2]), "dir": tmp}


def _scenarios(f: dict[str, Path], out: Path) -> Iterator[tuple[str, list[Any], Path | None]]:
    """(name, argv — or a one-item list of a function that prints the markdown —, file the markdown is
    written to or None for stdout)."""
    yield "evaluate", ["evaluate", "--gold", f["gold"], "--run", f["cand"], "--markdown", "--by", "tenant",
                       "--sweep", "recall", "--metrics", "recall@5,ndcg@10,forbidden@5"], None
    yield "what-if", ["evaluate", "--gold", f["gold"], "--run", f["cand"], "--markdown", "--by", "tenant",
                      "--enforce-as-of", "--routing", "--entity-linking", "--resamples", "200"], None
    yield "rewrite", ["compare", f["base"], f["cand"], "--gold", f["gold"], "--rewrite", "--markdown", "--by", "tenant",
                      "--permutations", "200"], None
    yield "stress", ["stress", "--gold", f["gold"], "--run", f["cand"], "--corpus", f["corpus"], "--negatives",
                     "must-not", "--by", "tenant", "--resamples", "200", "--out", out / "stress"], out / "stress/stress.md"
    yield "compare", ["compare", f["base"], f["cand"], "--gold", f["gold"], "--by", "tenant", "--markdown",
                      "--permutations", "200"], None
    yield "compare3", ["compare", f["base"], f["cand"], f["third"], "--gold", f["gold"], "--markdown",
                       "--permutations", "200"], None
    yield "gate", ["gate", "--config", f["criteria"], "--gold", f["gold"], "--candidate", f["cand"], "--baseline",
                   f["base"], "--comment", out / "comment.md", "--no-step-summary", "--corpus", f["corpus"],
                   "--candidate-label", EVIL, "--baseline-label", EVIL_ID], out / "comment.md"
    yield "validate", ["gold", "validate", "--gold", f["gold"], "--corpus", f["corpus"], "--config", f["criteria"],
                       "--as-of", "2026-06-01", "--format", "markdown"], None
    yield "stale", ["gold", "stale", "--gold", f["gold"], "--corpus", f["corpus2"], "--since", f["corpus"],
                    "--format", "markdown"], None
    yield "diff", ["gold", "diff", f["gold"], f["gold2"], "--format", "markdown"], None
    yield "remap", ["gold", "remap", "--gold", f["gold"], "--old-corpus", f["corpus"], "--new-corpus", f["corpus2"],
                    "-o", out / "remapped.jsonl"], out / "remapped.review.md"
    yield "traces", ["traces", "check", "--traces", f["traces"], "--monitors", f["monitors"], "--summary",
                     out / "check.md"], out / "check.md"
    yield "incident", ["incident", "new", "--trace", f["trace"], "-o", out / "pm.md"], out / "pm.md"
    yield "answers", ["answers", "--answers", f["answers"], "--gold", f["gold"], "--config", f["answer_criteria"],
                      "--comment", out / "answers.md", "--no-cache", "--by", "tenant", "--resamples", "200"], \
        out / "answers.md"
    yield "validity", ["validity", "--gold", f["gold"], "--run", f["cand"], "--traces", f["asked"], "--by", "tenant",
                       "--out", out / "validity"], out / "validity" / "validity.md"
    # bounds_markdown renders a summary.json's bounds (python -m rankgate.render.bounds SUMMARY): a
    # hostile file's metric names are the values here
    bounds = {"lower": {EVIL: 0.5}, "upper": {EVIL: 0.7}, "corrected": None, "queries": 3, "judged_items": 4,
              "above_upper": [EVIL], "k": 10}
    yield "bounds", [lambda: _bounds(bounds)], None
    # the report's follow-up section (HTML from this markdown): metric names and counts, no user text
    yield "followup", [lambda: _followup(f["gold"], f["cand"])], None


#: Scenarios whose markdown holds no user text (checked inert all the same)
NO_USER_TEXT = {"followup"}


def _followup(gold: Path, run: Path) -> int:
    import rankgate
    from rankgate.render.conversations import followup_markdown
    from rankgate.stats.options import Statistics

    result = rankgate.evaluate(str(gold), str(run), metrics=["recall@5", "mrr"])
    md = followup_markdown(result, ["recall@5", "mrr"], Statistics(resamples=200))
    assert md is not None
    print(md, end="")
    return 0


def _bounds(b: dict) -> int:
    from rankgate.render import bounds as module

    print(module.bounds_markdown(b), end="")
    return 0


def test_every_markdown_writer_keeps_hostile_values_inert(files: dict[str, Path], tmp_path: Path,
                                                          recorded: tuple[dict[str, int], set[str]],
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    calls, found = recorded
    for name, argv, written in _scenarios(files, tmp_path):
        capsys.readouterr()
        code = argv[0]() if callable(argv[0]) else main([str(a) for a in argv])
        out = capsys.readouterr()
        assert code in (0, 1), (name, out.err)
        text = written.read_text(encoding="utf-8") if written is not None else out.out
        assert name in NO_USER_TEXT or "octocat" in text, name  # the hostile values reached the output
        assert_inert(text, name)
    assert len(found) >= 20  # the discovery itself works
    unreached = sorted(found - set(calls))
    assert not unreached, f"markdown writers no hostile scenario reaches: {unreached}"
