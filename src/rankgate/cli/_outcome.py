"""The terminal table of a gate outcome, printed by every command that checks ship criteria."""

from __future__ import annotations

import os
import sys
from typing import Any

__all__ = ["print_outcome"]


def print_outcome(outcome: Any) -> None:
    """The gate outcome as a terminal table, its sentences (at most ``SHOWN_SENTENCES``, then a line counting
    the rest) and the verdict (``rankgate gate``, ``answers --config``)."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from rankgate.render.comment import SHOWN_SENTENCES, gate_sentences
    from rankgate.stats.segments import display_field

    tty = sys.stdout.isatty()
    # a terminal's width, or COLUMNS when set (rich reads it); 100 in a log or a pipe
    wide = tty or bool(os.environ.get("COLUMNS"))
    console = Console(width=None if wide else 100, color_system="auto" if tty else None, highlight=False)
    table = Table(show_edge=False, pad_edge=False)
    for name in ("result", "gate", "metric", "checks failed"):  # in a narrow terminal names wrap, counts never
        table.add_column(name, overflow="fold", no_wrap=name in ("result", "checks failed"))
    style = {"pass": "green", "fail": "red", "warn": "yellow"}
    for r in outcome.results:
        failed = len(r.failures)
        table.add_row(f"[{style[r.status]}]{r.status.upper()}[/]", r.gate.name, r.gate.metric,
                      f"{failed} of {len(r.checks)}")
        chosen: dict[tuple[Any, Any], list[Any]] = {}
        for c in r.checks:  # critical segments: a row per chosen value, under its gate
            if c.critical:
                chosen.setdefault((c.field, c.segment), []).append(c)
        for (f, seg), checks in chosen.items():
            bad = sum(1 for c in checks if c.status == "fail")
            word = "fail" if bad and (checks[0].critical.get("severity") or r.gate.severity) == "error" else (
                "warn" if bad or any(c.status == "warn" for c in checks) else "pass")
            table.add_row(f"[{style[word]}]{word.upper()}[/]", escape(f"  ↳ {display_field(f)} = {seg}"), r.gate.metric,
                          f"{bad} of {len(checks)}")
    for r in getattr(outcome, "latency", ()):  # latency gates: the stage and its percentiles
        failed = sum(1 for c in r.checks if c.status == "fail")
        owner = f" (owner: {escape(r.gate.owner)})" if failed and getattr(r.gate, "owner", None) else ""
        table.add_row(f"[{style[r.status]}]{r.status.upper()}[/]", r.gate.name,
                      f"latency {r.gate.stage} ({', '.join(r.gate.stats)})", f"{failed} of {len(r.checks)}{owner}")
    for r in getattr(outcome, "cost", ()):  # cost gates: the key and its statistics, the owner where one fails
        failed = sum(1 for c in r.checks if c.status == "fail")
        owner = f" (owner: {escape(r.gate.owner)})" if failed and r.gate.owner else ""
        table.add_row(f"[{style[r.status]}]{r.status.upper()}[/]", r.gate.name,
                      f"cost {r.gate.key} ({', '.join(r.gate.stats)})", f"{failed} of {len(r.checks)}{owner}")
    st = outcome.stale
    if st is not None:
        word = {"not_checked": "[yellow]NOT CHECKED[/]"}.get(st.status, f"[{style.get(st.status, '')}]{st.status.upper()}[/]")
        shown = "no --corpus" if st.status == "not_checked" else f"{st.stale} of {st.labels} gold ids (max {st.limit})"
        table.add_row(word, "stale labels", "max_stale_labels", shown)
    console.print(table)
    sentences = gate_sentences(outcome, markdown=False)
    for line in sentences[:SHOWN_SENTENCES]:
        console.print(line, markup=False)
    if len(sentences) > SHOWN_SENTENCES:
        console.print(f"… and {len(sentences) - SHOWN_SENTENCES:,} more (every check is in the JSON outcome: --json)",
                      markup=False, highlight=False)
    verdict = "PASS: every blocking gate passed" if outcome.passed else "FAIL: a blocking gate failed"
    console.print(f"[bold]{verdict}[/] (exit {outcome.exit_code})")
