"""``/windows``: the profile windows of the job a run belongs to, in time order, with their input
wait and I/O (:mod:`tb_iotrace.analysis.jobwindows`, as ``tb-iotrace report`` lists them), so that a
job that slows down over hours shows where.

The job's windows are every run of kind ``profile`` (TensorFlow, JAX) or ``kineto`` (a folder of
PyTorch traces: ``tb-iotrace run --profile-every`` and ``attach`` write one per window under
``<logdir>/pytorch``) whose name has the same parent as the asked run's. Who took a window: the
``tb_iotrace.origin.json`` beside a TensorFlow/JAX capture, the trace's own record
(``window_origin``) for a PyTorch one; neither for the job's own profiler or ``trace_handler``. Each window's row is made from its hosts' ``/hosts`` rows (:func:`.hosts.hosts_impl`)
and kept while its files are unchanged (size and mtime), so a job of many windows is decoded
once, not at each request; a window whose captures cannot be read is listed in ``unreadable``
and the others still are.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from tb_iotrace.analysis.jobwindows import job_of, jobs, origin_text, window_row
from tb_iotrace.store.kineto_xspace import KINETO_KEY
from tb_iotrace.store.window_origin import read_origin
from tb_iotrace.store.xplane import XPlaneError
from tb_iotrace.plugin.cache import LogdirIndex, file_key
from tb_iotrace.plugin.endpoints.hosts import hosts_impl

WINDOW_KINDS = ("profile", "kineto")   # the runs that are profile windows (not whole-run records)
ROWS_KEPT = 4096     # window rows remembered (a few hundred bytes each)
_rows: OrderedDict[tuple[Any, ...], dict[str, Any]] = OrderedDict()
_rows_lock = threading.Lock()


def _torch_origin(cap: Any) -> dict[str, Any] | None:
    """``window_origin`` of a PyTorch trace's ``tb_iotrace`` record (None elsewhere)."""
    kin = (getattr(cap, "io_info", None) or {}).get(KINETO_KEY)
    origin = kin.get("window_origin") if isinstance(kin, dict) else None
    return origin if isinstance(origin, dict) else None


def _row(index: LogdirIndex, run: str, kind: str, files: list[tuple[str, str]]) -> dict[str, Any]:
    key = (index.logdir, run, kind, tuple((h, p, file_key(p)) for h, p in files))
    with _rows_lock:
        got = _rows.get(key)
        if got is not None:
            _rows.move_to_end(key)
            return got
    view = index.view(run, files)
    caps = [p.capture for p in view.parts]
    row = window_row(run, hosts_impl(view)["hosts"], [c.profile_start_ns for c in caps],
                     [c.profile_stop_ns for c in caps], [len(c.steps) for c in caps])
    row["kind"] = kind
    origin = next((o for o in (read_origin(p) for _, p in files if "://" not in p) if o is not None), None)
    if origin is None:          # a PyTorch window: its trace's record says
        origin = next((o for o in (_torch_origin(c) for c in caps) if o is not None), None)
    if origin is not None:      # tb-iotrace run --profile-every or attach took it
        row["taken_by"] = origin_text(origin)
    with _rows_lock:
        _rows[key] = row
        while len(_rows) > ROWS_KEPT:
            _rows.popitem(last=False)
    return row


def windows_impl(index: LogdirIndex, run: str) -> dict[str, Any]:
    """``{job, windows: [{n, run, kind, start_ns, stop_ns, duration_ns, hosts, steps, input_wait_ns,
    span_ns, input_wait_share, bytes_read, bytes_written, read_time_s, io_calls[, taken_by]}],
    unreadable: [{run, error}]}`` for the job of ``run`` (KeyError when the run is unknown).
    ``kind``: "profile" (TensorFlow/JAX) or "kineto" (PyTorch traces); ``hosts``: the window's
    capture files (a PyTorch trace holds its DataLoader workers' I/O too); ``taken_by``: who took
    the window and when, only for windows ``tb-iotrace run``/``attach`` took."""
    info, _ = index.find(run)
    job = job_of(info.run)
    rows, unreadable = [], []
    for r in index.runs():
        if r.kind not in WINDOW_KINDS or job_of(r.run) != job:
            continue
        try:
            rows.append(_row(index, r.run, r.kind, sorted(r.hosts.items())))
        except XPlaneError as exc:
            unreadable.append({"run": r.run, "error": f"cannot read this capture: {exc.reason}"})
    listed = jobs(rows)
    return {"job": job, "windows": listed[0]["windows"] if listed else [], "unreadable": unreadable}
