"""tb_iotrace.analysis.capture_row: a capture's per-host row. Proves bytes from the counters when
it has records (the traced calls ignored), from the traced calls when it has none, input waits
merged over host lanes only (device and I/O lanes ignored, overlaps counted once, waits at any
depth), the share inside the steps, and the cache of the merged waits."""
from __future__ import annotations

import threading

import numpy as np

from tb_iotrace.analysis.capture_row import capture_input_wait, capture_row, wait_intervals
from tb_iotrace.model.tab.columns import IoTable, TabCapture, make_lane

NAMES = ["IteratorGetNext", "train_step", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"]


def lane(key: str, group: str, spans: list[tuple[int, int, int]]):
    s = np.array([x[0] for x in spans], np.int64)
    e = np.array([x[1] for x in spans], np.int64)
    return make_lane(key, group, key, "p", s, e, np.array([x[2] for x in spans], np.int32))


def io_table() -> IoTable:
    z = np.zeros(3, np.int64)
    return IoTable(start=np.array([0, 10, 20], np.int64), end=np.array([5, 12, 30], np.int64),
                   op=np.array([0, 1, 0], np.int16), path=np.zeros(3, np.int32), offset=z, requested=z,
                   returned=np.array([100, 40, 7], np.int64), fd=z.astype(np.int32), errno=z.astype(np.int32), tid=z,
                   ops=["read", "write"], paths=["/f"], is_read=np.array([True, False, False]),
                   is_write=np.array([False, True, False]))


def cap(lanes, steps, records, io=None) -> TabCapture:
    return TabCapture(path="/x", host="h", size=0, mtime_ns=0, names=NAMES, lanes=lanes, planes={}, io=io,
                      io_info=None, counter_records=records, steps=steps, steps_source="", extent=(0, 1000),
                      profile_start_ns=None, hostnames=[], _lock=threading.Lock())


def waits_cap(steps=()) -> TabCapture:
    host_a = lane("a", "host", [(100, 200, 0), (150, 260, 0), (300, 400, 1)])
    host_b = lane("b", "host", [(0, 1000, 1), (500, 550, 2)])          # a wait nested in a step
    dev = lane("d", "device", [(600, 900, 0)])                            # a device lane: not a wait
    return cap([host_a, host_b, dev], list(steps), [])


def test_waits_merged_over_host_lanes_only() -> None:
    c = waits_cap()
    s, e = wait_intervals(c)
    assert s.tolist() == [100, 500] and e.tolist() == [260, 550]
    assert wait_intervals(c)[0] is s                                      # kept in the capture's cache
    iw = capture_input_wait(c)
    assert (iw.basis, iw.wait, iw.time) == ("input waits", 210, 450)


def test_share_inside_the_steps() -> None:
    c = waits_cap(steps=[{"start": 0, "end": 200}, {"start": 200, "end": 600}])
    row = capture_row("h", c)
    assert (row["wait_basis"], row["input_wait_ns"], row["span_ns"]) == ("steps", 210, 600)
    assert row["input_wait_pct"] == 35.0 and row["source"] == "none" and row["io_calls"] == 0


def test_bytes_from_the_trace_without_counters() -> None:
    row = capture_row("h", cap([], [], [], io=io_table()))
    assert row["source"] == "trace" and row["io_calls"] == 3
    assert (row["bytes_read"], row["bytes_written"]) == (107, 40)
    assert abs(row["read_time_s"] - 15e-9) < 1e-15 and row["files"] == 0


def test_counters_win_over_the_trace() -> None:
    recs = [{"path": "/f", "module": "POSIX", "counters": {"POSIX_BYTES_READ": 5000, "POSIX_BYTES_WRITTEN": 9},
             "fcounters": {"POSIX_F_READ_TIME": 0.25}},
            {"path": "/g", "module": "STDIO", "counters": {"STDIO_BYTES_READ": 11}, "fcounters": {}},
            {"path": "/h", "module": "MPIIO", "counters": {"POSIX_BYTES_READ": 10**9}, "fcounters": {}}]
    row = capture_row("h", cap([], [], recs, io=io_table()))
    assert row["source"] == "counters" and row["files"] == 3 and row["io_calls"] == 3
    assert (row["bytes_read"], row["bytes_written"], row["read_time_s"]) == (5011, 9, 0.25)
