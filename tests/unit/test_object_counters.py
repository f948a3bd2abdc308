"""tb_iotrace.model.object_counters: one record per object from its requests. Proves the size
bins' edges (Darshan's and the shim's: inclusive upper edges), what counts as written (answered
uploads only), retries across several failures, sequential ranges per process, bytes refetched,
first-byte times that are absent, the order of records and max_concurrency's edge cases."""
from __future__ import annotations

from typing import Any

import pytest

from tb_iotrace.model.object_counters import SIZE_BINS, failed, max_concurrency, object_records, throttled


def req(obj: str = "s3://b/k", op: str = "GET", n: int = 0, s: int = 0, e: int = 10, rs: int = -1,
        status: int = 200, pid: int = 1, ttfb: int | None = None) -> dict[str, Any]:
    return {"object": obj, "service": "s3", "bucket": "b", "key": obj.split("/", 3)[-1], "op": op,
            "range_start": rs, "range_end": rs + n - 1 if rs >= 0 else -1, "status": status, "bytes": n,
            "start_ns": s, "ttfb_ns": s + 2 if ttfb is None else ttfb, "end_ns": e, "pid": pid, "tid": pid}


def counters(reqs: list[dict[str, Any]]) -> dict[str, int]:
    [rec] = object_records(reqs)
    return rec["counters"]


@pytest.mark.parametrize("n, want", [(0, "0_100"), (100, "0_100"), (101, "100_1K"), (1024, "100_1K"),
                                     (1025, "1K_10K"), (1 << 20, "100K_1M"), ((1 << 20) + 1, "1M_4M"),
                                     (1 << 30, "100M_1G"), ((1 << 30) + 1, "1G_PLUS")])
def test_get_size_bins_have_inclusive_upper_edges_as_darshan_and_the_shim(n: int, want: str) -> None:
    """native/counters.c size_bin: "inclusive upper edges: 100, 1K, ..., 1G" (Darshan's
    DARSHAN_BUCKET_INC: <= 100 is 0_100); the module doc promises Darshan's bins."""
    c = counters([req(n=n)])
    assert [b for b, _ in SIZE_BINS if c[f"OBJ_SIZE_GET_{b}"]] == [want]


def test_only_answered_uploads_count_bytes_written() -> None:
    c = counters([req(op="PUT", n=500, s=0, e=5), req(op="MPU", n=300, s=5, e=9),
                  req(op="POST", n=7, s=9, e=12), req(op="PUT", n=900, s=20, e=30, status=500)])
    assert c["OBJ_PUTS"] == 4 and c["OBJ_BYTES_WRITTEN"] == 807
    assert c["OBJ_ERRORS"] == 1 and c["OBJ_BYTES_READ"] == 0 and c["OBJ_UNIQUE_BYTES_READ"] == 0


def test_every_repeat_of_a_failed_request_is_a_retry_and_unanswered_is_an_error() -> None:
    reqs = [req(rs=0, n=10, status=0, s=0, e=1), req(rs=0, n=10, status=429, s=2, e=3),
            req(rs=0, n=10, status=206, s=4, e=5),
            req(rs=0, n=10, status=200, s=6, e=7, pid=2)]   # another process: not a retry
    c = counters(reqs)
    assert (c["OBJ_ERRORS"], c["OBJ_THROTTLED"], c["OBJ_RETRIES"]) == (2, 1, 2)
    assert c["OBJ_BYTES_READ"] == 20 and c["OBJ_UNIQUE_BYTES_READ"] == 10 and c["OBJ_REFETCHED_BYTES"] == 10
    assert failed({"status": 0}) and failed({"status": 404}) and not failed({"status": 304})
    assert throttled({"status": 503}) and not throttled({"status": 500})


def test_sequential_ranges_are_per_process_and_in_start_order() -> None:
    # given out of order: sorted by start, pid 1 reads [0,10) then [10,20); pid 2 [20,30) then [0,5)
    reqs = [req(rs=10, n=10, s=30, e=40), req(rs=0, n=10, s=0, e=10), req(rs=20, n=10, s=5, e=8, pid=2),
            req(rs=0, n=5, s=50, e=60, pid=2)]
    c = counters(reqs)
    assert c["OBJ_RANGED_GETS"] == 4 and (c["OBJ_SEQ_RANGES"], c["OBJ_RANDOM_RANGES"]) == (1, 1)
    assert c["OBJ_UNIQUE_BYTES_READ"] == 30 and c["OBJ_REFETCHED_BYTES"] == 5


def test_other_ops_and_fcounters() -> None:
    [rec] = object_records([req(op="LIST", s=1_000_000_000, e=1_500_000_000, ttfb=0),
                            req(op="DELETE", s=2_000_000_000, e=2_100_000_000, ttfb=0)])
    c, f = rec["counters"], rec["fcounters"]
    assert (c["OBJ_LISTS"], c["OBJ_OTHER"], c["OBJ_REQUESTS"]) == (1, 1, 2)
    assert f["OBJ_F_FIRST_BYTE_MEAN"] == 0.0 and f["OBJ_F_FIRST_BYTE_MAX"] == 0.0   # no first byte seen
    assert f["OBJ_F_REQUEST_TIME"] == pytest.approx(0.6) and f["OBJ_F_MAX_REQUEST_TIME"] == pytest.approx(0.5)
    assert (f["OBJ_F_START"], f["OBJ_F_END"]) == pytest.approx((1.0, 2.1))
    assert rec["object"] == "s3://b/k" and rec["key"] == "k"


def test_records_by_bytes_read_then_requests_then_name() -> None:
    reqs = [req("s3://b/a", op="HEAD"), req("s3://b/c", n=5), req("s3://b/z", op="HEAD"), req("s3://b/z", op="HEAD"),
            req("s3://b/m", n=50)]
    assert [r["object"] for r in object_records(reqs)] == ["s3://b/m", "s3://b/c", "s3://b/z", "s3://b/a"]
    assert object_records([]) == []


def test_max_concurrency_edges() -> None:
    assert max_concurrency([]) == 0
    assert max_concurrency([req(s=0, e=100), req(s=10, e=20), req(s=15, e=30), req(s=20, e=40)]) == 3


def test_an_object_with_a_request_has_concurrency_at_least_one() -> None:
    """A request whose end equals its start (a coarse or stepped CLOCK_REALTIME) was still in
    flight: its object's OBJ_MAX_CONCURRENCY cannot be 0 beside OBJ_REQUESTS 1."""
    c = counters([req(n=10, s=5, e=5)])
    assert c["OBJ_REQUESTS"] == 1 and c["OBJ_MAX_CONCURRENCY"] == 1
