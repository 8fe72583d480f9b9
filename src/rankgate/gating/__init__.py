"""Decisions: the ship criteria (:mod:`.config`), the gate's verdict (:mod:`.decide`), baselines and the diagnosis."""
