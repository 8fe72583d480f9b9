"""The command-line options every command shares, each defined once.

Commands build their parsers from these helpers rather than from each other: ``--gold``, ``--run``,
``--out``, the format overrides, ``--ties``, the statistics options and the judge options have one
spelling, one help text and one default here. Numeric options come from the declarations in
:mod:`rankgate._util.constraints`, so the bound a command checks (:func:`check_stats_args`) is the bound the
library checks. Nothing heavy is imported at module level: the CLI builds its parser on every start.
"""

from __future__ import annotations

import argparse
from typing import Any

from rankgate._util.constraints import CONFIDENCE, RESAMPLES, SEED, TIMEOUT, Param
from rankgate.flows.evaluate import DEFAULT_METRICS  # the evaluate flow's default, shown in --help

__all__ = [
    "COMMAND_FLAGS",
    "DEFAULT_METRICS",
    "FLAGS",
    "GOLD_FILE_HELP",
    "JsonFlag",
    "Misnamed",
    "Renamed",
    "GOLD_HELP",
    "RUN_HELP",
    "TIES_HELP",
    "add_columns",
    "add_field",
    "add_trace_field",
    "add_component_options",
    "add_enforce_as_of",
    "add_when",
    "add_formats",
    "add_gold",
    "add_input_options",
    "add_judge",
    "add_json",
    "add_out",
    "add_param",
    "add_quiet",
    "add_ranking",
    "add_renamed",
    "add_run",
    "add_stats",
    "add_ties",
    "check_judge_counts",
    "check_stats_args",
    "deprecated",
    "flag",
    "parse_key_values",
    "record_fields",
    "trace_fields",
    "said_with_flags",
]


#: ``--gold`` of every command that reads a gold set with the readers (any format).
GOLD_HELP = ("gold set: JSONL, TREC qrels, BEIR qrels .tsv or folder, Parquet, CSV/TSV with a header, "
             "a RAGAS/DeepEval dataset, a LlamaIndex EmbeddingQAFinetuneDataset JSON, a Hugging Face save_to_disk folder")
#: ``--gold`` of the gold set's own lifecycle commands, which read and keep every line of a JSONL file.
GOLD_FILE_HELP = "the gold set"
RUN_HELP = ("run: JSONL, TREC run file, Parquet, CSV/TSV with a header, a RAGAS/DeepEval dataset "
            "(the same file as --gold works), a Hugging Face save_to_disk folder")
FORMAT_HELP = "override format detection: %(choices)s"
COLUMNS_HELP = ("CSV/TSV columns holding each field, e.g. query_id=qid,chunk_id=doc,score=s "
                "(fields: query_id, chunk_id, grade, score, rank, query, doc_version, text, note)")
TIES_HELP = ("the ranking rule: input (the file's order: ranks when every item has one, else score with equal "
             "scores in list/row order; the default, except for TREC runs and --trec) or id (trec_eval's: score, "
             "then id descending)")

#: The option that sets each field a flow's refusal can name (the fields of the requests, and of the JudgeSpec and
#: Statistics they hold): a flow speaks Python (``calibration needs judged``), the command line says the same with
#: these (``--calibration needs --judged``, :func:`said_with_flags`). A key ``field=value`` is the option that gives
#: the field that value where it is not the field's own option followed by the value.
FLAGS: dict[str, str] = {
    "abstention": "--abstention", "abstention_threshold": "--abstention-threshold", "backend": "--judge",
    "baseline": "--baseline", "beir": "--beir", "by": "--by", "cache": "--cache", "calibration": "--calibration",
    "columns": "--columns", "confidence": "--confidence", "config": "--config", "corpus": "--corpus", "date": "--date",
    "delta": "--delta", "depth": "--depth", "engine": "--engine", "fields": "--field",
    "enforce_as_of": "--enforce-as-of", "examples": "--examples", "fuse": "--fuse", "fused_run": "--fused-run",
    "fused_run=True": "--fused-run PATH", "gold": "--gold", "human": "--human", "id": "--id", "judged": "--judged",
    "k": "--k", "key_env": "--judge-key-env", "max_calls": "--max-calls", "max_drop": "--max-drop",
    "max_reply_bytes": "--max-reply-bytes", "max_statements": "--max-statements",
    "min_confidence": "--min-confidence", "model": "--judge-model", "n": "--n", "negatives": "--negatives",
    "permutations": "--permutations", "price_in": "--price-in", "price_out": "--price-out", "ranks": "--ranks",
    "refresh": "--refresh", "relevant_at": "--relevant-at", "repeat": "--repeat", "repeats": "--repeats",
    "rerank_depth": "--rerank-depth", "resamples": "--resamples", "retries": "--retries", "rewrite": "--rewrite",
    "seed": "--seed", "signals": "--signals", "spark_master": "--spark-master", "target_precision": "--target-precision",
    "texts": "--texts", "timeout": "--timeout", "top": "--top", "top_misses": "--top-misses", "url": "--judge-url",
    "use_cache=False": "--no-cache", "weights": "--weights", "window": "--window", "workers": "--workers",
    "when": "--when", "stratify": "--stratify", "days": "--days", "task": "--task", "answers": "--answers",
    "traces": "--traces",
    "db": "--db", "runs": "--runs", "scale": "--scale", "overlap": "--overlap", "port": "--port",  # (label)
    "host": "--host", "allow_remote": "--allow-remote",
    "into_gold": "--into-gold", "resolve": "--resolve", "every": "--all", "judge_labels": "--judge-labels",
    "budget": "--budget", "power": "--power", "plan": "--plan", "field_map": "--field-map",  # (gold plan, gold sample)
    "store": "--store", "commit": "--commit", "branch": "--branch", "metric": "--metric", "last": "--last",  # (history)
    "kind": "--kind",
    "ranking": "--ranking",  # (evaluate, compare)
    "sample": "--sample", "tasks": "--tasks", "judge_dir": "--judge-dir", "faithful_min": "--faithful-min",  # (traces judge)
}
#: Per command, the fields another option sets there (``answers`` asks for the calibration by naming its file).
COMMAND_FLAGS: dict[str, dict[str, str]] = {
    "answers": {"calibration": "--calibration-out"},
    "demo": {"out_dir": "--out"},  # (rankgate.demo.run_demo's folder)
    # --k is a metric's cutoff wherever it appears; these commands' k is how deep a list goes
    "retrieve": {"k": "--depth"},
    "traces": {"k": "--instability-depth"},
    "validity": {"fail_below": "--fail-below", "effect": "--effect", "key": "--key", "outcomes": "--outcomes",
                 "metrics": "--metrics", "traces_format": "--traces-format", "on_error": "--on-error"},
}


def flag(field: str, command: str = "") -> str:
    """The option of ``command`` that sets ``field`` (a field's name, or ``field=value`` as a flow's refusal marks
    it: ``negatives='lexical'`` is ``--negatives lexical``, ``refresh=True`` is ``--refresh``); a field no option
    sets keeps its name."""
    flags = COMMAND_FLAGS.get(command, {})
    for table in (flags, FLAGS):
        if field in table:
            return table[field]
    name, _, value = field.partition("=")
    option = flags.get(name) or FLAGS.get(name)
    if option is None:
        return field
    if not value or value == "True":
        return option
    return f"{option} {value.strip(chr(39) + chr(34))}"


def said_with_flags(error: BaseException, command: str) -> str:
    """The message of an error a command met, with each field a flow's refusal names said as ``command``'s option
    (:data:`FLAGS`): the one place the command line turns a request's words into its own."""
    from rankgate.errors import UsageError

    if isinstance(error, UsageError):
        return error.naming(lambda field: flag(field, command))
    return str(error)


def add_param(p: Any, param: Param, *, flag: str | None = None, help: str | None = None,
              metavar: str | None = None) -> None:
    """``--name`` for a declared parameter: its type and default from ``param`` (``flag`` renames it)."""
    kwargs: dict[str, Any] = {"type": param.type, "default": param.default, "help": help or param.help}
    if metavar is not None:
        kwargs["metavar"] = metavar
    p.add_argument(flag or "--" + param.name.replace("_", "-"), **kwargs)


def add_gold(p: Any, *, required: bool = True, help: str = GOLD_HELP, metavar: str = "PATH") -> None:
    """``--gold``: a gold set in any format the readers know (the lifecycle commands pass ``GOLD_FILE_HELP``)."""
    p.add_argument("--gold", required=required, metavar=metavar, help=help)


def add_run(p: Any, *, required: bool = True, help: str = RUN_HELP) -> None:
    """``--run``: one run in any format the readers know; ``help`` says which run when a command has several."""
    p.add_argument("--run", required=required, metavar="PATH", help=help)


def add_out(p: Any, help: str, *, required: bool = False, metavar: str = "DIR", old: tuple[str, ...] = ()) -> None:
    """``--out``/``-o``: where the command writes (a folder, or a file for the commands that write one); ``old``:
    spellings the command took before, still read for one release (:class:`Renamed`)."""
    if old:
        add_renamed(p, "--out", "-o", old=old, required=required, metavar=metavar, help=help)
    else:
        p.add_argument("--out", "-o", required=required, metavar=metavar, help=help)


class Renamed(argparse.Action):
    """An option that had another name: the ``old`` spellings still work for one release, each use saying on
    stderr that it is deprecated (``rankgate retrieve: note: --k is deprecated; use --depth``).

    The old spellings are parsed as the option itself (a required option given by its old name counts as given)
    but are left out of ``--help``, the usage line and error messages, which name the option as it is now."""

    def __init__(self, option_strings: list[str], dest: str, *, old: tuple[str, ...], **kwargs: Any) -> None:
        super().__init__(option_strings, dest, **kwargs)
        self.old = old

    def hide_old(self) -> None:
        """Drop the old spellings from what help and messages show (the parser keeps them for parsing)."""
        self.option_strings = [s for s in self.option_strings if s not in self.old]

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        if option_string in self.old:
            deprecated(parser, option_string or "", self.option_strings[0])
        setattr(namespace, self.dest, values)


def deprecated(parser: argparse.ArgumentParser, old: str, new: str) -> None:
    """The one line saying an old spelling still works but will not for long."""
    import sys

    print(f"{parser.prog}: note: {old} is deprecated; use {new}", file=sys.stderr)


def add_renamed(p: Any, *names: str, old: tuple[str, ...], **kwargs: Any) -> None:
    """``p.add_argument(*names, **kwargs)`` that also reads the ``old`` spellings, with a note (:class:`Renamed`)."""
    action = p.add_argument(*names, *old, action=Renamed, old=old, **kwargs)
    action.hide_old()


class JsonFlag(argparse.Action):
    """``--json``: print the JSON on stdout. Where ``--json PATH`` used to write the file (gate, traces check), that
    spelling still works for one release, as ``--json-out PATH`` with a note.

    It takes an optional value, and this is unambiguous only because every command given it has no positional
    argument: a word after ``--json`` can only be its value (the old path), never a word of the command."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs="?", const=True, default=False, metavar="PATH", **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        if values is True:
            setattr(namespace, self.dest, True)
            return
        deprecated(parser, "--json PATH", "--json-out PATH")
        namespace.json_out = values


def add_json(p: Any, help: str, *, out_help: str | None = None) -> None:
    """``--json``, a flag: print the command's JSON on stdout; with ``out_help``, also ``--json-out PATH`` (write it
    to a file), and ``--json PATH`` still read as ``--json-out PATH`` (:class:`JsonFlag`)."""
    if out_help is None:
        p.add_argument("--json", action="store_true", help=help)
        return
    p.add_argument("--json", action=JsonFlag, help=help + " (with a PATH: the old spelling of --json-out PATH, "
                                                         "read for one release)")
    p.add_argument("--json-out", metavar="PATH", help=out_help)


class Misnamed(argparse.Action):
    """An option this command does not take but a user may try (another command's name for the thing, which
    prefix matching once read as a different option): refused at once with the option the command takes."""

    def __init__(self, option_strings: list[str], dest: str, *, say: str, **kwargs: Any) -> None:
        super().__init__(option_strings, argparse.SUPPRESS, nargs="?", default=argparse.SUPPRESS,
                         help=argparse.SUPPRESS, **kwargs)
        self.say = say

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        parser.error(f"{option_string} is not an option of {parser.prog}: {self.say}")


def add_formats(p: Any, *, gold: bool = True, run: bool = True) -> None:
    """``--gold-format`` and ``--run-format``: override format detection."""
    from rankgate.io.formats import GOLD_FORMATS, RUN_FORMATS

    if gold:
        p.add_argument("--gold-format", choices=GOLD_FORMATS, metavar="FORMAT", help=FORMAT_HELP)
    if run:
        p.add_argument("--run-format", choices=RUN_FORMATS, metavar="FORMAT", help=FORMAT_HELP)


#: ``--field``: the one way every command says where a field lives (:mod:`rankgate._util.fields`).
FIELD_HELP = ("where a field lives, NAME=PATH: keys joined by dots, [*] for every item of a list (e.g. {example}); "
              "repeatable, or comma-separated; names: {names}")
#: The names evaluate, compare, gate and report map (:data:`rankgate.io.mapped.FIELD_NAMES`, not imported here:
#: the parser is built on every start).
RECORD_FIELD_NAMES = ("query_id, query (gold and run); id, text, score, rank (a run's items); relevant, grade (a gold "
                      "set's items)")


def add_field(p: Any, names: str = RECORD_FIELD_NAMES, example: str = "id=metadata.doc_id, id=hits[*].doc.id") -> None:
    """``--field NAME=PATH`` (repeatable): where a field lives in the records a command reads."""
    p.add_argument("--field", action="append", default=None, metavar="NAME=PATH",
                   help=FIELD_HELP.format(example=example, names=names))


def record_fields(args: argparse.Namespace, command: str) -> dict[str, str] | None:
    """``--field`` of a command reading gold sets and runs, as the mapping :class:`~rankgate.scoring.options.Scoring`
    holds (a UsageError naming the first flaw; None when not given)."""
    given = getattr(args, "field", None)
    if not given:
        return None
    from rankgate.io.mapped import check_fields

    return check_fields(given, command=command)


def add_trace_field(p: Any) -> None:
    """``--field`` of the trace actions: the names a field map takes (docs/traces.md, "Field map")."""
    add_field(p, names="request fields (tenant, conversation_id, …, or request.NAME), document fields (id, score, doc_id, "
                       "version, status, source, deprecated, text, or document.NAME), documents, query",
              example="id=metadata.chunk_id, tenant=metadata.tenant, id=output.documents[*].metadata.chunk_id")


def trace_fields(args: argparse.Namespace) -> dict[str, str] | None:
    """``--field`` as the request's mapping (a UsageError naming the first flaw; None when not given)."""
    if not args.field:
        return None
    from rankgate._util.fields import parse_fields
    from rankgate.traces.fieldmap import FIELD_NAMES, field_map_of

    field_map_of(args.field)
    return parse_fields(args.field, FIELD_NAMES, command="traces")


def add_columns(p: Any) -> None:
    p.add_argument("--columns", metavar="MAP", help=COLUMNS_HELP)


def add_ties(p: Any, help: str = TIES_HELP) -> None:
    """``--ties id|input``: every command that ranks a run takes it."""
    p.add_argument("--ties", choices=("id", "input"), default=None, help=help)


def add_input_options(p: argparse.ArgumentParser, *, run: bool = True, gold_required: bool = True) -> None:
    """Options shared by every command that reads a gold set (and runs) and scores them."""
    add_gold(p, required=gold_required)
    add_formats(p, run=run)
    add_columns(p)
    add_field(p)
    add_ties(p)
    p.add_argument("--metrics", "-m", default=DEFAULT_METRICS, metavar="SPECS",
                   help=f"comma-separated metric specs (default: {DEFAULT_METRICS}); see 'rankgate metrics'")
    p.add_argument("--k", type=int, default=None, metavar="K",
                   help="cutoff for metrics written without @k that need one, unless the gold query sets its own k (default 5)")
    p.add_argument("--level", choices=("chunk", "doc"), default="chunk",
                   help="evaluate chunk ids as given, or map them to parent documents (a document counts once, at its best rank)")
    p.add_argument("--doc-sep", default="#", metavar="SEP", help="separator between document id and chunk part (default '#')")
    p.add_argument("--doc-map", metavar="PATH", help="chunk→document mapping file (TSV 'chunk_id<TAB>doc_id' or JSON object); overrides --doc-sep")
    p.add_argument("--dedupe", choices=("error", "first"), default="error",
                   help="a repeated id in one query's ranking: error (default), or keep its best rank and report the count")
    p.add_argument("--trec", action="store_true", help="trec_eval v10 semantics: queries in both files; all-non-relevant queries score 0")
    p.add_argument("-c", "--complete", action="store_true", help="with --trec: average over all gold queries (trec_eval -c)")


#: ``--quiet``: the one meaning it has in every command that takes it.
QUIET_HELP = ("show no progress; progress (a line per stage, a bar for judge calls) is shown only when stderr is "
              "a terminal, and never in an output file or on stdout")


def add_quiet(p: Any) -> None:
    """``--quiet``/``-q``: no progress on the terminal (:mod:`rankgate._util.progress`); the long commands take it."""
    p.add_argument("--quiet", "-q", action="store_true", help=QUIET_HELP)


def add_stats(p: Any, *, seed_help: str | None = None) -> None:
    """``--seed``, ``--resamples``, ``--confidence`` of the bootstrap intervals (checked by :func:`check_stats_args`)."""
    add_param(p, SEED, help=seed_help)
    add_param(p, RESAMPLES)
    add_param(p, CONFIDENCE)


def check_stats_args(args: argparse.Namespace) -> None:
    """The statistics options within the bounds :class:`~rankgate.stats.options.Statistics` holds them to, or a
    UsageError naming the field (said as the option when the command line reports it)."""
    from rankgate.stats.options import Statistics

    Statistics(seed=args.seed, resamples=args.resamples, confidence=args.confidence)


def add_when(p: Any, *, help: str = "the calibration's date, UTC ISO 8601 (2025-05-01 or 2025-05-01T09:30:00Z); "
                                    "default: the newest human label's own time when the labels carry one, else now") -> None:
    """``--when``: the date a calibration written by the command bears (its age is measured from it)."""
    p.add_argument("--when", metavar="TIME", help=help)


def add_enforce_as_of(p: Any) -> None:
    p.add_argument("--enforce-as-of", action="store_true",
                   help="freshness what-if: drop retrieved items whose doc_version is newer than the query's as_of "
                        "(gold field), score what is left, and show the change from the run as logged")


def add_ranking(p: Any) -> None:
    """``--ranking`` of evaluate and compare: which ranking of each run is scored."""
    p.add_argument("--ranking", choices=("final", "raw", "both"), default="final",
                   help="the ranking scored: final (topk, the default), raw (the raw candidates before reranking, "
                        "raw_topk; rows named like 'recall@50 (raw)') or both (the raw rows after the final ones)")


def add_component_options(p: Any) -> None:
    p.add_argument("--routing", action="store_true",
                   help="routing: coverage of each query's expected_source (gold) by the items' source (run), the "
                        "misroute matrix and per-source recall@k (k: --k, default 5)")
    p.add_argument("--entity-linking", action="store_true",
                   help="entity linking: precision, recall and F1 of the run's linked_entities against the gold "
                        "entities, per query, beside chunk recall@k")


def add_judge(p: argparse.ArgumentParser, *, seed: str = "--seed", retries: bool = True, statements: bool = False,
              repeats: str | None = None, price: str = "run") -> None:
    """The judge options (see docs/judges.md), as one "judge" group.

    ``seed`` is the option naming the seed sent with every call (``--judge-seed`` where ``--seed``
    is the bootstrap's); ``retries``/``statements`` add ``--retries``/``--max-statements``;
    ``repeats`` is the help of ``--repeats`` (None: no such option); ``price`` is ``"run"`` when a
    run reports its cost from the server's usage, ``"dry-run"`` when only ``--dry-run`` estimates it.
    """
    from rankgate.judges import DEFAULT_MAX_STATEMENTS, MAX_REPEATS, MAX_RETRIES, MAX_STATEMENTS, MAX_WORKERS

    g = p.add_argument_group("judge")
    g.add_argument("--judge", default=None, metavar="BACKEND",
                   help="lexical (offline token-overlap baseline; the default), openai (any OpenAI-compatible "
                        "server) or package.module:Class (env RANKGATE_JUDGE)")
    g.add_argument("--judge-url", metavar="URL", help="base URL of the OpenAI-compatible server, e.g. "
                                                      "http://localhost:8000/v1 (env RANKGATE_JUDGE_URL)")
    g.add_argument("--judge-model", metavar="NAME", help="model name the server serves (env RANKGATE_JUDGE_MODEL)")
    g.add_argument("--judge-key-env", metavar="VAR",
                   help="environment variable holding the API key; none for a local server (env RANKGATE_JUDGE_KEY_ENV)")
    g.add_argument("--workers", type=int, default=8, metavar="N",
                   help=f"judge calls in flight at once (default 8, at most {MAX_WORKERS})")
    add_param(g, TIMEOUT, metavar="SECONDS")  # checked by the flow's JudgeSpec
    g.add_argument("--max-reply-bytes", type=int, default=None, metavar="N",
                   help="largest reply body read, after decompression (default 1000000); a larger one is a judge_error")
    if retries:
        g.add_argument("--retries", type=int, default=4, metavar="N",
                       help=f"retries of a failed call (default 4, at most {MAX_RETRIES})")
    add_param(g, SEED, flag=seed, help="seed sent with every judge call; sample i uses seed+i (default 0)")
    g.add_argument("--cache", metavar="DIR", help="judge cache folder (default $RANKGATE_CACHE_DIR or $XDG_CACHE_HOME/rankgate)")
    g.add_argument("--no-cache", action="store_true", help="neither read nor write the judge cache")
    g.add_argument("--refresh", action="store_true", help="call the judge again and overwrite cached labels")
    if repeats is not None:
        g.add_argument("--repeats", type=int, default=1, metavar="N",
                       help=f"judge each item N times (seeds seed..seed+N-1) {repeats} (at most {MAX_REPEATS})")
    if statements:
        g.add_argument("--max-statements", type=int, default=DEFAULT_MAX_STATEMENTS, metavar="N",
                       help=f"statements per answer the judge may find (default {DEFAULT_MAX_STATEMENTS}, at most "
                            f"{MAX_STATEMENTS:,}); an answer with more is a judge_error and none of its statements is "
                            "checked")
    g.add_argument("--max-calls", type=int, default=None, metavar="N",
                   help="call budget of the run (default: none): once N calls were sent, every item left is a "
                        "judge_error 'call budget reached'; cache hits are free")
    g.add_argument("--dry-run", action="store_true",
                   help="print the calls, cache hits, approximate tokens and cost, and call nothing")
    if price == "run":
        g.add_argument("--price-in", type=float, metavar="PRICE",
                       help="price per 1M input tokens: --dry-run estimates the cost, a run reports it from the server's usage")
        g.add_argument("--price-out", type=float, metavar="PRICE", help="price per 1M output tokens (see --price-in)")
    else:
        g.add_argument("--price-in", type=float, metavar="PRICE", help="with --dry-run: price per 1M input tokens")
        g.add_argument("--price-out", type=float, metavar="PRICE", help="with --dry-run: price per 1M output tokens")


def check_judge_counts(args: argparse.Namespace) -> None:
    """Every count option of the judge within its bound, or a UsageError naming the option (exit 2)."""
    from rankgate.judges import MAX_REPEATS, MAX_RETRIES, MAX_STATEMENTS, MAX_WORKERS, check_count

    for option, low, high, why in (("repeats", 1, MAX_REPEATS, " (3 to 5 samples measure a judge's variance)"),
                                   ("workers", 1, MAX_WORKERS, ""), ("retries", 0, MAX_RETRIES, ""),
                                   ("max_statements", 1, MAX_STATEMENTS, ""), ("max_calls", 0, None, "")):
        value = getattr(args, option, None)
        if value is not None:
            check_count(value, "--" + option.replace("_", "-"), low, high, why)


def parse_key_values(pairs: list[str]) -> dict[str, Any]:
    """``-O KEY=VALUE`` options of a retriever or reranker: VALUE read as JSON when it parses, ``none`` as null."""
    import json

    from rankgate.errors import UsageError

    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--option must look like KEY=VALUE; got {pair!r}")
        value: Any
        if raw.lower() == "none":
            value = None
        else:
            try:
                value = json.loads(raw)
            except ValueError:
                value = raw
        options[key.strip()] = value
    return options
