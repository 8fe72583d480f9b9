"""The options of the component experiments, shared by the commands that run them (evaluate, compare, report);
the experiments themselves run in the flows (:mod:`rankgate.flows.evaluate`)."""

from __future__ import annotations

import argparse

__all__ = ["add_component_options", "add_enforce_as_of"]


def add_enforce_as_of(p: argparse.ArgumentParser) -> None:
    p.add_argument("--enforce-as-of", action="store_true",
                   help="freshness what-if: drop retrieved items whose doc_version is newer than the query's as_of "
                        "(gold field), score what is left, and show the change from the run as logged")


def add_component_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--routing", action="store_true",
                   help="routing: coverage of each query's expected_source (gold) by the items' source (run), the "
                        "misroute matrix and per-source recall@k (k: --k, default 5)")
    p.add_argument("--entity-linking", action="store_true",
                   help="entity linking: precision, recall and F1 of the run's linked_entities against the gold "
                        "entities, per query, beside chunk recall@k")
