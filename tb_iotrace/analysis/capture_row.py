"""A capture's row of the per-host table (the tab's "All hosts", ``tb-iotrace report``'s
per-host table, the fleet's ``hosts``), computed from the capture decoded as the tab decodes it
(:mod:`tb_iotrace.model.tab`): what the tab's ``/hosts`` answers, what the plugin's summary children and
the recording side (:mod:`tb_iotrace.analysis.landed`, when tb_iotrace writes a capture) keep as
the capture's summary (:mod:`tb_iotrace.store.summaries`), and the capture's input waits by the one
rule of :mod:`tb_iotrace.model.stepwait` (the tab's ``/steps`` reads them too).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tb_iotrace.analysis.file_totals import host_row
from tb_iotrace.model.stepwait import InputWait, input_wait, is_input_wait, merge
from tb_iotrace.model.tab.columns import Lane, TabCapture

__all__ = ["capture_input_wait", "capture_row", "wait_intervals"]


def _input_mask(cap: TabCapture, lane: Lane) -> np.ndarray:
    """The lane's input-wait events (tb_iotrace.model.stepwait's rule: at any depth)."""
    got = lane.cache.get("_input")
    if got is None:
        ids = np.unique(lane.name_id)
        hit = [i for i in ids.tolist() if i >= 0 and is_input_wait(cap.names[i])]
        got = np.isin(lane.name_id, np.array(hit, dtype=np.int32)) if hit else np.zeros(len(lane), bool)
        lane.cache["_input"] = got
    return got


def wait_intervals(cap: TabCapture) -> tuple[np.ndarray, np.ndarray]:
    """The capture's input waits, merged over all its host lanes (ns, capture clock): the one
    rule of :mod:`tb_iotrace.model.stepwait`, as the report and the findings take it."""
    got = cap.cache.get("wait_iv")
    if got is None:
        ss, es = [], []
        for lane in cap.lanes:
            if lane.group != "host":
                continue
            mask = _input_mask(cap, lane)
            if mask.any():
                ss.append(lane.start[mask])
                es.append(lane.end[mask])
        got = merge(np.concatenate(ss) if ss else np.zeros(0, np.int64),
                    np.concatenate(es) if es else np.zeros(0, np.int64))
        cap.cache["wait_iv"] = got
    return got


def capture_input_wait(cap: TabCapture) -> InputWait:
    """The capture's input wait and its share (ns) by :func:`tb_iotrace.model.stepwait.input_wait`:
    inside its steps over their time, else over the span of its waits."""
    return input_wait(wait_intervals(cap), [s["start"] for s in cap.steps], [s["end"] for s in cap.steps])


def capture_row(host: str, cap: TabCapture) -> dict[str, Any]:
    """Per host: ``bytes_read``/``bytes_written``/``read_time_s``, the Darshan counters summed
    over the host's POSIX and STDIO records (``source`` "counters"), or the traced calls when
    the host has no counter record ("trace"); ``io_calls`` the traced calls; ``input_wait_ns``
    the time the host waited on input and ``input_wait_pct`` its share, by the one rule of
    :mod:`tb_iotrace.model.stepwait` (inside the steps over the steps' time, as /steps, the report and
    the findings; ``span_ns`` that time; ``wait_basis`` "steps", "input waits" or "none")."""
    io = cap.io
    calls = len(io) if io is not None else 0
    ct = cap.counters
    trace = None
    if not len(ct.paths) and calls:
        r, w = io.moved()
        trace = (float(r.sum()), float(w.sum()),
                 float((io.end - io.start)[io.is_read[io.op]].sum()) / 1e9)
    iw = capture_input_wait(cap)
    return host_row(host, ct.modules, ct.col, trace=trace, io_calls=calls, input_wait_ns=iw.wait,
                    span_ns=iw.time, wait_basis=iw.basis)
