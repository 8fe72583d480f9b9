"""How every bootstrap interval is drawn: :class:`Statistics` (seed, resamples, confidence), defined once.

The flows' requests hold one, the command line builds one from ``--seed``, ``--resamples`` and ``--confidence``,
and ``summary.json`` records it under ``statistics``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Statistics", "taken"]


@dataclass(frozen=True)
class Statistics:
    """Seed, resamples (0: no intervals) and confidence of every bootstrap interval a flow draws."""

    seed: int = 0
    resamples: int = 2000
    confidence: float = 0.95

    def __post_init__(self) -> None:
        from rankgate._util.constraints import CONFIDENCE, RESAMPLES, SEED, check

        note = ""
        if isinstance(self.resamples, int) and self.resamples > RESAMPLES.maximum:  # type: ignore[operator]
            note = (f"the intervals would need about {_memory(self.resamples)} per metric; 2,000 to 10,000 resamples "
                    "are plenty")
        # (a wrong type is named as the parameter of Statistics, a bound as the field, which the command line
        # names by its option; numpy scalars made plain)
        for param, attr in ((RESAMPLES, "resamples"), (CONFIDENCE, "confidence"), (SEED, "seed")):
            value = check(param, getattr(self, attr), caller="Statistics", field=attr,
                          note=note if attr == "resamples" else "")
            object.__setattr__(self, attr, value)

    def to_dict(self) -> dict[str, Any]:
        """As ``summary.json`` records them under ``statistics``."""
        return {"seed": self.seed, "resamples": self.resamples, "confidence": self.confidence}


def _memory(resamples: int) -> str:
    """Memory the bootstrap needs per metric for ``resamples`` means (8 bytes each, kept twice)."""
    size = resamples * 16
    return f"{size / 2**30:,.0f} GiB" if size >= 2**30 else f"{size / 2**20:,.0f} MiB"


def taken(statistics: Statistics | None, seed: int, resamples: int, confidence: float, *, caller: str,
          defaults: tuple[int, int, float] = (0, 2000, 0.95)) -> tuple[int, int, float]:
    """The seed, resamples and confidence a statistics function draws with: ``statistics`` whole when it is given
    (the loose keywords then left at their ``defaults``), else the loose keywords as given.

    Every interval, comparison, segment and sweep function takes ``statistics=`` this way, so a caller holding a
    :class:`Statistics` (every flow's request does) passes it whole."""
    if statistics is None:
        return seed, resamples, confidence
    if not isinstance(statistics, Statistics):
        from rankgate.errors import UsageError

        raise UsageError(f"The 'statistics' parameter of {caller} must be a rankgate Statistics; got "
                         f"{type(statistics).__name__}")
    both = [name for name, value, default in zip(("seed", "resamples", "confidence"), (seed, resamples, confidence),
                                                 defaults) if value != default]
    if both:
        from rankgate.errors import UsageError

        raise UsageError(f"{caller} takes the bootstrap's options as statistics= or as keywords, not both: drop "
                         f"{', '.join(both)} or set {'it' if len(both) == 1 else 'them'} in the Statistics")
    return statistics.seed, statistics.resamples, statistics.confidence
