"""tb_iotrace.plugin.endpoints.steps: each call counted in the step its start lies in (none
before the first step, in a gap or after the last), failed calls adding no bytes, I/O time as
the union per thread summed over threads and clipped to the step, input wait from the host's
input-wait events only and its share bounded, equal windows (and the right message) without
steps, and several hosts put on the view's clock."""
from __future__ import annotations

import numpy as np

from tb_iotrace.model.tab.columns import IoTable, TabCapture, make_lane
from tb_iotrace.plugin.endpoints.steps import _covered, steps_impl
from tb_iotrace.plugin.request_view import make_view

OPS = ["read", "write", "open"]


def io(rows: list[tuple[int, int, str, int, int]]) -> IoTable:
    """rows: (start, end, op, returned, tid)."""
    rows = sorted(rows, key=lambda r: (r[4], r[0]))
    col = lambda i, dt: np.array([r[i] for r in rows], dt)   # noqa: E731
    n = len(rows)
    return IoTable(start=col(0, np.int64), end=col(1, np.int64), op=np.array([OPS.index(r[2]) for r in rows], np.int16),
                   path=np.zeros(n, np.int32), offset=np.zeros(n, np.int64), requested=col(3, np.int64),
                   returned=col(3, np.int64), fd=np.zeros(n, np.int32), errno=np.zeros(n, np.int32),
                   tid=col(4, np.int64), ops=OPS, paths=["/d"], is_read=np.array([True, False, False]),
                   is_write=np.array([False, True, False]))


def cap(table: IoTable | None, steps: list[tuple[int, int]], waits: list[tuple[int, int, str]] = (),
        start: int | None = None, extent: tuple[int, int] = (0, 1000), source: str = "xplane") -> TabCapture:
    names = sorted({w[2] for w in waits}) or ["x"]
    lanes = []
    if waits:
        lanes.append(make_lane("host.1", "host", "python", "/host:CPU", np.array([w[0] for w in waits], np.int64),
                               np.array([w[1] for w in waits], np.int64),
                               np.array([names.index(w[2]) for w in waits], np.int32)))
    return TabCapture(path="/x/h.xplane.pb", host="h", size=0, mtime_ns=0, names=names, lanes=lanes, planes={},
                      io=table, io_info={"source": source}, counter_records=[],
                      steps=[{"index": i, "name": f"s{i}", "start": s, "end": e} for i, (s, e) in enumerate(steps)],
                      steps_source="markers", extent=extent, profile_start_ns=start, hostnames=[])


def test_calls_count_in_the_step_their_start_lies_in() -> None:
    t = io([(5, 8, "read", 100, 1), (10, 12, "read", 7, 1), (18, 40, "write", 30, 1), (25, 26, "read", 1000, 1),
            (30, 31, "read", -1, 1), (31, 32, "open", 3, 1), (60, 70, "read", 5000, 1), (39, 39, "read", 2, 1)])
    got = steps_impl(make_view("r", [("h", cap(t, [(10, 20), (30, 40)]))]))["steps"]
    assert [(s["bytes_read"], s["bytes_written"], s["calls"]) for s in got] == [(7, 30, 2), (2, 0, 3)]


def test_io_time_is_the_union_per_thread_summed_over_threads_and_clipped() -> None:
    t = io([(0, 50, "read", 1, 1), (10, 30, "read", 1, 1), (40, 60, "read", 1, 2), (45, 55, "read", 1, 2),
            (90, 95, "read", 1, 3)])
    got = steps_impl(make_view("r", [("h", cap(t, [(20, 50), (50, 100)]))]))["steps"]
    # step 1: thread 1 [20,50] 30 + thread 2 [40,50] 10; step 2: thread 2 [50,60] + thread 3 [90,95]
    assert [s["io_time_ns"] for s in got] == [40, 15]


def test_covered_merges_overlaps_and_nested_intervals() -> None:
    s = np.array([0.0, 5.0, 2.0, 20.0])
    e = np.array([10.0, 6.0, 12.0, 25.0])
    assert _covered(s, e, np.array([0.0, 11.0, 0.0]), np.array([100.0, 22.0, 1.0])).tolist() == [17.0, 3.0, 1.0]
    assert _covered(np.zeros(0), np.zeros(0), np.array([0.0]), np.array([1.0])).tolist() == [0.0]


def test_input_wait_counts_input_events_only_and_its_share_is_bounded() -> None:
    waits = [(0, 30, "IteratorGetNext"), (10, 20, "IteratorGetNext"), (40, 45, "MatMul"), (60, 200, "IteratorGetNext")]
    got = steps_impl(make_view("r", [("h", cap(None, [(0, 50), (50, 100), (100, 100)], waits))]))["steps"]
    assert [s["input_wait_ns"] for s in got] == [30, 40, 0]
    assert [s["input_wait_pct"] for s in got] == [60.0, 80.0, 0.0]
    assert all("object_requests" not in s for s in got)


def test_without_steps_the_extent_is_cut_into_equal_windows() -> None:
    t = io([(0, 1, "read", 1, 1), (999, 1000, "read", 2, 1), (500, 501, "read", 4, 1)])
    out = steps_impl(make_view("r", [("h", cap(t, [], extent=(0, 1000)))]), windows=4)
    assert not out["has_steps"] and out["source"] == "" and "No step markers" in out["message"]
    assert [(s["start"], s["end"], s["name"]) for s in out["steps"]] == [
        (0, 250, "window 1"), (250, 500, "window 2"), (500, 750, "window 3"), (750, 1000, "window 4")]
    assert [s["bytes_read"] for s in out["steps"]] == [1, 0, 4, 2]
    rec = steps_impl(make_view("r", [("h", cap(t, [], source="record"))]), windows=2)
    assert "whole-run record" in rec["message"]
    assert steps_impl(make_view("r", [("h", cap(t, [(0, 10)]))]))["message"] == ""


def test_an_empty_capture_gives_windows_of_nothing() -> None:
    out = steps_impl(make_view("r", [("h", cap(None, [], extent=(7, 7)))]), windows=3)
    assert len(out["steps"]) == 3
    assert all(s["calls"] == 0 and s["input_wait_pct"] == 0.0 for s in out["steps"])


def test_hosts_are_summed_on_the_view_clock() -> None:
    a = cap(io([(10, 11, "read", 1, 1)]), [(0, 100), (100, 200)], start=1000)
    b = cap(io([(10, 11, "read", 10, 1), (105, 106, "read", 100, 1)]), [], start=1100)   # +100: 110 and 205
    out = steps_impl(make_view("r", [("a", a), ("b", b)]))
    assert out["has_steps"] and out["source"] == "markers on a"
    assert [(s["bytes_read"], s["calls"]) for s in out["steps"]] == [(1, 1), (10, 1)]
