"""tb_iotrace.analysis.object_io: object requests on the capture's clock, the part of the wait
they cover, the small-GET pattern and the change the verdict names for it."""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from tb_iotrace.analysis.object_io import (GOOD_REQUEST, SMALL_REQUEST, Pattern, blocked_share, object_advice,
                                           object_wait_note, origin_ns, storage_intervals)

MS = 1_000_000      # ns


def get(obj: str, start: int, end: int, ttfb: int, nbytes: int, status: int = 200, rng: int = 0,
        client: str = "aiohttp", service: str = "s3", op: str = "GET") -> dict[str, Any]:
    return {"object": obj, "op": op, "status": status, "start_ns": start, "end_ns": end, "ttfb_ns": ttfb,
            "bytes": nbytes, "range_start": rng, "client": client, "service": service}


class Trace(SimpleNamespace):
    def __len__(self) -> int:
        return len(self.start_ns)


def ctx(reqs: list[dict[str, Any]], start_ns: int | None = 0, waits: tuple = ((), ()), timeline: bool = True,
        trace_starts: tuple = ()) -> Any:
    c = SimpleNamespace(profile_start_ns=start_ns, att=object() if timeline else None,
                        trace=Trace(start_ns=np.array(trace_starts, np.int64)),
                        wait_iv=(np.array(waits[0], np.int64), np.array(waits[1], np.int64)))
    c._object_rows = reqs          # requests_of reads them once and keeps them here
    return c


def test_origin_is_the_profile_start_else_the_first_call_else_the_first_request() -> None:
    r = [get("s3://b/a", 700, 800, 750, 10), get("s3://b/a", 500, 600, 550, 10)]
    c = ctx(r, start_ns=100)
    assert origin_ns(c) == 100
    c.profile_start_ns, c.trace = None, Trace(start_ns=np.array([300, 200], np.int64))
    assert origin_ns(c) == 200
    c.trace = Trace(start_ns=np.zeros(0, np.int64))
    assert origin_ns(c) == 500


def test_storage_intervals_in_capture_ps_merged() -> None:
    c = ctx([get("s3://b/a", 1000, 2000, 0, 1), get("s3://b/b", 1500, 2500, 0, 1), get("s3://b/c", 4000, 3000, 0, 1)],
            start_ns=1000)
    s, e = storage_intervals(c)
    assert s.tolist() == [0] and e.tolist() == [1_500_000]            # an end before its start: zero length
    assert [x.tolist() for x in storage_intervals(c, [])] == [[], []]


def test_blocked_share_is_the_wait_the_requests_cover() -> None:
    steps = [{"start_ps": 0, "end_ps": 10_000_000}, {"start_ps": 10_000_000, "end_ps": 20_000_000}]
    reqs = [get("s3://b/a", 1000, 5000, 0, 1)]                         # 1-5 us: 1e6 to 5e6 ps
    c = ctx(reqs, start_ns=0, waits=((0,), (2_000_000,)))
    got = blocked_share(c, steps, reqs)
    assert got == {"step_share": pytest.approx(1e6 / 2e7), "ms_per_step": pytest.approx(1e6 / 2 / 1e9), "basis": "steps"}
    assert blocked_share(c, steps, [])["step_share"] == 0.0
    assert blocked_share(ctx(reqs, timeline=False), steps, reqs)["basis"] == "no timeline"
    assert blocked_share(ctx(reqs), [], reqs)["basis"] == "no input waits"


def small_pattern(n: int = 10, client: str = "aiohttp", service: str = "s3", size: int = 64 << 10) -> list[dict]:
    # each GET: 10 ms, its first byte after 8 ms; two objects, n/2 GETs each
    return [get(f"{service}://b/o{i % 2}", i * 20 * MS, i * 20 * MS + 10 * MS, i * 20 * MS + 8 * MS, size,
                client=client, service=service) for i in range(n)]


def test_pattern_of_small_gets() -> None:
    reqs = small_pattern() + [get("s3://b/big", 0, 1, 1, 2 * SMALL_REQUEST), get("s3://b/err", 0, 1, 1, 10, status=404),
                              get("s3://b/up", 0, 1, 1, 10, op="PUT")]
    p = Pattern(reqs)
    assert len(p.gets) == 11 and len(p.small) == 10 and p.ranged == 10
    assert p.latency_share == pytest.approx(0.8) and p.first_byte_ms == pytest.approx(8.0)
    assert p.objects == 3 and p.gets_per_object == pytest.approx(11 / 3)
    assert p.object_bytes == 2 * SMALL_REQUEST and p.median_bytes == 64 << 10
    assert (p.service, p.client) == ("s3", "aiohttp") and p.latency_bound
    assert p.target_gets() == 1


def test_latency_bound_needs_eight_small_gets_most_of_them_and_waiting() -> None:
    assert not Pattern(small_pattern(7)).latency_bound
    assert Pattern(small_pattern(8)).latency_bound
    fast = [dict(r, ttfb_ns=r["start_ns"] + MS) for r in small_pattern(10)]            # first byte: 10% of the time
    assert not Pattern(fast).latency_bound
    assert not Pattern(small_pattern(8) + [get("s3://b/big", 0, 1, 1, 2 * SMALL_REQUEST)] * 9).latency_bound


@pytest.mark.parametrize("client,service,start", [
    ("aiohttp", "s3", "s3fs: fewer, larger GETs: fs.open(path, block_size=327680 (320 KiB)"),
    ("aiohttp", "gs", "gcsfs: fewer, larger GETs"),
    ("urllib3", "s3", "boto3: one GetObject per object"),
    ("urllib3", "gs", "google-cloud-storage: blob.download_as_bytes()"),
    ("urllib3", "http", "fewer, larger requests"),
])
def test_change_in_the_clients_terms(client: str, service: str, start: str) -> None:
    assert Pattern(small_pattern(10, client, service)).change().startswith(start)


def test_advice_by_its_model() -> None:
    c = ctx(small_pattern(10))
    got = object_advice(c, s=0.5, part=0.5)
    # 5 GETs per object of 320 KiB -> 1 GET: saves 4/5 of the latency share 0.8 = 0.64 of the object wait
    assert got is not None and got["expected_step_time_change"] == pytest.approx(-0.5 * 0.5 * 0.64)
    assert got["change"].endswith("larger shards (objects of 100 MiB and more, WebDataset/MosaicML-style)")
    assert "expected step time -16%" in got["advice"] and "5.0 GETs per object -> 1" in got["model"]
    big = ctx(small_pattern(10, size=(1 << 20) - 1))                   # objects of 5 MiB: no shard advice
    assert "larger shards" not in object_advice(big, 0.5, 0.5)["change"]
    assert object_advice(ctx(small_pattern(4)), 0.5, 0.5) is None       # not latency-bound: the verdict's own
    assert GOOD_REQUEST == 8 << 20


def test_wait_note() -> None:
    assert object_wait_note({}) == "" and object_wait_note({"wait_breakdown": {"object_io": 0.0}}) == ""
    assert "during 42% of the wait" in object_wait_note({"wait_breakdown": {"object_io": 0.42}})


def test_advice_never_asks_for_more_gets_than_made() -> None:
    # one object read in 9 GETs of ~1 MiB (9 MiB: 2 GETs of 8 MiB), nine read in one GET each:
    # 1.8 GETs per object on average, fewer than the 2 the largest object needs: nothing saved
    one = [get("s3://b/big", i * 20 * MS, i * 20 * MS + 10 * MS, i * 20 * MS + 8 * MS, SMALL_REQUEST - 1)
           for i in range(9)]
    each = [get(f"s3://b/o{i}", i * 20 * MS, i * 20 * MS + 10 * MS, i * 20 * MS + 8 * MS, 1000) for i in range(9)]
    got = object_advice(ctx(one + each), 0.5, 0.5)
    assert got is not None and got["expected_step_time_change"] == pytest.approx(0.0)
