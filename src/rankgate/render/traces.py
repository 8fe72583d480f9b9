"""Renderers of the trace analysis: signals.csv, summary.json, the terminal panel (80 columns) and
the markdown summary of ``rankgate traces check``. The HTML trace report is in :mod:`.traces_html`.

Run it to see it: ``python -m rankgate.render.traces TRACES.jsonl [--by tenant]``.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rankgate.traces.signals import SIGNAL_INFO, SignalValue, TraceSummary, iso
from rankgate.render.numbers import fmt_exact, fmt_score, fmt_share, fmt_sig, fmt_unit

if TYPE_CHECKING:  # pragma: no cover
    from rankgate.traces.monitors import MonitorConfig, MonitorOutcome

__all__ = ["check_markdown", "fmt_signal", "signals_csv", "summary_json", "trace_panel"]

CSV_COLUMNS = ("window_start", "window_end", "segment", "signal", "value", "n", "k", "note")
PANEL_SIGNALS = (
    "low_confidence_rate", "top1_score.p50", "margin.p50", "no_result_rate", "fallback_rate",
    "deprecated_context_rate", "stale_citation_rate", "instability.rbo", "instability.changed_rate",
    "corpus_changed.changed_rate", "negative_feedback_rate",
    "error_rate_per_1k", "client_abort_rate", "timeout_rate", "retry_rate",
    "redaction_efficacy", "block_efficacy", "secure_field_bypass_rate",
)


def signals_csv(summary: TraceSummary) -> str:
    """One row per window × segment × signal (the whole period is in summary.json)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for v in summary.values:
        assert v.window is not None
        w.writerow([iso(v.window), iso(v.window + summary.window_us), v.segment, v.signal, fmt_exact(v.value), v.n,
                    "" if v.k is None else v.k, v.note or ""])
    return buf.getvalue()


def summary_json(summary: TraceSummary, outcome: MonitorOutcome | None = None) -> str:
    """summary.json: the signals (:meth:`TraceSummary.to_dict`) and, when the monitors ran, what each of them
    could see (``monitor_power``, docs/traces.md "Power")."""
    data = summary.to_dict()
    if outcome is not None and outcome.power:
        data["monitor_power"] = [p.to_dict() for p in outcome.power]
    return json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def fmt_signal(signal: str, value: float | None) -> str:
    """A signal's value for people: shares as percentages, ms with one decimal, scores with three. The
    validity monitor's value (``validity``) is a risk difference, a change of a share."""
    if signal == "validity":
        from rankgate.render.numbers import fmt_share_change

        return fmt_share_change(value)
    if signal.startswith("cost."):  # (by its key: dollars, tokens, ms)
        from rankgate.metrics.display import fmt_cost

        return fmt_cost(signal.split(".")[1], value)
    return fmt_unit(SIGNAL_INFO[signal].unit, value)


def reading_notes(summary: TraceSummary) -> list[str]:
    """One line each for what reading did to the input (duplicates dropped, ids derived from text) and
    for an abstention threshold above every request's top score."""
    out = []
    dup = summary.meta.get("duplicate_spans")
    if dup:
        out.append(f"{dup:,} duplicate spans/observations dropped (same id, same content; delivered twice)")
    dup_fb = summary.meta.get("duplicate_feedback")
    if dup_fb:
        out.append(f"{dup_fb:,} duplicate feedback rows dropped (same id, same content; delivered twice)")
    derived = summary.meta.get("derived_item_ids")
    if derived:
        out.append(f"{derived:,} documents had no id; ids derived from text")
    low = summary.value("low_confidence_rate")
    threshold = summary.meta.get("abstention_threshold")
    if low is not None and low.n and low.value == 1.0 and threshold is not None:
        out.append(f"every request's top score is under the abstention threshold {fmt_sig(threshold)} "
                   "(low_confidence_rate 100%): the threshold was probably calibrated on another system's "
                   "score scale")
    return out


def trace_panel(summary: TraceSummary, flags: Sequence[Any] = ()) -> Any:
    """The terminal view (rich renderable, fits 80 columns): the whole period, the last window, the
    latency per stage, flagged sources, skipped rows."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    last = summary.windows[-1] if summary.windows else None
    t = Table(title=f"Retrieval traces: {summary.meta.get('requests', 0):,} requests, "
                    f"{len(summary.windows)} window(s) of {summary.window}", title_justify="left",
              show_edge=False, pad_edge=False)
    t.add_column("signal", no_wrap=True, max_width=30)
    t.add_column("whole period", justify="right", no_wrap=True)
    t.add_column("n", justify="right", no_wrap=True)
    t.add_column(f"last {summary.window}", justify="right", no_wrap=True)
    notes: list[str] = []
    for name in PANEL_SIGNALS:
        v = summary.value(name)
        if v is None:
            continue
        if v.note and v.note.startswith("not measurable"):
            notes.append(name)
            continue
        lv = summary.value(name, last) if last is not None else None
        t.add_row(name, fmt_signal(name, v.value), f"{v.n:,}", fmt_signal(name, lv.value if lv else None))
    lat = Table(title="Latency per stage (ms, exact quantiles)", title_justify="left", show_edge=False, pad_edge=False)
    for col in ("stage", "p50", "p95", "p99", "n"):
        lat.add_column(col, justify="left" if col == "stage" else "right", no_wrap=True)
    for stage in ("parse", "retrieval", "rerank", "synthesis", "total"):
        vals = [summary.value(f"latency.{stage}.{q}") for q in ("p50", "p95", "p99")]
        if not vals[0] or (vals[0].note and vals[0].note.startswith("not measurable")):
            continue
        lat.add_row(stage, *[fmt_score(v.value if v else None, 1) for v in vals], f"{vals[0].n:,}")
    parts: list[Any] = [t, Text(""), lat]
    res = resources_rows(summary)
    if res:  # the process samples, when the traces carry them
        rt = Table(title="Process resources per request (exact quantiles)", title_justify="left", show_edge=False,
                   pad_edge=False)
        for col in ("sample", "p50", "p95", "p99", "n"):
            rt.add_column(col, justify="left" if col == "sample" else "right", no_wrap=True)
        for row in res:
            rt.add_row(*row)
        parts += [Text(""), rt]
    cost = cost_rows(summary)
    if cost:  # what the requests cost, when the traces log it
        ct = Table(title="Cost per request (mean, exact p95)", title_justify="left", show_edge=False, pad_edge=False)
        for col in ("cost", "mean", "p95", "n"):
            ct.add_column(col, justify="left" if col == "cost" else "right", no_wrap=True)
        for row in cost:
            ct.add_row(*row)
        parts += [Text(""), ct]
    reading = reading_notes(summary)
    if reading:
        parts.append(Text(""))
        parts += [Text(n) for n in reading]
    bad = [f for f in summary.feedback_by_source if f.window is None and f.flagged]
    if bad:
        parts.append(Text(""))
        parts.append(Text("Sources whose negative-feedback interval lies above the overall rate:"))
        for f in bad:
            parts.append(Text(f"  {f.source}: {fmt_share(f.rate)} [{fmt_share(f.low, unit='')}, {fmt_share(f.high, unit='')}] of "
                              f"{f.n:,} vs {fmt_share(f.overall)}"))
    if notes:  # one line, however many: the report's "could not use" section says what each one lacks
        shown = ", ".join(notes[:4]) + (f" and {len(notes) - 4} more" if len(notes) > 4 else "")
        parts.append(Text(""))
        parts.append(Text(f"{len(notes)} signal{'s' if len(notes) != 1 else ''} not measurable from these traces "
                          f"({shown}); what each one needs: trace_report.html, \"What this report could not use\""))
    skipped = summary.skipped or {}
    if skipped.get("total"):
        parts.append(Text(""))
        parts.append(Text(f"{skipped['total']:,} input rows skipped (--on-error skip):"))
        for reason, n in list(skipped.get("by_reason", {}).items())[:10]:
            parts.append(Text(f"  {n:,}  {reason}"))
    if flags:
        parts.append(Text(""))
        parts.append(Text(f"{len(flags)} monitor flag(s):"))
        for f in flags:
            parts.append(Text(f"  {f.severity:7} {f.window_iso} {f.segment} {f.signal}: {f.detail}"))
    return Group(*parts)


#: The process samples and how their rows are labelled (:func:`resources_rows`).
RESOURCE_LABELS = (("cpu_ms", "CPU time (ms)"), ("memory_mb", "memory, RSS (MB)"))


def resources_rows(summary: TraceSummary) -> list[tuple[str, ...]]:
    """(label, p50, p95, p99, n) of each process sample the traces carry, whole period, all traffic."""
    rows = []
    for name, label in RESOURCE_LABELS:
        vals = [summary.value(f"resources.{name}.{q}") for q in ("p50", "p95", "p99")]
        if vals[0] is None or vals[0].value is None:
            continue
        rows.append((label, *[fmt_score(v.value if v else None, 1) for v in vals], f"{vals[0].n:,}"))
    return rows


def cost_rows(summary: TraceSummary, segment: str = "all") -> list[tuple[str, ...]]:
    """(label, mean, p95, n) of each cost key the traces log, whole period, for ``segment`` (all traffic)."""
    from rankgate.io.cost import COST_KEYS
    from rankgate.metrics.display import fmt_cost
    from rankgate.traces.signals import COST_LABELS

    rows: list[tuple[str, ...]] = []
    for key in COST_KEYS:
        mean, p95 = (summary.value(f"cost.{key}.{q}", segment=segment) for q in ("mean", "p95"))
        if mean is None or mean.value is None:
            continue
        rows.append((COST_LABELS[key], fmt_cost(key, mean.value), fmt_cost(key, p95.value if p95 else None),
                     f"{mean.n:,}"))
    return rows


def render_text(renderable: Any, width: int = 80) -> str:
    """A renderable as plain text at ``width`` columns (tests, files)."""
    from rich.console import Console

    console = Console(width=width, color_system=None, force_terminal=False, record=True, file=io.StringIO())
    console.print(renderable)
    return console.export_text()


def check_markdown(outcome: MonitorOutcome, summary: TraceSummary, config: MonitorConfig) -> str:
    """The markdown summary of ``rankgate traces check``: each flagged window, segment and signal. Every
    text from the traces or the monitor file (segment values, owners, details, monitor names) passes
    :func:`.numbers.md_escape`, as in the PR comment."""
    from rankgate.render.numbers import md_escape as esc

    errors = sum(1 for f in outcome.flags if f.severity == "error")
    warnings = len(outcome.flags) - errors
    verdict = "FAILED" if errors else "passed"
    lines = [f"## Trace monitors: {verdict}", ""]
    span = (f"{iso(summary.windows[0])} to {iso(summary.windows[-1] + summary.window_us)}"
            if summary.windows else "no windows")
    lines.append(f"{summary.meta.get('requests', 0):,} requests, {len(summary.windows)} window(s) of {summary.window} "
                 f"({span}); {len(config.monitors)} monitors from {esc(config.path, 200) if config.path else 'the defaults'}; "
                 f"{outcome.checked:,} window × segment checks; {errors} error(s), {warnings} warning(s).")
    lines.append("")
    if outcome.flags:
        lines += ["| severity | window | segment | signal | value | n | rule | detail | owner |",
                  "|---|---|---|---|---:|---:|---|---|---|"]
        for f in outcome.flags:
            lines.append(f"| {esc(f.severity)} | {f.window_iso} | {esc(f.segment, 120)} | {esc(f.signal)} | "
                         f"{fmt_signal(f.signal, f.value)} | {f.n:,} | {esc(f.rule)} | {esc(f.detail, 300)} | "
                         f"{esc(f.owner or '')} |")
        lines.append("")
    else:
        lines += ["No window was flagged.", ""]
    lines += power_markdown(outcome)
    if outcome.not_measurable:
        lines.append("Not checked, the traces do not carry the inputs:")
        lines += [f"- {esc(name)}: {esc(note, 200)}" for name, note in sorted(outcome.not_measurable.items())]
        lines.append("")
    if outcome.unchecked:
        lines.append("Cells not checked: " + ", ".join(f"{n:,} {esc(r, 120)}" for r, n in sorted(outcome.unchecked.items()))
                     + ".")
        lines.append("")
    return "\n".join(lines)


#: Monitor series listed one a row in the markdown summary; the JSON output lists them all.
POWER_ROWS = 30


def fmt_change(signal: str, d: float | None) -> str:
    """A change of a signal, unsigned, in its unit: ``24.2 pp``, ``9.6/1k``, ``17.0 ms``, ``0.104``;
    ``none`` for a change no count of rows shows."""
    from rankgate.metrics.display import fmt_score_change
    from rankgate.render.numbers import fmt_ms_change, fmt_per_1k, fmt_share_change

    if d is not None and d == float("inf"):
        return "none"
    if signal.startswith("cost."):
        from rankgate.metrics.display import fmt_cost_change

        return fmt_cost_change(signal.split(".")[1], d).lstrip("+")
    unit = SIGNAL_INFO[signal].unit if signal in SIGNAL_INFO else "score"
    if unit == "share":
        return fmt_share_change(d).lstrip("+")
    if unit == "per_1k":
        return fmt_per_1k(d)
    return (fmt_ms_change(d) if unit == "ms" else fmt_score_change(d)).lstrip("+")


def power_markdown(outcome: MonitorOutcome) -> list[str]:
    """The power lines of the markdown summary: how many monitor series could see their ``detect:`` size in
    every window they checked, and a row for each that could not, with what it sees now (docs/traces.md,
    "Power")."""
    from rankgate.render.numbers import md_escape as esc
    from rankgate.traces.power import POWER

    if not outcome.power:
        return []
    decided = [p for p in outcome.power if p.decides]
    warmup = [p for p in outcome.power if not p.windows]
    short = [p for p in outcome.power if p.windows and not p.decides]
    lines = [f"Power ({fmt_share(POWER, 0)}): {len(decided)} of {len(outcome.power)} monitor series saw their "
             "`detect:` size in every window they checked."]
    if short:
        lines += ["These could not decide in some windows (a quiet window there says nothing about a change of "
                  "that size):", "",
                  "| monitor | segment | not decided | now | it sees | detect: | rows a window needs |",
                  "|---|---|---|---|---:|---|---:|"]
        for p in short[:POWER_ROWS]:
            counts: dict[str, int] = {}
            for _, status, _ in p.undecided:
                counts[status] = counts.get(status, 0) + 1
            why = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
            now = p.now
            assert now is not None
            base = "" if now.level is None else f", baseline {fmt_signal(p.signal, now.level)}"
            sees = "—" if now.smallest is None else fmt_change(p.signal, now.smallest)
            if now.target is None:
                size = "— (a fixed line)"
            elif not now.target > 0:
                size = f"{esc(p.detect)} of this baseline: no change; write a size in the signal's units"
            else:
                size = f"{esc(p.detect)}: {fmt_change(p.signal, now.target)}"
            rows = (f"about {now.rows_needed:,}" if now.rows_needed is not None else
                    "none at this baseline" if now.status != "decided" and now.target is not None else "—")
            lines.append(f"| {esc(p.monitor)} | {esc(p.segment, 120)} | {len(p.undecided)} of {p.windows} windows "
                         f"({why}) | {iso(now.window)}, {now.n:,} rows{base} ({now.status}) | "
                         f"{sees} | {size} | {rows} |")
        if len(short) > POWER_ROWS:
            lines.append(f"| … {len(short) - POWER_ROWS} more (the JSON output lists every one) | | | | | | |")
    if warmup:
        names = ", ".join(f"{esc(p.monitor)} {esc(p.segment, 120)}" for p in warmup[:10])
        lines.append(("" if not short else "\n") + f"{len(warmup)} series have no baseline yet (fewer earlier windows "
                     f"than min_baseline): {names}{' …' if len(warmup) > 10 else ''}.")
    lines.append("")
    return lines


def values_for(summary: TraceSummary, signal: str, segment: str = "all") -> list[SignalValue]:
    return [v for v in summary.values if v.signal == signal and v.segment == segment]


if __name__ == "__main__":  # pragma: no cover
    import sys

    from rankgate.traces.signals import summarize_traces

    args = sys.argv[1:]
    by = tuple(args[args.index("--by") + 1].split(",")) if "--by" in args else ()
    paths = [a for a in args if not a.startswith("--") and (not by or a != ",".join(by))]
    print(render_text(trace_panel(summarize_traces(paths, by=by))))
