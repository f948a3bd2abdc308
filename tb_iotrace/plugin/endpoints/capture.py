"""``/capture``: what the tab shows first: lanes, extent, steps, I/O totals and messages."""
from __future__ import annotations

from typing import Any

from tb_iotrace.analysis.file_totals import untracked_note
from tb_iotrace.plugin.request_view import View, fmt_float, io_by_choice, unreadable_json, view_steps


def capture_impl(view: View, io_by: str = "thread") -> dict[str, Any]:
    io_by = io_by_choice(io_by)
    lanes = view.lane_table(io_by).described
    lo, hi = view.extent()
    io_events = sum(len(p.capture.io) for p in view.parts if p.capture.io is not None)
    has_io = any(p.capture.io_info is not None for p in view.parts)
    dropped = sum(int((p.capture.io_info or {}).get("dropped", 0)) for p in view.parts)
    capped = sum(int((p.capture.io_info or {}).get("capped", 0)) for p in view.parts)
    files = sum(p.capture.file_records for p in view.parts)
    messages = []
    if not has_io:
        # why, as each capture tells (framework, version): hosts of one run may differ
        messages.extend(dict.fromkeys(p.capture.no_io_reason for p in view.parts if p.capture.no_io_reason))
    elif io_events == 0 and files == 0:
        messages.append("tb_iotrace was enabled but saw no file access in this capture window.")
    if dropped:
        messages.append(f"{dropped} I/O operations were not recorded (trace buffer full or "
                        "capped); counters in the files table are still exact.")
    untracked = _untracked_total(view)
    if untracked:
        messages.append(untracked_note(untracked) + ".")
    for host, name, reason in view.unreadable:
        messages.append(f"Host {host} is left out: its file {name} cannot be read ({reason}).")
    steps, source = view_steps(view)
    processes = [dict((p.capture.io_info or {}).get("process") or {}, host=p.host) for p in view.parts
                 if (p.capture.io_info or {}).get("source") == "record"]
    return {
        "run": view.run,
        "source": "record" if processes else "profile",
        "processes": processes,
        "hosts": [p.host for p in view.parts],
        "unreadable": unreadable_json(view),
        "extent": [lo, hi],
        "lanes": lanes,
        "io_by": io_by,
        "steps": steps,
        "steps_source": source,
        "io": {"has_io": has_io, "events": io_events, "dropped": dropped, "capped": capped,
               "files": files, "untracked": untracked},
        "messages": messages,
        "warnings": [w for p in view.parts for w in p.capture.warnings][:20],
        "run_series": run_series(view),
    }


def run_series(view: View) -> list[dict[str, Any]]:
    """The whole-run time series of each record in the view, on the view's clock (ns):
    ``{host, start, bin_ns, read_bps, write_bps, calls, io_time_s}`` (empty for captures)."""
    out = []
    for p in view.parts:
        ts = (p.capture.io_info or {}).get("timeseries")
        if not ts:
            continue
        width = float(ts["bin_ns"])
        out.append({"host": p.host, "start": int(ts["start_ns"]) - int(p.capture.profile_start_ns) + p.offset,
                    "bin_ns": width,
                    "read_bps": [fmt_float(b * 1e9 / width) for b in ts["bytes_read"]],
                    "write_bps": [fmt_float(b * 1e9 / width) for b in ts["bytes_written"]],
                    "bytes_read": sum(ts["bytes_read"]), "bytes_written": sum(ts["bytes_written"]),
                    "calls": list(ts["calls"]), "io_time_s": [fmt_float(t) for t in ts["io_time_s"]]})
    return out


def _untracked_total(view: View) -> dict[str, Any] | None:
    """What the captures of a view counted but could not track, summed (None: nothing)."""
    total: dict[str, Any] = {}
    for p in view.parts:
        u = (p.capture.io_info or {}).get("untracked")
        if not isinstance(u, dict):
            continue
        for k in ("files", "calls", "bytes_read", "bytes_written", "reentrant_calls"):
            total[k] = int(total.get(k, 0)) + int(u.get(k) or 0)
        total["examples"] = (list(total.get("examples", [])) + [str(e) for e in u.get("examples") or []])[:8]
    return total or None
