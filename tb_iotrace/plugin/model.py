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
ends so a time window is found with two binary searches (see :mod:`.lod`).

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

from .._memory import trim_memory
from ..filetable import FileTable
from ..stepwait import DEVICE_STEPS_LINE
from ..xplane import XSpace, read_io_info
from ..xplane.schema import (EVENT_STATS, IO_STAT, LINE_PREFIX, STAT_ERRNO, STAT_FD, STAT_OFFSET,
                               STAT_PATH, STAT_REQUESTED, STAT_RETURNED, thread_line_id)
from ..xplane.origin import missing_io_reason
from ..xplane.columnar import MetadataFile, PlaneData, SpaceData, decode_xspace, event_stats
from .steps import capture_steps

# bytes_requested / bytes_returned are left out of events where they equal their event
# kind's (tb_iotrace.io/2): decoded with this marker where absent, then filled in.
ABSENT = -(1 << 63)
STAT_DEFAULTS = tuple({STAT_PATH: 0, STAT_OFFSET: -1, STAT_REQUESTED: ABSENT, STAT_RETURNED: ABSENT,
                       STAT_FD: -1, STAT_ERRNO: 0}[name] for name in EVENT_STATS)
MAX_FILE_LANES = 48
MAX_ROWS = 24
# A tf.data thread: a lane label or event name starting with TF_DATA_PREFIX or holding
# TF_DATA_PART (tf_data_flags tests event names without the regex: 5-10x cheaper, and a
# GPU capture's host plane has ~6,000 names).
TF_DATA_PREFIX, TF_DATA_PART = "tf_data", "Iterator::"
TF_DATA_RE = re.compile(f"^{re.escape(TF_DATA_PREFIX)}|{re.escape(TF_DATA_PART)}")
# Steps and input waits: the one rule of tb_iotrace.stepwait; the capture's steps are found by
# .steps, its input waits by impl/timeseries.py.
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
    name_id: np.ndarray  # int32 into Capture.names (io lanes: op code into Capture.io.ops)
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
class Capture:
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
        plugin's cache budget (:mod:`.cache`) is measured in."""
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


def _plane_names(plane: PlaneData) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(sorted metadata ids, their index into the returned names)."""
    ids, names = plane.metadata_names()
    return ids, np.arange(len(ids), dtype=np.int32), names


def _lookup(ids: np.ndarray, keys: np.ndarray, unknown: int) -> np.ndarray:
    if len(keys) == 0:
        return np.full(len(ids), unknown, dtype=np.int32)
    at = np.minimum(np.searchsorted(keys, ids), len(keys) - 1)
    return np.where(keys[at] == ids, at, unknown).astype(np.int32)


def _short_plane(name: str) -> str:
    return name[len("/device:"):] if name.startswith("/device:") else name


def _task_env(space: SpaceData) -> tuple[int | None, int | None]:
    for p in space.planes:
        if p.name == "Task Environment":
            vals = {}
            for st in p.meta.stats:
                md = p.meta.stat_metadata.get(st.metadata_id)
                kind = st.WhichOneof("value")
                if md is not None and kind in ("int64_value", "uint64_value"):
                    vals[md.name] = int(getattr(st, kind))
            return vals.get("profile_start_time"), vals.get("profile_stop_time")
    return None, None


def load_capture(path: str, host: str) -> Capture:
    """Decode one capture file into a :class:`Capture` (raises XPlaneError)."""
    try:
        return _load_capture(path, host)
    finally:
        trim_memory()


def _load_capture(path: str, host: str) -> Capture:
    st = os.stat(path)
    space = decode_xspace(
        path,
        stats_for=lambda pname, meta, ln: pname.startswith("/host:") and ln.name.startswith(LINE_PREFIX),
        stat_names=EVENT_STATS, stat_defaults=STAT_DEFAULTS, lazy_event_metadata=True)
    names: list[str] = []
    lanes: list[Lane] = []
    io_parts = []
    io_info = None
    device_steps: list[dict[str, Any]] = []
    device_source = ""
    host_line_key: dict[int, str] = {}
    for plane in space.planes:
        is_host = plane.name.startswith("/host:")
        is_dev = plane.name.startswith("/device:")
        if is_host and io_info is None:
            info = _io_info(plane)
            if info is not None:
                io_info = info
        if not (is_host or is_dev):
            continue
        keys, codes, pnames = _plane_names(plane)
        base = len(names)
        names.extend(pnames)
        names_here = None
        for ln in plane.lines:
            if ln.count == 0:
                continue
            sl = slice(ln.first, ln.first + ln.count)
            if is_host and ln.name.startswith(LINE_PREFIX):
                io_parts.append((plane, ln))
                continue
            start = plane.start_ps[sl] // 1000
            end = (plane.start_ps[sl] + plane.duration_ps[sl]) // 1000
            nid = _lookup(plane.metadata_id[sl], keys, -1)
            nid = np.where(nid >= 0, nid + base, -1).astype(np.int32)
            src = np.arange(ln.first, ln.first + ln.count, dtype=np.int64)
            key = f"p{plane.index}.{ln.index}"
            label = ln.label or f"line {ln.id}"
            tf_data = False
            if is_host:
                if TF_DATA_RE.search(label):
                    tf_data = True
                else:
                    if names_here is None:
                        names_here = tf_data_flags(pnames)
                    tf_data = bool(names_here[np.where(nid >= 0, nid - base, -1)].any())
                host_line_key[ln.id] = key
            lane = make_lane(key, "host" if is_host else "device", label if is_host else
                              f"{_short_plane(plane.name)} {label}", plane.name, start, end, nid,
                              src=src, plane_index=plane.index, line_id=ln.id, tf_data=tf_data)
            lanes.append(lane)
            if is_dev and label == DEVICE_STEPS_LINE and not device_steps:
                device_steps = [{"start": int(s), "end": int(e), "name": names[i] if i >= 0 else ""}
                                for s, e, i in zip(lane.start.tolist(), lane.end.tolist(), lane.name_id.tolist())]
                device_steps.sort(key=lambda s: s["start"])
                device_source = f"{plane.name} Steps"

    io = _io_table(io_parts, io_info) if io_parts else None
    del io_parts
    # Keep, per host/device event, only its byte range in the file (for details); drop the
    # plane arrays.
    for lane in lanes:
        plane = space.planes[lane.plane_index]
        lane.fpos = plane.file_pos[lane.src]
        lane.flen = plane.file_len[lane.src]
        lane.src = None
    used = {lane.plane_index for lane in lanes}
    planes = {p.index: p.meta for p in space.planes if p.index in used}
    md_files = {p.index: p.md_file for p in space.planes if p.index in used and p.md_file is not None}
    for plane in space.planes:
        plane.metadata_id = plane.start_ps = plane.duration_ps = None  # type: ignore[assignment]
        plane.file_pos = plane.file_len = None  # type: ignore[assignment]
        plane.stats = {}
    # I/O lanes, one per thread.
    if io is not None:
        threads = {int(t): (int(p), str(c)) for t, p, c in (io_info or {}).get("threads", [])}
        tids, first = np.unique(io.tid, return_index=True)
        bounds = list(first) + [len(io)]
        for i, tid in enumerate(tids.tolist()):
            a, b = int(bounds[i]), int(bounds[i + 1])
            pthread, comm = threads.get(tid, (0, ""))
            host_key = host_line_key.get(thread_line_id(pthread)) if pthread else None
            host_name = next((ln.name for ln in lanes if ln.key == host_key), None) if host_key else None
            label = f"{host_name or comm or 'thread'} (tid {tid})"
            lanes.append(make_lane(f"io.t{tid}", "io", label, "I/O", io.start[a:b], io.end[a:b],
                                    io.op[a:b], src=None, src_base=a, rows=1,
                                    tid=tid, extra={"host_lane": host_key, "comm": comm}))
    _order_lanes(lanes)

    steps, steps_source = capture_steps(path, names, lanes, planes, md_files, device_steps, device_source)
    for k, s in enumerate(steps):
        s["index"] = k

    if lanes:
        lo = min(int(ln.start.min()) for ln in lanes if len(ln)) if any(len(ln) for ln in lanes) else 0
        hi = max(int(ln.maxend.max()) for ln in lanes if len(ln)) if any(len(ln) for ln in lanes) else 1
    else:
        lo, hi = 0, 1
    start_ns, stop_ns = _task_env(space)
    no_io_reason = missing_io_reason(p.full_meta() for p in space.planes) if io_info is None else ""
    counter_records = list((io_info or {}).get("counters", []) or [])
    if io_info is not None:
        # the per-kind tables (~50,000 entries each for a million events) are used up
        io_info = {k: v for k, v in io_info.items()
                   if k not in ("counters", "event_kinds", "added_event_metadata", "added_stat_metadata")}
    return Capture(path=path, host=host, size=st.st_size, mtime_ns=st.st_mtime_ns, names=names,
                   lanes=lanes, planes=planes, md_files=md_files, io=io, io_info=io_info, counter_records=counter_records,
                   steps=steps, steps_source=steps_source, extent=(lo, max(hi, lo + 1)),
                   profile_start_ns=start_ns, profile_stop_ns=stop_ns, hostnames=space.hostnames,
                   warnings=list(space.warnings) + list(space.errors), no_io_reason=no_io_reason)


def _order_lanes(lanes: list[Lane]) -> None:
    """Host lanes (/host:CPU first, tf.data threads first, then by name), device lanes (by
    device kind and number), I/O lanes (by tid)."""

    def key(ln: Lane):
        if ln.group == "host":
            return (0, ln.plane != "/host:CPU", ln.plane, not ln.tf_data, ln.name.lower())
        if ln.group == "device":
            return (1, _device_sort(ln.plane), ln.name)
        return (2, ln.tid or 0, ln.name)

    lanes.sort(key=key)


def _device_sort(plane: str):
    m = re.match(r"/device:([A-Z_]+):(\d+)", plane)
    return (m.group(1), int(m.group(2))) if m else (plane, 0)


def _io_info(plane: PlaneData) -> dict[str, Any] | None:
    """The tb_iotrace.io JSON of a plane, read through the xplane reader API."""
    for st in plane.meta.stats:
        md = plane.meta.stat_metadata.get(st.metadata_id)
        if md is not None and md.name == IO_STAT:
            # A plane with just this stat: copying the whole metadata (~50,000 event
            # metadata for a million I/O events) cost time and ~3x its size in memory.
            space = XSpace()
            pl = space.planes.add(id=plane.meta.id, name=plane.meta.name)
            pl.stats.add().CopyFrom(st)
            pl.stat_metadata[st.metadata_id].CopyFrom(md)
            info = read_io_info(space)
            if info is not None:
                return info
    return None


def _fill_bytes(requested: np.ndarray, returned: np.ndarray, kind_req: np.ndarray | None,
                kind_ret: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """bytes_requested/returned with the absent ones (ABSENT) filled in, in place: from the
    event's kind where it has one (``kind_*`` per event, ABSENT where none), else returned
    0 and requested == returned (format /1 wrote both; absent means a foreign event)."""
    for col, kind in ((returned, kind_ret), (requested, kind_req)):
        absent = col == ABSENT
        if absent.any():
            if kind is not None:
                col[absent] = kind[absent]
                absent &= col == ABSENT
            col[absent] = 0 if col is returned else returned[absent]
    return requested, returned


def _factorize(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sorted distinct ids, code of each) like np.unique(return_inverse=True), in O(n) with
    a dense table when the ids are small non-negative integers (metadata ids are)."""
    if len(ids) == 0:
        return ids[:0], np.zeros(0, dtype=np.int64)
    lo, hi = int(ids.min()), int(ids.max())
    if lo < 0 or hi > 50_000_000:
        uniq, inv = np.unique(ids, return_inverse=True)
        return uniq, inv.reshape(-1)
    present = np.zeros(hi + 1, dtype=bool)
    present[ids] = True
    uniq = np.flatnonzero(present)
    code = np.cumsum(present, dtype=np.int64) - 1
    return uniq.astype(ids.dtype), code[ids]


def _kind(raw: Any, text: str, exact_ops: dict[str, str]) -> tuple[str, str, int, int, int]:
    """(call, path, fd, bytes_requested, bytes_returned) of the events of XEventMetadata
    ``text``: its ``event_kinds`` entry (format /2, read as schema.event_kinds does), else
    the name is the call (format /1)."""
    if raw is None:
        return exact_ops.get(text, text), "", -1, ABSENT, ABSENT
    return str(raw[0]), str(raw[1]), int(raw[2]), int(raw[3]), int(raw[4])


_TID_RE = re.compile(r"\(tid (-?\d+)\)\s*$")


def _io_table(parts, info) -> IoTable:
    """Build the I/O table from the decoded I/O lines, one column at a time, dropping each
    decoded plane column once copied (keeps the peak near one copy of the events)."""
    by_name = {li.get("name"): li for li in (info or {}).get("lines", [])}
    exact_ops = (info or {}).get("exact_ops", {}) or {}
    exact_paths = (info or {}).get("exact_paths", {}) or {}
    plane = parts[0][0]
    slices, tids, orders = [], [], []
    for pl, ln in parts:
        sl = slice(ln.first, ln.first + ln.count)
        li = by_name.get(ln.name)
        if li is not None and "tid" in li:
            tid = int(li["tid"])
        else:
            m = _TID_RE.search(ln.name)
            tid = int(m.group(1)) if m else -ln.id
        s = pl.start_ps[sl]
        order = np.argsort(s, kind="stable") if len(s) > 1 and bool(np.any(s[1:] < s[:-1])) else None
        slices.append((pl, sl))
        tids.append(tid)
        orders.append(order)
    # rows ordered by (tid, start)
    line_order = sorted(range(len(slices)), key=lambda k: tids[k])
    slices = [slices[k] for k in line_order]
    orders = [orders[k] for k in line_order]
    tids = [tids[k] for k in line_order]

    # The usual layout (tb_iotrace writes one line per thread, by tid, events in time
    # order) makes every column one contiguous run of its plane column: a view, no copy.
    contiguous = (all(o is None for o in orders) and all(pl is slices[0][0] for pl, _ in slices)
                  and all(a[1].stop == b[1].start for a, b in zip(slices, slices[1:])))

    def column(get) -> np.ndarray:
        if contiguous and slices:
            return get(slices[0][0])[slices[0][1].start:slices[-1][1].stop]
        parts_ = []
        for (pl, sl), order in zip(slices, orders):
            a = get(pl)[sl]
            parts_.append(a if order is None else a[order])
        return np.concatenate(parts_) if parts_ else np.zeros(0, np.int64)

    def stat(name) -> np.ndarray:
        col = column(lambda pl: pl.stats[name])
        for pl, _ in slices:
            pl.stats.pop(name, None)
        return col

    start_ps = column(lambda pl: pl.start_ps)
    start = start_ps // 1000
    end = (start_ps + column(lambda pl: pl.duration_ps)) // 1000
    del start_ps
    tid = np.concatenate([np.full(sl.stop - sl.start, t, dtype=np.int64) for (pl, sl), t in zip(slices, tids)])
    # call, path and fd per event: from its metadata's event kind (format /2: the record maps
    # the metadata name to (call, path, fd)), or the metadata name is the call and path/fd
    # are event stats (format /1)
    md_ids, md_code = _factorize(column(lambda pl: pl.metadata_id))
    # Looked up for the kinds present only, column by column (a million-event capture has
    # ~50,000 kinds: a loop of numpy item assignments took ~0.15 s of the cold load).
    raw_kinds = (info or {}).get("event_kinds") or {}
    table_ids, table_names = plane.metadata_names()
    at = np.minimum(np.searchsorted(table_ids, md_ids), max(len(table_ids) - 1, 0))
    found = (table_ids[at] == md_ids) if len(table_ids) else np.zeros(len(md_ids), dtype=bool)
    texts = [table_names[i] if hit else "?" for i, hit in zip(at.tolist(), found.tolist())]
    rows = [_kind(raw_kinds.get(t), t, exact_ops) for t in texts]
    op_index: dict[str, int] = {}
    path_index: dict[str, int] = {}
    md_op = np.array([op_index.setdefault(r[0], len(op_index)) for r in rows], dtype=np.int16)
    md_path = np.array([path_index.setdefault(r[1], len(path_index)) if r[1] else -1 for r in rows],
                       dtype=np.int32)
    md_fd = np.array([r[2] for r in rows], dtype=np.int32)
    md_req = np.array([r[3] for r in rows], dtype=np.int64)
    md_ret = np.array([r[4] for r in rows], dtype=np.int64)
    del rows, texts
    ref_ids, ref_code = _factorize(stat(STAT_PATH))
    ref_path = np.full(len(ref_ids), -1, dtype=np.int32)
    for j, k in enumerate(ref_ids.tolist()):
        md = plane.meta.stat_metadata.get(k) if k else None
        text = md.name if md is not None else ""
        text = exact_paths.get(text, text)
        ref_path[j] = path_index.setdefault(text, len(path_index)) if text else -1
    ops, paths = list(op_index), list(path_index)
    op_code = md_op[md_code]
    path_code = md_path[md_code]
    if (ref_path != -1).any():
        by_ref = ref_path[ref_code]
        path_code = np.where(by_ref != -1, by_ref, path_code)
    del ref_code
    fd = stat(STAT_FD).astype(np.int32)
    stat_fd = fd != -1
    fd = np.where(stat_fd, fd, md_fd[md_code]) if stat_fd.any() else md_fd[md_code]
    has_kind = (md_req != ABSENT).any()
    requested, returned = _fill_bytes(stat(STAT_REQUESTED), stat(STAT_RETURNED),
                                      md_req[md_code] if has_kind else None,
                                      md_ret[md_code] if has_kind else None)
    del md_code, stat_fd
    is_read = np.array([bool(READ_OPS_RE.search(o)) for o in ops] + [False])
    is_write = np.array([bool(WRITE_OPS_RE.search(o)) and not READ_OPS_RE.search(o) for o in ops] + [False])
    return IoTable(start=start, end=end, op=op_code, path=path_code,
                   offset=stat(STAT_OFFSET), requested=requested,
                   returned=returned,
                   fd=fd, errno=stat(STAT_ERRNO).astype(np.int32), tid=tid,
                   ops=ops, paths=paths, is_read=is_read, is_write=is_write)


__all__ = ["Capture", "Counters", "IoTable", "Lane", "load_capture", "MAX_FILE_LANES"]
