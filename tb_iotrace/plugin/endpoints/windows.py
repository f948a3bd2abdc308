"""``/windows``: the profile windows of the job a run belongs to, in time order, with their input
wait and I/O (:mod:`tb_iotrace.analysis.jobwindows`, as ``tb-iotrace report`` lists them), so that a
job that slows down over hours shows where.

The job's profile runs are every run of kind ``profile`` whose name has the same parent as the
asked run's. Each window's row is made from its hosts' ``/hosts`` rows (:func:`.hosts.hosts_impl`)
and kept while its files are unchanged (size and mtime), so a job of many windows is decoded
once, not at each request; a window whose captures cannot be read is listed in ``unreadable``
and the others still are.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from tb_iotrace.analysis.jobwindows import job_of, jobs, origin_text, window_row
from tb_iotrace.store.window_origin import read_origin
from tb_iotrace.store.xplane import XPlaneError
from tb_iotrace.plugin.cache import LogdirIndex, file_key
from tb_iotrace.plugin.endpoints.hosts import hosts_impl

ROWS_KEPT = 4096     # window rows remembered (a few hundred bytes each)
_rows: OrderedDict[tuple[Any, ...], dict[str, Any]] = OrderedDict()
_rows_lock = threading.Lock()


def _row(index: LogdirIndex, run: str, files: list[tuple[str, str]]) -> dict[str, Any]:
    key = (index.logdir, run, tuple((h, p, file_key(p)) for h, p in files))
    with _rows_lock:
        got = _rows.get(key)
        if got is not None:
            _rows.move_to_end(key)
            return got
    view = index.view(run, files)
    caps = [p.capture for p in view.parts]
    row = window_row(run, hosts_impl(view)["hosts"], [c.profile_start_ns for c in caps],
                     [c.profile_stop_ns for c in caps], [len(c.steps) for c in caps])
    origin = next((o for o in (read_origin(p) for _, p in files if "://" not in p) if o is not None), None)
    if origin is not None:      # tb-iotrace run --profile-every or attach took it
        row["taken_by"] = origin_text(origin)
    with _rows_lock:
        _rows[key] = row
        while len(_rows) > ROWS_KEPT:
            _rows.popitem(last=False)
    return row


def windows_impl(index: LogdirIndex, run: str) -> dict[str, Any]:
    """``{job, windows: [{n, run, start_ns, stop_ns, duration_ns, hosts, steps, input_wait_ns,
    span_ns, input_wait_share, bytes_read, bytes_written, read_time_s, io_calls}], unreadable:
    [{run, error}]}`` for the job of ``run`` (KeyError when the run is unknown)."""
    info, _ = index.find(run)
    job = job_of(info.run)
    rows, unreadable = [], []
    for r in index.runs():
        if r.kind != "profile" or job_of(r.run) != job:
            continue
        try:
            rows.append(_row(index, r.run, sorted(r.hosts.items())))
        except XPlaneError as exc:
            unreadable.append({"run": r.run, "error": f"cannot read this capture: {exc.reason}"})
    listed = jobs(rows)
    return {"job": job, "windows": listed[0]["windows"] if listed else [], "unreadable": unreadable}
