"""RAGAS evaluation datasets as a gold set and a run (``--gold-format ragas``, ``--run-format ragas``).

Fields (RAGAS ``SingleTurnSample``, as ``EvaluationDataset.to_jsonl`` / ``to_csv`` / ``to_pandas``
write them): ``user_input`` (the question), ``retrieved_contexts`` / ``retrieved_context_ids`` (the
run, in rank order), ``reference_contexts`` / ``reference_context_ids`` (the relevant contexts, grade
1), ``reference`` (the answer text, kept as ``expected_answer``, never used as relevance). Legacy
datasets (``question``, ``contexts``, ``ground_truth``/``ground_truths``, ``answer``): ``contexts``
are the retrieved contexts; ``ground_truth`` is an answer, so a legacy file without
``reference_contexts`` holds a run but no gold set. Contexts without ids are matched by text
(:mod:`rankgate.io.shapes`). See :mod:`rankgate.io.tools.samples` for ids and empty fields.
"""

from __future__ import annotations

from rankgate.model.gold_run import Gold, Run
from rankgate.io.tools.records import Records
from rankgate.io.tools.samples import ToolShape, gold_from_samples, run_from_samples, with_list_sep

__all__ = ["RAGAS", "read_ragas_gold", "read_ragas_run"]

RAGAS = ToolShape(
    name="ragas",
    label="RAGAS",
    query_keys=("user_input", "question"),
    gold_ids="reference_context_ids",
    gold_texts=("reference_contexts",),
    run_ids="retrieved_context_ids",
    run_texts=("retrieved_contexts", "contexts"),
    answer_keys=("reference", "ground_truth", "ground_truths"),
    tool_keys=frozenset({
        "user_input", "question", "retrieved_contexts", "reference_contexts", "retrieved_context_ids",
        "reference_context_ids", "contexts", "response", "answer", "multi_responses", "reference", "ground_truth",
        "ground_truths", "rubrics", "reference_tool_calls", "persona_name", "query_style", "query_length",
    }),
    gold_hint="'reference' and 'ground_truth' are answer texts, not relevance judgements: add reference_contexts "
              "(the texts of the chunks that answer) or reference_context_ids",
)


def read_ragas_gold(records: Records, list_sep: str | None = None) -> Gold:
    return gold_from_samples(records, with_list_sep(RAGAS, list_sep))


def read_ragas_run(records: Records, list_sep: str | None = None) -> Run:
    return run_from_samples(records, with_list_sep(RAGAS, list_sep))
