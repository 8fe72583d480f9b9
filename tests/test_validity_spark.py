"""The trace side of ``rankgate validity`` (per query key, each outcome's applicable and bad requests) gives the same
counts on Spark as on DuckDB: whole numbers, so exactly.

Local mode, one SparkSession for the module. Skips (one line) without pyspark or Java; CI installs both and sets
RANKGATE_REQUIRE_SPARK=1, which turns the skip into a failure (as tests/test_traces_spark.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from rankgate.traces import read_traces
from rankgate.traces.validity import outcome_counts

from .test_traces_spark import _need_spark

pytestmark = pytest.mark.slow  # the full tier: Spark in local mode

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))


@pytest.fixture(scope="module")
def spark():
    _need_spark()
    from rankgate.traces.engines import spark_session

    session = spark_session("local[2]")
    yield session
    session.stop()


def _same(a, b) -> None:
    assert a.keys == b.keys
    assert (a.total, a.unkeyed, dict(a.absent)) == (b.total, b.unkeyed, dict(b.absent))
    assert np.array_equal(a.requests, b.requests)
    for o in a.n:
        assert np.array_equal(a.n[o], b.n[o]), o
        assert np.array_equal(a.k[o], b.k[o]), o


@pytest.mark.parametrize("key", ["text", "query_key"])
def test_spark_counts_equal_duckdbs(spark, tmp_path, key) -> None:
    from trace_gen import Spec, generate

    from rankgate.traces.engines import DuckDBBackend, SparkBackend

    truth = generate(tmp_path, Spec(days=7, per_day=120, seed=11), formats=("parquet",))
    path = str(tmp_path / truth["files"]["parquet"][0])
    duck = outcome_counts(read_traces(path, engine_items=True), backend=DuckDBBackend(), threshold=0.5, key=key)
    sp = outcome_counts(read_traces(path), backend=SparkBackend(spark), threshold=0.5, key=key)
    assert int(duck.requests.sum()) > 0 and int(duck.k["low_confidence"].sum()) > 0
    _same(duck, sp)


def test_duckdb_gives_the_same_counts_with_items_in_the_file_or_in_arrow(tmp_path) -> None:
    """Not Spark, but the same promise on one engine: items read in place from Parquet, or held as Arrow."""
    from trace_gen import Spec, generate

    truth = generate(tmp_path, Spec(days=7, per_day=120, seed=12), formats=("parquet",))
    path = str(tmp_path / truth["files"]["parquet"][0])
    _same(outcome_counts(read_traces(path, engine_items=True), threshold=0.5),
          outcome_counts(read_traces(path), threshold=0.5))
