"""The terminal text of ``rankgate demo``: a short story rendered from a finished :class:`DemoResult`.

Nine numbered parts: the data, the two retriever configurations and what the "pull request"
changes, the scores with their intervals, what changed per language, the gate's verdict, the answers,
whether the offline metric predicts what users meet in production, where every file is, and what to
run next. Plain text (no colour codes) wrapped to the terminal's width (``COLUMNS``
or the terminal itself; 100 columns at most, and when the output is not a terminal), never splitting a
word, so it reads the same in a terminal, a CI log or a bug report. Tables keep their columns; prose and
commands wrap. Nothing here computes a number; it only formats.

Run it to see it: ``python -m rankgate.demo.story [OUT_DIR]``.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rankgate.render.comment import gate_counts, gate_sentences
from rankgate.render.numbers import (
    fmt_answer_value,
    fmt_delta,
    fmt_delta_ci,
    fmt_pp,
    fmt_rank,
    fmt_score,
    fmt_share,
    fmt_value,
    fmt_value_ci,
    shorten,
)
from rankgate.demo.pipeline import DEPTH, SEGMENT_FIELD, DemoResult

__all__ = ["render", "terminal_width"]

MAX_WIDTH = 100
MIN_WIDTH = 40
LANGUAGES = {"en": "English", "de": "German", "es": "Spanish"}


def _lang(code: str) -> str:
    return LANGUAGES.get(code, code)


def _count(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _shown(path: Path) -> str:
    """A path as the user should type it: relative to the current folder when it is inside it."""
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive on Windows
        return str(path)
    return str(path) if rel.startswith("..") else rel


def _option(value: Any) -> str:
    return "none" if value is None else str(value)


@dataclass(frozen=True)
class Para:
    """Prose: wrapped to the width, the first line after ``first``, the others after ``rest``."""

    text: str
    first: str = "   "
    rest: str = "   "


@dataclass(frozen=True)
class Command:
    """A shell command: broken before an option with `` \\`` when it does not fit."""

    text: str
    indent: str = "     "


Line = str | Para | Command


def terminal_width() -> int:
    """Columns to wrap to: ``COLUMNS`` or the terminal's width, at most 100; 100 when not a terminal."""
    import shutil

    return max(MIN_WIDTH, min(MAX_WIDTH, shutil.get_terminal_size((MAX_WIDTH, 24)).columns))


def render(result: DemoResult, *, elapsed: float | None = None, strict: bool = False, width: int = MAX_WIDTH) -> str:
    """The whole terminal text wrapped to ``width`` columns; ``elapsed`` (seconds) is shown when given,
    never written to a file."""
    lines: list[Line] = [Para("rankgate demo: score two retrievers on a built-in gold set, compare them, gate the change.",
                              "", ""), ""]
    width = max(MIN_WIDTH, width)
    for part in (_data, _configs, _scores, _changes, _gate, _answers, _validity, _files, _next):
        lines += part(result, strict, width)
        lines.append("")
    if elapsed is not None:
        lines.append(f"Done in {fmt_score(elapsed, 1)} s.")
    else:
        lines.pop()
    width = max(MIN_WIDTH, width)
    out: list[str] = []
    for line in lines:
        if isinstance(line, Para):
            out += _wrap(line, width)
        elif isinstance(line, Command):
            out += _command(line, width)
        else:
            out.append(line)
    return "\n".join(out) + "\n"


def _wrap(p: Para, width: int) -> list[str]:
    import textwrap

    from rich.cells import cell_len

    # textwrap counts characters; an emoji such as ❌ takes two columns, so narrow until the cells fit.
    for w in range(width, max(width - 4, 10), -1):
        lines = textwrap.wrap(p.text, w, initial_indent=p.first, subsequent_indent=p.rest, break_on_hyphens=False,
                              break_long_words=False) or [p.first.rstrip()]
        if all(cell_len(line) <= width for line in lines):
            break
    return lines


def _command(c: Command, width: int) -> list[str]:
    """``rankgate gate --config x --gold y`` over as many lines as it needs, each option kept whole."""
    import re

    words = re.findall(r"'[^']*'|\S+", c.text)  # a quoted path stays one word
    parts: list[str] = []  # a word, or an option with its value
    for w in words:
        if parts and not w.startswith("-") and parts[-1].startswith("-") and " " not in parts[-1]:
            parts[-1] += " " + w
        else:
            parts.append(w)
    out, current = [], c.indent + parts[0]
    for part in parts[1:]:
        if len(current) + 1 + len(part) + 2 > width:
            out.append(current + " \\")
            current = c.indent + "  " + part
        else:
            current += " " + part
    return out + [current]


def _data(r: DemoResult, strict: bool, width: int = MAX_WIDTH) -> list[Line]:
    c, g = r.corpus, r.gold
    langs = ", ".join(f"{n} {_lang(k)}" for k, n in c["languages"].items())
    private = {k: n for k, n in c["tenants"].items() if k != "shared"}
    corpus = f"{c['chunks']} chunks from {c['documents']} documents: {langs}"
    if private:
        corpus += (f"; incl. internal documents of {len(private)} customer workspaces "
                   f"({', '.join(f'{k}: {n} chunks' for k, n in private.items())})")
    qlangs = ", ".join(f"{n} {_lang(k)}" for k, n in g["languages"].items())
    out: list[Line] = [Para("1. Data: Taskfolio, a fictional help centre that ships with rankgate", "", "   "),
                       Para(corpus, "   corpus  ", " " * 11)]
    out.append(Para(f"{g['queries']} queries ({qlangs}) with {g['judgements']} graded judgements; "
                    f"{g['answerable']} answerable, {g['no_answer']} with no answer in the corpus; "
                    f"{g['with_forbidden']} list chunks they must not get", "   gold    ", " " * 11))
    return out


def _configs(r: DemoResult, strict: bool, width: int = MAX_WIDTH) -> list[Line]:
    out: list[Line] = [Para(f"2. Two retriever configurations indexed the corpus and ran every gold query "
                            f"(top {DEPTH} hits):", "", "   ")]
    for run in r.runs:
        out.append(f"   {run.role:<9}  {run.config.name}")
        out.append(Para(run.config.description, " " * 14, " " * 14))
    if r.changes:
        diff = ", ".join(f"{k} {_option(a)} -> {_option(b)}" for k, (a, b) in r.changes.items())
        out.append(Para(f"The pull request changes the text analysis only: {diff}. German and Spanish words are now "
                        "stemmed as English: \"Rechnungen\" no longer matches \"Rechnung\". English is most of the "
                        "traffic, so the overall numbers barely move."))
    return out


def _scores(r: DemoResult, strict: bool, width: int = MAX_WIDTH) -> list[Line]:
    metrics = r.baseline.result.metric_names
    n = r.gold["answerable"]
    from rankgate.stats.clusters import resampling_line

    units = resampling_line(r.baseline.result)  # the gold set's conversations, when it has them
    how = f"bootstrap over conversations, seed {r.seed}; {units}" if units else f"bootstrap over queries, seed {r.seed}"
    out: list[Line] = [Para(f"3. Scores (means over the {n} answerable queries, 95% CI by {how}):", "", "   "),
           ]
    rows = []
    for m in metrics:
        cells = []
        for run in r.runs:
            low, high = run.ci(m)
            cells.append(f"{fmt_value(m, run.mean(m)):>7} ({fmt_value_ci(m, low, high)})")
        rows.append((m, cells))
    names = [f"{run.role} {run.config.name}" for run in r.runs]
    mw = max(len("metric"), *(len(m) for m in metrics))
    cw = max(len(c) for _, cells in rows for c in cells)
    if 3 + mw + 2 * (2 + max(cw, *map(len, names))) - 2 <= width:  # one line per metric, names as headers
        cw = max(cw, *map(len, names))
        out.append(f"   {'metric':<{mw}}  {names[0]:<{cw}}  {names[1]}".rstrip())
        out += [f"   {m:<{mw}}  {cells[0]:<{cw}}  {cells[1]}" for m, cells in rows]
    elif 3 + mw + 2 * (2 + cw) - 2 <= width:  # the same, with each run's role over its name
        out.append(f"   {'':<{mw}}  {r.runs[0].role:<{cw}}  {r.runs[1].role}")
        out.append(f"   {'metric':<{mw}}  {shorten(r.runs[0].config.name, cw):<{cw}}  {shorten(r.runs[1].config.name, cw)}")
        out += [f"   {m:<{mw}}  {cells[0]:<{cw}}  {cells[1]}" for m, cells in rows]
    else:  # narrow: each metric, then one line per run
        rw = max(len(run.role) for run in r.runs)
        for m, cells in rows:
            out.append(f"   {m}")
            out += [f"     {run.role:<{rw}}  {c.strip()}" for run, c in zip(r.runs, cells)]
    forbidden = [m for m in metrics if m.startswith("forbidden")]
    if forbidden:
        checked = r.baseline.forbidden.checked
        out.append(Para(f"{forbidden[0]} is over the {checked} queries that list chunks they must not get; "
                        "lower is better."))
    return out


def _changes(r: DemoResult, strict: bool, width: int = MAX_WIDTH) -> list[Line]:
    gated = [g.metric for g in r.config.gates if g.segments and g.regression_max is not None]
    metrics = gated[:2] or list(r.baseline.result.metric_names[:2])
    out: list[Line] = [Para("4. What the pull request changed (candidate − baseline, paired by query, with 95% CI):",
                            "", "   ")]
    scopes: list[tuple[str | None, str]] = [(None, "all queries")]
    scopes += [(lang, f"{_lang(lang)} ({r.change(metrics[0], lang).n})") for lang in r.languages]
    table = []
    for seg, name in scopes:
        cells = []
        for m in metrics:
            row = r.change(m, seg)
            cells.append(f"{fmt_delta(m, row.delta)} ({fmt_delta_ci(m, row.ci_low, row.ci_high)})")
        table.append((name, cells))
    nw = max(16, max(len(name) for name, _ in table) + 2)
    cw = max(30, max(len(c) for _, cells in table for c in cells) + 4)
    if 3 + nw + cw * (len(metrics) - 1) + max(len(c) for _, cells in table for c in cells[-1:]) > width:
        cw = max(len(m) for m in metrics)
        cw = max(cw, max(len(c) for _, cells in table for c in cells)) + 2
    if 3 + nw + cw * (len(metrics) - 1) + max(len(c) for _, cells in table for c in cells[-1:]) <= width:
        head = "".join(f"{m:<{cw}}" for m in metrics).rstrip()
        out.append(f"   {'':<{nw}}{head}")
        out += [f"   {name:<{nw}}" + "".join(f"{c:<{cw}}" for c in cells).rstrip() for name, cells in table]
    else:  # narrow: one small table per metric (each value under its name when even that is too wide)
        nw = max(len(name) for name, _ in table) + 2
        for i, m in enumerate(metrics):
            out.append(f"   {m}")
            for name, cells in table:
                if 5 + nw + len(cells[i]) <= width:
                    out.append(f"     {name:<{nw}}{cells[i]}")
                else:
                    out += [f"     {name}", f"       {cells[i]}"]
    primary = r.comparison.primary
    overall = r.change(primary)
    worst = min(r.languages, key=lambda lang: _worsening(r, primary, lang))
    seg = r.change(primary, worst)
    if _worsening(r, primary, worst) < 0 and overall.delta != 0 and not math.isnan(seg.delta):
        times = seg.delta / overall.delta
        out.append(Para(f"Over all queries {primary} moves {fmt_delta(primary, overall.delta)}; for {_lang(worst)} "
                        f"queries {fmt_delta(primary, seg.delta)}"
                        + (f", {fmt_score(times, 0)} times as much." if times >= 1.5 else ".")
                        + " The overall mean hides where the change is: it is concentrated in one language."))
        lang_of = dict(zip(r.baseline.result.query_ids, r.baseline.result.segment(SEGMENT_FIELD)))
        examples = [c for c in r.comparison.regressions if lang_of.get(c.query_id) == worst][:3]
        if examples:
            out.append(Para(f"{_lang(worst)} queries that lost most ({primary}; rank of the first relevant chunk):"))
            ranks = {c.query_id: f"rank {fmt_rank(c.baseline_rank)} -> {fmt_rank(c.candidate_rank)}" for c in examples}
            room = width - 5 - max(map(len, ranks)) - 2 - max(map(len, ranks.values())) - 1
            tw = max(12, min(50, room))  # the quoted text's column, as wide as the terminal allows
            for c in examples:
                text = shorten(r.queries.get(c.query_id) or "", tw - 4)
                out.append(f"     {c.query_id:<{max(map(len, ranks))}}  {text!r:<{tw}} {ranks[c.query_id]}")
    return out


def _worsening(r: DemoResult, metric: str, lang: str) -> float:
    """The change of ``metric`` for ``lang`` signed so that negative is worse."""
    row = r.change(metric, lang)
    if math.isnan(row.delta):
        return math.inf
    return row.delta if row.higher_is_better else -row.delta


def _gate(r: DemoResult, strict: bool, width: int = MAX_WIDTH) -> list[Line]:
    o = r.gate
    failed, blocking, _ = gate_counts(o.to_dict())  # (the comment's count: quality, latency and cost gates alike)
    out: list[Line]
    if o.passed:
        out = [Para(f"5. Gate (data/ship-criteria.yaml): PASS, all {blocking} blocking gates pass.", "", "   ")]
    else:
        out = [Para(f"5. Gate (data/ship-criteria.yaml): FAIL, {failed} of {blocking} blocking gates fail.",
                    "", "   "),
               "   This pull request would be blocked:"]
    out += [Para(sentence, "   ", "      ") for sentence in gate_sentences(o, markdown=False)]
    out += _evidence(r)
    if not o.passed and r.gate_overall_only.passed:
        out.append(Para("Checked over all queries only (the same criteria without `segments: [lang]`), the gate "
                        "passes: only the per-language check catches this regression."))
    fb = r.candidate.forbidden
    if fb.queries:
        parts = []
        if fb.stale:
            parts.append(f"{len(fb.stale)} got a superseded or deprecated page (old prices, a retired API)")
        if fb.other_tenant:
            parts.append(f"{len(fb.other_tenant)} another customer workspace's internal document")
        finding = (f"forbidden@5: {len(fb.queries)} of {fb.checked} queries were shown a chunk they must not get: "
                   f"{'; '.join(parts)}. Neither retriever filters by document status or tenant. That is a real "
                   "finding, and the warning shows it without blocking the merge.")
        out.append(Para(finding))
    if not o.passed:
        if strict:
            out.append(Para(f"--strict: rankgate demo exits with the gate's code, {o.exit_code}."))
        else:
            out.append(Para("The failure is the point of the demo: the demo itself ran fine and exits 0 "
                            f"(`rankgate demo --strict` exits with the gate's code, {o.exit_code}, as `rankgate gate` "
                            "does in CI)."))
    return out


def _evidence(r: DemoResult) -> list[Line]:
    """A plain word on how strong the evidence is when it is borderline, either way."""
    checks = [c for g in r.gate.results for c in g.checks if c.kind == "regression" and c.field is not None]
    failed = [c for c in checks if c.status == "fail"]
    noisy = [c for c in checks if c.status == "pass" and "within noise" in c.note]
    if failed:
        c = failed[0]
        near = min(abs(c.ci_low), abs(c.ci_high))
        if near < 0.1 * abs(c.value):
            lang = _lang(c.segment or "")
            return [Para(f"The evidence is borderline: the interval ends {fmt_pp(c.metric, near)} short of 0 with "
                         f"{c.n} {lang} queries; with a few other --seed values it reaches 0 and the gate lets "
                         f"the change through. More {lang} queries would settle it.")]
        return []
    if noisy:
        langs = ", ".join(dict.fromkeys(_lang(c.segment or "") for c in noisy))
        return [Para(f"The drops beyond the limits ({langs}) are not established with this many queries, so "
                     "the gate lets the change through. More queries in that language would settle it.")]
    return []


def _files(r: DemoResult, strict: bool, width: int = MAX_WIDTH) -> list[Line]:
    folder = _shown(r.out_dir)
    out: list[Line] = [f"8. Files, in {folder}{os.sep}"]
    width = max(len(o.relative) for o in r.outputs)
    for o in r.outputs:
        out.append(Para(o.what, f"   {o.relative:<{width}}  ", " " * (width + 5)))
    out += [Para(note) for note in r.notes]
    out.append(Para("compare.md's verdicts are Holm-corrected across its whole table, so they are stricter than "
                    "the gate, which asks one question per gate and language (docs/demo.md explains both)."))
    return out


def _next(r: DemoResult, strict: bool, width: int = MAX_WIDTH) -> list[Line]:
    import shlex

    def at(rel: str) -> str:
        return shlex.quote(_shown(r.out_dir / rel))

    out: list[Line] = ["9. Next"]
    if any(o.key == "report" for o in r.outputs):
        out.append(Para(f"Open {at('report.html')} in a browser: the same story with charts and the missed queries."))
    out += [
        Para("Re-run the gate on the demo's files; then edit data/ship-criteria.yaml (drop `segments: [lang]`) "
             "and run it again:"),
        Command(f"rankgate gate --config {at('data/ship-criteria.yaml')} --gold {at('data/gold.jsonl')} "
                f"--baseline {at('runs/baseline.jsonl')} --candidate {at('runs/candidate.jsonl')}"),
        Para("On your own data (corpus.jsonl and gold.jsonl in the shape of the demo's; see docs/demo.md):"),
        Command("rankgate retrieve --corpus corpus.jsonl --gold gold.jsonl --retriever bm25 -o main.jsonl"),
        Command("rankgate evaluate --gold gold.jsonl --run main.jsonl --by lang --out results"),
        Command("rankgate compare --gold gold.jsonl main.jsonl pr.jsonl --by lang"),
        Command("rankgate gate --config ship-criteria.yaml --gold gold.jsonl --baseline main.jsonl "
                "--candidate pr.jsonl --comment pr-comment.md"),
        Command("rankgate report --gold gold.jsonl --run pr.jsonl --baseline main.jsonl --by lang "
                "--config ship-criteria.yaml -o report.html"),
        Para("Plug in your own retriever with --retriever package.module:YourClass (rankgate retrieve --help)."),
        Para("Score your RAG answers (layer two) with any OpenAI-compatible judge, or the offline lexical one "
             "(docs/answers.md):"),
        Command("rankgate answers --answers answers.jsonl --gold gold.jsonl --corpus corpus.jsonl --out answers"),
    ]
    return out


def _validity(r: DemoResult, strict: bool, width: int = MAX_WIDTH) -> list[Line]:
    """Part 7: offline <-> online, the baseline's metrics against what users of the same queries met."""
    from rankgate.render.validity import matching_lines

    a = r.validity
    if a is None:
        return []
    out: list[Line] = [Para("7. Production (offline <-> online): does the baseline's offline metric predict what "
                            "users of the same queries meet? (data/traces.jsonl, two weeks of the baseline in "
                            "production)", "", "   ")]
    out += [Para(line, "   ", "   ") for line in matching_lines(a.matching)]
    shown = "recall@5" if "recall@5" in a.metrics else a.metrics[0]  # the gated metric
    for row in a.headline():
        if row.metric == shown:
            out.append(Para(f"{row.metric} × {row.outcome}: {row.sentence}", "   - ", "     "))
    out.append(Para("Every row, with intervals, AUC and power: validity/validity.md (docs/validity.md).", "   ", "   "))
    return out


def _answers(r: DemoResult, strict: bool, width: int = MAX_WIDTH) -> list[Line]:
    """Part 6: layer two — the answer metrics and the diagnosis grid, kept apart from retrieval."""
    s = r.answers
    if not s:
        return []
    ident = (s.get("judge") or {}).get("identity") or {}
    judge = ident.get("model") or ident.get("backend") or "?"
    lexical = ident.get("backend") == "lexical"
    q = s["queries"]
    out: list[Line] = [Para(f"6. Answers (layer two): {q['answered']} answers written for the demo, judged by "
                            f"{'the offline lexical judge (token overlap, a baseline, not a model)' if lexical else judge}; "
                            "scored apart from retrieval and never merged with it:", "", "   ")]
    m = {n: e for n, e in s["metrics"].items() if e.get("layer") != "abstention"}  # (abstention: its own line)
    name_w = max(len(n) for n in m)
    for name, entry in m.items():
        cov = entry.get("coverage")
        covered = (f"{cov['scored']}/{cov['scored'] + cov['judge_error']} scored" if cov else f"{entry['n']} scored")
        if cov and cov["not_applicable"]:
            covered += f", {cov['not_applicable']} n/a"
        value = fmt_answer_value(name, entry["mean"])
        ci = "" if entry["ci_low"] is None else (f" ({fmt_score(entry['ci_low'], 2)} to {fmt_score(entry['ci_high'], 2)})" if name == "answer_relevance"
                                                  else f" ({fmt_value_ci(name, entry['ci_low'], entry['ci_high'])})")
        out.append(Para(f"{name:<{name_w}}  {value}{ci}; {covered}", f"   {entry['layer'][:3]}  ", " " * 10))
    cells = s["grid"]["cells"]
    parts = [f"{cell} {c['count']}" for cell, c in cells.items() if c["count"]]
    out.append(Para(f"Diagnosis grid ({s['grid']['retrieval_metric']} of the packed context × the answer): "
                    + ", ".join(parts) + "."))
    for cell in ("generation problem", "corpus problem", "retrieval problem", "lucky"):
        c = cells.get(cell)
        if c and c["examples"]:
            ex = c["examples"][0]
            text = r.queries.get(ex)
            out.append(Para(f"{cell}: {ex}" + (f" '{text}'" if text else ""), "   - ", "     "))
    ab = (s.get("abstention") or {}).get("metrics") or {}
    if ab:  # correct and false abstention, unsupported answers: counted from the refusals, gated like any metric
        said = {"correct_abstention": "refused", "unsupported_answer": "answered", "false_abstention": "refused"}
        parts = [f"{name} {fmt_answer_value(name, ab[name]['mean'])} ({ab[name]['count']} of {ab[name]['of']} "
                 f"{ab[name]['over']} {word})" for name, word in said.items() if name in ab]
        out.append(Para("Abstention: " + "; ".join(parts) + ". These count refusals, so a gate on them needs no "
                        "judge calibration (docs/gating.md)."))
    h = s.get("human")
    if h and h.get("items"):
        cell = h["cell"]
        out.append(Para(f"Against human verdicts of the same {h['items']} answers (data/answer-labels.jsonl) the judge "
                        f"puts {cell['agree']} of {cell['n']} in the same cell "
                        f"(95% CI {fmt_share(cell['ci'][0], 0, unit='')}–{fmt_share(cell['ci'][1], 0)}). That is too few labels to "
                        "gate on a judge metric: a gate needs a calibration of at least 100 (docs/answers.md)."))
    return out


if __name__ == "__main__":  # pragma: no cover
    import sys
    import tempfile
    import time

    from rankgate.demo.pipeline import run_demo

    target = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="rankgate-demo-")
    start = time.perf_counter()
    demo = run_demo(target)
    sys.stdout.write(render(demo, elapsed=time.perf_counter() - start, width=terminal_width()))
