"""What an object request names (tb_iotrace.base.objnames) and the per-object counters
(tb_iotrace.model.object_counters): bucket and key, never a query, signature or user info."""
from __future__ import annotations

import pytest

from tb_iotrace.base.objnames import classify, parse_range
from tb_iotrace.model.object_counters import max_concurrency, object_records

SIGV4 = ("http://127.0.0.1:9000/bkt/a/b%20c.npy?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAXX%2F2026"
         "&X-Amz-Date=20261128T000000Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Signature=deadbeef")


@pytest.mark.parametrize("method,url,headers,want", [
    ("GET", "http://127.0.0.1:5000/bkt/x/a.npy", {"Authorization": "AWS4-HMAC-SHA256 Credential=K/..."},
     ("s3", "s3://bkt/x/a.npy", "GET")),
    ("GET", "https://bkt.s3.us-east-1.amazonaws.com/x/a.npy", {}, ("s3", "s3://bkt/x/a.npy", "GET")),
    ("GET", "https://s3.amazonaws.com/bkt?list-type=2&prefix=x", {}, ("s3", "s3://bkt/", "LIST")),
    ("HEAD", "http://h:1/bkt/k", {"x-amz-date": "d"}, ("s3", "s3://bkt/k", "HEAD")),
    ("POST", "http://h:1/bkt/k?uploads", {"X-Amz-Date": "d"}, ("s3", "s3://bkt/k", "MPU")),
    ("PUT", "http://h:1/bkt/k?partNumber=2&uploadId=abc", {"X-Amz-Date": "d"}, ("s3", "s3://bkt/k", "MPU")),
    ("GET", SIGV4, {}, ("s3", "s3://bkt/a/b c.npy", "GET")),
    ("GET", "http://h:1/bkt/k?AWSAccessKeyId=AKIA&Signature=abc&Expires=1", {}, ("s3", "s3://bkt/k", "GET")),
    ("GET", "http://127.0.0.1:4443/download/storage/v1/b/gb/o/y%2Fb.bin?alt=media", {}, ("gs", "gs://gb/y/b.bin", "GET")),
    ("GET", "https://storage.googleapis.com/storage/v1/b/gb/o/y%2Fb.bin?alt=media", {}, ("gs", "gs://gb/y/b.bin", "GET")),
    ("GET", "https://storage.googleapis.com/storage/v1/b/gb/o/y%2Fb.bin", {}, ("gs", "gs://gb/y/b.bin", "STAT")),
    ("GET", "https://storage.googleapis.com/storage/v1/b/gb/o?prefix=y", {}, ("gs", "gs://gb/", "LIST")),
    ("POST", "https://storage.googleapis.com/upload/storage/v1/b/gb/o?uploadType=media&name=z", {},
     ("gs", "gs://gb/", "PUT")),
    ("GET", "https://storage.googleapis.com/gb/y/b.bin?X-Goog-Signature=abc", {}, ("gs", "gs://gb/y/b.bin", "GET")),
    ("GET", "https://user:pw@data.example:8443/shards/s1.tar?token=secret#frag", {},
     ("http", "https://data.example:8443/shards/s1.tar", "GET")),
])
def test_classify(method: str, url: str, headers: dict, want: tuple) -> None:
    n = classify(method, url, headers)
    assert (n.service, n.name, n.op) == want
    for secret in ("deadbeef", "AKIA", "Signature", "secret", "pw@", "frag", "token"):
        assert secret not in n.name + n.bucket + n.key


def test_parse_range() -> None:
    assert parse_range("bytes=0-16383") == (0, 16383)
    assert parse_range("bytes=100-") == (100, -1)
    assert parse_range("bytes=-500") is None and parse_range("items=1-2") is None and parse_range(None) is None


def _req(obj: str, op: str = "GET", rs: int = -1, re_: int = -1, n: int = 0, s: int = 0, e: int = 10, pid: int = 1,
         status: int = 200) -> dict:
    return {"object": obj, "service": "s3", "bucket": "b", "key": obj[7:], "op": op, "range_start": rs,
            "range_end": re_, "status": status, "error": "", "bytes": n, "start_ns": s, "ttfb_ns": s + 5,
            "end_ns": e, "tid": pid, "pid": pid, "client": "urllib3", "complete": True}


def test_counters() -> None:
    o = "s3://b/k"
    reqs = [_req(o, "HEAD", s=0, e=5),
            _req(o, rs=0, re_=99, n=100, s=10, e=20), _req(o, rs=100, re_=199, n=100, s=20, e=30),   # sequential
            _req(o, rs=50, re_=149, n=100, s=30, e=40),                                             # random, again
            _req(o, rs=300, re_=399, status=503, s=40, e=45), _req(o, rs=300, re_=399, n=100, s=50, e=60),  # retried
            _req(o, n=400, s=55, e=70, pid=2)]                                                      # whole, again
    [rec] = object_records(reqs)
    c = rec["counters"]
    assert (c["OBJ_REQUESTS"], c["OBJ_GETS"], c["OBJ_HEADS"], c["OBJ_RANGED_GETS"]) == (7, 6, 1, 4)
    assert c["OBJ_BYTES_READ"] == 800 and c["OBJ_UNIQUE_BYTES_READ"] == 400 and c["OBJ_REFETCHED_BYTES"] == 400
    assert (c["OBJ_SEQ_RANGES"], c["OBJ_RANDOM_RANGES"]) == (1, 2)
    assert (c["OBJ_ERRORS"], c["OBJ_THROTTLED"], c["OBJ_RETRIES"]) == (1, 1, 1)
    assert c["OBJ_MAX_CONCURRENCY"] == 2                      # pid 2's GET overlaps the retry
    # Darshan's bins, upper edges inclusive: the four 100-byte GETs in 0_100, the 400 in 100_1K
    assert (c["OBJ_SIZE_GET_0_100"], c["OBJ_SIZE_GET_100_1K"]) == (4, 1)
    assert rec["fcounters"]["OBJ_F_FIRST_BYTE_MEAN"] == pytest.approx(5e-9)


def test_max_concurrency_touching_is_not_overlap() -> None:
    assert max_concurrency([_req("s3://b/k", s=0, e=10), _req("s3://b/k", s=10, e=20)]) == 1
    assert max_concurrency([_req("s3://b/k", s=0, e=10), _req("s3://b/k", s=9, e=20), _req("s3://b/k", s=9, e=10)]) == 3
    assert max_concurrency([_req("s3://b/k", s=0, e=10), _req("s3://b/k", s=9, e=20), _req("s3://b/k", s=5, e=6)]) == 2
