"""tb_iotrace.model.tab.columns: the tab's columnar model. Proves lane rows by nesting depth
(depth capped at MAX_ROWS), the per-row running maxima,
io rows as a slice or an index array, bytes moved by read/write ops only, counters from dicts (a
non-numeric value is NaN, a missing counter a NaN column), file lanes (busiest files, then the
rest), and tf.data flags."""
from __future__ import annotations

import threading

import numpy as np

from tb_iotrace.model.tab.columns import (MAX_FILE_LANES, MAX_ROWS, IoTable, TabCapture, _counters_from,
                                          make_lane, tf_data_flags)

i64 = lambda xs: np.array(xs, dtype=np.int64)   # noqa: E731


def test_rows_by_nesting_and_running_max() -> None:
    # a [0,100) holds b [10,50) which holds c [20,30); d [60,70) is inside a only; e [200,200) alone
    ln = make_lane("k", "host", "t", "p", i64([60, 0, 20, 10, 200]), i64([70, 100, 30, 50, 200]),
                   np.arange(5, dtype=np.int64))
    rows = [ln.start[ln.row_bounds[r]:ln.row_bounds[r + 1]].tolist() for r in range(ln.rows)]
    assert rows == [[0, 200], [10, 60], [20]] and ln.name_id.dtype == np.int32
    assert ln.maxend.tolist() == [100, 200, 50, 70, 30]
    assert ln.name_id.tolist() == [1, 4, 3, 0, 2] and ln.src.tolist() == [1, 4, 3, 0, 2]
    deep = make_lane("d", "host", "t", "p", i64(range(40)), i64(range(100, 60, -1)), np.zeros(40, np.int32))
    assert deep.rows == MAX_ROWS and deep.describe()["rows"] == MAX_ROWS


def test_io_rows_slice_or_index() -> None:
    a = make_lane("a", "io", "t", "I/O", i64([0, 5]), i64([1, 6]), np.zeros(2, np.int16), rows=1, src_base=10)
    assert a.io_rows(0, 2) == slice(10, 12) and a.io_row(1) == 11 and a.maxend is a.end
    b = make_lane("b", "io", "t", "I/O", i64([0, 5]), i64([9, 6]), np.zeros(2, np.int16), rows=1,
                  src=np.array([7, 3], np.int32))
    assert b.io_rows().tolist() == [7, 3] and b.io_row(1) == 3 and b.maxend.tolist() == [9, 9]


def io(paths: list[int], names: list[str]) -> IoTable:
    n = len(paths)
    ops = ["read", "write", "open"]
    z = np.zeros(n, np.int64)
    return IoTable(start=np.arange(n, dtype=np.int64)[::-1].copy(), end=np.arange(n, dtype=np.int64)[::-1] + 1,
                   op=(np.arange(n) % 3).astype(np.int16), path=np.array(paths, np.int32), offset=z, requested=z,
                   returned=np.array([10, 20, 30, -1] * (n // 4) + [10] * (n % 4), np.int64), fd=z.astype(np.int32),
                   errno=z.astype(np.int32), tid=z, ops=ops, paths=names,
                   is_read=np.array([True, False, False, False]), is_write=np.array([False, True, False, False]))


def cap(table: IoTable | None, records: list[dict]) -> TabCapture:
    return TabCapture(path="/x", host="h", size=0, mtime_ns=0, names=["a"], lanes=[], planes={}, io=table,
                      io_info=None, counter_records=records, steps=[], steps_source="", extent=(0, 1),
                      profile_start_ns=None, hostnames=[], _lock=threading.Lock())


def test_moved_bytes_by_op_kind() -> None:
    r, w = io([0, 0, 0, 0], ["/f"]).moved()
    assert r.tolist() == [10, 0, 0, 0] and w.tolist() == [0, 20, 0, 0]   # ops: read, write, open, read(-1)


def test_file_lanes_busiest_then_the_rest() -> None:
    nfiles = MAX_FILE_LANES + 2
    paths = [k for k in range(nfiles) for _ in range(nfiles - k)] + [-1]
    c = cap(io(paths, [f"/f{k}" for k in range(nfiles)]), [])
    lanes = c.io_lanes("file")
    assert len(lanes) == MAX_FILE_LANES + 1 and lanes[0].name == "/f0" and lanes[-1].name == "other files (2)"
    assert len(lanes[-1]) == 2 + 1 + 1                               # files 48 and 49, and the call on no file
    assert list(lanes[-1].start) == sorted(lanes[-1].start) and c.lane("io.f0") is lanes[0]
    assert c.io_lanes("file") is lanes and c.lane("io.f999") is None
    assert cap(io([-1], ["/f"]), []).io_lanes("file")[0].name == "no file"


def test_counters_from_dicts() -> None:
    c = cap(None, [{"path": "/a", "module": "POSIX", "counters": {"POSIX_READS": 3, "X": "n/a"},
                    "fcounters": {"POSIX_F_READ_TIME": 0.5}},
                   {"path": "/b", "module": "STDIO", "counters": {"STDIO_READS": 1}}])
    assert c.file_records == 2
    ct = c.counters
    assert ct.paths == ["/a", "/b"] and ct.modules == ["POSIX", "STDIO"]
    assert ct.col("POSIX_READS")[0] == 3 and np.isnan(ct.col("POSIX_READS")[1]) and np.isnan(ct.col("X")[0])
    assert np.isnan(ct.col("ABSENT")).all() and ct.col("POSIX_F_READ_TIME")[0] == 0.5
    assert c.counter_records == [] and c.file_records == 2           # the records given back once built
    assert _counters_from([]).values.shape == (0, 0)


def test_tf_data_flags() -> None:
    assert tf_data_flags(["tf_data_private", "Iterator::Map", "python3", "x tf_data"]).tolist() == \
        [True, True, False, False, False]
