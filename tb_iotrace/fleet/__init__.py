"""The fleet dataset: many jobs' I/O as one Parquet dataset that DuckDB and Spark query.

``tb-iotrace fleet build`` (:mod:`tb_iotrace.cli.fleet`) opens the sources as ``tb-iotrace
report`` does and hands each host's report document to :func:`tables.host_tables`; the
parts are written by :mod:`.dataset`; :mod:`.engines` runs SQL over them and
:mod:`.reports` holds the ready reports. docs/fleet.md is the user's guide.

Needs the ``fleet`` extra (duckdb, pyarrow; pyspark and a Java runtime for Spark); nothing
here imports them until it is used.
"""
from __future__ import annotations

from tb_iotrace.fleet.dataset import Dataset, stamp, write_parts
from tb_iotrace.fleet.deps import FleetError
from tb_iotrace.fleet.engines import ENGINES, Result, query
from tb_iotrace.fleet.reports import REPORTS, sql_of
from tb_iotrace.fleet.rows import TABLES, Layout, host_tables

__all__ = ["Dataset", "stamp", "write_parts", "FleetError", "ENGINES", "Result", "query", "REPORTS", "sql_of",
           "TABLES", "Layout", "host_tables"]
