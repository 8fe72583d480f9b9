"""User judges (``module:Class``) used by the judge tests."""

from __future__ import annotations

import threading


class CountingJudge:
    """Grades a passage 2 if it contains the question's last word; counts calls; cached under a version."""

    version = "1"
    calls = 0
    _lock = threading.Lock()

    def judge(self, task, fields, *, seed):
        with CountingJudge._lock:
            CountingJudge.calls += 1
        if "boom" in fields.get("passage", ""):
            raise RuntimeError("model exploded")
        if "bad" in fields.get("passage", ""):
            return 7
        word = fields["question"].split()[-1]
        return 2 if word in fields["passage"] else 0


class SeedJudge:
    """No version: never cached. The label flips with the seed's parity (to exercise repeats)."""

    def judge(self, task, fields, *, seed):
        return seed % 2

    def identity(self):
        return {"model": "seed-parity"}


class NotAJudge:
    pass


class NeedsModel:
    def __init__(self, model):
        self.model = model

    def judge(self, task, fields, *, seed):
        return 1


from rankgate.judges.testing import ReplayJudge  # noqa: E402 - a user's test module would import it at the top


class Replay(ReplayJudge):
    """A replay table given to the CLI as ``--judge tests.judge_plugins:Replay``; counts its instances."""

    instances = 0

    def __init__(self) -> None:
        Replay.instances += 1
        super().__init__({"context_relevance": {"Refunds: 30 days.": 2, "Our office is in Berlin.": 0}})
