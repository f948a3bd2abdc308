"""Kineto traces (PyTorch's ``*.pt.trace.json[.gz]``) carrying tb_iotrace's I/O.

The capture (``tb_iotrace.recording.pytorch``) hands over one *process record* per process
that recorded the profiled window (the main process, each DataLoader worker): a JSON-ready
dict::

    {"pid", "role" ("main" | "worker"), "start_ns", "end_ns",
     "threads": [[tid, pthread_id, comm], ...],
     "events": {"op", "path", "offset", "requested", "returned", "fd", "errno",
                "start_ns", "end_ns", "tid": equal-length lists},
     "counters": [Darshan file records], "dropped", "untracked" (optional),
     "fetches": {"start_ns", "end_ns", "tid", "samples": equal-length lists} (DataLoader
                workers only: one span per index batch fetched in the window),
     "worker_id" (workers only),
     "cpu_ns" (optional): the process's CPU time over the window (all its threads, user and
                system: ``time.process_time_ns``),
     "run_delay_ns" (optional): the time its threads waited for a core over the window (the
                kernel's run-queue delay: tb_iotrace.base.run_delay),
     "objects": the object-storage requests it made in the window, as columns
                (:mod:`tb_iotrace.store.objcolumns`; only when it made some)}

:func:`add_io` turns them into trace events: one complete event (``"ph": "X"``) per call on
the OS pid/tid that made it, named by the call, ``args`` holding path, offset and bytes.
Kineto's ``ts`` is microseconds relative to the trace's ``baseTimeNanoseconds`` (both
CLOCK_REALTIME, the shim's clock), so ``ts = (start_ns - baseTimeNanoseconds) / 1000``. A worker's fetch spans become complete
events ``{"ph": "X", "cat": "tb_iotrace", "name": "tb_iotrace::fetch", "pid", "tid" (the
fetching thread, the one whose I/O the batch's reads are), "ts", "dur", "args": {"worker_id",
"samples"}}`` on the same clock. Each object request becomes a complete event ``{"ph": "X",
"cat": "tb_iotrace.object", "name": "<op> <object>", "pid", "tid" (the thread that made it), "ts",
"dur", "args": {"object", "op", "status", "bytes", "range", "first_byte_us"}}``; the requests
themselves stay, as columns, in their process's entry of the record.
The counters and per-process facts go under the top-level key ``"tb_iotrace"`` (format
``tb_iotrace.kineto/1``); Perfetto and HTA ignore keys they do not know. A process record may
also hold ``late_start_ns`` (a worker that began recording that long after the window's start,
``window_start_ns`` in the record); ``workers_missing`` lists the pids of workers whose I/O
never came. ``machine`` is the machine that made the trace (usable cores, mount table: format
in :mod:`tb_iotrace.store.machine`). ``rank`` (only in a distributed job) is the process's rank
from the launcher's environment at capture (:func:`trace_rank` prefers Kineto's own
``distributedInfo``).
"""
from __future__ import annotations

import gzip
import json
import os
from typing import Any

from tb_iotrace.base.atomic import atomic_write
from tb_iotrace.base.limits import LimitError, gunzip, json_loads, max_trace_bytes, read_limited

__all__ = ["CATEGORY", "FETCH_CATEGORY", "FETCH_EVENT", "FORMAT", "OBJECT_CATEGORY", "KEY", "KinetoTraceError", "add_io", "trace_rank",
           "io_record", "read_trace", "write_trace"]

KEY = "tb_iotrace"
FORMAT = "tb_iotrace.kineto/1"
CATEGORY = "tb_iotrace.io"
FETCH_CATEGORY = "tb_iotrace"          # a DataLoader worker's fetch of one index batch
FETCH_EVENT = "tb_iotrace::fetch"
OBJECT_CATEGORY = "tb_iotrace.object"  # one object-storage request
FETCH_COLUMNS = ("start_ns", "end_ns", "tid", "samples")
EVENT_COLUMNS = ("op", "path", "offset", "requested", "returned", "fd", "errno", "start_ns", "end_ns", "tid")


class KinetoTraceError(ValueError):
    """A file that is not a readable Kineto trace (says which file and why)."""


def read_trace(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A Kineto trace file (``.json`` or ``.json.gz``) as a dict; KinetoTraceError when the
    file is not one (unreadable, not JSON, no ``traceEvents`` list) or is over the bounds of
    :mod:`tb_iotrace.base.limits` (expanded size ``TBIO_MAX_TRACE_BYTES``, JSON nesting, number
    length)."""
    p = os.fspath(path)
    try:
        limit = max_trace_bytes()
        with open(p, "rb") as fh:
            raw = read_limited(fh, limit, "the trace")
        if raw[:2] == b"\x1f\x8b":
            raw = gunzip(raw, limit, "the trace")
        data = json_loads(raw, "the trace's JSON")
    except LimitError as exc:
        raise KinetoTraceError(f"{p}: {exc}") from None
    except (OSError, ValueError) as exc:   # UnicodeDecodeError, JSONDecodeError, broken gzip
        raise KinetoTraceError(f"{p}: not a readable Kineto trace ({type(exc).__name__}: {exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("traceEvents"), list):
        raise KinetoTraceError(f"{p}: not a Kineto trace (no top-level 'traceEvents' list)")
    return data


def write_trace(path: str | os.PathLike[str], trace: dict[str, Any]) -> None:
    """Write ``trace`` atomically; gzip-compressed when ``path`` ends with ``.gz``."""
    p = os.fspath(path)
    body = json.dumps(trace, separators=(",", ":")).encode("utf-8")
    if p.endswith(".gz"):
        body = gzip.compress(body, compresslevel=6)
    atomic_write(p, lambda fh: fh.write(body))


def _us(ns: int) -> float:
    return round(ns / 1000.0, 3)


def _events_of(proc: dict[str, Any], base_ns: int) -> list[dict[str, Any]]:
    ev = proc.get("events") or {}
    cols = [ev.get(c, []) for c in EVENT_COLUMNS]
    n = len(cols[0])
    if any(len(c) != n for c in cols):
        raise ValueError(f"process record of pid {proc.get('pid')}: event columns of unequal length")
    pid = int(proc["pid"])
    out = []
    for op, path, offset, req, ret, fd, err, s, e, tid in zip(*cols):
        args: dict[str, Any] = {"fd": int(fd)}
        if path:
            args["path"] = path
        if offset >= 0:
            args["offset"] = int(offset)
        if req >= 0:
            args["bytes_requested"] = int(req)
            args["bytes"] = int(ret)
        if err:
            args["errno"] = int(err)
        out.append({"ph": "X", "cat": CATEGORY, "name": op, "pid": pid, "tid": int(tid),
                    "ts": _us(int(s) - base_ns), "dur": _us(max(0, int(e) - int(s))), "args": args})
    return out


def _fetch_events(proc: dict[str, Any], base_ns: int) -> list[dict[str, Any]]:
    got = proc.get("fetches") or {}
    cols = [got.get(c, []) for c in FETCH_COLUMNS]
    n = len(cols[0])
    if any(len(c) != n for c in cols):
        raise ValueError(f"process record of pid {proc.get('pid')}: fetch columns of unequal length")
    pid = int(proc["pid"])
    wid = proc.get("worker_id")
    args0 = {"worker_id": int(wid)} if isinstance(wid, int) else {}
    return [{"ph": "X", "cat": FETCH_CATEGORY, "name": FETCH_EVENT, "pid": pid, "tid": int(tid),
             "ts": _us(int(s) - base_ns), "dur": _us(max(0, int(e) - int(s))),
             "args": args0 | {"samples": int(k)}}
            for s, e, tid, k in zip(*cols)]


def _object_events(proc: dict[str, Any], base_ns: int) -> list[dict[str, Any]]:
    from tb_iotrace.store.objcolumns import rows

    out = []
    for r in rows(proc.get("objects")):
        args: dict[str, Any] = {"object": r["object"], "op": r["op"], "status": r["status"], "bytes": r["bytes"]}
        if r["range_start"] >= 0:
            args["range"] = f"{r['range_start']}-{r['range_end'] if r['range_end'] >= 0 else ''}"
        if r["ttfb_ns"]:
            args["first_byte_us"] = _us(r["ttfb_ns"] - r["start_ns"])
        if r["error"]:
            args["error"] = r["error"]
        out.append({"ph": "X", "cat": OBJECT_CATEGORY, "name": f"{r['op']} {r['object']}", "pid": int(r["pid"]),
                    "tid": int(r["tid"]), "ts": _us(int(r["start_ns"]) - base_ns),
                    "dur": _us(max(0, int(r["end_ns"]) - int(r["start_ns"]))), "args": args})
    return out


def _metadata_events(proc: dict[str, Any], base_ns: int, known_pids: set[Any],
                     known_threads: set[tuple[Any, Any]]) -> list[dict[str, Any]]:
    """Name the tracks Kineto did not: a worker's process, and every I/O thread Kineto did not
    name (a second name would leave the viewer to pick one for the track of Kineto's ops). Like Kineto's, they carry a ``ts`` (HTA reads timestamps as floats when one lacks
    it): the process's recording start."""
    pid = int(proc["pid"])
    ts = _us(int(proc.get("start_ns") or base_ns) - base_ns)
    out: list[dict[str, Any]] = []
    if pid not in known_pids:
        role = "DataLoader worker" if proc.get("role") == "worker" else "process"
        out.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "ts": ts,
                    "args": {"name": f"{role} (pid {pid})"}})
    named = set()
    for tid, _pthread, comm in proc.get("threads", []):
        named.add(int(tid))
        if (pid, int(tid)) not in known_threads:
            out.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": int(tid), "ts": ts,
                        "args": {"name": f"I/O: {comm} ({tid})"}})
    for tid in sorted({int(t) for t in (proc.get("fetches") or {}).get("tid", [])} - named):
        if (pid, tid) not in known_threads:   # a worker thread that fetched without file I/O
            out.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "ts": ts,
                        "args": {"name": f"DataLoader worker ({tid})"}})
    return out


def add_io(trace: dict[str, Any], procs: list[dict[str, Any]], *, notes: list[str] | None = None,
           extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Add the I/O of ``procs`` (process records, see the module doc) to a Kineto trace, in
    place, and return it. Kineto's own events are left as they are. ``extra``: more keys of
    the ``tb_iotrace`` record (the capture's facts: ``window_start_ns``, ``workers_missing``,
    ``pytorch``, ``machine``)."""
    events = trace.setdefault("traceEvents", [])
    base_ns = int(trace.get("baseTimeNanoseconds", 0) or 0)
    meta = [e for e in events if isinstance(e, dict) and e.get("ph") == "M"]
    known = {e.get("pid") for e in meta if e.get("name") == "process_name"}
    threads = {(e.get("pid"), e.get("tid")) for e in meta if e.get("name") == "thread_name"}
    for proc in procs:
        events.extend(_metadata_events(proc, base_ns, known, threads))
        events.extend(_events_of(proc, base_ns))
        events.extend(_fetch_events(proc, base_ns))
        events.extend(_object_events(proc, base_ns))
    trace[KEY] = {
        "format": FORMAT,
        "base_time_ns": base_ns,
        "processes": [{k: v for k, v in p.items() if k not in ("events", "fetches")}
                      | {"num_events": len((p.get("events") or {}).get("op", []))}
                      | ({"num_fetches": len((p.get("fetches") or {}).get("start_ns", []))}
                         if "fetches" in p else {}) for p in procs],
        "notes": list(notes or []),
    } | dict(extra or {})
    return trace


def _rank_of(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    return int(value) if isinstance(value, str) and value.strip().isdigit() else None


def trace_rank(trace: dict[str, Any]) -> int | None:
    """The rank of the process that wrote a Kineto trace in its distributed job: Kineto's
    ``distributedInfo.rank`` (torch.distributed was initialised), else the ``rank`` the
    ``tb_iotrace`` record took from the launcher's environment at capture (torchrun's RANK,
    MPI, Slurm); None outside a distributed job."""
    info = trace.get("distributedInfo")
    got = _rank_of(info.get("rank")) if isinstance(info, dict) else None
    if got is None:
        rec = trace.get(KEY)
        got = _rank_of(rec.get("rank")) if isinstance(rec, dict) else None
    return got


def io_record(trace: dict[str, Any], source: str = "trace") -> dict[str, Any] | None:
    """The ``tb_iotrace`` record of a trace (None when it has none); KinetoTraceError when
    the record is there but not one this version reads."""
    rec = trace.get(KEY)
    if rec is None:
        return None
    if not isinstance(rec, dict) or rec.get("format") != FORMAT or not isinstance(rec.get("processes"), list):
        raise KinetoTraceError(f"{source}: '{KEY}' record of an unknown format "
                               f"({rec.get('format') if isinstance(rec, dict) else type(rec).__name__})")
    return rec
