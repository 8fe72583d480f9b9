"""One option name, one meaning, in every command; errors that name the likely mistake.

The parsers are walked as ``rankgate <cmd> --help`` shows them: every option a user sees. An option that two or
more commands take is described in :data:`MEANINGS` (what it is, and whether it takes a value), and every command
must agree with that. Old spellings (``--output``, ``gate --json PATH``, ``retrieve --k``, ``traces --k``,
``traces --format``) still work for one release with a one-line note on stderr.
"""
from __future__ import annotations

import argparse
import importlib
import json
from pathlib import Path

import pytest

from rankgate.cli.main import COMMANDS, build_parser, main
from rankgate.cli.options import JsonFlag, Renamed
from rankgate.io.jsonl import RELEVANT_KEYS, RUN_LIST_KEYS

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
DEMO = ROOT / "src" / "rankgate" / "demo" / "data"
TRACES = DATA / "producers" / "llamaindex.otlp.json"

#: Every option two or more commands take: (its kind, what it means). Kinds: flag (takes no value), int, float,
#: text (a word, a path or a list). A new shared option must be added here, with the meaning it has everywhere.
MEANINGS: dict[str, tuple[str, str]] = {
    "--help": ("flag", "show the help"),
    "--debug": ("flag", "print the traceback of an internal error"),
    "--quiet": ("flag", "no progress on the terminal"),
    "--json": ("flag", "print the command's JSON on stdout (a file is --json-out PATH or --out)"),
    "--json-out": ("text", "write the JSON to this file"),
    "--markdown": ("flag", "print markdown on stdout"),
    "--out": ("text", "the file or folder the command writes"),
    "--k": ("int", "a metric's cutoff: the top k a metric looks at"),
    "--depth": ("int", "how deep into a ranked list: hits kept or taken"),
    "--instability-depth": ("int", "list depth compared for instability"),
    "--ranking": ("text", "which ranking of the run is scored: final (topk), raw (raw_topk) or both"),
    "--gold": ("text", "the gold set"),
    "--run": ("text", "the run scored"),
    "--baseline": ("text", "the run (or summary) compared against"),
    "--corpus": ("text", "the corpus (file or manifest)"),
    "--config": ("text", "the ship criteria (YAML)"),
    "--by": ("text", "segment by these fields"),
    "--gold-format": ("text", "override the gold set's format detection"),
    "--run-format": ("text", "override the run's format detection"),
    "--traces-format": ("text", "override the traces' format detection"),
    "--format": ("text", "the format of the report printed on stdout"),
    "--columns": ("text", "where each field lives (table columns / dotted paths)"),
    "--field": ("text", "where a field lives: NAME=PATH"),
    "--field-map": ("text", "where the export keeps each field (YAML)"),
    "--metrics": ("text", "the metric specs"),
    "--ties": ("text", "the ranking rule for equal scores"),
    "--level": ("text", "chunk or document ids"),
    "--doc-sep": ("text", "separator of document and chunk id"),
    "--doc-map": ("text", "chunk-to-document mapping file"),
    "--dedupe": ("text", "what a repeated id in a ranking does"),
    "--trec": ("flag", "trec_eval's semantics"),
    "--complete": ("flag", "with --trec: average over all gold queries"),
    "--seed": ("int", "a random seed"),
    "--resamples": ("int", "bootstrap resamples"),
    "--confidence": ("float", "the intervals' confidence level"),
    "--enforce-as-of": ("flag", "freshness what-if"),
    "--routing": ("flag", "routing component report"),
    "--entity-linking": ("flag", "entity-linking component report"),
    "--judged": ("text", "judge labels of items the gold set lacks"),
    "--calibration": ("text", "the judge's calibration file (read)"),
    "--queries": ("text", "a queries file (texts shown beside ids)"),
    "--comment": ("text", "write the PR comment (markdown) here"),
    "--answers": ("text", "the answers (or their summary) read"),
    "--human": ("text", "human labels (JSONL)"),
    "--abstention": ("text", "the abstention calibration file (YAML)"),
    "--abstention-threshold": ("float", "top-1 score under which a request is low confidence"),
    "--traces": ("text", "trace exports"),
    "--on-error": ("text", "a row that cannot be used: error or skip"),
    "--window": ("text", "the window width"),
    "--engine": ("text", "the engine of the trace analysis"),
    "--spark-master": ("text", "Spark's master URL"),
    "--monitors": ("text", "the monitors file"),
    "--n": ("int", "how many"),
    "--max-reply-bytes": ("int", "largest reply body read"),
    "--reranker": ("text", "the reranker"),
    "--option": ("text", "a retriever or reranker option KEY=VALUE"),
    "--judge": ("text", "the judge backend"),
    "--judge-url": ("text", "the judge server's URL"),
    "--judge-model": ("text", "the judge's model"),
    "--judge-key-env": ("text", "the variable holding the judge's key"),
    "--workers": ("int", "judge calls in flight"),
    "--timeout": ("float", "seconds a judge call may take"),
    "--cache": ("text", "the judge cache folder"),
    "--no-cache": ("flag", "no judge cache"),
    "--refresh": ("flag", "call the judge again"),
    "--repeats": ("int", "judge each item N times"),
    "--max-calls": ("int", "the judge's call budget"),
    "--dry-run": ("flag", "print the calls and call nothing"),
    "--price-in": ("float", "price per 1M input tokens"),
    "--price-out": ("float", "price per 1M output tokens"),
    "--id": ("text", "an id"),
    "--when": ("text", "the date a calibration written bears"),
    "--task": ("text", "the judge task of the labels"),
    "--db": ("text", "the labels database (rankgate label)"),
    "--runs": ("text", "several runs: pooled, or shown side by side"),
    "--judge-labels": ("text", "a judge's labels (JSONL)"),
    "--weights": ("text", "kappa weights: linear, quadratic or none"),
    "--store": ("text", "the history store (a folder)"),
    "--permutations": ("int", "sign flips of the paired randomisation test"),
    "--top": ("int", "most-changed queries listed"),
    "--title": ("text", "the page's title"),
    "--stratify": ("text", "the fields whose values cut a sample into strata"),
    "--judge-seed": ("int", "the seed sent with every judge call (where --seed is another one)"),
    "--retries": ("int", "retries of a failed judge call"),
    "--faithful-min": ("float", "the share of supported statements at which an answer is faithful"),
}
#: Short options: the long option each one is, in every command.
SHORT = {"-h": "--help", "-o": "--out", "-m": "--metrics", "-c": "--complete", "-O": "--option", "-q": "--quiet"}
#: A name that still has two shapes, and why: the test fails once they agree, so the entry is removed.
SHAPES = {"--rewrite": "the query-rewriting analysis: compare reads the log from its RUN arguments (a flag), "
                       "report from the option's value (LOG)"}


def _parsers(parser: argparse.ArgumentParser, name: str = "rankgate"):
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for verb, sub in action.choices.items():
                yield from _parsers(sub, f"{name} {verb}")


def _commands() -> list[tuple[str, argparse.ArgumentParser]]:
    """Every command and action with its parser (``rankgate gold stale``…), as their --help shows them."""
    return [(name, p) for name, p in _parsers(build_parser()) if name != "rankgate"
            and not any(isinstance(a, argparse._SubParsersAction) for a in p._actions)]


def _shown(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if a.option_strings and a.help is not argparse.SUPPRESS]


def _kind(action: argparse.Action) -> str:
    if action.nargs == 0 or isinstance(action, JsonFlag):  # (--json PATH: the old spelling of --json-out PATH)
        return "flag"
    return {int: "int", float: "float"}.get(action.type, "text")  # type: ignore[call-overload]


def _long(action: argparse.Action) -> str:
    return next(s for s in action.option_strings if s.startswith("--"))


def test_every_command_is_walked():
    names = {name.split()[1] for name, _ in _commands()}
    assert names == {c.replace("_", "-") for c in COMMANDS}
    assert len(_commands()) > len(COMMANDS)  # the actions of gold, traces, judge, incident too


def test_an_option_name_has_one_meaning_in_every_command():
    uses: dict[str, dict[str, str]] = {}
    for name, parser in _commands():
        for action in _shown(parser):
            for option in action.option_strings:
                uses.setdefault(option, {})[name] = _kind(action)
            for short in (s for s in action.option_strings if not s.startswith("--")):
                assert SHORT.get(short) == _long(action), f"{name}: {short} is {action.option_strings}, not {SHORT.get(short)}"
    shared = {option for option, where in uses.items() if len(where) > 1 and option.startswith("--")}
    missing = sorted(shared - set(MEANINGS) - set(SHAPES))
    assert not missing, f"options taken by several commands with no meaning stated in MEANINGS: {missing}"
    for option in sorted(shared - set(SHAPES)):
        kind, meaning = MEANINGS[option]
        wrong = {name: k for name, k in uses[option].items() if k != kind}
        assert not wrong, f"{option} ({kind}: {meaning}) is another kind in {wrong}"
    for option in SHAPES:  # still two shapes (else drop the entry)
        assert len(set(uses[option].values())) > 1


def test_json_is_a_flag_that_prints_and_out_is_a_declared_output():
    checked = {"--json": 0, "--out": 0, "--k": 0}
    for name, parser in _commands():
        for action in _shown(parser):
            if "--json" in action.option_strings:
                checked["--json"] += 1
                assert action.const is True and action.nargs in (0, "?"), name  # bare --json: print on stdout
            if "--out" in action.option_strings:
                checked["--out"] += 1
                assert action.dest == "out" and "-o" in action.option_strings, name
            if "--k" in action.option_strings:
                checked["--k"] += 1
                assert action.dest == "k" and ("cutoff" in action.help or "top k" in action.help), name
            assert not {"--output", "--json-file"} & set(action.option_strings), name
    assert min(checked.values()) >= 3
    # every --out and --json-out is an output the command checks before it works (rankgate.cli.outputs)
    for command in ("compare", "report", "retrieve", "gate", "traces", "evaluate", "answers"):
        module = importlib.import_module(f"rankgate.cli.{command}")
        tables = module.OUTPUTS.values() if command == "traces" else [module.OUTPUTS]
        options = {out.option for table in tables for out in table.values()}
        assert "--json" not in options and "--output" not in options, command
        assert options & {"--out", "--json-out"}, command


def test_prefixes_are_not_options():
    for name, parser in [("rankgate", build_parser()), *_commands()]:
        assert parser.allow_abbrev is False, name


def _run(argv, capsys):
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exc:  # (argparse's refusals leave through SystemExit)
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def test_gate_run_names_candidate(capsys):
    code, _, err = _run(["gate", "--config", "c.yaml", "--gold", "g.jsonl", "--run", "cand.jsonl"], capsys)
    assert code == 2
    assert err.splitlines()[-1] == ("rankgate: error: --run is not an option of rankgate gate: gate takes the proposed "
                                    "run as --candidate RUN (and the run or summary.json it is compared with as "
                                    "--baseline)")
    code, _, err = _run(["gate", "--config", "c.yaml", "--gold", "g.jsonl", "--candidate", "c", "--json-o", "x"], capsys)
    assert code == 2 and "unrecognized arguments: --json-o x" in err  # no prefix of --json-out


GATE = ["gate", "--config", DATA / "report" / "ship-criteria.yaml", "--gold", DATA / "gate" / "gold.jsonl",
        "--candidate", DATA / "gate" / "cand.jsonl", "--baseline", DATA / "gate" / "base.jsonl", "--no-step-summary"]


def test_gate_json_prints_and_json_out_writes(tmp_path, capsys):
    code, out, err = _run([*GATE, "--json"], capsys)
    printed = json.loads(out)
    assert printed["exit_code"] == code and "gates" in printed and "note:" not in err
    code2, out, err = _run([*GATE, "--json-out", tmp_path / "o.json"], capsys)
    assert code2 == code and json.loads((tmp_path / "o.json").read_text()) == printed and not out.startswith("{")
    # the old spelling: the same file, and one note
    code3, out, err = _run([*GATE, "--json", tmp_path / "old.json"], capsys)
    assert code3 == code and (tmp_path / "old.json").read_text() == (tmp_path / "o.json").read_text()
    assert err.splitlines()[0] == "rankgate gate: note: --json PATH is deprecated; use --json-out PATH"
    assert not out.startswith("{")


def test_old_spellings_still_work_with_a_note(tmp_path, capsys):
    runs = [DATA / "gate" / "base.jsonl", DATA / "gate" / "cand.jsonl"]
    code, out, err = _run(["compare", "--gold", DATA / "gate" / "gold.jsonl", *runs, "--markdown", "--resamples", "100",
                           "--output", tmp_path / "old.md"], capsys)
    assert code == 0 and out == ""
    assert err.splitlines() == ["rankgate compare: note: --output is deprecated; use --out"]
    code, out, err = _run(["compare", "--gold", DATA / "gate" / "gold.jsonl", *runs, "--markdown", "--resamples", "100",
                           "-o", tmp_path / "new.md"], capsys)
    assert code == 0 and err == "" and (tmp_path / "new.md").read_text() == (tmp_path / "old.md").read_text()

    check = ["traces", "check", "--traces", TRACES]
    code, new, err = _run([*check, "--instability-depth", "5", "--traces-format", "otlp", "--json-out",
                           tmp_path / "flags.json"], capsys)
    assert code == 0 and err == ""
    code, old, err = _run([*check, "--k", "5", "--format", "otlp", "--json", tmp_path / "flags-old.json"], capsys)
    assert code == 0 and old == new and "flags" in json.loads((tmp_path / "flags.json").read_text())
    assert (tmp_path / "flags-old.json").read_text() == (tmp_path / "flags.json").read_text()
    assert err.splitlines() == ["rankgate traces check: note: --k is deprecated; use --instability-depth",
                                "rankgate traces check: note: --format is deprecated; use --traces-format",
                                "rankgate traces check: note: --json PATH is deprecated; use --json-out PATH"]
    code, out, err = _run([*check, "--json"], capsys)
    assert code == 0 and json.loads(out) == json.loads((tmp_path / "flags.json").read_text())


def test_retrieve_depth_and_its_old_spelling(tmp_path, capsys):
    base = ["retrieve", "--corpus", DEMO / "corpus.jsonl", "--gold", DEMO / "gold.jsonl", "--no-latency"]
    code, out, err = _run([*base, "-o", tmp_path / "new.jsonl", "--depth", "3"], capsys)
    assert code == 0 and err == "" and "up to 3 hits each" in out
    code, out, err = _run([*base, "--output", tmp_path / "old.jsonl", "--k", "3"], capsys)
    assert code == 0 and (tmp_path / "old.jsonl").read_bytes() == (tmp_path / "new.jsonl").read_bytes()
    assert err.splitlines() == ["rankgate retrieve: note: --output is deprecated; use --out",
                                "rankgate retrieve: note: --k is deprecated; use --depth"]
    code, _, err = _run([*base, "-o", tmp_path / "x.jsonl", "--depth", "0"], capsys)
    assert code == 2 and "--depth must be between 1 and" in err  # the flow's field, said as this command's option


def test_renamed_options_hide_their_old_names_from_help(capsys):
    renamed = [(name, parser, a) for name, parser in _commands() for a in parser._actions if isinstance(a, Renamed)]
    assert {(name, old) for name, _, a in renamed for old in a.old} >= {
        ("rankgate compare", "--output"), ("rankgate report", "--output"), ("rankgate retrieve", "--output"),
        ("rankgate retrieve", "--k"), ("rankgate traces check", "--k"), ("rankgate traces analyze", "--format")}
    for name, parser, action in renamed:
        assert not set(action.old) & set(action.option_strings), name
        text = parser.format_help().replace(",", " ")  # (help texts may speak of --k: a metric's cutoff)
        assert all(f"{old} " not in text for old in action.old if old != "--k"), name


# -- errors that name the likely mistake ---------------------------------------------------------------------------

def _lines(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


GOLD_ROW = {"query_id": "q1", "relevant_chunks": [{"chunk_id": "d1", "grade": 1}]}
RUN_ROW = {"query_id": "q1", "topk": [{"chunk_id": "d1", "score": 1.0}]}
SWAP = ("were --gold and --run swapped? --gold takes the judgements, --run (gate: --candidate, --baseline) the "
        "retriever's output")


def test_gold_and_run_swapped(tmp_path, capsys):
    gold, run = _lines(tmp_path / "gold.jsonl", [GOLD_ROW]), _lines(tmp_path / "run.jsonl", [RUN_ROW])
    code, _, err = _run(["evaluate", "--gold", run, "--run", gold], capsys)
    assert code == 2
    assert err == (f"rankgate evaluate: error: {run}:1: looks like a line of a run, not of a gold set: it lists "
                   f"retrieved items under 'topk' and none under relevant_chunks, relevant, expected_output … "
                   f"({SWAP})\n")
    code, _, err = _run(["evaluate", "--gold", gold, "--run", gold], capsys)
    assert code == 2
    assert err == (f"rankgate evaluate: error: {gold}:1: looks like a line of a gold set, not of a run: it lists "
                   f"relevant items under 'relevant_chunks' and none under topk, retrieved, results … ({SWAP})\n")


def test_unknown_key_is_named_with_the_keys_read(tmp_path, capsys):
    run = _lines(tmp_path / "run.jsonl", [RUN_ROW])
    gold = _lines(tmp_path / "gold.jsonl", [{"query_id": "q1", "relevant_ids": ["d1"], "owner": "search"}])
    code, _, err = _run(["evaluate", "--gold", gold, "--run", run], capsys)
    assert code == 2
    assert err == (f"rankgate evaluate: error: {gold}:1: has no relevant items: rankgate does not read the key "
                   f"'relevant_ids'; did you mean 'relevant_docs'? (the keys it reads for them: {', '.join(RELEVANT_KEYS)}"
                   '; a query with no relevant item sets "no_answer": true)\n')
    assert RELEVANT_KEYS[:2] == ("relevant_chunks", "relevant")
    bad_run = _lines(tmp_path / "run2.jsonl", [{"query_id": "q1", "top_k": ["d1"]}])
    code, _, err = _run(["evaluate", "--gold", _lines(tmp_path / "g.jsonl", [GOLD_ROW]), "--run", bad_run], capsys)
    assert code == 2
    assert err == (f"rankgate evaluate: error: {bad_run}:1: has no retrieved items: rankgate does not read the key "
                   f"'top_k'; did you mean 'topk'? (the keys it reads for them: {', '.join(RUN_LIST_KEYS)})\n")
    assert RUN_LIST_KEYS[:3] == ("topk", "retrieved", "results")
    # a scalar field is still a segment field, and a line with nothing else keeps its old message
    plain = _lines(tmp_path / "g3.jsonl", [{"query_id": "q1", "owner": "search"}])
    code, _, err = _run(["evaluate", "--gold", plain, "--run", run], capsys)
    assert code == 2 and "field 'relevant_chunks' must list at least one relevant item; got nothing" in err


@pytest.mark.parametrize("value, hint", [
    ("5%", "must be a drop in points, not a percentage; got '5%' (write '5pp' or 0.05 for a drop of 5 points)"),
    ("5", "must be between 0 and 1 for recall@5; got 5.0 (a drop is in points: write 0.05 (or '5pp') for 5 points)"),
    ("abc", "must be a number; got 'abc' (write 0.03 or '3pp')"),
])
def test_regression_max_suggests_points(tmp_path, value, hint):
    from rankgate.errors import ConfigError
    from rankgate.gating.config import load_config

    path = tmp_path / "ship.yaml"
    path.write_text(f"gates:\n  - metric: recall@5\n    regression_max: {value}\n")
    with pytest.raises(ConfigError) as caught:
        load_config(str(path))
    assert str(caught.value) == f"{path}:3: field 'gates[0].regression_max' {hint}"
    assert "0.85" not in str(caught.value)
    path.write_text("gates:\n  - metric: recall@5\n    regression_max: 5pp\n")
    assert load_config(str(path)).gates[0].regression_max == 0.05


@pytest.mark.parametrize("text, message", [
    ("hit@5 => 0.9", "the expectation 'hit@5 => 0.9' has the operator '=>'; the operators are >=, >, <= and <; "
                     "did you mean 'hit@5 >= 0.9'?"),
    ("mrr == 0.5", "the expectation 'mrr == 0.5' has the operator '=='; the operators are >=, >, <= and < "
                   "(an expectation is a floor or a ceiling)"),
])
def test_expectation_operator_is_named(text, message):
    from rankgate.errors import UsageError
    from rankgate.testing import parse_expectation

    with pytest.raises(UsageError) as caught:
        parse_expectation(text)
    assert str(caught.value) == message
    assert parse_expectation("ndcg(gain=exp)@10 >= 0.5").metric == "ndcg(gain=exp)@10"


@pytest.mark.parametrize("spec, meant", [("recall5", "recall@5"), ("ndcg10", "ndcg@10"), ("recal5", "recall@5"),
                                         ("ndgc@5", "ndcg@5")])
def test_metric_without_at_suggests_the_cutoff(spec, meant):
    from rankgate.errors import MetricSpecError
    from rankgate.metrics import parse_metric

    with pytest.raises(MetricSpecError) as caught:
        parse_metric(spec)
    assert str(caught.value).endswith(f"; did you mean {meant!r}?")
    assert str(parse_metric(meant))  # the suggestion parses
