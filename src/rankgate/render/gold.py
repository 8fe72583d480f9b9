"""Markdown and terminal text of the gold-set reports (:mod:`rankgate.goldset`): validate, stale, diff,
remap.

Files are named by their base name so a report reads the same wherever the files live. Run
``python -m rankgate.render.gold GOLD CORPUS`` to see the validate report of two files.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Sequence

from rankgate.goldset import GoldDiff, Relabel, StaleReport, ValidationReport
from rankgate.goldset.remap import KINDS, LabelRemap, Mapping, Remap
from rankgate.render.numbers import MINUS, fmt_confidence_exact, fmt_score, fmt_share, fmt_sig, fmt_size, md_escape

__all__ = [
    "STALE_ROWS_SHOWN",
    "diff_markdown",
    "diff_text",
    "remap_review_markdown",
    "remap_summary",
    "stale_csv",
    "stale_markdown",
    "stale_text",
    "validate_markdown",
    "validate_text",
]

STALE_ROWS_SHOWN = 50  # rows of the review list in markdown; stale.csv has them all


def _name(path: str | None) -> str:
    return os.path.basename(path.rstrip("/")) if path else "—"


def _drop(metric: str, x: float, level: float | None = None) -> str:
    if math.isinf(x) or (level is not None and x >= level):
        return "none, too few queries"  # even a fall to zero would go unseen
    return fmt_size(metric, x)


def _table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(md_escape(str(c), width=400) for c in row) + " |" for row in rows]
    return out


def _plain(header: Sequence[str], rows: Iterable[Sequence[object]], width: int = 80,
           keep: Sequence[int] = (0,)) -> list[str]:
    """A table for the terminal, at most ``width`` columns: the ``keep`` columns (ids) stay whole
    unless they alone are wider than the terminal; the others wrap at spaces."""
    import io

    from rich.box import SIMPLE_HEAD
    from rich.console import Console
    from rich.table import Table

    table = Table(box=SIMPLE_HEAD, show_edge=False, pad_edge=False, expand=False, collapse_padding=True)
    for i, h in enumerate(header):
        table.add_column(h, overflow="fold", no_wrap=i in keep)
    for row in rows:
        table.add_row(*(str(c) for c in row))
    console = Console(width=width, color_system=None, force_terminal=False, file=io.StringIO(), record=True,
                      highlight=False, emoji=False, markup=False)
    console.print(table)
    lines = [line.rstrip() for line in console.export_text().splitlines()]
    while lines and set(lines[-1]) <= {"─", " "}:  # no closing rule under the last row
        lines.pop()
    return lines


def _wrap(text: str, width: int, indent: str = "  ") -> list[str]:
    import textwrap

    return textwrap.wrap(text, width=width, subsequent_indent=indent, break_on_hyphens=False) or [""]


# -- validate -----------------------------------------------------------------------------------
def _verdict(r: ValidationReport) -> str:
    e, w = len(r.errors), len(r.warnings)
    head = "FAIL" if e else "PASS"
    return f"{head}: {e} error{'s' * (e != 1)}, {w} warning{'s' * (w != 1)} (exit {r.exit_code})"


def _facts(r: ValidationReport) -> str:
    text = (f"{r.queries} queries, {r.labels} graded labels, {r.must_not} must-not-retrieve ids, {r.no_answer} no-answer; "
            f"gold sha256 {r.gold_sha256[:12]}")
    if r.corpus_path:
        text += f"; corpus {_name(r.corpus_path)}"
    if r.config_path:
        text += f"; ship criteria {_name(r.config_path)}"
    return text


def _finding_rows(r: ValidationReport) -> list[tuple[object, ...]]:
    return [(f.severity, "" if f.line is None else f.line, f.query_id or "", f.kind, f.message) for f in r.findings]


def _mix_rows(mix: tuple[tuple[str, int], ...], total: int) -> list[tuple[object, ...]]:
    return [(name, n, fmt_share(n / total) if total else "—") for name, n in mix]


def _age_lines(r: ValidationReport) -> list[str]:
    a = r.age
    unknown = f"{a.undated} of unknown age"
    if a.undated:
        parts = [f"{a.undated - a.unreadable} without created" if a.undated > a.unreadable else "",
                 f"{a.unreadable} not a date YYYY-MM-DD" if a.unreadable else ""]
        unknown += " (" + ", ".join(x for x in parts if x) + ")"
    created = (f"created: {a.dated} dated, {unknown}" +
               (f"; oldest {a.oldest}, newest {a.newest}, median age {fmt_sig(a.median_age_days)} days as of {a.as_of}"
                if a.dated and a.median_age_days is not None else "")
               + (f"; {a.future} dated after {a.as_of}" if a.future else ""))
    versions = "corpus_version: " + ", ".join(f"{v} ({n})" for v, n in a.by_corpus_version)
    return [created, versions]


def _power_rows(r: ValidationReport) -> list[tuple[object, ...]]:
    rows: list[tuple[object, ...]] = []
    for p in r.power:
        seg = "all queries" if p.field == "all" else f"{p.field}={p.value}"
        if not p.gated:
            note = f"not gated (< {p.min_queries} queries)"
        elif p.underpowered:
            note = "cannot see regression_max"
        else:
            note = "ok"
        limit = "—" if p.regression_max is None else _drop(p.metric, p.regression_max)
        rows.append((p.gate, seg, p.queries, _drop(p.metric, p.detectable_drop, p.level), limit, note))
    return rows


_POWER_HEAD = ("gate", "segment", "queries", "smallest visible drop", "regression_max", "")
_POWER_HEAD_TEXT = ("gate", "segment", "queries", "smallest visible drop", "limit", "")
_POWER_NOTE = ("Smallest visible drop: binomial approximation, 95% confidence and 80% power, at the gate's threshold "
               "(0.5 without one); see docs/gold.md.")


def _power_note(r: ValidationReport) -> str:
    methods = {p.method for p in r.power}
    conf = f"{fmt_confidence_exact(r.confidence)} confidence"
    if "bootstrap" not in methods:
        return _POWER_NOTE.replace("95% confidence", conf)
    text = (f"Smallest visible drop: from the bootstrap standard error of baseline {_name(r.baseline_path)}'s "
            f"per-query values in each segment (paired change taken as spread like one run), {conf} and "
            "80% power")
    if "binomial" in methods:
        text += "; gates whose metric the baseline lacks use the binomial approximation"
    return text + "; see docs/gold.md."


def validate_markdown(r: ValidationReport) -> str:
    out = [f"## Gold set check: {_name(r.gold_path)}", "", f"**{_verdict(r)}**", "", _facts(r), ""]
    if r.findings:
        out += ["### Findings", "", *_table(("severity", "line", "query", "kind", "finding"), _finding_rows(r)), ""]
    out += ["### Queries by source_of_query", "", *_table(("source", "queries", "share"), _mix_rows(r.source_mix, r.queries)), ""]
    if r.tier_mix:
        out += ["### Queries by tier", "", *_table(("tier", "queries", "share"), _mix_rows(r.tier_mix, r.queries)), ""]
    out += ["### Label age", "", *(f"- {line}" for line in _age_lines(r)), ""]
    if r.power:
        out += ["### What each gate can see", "", *_table(_POWER_HEAD, _power_rows(r)), "", f"_{_power_note(r)}_", ""]
    if r.owners:
        out += ["### Gate owners", "", *_table(("gate", "owner"), ((g, o or "**none**") for g, o in r.owners)), ""]
    return "\n".join(out)


def validate_text(r: ValidationReport, *, width: int = 80) -> str:
    """The validate report for a terminal ``width`` columns wide (80 by default)."""
    out = [*_wrap(f"Gold set check: {_name(r.gold_path)}", width), *_wrap(_facts(r), width), ""]
    for f in r.findings:
        out += _wrap(f"{f.severity}: " + (f"line {f.line}: " if f.line else "") + (f"{f.query_id}: " if f.query_id else "")
                     + f"{f.message} [{f.kind}]", width)
    if r.findings:
        out.append("")
    out += _wrap("source_of_query: " + ", ".join(f"{n} {c}" for n, c in r.source_mix), width)
    if r.tier_mix:
        out += _wrap("tier: " + ", ".join(f"{n} {c}" for n, c in r.tier_mix), width)
    for line in _age_lines(r):
        out += _wrap(line, width)
    if r.power:
        out += ["", *_plain(_POWER_HEAD_TEXT, _power_rows(r), width, keep=(0, 1)),
                *_wrap("limit: the gate's regression_max. " + _power_note(r), width, "")]
    if r.owners:
        out += ["", *_wrap("owners: " + ", ".join(f"{g} {o or '(none)'}" for g, o in r.owners), width)]
    out += ["", _verdict(r)]
    return "\n".join(out) + "\n"


# -- stale --------------------------------------------------------------------------------------
def _stale_head(r: StaleReport) -> str:
    since = f" (content compared with {_name(r.since_path)})" if r.since_path else ""
    return f"{_name(r.gold_path)} against {_name(r.corpus_path)}{since}"


def _stale_summary(r: StaleReport) -> str:
    text = (f"{len(r.stale)} of {r.labels} gold ids are stale ({fmt_share(r.share)}; the gold ids are {r.graded} graded "
            f"labels and {r.must_not} must-not-retrieve ids)")
    limit = None
    if r.max_stale_labels is not None:
        limit = f"{r.max_stale_labels} gold ids"
    elif r.max_stale_share is not None:
        limit = fmt_share(r.max_stale_share)
    if limit:
        text += f"; over the limit of {limit}: exit 1" if r.over_limit else f"; within the limit of {limit}"
    return text


def _stale_rows(r: StaleReport, limit: int | None, sep: str = ";") -> list[tuple[object, ...]]:
    rows = r.stale if limit is None else r.stale[:limit]
    return [(s.query_id, s.chunk_id, s.kind, "" if s.grade is None else s.grade, sep.join(s.reasons), s.detail)
            for s in rows]


_STALE_HEAD = ("query", "chunk", "label", "grade", "reason", "detail")


def stale_markdown(r: StaleReport, *, rows: int = STALE_ROWS_SHOWN) -> str:
    out = [f"## Stale labels: {_stale_head(r)}", "", f"**{_stale_summary(r)}**", ""]
    counts = [(k, n) for k, n in r.by_reason().items() if n]
    if counts:
        out += [*_table(("reason", "gold ids"), counts), "", *_table(_STALE_HEAD, _stale_rows(r, rows))]
        if len(r.stale) > rows:
            out += ["", f"_…and {len(r.stale) - rows} more; stale.csv (-o DIR) lists every one._"]
        out.append("")
    return "\n".join(out)


def stale_text(r: StaleReport, *, rows: int = STALE_ROWS_SHOWN, width: int = 80) -> str:
    """The stale report for a terminal ``width`` columns wide (80 by default)."""
    out = [*_wrap(f"Stale labels: {_stale_head(r)}", width), *_wrap(_stale_summary(r), width)]
    counts = [(k, n) for k, n in r.by_reason().items() if n]
    if counts:
        out += [*_wrap("by reason: " + ", ".join(f"{k} {n}" for k, n in counts), width), "",
                *_plain(("query", "chunk", "label", "reason", "detail"),
                        [(q, c, "must-not" if g == "" else f"grade {g}", why, detail)
                         for q, c, _, g, why, detail in _stale_rows(r, rows, ", ")], width, keep=(0, 1, 2))]
        if len(r.stale) > rows:
            out += _wrap(f"…and {len(r.stale) - rows} more; stale.csv (-o DIR) lists every one.", width)
    return "\n".join(out) + "\n"


def stale_csv(r: StaleReport) -> str:
    """One row per stale label: query_id, chunk_id, reason, kind, grade, detail."""
    import csv
    import io

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(("query_id", "chunk_id", "reason", "kind", "grade", "detail"))
    from rankgate.render.exports import _defused  # the same spreadsheet-formula rule as metrics.csv

    for s in r.stale:
        w.writerow((_defused(s.query_id), _defused(s.chunk_id), s.reason, s.kind, "" if s.grade is None else s.grade,
                    _defused(s.detail)))
    return buf.getvalue()


# -- diff ---------------------------------------------------------------------------------------
def _change(c: Relabel) -> str:
    parts = [f"+{cid} (grade {g})" for cid, g in c.added]
    parts += [f"{MINUS}{cid} (grade {g})" for cid, g in c.removed]
    parts += [f"{cid} grade {a}→{b}" for cid, a, b in c.regraded]
    parts += [f"must_not +{cid}" for cid in c.must_not_added]
    parts += [f"must_not {MINUS}{cid}" for cid in c.must_not_removed]
    if c.no_answer is not None:
        parts.append(f"no_answer {str(c.no_answer[0]).lower()}→{str(c.no_answer[1]).lower()}")
    return "; ".join(parts)


def _diff_summary(d: GoldDiff) -> str:
    if d.identical:
        return f"{d.new_queries} queries; the files are identical"
    return (f"{d.old_queries} → {d.new_queries} queries: {len(d.added)} added, {len(d.removed)} removed, "
            f"{len(d.relabelled)} relabelled, {len(d.edited)} edited otherwise, {d.unchanged} unchanged")


def diff_markdown(d: GoldDiff) -> str:
    out = [f"## Gold set changes: {_name(d.old_path)} → {_name(d.new_path)}", "", f"**{_diff_summary(d)}**", "",
           f"sha256 {d.old_sha256[:12]} → {d.new_sha256[:12]}", ""]
    if d.added:
        out += ["### Added", "", ", ".join(f"`{q}`" for q in d.added), ""]
    if d.removed:
        out += ["### Removed", "", ", ".join(f"`{q}`" for q in d.removed), ""]
    if d.relabelled:
        out += ["### Relabelled", "", *_table(("query", "change"), ((c.query_id, _change(c)) for c in d.relabelled)), ""]
    if d.edited:
        out += ["### Edited (same labels; query text or other fields changed)", "",
                ", ".join(f"`{q}`" for q in d.edited), ""]
    return "\n".join(out)


def diff_text(d: GoldDiff, *, width: int = 80) -> str:
    """The diff report for a terminal ``width`` columns wide (80 by default)."""
    out = [*_wrap(f"Gold set changes: {_name(d.old_path)} -> {_name(d.new_path)}", width), *_wrap(_diff_summary(d), width)]
    if d.added:
        out += _wrap("added: " + ", ".join(d.added), width)
    if d.removed:
        out += _wrap("removed: " + ", ".join(d.removed), width)
    for c in d.relabelled:
        out += _wrap(f"relabelled {c.query_id}: {_change(c)}", width)
    if d.edited:
        out += _wrap("edited: " + ", ".join(d.edited), width)
    return "\n".join(out) + "\n"


# -- remap ----------------------------------------------------------------------------------------
def remap_summary(r: Remap, changed_queries: int, proposed: str, review: str) -> str:
    """The short report on stdout: what happened to the labelled chunks, and where the files are."""
    labelled = len(r.labels)
    applied = sum(1 for x in r.labels.values() if x.kind != "unchanged" and x.applied(r.min_confidence))
    kinds = ", ".join(f"{k} {n}" for k, n in r.counts().items() if n)
    return "\n".join([
        f"Remap: {_name(r.gold_path)} from {_name(r.old_path)} to {_name(r.new_path)}",
        f"{labelled} labelled chunks: {kinds}",
        (f"{applied} remapped (confidence >= {fmt_sig(r.min_confidence)}) in {changed_queries} queries; "
         f"{len(r.to_review())} to review"),
        f"proposed gold set: {proposed}",
        f"review list: {review}",
    ]) + "\n"


def _maps(ms: tuple[Mapping, ...], rejected: bool = False) -> str:
    if rejected:
        return ", ".join(f"{m.chunk_id} (covers {fmt_share(m.covers)}, {fmt_share(m.from_old)} old text)" for m in ms) or "—"
    return ", ".join(f"{m.chunk_id} ({fmt_score(m.confidence, 2)})" for m in ms) or "—"


def _review_row(x: LabelRemap, uses: int) -> tuple[object, ...]:
    why = x.detail or ("below the confidence floor" if x.kind != "unmapped" else "")
    return (x.chunk_id, uses, x.kind, fmt_share(x.carried), _maps(x.mappings), _maps(x.rejected, True), why)


def remap_review_markdown(r: Remap, changed_queries: int, conflicts: Sequence[tuple[str, str]] = ()) -> str:
    """The review file: counts by kind, then every label kept on its old id (unmapped, or mapped below
    the confidence floor) with its candidates, then must-not entries that landed on a relevant chunk."""
    counts = r.counts()
    review = r.to_review()
    out = [f"## Gold remap review: {_name(r.gold_path)}", "",
           (f"From {_name(r.old_path)} to {_name(r.new_path)}; mappings below confidence {fmt_sig(r.min_confidence)} "
            "are not applied (the label keeps its old chunk id)."), "",
           (f"**{len(r.labels)} labelled chunks; {changed_queries} queries changed; {len(review)} labelled "
            f"chunk{'s' * (len(review) != 1)} to review**"), "",
           *_table(("kind", "labelled chunks"), ((k, counts[k]) for k in KINDS if counts[k])), ""]
    if review:
        out += ["### To review", "",
                *_table(("old chunk", "labels", "kind", "text carried", "proposed (confidence)", "other candidates",
                         "why"), (_review_row(x, r.uses[x.chunk_id]) for x in review)), ""]
    low = [x for x in r.labels.values() if x.kind not in ("unchanged", "moved") and x.applied(r.min_confidence)
           and min(m.confidence for m in x.mappings) < 1]
    if low:
        out += ["### Applied with confidence below 1", "",
                *_table(("old chunk", "kind", "new chunks (confidence)"), ((x.chunk_id, x.kind, _maps(x.mappings))
                                                                           for x in low)), ""]
    if conflicts:
        out += ["### Must-not-retrieve entries that landed on a relevant chunk", "",
                *_table(("query", "chunk"), conflicts), ""]
    return "\n".join(out)


if __name__ == "__main__":  # pragma: no cover - a way to look at the report
    import sys

    from rankgate.corpus import load_manifest
    from rankgate.goldset import read_gold_file, validate_gold

    print(validate_markdown(validate_gold(read_gold_file(sys.argv[1]),
                                          load_manifest(sys.argv[2]) if len(sys.argv) > 2 else None)))
