"""Gate a candidate run: evaluate it (and a baseline run) against the gold set, read the query texts
and the corpus's stale labels, and let :func:`rankgate.gating.decide.decide` check every gate of the ship
criteria. :func:`gate` is the Python entry (``rankgate.gate``); :func:`run_gate` takes a
:class:`GateRequest`, as ``rankgate gate`` builds it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rankgate._util import progress
from rankgate.flows._inputs import FilePath, config_file, paths

if TYPE_CHECKING:  # pragma: no cover
    from typing import TypeAlias

    from rankgate.corpus import CorpusManifest
    from rankgate.flows.evaluate import Evaluation, Scorer
    from rankgate.gating.baseline import BaselineSummary
    from rankgate.gating.config import ConfigInput, GateConfig
    from rankgate.gating.decide import GateOutcome
    from rankgate.io.load import GoldInput, RunInput
    from rankgate.model.results import EvaluationResult

    #: A run the gate scores (a path or loaded, as :func:`rankgate.io.load.load_run` reads it), or one
    #: already scored: an :class:`EvaluationResult` or an :class:`Evaluation`.
    RunOrResult: TypeAlias = RunInput | EvaluationResult | Evaluation
    #: A baseline: a run or a result (compared query by query), or the means of one: a ``summary.json`` path
    #: (a path is read as a summary when it is one), a :class:`BaselineSummary` or its dict.
    BaselineInput: TypeAlias = RunOrResult | BaselineSummary
    #: A corpus manifest: its path, or loaded.
    ManifestInput: TypeAlias = str | os.PathLike[str] | CorpusManifest

__all__ = ["GateRequest", "gate", "run_gate", "scorer_of"]


@dataclass(frozen=True)
class GateRequest:
    """One gate run.

    ``config``: a path to the ship criteria (YAML), a :class:`~rankgate.gating.config.GateConfig` or the
    same content as a dict. ``gold``: a path or a loaded gold set. ``candidate``: a run (path or loaded),
    an :class:`~rankgate.model.results.EvaluationResult` or an :class:`~rankgate.flows.evaluate.Evaluation`.
    ``baseline``: None; a run, a result or an evaluation (paired comparison); or a ``summary.json`` path,
    a :class:`~rankgate.gating.baseline.BaselineSummary` or its dict. ``queries``: a queries file whose texts
    show beside query ids when the gold set has none. ``corpus``: a manifest (path or loaded) to check
    ``max_stale_labels`` against. ``evaluate``: options overriding the ship criteria's ``evaluate`` ones,
    passed on to :func:`rankgate.evaluate` (``k``, ``level``, ``ties``, ``gold_format``, ``columns``…).
    """

    config: ConfigInput
    gold: GoldInput
    candidate: RunOrResult
    baseline: BaselineInput | None = None
    baseline_label: str | None = None
    candidate_label: str | None = None
    queries: str | os.PathLike[str] | None = None
    corpus: ManifestInput | None = None
    evaluate: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        from rankgate._util.constraints import EVALUATE_OPTIONS, FILE, TEXT, check, check_options

        # The fields checked here (a UsageError naming each); the inputs and the config when they are read.
        for attr in ("baseline_label", "candidate_label"):
            object.__setattr__(self, attr, check(TEXT, getattr(self, attr), caller="GateRequest", name=attr))
        object.__setattr__(self, "queries", check(FILE, self.queries, caller="GateRequest", name="queries"))
        object.__setattr__(self, "evaluate", check_options(self.evaluate, EVALUATE_OPTIONS, caller="GateRequest",
                                                           target="rankgate.evaluate", name="evaluate"))

    def inputs(self) -> tuple[FilePath, ...]:
        """The files the request reads (an output may be none of them): the ship criteria, and the gold set,
        candidate, queries, corpus and baseline given as paths."""
        return paths(config_file(self.config), self.gold, self.candidate, self.queries, self.corpus, self.baseline)


def gate(config: ConfigInput, gold: GoldInput, candidate: RunOrResult, baseline: BaselineInput | None = None, *,
         baseline_label: str | None = None, candidate_label: str | None = None,
         queries: str | os.PathLike[str] | None = None, corpus: ManifestInput | None = None,
         **evaluate_kwargs: Any) -> GateOutcome:
    """Evaluate ``candidate`` (and a baseline run) against ``gold`` and decide every gate (the fields of
    :class:`GateRequest`; ``evaluate_kwargs`` override the config's ``evaluate`` options)."""
    from rankgate._util.constraints import EVALUATE_OPTIONS, check_options

    check_options(evaluate_kwargs, EVALUATE_OPTIONS, caller="gate", target="rankgate.evaluate")
    return run_gate(GateRequest(config, gold, candidate, baseline, baseline_label, candidate_label, queries, corpus,
                                evaluate_kwargs))


def _config(config: ConfigInput) -> GateConfig:
    from rankgate.gating.config import as_config

    return as_config(config)


def scorer_of(cfg: GateConfig, given: Mapping[str, Any] | None = None) -> Scorer:
    """The :class:`~rankgate.flows.evaluate.Scorer` of the gate's runs: every metric of the ship criteria, scored
    with their ``evaluate:`` options, each ``given`` one winning (:func:`rankgate.gating.config.evaluate_options`),
    as one :class:`~rankgate.scoring.options.Scoring`. ``doc_map`` and ``columns`` are mappings here, as
    :func:`rankgate.evaluate` takes them, so the scorer holds them beside the scoring."""
    from rankgate.flows.evaluate import Scorer, Scoring
    from rankgate.gating.config import evaluate_options

    options = evaluate_options(cfg, given)
    doc_map, columns = options.pop("doc_map", None), options.pop("columns", None)
    return Scorer(Scoring(metrics=list(cfg.metrics), **options), doc_map=doc_map, columns=columns)


def run_gate(req: GateRequest) -> GateOutcome:
    """Evaluate the candidate (and a baseline run) once each and decide every gate of ``req.config``."""
    from rankgate.gating.baseline import BaselineSummary, summary_or_run
    from rankgate.io import load_gold
    from rankgate.gating.decide import decide
    from rankgate.model.gold_run import Gold
    from rankgate.model.results import EvaluationResult
    from rankgate.flows.evaluate import Evaluation, input_name

    cfg = _config(req.config)
    gold = req.gold
    scorer = scorer_of(cfg, req.evaluate)
    loaded_gold = None
    gold_hash: dict[str, str] = {}

    def result_of(run: RunOrResult) -> EvaluationResult:
        nonlocal loaded_gold
        if isinstance(run, Evaluation):
            return run.result
        if isinstance(run, EvaluationResult):
            return run
        if loaded_gold is None:
            with progress.stage(f"reading {input_name(gold, 'the gold set')}"):
                loaded_gold = gold if not isinstance(gold, (str, os.PathLike)) else load_gold(
                    os.fspath(gold), format=scorer.scoring.gold_format, columns=scorer.column_map(),
                    fields=scorer.scoring.fields)
        # (the scorer's warning lines are kept, not said: the decision's notes say them, for each side)
        result = scorer.score(loaded_gold, run)
        if isinstance(gold, (str, os.PathLike)) and os.path.isfile(gold):
            # the gold set was loaded once for both runs; name its file and hash, as evaluate does for a path,
            # so a summary written from this outcome can tell whether a later gold set is the same
            from dataclasses import replace

            from rankgate.io.source import sha256_file

            if "sha" not in gold_hash:
                gold_hash["sha"] = sha256_file(os.fspath(gold))
            result = replace(result, inputs={**result.inputs, "gold": {"path": os.fspath(gold), "sha256": gold_hash["sha"]}})
        return result

    baseline = req.baseline
    base_obj: EvaluationResult | BaselineSummary | None
    if baseline is None or isinstance(baseline, (EvaluationResult, BaselineSummary)):
        base_obj = baseline
    elif isinstance(baseline, Mapping) and isinstance(baseline.get("metrics"), Mapping):
        base_obj = BaselineSummary.from_dict(baseline)
    elif isinstance(baseline, (str, os.PathLike)):
        base_obj = summary_or_run(os.fspath(baseline), result_of)
    else:
        base_obj = result_of(baseline)
    current = result_of(req.candidate)
    texts: dict[str, str] | None = None
    if isinstance(loaded_gold, Gold):
        texts = {q: t for q, t in zip(loaded_gold.query_ids, loaded_gold.field("query")) if isinstance(t, str)}
    if req.queries is not None or not texts:
        from rankgate.io.inputs import beir_folder, beir_query_texts, read_query_texts

        folder = beir_folder(gold) if req.queries is None else None
        if req.queries is not None:
            texts = {**read_query_texts(os.fspath(req.queries)), **(texts or {})}
        elif folder is not None:
            texts = beir_query_texts(folder)[1]
    stale = None
    if req.corpus is not None and (cfg.max_stale_labels is not None or cfg.max_stale_share is not None):
        stale = _stale_report(cfg, gold, loaded_gold, scorer, req.corpus)
    with progress.stage("checking the ship criteria"):
        return decide(cfg, current, base_obj, baseline_label=req.baseline_label, candidate_label=req.candidate_label,
                      query_text=texts, stale=stale, intervals=_intervals(cfg, req.candidate))


def _intervals(cfg: GateConfig, candidate: Any) -> Any:
    """The candidate evaluation's intervals, when drawn with the ship criteria's statistics."""
    from rankgate.flows.evaluate import Evaluation

    if not isinstance(candidate, Evaluation) or candidate.cis is None:
        return None
    st = candidate.request.statistics
    return candidate.cis if (st.seed, st.resamples, st.confidence) == (cfg.seed, cfg.resamples, cfg.confidence) else None


def _stale_report(cfg: GateConfig, gold: Any, loaded: Any, scorer: Scorer, corpus: Any) -> Any:
    """The gold set's stale labels against ``corpus`` (the gold set as the gate read it, any format)."""
    from rankgate.corpus import CorpusManifest, load_manifest
    from rankgate.io import load_gold
    from rankgate.goldset.records import gold_file_of
    from rankgate.goldset.stale import stale_labels

    if loaded is None:
        loaded = gold if not isinstance(gold, (str, os.PathLike)) else load_gold(
            os.fspath(gold), format=scorer.scoring.gold_format, columns=scorer.column_map(),
                fields=scorer.scoring.fields)
    path = os.fspath(gold) if isinstance(gold, (str, os.PathLike)) else "<gold>"
    manifest = corpus if isinstance(corpus, CorpusManifest) else load_manifest(os.fspath(corpus))
    return stale_labels(gold_file_of(loaded, path), manifest, max_stale_labels=cfg.max_stale_labels,
                        max_stale_share=cfg.max_stale_share)
