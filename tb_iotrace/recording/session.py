"""Native recording sessions and what one records in this process (``Recording``: Darshan
counters per file and the per-call trace, columnar). :mod:`.api` builds ``enable``/``capture``
on top; the TensorFlow glue (:mod:`.tensorflow`) uses the sessions directly."""
from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

import numpy as np

from tb_iotrace.base import objreqs
from tb_iotrace.recording import object_hooks
from tb_iotrace.recording.forklock import ForkSafeLock
from tb_iotrace.recording.ffi import NativeError, last_error, native
from tb_iotrace.store.filetable import FileTable, ModuleRows, PathTable
from tb_iotrace.store.machine import machine_facts
from tb_iotrace.store.objcolumns import to_columns
from tb_iotrace.recording.opnames import MODULES, counter_names, op_names
from tb_iotrace.store.timeseries import TimeSeries

__all__ = ["Recording", "EventTable", "FileRecord", "FileRecords", "NativeError", "RecordedThread", "Untracked", "begin_session",
           "check_layout", "end_all_and_disable", "end_session", "forget"]

# The layout of struct tbio_event (native/tbio.h); checked against cffi's
# offsets at first use.
EVENT_DTYPE = np.dtype([
    ("start_ns", "<u8"), ("end_ns", "<u8"), ("offset", "<i8"), ("requested", "<i8"),
    ("returned", "<i8"), ("file", "<u4"), ("fd", "<i4"), ("err", "<i4"), ("op", "<u2"),
    ("thread", "<u2"),
])
NO_FILE = 0xFFFFFFFF
_lock = ForkSafeLock()
# Native sessions recording now (captures, TensorFlow windows), so disable() can end them.
_live: set[Any] = set()
_left_out_at: dict[Any, int] = {}   # {session: object requests left out past the cap before it}


def begin_session() -> Any:
    """Start a native recording session (up to 4 record at once, each exact for its window)."""
    ffi, lib = native()
    with _lock:
        sess = lib.tbio_begin()
        if sess == ffi.NULL:
            raise NativeError(f"cannot start a capture: {last_error()}")
        _live.add(sess)
        _left_out_at[sess] = objreqs.dropped()
    object_hooks.acquire()
    return sess


def end_session(sess: Any, recording: "Recording | None") -> None:
    """Stop ``sess`` and fill ``recording`` with its data (left empty if disable() ended it first);
    ``None``: end it unread (nothing copied out)."""
    ffi, lib = native()
    with _lock:
        if sess not in _live:
            return
        _live.discard(sess)
        left_out_at = _left_out_at.pop(sess, 0)
        ended = lib.tbio_end(sess)
    try:
        if ended != ffi.NULL and recording is None:
            lib.tbio_session_free(ended)
        elif ended != ffi.NULL:
            try:
                recording._fill(ended)
            finally:
                lib.tbio_session_free(ended)
            recording.objects = objreqs.between(recording.start_ns, recording.end_ns)
            recording.objects_left_out = max(0, objreqs.dropped() - left_out_at)
    finally:
        object_hooks.release()


def end_all_and_disable() -> None:
    """End every live session without reading it, then unpatch (one step: no session can
    begin in between)."""
    _, lib = native()
    with _lock:
        for sess in list(_live):
            ended = lib.tbio_end(sess)
            if ended:
                lib.tbio_session_free(ended)
            object_hooks.release()
        _live.clear()
        _left_out_at.clear()
        lib.tbio_disable()


def forget(sess: Any) -> None:
    """Drop ``sess`` from the live set without ending it: in a forked child the shim has
    already dropped the parent's sessions."""
    with _lock:
        _live.discard(sess)
        _left_out_at.pop(sess, None)


def check_layout() -> None:
    ffi, _ = native()
    if ffi.sizeof("tbio_event") != EVENT_DTYPE.itemsize:
        raise NativeError("tbio_event layout differs from EVENT_DTYPE")
    for name in EVENT_DTYPE.names or ():
        if ffi.offsetof("tbio_event", name) != EVENT_DTYPE.fields[name][1]:
            raise NativeError(f"tbio_event.{name} offset differs from EVENT_DTYPE")


@dataclass(frozen=True)
class FileRecord:
    """Darshan counters of one file in one module."""

    path: str                   # os.fsdecode'd (non-UTF-8 bytes kept as surrogates)
    path_bytes: bytes
    module: str                 # "POSIX" or "STDIO"
    record_id: int
    counters: dict[str, int]
    fcounters: dict[str, float]

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "module": self.module, "record_id": self.record_id,
                "counters": dict(self.counters), "fcounters": dict(self.fcounters)}


class FileRecords(Sequence[FileRecord]):
    """A recording's files as :class:`FileRecord` objects, each built when it is read: the
    recording keeps them as columns (:attr:`Recording.table`), so its stop costs no Python object
    per file."""

    def __init__(self, table: FileTable) -> None:
        self._parts = [t for t in table.modules.values() if len(t)]
        self._ends = np.cumsum([len(t) for t in self._parts]).tolist()
        self._built: dict[int, FileRecord] = {}   # each file's record is built once

    def __len__(self) -> int:
        return self._ends[-1] if self._ends else 0

    def _at(self, i: int) -> FileRecord:
        got = self._built.get(i)
        if got is None:
            k = int(np.searchsorted(self._ends, i, side="right"))
            got = self._built[i] = _file_record(self._parts[k], i - (self._ends[k - 1] if k else 0))
        return got

    def index(self, path: bytes, module: str) -> int | None:
        """The position of the file ``path`` (bytes) in ``module``, or None."""
        base = 0
        for t in self._parts:
            if t.module == module:
                for i in range(len(t)):
                    if t.path_bytes(i) == path:
                        return base + i
            base += len(t)
        return None

    @overload
    def __getitem__(self, i: int) -> FileRecord: ...
    @overload
    def __getitem__(self, i: slice) -> list[FileRecord]: ...

    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(i)
        return self._at(i)

    def __iter__(self) -> Iterator[FileRecord]:
        for i in range(len(self)):
            yield self._at(i)

    def __eq__(self, other: object) -> bool:
        return list(self) == list(other) if isinstance(other, (list, tuple, FileRecords)) else NotImplemented

    def __repr__(self) -> str:
        return f"FileRecords({len(self)} files)"


def _file_record(t: ModuleRows, i: int) -> FileRecord:
    pb = t.path_bytes(i)
    return FileRecord(os.fsdecode(pb), pb, t.module, int(t.record_id[i]), dict(zip(t.names, t.counters[i].tolist())),
                      dict(zip(t.fnames, t.fcounters[i].tolist())))


class _FileNames(Mapping[int, str]):
    """file id -> path (or module) of the files a recording names, as columns; the dict is built
    on first use as a mapping (a whole-run recording may name a million files)."""

    def __init__(self, parts: list[tuple[ModuleRows, bool]]) -> None:
        self._parts = parts   # (rows, True: the value is the module, else the path)
        ids = [t.id for t, _ in parts if t.id is not None and len(t)]
        self._ids = np.concatenate(ids) if ids else np.zeros(0, np.uint32)
        self._order = np.argsort(self._ids, kind="stable")
        self._dict: dict[int, str] | None = None

    def _values(self, rows: np.ndarray) -> list[str]:
        rows = np.asarray(rows, dtype=np.int64)
        out = np.empty(len(rows), dtype=object)
        ends = np.cumsum([len(t) for t, _ in self._parts])
        part = np.searchsorted(ends, rows, side="right")
        for k, (t, is_module) in enumerate(self._parts):
            sel = np.nonzero(part == k)[0]
            if len(sel):
                local = rows[sel] - (int(ends[k - 1]) if k else 0)
                out[sel] = [t.module] * len(sel) if is_module else t.paths.strings(t.path[local])
        return out.tolist()

    def lookup(self, ids: np.ndarray) -> list[str]:
        ids = np.asarray(ids, dtype=np.int64)
        if not len(ids) or not len(self._ids):
            return [""] * len(ids)
        sid = self._ids[self._order].astype(np.int64)
        pos = np.minimum(np.searchsorted(sid, ids), len(sid) - 1)
        found = sid[pos] == ids
        vals = self._values(self._order[pos[found]])
        out = [""] * len(ids)
        for i, v in zip(np.nonzero(found)[0].tolist(), vals):
            out[i] = v
        return out

    def _full(self) -> dict[int, str]:
        if self._dict is None:
            self._dict = dict(zip(self._ids.tolist(), self._values(np.arange(len(self._ids)))))
        return self._dict

    def __getitem__(self, k: int) -> str:
        return self._full()[k]

    def __iter__(self) -> Iterator[int]:
        return iter(self._full())

    def __len__(self) -> int:
        return len(self._ids)


@dataclass(frozen=True)
class RecordedThread:
    index: int
    tid: int                    # OS thread id
    pthread_self: int           # pthread_t value
    name: str                   # comm name
    nevents: int
    dropped: int


@dataclass
class EventTable:
    """The per-operation trace, columnar: one row per call, all arrays of equal length."""

    start_ns: np.ndarray        # CLOCK_REALTIME epoch ns
    end_ns: np.ndarray
    op_id: np.ndarray
    file_id: np.ndarray         # index into paths/modules, NO_FILE (0xffffffff) when none
    fd: np.ndarray
    offset: np.ndarray          # -1 when none
    requested: np.ndarray       # -1 when not a data call
    returned: np.ndarray        # -1 on failure
    errno: np.ndarray           # 0 when the call succeeded
    thread: np.ndarray          # index into Recording.threads
    tid: np.ndarray             # OS thread id per row
    op_names: tuple[str, ...] = ()
    paths: Mapping[int, str] = field(default_factory=dict)     # file id -> path
    modules: Mapping[int, str] = field(default_factory=dict)   # file id -> module

    def __len__(self) -> int:
        return int(self.start_ns.shape[0])

    @property
    def op(self) -> np.ndarray:
        """Op names per row (e.g. "pread64", "open", "fwrite")."""
        names = np.array(self.op_names, dtype=object)
        return names[self.op_id] if len(self) else np.array([], dtype=object)

    def file_codes(self, table: dict[int, str]) -> tuple[np.ndarray, list[str]]:
        """(code per row, names): a file-id keyed table as a small lookup list, "" for
        NO_FILE/unknown; no str object per row."""
        if not len(self):
            return np.zeros(0, dtype=np.int64), [""]
        ids = self.file_id.astype(np.int64)
        top = int(ids[ids != NO_FILE].max(initial=-1)) + 1
        lut = [""] * (top + 1)
        for k, v in table.items():
            if k < top:
                lut[k] = v
        return np.where(ids == NO_FILE, top, ids), lut

    def _by_file(self, table: dict[int, str]) -> np.ndarray:
        """Per-row lookup of a file-id keyed table, vectorized ("" for NO_FILE/unknown)."""
        if not len(self):
            return np.array([], dtype=object)
        codes, names = self.file_codes(table)
        lut = np.empty(len(names), dtype=object)
        lut[:] = names
        return lut[codes]

    def path_names(self, ids: np.ndarray) -> list[str]:
        """The paths of file ids ``ids`` ("" for unknown ones), without building every path."""
        look = getattr(self.paths, "lookup", None)
        if look is not None:
            return look(ids)
        return [self.paths.get(int(k), "") for k in np.asarray(ids).tolist()]

    @property
    def path(self) -> np.ndarray:
        """File path per row ("" when the call named no traced file)."""
        return self._by_file(self.paths)

    @property
    def module(self) -> np.ndarray:
        return self._by_file(self.modules)


@dataclass(frozen=True)
class Untracked:
    """What a recording saw but could not track, counted instead of dropped:
    files past the file-table bound (``set_max_files``; their opens, calls and
    bytes) and calls a signal handler made while its thread was inside the
    shim (passed through untraced)."""

    files: int = 0              # opens of files that did not fit (not distinct files), see tbio.h
    calls: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    reentrant_calls: int = 0
    examples: tuple[str, ...] = ()   # a few of the paths

    def __bool__(self) -> bool:
        return bool(self.files or self.calls or self.reentrant_calls)

    def to_dict(self) -> dict[str, Any]:
        return {"files": self.files, "calls": self.calls, "bytes_read": self.bytes_read,
                "bytes_written": self.bytes_written, "reentrant_calls": self.reentrant_calls,
                "examples": list(self.examples)}


def _untracked_of(sess: Any) -> Untracked:
    ffi, lib = native()
    u = ffi.new("tbio_untracked_info *")
    if lib.tbio_session_untracked(sess, u) != 0:
        return Untracked()
    size = ffi.new("size_t *")
    examples = []
    for i in range(int(u.nexamples)):
        p = lib.tbio_session_untracked_path(sess, i, size)
        if p != ffi.NULL:
            examples.append(os.fsdecode(bytes(ffi.buffer(p, size[0]))))
    return Untracked(int(u.files), int(u.calls), int(u.bytes_read), int(u.bytes_written),
                     int(u.reentrant_calls), tuple(examples))


def _timeseries_of(sess: Any) -> TimeSeries | None:
    """The series of an ended native session (None when the shim cannot say)."""
    ffi, lib = native()
    info = ffi.new("tbio_timeseries_info *")
    if lib.tbio_session_timeseries(sess, info, ffi.NULL, ffi.NULL, ffi.NULL, ffi.NULL, 0) != 0:
        return None
    n = int(info.nbins)
    rd, wr, calls = (ffi.new("uint64_t[]", max(n, 1)) for _ in range(3))
    io = ffi.new("double[]", max(n, 1))
    lib.tbio_session_timeseries(sess, info, rd, wr, calls, io, n)
    modules = {}
    mr, mw = ffi.new("uint64_t[]", max(n, 1)), ffi.new("uint64_t[]", max(n, 1))
    for k, name in enumerate(MODULES):   # the native module numbers, in order
        lib.tbio_session_timeseries_module(sess, k, mr, mw, n)
        modules[name] = (tuple(ffi.unpack(mr, n)), tuple(ffi.unpack(mw, n)))
    return TimeSeries(int(info.start_ns), float(info.bin_ns), tuple(ffi.unpack(rd, n)), tuple(ffi.unpack(wr, n)),
                      tuple(ffi.unpack(calls, n)), tuple(ffi.unpack(io, n)), modules)


def _copy_files(sess: Any, module: str, has_record: bool) -> ModuleRows:
    """One module's files of an ended session, copied out in bulk (tbio_session_copy_files):
    those with counters (``has_record``) or only named by the trace. The counters go into
    column-major matrices and only those not 0 in every file are written: the others' pages
    are never touched (a whole-run record of a million files uses a dozen of Darshan's 86)."""
    ffi, lib = native()
    m = MODULES.index(module)
    names = counter_names(module, False) if has_record else ()
    fnames = counter_names(module, True) if has_record else ()
    n_p, b_p = ffi.new("uint64_t *"), ffi.new("uint64_t *")
    if lib.tbio_session_files_size(sess, m, int(has_record), n_p, b_p) != 0:
        n_p[0] = b_p[0] = 0
    n, nb = int(n_p[0]), int(b_p[0])
    used, fused = np.zeros(len(names), np.uint8), np.zeros(len(fnames), np.uint8)

    def ptr(a: np.ndarray, t: str) -> Any:
        return ffi.cast(t, a.ctypes.data) if a.size else ffi.NULL

    if n and has_record:
        lib.tbio_session_files_used(sess, m, ptr(used, "uint8_t *"), ptr(fused, "uint8_t *"))
    cols, fcols = np.nonzero(used)[0].astype(np.int32), np.nonzero(fused)[0].astype(np.int32)
    ids = np.zeros(n, np.uint32)
    rid = np.zeros(n, np.uint64)
    c = np.zeros((n, len(names)), np.int64, order="F")
    f = np.zeros((n, len(fnames)), np.float64, order="F")
    end = np.zeros(n, np.int64)
    data = np.zeros(nb, np.uint8)
    if n:
        got = int(lib.tbio_session_copy_files(sess, m, int(has_record), n, ptr(ids, "uint32_t *"),
                                              ptr(rid, "uint64_t *"), ptr(cols, "int32_t *"), len(cols),
                                              ptr(c, "int64_t *"), ptr(fcols, "int32_t *"), len(fcols),
                                              ptr(f, "double *"), ptr(end, "uint64_t *"), ptr(data, "char *"), nb))
        if got != n:
            raise NativeError(f"the session's {module} files changed while copied ({got} of {n})")
    return ModuleRows(module, names, fnames, PathTable(data, end), np.arange(n, dtype=np.int64), rid, c, f, id=ids,
                      used=used.astype(bool), fused=fused.astype(bool))


def _empty_events() -> EventTable:
    z = np.zeros(0, EVENT_DTYPE)
    return _events_from(z, [], {}, {})


def _events_from(raw: np.ndarray, threads: list[RecordedThread], paths: Mapping[int, str],
                 modules: Mapping[int, str]) -> EventTable:
    tids = np.array([t.tid for t in threads], dtype=np.int64)
    return EventTable(
        start_ns=raw["start_ns"].astype(np.int64), end_ns=raw["end_ns"].astype(np.int64),
        op_id=raw["op"].astype(np.int32), file_id=raw["file"].copy(), fd=raw["fd"].copy(),
        offset=raw["offset"].copy(), requested=raw["requested"].copy(), returned=raw["returned"].copy(),
        errno=raw["err"].copy(), thread=raw["thread"].astype(np.int32),
        tid=tids[raw["thread"]] if len(tids) else np.zeros(len(raw), np.int64),
        op_names=op_names() if len(raw) or threads else (), paths=paths, modules=modules)


# st_mode tests and the words a record's "file_type" uses (tb_iotrace.analysis.context reads them)
_FILE_TYPES = ((stat.S_ISFIFO, "fifo"), (stat.S_ISSOCK, "socket"), (stat.S_ISCHR, "char-device"),
               (stat.S_ISBLK, "block-device"), (stat.S_ISDIR, "directory"))
MAX_FDS_TYPED = 65536     # descriptors looked at when a session stops (a bound, not a budget)


def open_file_types() -> dict[str, str]:
    """{path: type} of this process's open descriptors that name a path and are not regular
    files (a named pipe, a socket file, a device): per open descriptor, a readlink and a stat of
    ``/proc/self/fd/N`` (excluded: not the job's calls). A nameless pipe or socket is left out."""
    out: dict[str, str] = {}
    try:
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return out
    for name in fds[:MAX_FDS_TYPED]:
        try:
            fd = int(name)
            target = os.readlink(f"/proc/self/fd/{name}")
            if not target.startswith("/"):
                continue
            mode = os.stat(f"/proc/self/fd/{fd}").st_mode
        except (OSError, ValueError):
            continue
        kind = next((k for test, k in _FILE_TYPES if test(mode)), None)
        if kind is not None:
            out[target] = kind
    return out


class Recording:
    """What one session recorded in this process (a ``capture()`` block, a window, a flush)."""

    def __init__(self) -> None:
        self.table: FileTable = FileTable()   # the files' counters as columns (tb_iotrace.store.filetable)
        self._files: FileRecords | None = None
        self.events: EventTable = _empty_events()
        self.threads: list[RecordedThread] = []
        self.dropped: int = 0
        self.untracked: Untracked = Untracked()
        self.start_ns: int = 0
        self.end_ns: int = 0
        self.mounts: str = ""        # /proc/self/mountinfo when the session ended
        self.machine: dict[str, Any] | None = None   # tb_iotrace.store.machine's record, then
        # {path: "fifo" | "socket" | ...} of the files open at stop that are not regular files
        self.file_types: dict[str, str] = {}
        # the whole window in fixed memory, whatever the trace cap kept (tb_iotrace.store.timeseries)
        self.timeseries: TimeSeries | None = None
        self.closed = False
        # the object-storage requests of the window (tb_iotrace.base.objreqs)
        self.objects: list[dict[str, Any]] = []
        self.objects_left_out = 0    # (and those not kept, past the per-process cap)

    def _fill(self, sess: Any) -> None:
        ffi, lib = native()
        self.start_ns = int(lib.tbio_session_start_ns(sess))
        self.end_ns = int(lib.tbio_session_end_ns(sess))
        self.dropped = int(lib.tbio_session_dropped(sess))
        self.untracked = _untracked_of(sess)
        self.timeseries = _timeseries_of(sess)
        info = ffi.new("tbio_thread_info *")
        for i in range(lib.tbio_session_nthreads(sess)):
            lib.tbio_session_thread(sess, i, info)
            self.threads.append(RecordedThread(i, int(info.tid), int(info.pthread_self),
                                           ffi.string(info.comm).decode("utf-8", "replace"),
                                           int(info.nevents), int(info.dropped)))
        n = int(lib.tbio_session_nevents(sess))
        raw = np.zeros(n, EVENT_DTYPE)
        if n:
            got = lib.tbio_session_copy_events(sess, ffi.cast("tbio_event *", raw.ctypes.data), n)
            raw = raw[:got]
        # only the files this window touched or its trace names (not every file the process knows),
        # copied as columns: no Python object per file
        recs = [_copy_files(sess, m, True) for m in MODULES]
        named = [_copy_files(sess, m, False) for m in MODULES]
        self.table = FileTable([t for t in recs if len(t)])
        self._files = None
        parts = [t for t in recs + named if len(t)]
        paths, modules = _FileNames([(t, False) for t in parts]), _FileNames([(t, True) for t in parts])
        self.events = _events_from(raw, self.threads, paths, modules)
        try:
            with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as fh:
                self.mounts = fh.read()
        except OSError:
            self.mounts = ""
        self.machine = machine_facts(self.mounts)
        self.file_types = open_file_types()
        self.closed = True

    def records(self) -> list[dict[str, Any]]:
        """The files' records (``{"path", "module", "record_id", "counters", "fcounters"}``),
        with ``"file_type"`` for those known not to be regular files (:attr:`file_types`)."""
        out = list(self.table.dicts())
        if self.file_types:
            for r in out:
                kind = self.file_types.get(r["path"])
                if kind:
                    r["file_type"] = kind
        return out

    @property
    def files(self) -> FileRecords:
        """The files' Darshan counters, one :class:`FileRecord` per file and module (built when
        read; :attr:`table` holds them as columns)."""
        if self._files is None:
            self._files = FileRecords(self.table)
        return self._files

    def file(self, path: str | os.PathLike[str], module: str = "POSIX") -> FileRecord | None:
        """The record of one file (absolute, cleaned path) in one module, or None."""
        i = self.files.index(os.fsencode(os.path.abspath(os.fspath(path))), module)
        return None if i is None else self.files[i]

    def to_iotrace(self) -> Any:
        """The trace and counters as the xplane writer's IoTrace (tb_iotrace.store.xplane)."""
        from tb_iotrace.store.xplane.iotrace import IoTrace, Labels, ThreadInfo as XThread

        ev = self.events
        # op and path as codes + name tables: a window of a million calls holds a handful
        # of distinct names, and the writer interns them without a str object per row
        op = Labels(ev.op_id, ev.op_names) if len(ev) else ev.op
        path = Labels(*ev.file_codes(ev.paths)) if len(ev) else ev.path
        return IoTrace(op=op, path=path, offset=ev.offset, requested=ev.requested,
                       returned=ev.returned, fd=ev.fd, errno=ev.errno, start_ns=ev.start_ns,
                       end_ns=ev.end_ns, tid=ev.tid,
                       threads={t.tid: XThread(t.pthread_self, t.name) for t in self.threads},
                       dropped=self.dropped, untracked=self.untracked.to_dict() if self.untracked else None,
                       counters=self.records(),
                       mounts=self.mounts, machine=self.machine,
                       objects=to_columns(self.objects, self.objects_left_out) if self.objects or self.objects_left_out else None)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary: files with counters, the trace size and drops."""
        return {
            "start_ns": self.start_ns, "end_ns": self.end_ns,
            "files": self.records(),
            "threads": [t.__dict__ for t in self.threads],
            "nevents": len(self.events), "dropped": self.dropped,
            "untracked": self.untracked.to_dict(),
            "timeseries": self.timeseries.to_dict() if self.timeseries is not None else None,
        }
