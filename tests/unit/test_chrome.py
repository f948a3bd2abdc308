"""tb_iotrace.export.chrome: the Chrome trace-event document (one clock for every source, the I/O
calls and object requests as complete events with their args, gzip by name). Timelines of
captures are exported in test_cli_export."""
from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np

from tb_iotrace.export.chrome import MAX_TID, PID_STRIDE, export


class Source:
    has_timeline = False

    def __init__(self, host: str, origin_ns: int, calls: list[tuple], reqs: list[dict[str, Any]] | None = None):
        self.run, self.host, self._origin, self._calls, self._reqs = "run1", host, origin_ns, calls, reqs or []

    def origin_ns(self) -> int:
        return self._origin

    def nevents(self) -> int:
        return len(self._calls)

    def io_columns(self) -> tuple[dict[str, np.ndarray], dict[int, str]] | None:
        if not self._calls:
            return None
        names = ("start_ns", "end_ns", "op", "path", "offset", "requested", "returned", "fd", "errno", "tid")
        cols = {k: np.array([c[i] for c in self._calls], dtype=object if k in ("op", "path") else np.int64)
                for i, k in enumerate(names)}
        return cols, {7: "loader"}

    def objects(self) -> list[dict[str, Any]]:
        return self._reqs


def load(path: Path) -> dict[str, Any]:
    raw = path.read_bytes()
    return json.loads(gzip.decompress(raw) if path.suffix == ".gz" else raw)


def complete(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in doc["traceEvents"] if e["ph"] == "X"]


def test_io_calls_and_their_args(tmp_path: Path) -> None:
    calls = [(2_000_000, 2_500_000, "pread64", "/d/a", 4096, 100, 100, 3, 0, 7),
             (3_000_000, 3_001_000, "read", "/d/\"q\"", -1, 10, -1, 4, 5, 7)]
    n = export([Source("h", 1_000_000, calls)], str(tmp_path / "t.json"), progress=False)
    doc = load(tmp_path / "t.json")
    assert n == 2 and doc["otherData"]["clock_origin_ns"] == 1_000_000 and doc["displayTimeUnit"] == "ns"
    a, b = complete(doc)
    assert (a["name"], a["ts"], a["dur"], a["pid"], a["tid"]) == ("pread64", 1000.0, 500.0, PID_STRIDE - 1, 7)
    assert a["args"] == {"file": "/d/a", "offset": 4096, "bytes": 100, "requested": 100, "fd": 3}
    assert b["args"] == {"file": "/d/\"q\"", "bytes": -1, "requested": 10, "fd": 4, "errno": 5}  # no offset
    meta = {(e["name"], e.get("tid")): e["args"] for e in doc["traceEvents"] if e["ph"] == "M"}
    assert meta[("process_name", None)] == {"name": "I/O h"}
    assert meta[("thread_name", 7)] == {"name": "I/O loader (tid 7)"}


def test_several_sources_share_one_clock_and_are_labelled(tmp_path: Path) -> None:
    early = Source("a", 1_000_000, [(1_000_000, 1_001_000, "read", "/x", 0, 1, 1, 3, 0, 1)])
    late = Source("b", 5_000_000, [(5_000_000, 5_002_000, "write", "/y", 0, 1, 1, 3, 0, 1 << 40)])
    export([late, early], str(tmp_path / "t.json.gz"), progress=False)
    doc = load(tmp_path / "t.json.gz")
    assert doc["otherData"]["clock_origin_ns"] == 1_000_000
    by = {e["name"]: e for e in complete(doc)}
    assert by["write"]["ts"] == 4000.0 and by["read"]["ts"] == 0.0
    assert by["write"]["pid"] == PID_STRIDE - 1 and by["read"]["pid"] == 2 * PID_STRIDE - 1
    assert by["write"]["tid"] == (1 << 40) & MAX_TID
    names = {e["args"]["name"] for e in doc["traceEvents"] if e["name"] == "process_name"}
    assert names == {"I/O run1/a", "I/O run1/b"}


def test_object_requests_with_range_first_byte_and_error(tmp_path: Path) -> None:
    base = {"service": "s3", "bucket": "b", "key": "k", "status": 206, "bytes": 10, "tid": 9,
            "start_ns": 2_000_000, "ttfb_ns": 2_000_500, "end_ns": 2_004_000, "error": ""}
    reqs = [{**base, "object": "s3://b/k", "op": "GET", "range_start": 0, "range_end": 9},
            {**base, "object": "s3://b/k", "op": "GET", "range_start": 100, "range_end": -1, "ttfb_ns": 0,
             "status": 0, "error": "ReadTimeout", "end_ns": 1_000_000}]
    n = export([Source("h", 1_000_000, [], reqs)], str(tmp_path / "t.json"), progress=False)
    a, b = complete(load(tmp_path / "t.json"))
    assert n == 2 and a["name"] == "GET s3://b/k" and a["pid"] == PID_STRIDE - 3 and a["cat"] == "object"
    assert a["args"] == {"object": "s3://b/k", "op": "GET", "status": 206, "bytes": 10, "range": "0-9",
                         "first_byte_us": 0.5}
    assert (a["ts"], a["dur"]) == (1000.0, 4.0)
    assert b["args"]["range"] == "100-" and "first_byte_us" not in b["args"] and b["args"]["error"] == "ReadTimeout"
    assert b["dur"] == 0.0                                  # an end before the start: no negative span


def test_no_origin_anywhere_counts_from_zero(tmp_path: Path) -> None:
    export([Source("h", 0, [(50_000, 60_000, "read", "/x", 0, 1, 1, 3, 0, 1)])], str(tmp_path / "t.json"),
           progress=False)
    doc = load(tmp_path / "t.json")
    (e,) = complete(doc)
    assert doc["otherData"]["clock_origin_ns"] == 0 and e["ts"] == 50.0
