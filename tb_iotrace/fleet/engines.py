"""SQL over the fleet dataset: DuckDB embedded, or Spark (local or a cluster).

Both register the tables (``files``, ``hosts``, ``steps``, ``findings``, ``checkpoints``) as views over the
parts the manifest lists plus the table's schema file (so every column exists even where
no part has a row), columns matched by name (a part may have columns others lack), and
return :class:`Result`: column names and rows of plain Python values (:func:`plain`), so
the same SQL gives the same rows from both. The run and host are read from the parts'
own columns: no engine decodes them from the folder names.
"""
from __future__ import annotations

import contextlib
import datetime
import decimal
import math
import os
import tempfile
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from tb_iotrace.fleet.dataset import Dataset
from tb_iotrace.fleet.deps import FleetError, require
from tb_iotrace.fleet.rows import TABLES

ENGINES = ("duckdb", "spark")
SPARK_CONF = {
    "spark.driver.memory": "1g",
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.sql.session.timeZone": "UTC",
    "spark.ui.showConsoleProgress": "false",
}
# local mode only: a short-lived JVM starts about twice as fast on the quick JIT alone,
# listing the parts is cheaper in the driver than as a Spark job, and a part (one host, tens
# of KB) is not charged as 4 MB when Spark packs files into tasks (1,000 hosts: 2 tasks
# instead of 32, a count 2x faster)
SPARK_LOCAL_CONF = {
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
    "spark.sql.sources.parallelPartitionDiscovery.threshold": "1000000",
    "spark.sql.files.openCostInBytes": "65536",
}


@dataclass
class Result:
    columns: list[str]
    rows: list[tuple[Any, ...]]

    def records(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, r)) for r in self.rows]


def plain(v: Any) -> Any:
    """An engine's value as plain Python: decimals as int (whole) or float, non-finite floats
    as None, dates as ISO text, bytes as hex, structs as dicts."""
    if isinstance(v, bool) or v is None or isinstance(v, (int, str)):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, decimal.Decimal):
        if not v.is_finite():
            return None
        return int(v) if v == v.to_integral_value() else float(v)
    if isinstance(v, (datetime.datetime, datetime.date, datetime.time)):
        return v.isoformat()
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v).hex()
    if hasattr(v, "asDict"):                     # a Spark Row (a struct)
        return {k: plain(x) for k, x in v.asDict().items()}
    if isinstance(v, dict):
        return {str(k): plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    return str(v)


def _files(ds: Dataset, table: str) -> list[str]:
    sf = ds.schema_file(table)
    return ([sf] if sf else []) + ds.parts(table)


def one_line(exc: BaseException) -> str:
    """An engine's error message as one line (Spark's carry a JVM stack and SQL context)."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    return lines[0] if lines else type(exc).__name__


class DuckDB:
    """DuckDB in this process, views over the parts."""

    def __init__(self, ds: Dataset) -> None:
        duckdb = require("duckdb")
        self._error = duckdb.Error
        self.con = duckdb.connect(":memory:")
        self.con.execute("SET parquet_metadata_cache = true")   # several queries read the footers once
        for t in TABLES:
            files = _files(ds, t)
            if not files:
                continue
            listed = ", ".join("'" + f.replace("'", "''") + "'" for f in files)
            # matching columns by name reads every footer before the query starts: only
            # where some part's columns differ
            by_name = "false" if ds.uniform(t) else "true"
            self.con.execute(f"CREATE VIEW {t} AS SELECT * FROM read_parquet([{listed}], "
                             f"union_by_name = {by_name}, hive_partitioning = false)")

    def query(self, sql: str) -> Result:
        try:
            cur = self.con.execute(sql)
            cols = [d[0] for d in cur.description] if cur.description else []
            rows = cur.fetchall() if cur.description else []
        except self._error as exc:
            raise FleetError(f"query failed: {one_line(exc)}") from None
        return Result(cols, [tuple(plain(v) for v in r) for r in rows])

    def close(self) -> None:
        self.con.close()


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[str]:
    """Send what the JVM writes to stderr (log4j's start-up lines) to a file; yield its
    path (read it when the start fails)."""
    fd, path = tempfile.mkstemp(prefix="tbio-spark-", suffix=".log")
    saved = os.dup(2)
    try:
        os.dup2(fd, 2)
        yield path
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(fd)


def spark_schema(schema: Any) -> Any:
    """An Arrow schema of the fleet tables as Spark's (unsigned 64-bit as DECIMAL(20,0), as
    Spark reads it from Parquet)."""
    from pyspark.sql import types as T

    pa = require("pyarrow")
    fields = []
    for f in schema:
        t = f.type
        if pa.types.is_string(t) or pa.types.is_large_string(t):
            st: Any = T.StringType()
        elif pa.types.is_boolean(t):
            st = T.BooleanType()
        elif pa.types.is_uint64(t):
            st = T.DecimalType(20, 0)
        elif pa.types.is_integer(t):
            st = T.LongType() if t.bit_width > 32 or pa.types.is_unsigned_integer(t) else T.IntegerType()
        elif pa.types.is_floating(t):
            st = T.DoubleType()
        else:
            raise FleetError(f"column {f.name}: type {t} has no Spark equivalent here")
        fields.append(T.StructField(f.name, st, True))
    return T.StructType(fields)


class Spark:
    """A SparkSession (``master``: ``local[*]`` by default, or a cluster's URL), views over
    the parts. Spark needs a Java runtime (Debian: default-jre-headless)."""

    def __init__(self, ds: Dataset, master: str | None = None) -> None:
        require("pyspark")
        from pyspark.sql import SparkSession

        master = master or "local[*]"
        builder = SparkSession.builder.master(master).appName("tb-iotrace fleet")
        for k, v in {**SPARK_CONF, **(SPARK_LOCAL_CONF if master.startswith("local") else {})}.items():
            builder = builder.config(k, v)
        with _quiet_stderr() as log, warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)    # pyspark on pandas 3
            try:
                self.spark = builder.getOrCreate()
            except Exception as exc:
                tail = ""
                with contextlib.suppress(OSError):
                    with open(log, errors="replace") as fh:
                        got = [ln.strip() for ln in fh if ln.strip()]
                    tail = f" ({got[-1]})" if got else ""
                hint = " (is Java installed? Debian: apt-get install default-jre-headless)" if "JAVA" in str(exc) else ""
                raise FleetError(f"Spark did not start: {one_line(exc)}{hint}{tail}") from None
            finally:
                with contextlib.suppress(OSError):
                    os.unlink(log)
        self.spark.sparkContext.setLogLevel("ERROR")
        pq = require("pyarrow.parquet")
        for t in TABLES:
            sf, parts = ds.schema_file(t), ds.parts(t)
            if sf is None:
                continue
            struct = spark_schema(pq.read_schema(sf))
            # the schema file has every column: Spark need not read the parts' footers to merge
            df = self.spark.read.schema(struct).parquet(*parts) if parts else self.spark.createDataFrame([], struct)
            df.createOrReplaceTempView(t)

    def query(self, sql: str) -> Result:
        try:
            df = self.spark.sql(sql)
            cols = list(df.columns)
            rows = df.collect()
        except Exception as exc:   # AnalysisException, ParseException, a JVM error
            raise FleetError(f"query failed: {one_line(exc)}") from None
        return Result(cols, [tuple(plain(v) for v in r) for r in rows])

    def close(self) -> None:
        self.spark.stop()


def engine(ds: Dataset, name: str = "duckdb", master: str | None = None) -> DuckDB | Spark:
    if name == "duckdb":
        if master:
            raise FleetError("--master is Spark's: use it with --engine spark")
        return DuckDB(ds)
    if name == "spark":
        return Spark(ds, master)
    raise FleetError(f"unknown engine {name!r} (engines: {', '.join(ENGINES)})")


def query(ds: Dataset, sql: str | Sequence[str], name: str = "duckdb", master: str | None = None) -> list[Result]:
    """Run each SQL statement on one engine session."""
    eng = engine(ds, name, master)
    try:
        return [eng.query(s) for s in ([sql] if isinstance(sql, str) else sql)]
    finally:
        eng.close()
