"""``rankgate.report``: the HTML report from Python, as ``rankgate report`` writes it.

:func:`report` gathers the report with :func:`rankgate.render.build.report` (the flow ``rankgate report`` runs)
and, given ``out``, writes the page :func:`rankgate.render.html.render_html` makes, in one unit
(:func:`rankgate._util.atomic.write_files`): the same bytes as the command with the same options.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import fields
from typing import TYPE_CHECKING, Any

from rankgate.errors import UsageError

if TYPE_CHECKING:  # pragma: no cover
    from rankgate.gating.config import ConfigInput
    from rankgate.io.load import GoldInput, RunInput
    from rankgate.render.model import Report
    from rankgate.scoring.options import Scoring
    from rankgate.stats.options import Statistics

__all__ = ["report"]


def report(
    gold: GoldInput,
    run: RunInput,
    *,
    out: str | os.PathLike[str] | None = None,
    baseline: Any = None,
    lexical: RunInput | None = None,
    by: str | Iterable[str] | None = None,
    config: ConfigInput | None = None,
    metrics: Sequence[str] = (),
    title: str | None = None,
    top_misses: int = 50,
    queries: str | None = None,
    confidence: float = 0.95,
    seed: int = 0,
    resamples: int = 2000,
    statistics: Statistics | None = None,
    scoring: Scoring | None = None,
    **options: Any,
) -> Report:
    """Evaluate ``run`` (and ``baseline``) against ``gold`` and gather the HTML report; with ``out``, write it there.

    Args:
        gold, run, lexical: paths or in memory, as :func:`rankgate.evaluate` takes them; ``lexical`` (a BM25
            run, say) is shown beside the misses.
        out: the HTML file to write (replaced as one unit); None: nothing is written.
        baseline: a run (deltas with paired intervals, both curves) or the ``summary.json`` of one (means only).
        by: segment fields; None picks intent, source_of_query and tags with 2–20 labels.
        config: ship criteria (path, loaded, or a dict): adds the gate's verdict; its ``evaluate:`` options
            apply where ``options`` gives none.
        metrics: metrics added to the page's panel (its own set is always shown).
        title, top_misses, queries: as ``--title``, ``--top-misses`` and ``--queries``.
        confidence, seed, resamples: every interval's bootstrap, or ``statistics=Statistics(...)`` whole.
        scoring, options: how runs are scored: ``scoring=Scoring(...)`` whole, or its fields as keywords (``k``,
            the page's cutoff; ``level``, ``ties``, ``doc_sep``, ``doc_map`` as a file …).

    Returns the :class:`~rankgate.render.model.Report` (``gate``, ``findings``, ``panel`` …).
    """
    from rankgate.render.build import report as gather
    from rankgate.scoring.options import Scoring
    from rankgate.stats.options import Statistics, taken

    seed, resamples, confidence = taken(statistics, seed, resamples, confidence, caller="report")
    stats = statistics if statistics is not None else Statistics(seed=seed, resamples=resamples, confidence=confidence)
    if scoring is not None and options:
        raise UsageError(f"report takes the scoring options as scoring= or as keywords, not both: drop "
                         f"{', '.join(options)} or set {'it' if len(options) == 1 else 'them'} in the Scoring")
    known = {f.name for f in fields(Scoring)} - {"metrics"}
    unknown = sorted(set(options) - known)
    if unknown:
        raise UsageError(f"report takes no option {', '.join(map(repr, unknown))}; its scoring options are "
                         f"{', '.join(sorted(known))} (metrics= adds metrics to the panel)")
    cfg = None
    if config is not None:
        from rankgate.gating.config import as_config

        cfg = as_config(config)
    if scoring is None and (options or cfg is not None):
        from rankgate.gating.config import evaluate_options

        scoring = Scoring(**evaluate_options(cfg, options))
    if out is not None:
        from rankgate._util.atomic import check_file, check_not_input

        check_file(out)  # (before any work: a folder or an unwritable place is said at once)
        check_not_input(out, [gold, run, baseline, lexical, config, queries, getattr(scoring, "doc_map", None)])
    rep = gather(gold, run, scoring=scoring, statistics=stats, baseline=baseline, lexical=lexical, by=by, config=cfg,
                 metrics=metrics, title=title, top_misses=top_misses, queries=queries)
    if out is not None:
        from rankgate._util.atomic import write_files
        from rankgate.render.html import render_html

        write_files({out: render_html(rep)})
    return rep
