"""A job's profile windows in time order, so that a job that slows down over hours shows where
(``tb-iotrace report`` and the I/O tab's ``/windows``).

A *job* is the folder that holds the windows' ``plugins/profile``: the run name without its
last segment (``""`` for sessions at the top of the logdir, shown as ``.``). Each profile run
(session) of the job is a *window*: ``tb_iotrace.keras.ProfileEvery``, ``tb-iotrace run
--profile-every``, Keras's ``profile_batch``, ``tf.profiler`` or ``jax.profiler`` captures alike.
A window's figures sum its hosts: bytes read, I/O calls, read time, and the input wait by the
one rule of :mod:`tb_iotrace.model.stepwait` (inside the steps over their time); its steps are the
steps of its host that has the most. Pure: the callers read the captures.
"""
from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any


__all__ = ["from_report", "job_of", "jobs", "origin_text", "when_text", "window_row"]


def job_of(run: str) -> str:
    """The job of a profile run: its name without the session (``""`` at the top)."""
    return run.rpartition("/")[0]


def window_row(run: str, hosts: Sequence[Mapping[str, Any]], start_ns: Sequence[int | None],
               stop_ns: Sequence[int | None], steps: Sequence[int]) -> dict[str, Any]:
    """One window from its hosts' per-host rows (:func:`tb_iotrace.analysis.file_totals.host_row`), their
    profile start and stop (epoch ns, None when the capture has none) and their step counts.
    ``start_ns``/``stop_ns`` the earliest start and the latest stop (None without any);
    ``input_wait_share`` the hosts' summed wait over their summed step time (None without steps
    or input waits)."""
    starts = [int(s) for s in start_ns if s is not None]
    stops = [int(s) for s in stop_ns if s is not None]
    start = min(starts) if starts else None
    stop = max(stops) if stops else None
    wait = sum(int(h.get("input_wait_ns", 0)) for h in hosts)
    span = sum(int(h.get("span_ns", 0)) for h in hosts)
    return {"run": run, "job": job_of(run), "start_ns": start, "stop_ns": stop,
            "duration_ns": (stop - start) if start is not None and stop is not None else None,
            "hosts": len(hosts), "steps": max(steps, default=0),
            "input_wait_ns": wait, "span_ns": span,
            "input_wait_share": round(min(wait, span) / span, 4) if span else None,
            "bytes_read": sum(int(h.get("bytes_read", 0)) for h in hosts),
            "bytes_written": sum(int(h.get("bytes_written", 0)) for h in hosts),
            "read_time_s": sum(float(h.get("read_time_s", 0.0)) for h in hosts),
            "io_calls": sum(int(h.get("io_calls", 0)) for h in hosts)}


def _order(w: Mapping[str, Any]) -> tuple[int, int, str]:
    start = w.get("start_ns")
    return (0 if start is not None else 1, int(start or 0), str(w["run"]))


def jobs(windows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``[{"job", "windows": [...]}]``: the windows grouped by job (jobs by name), each job's in
    time order (by start; windows without a start last, by name), numbered from 1 (``n``)."""
    by_job: dict[str, list[dict[str, Any]]] = {}
    for w in windows:
        by_job.setdefault(str(w["job"]), []).append(dict(w))
    out = []
    for job in sorted(by_job):
        ws = sorted(by_job[job], key=_order)
        for i, w in enumerate(ws):
            w["n"] = i + 1
        out.append({"job": job, "windows": ws})
    return out


def when_text(ns: Any) -> str:
    """UTC to the second; "?" for None or anything that is not an epoch time in ns (a window's
    origin is read from files anyone may write)."""
    if not isinstance(ns, (int, float)) or isinstance(ns, bool):
        return "?"
    try:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ns / 1e9))
    except (OverflowError, OSError, ValueError):
        return "?"


def origin_text(origin: Mapping[str, Any]) -> str:
    """Who took a window and when: ``tb-iotrace attach at 2026-11-28 04:20:23 (pid 13064)``."""
    return f"{origin.get('by', '?')} at {when_text(origin.get('at_ns'))} (pid {origin.get('pid', '?')})"


def from_report(runs: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The jobs and windows of a ``tb-iotrace report`` document's runs: every run whose hosts
    are all profile captures (``kind`` "xplane")."""
    rows = []
    for run in runs:
        hosts = run["hosts"]
        if not hosts or any(h.get("kind") not in ("xplane", "kineto") for h in hosts):
            continue
        prof = [h.get("profile") or {} for h in hosts]
        row = window_row(run["run"], [h["summary"] for h in hosts], [p.get("start_ns") for p in prof],
                         [p.get("stop_ns") for p in prof], [len(h.get("steps") or []) for h in hosts])
        origin = next((h["window_origin"] for h in hosts if isinstance(h.get("window_origin"), dict)), None)
        if origin is not None:
            row["taken_by"] = origin_text(origin)
        rows.append(row)
    return jobs(rows)
