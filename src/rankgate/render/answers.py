"""Layer two on screen: the answer metrics (mean, interval, coverage) and the diagnosis grid.

Every renderer reads the plain summary of :func:`rankgate.answers.score.answers_summary` (``summary.json``
of ``rankgate answers`` holds it under ``answers``): a rich table for the terminal, markdown for the
PR comment, an HTML section for the report. The answer metrics and the retrieval verdict stay in
separate rows; nothing is merged into one number.

Run it to see it: ``python -m rankgate.render.answers OUT/summary.json``.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

from rankgate.render.numbers import fmt_answer_value, fmt_confidence, fmt_count, fmt_share, fmt_sig, md_escape

CELL_HELP = {
    "ok": "retrieval found a gold chunk; the answer is faithful (and correct)",
    "generation problem": "a gold chunk was in the context, but the answer is unfaithful or a refusal",
    "retrieval problem": "no gold chunk in the context, and the answer is not good",
    "corpus problem": "faithful to a gold chunk, yet wrong against the reference: the source is wrong or stale",
    "lucky": "no gold chunk in the context, yet a good answer: parametric memory, or a gap in the gold set",
    "undetermined": "a judge call failed; see judge_errors",
}


def _ci(metric: str, m: Mapping[str, Any]) -> str:
    if m.get("ci_low") is None:
        return "—"
    return f"[{fmt_answer_value(metric, m['ci_low'])}, {fmt_answer_value(metric, m['ci_high'])}]"


def _coverage(m: Mapping[str, Any]) -> str:
    cov = m.get("coverage")
    if cov is None:
        return f"{m['n']} scored"
    text = f"{cov['scored']}/{cov['scored'] + cov['judge_error']}"
    if cov["judge_error"]:
        text += f" ({cov['judge_error']} judge errors)"
    if cov["not_applicable"]:
        text += f", {cov['not_applicable']} n/a"
    return text


def metric_rows(s: Mapping[str, Any]) -> list[tuple[str, str, str, str, str]]:
    """(layer, metric, mean, CI, coverage) rows: the retrieval verdict first, then the answer metrics (the
    abstention metrics have their own table, :func:`abstention_rows`)."""
    rows = []
    for name, m in s["metrics"].items():
        if m.get("layer") == "abstention":
            continue
        rows.append((m["layer"], name, fmt_answer_value(name, m["mean"]), _ci(name, m), _coverage(m)))
    return rows


ABSTENTION_TITLE = "Abstention (a refusal: the record says refused: true, or the answer makes no statement)"
ABSTENTION_HELP = {
    "correct_abstention": "refused a question the corpus cannot answer",
    "unsupported_answer": "answered a question the corpus cannot answer",
    "false_abstention": "refused although a gold chunk was in the context (over-refusal)",
    "abstention_rate": "refused, of every answered query",
}
_KIND_OF = {"correct_abstention": "correct", "false_abstention": "false", "unsupported_answer": "unsupported"}


def abstention_rows(s: Mapping[str, Any]) -> list[tuple[str, str, str, str, str, str]]:
    """(metric, share, CI, "k of n", denominator, examples) rows of the abstention metrics; none when the
    answers were not checked for refusals."""
    a = s.get("abstention")
    if not a:
        return []
    out = []
    for name, m in a["metrics"].items():
        count = f"{fmt_count(m['count'])} of {fmt_count(m['of'])}"
        over = m["over"] + (f" ({fmt_count(m['unknown'])} unknown)" if m.get("unknown") else "")
        shown = ", ".join((a.get("examples") or {}).get(_KIND_OF.get(name, ""), []))
        out.append((name, fmt_answer_value(name, m["mean"]), _ci(name, m), count, over, shown))
    order = list(ABSTENTION_HELP)
    return sorted(out, key=lambda r: order.index(r[0]) if r[0] in order else len(order))


def _short_question(text: str, limit: int = 50) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def grid_rows(s: Mapping[str, Any]) -> list[tuple[str, str, str, str, str]]:
    """(cell, count, share, CI, examples) rows of the diagnosis grid, empty cells included."""
    out = []
    for cell, c in s["grid"]["cells"].items():
        ci = "—" if c["ci"] is None or c["count"] == 0 and c["ci"][1] is None else f"[{fmt_share(c['ci'][0], 0)}, {fmt_share(c['ci'][1], 0)}]"
        shown = c.get("example_questions")  # queries known by a hash of their question: the question
        examples = "; ".join(_short_question(t) for t in shown) if shown else ", ".join(c["examples"])
        out.append((cell, str(c["count"]), fmt_share(c["share"], 0), ci, examples))
    return out


def judge_line(s: Mapping[str, Any]) -> str:
    j = s.get("judge") or {}
    ident = j.get("identity") or {}
    backend, model = str(ident.get("backend") or "?"), ident.get("model")
    text = f"judge: {model}" if model and str(model).startswith(backend) else f"judge: {backend}" + (f" ({model})" if model else "")
    if ident.get("backend") == "lexical":
        text += " — a token-overlap baseline, not a language model"
    calls = j.get("calls")
    if calls:
        text += f"; {sum(calls.values())} labels"
    var = j.get("variance")
    if var:
        parts = [f"{t} {c}/{n} changed" for t, (n, c) in var.items() if n]
        if parts:
            text += f"; across {j.get('repeats')} repeats: " + ", ".join(parts)
    return text


def notes(s: Mapping[str, Any]) -> list[str]:
    q = s["queries"]
    out = list(s.get("warnings") or [])
    out.append(f"{q['answered']} answered queries (packed context up to {s['packed_k']} chunks); "
               f"{q['with_reference']} with a reference answer")
    questions = s.get("questions") or {}

    def named(ids: list[str]) -> str:  # a query known by a hash of its question is shown by its question
        return ", ".join(f"{_short_question(questions[i])!r}" if i in questions else i for i in ids[:5]) + (
            " …" if len(ids) > 5 else "")

    if q["unanswered"]:
        shown = named(q["unanswered"])
        out.append(f"{len(q['unanswered'])} gold queries have no answer in the file (not scored): {shown}")
    if q["refusals"]:
        shown = named(q["refusals"])
        declared = (s.get("abstention") or {}).get("declared_refusals") or 0
        if declared:  # records that say refused: true are refusals whatever they state
            out.append(f"{len(q['refusals'])} answers are refusals ({declared} say refused: true; the others make no "
                       f"statement): {shown}")
        else:
            out.append(f"{len(q['refusals'])} answers make no statement (refusals; faithfulness not_applicable): {shown}")
    h = s.get("human")
    if h and h.get("items"):
        def share(k: str) -> str:
            x = h[k]
            if not x["n"]:
                return f"{k} —"
            return f"{k} {x['agree']}/{x['n']} ({fmt_share(x['ci'][0], 0)}–{fmt_share(x['ci'][1], 0)})"

        out.append(f"judge against human labels of {h['items']} answers: agrees on {share('cell')}, "
                   f"{share('faithful')}, {share('correct')}"
                   + (f"; e.g. {h['disagreements'][0]['query_id']}: judge {h['disagreements'][0]['judge']}, human "
                      f"{h['disagreements'][0]['human']}" if h["disagreements"] else ""))
        fs = h.get("faithful_share")
        if fs and fs.get("ppi") is not None:
            ci = fs["ppi_ci"]
            out.append(f"share of faithful answers: judge {fmt_share(fs['judge'], 0)} over {fs['judged']}; corrected by its "
                       f"error on {fs['labelled']} human-labelled ones (prediction-powered): {fmt_share(fs['ppi'], 0)}"
                       + ("" if ci[0] is None else f" ({fmt_share(ci[0], 0)}–{fmt_share(ci[1], 0)})"))
    errs = s["judge_errors"]
    if errs["queries"]:
        first = next(iter(errs["by_query"].items()))
        out.append(f"{errs['queries']} queries have judge errors (never scored as 0); e.g. {first[0]}: {first[1][0]}")
    return out


# -- terminal -----------------------------------------------------------------------------------------
def print_answers(s: Mapping[str, Any], *, confidence: float = 0.95, console: Any = None) -> None:
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    pct = fmt_confidence(confidence)
    t = Table(title="Layer one (retrieval, gold) and layer two (answers, judge): kept apart", title_justify="left")
    for col, just in (("layer", "left"), ("metric", "left"), ("mean", "right"), (f"{pct} CI", "right"),
                      ("coverage", "left")):
        t.add_column(col, justify=just)  # type: ignore[arg-type]
    for row in metric_rows(s):
        t.add_row(*row)
    console.print(t)
    console.print()
    thr = s["grid"]["thresholds"]
    g = Table(title=f"Diagnosis grid ({s['grid']['retrieval_metric']} × answer; faithful: faithfulness ≥ "
                    f"{fmt_sig(thr['faithful_min'])} and contradiction_rate ≤ {fmt_sig(thr['contradiction_max'])}; correct: "
                    f"answer_correctness ≥ {fmt_sig(thr['correct_min'])})", title_justify="left")
    for col, just in (("cell", "left"), ("queries", "right"), ("share", "right"), (f"{pct} CI", "right"),
                      ("examples", "left")):
        g.add_column(col, justify=just)  # type: ignore[arg-type]
    for row in grid_rows(s):
        g.add_row(*row)
    console.print(g)
    console.print()
    if abstention_rows(s):
        t = Table(title=ABSTENTION_TITLE, title_justify="left")
        for col, just in (("metric", "left"), ("share", "right"), (f"{pct} CI", "right"), ("queries", "right"),
                          ("of", "left")):
            t.add_column(col, justify=just, no_wrap=col == "metric")  # type: ignore[arg-type]
        for arow in abstention_rows(s):
            t.add_row(*arow[:5])  # (the examples are in summary.json, the report and the comment)
        console.print(t)
        console.print()
    for line in [judge_line(s), *notes(s)]:
        console.print(line, highlight=False, markup=False)


# -- markdown (PR comment) ----------------------------------------------------------------------------
def answers_markdown(s: Mapping[str, Any], *, confidence: float = 0.95, heading: str = "### Answers (layer two)") -> str:
    pct = fmt_confidence(confidence)
    lines = [heading, "", f"| layer | metric | mean | {pct} CI | coverage |", "|---|---|---:|---:|---|"]
    esc = md_escape  # query ids, model names and notes are data, as everywhere in the comment
    lines += [f"| {esc(a)} | `{b.replace('`', '')}` | {c} | {d} | {esc(e, 200)} |" for a, b, c, d, e in metric_rows(s)]
    lines += ["", f"| diagnosis | queries | share | {pct} CI | examples |", "|---|---:|---:|---:|---|"]
    lines += [f"| {esc(a)} | {b} | {c} | {d} | {esc(e, 200)} |" for a, b, c, d, e in grid_rows(s) if b != "0"]
    if abstention_rows(s):
        lines += ["", f"| abstention | share | {pct} CI | queries | of | examples |", "|---|---:|---:|---:|---|---|"]
        lines += [f"| `{a}` | {b} | {c} | {d} | {esc(o)} | {esc(e, 200)} |" for a, b, c, d, o, e in abstention_rows(s)]
    lines += ["", f"<sub>{esc(judge_line(s), 400)}</sub>", ""]
    return "\n".join(lines) + "\n"


# -- HTML (report section) ----------------------------------------------------------------------------
def answers_section(s: Mapping[str, Any] | None, *, confidence: float = 0.95) -> str:
    """The report's "Answers" section, or "" when no answers were evaluated."""
    if not s:
        return ""
    e = html.escape
    pct = fmt_confidence(confidence)
    out = ['<section id="answers"><h2>Answers (layer two) and the diagnosis grid</h2>',
           ("<p>Retrieval is scored against the gold set; answers are scored from judge labels. "
            "They are never merged into one number: the grid joins them per query.</p>"),
           (f"<table><thead><tr><th>layer</th><th>metric</th><th>mean</th><th>{pct} CI</th><th>coverage</th>"
            "</tr></thead><tbody>")]
    for row in metric_rows(s):
        out.append("<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>")
    out.append("</tbody></table>")
    out.append(f"<table><thead><tr><th>diagnosis</th><th>queries</th><th>share</th><th>{pct} CI</th>"
               "<th>examples</th><th>meaning</th></tr></thead><tbody>")
    for row in grid_rows(s):
        out.append("<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + f"<td>{e(CELL_HELP.get(row[0], ''))}</td></tr>")
    out.append("</tbody></table>")
    if abstention_rows(s):
        out.append(f"<table><caption>{e(ABSTENTION_TITLE)}</caption><thead><tr><th>abstention</th><th>share</th>"
                   f"<th>{pct} CI</th><th>queries</th><th>of</th><th>examples</th><th>meaning</th></tr></thead><tbody>")
        for arow in abstention_rows(s):
            out.append("<tr>" + "".join(f"<td>{e(c)}</td>" for c in arow)
                       + f"<td>{e(ABSTENTION_HELP.get(arow[0], ''))}</td></tr>")
        out.append("</tbody></table>")
    out.append("<ul>" + "".join(f"<li>{e(n)}</li>" for n in [judge_line(s), *notes(s)]) + "</ul></section>")
    return "\n".join(out) + "\n"


if __name__ == "__main__":  # pragma: no cover
    import json
    import sys

    with open(sys.argv[1], encoding="utf-8") as fh:
        print_answers(json.load(fh)["answers"])
