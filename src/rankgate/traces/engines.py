"""The engines the trace analysis runs on: DuckDB (default, embedded) and Apache Spark.

:class:`TraceBackend` is what the analysis needs from an engine: take Arrow tables, run a SQL
statement of :mod:`.queries`, keep an intermediate result, hand rows back. Both engines run the
same statements; only :class:`~.queries.Dialect` differs. DuckDB and pyspark are imported when a
backend is made, never by ``import rankgate``.

A Spark backend is given a ``SparkSession`` (yours, on a cluster) or makes one from a master URL
(``local[2]``, ``spark://host:7077``, ``yarn``); it never looks for a global session by itself.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from typing import Any, Protocol

from rankgate.errors import F, UsageError
from rankgate.traces.queries import DUCKDB, SPARK, Dialect

__all__ = ["DuckDBBackend", "SparkBackend", "TraceBackend", "make_backend"]


class TraceBackend(Protocol):
    """An engine the analysis can run on."""

    name: str
    dialect: Dialect

    def register(self, name: str, table: Any) -> None:
        """Make a pyarrow Table queryable as ``name``."""

    def keep(self, name: str, sql: str) -> None:
        """Compute ``sql`` once and keep it as ``name`` for the following statements."""

    def view(self, name: str, sql: str) -> None:
        """Name ``sql`` for the following statements, computed where it is used."""

    def rows(self, sql: str) -> list[tuple[Any, ...]]:
        """Run ``sql``; its rows as tuples of Python values."""

    def close(self) -> None:
        """Free what the backend holds (temporary files, cached tables)."""


class DuckDBBackend:
    """DuckDB in this process (in memory, spilling to a temporary folder when it must)."""

    name = "duckdb"
    dialect = DUCKDB

    def __init__(self, connection: Any = None, *, threads: int | None = None, memory_limit: str | None = None) -> None:
        import duckdb

        self._con = connection if connection is not None else duckdb.connect()
        if threads:
            self._con.execute(f"SET threads = {int(threads)}")
        self._con.execute("SET TimeZone = 'UTC'")
        # results never depend on row order (every statement groups or orders), and keeping the
        # insertion order costs memory on large inputs
        self._con.execute("SET preserve_insertion_order = false")
        if memory_limit:
            self._con.execute(f"SET memory_limit = '{memory_limit}'")
        self._names: list[str] = []

    # A name may be a registered Arrow table in one analysis and a kept table or a view in the next one on
    # the same connection (the per-request item rows come from the items' columns, or from a statement):
    # what an earlier analysis left under the name is dropped when DuckDB refuses to replace it.
    def register(self, name: str, table: Any) -> None:
        self._replacing(name, lambda: self._con.register(name, table))
        self._names.append(name)

    def keep(self, name: str, sql: str) -> None:
        self._replacing(name, lambda: self._con.execute(f"CREATE OR REPLACE TEMP TABLE {name} AS {sql}"))

    def view(self, name: str, sql: str) -> None:
        self._replacing(name, lambda: self._con.execute(f"CREATE OR REPLACE TEMP VIEW {name} AS {sql}"))

    def _replacing(self, name: str, make: Any) -> None:
        import duckdb

        try:
            make()
        except duckdb.CatalogException:  # an object of another kind holds the name
            with contextlib.suppress(Exception):
                self._con.unregister(name)
            for kind in ("VIEW", "TABLE"):
                with contextlib.suppress(duckdb.CatalogException):
                    self._con.execute(f"DROP {kind} IF EXISTS {name}")
            make()

    def rows(self, sql: str) -> list[tuple[Any, ...]]:
        return self._con.execute(sql).fetchall()

    def close(self) -> None:
        for name in self._names:
            with contextlib.suppress(Exception):  # best effort: the connection may be closing
                self._con.unregister(name)


class SparkBackend:
    """Apache Spark: the tables go to Parquet in a temporary folder, which Spark reads (on a cluster,
    put that folder on shared storage with ``staging=``). Intermediate results are cached."""

    name = "spark"
    dialect = SPARK

    def __init__(self, session: Any = None, *, master: str | None = None, staging: str | None = None) -> None:
        if session is None:
            session = spark_session(master or "local[2]")
        self.session = session
        self.session.conf.set("spark.sql.session.timeZone", "UTC")
        self._dir = tempfile.mkdtemp(prefix="rankgate-spark-", dir=staging)
        self._cached: list[str] = []

    def register(self, name: str, table: Any) -> None:
        import pyarrow.parquet as pq

        path = os.path.join(self._dir, f"{name}.parquet")
        pq.write_table(table, path, write_page_checksum=True)
        self.session.read.parquet(path).createOrReplaceTempView(name)

    def keep(self, name: str, sql: str) -> None:
        with _spark_errors():
            df = self.session.sql(sql)
            df.createOrReplaceTempView(name)
            self.session.catalog.cacheTable(name)
        self._cached.append(name)

    def view(self, name: str, sql: str) -> None:
        with _spark_errors():
            self.session.sql(sql).createOrReplaceTempView(name)

    def rows(self, sql: str) -> list[tuple[Any, ...]]:
        with _spark_errors():
            return [tuple(r) for r in self.session.sql(sql).collect()]

    def close(self) -> None:
        for name in self._cached:
            with contextlib.suppress(Exception):  # best effort on shutdown
                self.session.catalog.uncacheTable(name)
        shutil.rmtree(self._dir, ignore_errors=True)


@contextlib.contextmanager
def _spark_errors() -> Iterator[None]:
    """A Java heap exhausted in Spark is "out of memory" (the CLI's exit 3 with advice), not a bug report."""
    try:
        yield
    except Exception as exc:
        if "OutOfMemoryError" in str(exc):
            raise MemoryError("Spark ran out of Java heap; raise RANKGATE_SPARK_DRIVER_MEMORY or use a cluster") from None
        raise


def spark_session(master: str) -> Any:
    """A SparkSession for ``master`` (bound to 127.0.0.1 when local)."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise UsageError(f"{F(engine='spark')} needs pyspark (pip install 'rankgate[spark]') and Java 17") from None
    if not shutil.which("java") and not os.environ.get("JAVA_HOME"):
        raise UsageError(f"{F(engine='spark')} needs Java 17 (Debian: apt-get install openjdk-17-jre-headless)")
    builder = SparkSession.builder.master(master).appName("rankgate-traces")
    builder = (builder.config("spark.sql.session.timeZone", "UTC").config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false"))
    if master.startswith("local"):
        # one machine: a few shuffle partitions, not the cluster default of 200 (each is a task)
        # the driver is the executor too; Spark's 1 GB default runs out of heap on a million requests
        builder = (builder.config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1")
                   .config("spark.sql.shuffle.partitions", str(2 * (os.cpu_count() or 2)))
                   .config("spark.driver.memory", os.environ.get("RANKGATE_SPARK_DRIVER_MEMORY", "4g")))
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


def make_backend(engine: str | None, *, spark_master: str | None = None) -> TraceBackend:
    if engine in (None, "duckdb"):
        return DuckDBBackend()
    if engine == "spark":
        return SparkBackend(master=spark_master)
    raise UsageError(f"unknown engine {engine!r}; engines: duckdb, spark")
