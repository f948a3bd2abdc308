"""``/hosts``: one row per host of a view, so that a slow worker stands out in "All hosts"."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..view import View, fmt_float
from .timeseries import input_wait_ns


def hosts_impl(view: View) -> dict[str, Any]:
    """Per host: ``bytes_read``/``bytes_written``/``read_time_s``, the Darshan counters summed
    over the host's POSIX and STDIO records (``source`` "counters"), or the traced calls when
    the host has no counter record ("trace"); ``io_calls`` the traced calls; ``input_wait_ns``
    the time the host waited on input (as in /steps) and ``input_wait_pct`` that against the
    host's capture span (at most 100)."""
    rows = []
    for p in view.parts:
        cap = p.capture
        io = cap.io
        calls = len(io) if io is not None else 0
        ct = cap.counters
        if len(ct.paths):
            mods = np.array(ct.modules, dtype=object)

            def total(posix: str, stdio: str) -> float:
                v = np.where(mods == "POSIX", ct.col(posix), np.where(mods == "STDIO", ct.col(stdio), np.nan))
                return float(np.nansum(v))

            rd, wr = total("POSIX_BYTES_READ", "STDIO_BYTES_READ"), total("POSIX_BYTES_WRITTEN", "STDIO_BYTES_WRITTEN")
            rtime = total("POSIX_F_READ_TIME", "STDIO_F_READ_TIME")
            source = "counters"
        elif calls:
            r, w = io.moved()
            rd, wr = float(r.sum()), float(w.sum())
            rtime = float((io.end - io.start)[io.is_read[io.op]].sum()) / 1e9
            source = "trace"
        else:
            rd = wr = rtime = 0.0
            source = "none"
        lo, hi = cap.extent
        wait = input_wait_ns(cap, lo, hi)
        span = max(float(hi - lo), 1.0)
        rows.append({"host": p.host, "source": source, "bytes_read": int(rd), "bytes_written": int(wr),
                     "read_time_s": fmt_float(rtime), "io_calls": int(calls), "files": len(ct.paths),
                     "input_wait_ns": int(wait), "input_wait_pct": round(100.0 * min(wait, span) / span, 2),
                     "span_ns": int(hi - lo)})
    return {"hosts": rows}
