"""The trace report's charts and the terminal panel say what the numbers are without overstating them:
a non-negative signal's axis starts at zero (noise of a tenth of a millisecond does not fill the box like
a spike), a signed signal whose range is under 5% of its value says so, one window is a number, and the
signals the traces cannot measure fold into one line."""

from __future__ import annotations

import re
from pathlib import Path

from rankgate.render.traces_html import series_svg
from rankgate.traces.signals import SignalValue

HOUR = 3_600_000_000
DATA = Path(__file__).parent / "data" / "producers"


def _points(signal: str, values: list[float | None]) -> list[SignalValue]:
    return [SignalValue(i * HOUR, "all", signal, v, 100) for i, v in enumerate(values)]


def _axis_labels(svg: str) -> list[str]:
    return re.findall(r'text-anchor="end" fill="#6b7280">([^<]+)</text>', svg)


def test_a_latency_axis_starts_at_zero_so_noise_stays_flat() -> None:
    svg = series_svg("latency.total.p95", _points("latency.total.p95", [64.8, 65.1, 65.3, 64.9]))
    labels = _axis_labels(svg)
    assert labels[0].startswith("0") and labels[1].startswith("65.3")
    ys = [float(y) for y in re.search(r'points="([^"]+)"', svg).group(1).replace(",", " ").split()[1::2]]
    assert max(ys) - min(ys) < 2.0  # a flat line at the top, not a zig-zag across the box
    assert 'class="narrow"' not in svg


def test_a_spike_still_fills_the_box() -> None:
    svg = series_svg("error_rate_per_1k", _points("error_rate_per_1k", [0.5, 0.4, 9.0, 0.6]))
    ys = [float(y) for y in re.search(r'points="([^"]+)"', svg).group(1).replace(",", " ").split()[1::2]]
    assert max(ys) - min(ys) > 100


def test_a_score_keeps_its_range_and_says_when_it_is_narrow() -> None:
    # scores (retrieval scores may be negative; RBO and Jaccard live near 1) keep their own range, and a
    # range under 5% of the value is labelled so that a wiggle is not read as a fall
    svg = series_svg("instability.rbo", _points("instability.rbo", [0.951, 0.953, 0.952]))
    assert re.search(r'class="narrow">axis spans only 0.002 \(0.2% of the value\)<', svg)
    wide = series_svg("instability.rbo", _points("instability.rbo", [0.5, 0.9, 0.7]))
    assert 'class="narrow"' not in wide and _axis_labels(wide)[0].startswith("0.5")


def test_one_window_is_a_number_not_a_chart() -> None:
    out = series_svg("latency.total.p95", _points("latency.total.p95", [None, 71.25, None]))
    assert "<svg" not in out and 'class="single"' in out and "71.2" in out and "n=100" in out
    flagged = series_svg("latency.total.p95", _points("latency.total.p95", [71.25]), flagged={0})
    assert 'class="single flagged"' in flagged
    assert "no value in any window" in series_svg("latency.total.p95", _points("latency.total.p95", [None, None]))


def test_unmeasurable_signals_fold_into_one_line(tmp_path, capsys) -> None:
    from rankgate.cli.main import main

    out = tmp_path / "out"
    assert main(["traces", "analyze", "--traces", str(DATA / "llamaindex.otlp.json"), "--out", str(out)]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert text.count("not measurable") == 1, text
    m = re.search(r"(\d+) signals not measurable from these traces \(([^)]*)\)", text)
    assert m and int(m.group(1)) > 4 and m.group(2).endswith(f"and {int(m.group(1)) - 4} more"), text
    assert 'What this report could not use' in (out / "trace_report.html").read_text()
