"""A Kineto trace (PyTorch's ``*.pt.trace.json[.gz]``) as an XSpace shaped like the
TensorFlow and JAX captures, so that everything built on those (the I/O tab's model, the
analysis, the exports) reads PyTorch runs unchanged.

    space = read_xspace(path)        # or to_xspace(read_trace(path)): the same space, ~3x the memory

:func:`read_xspace` reads the file a batch of events at a time (:mod:`tb_iotrace.store.kineto_json`)
into columns (:mod:`tb_iotrace.store.kineto_columns`); :func:`to_xspace` takes a trace already in memory.

What goes where:

- ``Task Environment``: ``profile_start_time`` / ``profile_stop_time`` (CLOCK_REALTIME epoch
  ns): the earliest start and the latest end of the trace's events. Every time below is
  relative to that start, as in a saved TensorFlow capture.
- ``/host:metadata``: ``framework`` = ``PyTorch`` and the trace's own facts (``trace_id``,
  ``schemaVersion``, ``host_name``), so :mod:`tb_iotrace.store.xplane.origin` can tell.
- ``/host:CPU``: one line per (pid, tid) of the CPU events (``cpu_op``, ``user_annotation``,
  ``python_function``, ``cuda_runtime``...; nested events stay nested), DataLoader workers'
  fetch spans (``tb_iotrace::fetch``, stats ``worker_id`` and ``samples``) included: a
  worker's line has display id = its tid and, with several processes, a name ending
  ``[pid <pid>]``. A line whose thread
  also did I/O gets TensorFlow's host line id of that thread (``thread_line_id`` of its
  ``pthread_self``), so the I/O lines and the attribution find it exactly as in a TF capture.
  Each ``ProfilerStep#N`` carries the stats ``step_num`` = N and ``_r`` = 1 (a step root, as
  ``jax.profiler.StepTraceAnnotation`` writes): :mod:`tb_iotrace.analysis.attribution` takes them as steps.
  The event's scalar ``args`` become its stats (lists as JSON text).
- ``/device:GPU:<device>``: one line ``Stream #<stream>`` per CUDA stream, from the
  ``kernel``, ``gpu_memcpy``, ``gpu_memset`` and ``gpu_user_annotation`` events.
- the I/O (``tb_iotrace.io`` events that :func:`tb_iotrace.store.kineto.add_io` wrote) goes in as the
  TensorFlow path encodes it (:func:`tb_iotrace.store.xplane.add_io_to_space`): one I/O line per
  thread, the Darshan counters of every process merged per file (counts and bytes add up, as
  Darshan reduces a file shared by ranks), and under the record's key ``kineto`` the
  processes (``pid``, ``role`` main/worker, their ``tids``, ``cpu_ns`` when recorded); the trace's ``machine`` record
  (:mod:`tb_iotrace.store.machine`) becomes the I/O record's ``machine``. A DataLoader worker's threads are
  named ``worker <pid>: <comm>``. A call's return value is in the trace only as ``bytes`` for
  data calls; for other calls it reads back as 0 (-1 when it failed).

Clock: Kineto's ``ts`` is microseconds since ``baseTimeNanoseconds`` (older traces: since the
epoch, without that key); ``base + ts * 1000`` is CLOCK_REALTIME, the shim's clock.

A trace without the ``tb_iotrace`` record (PyTorch's own ``tensorboard_trace_handler``) converts
without I/O; one whose events are not Kineto's raises :class:`~tb_iotrace.store.kineto.KinetoTraceError`.
"""
from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from typing import Any

import numpy as np

from tb_iotrace.store.kineto import KinetoTraceError, io_record, trace_rank
from tb_iotrace.store.kineto_columns import ARG_FLOAT, ARG_INT, DEVICE_CATEGORIES, MAX_STAT_TEXT, Collector, IoColumns, Line
from tb_iotrace.store.kineto_json import open_trace
from tb_iotrace.store.runrecord import merge_files, merge_untracked
from tb_iotrace.store.xplane import HOST_PLANE, TASK_ENV_PLANE, IoTrace, ThreadInfo, XSpace, add_io_to_space, thread_line_id
from tb_iotrace.store.xplane.iotrace import Labels

__all__ = ["DEVICE_CATEGORIES", "FRAMEWORK", "KINETO_KEY", "METADATA_PLANE", "read_xspace", "to_xspace"]

FRAMEWORK = "PyTorch"
METADATA_PLANE = "/host:metadata"
KINETO_KEY = "kineto"            # key of the I/O record holding the processes
STEP_RE = re.compile(r"^ProfilerStep#(\d+)$")
_CHUNK = 65536       # rows of a line turned into Python ints at a time


class _Plane:
    """An XPlane under construction: metadata interned by name, events grouped by line."""

    def __init__(self, plane: Any) -> None:
        self.plane = plane
        self.event_ids: dict[str, int] = {}
        self.stat_ids: dict[str, int] = {}
        self.lines: dict[Any, Line] = {}
        self.steps: set[int] = set()     # event metadata ids of ProfilerStep#N

    def event_id(self, name: str) -> int:
        got = self.event_ids.get(name)
        if got is None:
            got = self.event_ids[name] = len(self.event_ids) + 1
            md = self.plane.event_metadata[got]
            md.id = got
            md.name = name
            md.display_name = name
        return got

    def stat_id(self, name: str) -> int:
        got = self.stat_ids.get(name)
        if got is None:
            got = self.stat_ids[name] = len(self.stat_ids) + 1
            md = self.plane.stat_metadata[got]
            md.id = got
            md.name = name
        return got

    def set_stat(self, stats: Any, name: str, value: Any) -> None:
        if isinstance(value, bool):
            value = int(value)
        if isinstance(value, int) and -(1 << 63) <= value < (1 << 63):
            stats.add(metadata_id=self.stat_id(name), int64_value=value)
        elif isinstance(value, float):
            stats.add(metadata_id=self.stat_id(name), double_value=value)
        elif value is not None:
            text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
            stats.add(metadata_id=self.stat_id(name), str_value=text[:MAX_STAT_TEXT])

    def add_line(self, key: Any, line_id: int, display_id: int, name: str, start_ns: int, cols: Collector) -> None:
        """Write the line ``key`` (its events sorted by start, longest first; then dropped
        from ``self.lines``), their arguments as stats."""
        line = self.lines.pop(key, None)
        if line is None or not len(line.start):
            return
        start = np.array(line.start, dtype=np.int64)
        dur = np.array(line.dur, dtype=np.int64)
        order = np.lexsort((-dur, start))     # stable: equal keys keep the trace's order
        ln = self.plane.lines.add()
        ln.id = line_id
        ln.display_id = display_id
        ln.name = ln.display_name = name
        t0 = int(start[order[0]])
        ln.timestamp_ns = t0 - start_ns
        add = ln.events.add
        nids = np.array(line.name, dtype=np.int64)
        arg_at = np.array(line.arg_at, dtype=np.int64)
        shape = np.array(line.shape, dtype=np.int64)
        del line
        for c in range(0, len(order), _CHUNK):     # Python ints for a chunk of rows at a time
            rows = order[c:c + _CHUNK]
            self._add_events(add, t0, zip(start[rows].tolist(), dur[rows].tolist(), nids[rows].tolist(),
                                          arg_at[rows].tolist(), shape[rows].tolist()), cols)

    def _add_events(self, add: Any, t0: int, rows: Iterable[tuple[int, int, int, int, int]], cols: Collector) -> None:
        ids = self.event_ids
        stat_ids = self.stat_ids
        names, shapes, vals, args_of = cols.names, cols.shapes, cols.arg_val, cols.args_of
        for s, d, nid, at, shape in rows:
            nm = names[nid]
            mid = ids.get(nm)
            if mid is None:
                mid = self.event_id(nm)
                if STEP_RE.match(nm):
                    self.steps.add(mid)
            ev = add(metadata_id=mid, offset_ps=(s - t0) * 1000, duration_ps=d * 1000)
            if mid in self.steps:
                self.set_stat(ev.stats, "step_num", int(nm[len("ProfilerStep#"):]))
                self.set_stat(ev.stats, "_r", 1)
            if not shape:
                continue
            stats = ev.stats
            keys, kinds = shapes[shape]
            if kinds is None:    # the usual case: every value an int
                for k, v in zip(keys, vals[at:at + len(keys)]):
                    sid = stat_ids.get(k)
                    stats.add(metadata_id=sid if sid is not None else self.stat_id(k), int64_value=v)
                continue
            for k, kind, v in args_of(at, shape):
                sid = stat_ids.get(k)
                if sid is None:
                    sid = self.stat_id(k)
                if kind == ARG_INT:
                    stats.add(metadata_id=sid, int64_value=v)
                elif kind == ARG_FLOAT:
                    stats.add(metadata_id=sid, double_value=v)
                else:
                    stats.add(metadata_id=sid, str_value=v)


def _plane(space: XSpace, name: str) -> Any:
    p = space.planes.add()
    p.id = len(space.planes) - 1
    p.name = name
    return p


def _objects_of(procs: list[dict[str, Any]], source: str) -> dict[str, Any] | None:
    """The processes' object requests as one set of columns, for the I/O record (``objects``)."""
    from tb_iotrace.store.objcolumns import ObjectColumnsError, checked, concat

    try:
        got = concat(checked(p.get("objects")) for p in procs if isinstance(p, dict))
    except ObjectColumnsError as exc:
        raise KinetoTraceError(f"{source}: malformed tb_iotrace record ({exc})") from None
    return got


def _io_trace(io: IoColumns, procs: list[dict[str, Any]],
              linked: set[tuple[int, int]], machine: dict[str, Any] | None = None) -> tuple[IoTrace, list[dict[str, Any]]]:
    """The I/O events as an IoTrace (absolute ns) and the processes' summary for the record.
    Only the threads in ``linked`` ((pid, tid) with a host line named by their pthread) keep
    their ``pthread_self``: a forked worker's main thread has its parent's."""
    if io.overflow:
        raise OverflowError(io.overflow)

    def ints(key: str) -> np.ndarray:
        return np.array(io.ints[key], dtype=np.int64)

    def labels(values: list[str]) -> Labels:
        table: dict[str, int] = {}
        codes = np.fromiter((table.setdefault(v, len(table)) for v in values), dtype=np.int64, count=len(io))
        return Labels(codes, tuple(table))

    op = labels(io.op)
    path = labels(io.path)
    offset, requested = ints("offset"), ints("bytes_requested")
    fd, errno = ints("fd"), ints("errno")
    returned = ints("bytes")
    unknown = returned == -(1 << 62)     # not a data call: the trace has no return value
    returned[unknown] = np.where(errno[unknown] != 0, -1, 0)
    start = np.array(io.start, dtype=np.int64)
    end = start + np.array(io.dur, dtype=np.int64)
    tid = np.array(io.tid, dtype=np.int64)
    tids_of: dict[int, set[int]] = {}
    for pid, t in set(zip(io.pid, io.tid)):
        tids_of.setdefault(pid, set()).add(t)
    threads: dict[int, ThreadInfo] = {}
    files: dict[tuple[str, str], dict[str, Any]] = {}
    untracked: dict[str, Any] = {}
    dropped = 0
    summary = []
    for p in procs:
        if not isinstance(p, dict) or not isinstance(p.get("pid"), int):
            raise KinetoTraceError("malformed tb_iotrace record: a process without a pid")
        pid, role = int(p["pid"]), str(p.get("role") or "main")
        for entry in p.get("threads") or []:
            t, pthread, comm = int(entry[0]), int(entry[1]), str(entry[2])
            threads[t] = ThreadInfo(pthread if (pid, t) in linked else 0,
                                    f"worker {pid}: {comm}" if role == "worker" else comm)
        merge_files(files, list(p.get("counters") or []))
        if isinstance(p.get("untracked"), dict):
            merge_untracked(untracked, p["untracked"])
        dropped += int(p.get("dropped") or 0)
        summary.append({"pid": pid, "role": role, "start_ns": int(p.get("start_ns") or 0),
                        "end_ns": int(p.get("end_ns") or 0), "dropped": int(p.get("dropped") or 0),
                        "tids": sorted(tids_of.get(pid, set()) | {int(e[0]) for e in p.get("threads") or []})}
                       | {k: int(p[k]) for k in ("cpu_ns", "run_delay_ns") if isinstance(p.get(k), int)})
    known = {s["pid"] for s in summary}
    for pid, ts in sorted(tids_of.items()):   # I/O events of a process the record does not list
        if pid not in known:
            summary.append({"pid": pid, "role": "", "start_ns": 0, "end_ns": 0, "dropped": 0, "tids": sorted(ts)})
    for t in np.unique(tid).tolist():
        threads.setdefault(int(t), ThreadInfo(0, "thread"))
    order = np.lexsort((start, tid))
    trace = IoTrace(op=op.take(order), path=path.take(order), offset=offset[order], requested=requested[order],
                    returned=returned[order], fd=fd[order], errno=errno[order], start_ns=start[order],
                    end_ns=end[order], tid=tid[order], threads=threads, dropped=dropped,
                    counters=list(files.values()), untracked=untracked or None, machine=machine)
    return trace, summary


def to_xspace(trace: dict[str, Any], source: str = "trace") -> XSpace:
    """The Kineto trace ``trace`` (as :func:`tb_iotrace.store.kineto.read_trace` returns it) as an
    XSpace (see the module doc); KinetoTraceError (naming ``source``) when it is not one."""
    events = trace.get("traceEvents") if isinstance(trace, dict) else None
    if not isinstance(events, list):
        raise KinetoTraceError(f"{source}: not a Kineto trace (no top-level 'traceEvents' list)")
    return _converted(trace, [events], source)


def read_xspace(path: str | os.PathLike[str]) -> XSpace:
    """:func:`to_xspace` of the trace file at ``path``, read a batch of events at a time
    (:mod:`tb_iotrace.store.kineto_json`, :mod:`tb_iotrace.store.kineto_columns`): no dict per event kept."""
    src = os.fspath(path)
    trace = open_trace(src)
    return _converted(trace.header, trace.batches(), src)


def _converted(header: dict[str, Any], batches: Iterable[list[Any]], source: str) -> XSpace:
    try:
        return _to_xspace(header, batches, source)
    except KinetoTraceError:
        raise
    except (ValueError, OverflowError, TypeError) as exc:   # a value protobuf or int64 cannot hold
        raise KinetoTraceError(f"{source}: malformed Kineto trace ({type(exc).__name__}: {exc})") from None


def _to_xspace(trace: dict[str, Any], batches: Iterable[list[Any]], source: str) -> XSpace:
    """``trace``: the top-level keys (``traceEvents`` is not read), ``batches`` its events."""
    rec = io_record(trace, source)
    base = trace.get("baseTimeNanoseconds", 0) or 0
    if not isinstance(base, int) or isinstance(base, bool) or not 0 <= base < (1 << 62):
        raise KinetoTraceError(f"{source}: baseTimeNanoseconds is not an epoch time in ns ({base!r})")
    cols = Collector(base)
    for batch in batches:
        cols.add_events(batch)
    if cols.complete == 0 and cols.seen:
        raise KinetoTraceError(f"{source}: no complete ('ph': 'X') events with a name and a numeric 'ts': "
                               "not a Kineto trace")
    host, device, thread_names, lo, hi = cols.host, cols.device, cols.thread_names, cols.lo, cols.hi
    start = int(lo if lo is not None else base)
    stop = int(hi if hi is not None else start)

    space = XSpace()
    if isinstance(trace.get("host_name"), str):
        space.hostnames.append(trace["host_name"])
    meta = _Plane(_plane(space, METADATA_PLANE))
    meta.set_stat(meta.plane.stats, "framework", FRAMEWORK)
    for key in ("schemaVersion", "trace_id", "host_name"):
        if isinstance(trace.get(key), (int, str)):
            meta.set_stat(meta.plane.stats, key, trace[key])

    procs = list(rec["processes"]) if rec is not None else []
    pthreads: dict[tuple[int, int], int] = {}
    for p in procs:
        if isinstance(p, dict) and isinstance(p.get("pid"), int):
            for entry in p.get("threads") or []:
                try:
                    pthreads[(int(p["pid"]), int(entry[0]))] = int(entry[1])
                except (TypeError, ValueError, IndexError):
                    raise KinetoTraceError(f"{source}: malformed tb_iotrace record (thread {entry!r})") from None

    cpu = _Plane(_plane(space, HOST_PLANE))
    cpu.lines = host
    pids = {pid for pid, _ in host}
    # host lines named as TensorFlow names them (by pthread_self) where that is unambiguous: a
    # forked DataLoader worker's thread (its fetch spans) has the pthread_self of the parent's
    # thread that forked it; the main process's thread keeps the name then
    roles = {p["pid"]: p.get("role") for p in procs if isinstance(p, dict) and isinstance(p.get("pid"), int)}
    by_pthread: dict[int, list[tuple[int, int]]] = {}
    for k in host:
        if k in pthreads:
            by_pthread.setdefault(pthreads[k], []).append(k)
    linked = set()
    for keys in by_pthread.values():
        mains = [k for k in keys if roles.get(k[0]) == "main"]
        if len(keys) == 1 or len(mains) == 1:
            linked.add(keys[0] if len(keys) == 1 else mains[0])
    for (pid, tid) in sorted(host):
        name = thread_names.get((pid, tid)) or f"thread {tid}"
        if len(pids) > 1:
            name = f"{name} [pid {pid}]"
        line_id = thread_line_id(pthreads[(pid, tid)]) if (pid, tid) in linked else tid
        cpu.add_line((pid, tid), line_id, tid, name, start, cols)
    for dev in sorted(device):
        gpu = _Plane(_plane(space, f"/device:GPU:{dev}"))
        gpu.lines = device[dev]
        for stream in sorted(device[dev]):
            gpu.add_line(stream, stream, stream, f"Stream #{stream}", start, cols)

    env = _Plane(_plane(space, TASK_ENV_PLANE))
    env.set_stat(env.plane.stats, "profile_start_time", start)
    env.set_stat(env.plane.stats, "profile_stop_time", stop)

    if rec is not None:
        try:
            machine = rec.get("machine")
            iot, summary = _io_trace(cols.io, procs, linked, dict(machine) if isinstance(machine, dict) else None)
            iot.objects = _objects_of(procs, source)
        except (TypeError, ValueError, IndexError, KeyError, OverflowError) as exc:
            raise KinetoTraceError(f"{source}: malformed tb_iotrace record or I/O event ({exc})") from None
        add_io_to_space(space, iot, start_ns=start, max_events=max(len(iot), 1),
                        extra={KINETO_KEY: {"format": rec.get("format"), "base_time_ns": base,
                                            "processes": summary,
                                            "notes": [str(n) for n in rec.get("notes") or []],
                                            "pytorch": rec.get("pytorch"), "rank": trace_rank(trace),
                                            "steps_note": rec.get("steps_note"),
                                            "window_origin": rec.get("window_origin")}})
    return space

