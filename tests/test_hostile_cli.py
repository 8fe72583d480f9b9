"""Hostile use of the CLI itself: outputs that cannot be written, config bombs, absurd arguments,
a baseline summary with impossible values, and bugs. Each is refused with one line, no traceback,
and (for everything but a gate outcome) never with exit 0 or 1."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from rankgate._util import atomic
from rankgate.cli.main import main
from rankgate.errors import OutputError

from .conftest import ROOT
from .hostile import assert_refused, snapshot

GOLD = ROOT / "examples" / "gold.jsonl"
RUN = ROOT / "examples" / "run.jsonl"
EVAL = ["evaluate", "--gold", GOLD, "--run", RUN, "--resamples", "50"]
PASSING = "gates:\n  - metric: hit@5\n    threshold: 0.1\n"


@pytest.fixture
def old_outputs(tmp_path: Path) -> Path:
    """A folder holding an earlier evaluation's outputs."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "metrics.csv").write_text("old metrics\n")
    (out / "summary.json").write_text('{"old": true}\n')
    return out


def _config(tmp_path: Path, text: str = PASSING, name: str = "ship.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _gate(config: Path, *extra: object) -> list[object]:
    return ["gate", "--config", config, "--gold", GOLD, "--candidate", RUN, "--no-step-summary", *extra]


# -- outputs ---------------------------------------------------------------------------------------
def test_out_naming_an_existing_file_is_refused_before_any_work(tmp_path, capsys, monkeypatch):
    target = tmp_path / "results.txt"
    target.write_text("keep me\n")
    import rankgate.scoring.engine

    def never(*_a, **_k):
        raise AssertionError("evaluated before the output path was checked")

    monkeypatch.setattr(rankgate.scoring.engine, "evaluate", never)
    assert_refused([*EVAL, "--out", target], tmp_path, names=[target], capsys=capsys, contains=["not a folder"])


def test_summary_json_that_is_a_folder_leaves_old_metrics_csv(old_outputs, capsys):
    (old_outputs / "summary.json").unlink()
    (old_outputs / "summary.json").mkdir()
    (old_outputs / "summary.json" / "x").write_text("x")
    assert_refused([*EVAL, "--out", old_outputs], old_outputs, names=["summary.json"], capsys=capsys)
    assert (old_outputs / "metrics.csv").read_text() == "old metrics\n"


def test_out_inside_a_file_is_refused(tmp_path, capsys):
    blocker = tmp_path / "notadir"
    blocker.write_text("a file")
    assert_refused([*EVAL, "--out", blocker / "sub"], tmp_path, names=["notadir"], capsys=capsys)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root writes into read-only folders")
def test_read_only_folder_is_refused(old_outputs, capsys):
    old_outputs.chmod(0o555)
    try:
        assert_refused([*EVAL, "--out", old_outputs], old_outputs, names=[old_outputs], capsys=capsys)
    finally:
        old_outputs.chmod(0o755)


def test_a_folder_that_takes_no_new_files_is_refused(old_outputs, capsys, monkeypatch):
    # What a read-only mount does, also for root: creating a file there fails.
    real = atomic.tempfile.mkstemp

    def refuse(*args, **kwargs):
        if os.path.abspath(kwargs.get("dir", "")) == str(old_outputs):
            raise PermissionError(13, "Permission denied")
        return real(*args, **kwargs)

    monkeypatch.setattr(atomic.tempfile, "mkstemp", refuse)
    assert_refused([*EVAL, "--out", old_outputs], old_outputs, names=[old_outputs], capsys=capsys,
                   contains=["Permission denied"])


def test_a_failure_while_renaming_puts_every_old_output_back(old_outputs, capsys, monkeypatch):
    real = os.replace
    calls = []

    def second_fails(src, dst):
        calls.append(dst)
        if len(calls) == 2 and str(dst).endswith("summary.json"):
            raise OSError(28, "No space left on device")
        return real(src, dst)

    monkeypatch.setattr(atomic.os, "replace", second_fails)
    assert_refused([*EVAL, "--out", old_outputs], old_outputs, names=["summary.json"], capsys=capsys,
                   contains=["No space left"])


def test_write_files_removes_its_temporaries_when_interrupted(tmp_path, monkeypatch):
    (tmp_path / "a.txt").write_text("old a")
    real = atomic._write_temp
    seen = []

    def interrupt_on_second(path, data):
        seen.append(path)
        if len(seen) == 2:
            raise KeyboardInterrupt
        return real(path, data)

    monkeypatch.setattr(atomic, "_write_temp", interrupt_on_second)
    with pytest.raises(KeyboardInterrupt):
        atomic.write_files({tmp_path / "a.txt": "new a", tmp_path / "b.txt": "new b"})
    assert snapshot(tmp_path) == snapshot_of({"a.txt": b"old a"})


def snapshot_of(files: dict[str, bytes]) -> dict[str, str]:
    import hashlib

    return {name: hashlib.sha256(data).hexdigest() for name, data in files.items()}


def test_gate_json_unwritable_writes_no_comment_either(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "gate.json").mkdir()
    config = _config(tmp_path)
    assert_refused(_gate(config, "--comment", out / "comment.md", "--json-out", out / "gate.json"), out,
                   names=["gate.json"], capsys=capsys)
    assert not (out / "comment.md").exists()


def test_gate_json_under_a_file_is_exit_2_not_1(tmp_path, capsys):
    (tmp_path / "notadir").write_text("x")
    config = _config(tmp_path)
    assert_refused(_gate(config, "--json-out", tmp_path / "notadir" / "x.json"), tmp_path, names=["notadir"], capsys=capsys)


def test_gate_comment_and_json_naming_one_file(tmp_path, capsys):
    config = _config(tmp_path)
    out = tmp_path / "o"
    assert_refused(_gate(config, "--comment", out / "a", "--json-out", out / "a"), out, names=["a"], capsys=capsys)


def test_unwritable_step_summary_is_a_warning_not_a_verdict(tmp_path, capsys, monkeypatch):
    config = _config(tmp_path)
    summary = tmp_path / "summary-folder"
    summary.mkdir()
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    argv = ["gate", "--config", config, "--gold", GOLD, "--candidate", RUN, "--comment", tmp_path / "c.md"]
    assert main([str(a) for a in argv]) == 0
    err = capsys.readouterr().err
    assert "warning" in err and "GITHUB_STEP_SUMMARY" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert (tmp_path / "c.md").read_text(encoding="utf-8").startswith("<!--")


def test_compare_report_and_retrieve_check_their_output_first(tmp_path, capsys):
    folder = tmp_path / "taken"
    folder.mkdir()
    assert_refused(["compare", RUN, RUN, "--gold", GOLD, "--out", folder], tmp_path, names=["taken"], capsys=capsys)
    assert_refused(["report", "--gold", GOLD, "--run", RUN, "-o", folder], tmp_path, names=["taken"], capsys=capsys)
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"chunk_id": "a#c1", "text": "x"}\n')
    assert_refused(["retrieve", "--corpus", corpus, "--gold", GOLD, "-o", folder], tmp_path, names=["taken"],
                   capsys=capsys)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs")
def test_an_output_that_is_a_pipe_is_not_replaced(tmp_path, capsys):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    config = _config(tmp_path)
    # (no folder snapshot: reading a FIFO would block)
    assert_refused(_gate(config, "--comment", fifo), None, names=["pipe"], capsys=capsys,
                   contains=["not a regular file"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe", "ship.yaml"]
    assert fifo.is_fifo()


def test_demo_out_that_is_a_file(tmp_path, capsys):
    target = tmp_path / "demo.txt"
    target.write_text("mine")
    assert_refused(["demo", "--out", target], tmp_path, names=["demo.txt"], capsys=capsys)


def test_check_folder_messages_name_the_blocking_path(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "metrics.csv").mkdir()
    with pytest.raises(OutputError, match=r"metrics\.csv: is in the way"):
        atomic.check_folder(tmp_path / "out", ["metrics.csv"], option="--out")


# -- YAML bombs and oversized config files ----------------------------------------------------------
BILLION_LAUGHS = "\n".join(
    [ 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    + [f"{c}: &{c} [{','.join([f'*{p}'] * 9)}]" for p, c in zip("abcdefgh", "bcdefghi")]
) + "\n"


@pytest.mark.parametrize(
    ("name", "text", "contains"),
    [
        ("laughs.yaml", BILLION_LAUGHS, "10,000 values"),
        ("loop.yaml", "gates: &g\n  - metric: recall@5\n    threshold: 0.5\n    segments: *g\n", "loop"),
        ("self.yaml", "gates:\n  - &m\n    metric: recall@5\n    label: *m\n", "loop"),
        ("deep.yaml", "gates: " + "[" * 5000 + "]" * 5000 + "\n", "deep"),
        ("big.yaml", "# padding\n" * 120_000 + PASSING, "1024 KiB"),
        ("latin1.yaml", None, "UTF-8"),
    ],
)
def test_hostile_config_files_are_refused_fast(tmp_path, capsys, name, text, contains):
    path = tmp_path / name
    if text is None:
        path.write_bytes(PASSING.encode() + b"# caf\xe9\n")
    else:
        path.write_text(text, encoding="utf-8")
    assert len(BILLION_LAUGHS) < 700
    assert_refused(_gate(path), tmp_path, names=[name], capsys=capsys, contains=[contains])


@pytest.mark.parametrize(("option", "kind", "text"), [
    ("--field-map", "a field map file", "request:\n  query: q\n" + BILLION_LAUGHS.replace("a: &a", "x: &a")),
    ("--monitors", "a monitors file", BILLION_LAUGHS),
    ("--abstention", "an abstention file", BILLION_LAUGHS),
    ("--abstention", "an abstention file", "threshold: " + "[" * 60 + "]" * 60 + "\n"),  # (nested too deep)
])
def test_a_yaml_bomb_beside_the_traces_names_its_own_file(tmp_path, capsys, option, kind, text):
    """The YAML files `rankgate traces` reads beside the traces are bounded like the ship criteria; the
    refusal names the file read and its kind, not the ship criteria."""
    traces = tmp_path / "traces.jsonl"
    traces.write_text('{"request_id": "r1", "timestamp": "2026-01-01T00:00:00Z", "query": "q", '
                      '"retrieved": [{"id": "d1", "score": 1}]}\n')
    bomb = _config(tmp_path, text, "side.yaml")
    line = assert_refused(["traces", "analyze", "--traces", traces, option, bomb, "--out", tmp_path / "out"],
                          tmp_path / "out", names=[bomb], capsys=capsys, contains=[f"({kind} needs "])
    assert "ship" not in line


def test_aliases_within_the_budget_still_work(tmp_path, capsys):
    text = ("gates:\n  - metric: hit@5\n    threshold: 0.1\n    segments: &segs [intent]\n"
            "  - metric: recall@5\n    threshold: 0.1\n    segments: *segs\n")
    assert main([str(a) for a in _gate(_config(tmp_path, text))]) == 0


def test_report_reads_config_with_the_same_limits(tmp_path, capsys):
    path = _config(tmp_path, BILLION_LAUGHS, "laughs.yaml")
    assert_refused(["report", "--gold", GOLD, "--run", RUN, "--config", path, "-o", tmp_path / "r.html"], tmp_path,
                   names=["laughs.yaml"], capsys=capsys)


# -- absurd statistics arguments --------------------------------------------------------------------
@pytest.mark.parametrize("argv", [
    ["--resamples", "1000000000000"],
    ["--resamples", "-1"],
    ["--seed", "-3"],
])
def test_absurd_statistics_arguments_are_usage_errors(tmp_path, capsys, argv):
    option = argv[0]
    assert_refused([*EVAL, *argv, "--out", tmp_path / "o"], tmp_path, capsys=capsys, contains=[option])


def test_huge_resamples_says_how_much_memory(tmp_path, capsys):
    line = assert_refused([*EVAL, "--resamples", str(10**12)], tmp_path, capsys=capsys)
    assert "GiB" in line and "1,000,000" in line


def test_compare_permutations_are_bounded(tmp_path, capsys):
    assert_refused(["compare", RUN, RUN, "--gold", GOLD, "--permutations", str(10**12)], tmp_path, capsys=capsys,
                   contains=["--permutations"])


def test_config_resamples_are_bounded(tmp_path, capsys):
    path = _config(tmp_path, PASSING + "defaults:\n  resamples: 1000000000000\n")
    assert_refused(_gate(path), tmp_path, names=["ship.yaml"], capsys=capsys, contains=["defaults.resamples"])


def test_stats_api_refuses_huge_resamples():
    from rankgate.errors import UsageError
    from rankgate.stats.bootstrap import bootstrap_ci

    with pytest.raises(UsageError, match="between 0 and 1,000,000"):
        bootstrap_ci(np.arange(5.0), rng=0, resamples=10**12)


# -- baseline summaries with impossible values ---------------------------------------------------
@pytest.fixture
def summary(tmp_path: Path) -> Path:
    out = tmp_path / "base"
    assert main([str(a) for a in [*EVAL, "--out", out]]) == 0
    return out / "summary.json"


@pytest.mark.parametrize(("value", "field"), [
    ("1e999", "metrics.hit@5.mean"),
    ("-1e999", "metrics.hit@5.mean"),
    ("NaN", "metrics.hit@5.mean"),
    ("1.5", "metrics.hit@5.mean"),
    ("-0.2", "metrics.hit@5.mean"),
])
def test_baseline_summary_values_must_be_finite_and_in_range(tmp_path, capsys, summary, value, field):
    data = json.loads(summary.read_text())
    data["metrics"]["hit@5"]["mean"] = "@@"
    bad = tmp_path / "bad-summary.json"
    bad.write_text(json.dumps(data).replace('"@@"', value))
    config = _config(tmp_path, "gates:\n  - metric: hit@5\n    regression_max: 0.1\n")
    out = tmp_path / "o"
    assert_refused(_gate(config, "--baseline", bad, "--json-out", out / "g.json"), out, names=["bad-summary.json"],
                   capsys=capsys, contains=[field])


def test_baseline_summary_negative_n_and_swapped_interval(tmp_path, capsys, summary):
    data = json.loads(summary.read_text())
    data["metrics"]["hit@5"]["n"] = -4
    bad = tmp_path / "n.json"
    bad.write_text(json.dumps(data))
    config = _config(tmp_path, "gates:\n  - metric: hit@5\n    regression_max: 0.1\n")
    assert_refused(_gate(config, "--baseline", bad), None, names=["n.json"], capsys=capsys, contains=["hit@5.n"])
    data["metrics"]["hit@5"].update(n=7, ci_low=0.9, ci_high=0.1)
    bad.write_text(json.dumps(data))
    assert_refused(_gate(config, "--baseline", bad), None, names=["n.json"], capsys=capsys, contains=["ci_low"])


# -- the last-resort guard ---------------------------------------------------------------------------
@pytest.fixture
def broken_evaluate(monkeypatch):
    import rankgate.cli.evaluate as command

    def boom(args):
        raise ValueError("injected\nfailure")

    monkeypatch.setattr(command, "run", boom)


def test_an_internal_error_is_exit_3_with_one_line(tmp_path, capsys, broken_evaluate, monkeypatch):
    monkeypatch.delenv("RANKGATE_DEBUG", raising=False)
    line = assert_refused([*EVAL, "--out", tmp_path / "o"], tmp_path, code=3, capsys=capsys,
                          contains=["rankgate evaluate: internal error: ValueError: injected failure",
                                    "please report it", "--debug"])
    assert line.count("\n") == 0


@pytest.mark.parametrize("how", ["flag", "flag-first", "env"])
def test_debug_shows_the_traceback(tmp_path, capsys, broken_evaluate, monkeypatch, how):
    monkeypatch.delenv("RANKGATE_DEBUG", raising=False)
    argv = [str(a) for a in EVAL]
    if how == "flag":
        argv.append("--debug")
    elif how == "flag-first":
        argv.insert(0, "--debug")
    else:
        monkeypatch.setenv("RANKGATE_DEBUG", "1")
    assert main(argv) == 3
    err = capsys.readouterr().err
    assert "Traceback" in err and "ValueError: injected" in err
    assert err.strip().splitlines()[-1].startswith("rankgate evaluate: internal error: ValueError")


def test_out_of_memory_is_exit_3_with_a_clear_line(tmp_path, capsys, monkeypatch):
    import rankgate.cli.evaluate as command

    def oom(args):
        raise MemoryError

    monkeypatch.setattr(command, "run", oom)
    assert_refused([*EVAL], tmp_path, code=3, capsys=capsys, contains=["ran out of memory"])


def test_a_gate_crash_is_never_exit_1(tmp_path, capsys, monkeypatch):
    import rankgate.flows.gate

    def boom(*_a, **_k):
        raise KeyError("x")

    monkeypatch.setattr(rankgate.flows.gate, "gate", boom)
    assert_refused(_gate(_config(tmp_path)), tmp_path, code=3, capsys=capsys, contains=["internal error: KeyError"])


# -- a metric's own declaration decides its bounds ---------------------------------------------------
def test_a_plugin_count_metric_can_have_a_threshold_above_1(tmp_path, capsys):
    from rankgate.metrics import MetricDefinition, metric_info, register

    class RetrievedCount(MetricDefinition):
        name = "hostile_cli_retrieved"
        applies = "all"
        unit = "count"
        summary = "items retrieved"
        formula = "|D_k|"

        def compute(self, ctx, metric, k):
            return np.minimum(np.diff(ctx.offsets).astype(np.float64), k)

        def reference(self, q, metric, k):
            return float(len(q.top(k)))

    register(RetrievedCount)
    info = metric_info("hostile_cli_retrieved@5")
    assert info.unit == "count" and info.bounds == (0.0, float("inf")) and info.known
    ok = _config(tmp_path, "gates:\n  - metric: hostile_cli_retrieved@5\n    threshold: 2\n", "count.yaml")
    assert main([str(a) for a in _gate(ok)]) == 0
    assert "PASS" in capsys.readouterr().out
    assert main([str(a) for a in _gate(_config(tmp_path, "gates:\n  - metric: distinct_docs@5\n    threshold: 5\n",
                                               "dd.yaml"))]) in (0, 1)
    bad = _config(tmp_path, "gates:\n  - metric: recall@5\n    threshold: 5\n", "bad.yaml")
    assert_refused(_gate(bad), tmp_path, names=["bad.yaml"], capsys=capsys, contains=["between 0 and 1"])


def test_metric_info_follows_declarations():
    from rankgate.metrics import metric_info

    assert metric_info("forbidden@5").higher_is_better is False
    assert metric_info("ndcg(gain=exp)@10").family == "ndcg"
    assert metric_info("recall@5").is_share and not metric_info("mrr").is_share
    assert metric_info("mrr").bounds == (0.0, 1.0)
    assert metric_info("distinct_docs@5").bounds == (0.0, float("inf"))
    unknown = metric_info("nosuchmetric@3")
    assert not unknown.known and unknown.family == "nosuchmetric"


# -- numbers too large for the kernels ---------------------------------------------------------------
@pytest.mark.parametrize(("argv", "contains"), [
    (["--metrics", "recall@100000000000000000000000"], "at most 1,000,000,000"),
    (["--sweep", "recall", "--ks", "1,100000000000000000000000"], "at most 1,000,000,000"),
    (["--k", "100000000000000000000000"], "--k"),
    (["--metrics", "recall(rel=100000000000000000000000)@5"], "64 bits"),
    (["--metrics", "novelty(overlap=nan)@5"], "must be a number"),
])
def test_out_of_range_metric_numbers_are_usage_errors(tmp_path, capsys, argv, contains):
    assert_refused([*EVAL, *argv, "--out", tmp_path / "o"], tmp_path, capsys=capsys, contains=[contains])


def test_an_output_that_is_an_input_is_refused(tmp_path, capsys):
    gold = tmp_path / "gold.jsonl"
    gold.write_bytes(GOLD.read_bytes())
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"chunk_id": "a#c1", "text": "x"}\n')
    assert_refused(["retrieve", "--corpus", corpus, "--gold", gold, "-o", gold], tmp_path, names=["gold.jsonl"],
                   capsys=capsys, contains=["also an input"])
    run = tmp_path / "run.jsonl"
    run.write_bytes(RUN.read_bytes())
    assert_refused(["compare", run, RUN, "--gold", gold, "--out", run], tmp_path, names=["run.jsonl"], capsys=capsys,
                   contains=["also an input"])
    config = _config(tmp_path)
    assert_refused(_gate(config, "--comment", config), tmp_path, names=["ship.yaml"], capsys=capsys,
                   contains=["also an input"])


def test_a_closed_stdout_does_not_turn_a_failed_gate_into_a_pass(tmp_path, monkeypatch):
    import rankgate.cli.gate as command

    def closed(_outcome):
        raise BrokenPipeError

    monkeypatch.setattr(command, "_print", closed)
    failing = _config(tmp_path, "gates:\n  - metric: hit@5\n    threshold: 1.0\n")
    assert main([str(a) for a in _gate(failing)]) == 1


def test_a_failing_comparison_writes_no_fused_run(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    missing = tmp_path / "no-such-gold.jsonl"
    assert_refused(["compare", RUN, RUN, "--fuse", "rrf", "--fused-run", out / "fused.jsonl", "--gold", missing,
                    "--out", out / "cmp.txt"], out, names=["no-such-gold.jsonl"], capsys=capsys)


@pytest.mark.parametrize(("text", "contains"), [
    ('{"metrics": []}', "'metrics' object"),
    ('{"metrics": {}}', "is empty"),
    ('{"metrics": {"hit@5": {"mean": 0.5, "n": 3}}, "segments": {"lang": {"de": [1]}}}', "segments.lang.de"),
])
def test_malformed_baseline_summaries_are_explained_as_summaries(tmp_path, capsys, text, contains):
    bad = tmp_path / "base.json"
    bad.write_text(text)
    config = _config(tmp_path, "gates:\n  - metric: hit@5\n    regression_max: 0.1\n")
    assert_refused(_gate(config, "--baseline", bad), None, names=["base.json"], capsys=capsys, contains=[contains])


def test_config_cutoff_is_bounded(tmp_path, capsys):
    path = _config(tmp_path, PASSING + "evaluate:\n  k: 100000000000000000000\n")
    assert_refused(_gate(path), tmp_path, names=["ship.yaml"], capsys=capsys, contains=["evaluate.k"])


# -- baselines through pipes, with a byte-order mark, or nested past the stack ----------------------
def _pipe_of(path: Path, data: bytes) -> Path:
    import threading

    os.mkfifo(path)

    def write() -> None:
        try:
            with open(path, "wb") as fh:
                fh.write(data)
        except BrokenPipeError:
            pass

    threading.Thread(target=write, daemon=True).start()
    return path


def test_a_summary_through_a_pipe_is_a_baseline_summary(tmp_path, capsys, summary):
    config = _config(tmp_path, "gates:\n  - metric: hit@5\n    regression_max: 0.01\n")
    capsys.readouterr()
    from_file = main([str(a) for a in _gate(config, "--baseline", summary)])
    expected = capsys.readouterr()
    pipe = _pipe_of(tmp_path / "63", summary.read_bytes())
    assert main([str(a) for a in _gate(config, "--baseline", pipe)]) == from_file == 0
    got = capsys.readouterr()
    assert (got.out, got.err) == (expected.out, expected.err)
    pipe2 = _pipe_of(tmp_path / "64", RUN.read_bytes())  # a run through a pipe is still a run
    assert main([str(a) for a in _gate(config, "--baseline", pipe2)]) == 0


def test_a_report_reads_a_summary_through_a_pipe(tmp_path, capsys, summary):
    pipe = _pipe_of(tmp_path / "63", summary.read_bytes())
    out = tmp_path / "r.html"
    assert main(["report", "--gold", str(GOLD), "--run", str(RUN), "--baseline", str(pipe), "-o", str(out),
                 "--resamples", "20"]) == 0
    assert "Traceback" not in capsys.readouterr().err


def test_a_summary_with_a_byte_order_mark_is_a_summary(tmp_path, capsys, summary):
    bom = tmp_path / "bom.json"
    bom.write_bytes(b"\xef\xbb\xbf" + summary.read_bytes())
    assert main([str(a) for a in _gate(_config(tmp_path), "--baseline", bom)]) == 0
    assert "not a run" not in capsys.readouterr().err


def test_a_baseline_nested_past_the_stack_is_an_input_error(tmp_path, capsys):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    assert_refused(_gate(_config(tmp_path), "--baseline", deep), tmp_path, names=[deep], capsys=capsys)


# -- standard output that cannot be written -----------------------------------------------------------
class _FullDisk:
    encoding = "utf-8"

    def write(self, _text: str) -> int:
        raise OSError(28, "No space left on device")

    def flush(self) -> None:
        raise OSError(28, "No space left on device")

    def isatty(self) -> bool:
        return False


@pytest.mark.parametrize("argv", [
    [*EVAL],
    [*EVAL, "--json"],
    ["gate", "--config", "{config}", "--gold", GOLD, "--candidate", RUN, "--no-step-summary"],
])
def test_a_stdout_that_cannot_be_written_is_an_output_error(tmp_path, capsys, monkeypatch, argv):
    config = _config(tmp_path)
    argv = [config if a == "{config}" else a for a in argv]
    capsys.readouterr()
    monkeypatch.setattr("sys.stdout", _FullDisk())
    line = assert_refused(argv, tmp_path, names=["stdout"], capsys=capsys, contains=["No space left"])
    assert "internal error" not in line


# -- retrieve's depth, and formulas in stale.csv ------------------------------------------------------
def test_retrieve_k_is_bounded(tmp_path, capsys):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"chunk_id": "a", "text": "free plan"}\n')
    assert_refused(["retrieve", "--corpus", corpus, "--gold", GOLD, "--retriever", "bm25", "-o", tmp_path / "o.jsonl",
                    "--depth", str(10**30)], tmp_path, capsys=capsys, contains=["--depth"])


def test_stale_csv_defuses_spreadsheet_formulas(tmp_path, capsys):
    gold = tmp_path / "gold.jsonl"
    gold.write_text('{"query_id": "=cmd|x", "relevant_chunks": [{"chunk_id": "=1+1", "grade": 1}]}\n')
    manifest = tmp_path / "manifest.jsonl"
    manifest.write_text('{"chunk_id": "other"}\n')
    main(["gold", "stale", "--gold", str(gold), "--corpus", str(manifest), "-o", str(tmp_path / "out")])
    text = (tmp_path / "out" / "stale.csv").read_text()
    assert "'=cmd|x,'=1+1," in text, text


def test_an_empty_doc_separator_at_doc_level_is_a_usage_error(tmp_path, capsys):
    from .hostile import assert_refused

    gold = tmp_path / "gold.jsonl"
    gold.write_text('{"query_id": "q1", "relevant": ["d1#c1"]}\n')
    run = tmp_path / "run.jsonl"
    run.write_text('{"query_id": "q1", "retrieved": ["d1#c2", "d1#c1"]}\n')
    out = tmp_path / "out"
    assert_refused(["evaluate", "--gold", gold, "--run", run, "--level", "doc", "--doc-sep", "", "--out", out],
                   out, capsys=capsys, contains=["doc_sep"])


@pytest.mark.parametrize(("ids", "sep"), [(["é"], "éé"), (["ab", "c"], "abcab")])
def test_a_doc_separator_longer_than_every_id_is_in_no_id(tmp_path, capsys, ids, sep):
    """distinct_docs asks whether any ranked id holds the separator; one longer than all the ids' bytes
    together was an internal error (the search window ran past them). Now: no id holds it."""
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"query_id": "q1", "relevant": ids[:1]}) + "\n", encoding="utf-8")
    run = tmp_path / "run.jsonl"
    run.write_text(json.dumps({"query_id": "q1", "retrieved": ids}) + "\n", encoding="utf-8")
    argv = ["evaluate", "--gold", str(gold), "--run", str(run), "--doc-sep", sep,
            "--metrics", "distinct_docs@5,redundancy@5", "--json"]
    assert main(argv) == 0
    means = {m: v["mean"] for m, v in json.loads(capsys.readouterr().out)["metrics"].items()}
    assert means == {"distinct_docs@5": float(len(ids)), "redundancy@5": 0.0}
