"""This process's part of a window: begin and end its native session, and turn what it recorded into a *process record* (:mod:`tb_iotrace.store.kineto`)."""
from __future__ import annotations

import json
import os
import time
from typing import Any

from tb_iotrace.base.atomic import atomic_write
from tb_iotrace.base.run_delay import run_delay_since, run_delays
from tb_iotrace.recording.session import Recording, begin_session, end_session
from tb_iotrace.store.kineto import FETCH_COLUMNS
from tb_iotrace.store.objcolumns import to_columns
from tb_iotrace.recording.pytorch import state


def process_record(recording: Recording, role: str, start_ns: int,
                   fetches: list[tuple[int, int, int, int]] | None = None,
                   worker_id: int | None = None, cpu_ns: int | None = None,
                   run_delay_ns: int | None = None) -> dict[str, Any]:
    """A :class:`~tb_iotrace.recording.session.Recording` as the process record
    :mod:`tb_iotrace.store.kineto` writes; a DataLoader worker's also holds its fetch spans
    (``fetches``: equal-length lists ``start_ns``, ``end_ns``, ``tid``, ``samples``) and its
    ``worker_id``; ``cpu_ns`` the process's CPU time (all its threads, user and system) over
    the window, ``run_delay_ns`` the time its threads waited for a core
    (:mod:`tb_iotrace.base.run_delay`)."""
    ev = recording.events
    events = {
        "op": ev.op.tolist(), "path": ev.path.tolist(),
        "offset": ev.offset.tolist(), "requested": ev.requested.tolist(), "returned": ev.returned.tolist(),
        "fd": ev.fd.tolist(), "errno": ev.errno.tolist(), "start_ns": ev.start_ns.tolist(),
        "end_ns": ev.end_ns.tolist(), "tid": ev.tid.tolist(),
    }
    rec: dict[str, Any] = {
        "pid": os.getpid(), "role": role, "start_ns": int(recording.start_ns or start_ns),
        "end_ns": int(recording.end_ns),
        "threads": [[t.tid, t.pthread_self, t.name] for t in recording.threads if t.nevents or t.dropped],
        "events": events, "counters": recording.records(), "dropped": int(recording.dropped),
    }
    if cpu_ns is not None:
        rec["cpu_ns"] = int(cpu_ns)
    if run_delay_ns is not None:
        rec["run_delay_ns"] = int(run_delay_ns)
    if recording.untracked:
        rec["untracked"] = recording.untracked.to_dict()
    lost = int(getattr(recording, "objects_left_out", 0) or 0)
    if recording.objects or lost:
        rec["objects"] = to_columns(recording.objects, lost)
    if fetches is not None:
        rec["fetches"] = {k: [int(f[i]) for f in fetches] for i, k in enumerate(FETCH_COLUMNS)}
        if worker_id is not None:
            rec["worker_id"] = int(worker_id)
    return rec


def begin() -> None:
    if state.session is None:
        state.session_start_ns = time.time_ns()
        state.session_cpu_ns = time.process_time_ns()
        state.session_run_delays = run_delays()
        state.session = begin_session()
        if state.role == "worker":
            state.spans = []     # after the session began: every span lies inside it


def end() -> Recording | None:
    sess, state.session = state.session, None
    state.ended_cpu_ns = time.process_time_ns() - state.session_cpu_ns if sess is not None else None
    state.ended_run_delay_ns = run_delay_since(state.session_run_delays) if sess is not None else None
    # before the session ends: every span kept ended inside it
    spans, state.spans = state.spans, None
    state.ended_spans = spans if spans is not None else []
    if sess is None:
        return None
    recording = Recording()
    end_session(sess, recording)
    return recording


def write_side_record(window: int, spool: str) -> str | None:
    """End this (child) process's session and write its record; the path, None if none."""
    recording = end()
    if recording is None:
        return None
    path = os.path.join(spool, f"{window}.{os.getpid()}.json")
    rec = process_record(recording, state.role, state.session_start_ns, list(state.ended_spans) if state.role == "worker" else None,
                         state.worker_id, cpu_ns=state.ended_cpu_ns, run_delay_ns=state.ended_run_delay_ns)
    body = json.dumps(rec, separators=(",", ":")).encode()
    atomic_write(path, lambda fh: fh.write(body))
    return path

