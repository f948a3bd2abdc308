"""``/steps``: I/O per training step (or per equal time window without steps): bytes, calls,
I/O time, input wait and object requests."""
from __future__ import annotations

from typing import Any

import numpy as np

from tb_iotrace.analysis.capture_row import wait_intervals
from tb_iotrace.analysis.object_steps import per_step
from tb_iotrace.plugin.capture_objects import capture_objects
from tb_iotrace.plugin.endpoints.bandwidth import integral
from tb_iotrace.plugin.request_view import View, view_steps

__all__ = ["steps_impl"]


def steps_impl(view: View, windows: int = 20) -> dict[str, Any]:
    """Per-step I/O: bytes read/written, calls, I/O time (union of call intervals per
    thread, summed over threads, clipped to the step), and the share of the step the host
    waited on input (union of IteratorGetNext-like host events). Without step markers the
    capture is cut into ``windows`` equal time windows, and ``has_steps`` is false. Where the view
    has object requests, each step also has ``object_requests`` and ``object_bytes`` (those that
    start in it: :mod:`tb_iotrace.analysis.object_steps`)."""
    steps, source = view_steps(view)
    has_steps = bool(steps)
    if not has_steps:
        lo, hi = view.extent()
        edges = np.linspace(lo, hi, windows + 1)
        steps = [{"index": i, "name": f"window {i + 1}", "start": int(edges[i]), "end": int(edges[i + 1])}
                 for i in range(windows)]
        source = ""
    starts = np.array([s["start"] for s in steps], dtype=np.float64)
    ends = np.array([s["end"] for s in steps], dtype=np.float64)
    k = len(steps)
    read = np.zeros(k)
    write = np.zeros(k)
    calls = np.zeros(k)
    io_time = np.zeros(k)
    wait = np.zeros(k)
    obj_n = np.zeros(k, np.int64)
    obj_b = np.zeros(k, np.int64)
    has_objects = False
    for p in view.parts:
        cap = p.capture
        objs = capture_objects(cap)
        if len(objs):
            has_objects = True
            n, b = per_step(starts, ends, (objs.start + p.offset).astype(np.float64), objs.bytes)
            obj_n += n
            obj_b += b
        io = cap.io
        if io is not None and len(io):
            s = (io.start + p.offset).astype(np.float64)
            e = (io.end + p.offset).astype(np.float64)
            rd, wr = io.moved()
            idx = np.searchsorted(starts, s, side="right") - 1
            ok = (idx >= 0) & (s < ends[np.clip(idx, 0, k - 1)])
            np.add.at(read, idx[ok], rd[ok])
            np.add.at(write, idx[ok], wr[ok])
            np.add.at(calls, idx[ok], 1)
            for tid in np.unique(io.tid).tolist():
                m = io.tid == tid
                io_time += _covered(s[m], e[m], starts, ends)
        ws, we = wait_intervals(cap)
        if len(ws):
            wait += _covered((ws + p.offset).astype(np.float64), (we + p.offset).astype(np.float64), starts, ends)
    dur = np.maximum(ends - starts, 1.0)
    return {"has_steps": has_steps, "source": source,
            "message": "" if has_steps else _no_steps_message(view),
            "steps": [{"index": st["index"], "name": st["name"], "start": st["start"], "end": st["end"],
                       "bytes_read": int(read[i]), "bytes_written": int(write[i]), "calls": int(calls[i]),
                       "io_time_ns": int(io_time[i]), "input_wait_ns": int(wait[i]),
                       "input_wait_pct": round(100.0 * min(wait[i], dur[i]) / dur[i], 2),
                       **({"object_requests": int(obj_n[i]), "object_bytes": int(obj_b[i])} if has_objects else {})}
                      for i, st in enumerate(steps)]}


def _no_steps_message(view: View) -> str:
    if all((p.capture.io_info or {}).get("source") == "record" for p in view.parts):
        return ("A whole-run record has no training steps (it has no TensorFlow timeline): showing "
                "equal time windows of the process's life instead.")
    return ("No step markers in this capture (no device 'Steps' line, no train/test TraceMe or "
            "Keras 'Profiled batch' events): showing equal time windows instead.")


def _covered(s: np.ndarray, e: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Length of the union of intervals [s, e] inside each [starts_k, ends_k]."""
    if len(s) == 0:
        return np.zeros(len(starts))
    o = np.argsort(s, kind="stable")
    s, e = s[o], np.maximum.accumulate(e[o])
    # merge overlapping intervals
    brk = np.ones(len(s), dtype=bool)
    brk[1:] = s[1:] > e[:-1]
    heads = np.flatnonzero(brk)
    us = s[heads]
    ue = np.maximum.reduceat(e, heads)
    ones = np.ones(len(us))
    return integral(us, ue, ones, ends) - integral(us, ue, ones, starts)
