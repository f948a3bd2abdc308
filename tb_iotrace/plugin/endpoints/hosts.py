"""``/hosts``: one row per host of a view, so that a slow worker stands out in "All hosts"
(the rows are :func:`tb_iotrace.analysis.text_report.host_row`'s, as in ``tb-iotrace report``)."""
from __future__ import annotations

from typing import Any

from tb_iotrace.analysis.text_report import host_row
from tb_iotrace.plugin.request_view import View, unreadable_json
from tb_iotrace.plugin.endpoints.bandwidth import capture_input_wait


def hosts_impl(view: View) -> dict[str, Any]:
    """Per host: ``bytes_read``/``bytes_written``/``read_time_s``, the Darshan counters summed
    over the host's POSIX and STDIO records (``source`` "counters"), or the traced calls when
    the host has no counter record ("trace"); ``io_calls`` the traced calls; ``input_wait_ns``
    the time the host waited on input and ``input_wait_pct`` its share, by the one rule of
    :mod:`tb_iotrace.model.stepwait` (inside the steps over the steps' time, as /steps, the report and
    the findings; ``span_ns`` that time; ``wait_basis`` "steps", "input waits" or "none").
    ``unreadable``: the run's hosts whose file cannot be read, each with the reason (left out of
    the rows)."""
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
        iw = capture_input_wait(cap)
        row = host_row(p.host, ct.modules, ct.col, trace=trace, io_calls=calls, input_wait_ns=iw.wait,
                       span_ns=iw.time)
        row["wait_basis"] = iw.basis
        rows.append(row)
    return {"hosts": rows, "unreadable": unreadable_json(view)}
