"""tb_iotrace.fleet.engines, DuckDB and what needs no JVM: ``plain`` turns an engine's values into
plain Python, ``one_line`` keeps an error's first line, the DuckDB views read the manifest's
parts plus the schema file (columns matched by name where parts differ, a dataset root with
quotes or escapes in its name), errors are one-line FleetErrors, ``engine``/``query`` refuse bad
choices and close their session, and ``spark_schema`` maps the Arrow types as Spark reads them."""
from __future__ import annotations

import datetime
import decimal
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tb_iotrace.fleet import engines
from tb_iotrace.fleet.dataset import FORMAT, SCHEMA_DIR, Dataset, write_parts
from tb_iotrace.fleet.deps import FleetError
from tb_iotrace.fleet.engines import DuckDB, Result, engine, one_line, plain, query, spark_schema

BIG = 2**64 - 5


def _dataset(root: Path, uniform: bool = False) -> Dataset:
    """Two hosts' ``hosts`` parts, the second with a column the first lacks; a schema file with
    every column; ``files`` with its schema file and no part."""
    a = pa.table({"run": ["r"], "host": ["h1"], "bytes": pa.array([BIG], pa.uint64()), "t": [1.5]})
    b = pa.table({"run": ["r"], "host": ["h2\x1b[31m"], "bytes": pa.array([7], pa.uint64()), "t": [float("nan")],
                  "extra": ["x"]})
    parts = write_parts(root, 0, "r", "h1", {"hosts": a}) + write_parts(root, 1, "r", "h2", {"hosts": b})
    (root / SCHEMA_DIR).mkdir(parents=True)
    pq.write_table(pa.schema([*b.schema]).empty_table(), root / SCHEMA_DIR / "hosts.parquet")
    pq.write_table(pa.schema([("run", pa.string()), ("path", pa.string())]).empty_table(),
                   root / SCHEMA_DIR / "files.parquet")
    manifest = {"format": FORMAT, "next": 2, "uniform": {"hosts": uniform},
                "sources": {"s0": {"parts": [parts[0]], "hosts": [["r", "h1"]]},
                            "s1": {"parts": [parts[1], "../outside/part-9.parquet"], "hosts": [["r", "h2"]]}}}
    return Dataset(root, manifest)


@pytest.mark.parametrize("value,want", [
    (True, True), (None, None), (3, 3), ("x", "x"), (1.25, 1.25), (float("nan"), None), (float("-inf"), None),
    (decimal.Decimal("18446744073709551611"), 18446744073709551611), (decimal.Decimal("2.50"), 2.5),
    (decimal.Decimal("NaN"), None), (decimal.Decimal("Infinity"), None),
    (datetime.date(2024, 1, 2), "2024-01-02"), (datetime.datetime(2024, 1, 2, 3, 4, 5), "2024-01-02T03:04:05"),
    (b"\x00\xff", "00ff"), (memoryview(b"ab"), "6162"), ((1, float("inf")), [1, None]),
    ({1: {"k": decimal.Decimal("3")}}, {"1": {"k": 3}}),
])
def test_plain_values(value: Any, want: Any) -> None:
    got = plain(value)
    assert got == want and type(got) is type(want)


def test_plain_struct_rows_and_unknown_objects() -> None:
    class Row:
        def asDict(self) -> dict[str, Any]:
            return {"a": decimal.Decimal("1"), "b": float("nan")}

    assert plain(Row()) == {"a": 1, "b": None}
    assert plain(pa.scalar(5)) == "5"             # anything else: its text


def test_one_line() -> None:
    assert one_line(ValueError("\n  Catalog Error: x\n  LINE 1: SELECT\n")) == "Catalog Error: x"
    assert one_line(RuntimeError("")) == "RuntimeError"
    assert one_line(KeyError()) == "KeyError"


def test_duckdb_reads_parts_by_name_and_plain_values(tmp_path: Path) -> None:
    ds = _dataset(tmp_path / "ds")
    eng = DuckDB(ds)
    try:
        got = eng.query("SELECT host, bytes, t, extra FROM hosts ORDER BY host")
        assert got.columns == ["host", "bytes", "t", "extra"]
        assert got.rows == [("h1", BIG, 1.5, None), ("h2\x1b[31m", 7, None, "x")]
        assert eng.query("SELECT SUM(bytes) AS s FROM hosts").records() == [{"s": BIG + 7}]
        assert eng.query("SELECT COUNT(*) AS n, MAX(path) AS p FROM files").records() == [{"n": 0, "p": None}]
        assert eng.query("CREATE TEMP TABLE k AS SELECT 1 AS one").records() == [{"Count": 1}]
    finally:
        eng.close()


def test_duckdb_dataset_root_with_quotes_and_escapes(tmp_path: Path) -> None:
    ds = _dataset(tmp_path / "it's \x1b[2J\nds")
    (got,) = query(ds, "SELECT COUNT(*) AS n FROM hosts")
    assert got.rows == [(2,)]


def test_duckdb_errors_are_one_line_fleet_errors(tmp_path: Path) -> None:
    ds = _dataset(tmp_path / "ds", uniform=True)
    eng = DuckDB(ds)
    try:
        for sql, word in (("SELECT nope FROM hosts", "nope"), ("SELEC 1", "syntax"),
                          ("SELECT * FROM steps", "steps")):      # no schema file, no part: no view
            with pytest.raises(FleetError) as got:
                eng.query(sql)
            text = str(got.value)
            assert text.startswith("query failed: ") and "\n" not in text and word in text.lower()
    finally:
        eng.close()


def test_engine_choices(tmp_path: Path) -> None:
    ds = _dataset(tmp_path / "ds")
    with pytest.raises(FleetError, match="--master is Spark's"):
        engine(ds, "duckdb", master="local[1]")
    with pytest.raises(FleetError) as got:
        engine(ds, "oracle\x1b[31m")
    assert str(got.value) == "unknown engine 'oracle\\x1b[31m' (engines: duckdb, spark)"


def test_query_runs_statements_in_one_session_and_closes_it(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    ds = _dataset(tmp_path / "ds")
    closed: list[int] = []
    real = DuckDB.close
    monkeypatch.setattr(DuckDB, "close", lambda self: (closed.append(1), real(self)))
    got = query(ds, ["CREATE TEMP TABLE k AS SELECT 41 AS v", "SELECT v + 1 AS w FROM k"])
    assert got[1] == Result(["w"], [(42,)]) and len(got) == 2 and closed == [1]
    with pytest.raises(FleetError):
        query(ds, ["SELECT 1", "SELECT * FROM nowhere"])
    assert closed == [1, 1]


def test_spark_schema_maps_arrow_types_without_a_jvm() -> None:
    from pyspark.sql import types as T

    sc = pa.schema([("s", pa.string()), ("ls", pa.large_string()), ("b", pa.bool_()), ("u64", pa.uint64()),
                    ("u32", pa.uint32()), ("i32", pa.int32()), ("i16", pa.int16()), ("i64", pa.int64()),
                    ("f", pa.float32())])
    got = {f.name: f.dataType for f in spark_schema(sc).fields}
    assert got == {"s": T.StringType(), "ls": T.StringType(), "b": T.BooleanType(), "u64": T.DecimalType(20, 0),
                   "u32": T.LongType(), "i32": T.IntegerType(), "i16": T.IntegerType(), "i64": T.LongType(),
                   "f": T.DoubleType()}
    assert all(f.nullable for f in spark_schema(sc).fields)
    with pytest.raises(FleetError, match="column when: type timestamp.* has no Spark equivalent"):
        spark_schema(pa.schema([("when", pa.timestamp("ns"))]))


def test_quiet_stderr_sends_fd2_to_a_file_and_puts_it_back() -> None:
    before = os.fstat(2)
    with engines._quiet_stderr() as log:
        os.write(2, b"log4j: starting\n")
        assert os.fstat(2).st_ino != before.st_ino
    try:
        assert os.fstat(2).st_ino == before.st_ino and os.fstat(2).st_dev == before.st_dev
        assert Path(log).read_bytes() == b"log4j: starting\n"
    finally:
        os.unlink(log)

