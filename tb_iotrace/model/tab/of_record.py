"""A whole-run record (``tb-iotrace run``) decoded into the tab's :class:`~tb_iotrace.model.tab.columns.TabCapture`.

A record is ``<dir>/plugins/iotrace/<host>.<pid>[.execN].json`` plus, when it kept its
trace, ``<host>.<pid>[.execN].npz`` (see :mod:`tb_iotrace.store.runrecord`). The tab shows each
folder as the run ``[<dir>/]iotrace`` (the name ``tb-iotrace report`` uses) and each record
as a host. This module builds the tab's :class:`~tb_iotrace.model.tab.columns.TabCapture` straight from the record's
JSON and trace columns, without protobuf:

- clock: ns since the record's ``start_ns`` (``profile_start_ns`` = ``start_ns``, so "All
  hosts" lines processes up on their real start times);
- one I/O lane per thread (named after the record's threads), no host or device lanes, no
  steps (the tab's per-step panel falls back to equal time windows);
- the files table from the record's per-file counters;
- warnings for a partial record (a periodic flush: counts up to it, no trace) and for
  dropped calls.
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

from tb_iotrace.store.runrecord import (RECORD_SUFFIX, RecordError, checked_trace, read_record, record_threads,
                                        table_path)
from tb_iotrace.store.timeseries import TimeSeries, TimeSeriesError
from tb_iotrace.base.memory import trims_memory
from tb_iotrace.model.tab.columns import READ_OPS_RE, WRITE_OPS_RE, TabCapture, IoTable, make_lane


def trace_path(json_path: str) -> str:
    """The trace file beside a record (``<stem>.npz``, as runrecord.record_paths names it)."""
    return json_path[: -len(RECORD_SUFFIX)] + ".npz" if json_path.endswith(RECORD_SUFFIX) else json_path + ".npz"


def _stat_key(path: str) -> tuple[int, int]:
    try:
        st = os.stat(path)
    except OSError:
        return -1, -1
    return st.st_size, st.st_mtime_ns


def cache_key(json_path: str) -> tuple[int, int, int, int, int, int]:
    """(size, mtime) of the JSON, of its trace and of its file table: a periodic flush
    rewrites any of them."""
    st = os.stat(json_path)
    return (st.st_size, st.st_mtime_ns, *_stat_key(trace_path(json_path)),
            *_stat_key(str(table_path(json_path))))


def total_size(json_path: str) -> int:
    """Bytes of the record, its trace and its file table together."""
    key = cache_key(json_path)
    return key[0] + max(key[2], 0) + max(key[4], 0)


def _when(ns: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(ns / 1e9)) if ns > 0 else "an unknown time"


def _io_table(t: dict[str, np.ndarray], t0: int) -> IoTable:
    """The trace columns as the tab's I/O table, rows sorted by (thread, start)."""
    t = checked_trace(t)
    n = len(t["start_ns"])
    order = np.lexsort((t["start_ns"], t["tid"]))
    if n and bool(np.all(order[1:] > order[:-1])):
        order = None  # already sorted: keep the loaded columns as they are

    def col(name: str, dtype) -> np.ndarray:
        a = t[name] if order is None else t[name][order]
        return a.astype(dtype, copy=False)

    ops, paths = t["ops"], t["paths"]
    op = col("op_id", np.int32)
    path = col("file_id", np.int32)
    is_read = np.array([bool(READ_OPS_RE.search(o)) for o in ops] + [False])
    is_write = np.array([bool(WRITE_OPS_RE.search(o)) and not READ_OPS_RE.search(o) for o in ops] + [False])
    return IoTable(start=col("start_ns", np.int64) - t0, end=col("end_ns", np.int64) - t0,
                   op=op.astype(np.int16), path=path, offset=col("offset", np.int64),
                   requested=col("requested", np.int64), returned=col("returned", np.int64),
                   fd=col("fd", np.int32), errno=col("errno", np.int32), tid=col("tid", np.int64),
                   ops=ops, paths=paths, is_read=is_read, is_write=is_write)


@trims_memory
def decode_record(path: str, host: str) -> TabCapture:
    """One record as a :class:`TabCapture` (raises RecordError, a ValueError, when unreadable)."""
    st = os.stat(path)
    rec = read_record(path)
    doc = rec.doc
    t0 = int(doc.get("start_ns") or 0)
    t_end = int(doc.get("end_ns") or t0)
    warnings: list[str] = []
    partial = rec.partial
    trace: dict[str, np.ndarray] | None = None
    try:
        trace = rec.trace()
    except RecordError as exc:
        warnings.append(f"The record's trace cannot be read ({exc}): showing its per-file counters only.")
    if partial:
        warnings.insert(0,
            f"Partial record: this process did not finish writing it (killed, or still running). "
            f"The files table counts its I/O up to its last periodic flush ({_when(t_end)}); "
            + ("the timeline holds its calls up to then." if trace is not None else
               "there is no per-call trace, so no timeline."))
    if trace is None and not partial and int(doc.get("nevents") or 0) > 0 and not warnings:
        warnings.append("This record kept no per-call trace: showing its per-file counters only.")
    try:
        table: Any = rec.table()
    except RecordError as exc:
        table = []
        warnings.append(f"The record's per-file counters cannot be read ({exc}).")
    series = None
    if doc.get("timeseries") is not None:
        try:
            series = TimeSeries.from_dict(doc["timeseries"]).to_dict()
        except TimeSeriesError as exc:
            warnings.append(f"The record's time series cannot be read ({exc}).")
    io = _io_table(trace, t0) if trace is not None else None
    del trace
    try:
        threads = record_threads(doc)
    except RecordError as exc:
        raise RecordError(f"{path}: {exc}") from None
    pid = int(doc.get("pid") or 0)
    lanes = []
    if io is not None and len(io):
        tids, first = np.unique(io.tid, return_index=True)
        bounds = list(first.tolist()) + [len(io)]
        for i, tid in enumerate(tids.tolist()):
            a, b = int(bounds[i]), int(bounds[i + 1])
            th = threads.get(tid, {})
            comm = str(th.get("name") or "")
            label = f"{comm or 'thread'} (tid {tid}{', main' if tid == pid else ''})"
            lanes.append(make_lane(f"io.t{tid}", "io", label, "I/O", io.start[a:b], io.end[a:b],
                                    io.op[a:b], src=None, src_base=a, rows=1, tid=tid,
                                    extra={"host_lane": None, "comm": comm}))
    lo, hi = 0, max(t_end - t0, 1)
    if lanes:
        lo = min(lo, min(int(ln.start.min()) for ln in lanes))
        hi = max(hi, max(int(ln.maxend.max()) for ln in lanes))
    dropped = int(doc.get("dropped") or 0)
    io_info: dict[str, Any] = {
        "source": "record", "dropped": dropped, "capped": 0, "partial": partial,
        "untracked": doc.get("untracked") if isinstance(doc.get("untracked"), dict) else None,
        "process": {k: doc.get(k) for k in ("pid", "ppid", "argv", "start_ns", "end_ns", "exit")},
        "threads": [[tid, int(th.get("pthread_self") or 0), str(th.get("name") or "")]
                    for tid, th in sorted(threads.items())],
        "timeseries": series,   # tb_iotrace.store.timeseries JSON form, or None
        "objects": doc.get("objects"),   # object-storage requests as columns (tb_iotrace.store.objcolumns)
    }
    return TabCapture(path=path, host=host, size=st.st_size, mtime_ns=st.st_mtime_ns, names=[], lanes=lanes,
                   planes={}, io=io, io_info=io_info, counter_records=table, steps=[],
                   steps_source="", extent=(lo, max(hi, lo + 1)), profile_start_ns=t0,
                   hostnames=[str(doc.get("host") or "")], warnings=warnings)


__all__ = ["cache_key", "decode_record", "total_size", "trace_path"]
