"""Run history: every rankgate summary recorded over time in a store of Parquet files, queried with DuckDB.

:mod:`~rankgate.history.entries` reads a summary (evaluate's ``summary.json``, a gate outcome, the traces' and
the answers' summaries) as one entry; :mod:`~rankgate.history.store` keeps the entries (one Parquet file each,
written whole under a lock); :mod:`~rankgate.history.series` turns the rows into what people read: each metric's
series with its version changes, the gates' breaches and how long they took to recover, the owners' review.
``rankgate history`` (docs/history.md) is the command; :mod:`rankgate.flows.history` its flows.
"""
