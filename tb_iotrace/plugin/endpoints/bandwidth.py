"""``/bandwidth``: read/write bandwidth over time (``/steps``: :mod:`tb_iotrace.plugin.endpoints.steps`)."""
from __future__ import annotations

from typing import Any

import numpy as np

from tb_iotrace.plugin import level_of_detail as lod
from tb_iotrace.plugin.request_view import View, fmt_float, time_window

MAX_BINS = 4096


def integral(starts: np.ndarray, ends: np.ndarray, rates: np.ndarray, edges: np.ndarray) -> np.ndarray:
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
    t0, t1 = time_window(t0, t1)
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
            # a call lasts at least one representable step (+1 ns is lost at 2**62 ns from the window)
            s, e = s[keep], np.maximum(e[keep], np.nextafter(s[keep] + 1.0, np.inf))
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
                        F = integral(sm[m], em[m], arr[m] / dur[m], edges)
                        out += np.diff(F)
    total_read = int(round(total_read))
    total_write = int(round(total_write))
    return {"start": t0, "end": t1, "bins": bins, "bin_ns": bw,
            "read_bps": [fmt_float(x) for x in (read / width_s).tolist()],
            "write_bps": [fmt_float(x) for x in (write / width_s).tolist()],
            "in_flight": [fmt_float(x) for x in (busy / bw).tolist()],
            "total_read": total_read, "total_write": total_write}
