"""A Kineto trace (PyTorch's ``*.pt.trace.json[.gz]``) as an XSpace shaped like the
TensorFlow and JAX captures, so that everything built on those (the I/O tab's model, the
analysis, the exports) reads PyTorch runs unchanged.

    space = to_xspace(read_trace(path))        # or read_xspace(path)

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
  processes (``pid``, ``role`` main/worker, their ``tids``); the trace's ``machine`` record
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
from typing import Any

import numpy as np

from tb_iotrace.store.kineto import CATEGORY, KinetoTraceError, io_record, read_trace, trace_rank
from tb_iotrace.store.runrecord import merge_files, merge_untracked
from tb_iotrace.store.xplane import HOST_PLANE, TASK_ENV_PLANE, IoTrace, ThreadInfo, XSpace, add_io_to_space, thread_line_id
from tb_iotrace.store.xplane.iotrace import Labels

__all__ = ["DEVICE_CATEGORIES", "FRAMEWORK", "KINETO_KEY", "METADATA_PLANE", "read_xspace", "to_xspace"]

FRAMEWORK = "PyTorch"
METADATA_PLANE = "/host:metadata"
KINETO_KEY = "kineto"            # key of the I/O record holding the processes
DEVICE_CATEGORIES = frozenset({"kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation"})
STEP_RE = re.compile(r"^ProfilerStep#(\d+)$")
MAX_STAT_TEXT = 1024
MAX_US = 1e15          # |ts| and dur bound (about 31 years in us): past it an event is dropped / has no length


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v) if v == v and abs(v) != float("inf") else None


def _int_id(v: Any) -> int | None:
    """A pid/tid/device/stream as an int (Kineto writes ints; GPU traces may write ``"stream 7"``)."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, str):
        m = re.fullmatch(r"\s*(?:stream\s+)?(-?\d+)\s*", v)
        return int(m.group(1)) if m else None
    return None


class _Plane:
    """An XPlane under construction: metadata interned by name, events grouped by line."""

    def __init__(self, plane: Any) -> None:
        self.plane = plane
        self.event_ids: dict[str, int] = {}
        self.stat_ids: dict[str, int] = {}
        self.lines: dict[Any, list[tuple[int, int, str, dict[str, Any]]]] = {}
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

    def add_line(self, key: Any, line_id: int, display_id: int, name: str, start_ns: int) -> None:
        events = sorted(self.lines.get(key, []), key=lambda e: (e[0], -e[1]))
        if not events:
            return
        ln = self.plane.lines.add()
        ln.id = line_id
        ln.display_id = display_id
        ln.name = ln.display_name = name
        t0 = events[0][0]
        ln.timestamp_ns = t0 - start_ns
        add = ln.events.add
        ids = self.event_ids
        stat_ids = self.stat_ids
        for s, d, nm, args in events:
            mid = ids.get(nm)
            if mid is None:
                mid = self.event_id(nm)
                if STEP_RE.match(nm):
                    self.steps.add(mid)
            ev = add(metadata_id=mid, offset_ps=(s - t0) * 1000, duration_ps=d * 1000)
            if mid in self.steps:
                self.set_stat(ev.stats, "step_num", int(nm[len("ProfilerStep#"):]))
                self.set_stat(ev.stats, "_r", 1)
            if not args:
                continue
            stats = ev.stats
            for k, v in args.items():
                t = type(v)
                sid = stat_ids.get(k)
                if sid is not None and t is int and -(1 << 63) <= v < (1 << 63):   # the usual case
                    stats.add(metadata_id=sid, int64_value=v)
                else:
                    self.set_stat(stats, str(k), v)


def _plane(space: XSpace, name: str) -> Any:
    p = space.planes.add()
    p.id = len(space.planes) - 1
    p.name = name
    return p


def _io_trace(io: list[tuple[int, int, int, int, str, dict[str, Any]]], procs: list[dict[str, Any]],
              linked: set[tuple[int, int]], machine: dict[str, Any] | None = None) -> tuple[IoTrace, list[dict[str, Any]]]:
    """The I/O events as an IoTrace (absolute ns) and the processes' summary for the record.
    Only the threads in ``linked`` ((pid, tid) with a host line named by their pthread) keep
    their ``pthread_self``: a forked worker's main thread has its parent's."""
    argl = [x[5] for x in io]

    def ints(key: str, default: int) -> np.ndarray:
        return np.fromiter((v if type(v) is int else default for v in (a.get(key, default) for a in argl)),
                           dtype=np.int64, count=len(argl))

    def labels(values: Any) -> Labels:
        table: dict[str, int] = {}
        codes = np.fromiter((table.setdefault(v, len(table)) for v in values), dtype=np.int64, count=len(io))
        return Labels(codes, tuple(table))

    op = labels(x[4] for x in io)
    path = labels(p if type(p) is str else "" for p in (a.get("path") for a in argl))
    offset, requested = ints("offset", -1), ints("bytes_requested", -1)
    fd, errno = ints("fd", -1), ints("errno", 0)
    returned = ints("bytes", -(1 << 62))
    unknown = returned == -(1 << 62)     # not a data call: the trace has no return value
    returned[unknown] = np.where(errno[unknown] != 0, -1, 0)
    start = np.fromiter((x[0] for x in io), dtype=np.int64, count=len(io))
    end = start + np.fromiter((x[1] for x in io), dtype=np.int64, count=len(io))
    tid = np.fromiter((x[3] for x in io), dtype=np.int64, count=len(io))
    tids_of: dict[int, set[int]] = {}
    for pid, t in {(x[2], x[3]) for x in io}:
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
                        "tids": sorted(tids_of.get(pid, set()) | {int(e[0]) for e in p.get("threads") or []})})
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
    try:
        return _to_xspace(trace, source)
    except KinetoTraceError:
        raise
    except (ValueError, OverflowError, TypeError) as exc:   # a value protobuf or int64 cannot hold
        raise KinetoTraceError(f"{source}: malformed Kineto trace ({type(exc).__name__}: {exc})") from None


def _to_xspace(trace: dict[str, Any], source: str) -> XSpace:
    events = trace.get("traceEvents") if isinstance(trace, dict) else None
    if not isinstance(events, list):
        raise KinetoTraceError(f"{source}: not a Kineto trace (no top-level 'traceEvents' list)")
    rec = io_record(trace, source)
    base = trace.get("baseTimeNanoseconds", 0) or 0
    if not isinstance(base, int) or isinstance(base, bool) or not 0 <= base < (1 << 62):
        raise KinetoTraceError(f"{source}: baseTimeNanoseconds is not an epoch time in ns ({base!r})")
    host: dict[tuple[int, int], list] = {}
    device: dict[int, dict[int, list]] = {}
    io: list[tuple[int, int, int, int, str, dict[str, Any]]] = []
    thread_names: dict[tuple[int, int], str] = {}
    lo = hi = None
    complete = 0
    empty: dict[str, Any] = {}
    for e in events:
        if type(e) is not dict:
            continue
        ph = e.get("ph")
        if ph == "M":
            if e.get("name") == "thread_name":
                pid, tid = _int_id(e.get("pid")), _int_id(e.get("tid"))
                args = e.get("args") if isinstance(e.get("args"), dict) else {}
                if pid is not None and tid is not None and isinstance(args.get("name"), str):
                    thread_names.setdefault((pid, tid), args["name"])
            continue
        if ph != "X":
            continue
        ts, dur, name = e.get("ts"), e.get("dur"), e.get("name")
        if type(ts) is not float or not -MAX_US < ts < MAX_US:   # Kineto writes floats
            ts = _num(ts)
            if ts is None or not -MAX_US < ts < MAX_US:
                continue
        if type(name) is not str:
            continue
        if type(dur) is not float or not dur < MAX_US:
            dur = _num(dur) or 0.0
            if not dur < MAX_US:
                dur = 0.0
        complete += 1
        s = base + round(ts * 1000)
        d = round(dur * 1000) if dur > 0 else 0
        args = e.get("args", empty)
        if type(args) is not dict:
            args = empty
        cat = e.get("cat")
        pid, tid = e.get("pid"), e.get("tid")
        if type(pid) is not int:
            pid = _int_id(pid)
        if type(tid) is not int:
            tid = _int_id(tid)
        if cat == CATEGORY:
            if pid is None or tid is None:
                continue
            io.append((s, d, pid, tid, name, args))
        elif cat in DEVICE_CATEGORIES:
            dev = _int_id(args.get("device", e.get("pid")))
            stream = _int_id(args.get("stream", e.get("tid")))
            if dev is None or stream is None:
                continue
            device.setdefault(dev, {}).setdefault(stream, []).append((s, d, name, args))
        elif pid is not None and tid is not None:
            got = host.get((pid, tid))
            if got is None:
                got = host[(pid, tid)] = []
            got.append((s, d, name, args))
        else:
            continue   # Kineto's own spans ("Spans", "Traces" pseudo-processes)
        if lo is None or s < lo:
            lo = s
        if hi is None or s + d > hi:
            hi = s + d
    if complete == 0 and events:
        raise KinetoTraceError(f"{source}: no complete ('ph': 'X') events with a name and a numeric 'ts': "
                               "not a Kineto trace")
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
        cpu.add_line((pid, tid), line_id, tid, name, start)
    for dev in sorted(device):
        gpu = _Plane(_plane(space, f"/device:GPU:{dev}"))
        gpu.lines = device[dev]
        for stream in sorted(device[dev]):
            gpu.add_line(stream, stream, stream, f"Stream #{stream}", start)

    env = _Plane(_plane(space, TASK_ENV_PLANE))
    env.set_stat(env.plane.stats, "profile_start_time", start)
    env.set_stat(env.plane.stats, "profile_stop_time", stop)

    if rec is not None:
        try:
            machine = rec.get("machine")
            iot, summary = _io_trace(io, procs, linked, dict(machine) if isinstance(machine, dict) else None)
        except (TypeError, ValueError, IndexError, KeyError, OverflowError) as exc:
            raise KinetoTraceError(f"{source}: malformed tb_iotrace record or I/O event ({exc})") from None
        add_io_to_space(space, iot, start_ns=start, max_events=max(len(iot), 1),
                        extra={KINETO_KEY: {"format": rec.get("format"), "base_time_ns": base,
                                            "processes": summary,
                                            "notes": [str(n) for n in rec.get("notes") or []],
                                            "pytorch": rec.get("pytorch"), "rank": trace_rank(trace)}})
    return space


def read_xspace(path: str | os.PathLike[str]) -> XSpace:
    """:func:`to_xspace` of the trace file at ``path``."""
    return to_xspace(read_trace(path), os.fspath(path))
