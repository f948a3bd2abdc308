"""tb_iotrace.model.tab.of_record: a whole-run record decoded for the tab. Proves the names of
the files beside a record, a cache key that changes when any of them is rewritten, one I/O lane
per thread on the record's clock (sorted by thread then time), reads and writes told by op name,
and the warnings of a partial record, an unreadable trace or none kept; a malformed thread entry
is a ValueError (the documented failure), never a TypeError."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tb_iotrace.model.tab.of_record import cache_key, decode_record, total_size, trace_path

T0 = 1_700_000_000_000_000_000


def make(tmp: Path, keep: bool = True, **doc_changes: Any) -> str:
    rows = [(8, 3000, "recv"), (7, 2000, "pwrite64"), (7, 1000, "pread64"), (8, 500, "fsync")]
    ops = ["pread64", "pwrite64", "recv", "fsync"]
    if keep:
        st = T0 + np.array([r[1] for r in rows], np.int64)
        np.savez(tmp / "h.7.npz", start_ns=st, end_ns=st + 100, op_id=np.array([ops.index(r[2]) for r in rows], np.int32),
                 file_id=np.zeros(4, np.int32), offset=np.zeros(4, np.int64), requested=np.full(4, 64, np.int64),
                 returned=np.array([64, 32, -1, 0], np.int64), fd=np.full(4, 3, np.int64), errno=np.zeros(4, np.int64),
                 tid=np.array([r[0] for r in rows], np.int64), op_names=np.array(ops), paths=np.array(["/d/x"]))
    doc: dict[str, Any] = {"format": "tb_iotrace.run/2", "host": "box", "pid": 7, "start_ns": T0, "end_ns": T0 + 5000,
                           "partial": False, "files": [{"path": "/d/x", "module": "POSIX", "counters": {"POSIX_READS": 1},
                                                        "fcounters": {}}],
                           "threads": [{"tid": 8, "name": "loader"}], "nevents": 4, "dropped": 3}
    if keep:
        doc["trace"] = "h.7.npz"
    doc.update(doc_changes)
    (tmp / "h.7.json").write_text(json.dumps(doc))
    return str(tmp / "h.7.json")


def test_trace_path_and_cache_key(tmp_path: Path) -> None:
    assert trace_path("/r/h.7.json") == "/r/h.7.npz" and trace_path("/r/odd") == "/r/odd.npz"
    p = make(tmp_path)
    before = cache_key(p)
    assert before[2] == (tmp_path / "h.7.npz").stat().st_size and before[4:] == (-1, -1)   # no file table
    assert total_size(p) == before[0] + before[2]
    st = os.stat(tmp_path / "h.7.npz")
    os.utime(tmp_path / "h.7.npz", ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert cache_key(p) != before
    with pytest.raises(FileNotFoundError):
        cache_key(str(tmp_path / "gone.json"))


def test_lanes_per_thread_on_the_records_clock(tmp_path: Path) -> None:
    cap = decode_record(make(tmp_path), "h.7")
    assert [ln.name for ln in cap.lanes] == ["thread (tid 7, main)", "loader (tid 8)"]
    io = cap.io
    assert io.tid.tolist() == [7, 7, 8, 8] and io.start.tolist() == [1000, 2000, 500, 3000]
    assert [io.ops[o] for o in io.op.tolist()] == ["pread64", "pwrite64", "fsync", "recv"]
    r, w = io.moved()
    assert r.tolist() == [0, 0, 0, 64] and w.tolist() == [0, 32, 0, 0]   # pread's -1 moves nothing; recv reads
    assert bool(io.is_write[io.ops.index("fsync")]) and not io.is_read[io.ops.index("fsync")]
    assert cap.extent == (0, 5000) and cap.profile_start_ns == T0 and cap.hostnames == ["box"]
    assert cap.io_info["dropped"] == 3 and cap.io_info["threads"] == [[8, 0, "loader"]] and cap.warnings == []
    assert cap.counters.paths == ["/d/x"]


def test_partial_record_without_its_trace(tmp_path: Path) -> None:
    cap = decode_record(make(tmp_path, keep=False, partial=True), "h.7")
    assert cap.io is None and cap.lanes == [] and cap.io_info["partial"] is True
    assert len(cap.warnings) == 1 and cap.warnings[0].startswith("Partial record") and "no timeline" in cap.warnings[0]


def test_no_trace_kept_and_unreadable_trace(tmp_path: Path) -> None:
    cap = decode_record(make(tmp_path, keep=False), "h.7")
    assert cap.warnings == ["This record kept no per-call trace: showing its per-file counters only."]
    p = make(tmp_path)
    (tmp_path / "h.7.npz").write_bytes(b"not an npz")
    cap = decode_record(p, "h.7")
    assert cap.io is None and len(cap.warnings) == 1 and "h.7.npz" in cap.warnings[0]
    assert cap.counters.paths == ["/d/x"]                     # the counters are still shown


def test_bad_timeseries_is_a_warning(tmp_path: Path) -> None:
    cap = decode_record(make(tmp_path, timeseries={"nope": 1}), "h.7")
    assert cap.io_info["timeseries"] is None and any("time series" in w for w in cap.warnings)


def test_a_thread_without_a_tid_is_not_a_type_error(tmp_path: Path) -> None:
    """decode_record documents RecordError (a ValueError) when a record is unreadable; a thread
    entry whose tid is null must be that or be skipped, not a TypeError from int(None)."""
    p = make(tmp_path, threads=[{"tid": None, "name": "x"}, {"tid": 8, "name": "loader"}])
    try:
        cap = decode_record(p, "h.7")
    except ValueError:
        return
    assert [ln.name for ln in cap.lanes][1] == "loader (tid 8)"
