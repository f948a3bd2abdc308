"""The timeline's object-request lanes (group ``"object"``): one lane per thread that made
requests (``obj.p<pid>.t<tid>``), each request a span named by its method and object
(``GET s3://bucket/key``: the names are redacted when recorded), on as many rows as its
requests overlap (async clients keep several in flight). ``/timeline`` gives each item its
bytes and, for a failed request, its HTTP status (in ``err``)."""
from __future__ import annotations

import numpy as np

from tb_iotrace.plugin.capture_objects import capture_objects
from tb_iotrace.model.tab.columns import Lane, TabCapture, make_lane

__all__ = ["GROUP", "failed_status", "object_lanes", "object_sums"]

GROUP = "object"


def object_lanes(cap: TabCapture) -> list[Lane]:
    """The capture's object lanes (cached on it; [] without requests)."""
    got = cap.cache.get("object_lanes")
    if got is not None:
        return got
    objs = capture_objects(cap)
    got = []
    if len(objs):
        names: dict[str, int] = {}
        nid = np.array([names.setdefault(f"{r['op']} {r['object']}", len(names)) for r in objs.rows], np.int32)
        table = list(names)
        pid = np.array([int(r["pid"]) for r in objs.rows], np.int64)
        tid = np.array([int(r["tid"]) for r in objs.rows], np.int64)
        io_lane = {ln.tid: ln for ln in cap.lanes if ln.group == "io" and ln.tid is not None}
        pids = len(set(pid.tolist())) > 1
        for p, t in sorted(set(zip(pid.tolist(), tid.tolist()))):
            idx = np.flatnonzero((pid == p) & (tid == t))
            twin = io_lane.get(t)
            label = twin.name if twin is not None else f"thread (tid {t})"
            if pids and twin is None:
                label = f"pid {p} {label}"
            ln = make_lane(f"obj.p{p}.t{t}", GROUP, label, "Objects", objs.start[idx], objs.end[idx], nid[idx],
                           src=idx, tid=t, extra={"pid": p, **({"host_lane": twin.extra.get("host_lane")}
                                                            if twin is not None else {})})
            ln.cache["names"] = table
            got.append(ln)
    cap.cache["object_lanes"] = got
    return got


def object_sums(cap: TabCapture, lane: Lane) -> np.ndarray:
    """Bytes of the lane's requests as a running sum (``[k]``: before event k), kept on the
    lane: a merged item's bytes are two lookups."""
    got = lane.cache.get("bytes_sum")
    if got is None:
        b = capture_objects(cap).bytes[lane.src if lane.src is not None else slice(None)]
        got = np.zeros(len(b) + 1, np.int64)
        np.cumsum(b, out=got[1:])
        lane.cache["bytes_sum"] = got
    return got


def failed_status(cap: TabCapture, lane: Lane, events: np.ndarray) -> np.ndarray:
    """The HTTP status of each of the lane's ``events`` that failed (400 and up; an answer that
    never came: -1), 0 for the others."""
    objs = capture_objects(cap)
    rows = lane.src[events] if lane.src is not None else events
    st = np.array([int(objs.rows[i]["status"]) for i in rows.tolist()], np.int64)
    err = np.array([bool(objs.rows[i]["error"]) for i in rows.tolist()], bool)
    return np.where(st >= 400, st, np.where(err, -1, 0)).astype(np.int64)


def object_event(cap: TabCapture, lane: Lane, index: int) -> dict[str, object]:
    """``/event``'s fields for request ``index`` of an object lane: what was asked and answered
    (nothing secret is stored: bucket and key, or a URL without its query)."""
    objs = capture_objects(cap)
    r = objs.rows[int(lane.src[index]) if lane.src is not None else index]
    ttfb = int(r["ttfb_ns"]) - int(r["start_ns"]) if r["ttfb_ns"] else None
    rng = f"{r['range_start']}-{r['range_end']}" if int(r["range_start"]) >= 0 else ""
    return {"name": f"{r['op']} {r['object']}", "call": r["op"], "object": r["object"], "service": r["service"],
            "bytes": int(r["bytes"]), "status": int(r["status"]), "error": r["error"], "range": rng,
            "first_byte_ns": ttfb, "client": r["client"], "tid": int(r["tid"]), "pid": int(r["pid"])}
