"""The lexical judge: a deterministic, offline token-overlap baseline for every task.

It calls no model, so everything that takes a judge runs without a network or a key, and a
calibration against human labels shows how much a real judge adds over word matching. It is named
"lexical (token overlap baseline)" wherever its labels appear.

Text is cut into *content tokens*: lowercased ``\\w+`` runs (Unicode), a short English stop-word
list removed, and a final "s" dropped from tokens longer than three letters ("policies" → "policie",
"refunds" → "refund"; no other stemming). Numbers stay tokens. With ``q`` the question's content
tokens and ``t`` a text's, *coverage* of ``q`` by ``t`` is ``|set(q) ∩ set(t)| / |set(q)|``.

statements
    The answer is cut into sentences (after ``.``, ``!`` or ``?`` followed by a space, at line
    breaks and list bullets); sentences with fewer than two content tokens and sentences that decline
    to answer ("I don't know", "cannot answer", "no information", ...) are dropped. An answer that is
    all refusal gives no statements.
support / correctness
    The statement is compared with each sentence of the context (reference) and with the whole.
    *contradicted* when some sentence covers at least ``contradiction_overlap`` (0.5) of the
    statement's tokens and disagrees on negation (one says "not"/"no"/"never", the other does not)
    or on numbers (both hold numbers and the statement has one the sentence lacks); otherwise
    *supported* when the whole context covers at least ``support_coverage`` (0.75) of the
    statement's tokens; otherwise *not_found*. A statement with no content token is *not_found*.
answer_relevance
    A refusal scores 0; else the answer's coverage of the question's tokens: ``>= 0.5`` → 2,
    ``>= 0.2`` → 1, else 0.
context_relevance
    The passage's coverage of the question's tokens: ``>= 0.6`` → 2, ``>= 0.3`` → 1, else 0.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Set
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

from rankgate.judges.base import Label

__all__ = ["LexicalJudge", "LexicalThresholds", "content_tokens", "split_sentences"]

NAME = "lexical (token overlap baseline)"

_STOP = frozenset("""a an the and or but if then else of to in on at by for with from into onto about as is are was
were be been being am do does did doing have has had having it its it's this that these those there here
what which who whom whose when where why how i you he she we they me him her us them my your his our their
can could would should may might must shall will just so than too very also any some such own same other
each both few more most all only out up down over under again further once""".split())
_NEGATIONS = frozenset({"not", "no", "never", "none", "nobody", "nothing", "neither", "nor", "cannot",
                        "isn", "aren", "wasn", "weren", "don", "doesn", "didn", "won", "can't", "without"})
_REFUSAL = re.compile(
    r"\b(i\s+(?:do\s+not|don't|dont)\s+know|(?:cannot|can't|can\s+not|unable\s+to)\s+(?:answer|help|find|say)"
    r"|no\s+(?:relevant\s+)?information|not\s+(?:enough|sufficient)\s+information|not\s+mentioned"
    r"|i'm\s+not\s+sure|i\s+am\s+not\s+sure|no\s+answer)\b", re.I)
_WORD = re.compile(r"\w+", re.U)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+|^\s*(?:[-*•]|\d+[.)])\s+", re.M)
_NUMBER = re.compile(r"^\d+$")


@dataclass(frozen=True)
class LexicalThresholds:
    """The cut-offs of the lexical judge (module docstring)."""

    support_coverage: float = 0.75
    contradiction_overlap: float = 0.5
    answer_relevance_2: float = 0.5
    answer_relevance_1: float = 0.2
    context_relevance_2: float = 0.6
    context_relevance_1: float = 0.3
    min_statement_tokens: int = 2


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def content_tokens(text: str) -> list[str]:
    """Lowercased word tokens without stop words, a final "s" dropped from words over three letters."""
    out = []
    for w in _words(text):
        if w in _STOP or w in _NEGATIONS:
            continue
        if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
            w = w[:-1]
        out.append(w)
    return out


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text``: cut after . ! ? and a space, at line breaks and at list bullets."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]


def _coverage(needle: list[str], hay: Set[str]) -> float:
    wanted = set(needle)
    return len(wanted & hay) / len(wanted) if wanted else 0.0


def _negated(text: str) -> bool:
    return any(w in _NEGATIONS or w.endswith("n't") for w in _words(text))


def _numbers(tokens: list[str]) -> set[str]:
    return {t for t in tokens if _NUMBER.match(t)}


@lru_cache(maxsize=256)
def _analysed(context: str) -> tuple[tuple[tuple[frozenset[str], bool, frozenset[str]], ...], frozenset[str]]:
    """A context cut once into its sentences' (token set, negated, numbers) and all its tokens: every
    statement of an answer is checked against the same context, so it is tokenised once, not per statement."""
    sentences = []
    for sentence in split_sentences(context):
        s_tokens = content_tokens(sentence)
        sentences.append((frozenset(s_tokens), _negated(sentence), frozenset(_numbers(s_tokens))))
    return tuple(sentences), frozenset(content_tokens(context))


class LexicalJudge:
    """Token-overlap baseline; see the module docstring for every rule and cut-off."""

    name = NAME
    cacheable = False  # faster than a cache look-up, and deterministic
    calls_model = False  # judged in the calling thread; plans count no tokens
    version = "1"

    def __init__(self, thresholds: LexicalThresholds | None = None) -> None:
        self.thresholds = thresholds or LexicalThresholds()

    def identity(self) -> dict[str, Any]:
        return {"backend": "lexical", "model": NAME, "version": self.version, "thresholds": asdict(self.thresholds)}

    def judge(self, task: str, fields: Mapping[str, str], *, seed: int) -> Label:
        if task == "statements":
            return self._statements(fields["answer"])
        if task == "support":
            return self._verdict(fields["statement"], fields["context"])
        if task == "correctness":
            return self._verdict(fields["statement"], fields["reference"])
        if task == "answer_relevance":
            if _REFUSAL.search(fields["answer"]) and not self._statements(fields["answer"]):
                return 0
            t = self.thresholds
            return self._grade(fields["question"], fields["answer"], t.answer_relevance_2, t.answer_relevance_1)
        if task == "context_relevance":
            t = self.thresholds
            return self._grade(fields["question"], fields["passage"], t.context_relevance_2, t.context_relevance_1)
        raise ValueError(f"unknown task {task!r}")

    def _statements(self, answer: str) -> tuple[str, ...]:
        keep = []
        for sentence in split_sentences(answer):
            if _REFUSAL.search(sentence):
                continue
            if len(content_tokens(sentence)) >= self.thresholds.min_statement_tokens:
                keep.append(sentence)
        return tuple(keep)

    def _verdict(self, statement: str, context: str) -> str:
        tokens = content_tokens(statement)
        if not tokens:
            return "not_found"
        t = self.thresholds
        negated = _negated(statement)
        mine = _numbers(tokens)
        sentences, everything = _analysed(context)
        for s_tokens, s_negated, theirs in sentences:
            if _coverage(tokens, s_tokens) < t.contradiction_overlap:
                continue
            if negated != s_negated:
                return "contradicted"
            if mine and theirs and not mine <= theirs:
                return "contradicted"
        return "supported" if _coverage(tokens, everything) >= t.support_coverage else "not_found"

    @staticmethod
    def _grade(question: str, text: str, two: float, one: float) -> int:
        cov = _coverage(content_tokens(question), set(content_tokens(text)))
        return 2 if cov >= two else 1 if cov >= one else 0
