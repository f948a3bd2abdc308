"""tb_iotrace.export.object_tables: the objects and requests tables of the Parquet/CSV export,
written with their header even when no request was made."""
from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest

from tb_iotrace.export.object_tables import write_objects, write_requests
from tb_iotrace.store.objcolumns import COLUMNS


def req(key: str, op: str = "GET", nbytes: int = 100, status: int = 200) -> dict[str, Any]:
    return {"object": f"s3://b/{key}", "service": "s3", "bucket": "b", "key": key, "op": op,
            "range_start": -1, "range_end": -1, "status": status, "error": "", "bytes": nbytes,
            "start_ns": 10, "ttfb_ns": 20, "end_ns": 30, "tid": 1, "pid": 2, "client": "urllib3", "complete": True}


class Source:
    def __init__(self, host: str, reqs: list[dict[str, Any]]) -> None:
        self.run, self.host, self._reqs = "run1", host, reqs

    def objects(self) -> list[dict[str, Any]]:
        return self._reqs


def rows(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with open(path, newline="") as fh:
        r = csv.DictReader(fh)
        return list(r.fieldnames or []), list(r)


def test_one_object_row_per_host_and_object(tmp_path: Path) -> None:
    sources = [Source("a", [req("x"), req("x", nbytes=50), req("y", op="HEAD", nbytes=0)]), Source("b", [req("x")])]
    n = write_objects(str(tmp_path / "o.csv"), sources, "csv")
    head, got = rows(tmp_path / "o.csv")
    assert n == 3 and head[:6] == ["run", "host", "object", "service", "bucket", "key"]
    assert any(h.startswith("OBJ_F_") for h in head) and "OBJ_BYTES_READ" in head
    by = {(r["host"], r["key"]): r for r in got}
    assert set(by) == {("a", "x"), ("a", "y"), ("b", "x")}
    assert by[("a", "x")]["OBJ_BYTES_READ"] == "150" and by[("b", "x")]["OBJ_BYTES_READ"] == "100"
    assert by[("a", "y")]["OBJ_BYTES_READ"] == "0"


def test_one_request_row_per_request(tmp_path: Path) -> None:
    n = write_requests(str(tmp_path / "r.csv"), [Source("a", [req("x"), req("z", status=503)])], "csv")
    head, got = rows(tmp_path / "r.csv")
    assert n == 2 and head == ["run", "host", *COLUMNS]
    assert [(r["key"], r["status"]) for r in got] == [("x", "200"), ("z", "503")]


def test_no_request_still_writes_the_headers(tmp_path: Path) -> None:
    assert write_objects(str(tmp_path / "o.csv"), [Source("a", [])], "csv") == 0
    assert write_requests(str(tmp_path / "r.csv"), [], "csv") == 0
    assert rows(tmp_path / "o.csv")[0][:3] == ["run", "host", "object"]
    assert rows(tmp_path / "r.csv") == (["run", "host", *COLUMNS], [])


def test_parquet_column_types(tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    write_requests(str(tmp_path / "r.parquet"), [Source("a", [req("x")])], "parquet")
    schema = pq.read_table(tmp_path / "r.parquet").schema
    kinds = {f.name: str(f.type) for f in schema}
    assert kinds["complete"] == "bool" and kinds["bytes"] == "int64" and kinds["op"] == "string"
    assert kinds["host"] == "string" and kinds["start_ns"] == "int64"
    write_objects(str(tmp_path / "o.parquet"), [Source("a", [req("x")])], "parquet")
    kinds = {f.name: str(f.type) for f in pq.read_table(tmp_path / "o.parquet").schema}
    assert kinds["OBJ_BYTES_READ"] == "int64" and all(v == "double" for k, v in kinds.items() if k.startswith("OBJ_F_"))
