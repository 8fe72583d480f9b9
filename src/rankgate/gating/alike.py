"""Whether a run and its baseline can be compared like with like: the two warnings every comparison gives
(``rankgate compare`` and ``rankgate gate`` on stderr, the PR comment, the HTML report), each written here once.

A change between a baseline and a candidate is the retriever's alone when both were scored on the same gold set
and ranked by the same rule. :func:`gold_versions_warning` says when they were scored on different versions of
the gold set (a relabelling moves the numbers too); :func:`tie_rules_warning` says when equal scores were
ordered by different rules (``--ties``: a TREC file against a JSONL one). :func:`pair_warnings` gives both for a
candidate and its baseline (a gate outcome's), :func:`alike_warnings` for runs against their baseline.

Every medium says the same sentence: ``name`` writes the name of a run or a ranking rule and ``code`` a command,
flag or hash, as the medium needs (plain text on stderr; escaped, and in code spans, in markdown and HTML). The comment and the
report put :data:`GOLD_VERSIONS_TITLE` or :data:`TIE_RULES_TITLE` before it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["GOLD_VERSIONS_TITLE", "TIE_RULES_TITLE", "alike_warnings", "gold_sha256", "gold_versions_warning",
           "pair_warnings", "tie_rules_warning"]

GOLD_VERSIONS_TITLE = "Different gold set versions"
TIE_RULES_TITLE = "Different ranking rules"

Style = Callable[[str], str]


def _plain(text: str) -> str:
    return text


def gold_versions_warning(candidate: str, candidate_sha256: str, baseline: str, baseline_sha256: str, *,
                          name: Style = _plain, code: Style = _plain) -> str:
    """The warning when ``candidate`` was scored on another version of the gold set (the sha256 of its file)
    than ``baseline``: one sentence, without a final full stop."""
    return (f"{name(candidate)} was scored on another version of the gold set than the baseline {name(baseline)} "
            f"(gold sha256 {code(str(candidate_sha256)[:12])} vs {code(str(baseline_sha256)[:12])}); part of any "
            f"change may come from the relabelling, not the retriever ({code('rankgate gold diff')} shows what "
            "changed; score both on the same gold set to compare like with like)")


def tie_rules_warning(candidate: str, candidate_rule: str, baseline: str, baseline_rule: str, *,
                      name: Style = _plain, code: Style = _plain) -> str:
    """The warning when ``candidate`` was ranked by another rule (``--ties``: ``id`` or ``input``) than
    ``baseline``: one sentence, without a final full stop."""
    from rankgate.scoring.facts import RULE_NAMES

    def rule(r: str) -> str:
        return f"{name(RULE_NAMES.get(str(r), str(r)))} ({code(f'--ties {r}')})"

    return (f"{name(candidate)} was ranked by {rule(candidate_rule)}, the baseline {name(baseline)} by "
            f"{rule(baseline_rule)}; part of any change may come from how equal scores were ordered, not the "
            f"retriever (score both with the same {code('--ties')} to compare like with like)")


def gold_sha256(scored: Any) -> str | None:
    """The sha256 of the gold file a result (or a baseline summary) was scored on, when it is known."""
    from rankgate.gating.baseline import BaselineSummary, gold_sha256_of

    return scored.gold_sha256 if isinstance(scored, BaselineSummary) else gold_sha256_of(scored)


def pair_warnings(candidate: str, baseline: str, gold_versions: Sequence[str | None],
                  tie_rules: Sequence[str | None], *, name: Style = _plain,
                  code: Style = _plain) -> list[tuple[str, str]]:
    """``(title, sentence)`` of each warning for ``candidate`` against ``baseline`` (their names):
    ``gold_versions`` and ``tie_rules`` are the ``(baseline, candidate)`` sha256 and rule, None where not known
    (nothing is said then), as a :class:`~rankgate.gating.decide.GateOutcome` holds them."""
    out = []
    (base_sha, cand_sha), (base_rule, cand_rule) = gold_versions, tie_rules
    if base_sha and cand_sha and base_sha != cand_sha:
        out.append((GOLD_VERSIONS_TITLE, gold_versions_warning(candidate, cand_sha, baseline, base_sha, name=name,
                                                               code=code)))
    if base_rule and cand_rule and base_rule != cand_rule:
        out.append((TIE_RULES_TITLE, tie_rules_warning(candidate, cand_rule, baseline, base_rule, name=name,
                                                       code=code)))
    return out


def alike_warnings(scored: Sequence[Any], names: Sequence[str], baseline: int = 0) -> list[str]:
    """The warnings for each of ``scored`` (evaluation results, or baseline summaries) scored on another gold
    version or ranked by another rule than ``scored[baseline]``, where both are known. ``names``: each one's
    name, as the output names the runs."""
    from rankgate.gating.baseline import ties_of

    base = scored[baseline]
    return [sentence for i, (run, label) in enumerate(zip(scored, names)) if i != baseline
            for _, sentence in pair_warnings(label, names[baseline], (gold_sha256(base), gold_sha256(run)),
                                             (ties_of(base), ties_of(run)))]
