"""Checks and helpers the flows share: the bounds of a judge's counts and the judge a flow talks to."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from rankgate.errors import F

JUDGE_ENV = {"backend": "RANKGATE_JUDGE", "url": "RANKGATE_JUDGE_URL", "model": "RANKGATE_JUDGE_MODEL",
             "key_env": "RANKGATE_JUDGE_KEY_ENV"}


def check_counts(**counts: tuple[int | None, int, int | None, str]) -> None:
    """Each ``field=(value, low, high, why)`` with a value within its bound (None: not given), or a
    UsageError naming the field."""
    from rankgate.judges import check_count

    for name, (value, low, high, why) in counts.items():
        if value is not None:
            check_count(value, F(name), low, high, why)


@dataclass(frozen=True, slots=True)
class JudgeSpec:
    """The judge a flow talks to. ``backend``, ``url``, ``model`` and ``key_env`` left None come from
    ``RANKGATE_JUDGE``, ``RANKGATE_JUDGE_URL``, ``RANKGATE_JUDGE_MODEL`` and ``RANKGATE_JUDGE_KEY_ENV``
    when the flow runs (the backend then defaults to ``lexical``, the offline baseline)."""

    backend: str | None = None
    url: str | None = None
    model: str | None = None
    key_env: str | None = None
    cache: str | None = None          # folder; None: $RANKGATE_CACHE_DIR, else the user cache
    use_cache: bool = True
    refresh: bool = False
    workers: int = 8
    timeout: float = 60.0
    seed: int = 0
    retries: int | None = None        # None: the client's default
    max_statements: int | None = None  # None: the client's default
    max_calls: int | None = None
    max_reply_bytes: int | None = None
    progress: bool = False

    def __post_init__(self) -> None:
        from rankgate._util.constraints import TIMEOUT, check
        from rankgate.errors import UsageError
        from rankgate.judges import MAX_RETRIES, MAX_STATEMENTS, MAX_WORKERS

        check_counts(workers=(self.workers, 1, MAX_WORKERS, ""), retries=(self.retries, 0, MAX_RETRIES, ""),
                     max_statements=(self.max_statements, 1, MAX_STATEMENTS, ""), max_calls=(self.max_calls, 0, None, ""))
        check(TIMEOUT, self.timeout, caller="JudgeSpec", field="timeout")
        if not self.use_cache and self.refresh:
            raise UsageError(f"{F(use_cache=False)} and {F.refresh} contradict each other: {F.refresh} writes the cache")

    def settings(self) -> dict[str, str | None]:
        """Backend, url, model and key variable: the spec's first, then the RANKGATE_JUDGE* environment."""
        out: dict[str, str | None] = {}
        for name, env in JUDGE_ENV.items():
            value = getattr(self, name)
            out[name] = value if value is not None else (os.environ.get(env) or None)
        out["backend"] = out["backend"] or "lexical"
        return out

    def open(self, settings: dict[str, str | None] | None = None) -> Any:
        """The judge client (a UsageError on a bad configuration, before any call)."""
        from rankgate.judges import open_judge

        s = settings or self.settings()
        extra: dict[str, Any] = {}
        if self.retries is not None:
            extra["retries"] = self.retries
        if self.max_statements is not None:
            extra["max_statements"] = self.max_statements
        return open_judge(str(s["backend"]), url=s["url"], model=s["model"], key_env=s["key_env"],
                          cache_dir=self.cache, use_cache=self.use_cache, refresh=self.refresh, workers=self.workers,
                          timeout_s=self.timeout, seed=self.seed, progress=self.progress, max_calls=self.max_calls,
                          max_reply_bytes=self.max_reply_bytes, **extra)


def budget_warning(client: Any, command: str) -> str | None:
    """The one line saying the call budget ran out, or None.

    It names the command line's option and ``command`` (not the request's ``max_calls``) because it is data, not a
    refusal: ``answers`` writes it into summary.json, whose bytes must not depend on who asked for the run, and the
    same line is said by ``judge relevance``."""
    skipped = client.stats.get("over_budget", 0) if isinstance(getattr(client, "stats", None), dict) else 0
    if not skipped:
        return None
    return (f"the call budget (--max-calls {client.max_calls:,}) was spent: {skipped:,} judge "
            f"call{'s were' if skipped != 1 else ' was'} not made; those items are judge_error rows "
            f"'call budget reached' (raise --max-calls, or run {command} again: labels in the judge cache "
            f"cost nothing)")


def check_when(when: str, caller: str) -> str:
    """A calibration's date as given (``when``, a field of ``caller``): an ISO 8601 time or date, written back
    as UTC to the second (``2025-05-01T09:30:00Z``); a UsageError naming the field otherwise."""
    from rankgate._util.constraints import Param, check
    from rankgate.errors import UsageError
    from rankgate.stats.calibration import parse_time, show_time

    when = check(Param("when", str, None), when, caller=caller, field="when")
    parsed = parse_time(when)
    if parsed is None:
        raise UsageError(f"{F.when} must be an ISO 8601 time or date (2025-05-01 or 2025-05-01T09:30:00Z); got {when!r}")
    return show_time(parsed)


def judge_spend(sent: Any, estimate: Any, price_in: float | None, price_out: float | None) -> dict[str, Any]:
    """What a judge run spent, recorded beside its dry run's estimate: ``sent``, the client's counts for this run's
    calls (``sent``, ``prompt_tokens``, ``completion_tokens``: the usage the server reported; a label from the
    cache was not sent and cost nothing); ``estimate``, the dry run's plan of the same run (a
    :class:`~rankgate.judges.base.Plan`, or ``answers``' rows by task, each with ``tokens_in``/``tokens_out``);
    the prices per 1M tokens. Amounts in the prices' currency, rounded to 6 decimals."""
    pin, pout = price_in or 0.0, price_out or 0.0
    if isinstance(estimate, dict):
        est_in = sum(int(row.get("tokens_in", 0)) for row in estimate.values())
        est_out = sum(int(row.get("tokens_out", 0)) for row in estimate.values())
    else:
        est_in, est_out = int(estimate.approx_tokens_in), int(estimate.approx_tokens_out)
    prompt, completion = int(sent.get("prompt_tokens", 0)), int(sent.get("completion_tokens", 0))
    return {"calls_sent": int(sent.get("sent", 0)),
            "tokens": {"prompt": prompt, "completion": completion},
            "usd": round((prompt * pin + completion * pout) / 1e6, 6),
            "estimate": {"tokens_in": est_in, "tokens_out": est_out, "usd": round((est_in * pin + est_out * pout) / 1e6, 6)},
            "prices_per_1m_tokens": {"in": price_in, "out": price_out},
            "method": "tokens: the usage the server reported for the calls this run sent (labels from the judge cache "
                      "are not sent and cost nothing); estimate: the dry run's, characters / 4 for the same calls"}


def check_prices(request: Any) -> None:
    """A judge request's ``price_in`` / ``price_out`` (per 1M tokens): None or a price >= 0 (NaN refused)."""
    from rankgate.errors import UsageError

    for name in ("price_in", "price_out"):
        value = getattr(request, name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0):
            raise UsageError(f"{F(name)} must be a price >= 0 per 1M tokens; got {value}")


def open_judge(spec: Any) -> Any:
    """The judge client of a request's :class:`~rankgate.judges.JudgeSpec`, options first and then the
    RANKGATE_JUDGE* environment; the lexical judge takes no url, model or key (the environment's are for another
    judge). Every flow that judges opens its client here."""
    from rankgate.errors import F, UsageError

    settings = spec.settings()
    if settings["backend"] == "lexical":
        if spec.url or spec.model:
            raise UsageError(f"{F.url}/{F.model} are for {F(backend='openai')} (or your own judge); "
                             "the lexical judge calls no model")
        settings.update(url=None, model=None, key_env=None)
    return spec.open(settings)
