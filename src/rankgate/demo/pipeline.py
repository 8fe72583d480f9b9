"""The demo pipeline: the whole rankgate loop on the built-in corpus, as one function.

:func:`run_demo` copies the built-in data into an output folder, indexes the corpus with the two
demo retriever configurations (:func:`rankgate.retrieval.demo_configs`: the baseline
``bm25-multilingual`` and the "pull request" ``bm25-english``), runs every gold query through both,
evaluates both runs, compares them query by query, checks the demo's ship criteria
(``data/ship-criteria.yaml``) and writes every output. It prints nothing: it returns a
:class:`DemoResult` with the numbers and the list of files written; :mod:`rankgate.demo.story`
turns that into the terminal text of ``rankgate demo``.

Output folder (paths relative to it)::

    data/corpus.jsonl, data/gold.jsonl, data/ship-criteria.yaml   copies of the built-in data
    runs/baseline.jsonl, runs/candidate.jsonl                     top-100 hits per gold query
    baseline/metrics.csv, baseline/summary.json                   as `rankgate evaluate --by lang --out`
    candidate/metrics.csv, candidate/summary.json
    compare.md                                                    as `rankgate compare --by lang --markdown`
    pr-comment.md, gate.json                                      as `rankgate gate --comment --json-out`
    data/answers.jsonl, data/answer-labels.jsonl                  answers to 29 queries, and human verdicts of them
    answers/answers.csv, answers/summary.json                     as `rankgate answers --corpus --human --out`
    data/traces.jsonl                                             two weeks of production requests for the gold queries
    validity/summary.json, validity/validity.md                   as `rankgate validity --run runs/baseline.jsonl --out`
    report.html                                                   as `rankgate report --baseline --by lang --config --answers`

Layer two (the answers) is judged by the offline ``lexical`` judge, unless the ``RANKGATE_JUDGE*``
variables name another (``RANKGATE_JUDGE=openai``, ``RANKGATE_JUDGE_URL``, ``RANKGATE_JUDGE_MODEL``,
``RANKGATE_JUDGE_KEY_ENV``): then the same demo asks that judge (and uses the judge cache).

Determinism: the retrievers are exhaustive and round their scores, run files carry no latency, every
statistic is seeded with ``seed``, and the files name their inputs by paths relative to the output
folder. The same ``seed`` therefore gives byte-identical files, wherever the folder is.

Safety: the folder is created if needed; an existing folder is written into only when it is empty or
was written by an earlier demo (it then holds the marker file ``.rankgate-demo``). Everything is
built in a private temporary folder and then written into the output folder as one unit, so an
error or an interruption leaves the earlier demo's files as they were.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rankgate.errors import F, UsageError

if TYPE_CHECKING:  # pragma: no cover
    from rankgate.stats.paired import Comparison
    from rankgate.io import Gold
    from rankgate.flows.evaluate import Evaluation
    from rankgate.gating.decide import GateConfig, GateOutcome
    from rankgate.model.results import EvaluationResult
    from rankgate.retrieval import Chunk, RetrieverConfig
    from rankgate.stats.segments import SegmentSummary

__all__ = [
    "DEMO_METRICS",
    "DEPTH",
    "MARKER",
    "SEGMENT_FIELD",
    "DemoResult",
    "ForbiddenHits",
    "Output",
    "SystemRun",
    "run_demo",
]

#: Metrics evaluated for both runs (the gate config's metrics are added if it names others).
DEMO_METRICS = ("recall@5", "ndcg@10", "hit@5", "mrr", "precision@5", "forbidden@5")
#: Hits kept per query, as ``rankgate retrieve`` keeps by default.
DEPTH = 100
#: The gold tag the demo breaks results down by: the reader's language.
SEGMENT_FIELD = "lang"
#: Marks a folder written by the demo, so a second run may overwrite it.
MARKER = ".rankgate-demo"
#: How the comparison, the PR comment and the gate name the two runs.
LABELS = {"baseline": "bm25-multilingual (main)", "candidate": "bm25-english (pull request)"}
ROLES = ("baseline", "candidate")

_DATA = ("corpus.jsonl", "gold.jsonl", "ship-criteria.yaml", "answers.jsonl", "answer-labels.jsonl", "traces.jsonl")
_MARKER_TEXT = (
    "This folder was written by `rankgate demo`. Running the demo again with the same --out\n"
    "overwrites the files it wrote here (see docs/demo.md for the list).\n"
)


@dataclass(frozen=True)
class Output:
    """One file the demo wrote: ``key`` (e.g. ``"run:baseline"``), its path, and what is in it."""

    key: str
    path: Path
    relative: str  # the path inside the demo folder, with ``/`` separators
    what: str


@dataclass(frozen=True)
class ForbiddenHits:
    """Why ``forbidden@5`` is what it is: the queries shown a chunk listed in ``must_not_retrieve``.

    ``stale``: the forbidden chunk is a superseded or deprecated page (an old price list, a retired
    API); ``other_tenant``: it is another customer workspace's internal document. A query can be in
    both. ``checked`` counts the queries that list any forbidden chunk.
    """

    checked: int
    queries: tuple[str, ...]
    stale: tuple[str, ...]
    other_tenant: tuple[str, ...]


@dataclass(frozen=True)
class SystemRun:
    """One retriever configuration: what it is, its run file, and how it scored."""

    role: str  # baseline | candidate
    config: RetrieverConfig
    run_path: Path
    result: EvaluationResult
    cis: Mapping[str, tuple[float, float]]
    segments: SegmentSummary
    forbidden: ForbiddenHits

    @property
    def label(self) -> str:
        return LABELS[self.role]

    def mean(self, metric: str, segment: str | None = None) -> float:
        """Mean of ``metric`` over all queries, or over one language (``segment="de"``)."""
        if segment is None:
            return self.result.summary(metric).mean
        row = self.segments.get(_segment_key(), segment, self.result.resolve_metric(metric))
        return math.nan if row is None else row.mean

    def ci(self, metric: str, segment: str | None = None) -> tuple[float, float]:
        """95% bootstrap interval of the mean (over all queries, or one language)."""
        name = self.result.resolve_metric(metric)
        if segment is None:
            return self.cis[name]
        row = self.segments.get(_segment_key(), segment, name)
        return (math.nan, math.nan) if row is None else (row.ci_low, row.ci_high)


@dataclass(frozen=True)
class DemoResult:
    """Everything :func:`run_demo` computed and wrote."""

    out_dir: Path
    seed: int
    corpus: Mapping[str, Any]  # chunks, documents, languages {lang: chunks}, tenants {tenant: chunks}
    gold: Mapping[str, Any]  # queries, answerable, no_answer, judgements, languages, with_forbidden
    baseline: SystemRun
    candidate: SystemRun
    changes: Mapping[str, tuple[Any, Any]]  # retriever option -> (baseline value, candidate value)
    comparison: Comparison
    gate: GateOutcome
    gate_overall_only: GateOutcome  # the same criteria without their `segments`
    config: GateConfig
    outputs: tuple[Output, ...]
    queries: Mapping[str, str] = field(default_factory=dict)  # query id -> query text
    notes: tuple[str, ...] = ()  # what the demo could not do, and why
    answers: Mapping[str, Any] | None = None  # layer two: the "answers" part of answers/summary.json
    validity: Any = None  # offline <-> online: rankgate.traces.validity.ValidityAnalysis of the baseline and the traces

    @property
    def runs(self) -> tuple[SystemRun, SystemRun]:
        return (self.baseline, self.candidate)

    @property
    def languages(self) -> tuple[str, ...]:
        """The gold set's languages, most queries first."""
        langs = self.gold["languages"]
        return tuple(sorted(langs, key=lambda k: (-langs[k], k)))

    def output(self, key: str) -> Path:
        for o in self.outputs:
            if o.key == key:
                return o.path
        raise KeyError(key)

    def change(self, metric: str, segment: str | None = None):
        """The comparison row (:class:`rankgate.stats.paired.DeltaRow`) of ``metric``, overall or per language."""
        field_key = None if segment is None else _segment_key()
        row = self.comparison.row(self.baseline.result.resolve_metric(metric), field_key, segment)
        if row is None:
            raise KeyError((metric, segment))
        return row

    def failed_checks(self):
        """Every failing check of a blocking (error-severity) gate."""
        return tuple(c for r in self.gate.results if r.status == "fail" for c in r.failures)

    def key_numbers(self) -> dict[str, Any]:
        """The headline numbers as plain data: means and intervals, changes, the gate's verdict."""
        out: dict[str, Any] = {"seed": self.seed, "metrics": list(self.baseline.result.metric_names)}
        for run in self.runs:
            per: dict[str, Any] = {}
            for m in run.result.metric_names:
                low, high = run.ci(m)
                per[m] = {"mean": run.mean(m), "ci": [low, high], "n": run.result.summary(m).n}
                per[m]["by_lang"] = {lang: run.mean(m, lang) for lang in self.languages}
            out[run.role] = {"name": run.config.name, "metrics": per,
                             "forbidden": {"queries": len(run.forbidden.queries), "checked": run.forbidden.checked,
                                           "stale": len(run.forbidden.stale),
                                           "other_tenant": len(run.forbidden.other_tenant)}}
        out["changes"] = {
            (m if r.field is None else f"{m} lang={r.segment}"): {
                "delta": r.delta, "ci": [r.ci_low, r.ci_high], "p_holm": r.p_holm, "n": r.n,
            }
            for r in self.comparison.rows for m in [r.metric]
        }
        out["gate"] = {
            "passed": self.gate.passed,
            "exit_code": self.gate.exit_code,
            "status": {r.gate.name: r.status for r in self.gate.results},
            "failed": [f"{c.gate}: {c.kind} on {c.metric}" + ("" if c.field is None else f" for lang = {c.segment}")
                       for c in self.failed_checks()],
            "passed_without_segments": self.gate_overall_only.passed,
        }
        return out


def _segment_key() -> str:
    return f"tags.{SEGMENT_FIELD}"


# -- the pipeline --------------------------------------------------------------------------------
def run_demo(out_dir: str | os.PathLike[str], *, seed: int = 0) -> DemoResult:
    """Run the whole loop on the built-in data and write every output into ``out_dir``.

    Args:
        out_dir: the folder to write; created if missing. An existing folder must be empty or hold
            an earlier demo's output (raises :class:`~rankgate.errors.UsageError` otherwise).
        seed: seed of every bootstrap interval and randomisation test (the retrievers are
            deterministic and need none). The same seed gives byte-identical files.
    """
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise UsageError(f"seed must be a non-negative integer; got {seed!r}")
    import shutil
    import tempfile

    from rankgate._util.atomic import write_files

    out = _check_out(Path(out_dir))
    # Everything is built in a private folder first, then written into ``out`` as one unit: the
    # folder holds the earlier demo's files or all of the new ones, never a mix (see atomic.py).
    staging = Path(tempfile.mkdtemp(prefix="rankgate-demo-"))
    try:
        staged = _run(staging, seed)
        files: dict[Path, bytes | None] = {out / MARKER: _MARKER_TEXT.encode("utf-8")}
        for o in staged.outputs:
            files[out / o.relative] = o.path.read_bytes()
        if not any(o.relative == "report.html" for o in staged.outputs):
            files[out / "report.html"] = None  # never leave an earlier demo's report beside newer numbers
        write_files(files)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return _moved(staged, out)


def _moved(result: DemoResult, out: Path) -> DemoResult:
    """``result`` with every path pointing into ``out`` instead of the private folder it was built in."""
    runs = {r.role: replace(r, run_path=out / "runs" / r.run_path.name) for r in result.runs}
    return replace(
        result,
        out_dir=out,
        outputs=tuple(replace(o, path=out / o.relative) for o in result.outputs),
        baseline=runs["baseline"],
        candidate=runs["candidate"],
        config=replace(result.config, path=str(out / "data" / "ship-criteria.yaml")),
    )


def _run(out: Path, seed: int) -> DemoResult:
    """The pipeline, writing into ``out`` (a fresh private folder)."""
    outputs: list[Output] = []

    def wrote(key: str, rel: str, what: str) -> Path:
        path = out / rel
        outputs.append(Output(key, path, rel, what))
        return path

    # 1. The built-in data, copied so every file the demo mentions can be opened and reused.
    from rankgate._util.atomic import write_bytes

    what = {
        "corpus.jsonl": "the built-in corpus (copy)",
        "gold.jsonl": "the built-in gold set (copy)",
        "ship-criteria.yaml": "the ship criteria the gate checked",
        "answers.jsonl": "answers to 29 queries with their packed contexts (chunk ids)",
        "answer-labels.jsonl": "human verdicts of those answers (faithful, correct)",
        "traces.jsonl": "production traces of the baseline: the gold queries as users asked them, with feedback",
    }
    for name in _DATA:
        write_bytes(str(wrote(f"data:{name}", f"data/{name}", what[name])), _packaged(name))

    from rankgate.io import load_gold
    from rankgate.gating.decide import load_config
    from rankgate.retrieval import demo_configs, load_corpus, load_gold_queries

    chunks = load_corpus(out / "data/corpus.jsonl")
    queries = load_gold_queries(out / "data/gold.jsonl")
    gold = load_gold(str(out / "data/gold.jsonl"))
    config = load_config(str(out / "data/ship-criteria.yaml"))
    config = replace(config, seed=seed)
    metrics = tuple(dict.fromkeys((*DEMO_METRICS, *config.metrics)))
    configs = demo_configs()

    # 2. Index and retrieve with both configurations.
    run_paths: dict[str, Path] = {}
    for role in ROLES:
        path = wrote(f"run:{role}", f"runs/{role}.jsonl",
                     f"{configs[role].name}: top {DEPTH} chunks per gold query")
        _retrieve(configs[role], chunks, queries, path)
        run_paths[role] = path

    # 3. Evaluate both, with intervals and per-language segments; write metrics.csv and summary.json.
    runs: dict[str, SystemRun] = {}
    for role in ROLES:
        evaluation = _evaluate(gold, out, run_paths[role], metrics, seed)
        _write_evaluation(evaluation, wrote(f"metrics:{role}", f"{role}/metrics.csv",
                                            "every metric for every query, with its language and tags"),
                          wrote(f"summary:{role}", f"{role}/summary.json",
                                "means, 95% CIs, per-language means, definitions, input hashes"))
        result = evaluation.result
        assert evaluation.segments is not None  # (asked for: by language)
        runs[role] = SystemRun(role, configs[role], run_paths[role], result, evaluation.cis or {}, evaluation.segments,
                               _forbidden_hits(gold, result, run_paths[role], chunks))

    # 4. The gate, as a pull request's CI job would run it; and the same criteria without segments.
    from rankgate.stats.paired import compare
    from rankgate.gating.decide import decide
    from rankgate.render.comment import comment_markdown
    from rankgate.render.compare import comparison_markdown
    from rankgate.render.artifacts import comparison_artifacts_markdown

    blabel, clabel = LABELS["baseline"], LABELS["candidate"]
    base_result, cand_result = runs["baseline"].result, runs["candidate"].result
    texts = {q: t for q, t in zip(gold.query_ids, gold.field("query")) if isinstance(t, str)}  # as `gate` shows them
    # the candidate's intervals are the evaluation's when drawn with the criteria's statistics
    from rankgate.flows.evaluate import Statistics

    st = Statistics(seed=seed)  # as _evaluate drew them
    same = (config.seed, config.resamples, config.confidence) == (st.seed, st.resamples, st.confidence)
    cis = runs["candidate"].cis if same else None
    outcome = decide(config, cand_result, base_result, baseline_label=blabel, candidate_label=clabel, query_text=texts,
                     intervals=cis)
    overall_only = replace(config, gates=tuple(replace(g, segments=()) for g in config.gates))
    outcome_overall = decide(overall_only, cand_result, base_result, baseline_label=blabel, candidate_label=clabel,
                             query_text=texts, intervals=cis)

    # 5. Compare query by query, listing the queries that moved most on the metric the gate failed.
    comparison = compare(base_result, cand_result, by=[SEGMENT_FIELD], seed=seed, primary=_primary(outcome),
                         baseline_label=blabel, candidate_label=clabel)
    write_bytes(str(wrote("compare", "compare.md",
                          "changes per metric and language (paired CIs, p-values), top queries")),
                (comparison_markdown(comparison)
                 + comparison_artifacts_markdown(cand_result, base_result, clabel, blabel)).encode("utf-8"))
    write_bytes(str(wrote("comment", "pr-comment.md", "the pull-request comment a CI job would post")),
                comment_markdown(outcome).encode("utf-8"))
    write_bytes(str(wrote("gate", "gate.json",
                          "every check of every gate; reusable as a --baseline summary")),
                outcome.to_json().encode("utf-8"))

    # 6. Layer two: the answers, judged, joined per query with the retrieval verdict (the diagnosis grid).
    layer = _answers(out, seed, wrote)

    # 6b. Offline <-> online: does the baseline's metric (the system in production) predict users' feedback?
    validity = _validity(out, wrote)

    # 7. The HTML report, as `rankgate report` writes it.
    notes: list[str] = []
    missing = _write_report(out / "report.html", out, config, answers=layer)
    if missing is None:
        wrote("report", "report.html", "HTML report, offline: gate, curves, languages, misses, diagnosis")
    else:
        notes.append(f"report.html was not written: the HTML report needs {missing}, which is not installed "
                     f"(pip install {missing}).")

    base = runs["baseline"]
    changes = {k: (base.config.options.get(k), runs["candidate"].config.options.get(k))
               for k in sorted(set(base.config.options) | set(runs["candidate"].config.options))
               if base.config.options.get(k) != runs["candidate"].config.options.get(k)}
    return DemoResult(
        out_dir=out,
        seed=seed,
        corpus=_corpus_facts(chunks),
        gold=_gold_facts(gold, runs["baseline"].result),
        baseline=runs["baseline"],
        candidate=runs["candidate"],
        changes=changes,
        comparison=comparison,
        gate=outcome,
        gate_overall_only=outcome_overall,
        config=config,
        outputs=tuple(outputs),
        queries=dict(zip(gold.query_ids, gold.field("query"))),
        notes=tuple(notes),
        answers=layer,
        validity=validity,
    )


def _packaged(name: str) -> bytes:
    from importlib.resources import files

    return files("rankgate.demo").joinpath("data").joinpath(name).read_bytes()


def _check_out(out: Path) -> Path:
    from rankgate._util.atomic import check_folder

    if out.exists() and not out.is_dir():
        raise UsageError(f"{F.out_dir} {out} exists and is not a folder; choose a folder for the demo's output")
    if out.is_dir() and any(out.iterdir()) and not (out / MARKER).is_file():
        raise UsageError(
            f"{out} is not empty and was not written by rankgate demo; "
            f"choose a new or empty folder with {F.out_dir}, so none of your files is overwritten"
        )
    check_folder(out, option="--out")
    return out


def _retrieve(config: RetrieverConfig, chunks: Sequence[Chunk], queries, path: Path) -> None:
    from rankgate.retrieval import retrieve, write_run

    records = retrieve(chunks, queries, config.build(), k=DEPTH, latency=False)
    write_run(_with_artifacts(_with_cost(records, chunks, queries), config, chunks), path)


#: How the demo corpus was chunked (docs/formats.md, "Recorded artifacts"): it was written as chunks, one
#: paragraph each, numbered within their document (``<doc_id>#c<n>``); no splitter ran over it.
CHUNKER_METHOD = "paragraphs, written as chunks (no splitter run)"


def _with_artifacts(records: Sequence[dict[str, Any]], config: RetrieverConfig,
                    chunks: Sequence[Chunk]) -> list[dict[str, Any]]:
    """Each run record with what is true of the run's making, for the report's "Run artifacts" block:
    ``chunker`` (how the corpus was cut, and into how many chunks of how many documents) and ``retriever``
    (the preset's settings; its name is the record's ``system``). The demo has no embedding model and no
    reranker, so it records none."""
    corpus = _corpus_facts(chunks)
    chunker = {"method": CHUNKER_METHOD, "documents": corpus["documents"], "chunks": corpus["chunks"]}
    retriever = {"kind": config.retriever, **config.options}  # (not "retriever": a key once per line reads fast)
    return [{**record, "chunker": chunker, "retriever": retriever} for record in records]


#: What the demo's runs log as each query's cost (docs/formats.md, "cost"): the tokens of the context a
#: generator would be given (the question and the top PACKED chunks, at characters / 4, the judge's own
#: estimate) and that prompt's price at USD_PER_1M_INPUT. Computed from the texts, so every run writes the
#: same bytes (no timing is logged).
PACKED = 5
USD_PER_1M_INPUT = 0.40


def _with_cost(records: Sequence[dict[str, Any]], chunks: Sequence[Chunk], queries: Any) -> list[dict[str, Any]]:
    """Each run record with its ``cost`` object: ``tokens_in`` of the packed context and its ``usd``."""
    tokens = {c.chunk_id: -(-len(c.text) // 4) for c in chunks}
    question = {q.query_id: -(-len(q.text) // 4) for q in queries}
    out = []
    for record in records:
        packed = [item["chunk_id"] if isinstance(item, dict) else item for item in record["topk"][:PACKED]]
        used = question.get(record["query_id"], 0) + sum(tokens.get(i, 0) for i in packed)
        out.append({**record, "cost": {"tokens_in": used, "usd": round(used * USD_PER_1M_INPUT / 1e6, 8)}})
    return out


def _evaluate(gold: Gold, out: Path, run_path: Path, metrics: Sequence[str], seed: int) -> Evaluation:
    """The run file scored as ``rankgate evaluate --by lang`` scores it (intervals and per-language segments
    at the command's defaults), its inputs named relative to the demo folder."""
    from rankgate.io.source import sha256_file
    from rankgate.flows.evaluate import EvaluateRequest, Scoring, Statistics, run_evaluation

    evaluation = run_evaluation(EvaluateRequest(gold, str(run_path), Scoring(metrics=list(metrics)), Statistics(seed=seed),
                                                by=(SEGMENT_FIELD,)))
    result = evaluation.result
    inputs = {
        "gold": {"path": "data/gold.jsonl", "sha256": sha256_file(str(out / "data/gold.jsonl"))},
        "run": {"path": f"runs/{run_path.name}", "sha256": dict(result.inputs["run"])["sha256"]},
    }
    return replace(evaluation, result=replace(result, inputs=inputs))


def _write_evaluation(evaluation: Evaluation, csv_path: Path, summary_path: Path) -> None:
    """metrics.csv and summary.json exactly as ``rankgate evaluate --by lang --out DIR`` writes them."""
    from rankgate._util.atomic import write_text
    from rankgate.render.exports import metrics_csv, summary_dict, summary_json
    from rankgate.render.sections import summary_parts

    write_text(str(csv_path), metrics_csv(evaluation.result))
    write_text(str(summary_path), summary_json(summary_dict(evaluation.result, cis=evaluation.cis,
                                                            extra=summary_parts(evaluation))))


def _answers(out: Path, seed: int, wrote: Any) -> dict[str, Any]:
    """answers/answers.csv and answers/summary.json as ``rankgate answers --corpus --human --out`` writes them."""
    import sys

    from rankgate._util.atomic import write_text
    from rankgate.flows.answers import JudgeSpec
    from rankgate.flows.answers import AnswersRequest, run_answers
    from rankgate.render.exports import answers_csv, answers_summary, summary_json

    data = out / "data"
    # The offline judge needs no cache; a real one (RANKGATE_JUDGE*) uses the user's cache across runs.
    judge = JudgeSpec(use_cache=JudgeSpec().settings()["backend"] != "lexical", progress=sys.stderr.isatty())
    scored = run_answers(AnswersRequest(
        answers=str(data / "answers.jsonl"), gold=str(data / "gold.jsonl"), corpus=str(data / "corpus.jsonl"),
        human=str(data / "answer-labels.jsonl"), seed=seed, judge=judge,
        shown={str(data / name): f"data/{name}" for name in _DATA}))
    summary = answers_summary(scored)
    write_text(str(wrote("answers:csv", "answers/answers.csv",
                         "layer two per query: grid cell, retrieval verdict, every answer metric, judge errors")),
               answers_csv(scored.result, scored.rows))
    write_text(str(wrote("answers:summary", "answers/summary.json",
                         "answer metrics with CIs and coverage, the diagnosis grid, the judge, judge vs human")),
               summary_json(summary))
    return summary["answers"]


def _validity(out: Path, wrote: Any) -> Any:
    """validity/summary.json and validity/validity.md as ``rankgate validity --gold data/gold.jsonl --run
    runs/baseline.jsonl --traces data/traces.jsonl --out validity`` writes them (inputs named relative to the
    demo folder, whose hashes are the files')."""
    from rankgate._util.atomic import write_text
    from rankgate.flows.validity import ValidityRequest, run_validity
    from rankgate.render.validity import validity_json, validity_markdown

    done = run_validity(ValidityRequest(str(out / "data/gold.jsonl"), str(out / "runs/baseline.jsonl"),
                                        (str(out / "data/traces.jsonl"),)))
    write_text(str(wrote("validity:summary", "validity/summary.json",
                         "offline <-> online: hit@5, recall@5 and mrr against feedback and fallbacks in production")),
               validity_json(done))
    write_text(str(wrote("validity:md", "validity/validity.md", "the same as a page: the verdicts and every row")),
               validity_markdown(done))
    return done.analysis


def _write_report(path: Path, out: Path, config: GateConfig, answers: Mapping[str, Any] | None = None) -> str | None:
    """report.html for the candidate against the baseline, naming inputs relative to the demo folder.

    Returns None when written, or the name of a missing third-party package the report needs (then
    no report.html is left in the folder: an install without its dependencies still gets the rest of
    the demo). A missing rankgate module is a bug and is raised.
    """
    from rankgate.io import load_gold, load_run

    try:
        from rankgate.flows.evaluate import Statistics
        from rankgate.render.html import write_report

        gold = replace(load_gold(str(out / "data/gold.jsonl")), source="data/gold.jsonl")
        runs = {role: replace(load_run(str(out / f"runs/{role}.jsonl")), source=f"runs/{role}.jsonl") for role in ROLES}
        write_report(str(path), gold, runs["candidate"], baseline=runs["baseline"], by=[SEGMENT_FIELD], config=config,
                     statistics=Statistics(seed=config.seed), title=f"rankgate demo: {LABELS['candidate']} against {LABELS['baseline']}",
                     sources_dir=str(out), answers=answers)  # the header hashes data/ and runs/ as for files given by path
    except ModuleNotFoundError as exc:
        if not exc.name or exc.name.split(".")[0] == "rankgate":
            raise
        path.unlink(missing_ok=True)  # never leave an earlier demo's report beside newer numbers
        return exc.name.split(".")[0]
    return None


def _primary(outcome: GateOutcome) -> str:
    """The metric whose per-query changes the comparison lists: the first failing gate's, else the first gate's."""
    for r in outcome.results:
        if r.status == "fail":
            return r.gate.metric
    return outcome.results[0].gate.metric


def _forbidden_hits(gold: Gold, result: EvaluationResult, run_path: Path, chunks: Sequence[Chunk]) -> ForbiddenHits:
    import json

    meta = {c.chunk_id: c.metadata for c in chunks}
    forbidden = dict(zip(gold.query_ids, gold.field("must_not_retrieve")))
    values = dict(zip(result.query_ids, result["forbidden@5"].tolist()))
    hit, stale, tenant = [], [], []
    with open(run_path, encoding="utf-8") as fh:
        for line in fh:
            record = json.loads(line)
            q = record["query_id"]
            if values.get(q) != 1.0:
                continue
            hit.append(q)
            bad = set(forbidden.get(q) or ())
            shown = [h["chunk_id"] for h in record["topk"][:5] if h["chunk_id"] in bad]
            if any(meta.get(c, {}).get("status") in ("superseded", "deprecated") for c in shown):
                stale.append(q)
            if any(meta.get(c, {}).get("tenant") not in (None, "shared") for c in shown):
                tenant.append(q)
    checked = sum(1 for v in values.values() if not math.isnan(v))
    return ForbiddenHits(checked, tuple(hit), tuple(stale), tuple(tenant))


def _corpus_facts(chunks: Sequence[Chunk]) -> dict[str, Any]:
    docs = {c.metadata.get("doc_id", c.chunk_id.split("#", 1)[0]) for c in chunks}
    return {
        "chunks": len(chunks),
        "documents": len(docs),
        "languages": dict(Counter(str(c.metadata.get("lang")) for c in chunks).most_common()),
        "tenants": dict(Counter(str(c.metadata.get("tenant", "shared")) for c in chunks).most_common()),
    }


def _gold_facts(gold: Gold, result: EvaluationResult) -> dict[str, Any]:
    langs = Counter(str((t or {}).get(SEGMENT_FIELD)) for t in gold.field("tags"))
    return {
        "queries": len(gold.query_ids),
        "answerable": len(result.query_ids) - len(result.no_answer),
        "no_answer": len(result.no_answer),
        "judgements": len(gold.j_doc),
        "languages": dict(langs.most_common()),
        "with_forbidden": sum(1 for v in gold.field("must_not_retrieve") if v),
    }
