"""tb_iotrace.analysis.object_report: the report's ``objects`` entry of one host sums its
requests right (bytes of answered GETs only, ranged GETs, errors, throttles, retries, ops counted
and sorted, concurrency, mean time to first byte of the requests that had one), caps the
per-object list at MAX_OBJECTS (most bytes first) counting the rest, and says None only when
nothing was recorded and nothing left out."""
from __future__ import annotations

from typing import Any

import pytest

from tb_iotrace.analysis import object_report
from tb_iotrace.analysis.object_report import objects_doc


def req(obj: str = "s3://b/k", op: str = "GET", start: int = 0, end: int = 10, ttfb: int = 0,
        status: int = 200, nbytes: int = 100, rs: int = -1, re_: int = -1, pid: int = 1) -> dict[str, Any]:
    return {"object": obj, "service": "s3", "bucket": "b", "key": obj.rsplit("/", 1)[-1], "op": op,
            "start_ns": start, "end_ns": end, "ttfb_ns": ttfb, "status": status, "bytes": nbytes,
            "range_start": rs, "range_end": re_, "pid": pid}


def test_nothing_recorded_nothing_left_out_is_none_but_left_out_alone_is_a_doc() -> None:
    assert objects_doc([]) is None
    doc = objects_doc([], 5)
    assert doc is not None
    assert (doc["requests"], doc["requests_left_out"], doc["objects"], doc["max_concurrency"]) == (0, 5, [], 0)
    assert doc["first_byte_ms_mean"] is None and doc["ops"] == {}


def test_sums_over_requests() -> None:
    reqs = [req(op="GET", start=0, end=4_000_000, ttfb=1_000_000, nbytes=100),
            req(op="GET", start=1_000_000, end=5_000_000, ttfb=4_000_000, nbytes=50, rs=0, re_=49),
            req(op="HEAD", start=2_000_000, end=3_000_000, nbytes=0),
            req(op="GET", start=6_000_000, end=7_000_000, status=503, nbytes=999, rs=0, re_=49),
            req(op="GET", start=8_000_000, end=9_000_000, status=200, nbytes=50, rs=0, re_=49),
            req(obj="s3://b/other", op="PUT", start=8_000_000, end=9_500_000, status=403, nbytes=7)]
    doc = objects_doc(reqs)
    assert doc is not None
    assert doc["requests"] == 6
    assert doc["bytes_read"] == 200            # the failed GET's 999 bytes are not read bytes
    assert doc["ops"] == {"GET": 4, "HEAD": 1, "PUT": 1} and list(doc["ops"]) == sorted(doc["ops"])
    assert doc["ranged_gets"] == 2             # the answered ranged GETs
    assert doc["errors"] == 2 and doc["throttled"] == 1
    assert doc["retries"] == 1                 # the GET repeating the throttled one
    assert doc["max_concurrency"] == 3         # 0-4, 1-5 and 2-3 ms overlap
    assert doc["first_byte_ms_mean"] == pytest.approx((1.0 + 3.0) / 2)   # ms, requests with a first byte
    assert doc["objects_left_out"] == 0 and doc["requests_left_out"] == 0
    assert [o["object"] for o in doc["objects"]] == ["s3://b/k", "s3://b/other"]


def test_the_object_list_is_capped_most_bytes_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(object_report, "MAX_OBJECTS", 3)
    reqs = [req(obj=f"s3://b/k{i}", nbytes=10 * (i + 1), start=i, end=i + 1) for i in range(5)]
    doc = objects_doc(reqs, left_out=2)
    assert doc is not None
    assert [o["object"] for o in doc["objects"]] == ["s3://b/k4", "s3://b/k3", "s3://b/k2"]
    assert doc["objects_left_out"] == 2 and doc["requests"] == 5 and doc["requests_left_out"] == 2
    assert doc["bytes_read"] == sum(10 * (i + 1) for i in range(5))   # totals count every object
