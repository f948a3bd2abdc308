"""``/bandwidth`` and ``/steps``: read/write bandwidth over time, and I/O per training step."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from tb_iotrace.analysis.object_steps import per_step
from tb_iotrace.plugin import level_of_detail as lod
from tb_iotrace.plugin.capture_objects import capture_objects
from tb_iotrace.model.stepwait import covered
from tb_iotrace.analysis.decoded.host_row import capture_input_wait, wait_intervals
from tb_iotrace.analysis.decoded.tab_model import TabCapture, Lane
from tb_iotrace.plugin.request_view import View, fmt_float, view_steps

MAX_BINS = 4096


def _integral(starts: np.ndarray, ends: np.ndarray, rates: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """F(t) = sum_i rate_i * |[s_i, e_i] intersect (-inf, t]| at each edge."""
    o = np.argsort(starts, kind="stable")
    s_sorted, rs = starts[o], rates[o]
    c_r = np.concatenate(([0.0], np.cumsum(rs)))
    c_rs = np.concatenate(([0.0], np.cumsum(rs * s_sorted)))
    o2 = np.argsort(ends, kind="stable")
    e_sorted, re_ = ends[o2], rates[o2]
    c_re = np.concatenate(([0.0], np.cumsum(re_)))
    c_ree = np.concatenate(([0.0], np.cumsum(re_ * e_sorted)))
    k1 = np.searchsorted(s_sorted, edges, side="right")
    k2 = np.searchsorted(e_sorted, edges, side="right")
    return (edges * c_r[k1] - c_rs[k1]) - (edges * c_re[k2] - c_ree[k2])


def bandwidth_impl(view: View, start: float | None, end: float | None, bins: int) -> dict[str, Any]:
    """Read and write bandwidth (bytes/s) in ``bins`` equal bins over [start, end]: each
    call's bytes are spread evenly over its duration, so the bins add up to the bytes moved
    inside the window. Also the average number of calls in flight per bin."""
    lo, hi = view.extent()
    t0 = float(lo if start is None else start)
    t1 = float(hi if end is None else end)
    if not (math.isfinite(t0) and math.isfinite(t1)):
        raise ValueError("start and end must be finite numbers")
    if t1 <= t0:
        t1 = t0 + 1.0
    bins = int(min(max(int(bins), 1), MAX_BINS))
    bw = (t1 - t0) / bins
    edges = np.linspace(0.0, t1 - t0, bins + 1)
    width_s = bw / 1e9
    read = np.zeros(bins)
    write = np.zeros(bins)
    busy = np.zeros(bins)
    total_read = total_write = 0
    for p in view.parts:
        io = p.capture.io
        if io is None or len(io) == 0:
            continue
        for lane in p.capture.io_lanes("thread"):
            i0, i1 = lod.window(lane.start, lane.maxend, 0, len(lane), t0 - p.offset, t1 - p.offset)
            if i1 <= i0:
                continue
            rows_ = lane.io_rows(i0, i1)
            s = (io.start[rows_] + p.offset).astype(np.float64) - t0
            e = (io.end[rows_] + p.offset).astype(np.float64) - t0
            op_ = io.op[rows_]
            ret = np.maximum(io.returned[rows_], 0).astype(np.float64)
            keep = e >= 0
            s, e = s[keep], np.maximum(e[keep], s[keep] + 1.0)
            rd = np.where(io.is_read[op_], ret, 0.0)[keep]
            wr = np.where(io.is_write[op_], ret, 0.0)[keep]
            # bytes inside the window only
            frac = (np.minimum(e, t1 - t0) - np.maximum(s, 0.0)) / (e - s)
            total_read += float((rd * frac).sum())
            total_write += float((wr * frac).sum())
            kb = np.floor(s / bw).astype(np.int64)
            ke = np.floor(e / bw).astype(np.int64)
            one = (kb == ke) & (kb >= 0) & (kb < bins)
            for arr, out in ((rd, read), (wr, write), (e - s, busy)):
                if one.any():
                    out += np.bincount(kb[one], weights=arr[one], minlength=bins)[:bins]
            many = ~one
            if many.any():
                sm, em = s[many], e[many]
                dur = em - sm
                for arr, out in ((rd[many], read), (wr[many], write), (dur, busy)):
                    m = arr > 0
                    if m.any():
                        F = _integral(sm[m], em[m], arr[m] / dur[m], edges)
                        out += np.diff(F)
    total_read = int(round(total_read))
    total_write = int(round(total_write))
    return {"start": t0, "end": t1, "bins": bins, "bin_ns": bw,
            "read_bps": [fmt_float(x) for x in (read / width_s).tolist()],
            "write_bps": [fmt_float(x) for x in (write / width_s).tolist()],
            "in_flight": [fmt_float(x) for x in (busy / bw).tolist()],
            "total_read": total_read, "total_write": total_write}


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
    return _integral(us, ue, ones, ends) - _integral(us, ue, ones, starts)


def input_wait_ns(cap: TabCapture, lo: float, hi: float) -> float:
    """How long the capture's host waited on input inside [lo, hi] (capture clock): the union
    of its input waits (tb_iotrace.model.stepwait), as /steps' ``input_wait_ns``."""
    return float(covered(wait_intervals(cap), int(lo), int(hi))[0])
