"""tb_iotrace.export.flat_tables: the per-file and per-call tables (CSV, Parquet), written in
chunks and renamed together only when all are complete."""
from __future__ import annotations

import csv
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tb_iotrace.base.recordid import record_id
from tb_iotrace.export import flat_tables
from tb_iotrace.export.flat_tables import OPS_COLUMNS, export


class Source:
    """What the export reads of a source: run, host, files(), io_columns(), objects()."""

    def __init__(self, run: str, host: str, n: int, files: list[dict[str, Any]] | None = None) -> None:
        self.run, self.host, self.n = run, host, n
        self._files = files if files is not None else []

    def files(self) -> list[dict[str, Any]]:
        return self._files

    def io_columns(self) -> tuple[dict[str, np.ndarray], dict[int, str]] | None:
        if self.n < 0:
            return None
        i = np.arange(self.n, dtype=np.int64)
        return ({"start_ns": 1000 + i, "end_ns": 1001 + i, "op": np.array(["read"] * self.n, dtype=object),
                 "path": np.array([f"/d/{k % 2}" for k in range(self.n)], dtype=object), "offset": i * 10,
                 "requested": np.full(self.n, 10), "returned": np.full(self.n, 10), "fd": np.full(self.n, 3),
                 "errno": np.zeros(self.n, np.int64), "tid": np.full(self.n, 9)}, {9: "w"})

    def objects(self) -> list[dict[str, Any]]:
        return []


FILES = [{"module": "POSIX", "path": "/d/0", "counters": {"POSIX_READS": 3, "POSIX_RENAMED_FROM": 0},
          "fcounters": {"POSIX_F_READ_TIME": 0.5}},
         {"module": "STDIO", "path": "/d/1", "counters": {"STDIO_OPENS": 1}, "fcounters": {}}]


def read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_csv_tables_hold_every_file_and_call_across_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(flat_tables, "CHUNK", 3)                   # 7 calls: three chunks
    sources = [Source("r1", "a", 7, FILES), Source("r1", "b", -1)]
    counts = export(sources, str(tmp_path), "csv", progress=False)
    assert counts == {"files": 2, "ops": 7, "objects": 0, "requests": 0}
    files = read_csv(tmp_path / "files.csv")
    assert list(files[0])[:5] == ["run", "host", "module", "path", "record_id"]
    assert files[0]["POSIX_READS"] == "3" and files[1]["POSIX_READS"] == ""   # a module without it: empty
    assert files[1]["STDIO_OPENS"] == "1" and files[0]["POSIX_F_READ_TIME"] == "0.5"
    assert int(files[0]["record_id"]) == record_id("/d/0")
    ops = read_csv(tmp_path / "ops.csv")
    assert tuple(ops[0]) == OPS_COLUMNS
    assert [int(r["start_ns"]) for r in ops] == list(range(1000, 1007))
    assert {r["host"] for r in ops} == {"a"} and ops[6]["offset"] == "60"
    assert read_csv(tmp_path / "requests.csv") == [] and (tmp_path / "objects.csv").exists()
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".")]    # no temporary file left


def test_parquet_types(tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    export([Source("r", "h", 4, FILES)], str(tmp_path), "parquet", progress=False)
    files = pq.read_table(tmp_path / "files.parquet")
    assert str(files.schema.field("record_id").type) == "uint64"
    assert str(files.schema.field("POSIX_READS").type) == "int64"
    assert str(files.schema.field("POSIX_F_READ_TIME").type) == "double"
    ops = pq.read_table(tmp_path / "ops.parquet")
    assert ops.column_names == list(OPS_COLUMNS) and ops.num_rows == 4
    assert ops.column("path").to_pylist() == ["/d/0", "/d/1", "/d/0", "/d/1"]


def test_a_failure_leaves_the_previous_tables_as_they_were(tmp_path: Path) -> None:
    export([Source("r", "h", 2, FILES)], str(tmp_path), "csv", progress=False)
    before = {p: (tmp_path / p).read_bytes() for p in os.listdir(tmp_path)}

    class Broken(Source):
        def io_columns(self) -> Any:
            raise OSError("disk went away")

    with pytest.raises(OSError):
        export([Source("r", "h", 5, FILES), Broken("r", "x", 1)], str(tmp_path), "csv", progress=False)
    assert {p: (tmp_path / p).read_bytes() for p in os.listdir(tmp_path)} == before


def test_renamed_from_takes_the_darshan_id(tmp_path: Path) -> None:
    stored = 12345
    files = [{"module": "POSIX", "path": "/d/new", "record_id": stored, "counters": {}, "fcounters": {}},
             {"module": "POSIX", "path": "/d/b", "counters": {"POSIX_RENAMED_FROM": stored}, "fcounters": {}}]
    export([Source("r", "h", 0, files)], str(tmp_path), "csv", progress=False)
    rows = read_csv(tmp_path / "files.csv")
    darshan = record_id("/d/new")
    assert int(rows[0]["record_id"]) == darshan
    assert int(rows[1]["POSIX_RENAMED_FROM"]) % (1 << 64) == darshan
