"""The plugin's in-memory model of one capture file (one host of one run), columnar.

Time: every time here is **ns since the capture's profile start** (the file's own clock,
``start_ps // 1000``), as int64. Host, device and I/O events share that clock in a saved
capture (the I/O lines live in ``/host:CPU``), so they line up without any conversion.

Lanes: one per XLine with events. Groups:

- ``host``: lines of ``/host:*`` planes (threads), except our I/O lines; ``tf_data`` is set
  for tf.data threads (name starts with ``tf_data`` or the line runs ``Iterator::`` ops).
- ``device``: lines of every ``/device:*`` plane (GPU streams, ``TensorFlow Ops``, ``XLA
  Ops``, ``Steps``, TPU, CUSTOM...).
- ``io``: file accesses, one lane per thread (``io_by="thread"``) or per file
  (``io_by="file"``, the busiest :data:`MAX_FILE_LANES` files, then one lane for the rest).

Each lane keeps its events sorted by (row, start), where ``row`` is the nesting depth
(computed from containment; host TraceMe events nest), plus per-row running maxima of the
ends so a time window is found with two binary searches (see :mod:`tb_iotrace.plugin.level_of_detail`).

Memory: the I/O table is ~60 bytes per event; host/device lanes ~40 bytes per event plus
the event names; nothing else per event is kept (an event's own stats are read back from
the file on demand, by byte range).
"""

from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tb_iotrace.store.filetable import FileTable
from tb_iotrace.model.columnar import MetadataFile, event_stats

MAX_FILE_LANES = 48
MAX_ROWS = 24
# A tf.data thread: a lane label or event name starting with TF_DATA_PREFIX or holding
# TF_DATA_PART (tf_data_flags tests event names without the regex: 5-10x cheaper, and a
# GPU capture's host plane has ~6,000 names).
TF_DATA_PREFIX, TF_DATA_PART = "tf_data", "Iterator::"
TF_DATA_RE = re.compile(f"^{re.escape(TF_DATA_PREFIX)}|{re.escape(TF_DATA_PART)}")
# Steps and input waits: the one rule of tb_iotrace.model.stepwait; the capture's steps are found by
# .steps, its input waits by endpoints/steps.py.
READ_OPS_RE = re.compile(r"read|recv", re.I)
WRITE_OPS_RE = re.compile(r"write|send|sync", re.I)


def tf_data_flags(names: list[str]) -> np.ndarray:
    """TF_DATA_RE.search of each name as two plain string tests (~1 ms for a GPU capture's
    ~6,000 host names against ~7 ms for the regex), then a False for "no name" (-1)."""
    prefix, part = TF_DATA_PREFIX, TF_DATA_PART
    return np.array([n.startswith(prefix) or part in n for n in names] + [False])


def _rows(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Nesting depth of each event (events sorted by start asc, end desc): the number of
    earlier events still open when it starts. Exact for properly nested events."""
    n = len(start)
    if n == 0:
        return np.zeros(0, dtype=np.int16)
    e = np.maximum(end, start + 1)  # zero-length events must not close themselves
    closed = np.searchsorted(np.sort(e), start, side="right")
    depth = np.arange(n, dtype=np.int64) - closed
    return np.clip(depth, 0, MAX_ROWS - 1).astype(np.int16)


@dataclass
class Lane:
    key: str
    group: str  # "host" | "device" | "io"
    name: str
    plane: str
    start: np.ndarray  # int64 ns, sorted by (row, start)
    end: np.ndarray
    name_id: np.ndarray  # int32 into TabCapture.names (io lanes: op code into TabCapture.io.ops)
    row_bounds: np.ndarray  # row r is [row_bounds[r], row_bounds[r+1])
    maxend: np.ndarray  # running max of end within each row
    src: np.ndarray | None = None  # io lanes: io table row per event (None: src_base + i)
    src_base: int = 0
    fpos: np.ndarray | None = None  # host/device: the event's byte range in the file
    flen: np.ndarray | None = None
    plane_index: int = -1
    line_id: int | None = None
    tf_data: bool = False
    tid: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # sent to the client
    cache: dict[str, Any] = field(default_factory=dict, repr=False)  # derived arrays

    @property
    def rows(self) -> int:
        return len(self.row_bounds) - 1

    def io_rows(self, i0: int = 0, i1: int | None = None):
        """I/O table rows of this lane's events [i0, i1): a slice when the lane is a
        contiguous run of the table, else an index array."""
        i1 = len(self.start) if i1 is None else i1
        if self.src is None:
            return slice(self.src_base + i0, self.src_base + i1)
        return self.src[i0:i1]

    def io_row(self, i: int) -> int:
        return self.src_base + i if self.src is None else int(self.src[i])

    def __len__(self) -> int:
        return len(self.start)

    def describe(self) -> dict[str, Any]:
        out = {"key": self.key, "group": self.group, "name": self.name, "plane": self.plane,
               "rows": max(self.rows, 1), "events": len(self), "tf_data": self.tf_data}
        if self.tid is not None:
            out["tid"] = self.tid
        out.update(self.extra)
        return out


def make_lane(key, group, name, plane, start, end, name_id, src=None, rows=None, **kw) -> Lane:
    n = len(start)
    if rows is None:
        order = np.lexsort((-end, start))
        start, end, name_id = start[order], end[order], name_id[order]
        src = src[order] if src is not None else order
        row = _rows(start, end)
        order2 = np.argsort(row, kind="stable")
        if n and row.max() > 0:
            start, end, name_id, src, row = (start[order2], end[order2], name_id[order2],
                                             src[order2], row[order2])
        nrows = int(row.max()) + 1 if n else 1
        bounds = np.searchsorted(row, np.arange(nrows + 1), side="left").astype(np.int64)
    else:  # already sorted by start, one row
        bounds = np.array([0, n], dtype=np.int64)
    if len(bounds) == 2 and (n < 2 or bool(np.all(end[1:] >= end[:-1]))):
        maxend = end  # ends already sorted (calls of one thread do not overlap): no copy
    else:
        maxend = np.empty(n, dtype=np.int64)
        for r in range(len(bounds) - 1):
            a, b = bounds[r], bounds[r + 1]
            if b > a:
                np.maximum.accumulate(end[a:b], out=maxend[a:b])
    if name_id.dtype not in (np.int16, np.int32):
        name_id = name_id.astype(np.int32)
    return Lane(key=key, group=group, name=name, plane=plane, start=start, end=end,
                name_id=name_id, row_bounds=bounds, maxend=maxend, src=src, **kw)


@dataclass
class IoTable:
    """The I/O events, sorted by (thread, start). ``op`` and ``path`` are codes into ``ops``
    and ``paths``."""

    start: np.ndarray
    end: np.ndarray
    op: np.ndarray  # int16
    path: np.ndarray  # int32, -1 = no file
    offset: np.ndarray
    requested: np.ndarray
    returned: np.ndarray
    fd: np.ndarray  # int32
    errno: np.ndarray  # int32
    tid: np.ndarray  # int64
    ops: list[str]
    paths: list[str]
    is_read: np.ndarray  # per op code: bool
    is_write: np.ndarray

    def __len__(self) -> int:
        return len(self.start)

    def moved(self) -> tuple[np.ndarray, np.ndarray]:
        """(bytes read, bytes written) per event: the call's return value when positive."""
        ret = np.maximum(self.returned, 0)
        return (np.where(self.is_read[self.op], ret, 0), np.where(self.is_write[self.op], ret, 0))


@dataclass
class Counters:
    """Darshan per-file records, columnar: one row per (module, path)."""

    paths: list[str]
    modules: list[str]
    names: list[str]  # counter names (integer and float counters together)
    values: np.ndarray  # float64 (rows, names); NaN where a module lacks the counter

    def col(self, name: str) -> np.ndarray:
        try:
            return self.values[:, self.names.index(name)]
        except ValueError:
            return np.full(len(self.paths), np.nan)


def _counters_from_table(table: FileTable) -> Counters:
    """Counters straight from a whole-run record's columns (no dict per file)."""
    names: list[str] = []
    for t in table.modules.values():
        names += [k for k in (*t.names, *t.fnames) if k not in names]
    at = {k: i for i, k in enumerate(names)}
    values = np.full((len(table), len(names)), np.nan)
    r = 0
    paths: list[str] = []
    for t in table.modules.values():
        n = len(t)
        values[r:r + n, [at[k] for k in t.names]] = t.counters
        values[r:r + n, [at[k] for k in t.fnames]] = t.fcounters
        paths += t.path_strings()
        r += n
    return Counters(paths=paths, modules=table.module_names(), names=names, values=values)


def _counters_from(records: list[dict] | FileTable) -> Counters:
    if isinstance(records, FileTable):
        return _counters_from_table(records)
    names: list[str] = []
    seen: dict[str, int] = {}
    for rec in records:
        for part in ("counters", "fcounters"):
            for k in (rec.get(part) or {}):
                if k not in seen:
                    seen[k] = len(names)
                    names.append(k)
    values = np.full((len(records), len(names)), np.nan)
    for i, rec in enumerate(records):
        for part in ("counters", "fcounters"):
            for k, v in (rec.get(part) or {}).items():
                try:
                    values[i, seen[k]] = float(v)
                except (TypeError, ValueError):
                    pass
    return Counters(paths=[str(r.get("path", "")) for r in records],
                    modules=[str(r.get("module", "")) for r in records], names=names, values=values)


@dataclass
class TabCapture:
    """One ``<host>.xplane.pb``, loaded."""

    path: str
    host: str
    size: int
    mtime_ns: int
    names: list[str]
    lanes: list[Lane]
    planes: dict[int, Any]  # index -> XPlane metadata (names, stats; no lines)
    io: IoTable | None
    io_info: dict[str, Any] | None
    counter_records: list[dict[str, Any]] | FileTable  # Darshan records as stored; see ``counters``
    steps: list[dict[str, Any]]
    steps_source: str
    extent: tuple[int, int]
    profile_start_ns: int | None
    hostnames: list[str]
    warnings: list[str] = field(default_factory=list)
    # index -> where the plane's event metadata lie in the file (decoded lazily: not in planes)
    md_files: dict[int, MetadataFile] = field(default_factory=dict)
    no_io_reason: str = ""   # why a capture without tb_iotrace's record has none (xplane.origin)
    profile_stop_ns: int | None = None   # the Task Environment's profile_stop_time
    cache: dict[str, Any] = field(default_factory=dict, repr=False)
    _file_lanes: list[Lane] | None = None
    _counters: Counters | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def counters(self) -> Counters:
        """The per-file counters as a matrix, built on first use (the files table and the
        histograms ask for them; the first timeline paint does not wait for it)."""
        with self._lock:
            if self._counters is None:
                self._counters = _counters_from(self.counter_records)
                self.counter_records = []
            return self._counters

    @property
    def file_records(self) -> int:
        """How many per-file counter records the capture holds."""
        with self._lock:
            got = self._counters
            return len(got.paths) if got is not None else len(self.counter_records)

    def nbytes(self) -> int:
        """About how much memory the loaded capture holds: its arrays (lanes, I/O table,
        counters) plus the strings and stored records, counted as CPython stores them. What the
        plugin's cache budget (:mod:`tb_iotrace.plugin.cache`) is measured in."""
        seen: set[int] = set()
        total = 0

        def arr(a: Any) -> None:
            nonlocal total
            if isinstance(a, np.ndarray):
                base = a if a.base is None else a.base
                if id(base) not in seen:
                    seen.add(id(base))
                    total += base.nbytes if isinstance(base, np.ndarray) else a.nbytes

        def strs(xs: list[str]) -> None:
            nonlocal total
            total += 8 * len(xs) + sum(49 + len(x) for x in xs)  # list slot + str object

        with self._lock:
            lanes = list(self.lanes) + list(self._file_lanes or [])
            counters, records = self._counters, self.counter_records
        for ln in lanes:
            for a in (ln.start, ln.end, ln.name_id, ln.row_bounds, ln.maxend, ln.src, ln.fpos, ln.flen):
                arr(a)
            total += 600  # the Lane object and its small fields
        strs(self.names)
        io = self.io
        if io is not None:
            for a in (io.start, io.end, io.op, io.path, io.offset, io.requested, io.returned, io.fd,
                      io.errno, io.tid):
                arr(a)
            strs(io.paths)
            strs(io.ops)
        if counters is not None:
            arr(counters.values)
            strs(counters.paths)
        # a stored Darshan record: a dict of ~60 counters (~100 bytes each as Python objects)
        if isinstance(records, FileTable):
            for t in records.modules.values():
                for a in (t.path, t.record_id, t.counters, t.fcounters, t.paths.data, t.paths.end):
                    arr(a)
        else:
            total += sum(150 + 100 * (len(r.get("counters") or {}) + len(r.get("fcounters") or {}))
                         for r in records)
        # the planes' metadata (protobuf messages: about their serialized size in memory)
        total += sum(m.ByteSize() for m in self.planes.values() if hasattr(m, "ByteSize"))
        total += sum(f[1].nbytes + f[2].nbytes + f[3].nbytes for f in self.md_files.values())
        return total + 4096

    # -- lanes
    def io_lanes(self, io_by: str) -> list[Lane]:
        if io_by == "file":
            with self._lock:
                if self._file_lanes is None:
                    self._file_lanes = _file_lanes(self.io) if self.io is not None else []
                return self._file_lanes
        return [ln for ln in self.lanes if ln.group == "io"]

    def timeline_lanes(self, io_by: str = "thread") -> list[Lane]:
        base = [ln for ln in self.lanes if ln.group != "io"]
        return base + self.io_lanes(io_by)

    def lane(self, key: str) -> Lane | None:
        for ln in self.lanes:
            if ln.key == key:
                return ln
        if key.startswith("io.f"):
            for ln in self.io_lanes("file"):
                if ln.key == key:
                    return ln
        return None

    def host_lane_for_tid(self, tid: int) -> Lane | None:
        for ln in self.lanes:
            if ln.group == "io" and ln.tid == tid:
                hk = ln.extra.get("host_lane")
                return self.lane(hk) if hk else None
        return None

    def event_stats(self, lane: Lane, index: int) -> dict[str, Any]:
        meta = self.planes.get(lane.plane_index)
        if meta is None or lane.fpos is None:
            return {}
        try:
            st = os.stat(self.path)
            if st.st_size != self.size or st.st_mtime_ns != self.mtime_ns:
                return {}
            return event_stats(self.path, meta, int(lane.fpos[index]), int(lane.flen[index]),
                               self.md_files.get(lane.plane_index))
        except Exception:  # the file changed under us; details are best effort
            return {}


def _file_lanes(io: IoTable) -> list[Lane]:
    if len(io) == 0:
        return []
    counts = np.bincount(io.path + 1, minlength=len(io.paths) + 1)[1:]
    top = np.argsort(-counts, kind="stable")[:MAX_FILE_LANES]
    top = top[counts[top] > 0]
    lanes = []
    chosen = np.zeros(len(io.paths) + 1, dtype=bool)
    for k in top.tolist():
        chosen[k + 1] = True
        idx = np.flatnonzero(io.path == k)
        idx = idx[np.argsort(io.start[idx], kind="stable")]
        lanes.append(make_lane(f"io.f{k}", "io", io.paths[k], "files", io.start[idx], io.end[idx],
                                io.op[idx], src=idx.astype(np.int32), rows=1,
                                extra={"file": io.paths[k]}))
    rest = np.flatnonzero(~chosen[io.path + 1])
    if len(rest):
        rest = rest[np.argsort(io.start[rest], kind="stable")]
        nfiles = int(np.count_nonzero(counts)) - len(top)
        label = f"other files ({nfiles})" if nfiles > 0 else "no file"
        lanes.append(make_lane("io.fother", "io", label, "files", io.start[rest], io.end[rest],
                                io.op[rest], src=rest.astype(np.int32), rows=1))
    return lanes


__all__ = ["TabCapture", "Counters", "IoTable", "Lane", "MAX_FILE_LANES"]
