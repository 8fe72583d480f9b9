"""DeepEval test cases and goldens as a gold set and a run (``--gold-format deepeval``).

Fields (DeepEval ``LLMTestCase`` / ``Golden``, as ``EvaluationDataset`` saves them to JSON or CSV):
``input`` (the question), ``retrieval_context`` (the run: what the retriever returned, in rank
order), ``context`` (the ideal retrieval: the relevant contexts, grade 1), ``expected_output`` (the
answer text: kept as ``expected_answer``, never used as relevance), ``actual_output`` (ignored).
Contexts are matched by text (:mod:`rankgate.io.shapes`).

A list given as text (a CSV cell; a JSON lines record from ``save_as``) is a JSON list, or texts
joined as DeepEval joins them: by ``|``, the delimiter of every DeepEval save and load path
(``save_as("csv"/"jsonl")``, ``add_goldens_from_csv_file`` / ``add_test_cases_from_csv_file``'s
``context_col_delimiter`` and ``retrieval_context_col_delimiter``, DeepEval 4.x). A file joined
with another delimiter is read with ``--columns list_sep=...`` (``columns={"list_sep": ...}`` in Python). A joined
list cannot hold a context that contains ``|``: reading such a file says so once, and a JSON list
whose contexts contain ``|`` gets a warning (saved as CSV, the same dataset would score
differently). ``save_as("json")`` keeps each context whole. A retrieved item saved from a
``RetrievedContextData`` (``deepeval_source=…,deepeval_context=…``) is its context text, as
DeepEval's loaders read it back.
"""

from __future__ import annotations

import re

from rankgate.model.gold_run import Gold, Run
from rankgate.io.tools.records import Records
from rankgate.io.tools.samples import ID_KEYS, ToolShape, gold_from_samples, run_from_samples, with_list_sep

__all__ = ["DEEPEVAL", "read_deepeval_gold", "read_deepeval_run"]

# How save_as writes a RetrievedContextData (a context with its source) so that its loaders can rebuild it
_RETRIEVED = re.compile(r"deepeval_source=.*?,deepeval_context=(?P<context>.*)", re.DOTALL)


def _context_text(text: str) -> str:
    """The context of a retrieved item ``save_as`` wrote as ``deepeval_source=…,deepeval_context=…``."""
    m = _RETRIEVED.fullmatch(text)
    return m.group("context") if m else text


DEEPEVAL = ToolShape(
    name="deepeval",
    label="DeepEval",
    query_keys=("input",),
    gold_ids=None,
    gold_texts=("context",),
    run_ids=None,
    run_texts=("retrieval_context",),
    answer_keys=("expected_output",),
    tool_keys=frozenset({
        "input", "actual_output", "expected_output", "context", "retrieval_context", "tools_called",
        "expected_tools", "additional_metadata", "comments", "source_file", "token_cost", "completion_time",
        "custom_column_key_values",
    }),
    id_keys=(*ID_KEYS, "name"),
    list_sep="|",
    saved_sep="|",
    saved_marker="custom_column_key_values",
    gold_hint="'expected_output' is the answer text, not a relevance judgement: add 'context' (the texts of the "
              "chunks that answer)",
    unwrap=_context_text,
)


def read_deepeval_gold(records: Records, list_sep: str | None = None) -> Gold:
    return gold_from_samples(records, with_list_sep(DEEPEVAL, list_sep))


def read_deepeval_run(records: Records, list_sep: str | None = None) -> Run:
    return run_from_samples(records, with_list_sep(DEEPEVAL, list_sep))
