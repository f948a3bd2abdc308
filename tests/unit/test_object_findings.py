"""tb_iotrace.analysis.object_findings: the object-storage rules (small, serial, refetched,
metadata-heavy and throttled requests), each at the edge of its threshold."""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from tb_iotrace.analysis.object_findings import MIN_REQUESTS, RULES, TITLES

MS = 1_000_000      # ns


def req(obj: str, start: int, end: int, *, op: str = "GET", nbytes: int = 1000, status: int = 200, pid: int = 1,
        ttfb: int | None = None, rng: tuple[int, int] = (-1, -1)) -> dict[str, Any]:
    return {"object": obj, "service": "s3", "bucket": "b", "key": obj, "op": op, "status": status,
            "start_ns": start, "end_ns": end, "ttfb_ns": start + (end - start) * 8 // 10 if ttfb is None else ttfb,
            "bytes": nbytes, "range_start": rng[0], "range_end": rng[1], "pid": pid, "tid": pid,
            "client": "urllib3", "error": "", "complete": True}


def run(rule: str, reqs: list[dict[str, Any]]) -> dict[str, Any] | None:
    c = SimpleNamespace(att=None, profile_start_ns=0, trace=None, wait_iv=(np.zeros(0), np.zeros(0)), _object_rows=reqs)
    return RULES[rule](c, [])


def serial(n: int, pid: int = 1, gap: int = 0) -> list[dict[str, Any]]:
    return [req(f"s3://b/o{i}", i * 10 * MS, (i + 1) * 10 * MS + gap, pid=pid) for i in range(n)]


def test_every_rule_has_a_title() -> None:
    assert set(RULES) == set(TITLES)


def test_serial_requests_from_min_requests_never_two_at_once() -> None:
    assert run("object-serial-requests", serial(MIN_REQUESTS - 1)) is None
    f = run("object-serial-requests", serial(MIN_REQUESTS) + serial(3, pid=2))
    assert f is not None and f["evidence"] == {"processes": [1], "requests": MIN_REQUESTS}
    assert f["severity"] == "warning" and f["title"] == TITLES["object-serial-requests"]
    assert f["impact"]["basis"] == "no timeline" and f["ops"] == ["GET"] and len(f["files"]) == MIN_REQUESTS
    assert run("object-serial-requests", serial(MIN_REQUESTS, gap=1)) is None     # two overlap once: concurrent


def test_refetch_counts_bytes_read_again() -> None:
    once = [req("s3://b/a", 0, MS, nbytes=100, rng=(0, 99)), req("s3://b/a", MS, 2 * MS, nbytes=100, rng=(100, 199))]
    assert run("object-refetch", once) is None
    again = once + [req("s3://b/a", 3 * MS, 4 * MS, nbytes=150, rng=(50, 199)),
                    req("s3://b/c", 0, MS, nbytes=10, status=503)]             # a failed GET reads nothing
    f = run("object-refetch", again)
    assert f is not None and f["evidence"] == {"objects": 1, "refetched_bytes": 150}
    assert f["files"] == ["s3://b/a"]


def test_metadata_storm_needs_twice_min_requests_and_more_than_the_gets() -> None:
    heads = [req(f"s3://b/h{i}", 0, MS, op="HEAD", nbytes=0) for i in range(MIN_REQUESTS)]
    lists = [req("s3://b/", 0, MS, op="LIST", nbytes=0) for _ in range(MIN_REQUESTS)]
    gets = serial(2 * MIN_REQUESTS)
    assert run("object-metadata-storm", heads + lists[:-1]) is None           # 15: too few
    f = run("object-metadata-storm", heads + lists + gets)
    assert f is not None and f["evidence"] == {"metadata_requests": 16, "gets": 16, "ops": {"HEAD": 8, "LIST": 8}}
    assert run("object-metadata-storm", heads + lists + gets + serial(1)) is None   # more GETs than LIST/HEAD


def test_throttled_by_503_or_429() -> None:
    assert run("object-throttled", [req("s3://b/a", 0, MS, status=500)]) is None
    f = run("object-throttled", [req("s3://b/a", 0, MS, status=503), req("s3://b/a", 0, MS, status=429),
                                 req("s3://b/a", 0, MS)])
    assert f is not None and f["evidence"] == {"throttled": 2, "statuses": [429, 503]}
    assert "2 of 3 object requests were answered 429, 503" in f["statement"]


def test_small_requests_when_latency_bound() -> None:
    small = [req(f"s3://b/o{i % 2}", i * 20 * MS, i * 20 * MS + 10 * MS, nbytes=64 << 10, rng=(0, 1)) for i in range(8)]
    f = run("object-small-requests", small)
    assert f is not None and f["evidence"]["small_gets"] == 8 and f["evidence"]["gets_per_object"] == 4.0
    assert f["evidence"]["latency_share"] == pytest.approx(0.8)
    assert f["evidence"]["expected_request_time_saved"] == pytest.approx(0.8 * (1 - 1 / 4))
    assert "larger shards" in f["suggestion"]
    assert run("object-small-requests", small[:7]) is None
    quick = [dict(r, ttfb_ns=r["start_ns"] + MS) for r in small]
    assert run("object-small-requests", quick) is None
