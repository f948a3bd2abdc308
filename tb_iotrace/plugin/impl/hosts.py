"""``/hosts``: one row per host of a view, so that a slow worker stands out in "All hosts"
(the rows are :func:`tb_iotrace.report.host_row`'s, as in ``tb-iotrace report``)."""
from __future__ import annotations

from typing import Any

from ...report import host_row
from ..view import View, unreadable_json
from .timeseries import input_wait_ns


def hosts_impl(view: View) -> dict[str, Any]:
    """Per host: ``bytes_read``/``bytes_written``/``read_time_s``, the Darshan counters summed
    over the host's POSIX and STDIO records (``source`` "counters"), or the traced calls when
    the host has no counter record ("trace"); ``io_calls`` the traced calls; ``input_wait_ns``
    the time the host waited on input (as in /steps) and ``input_wait_pct`` that against the
    host's capture span (at most 100). ``unreadable``: the run's hosts whose file cannot be
    read, each with the reason (left out of the rows)."""
    rows = []
    for p in view.parts:
        cap = p.capture
        io = cap.io
        calls = len(io) if io is not None else 0
        ct = cap.counters
        trace = None
        if not len(ct.paths) and calls:
            r, w = io.moved()
            trace = (float(r.sum()), float(w.sum()),
                     float((io.end - io.start)[io.is_read[io.op]].sum()) / 1e9)
        lo, hi = cap.extent
        rows.append(host_row(p.host, ct.modules, ct.col, trace=trace, io_calls=calls,
                             input_wait_ns=input_wait_ns(cap, lo, hi), span_ns=hi - lo))
    return {"hosts": rows, "unreadable": unreadable_json(view)}
