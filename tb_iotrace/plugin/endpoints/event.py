"""``/event``: one event's details, with the host op enclosing an I/O call and its step."""
from __future__ import annotations

from typing import Any

import numpy as np

from tb_iotrace.plugin.object_lanes import GROUP as OBJECT, object_event
from tb_iotrace.model.tab.columns import TabCapture, Lane
from tb_iotrace.plugin.request_view import NotFound, Part, View, view_steps


def event_impl(view: View, lane_key: str, index: int) -> dict[str, Any]:
    """One event: name, lane, times; for I/O: call, file, offset, bytes, fd, errno, and the
    host op that encloses it on the same thread (deepest one covering its start) and the
    step it falls in; for host/device events: their stats read back from the file."""
    part, lane = view.find_lane(lane_key)
    if not (0 <= index < len(lane)):
        raise NotFound(f"no event {index} in lane {lane_key!r}")
    cap = part.capture
    s, e = int(lane.start[index]), int(lane.end[index])
    out: dict[str, Any] = {"lane": part.prefix + lane.key, "lane_name": lane.name, "group": lane.group,
                           "index": index, "start": s + part.offset, "dur": e - s, "host": part.host}
    if lane.group == "io":
        io = cap.io
        k = lane.io_row(index)
        op = io.ops[int(io.op[k])]
        path = io.paths[int(io.path[k])] if io.path[k] >= 0 else ""
        out.update({"name": op, "call": op, "file": path, "offset": int(io.offset[k]),
                    "bytes_requested": int(io.requested[k]), "bytes": int(io.returned[k]),
                    "fd": int(io.fd[k]), "errno": int(io.errno[k]), "tid": int(io.tid[k])})
        host = cap.host_lane_for_tid(int(io.tid[k]))
        out["host_op"] = _enclosing(cap, host, s, e, part) if host is not None else None
        out["host_thread"] = host.name if host is not None else None
        out["thread"] = lane.extra.get("comm") or None
    elif lane.group == OBJECT:
        out.update(object_event(cap, lane, index))
        host = cap.host_lane_for_tid(int(out["tid"]))
        out["host_op"] = _enclosing(cap, host, s, e, part) if host is not None else None
        out["host_thread"] = host.name if host is not None else None
    else:
        nid = int(lane.name_id[index])
        out["name"] = cap.names[nid] if nid >= 0 else ""
        out["stats"] = {k: (v if isinstance(v, (int, float, str)) else repr(v))
                        for k, v in cap.event_stats(lane, index).items()}
    steps, _ = view_steps(view)
    t = s + part.offset
    out["step"] = next(({"index": st["index"], "name": st["name"]} for st in steps
                        if st["start"] <= t < st["end"]), None)
    return out


def _enclosing(cap: TabCapture, lane: Lane, s: int, e: int, part: Part) -> dict[str, Any] | None:
    best = None
    for r in range(lane.rows):
        a, b = int(lane.row_bounds[r]), int(lane.row_bounds[r + 1])
        i = a + int(np.searchsorted(lane.start[a:b], s, side="right")) - 1
        # walk back over events that start before s (same row: sorted, non-overlapping
        # when properly nested, so the last one starting before s is the candidate)
        if i >= a and lane.end[i] >= s:
            best = (r, i)
    if best is None:
        return None
    r, i = best
    nid = int(lane.name_id[i])
    return {"name": cap.names[nid] if nid >= 0 else "", "lane": part.prefix + lane.key, "index": i,
            "start": int(lane.start[i]) + part.offset, "dur": int(lane.end[i] - lane.start[i]), "depth": r}
