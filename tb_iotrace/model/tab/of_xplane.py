"""A profile capture (``.xplane.pb``) decoded into the tab's :class:`~tb_iotrace.model.tab.columns.TabCapture`: the
planes' lines become lanes (host threads, device lines, the I/O lines' calls as one table), the
``tb_iotrace.io`` record gives the per-file counters and the process's facts, the steps come from
:mod:`tb_iotrace.model.tab.step_markers`. The file is read column-wise (:mod:`tb_iotrace.model.columnar`);
nothing here keeps a protobuf message per event. Which file is a capture, the model says
(:mod:`tb_iotrace.model.source_kinds`); the analysis reads the same file as a slim XSpace
(:mod:`tb_iotrace.analysis.slim_xspace`)."""
from __future__ import annotations

import os
import re
from typing import Any

import numpy as np

from tb_iotrace.base.memory import trims_memory
from tb_iotrace.model.columnar import PlaneData, SpaceData, decode_xspace
from tb_iotrace.model.io_events import io_events
from tb_iotrace.model.stepwait import DEVICE_STEPS_LINE
from tb_iotrace.model.tab.step_markers import capture_steps
from tb_iotrace.model.tab.columns import READ_OPS_RE, TF_DATA_RE, WRITE_OPS_RE, IoTable, Lane, TabCapture, make_lane, tf_data_flags
from tb_iotrace.store.xplane import XSpace, read_io_info
from tb_iotrace.store.xplane.origin import missing_io_reason
from tb_iotrace.store.xplane.io_fields import STAT_DEFAULTS
from tb_iotrace.store.xplane.schema import EVENT_STATS, IO_STAT, LINE_PREFIX, thread_line_id

def _plane_names(plane: PlaneData) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(sorted metadata ids, their index into the returned names)."""
    ids, names = plane.metadata_names()
    return ids, np.arange(len(ids), dtype=np.int32), names


def _lookup(ids: np.ndarray, keys: np.ndarray, unknown: int) -> np.ndarray:
    if len(keys) == 0:
        return np.full(len(ids), unknown, dtype=np.int32)
    at = np.minimum(np.searchsorted(keys, ids), len(keys) - 1)
    return np.where(keys[at] == ids, at, unknown).astype(np.int32)


def _short_plane(name: str) -> str:
    return name[len("/device:"):] if name.startswith("/device:") else name


def _task_env(space: SpaceData) -> tuple[int | None, int | None]:
    for p in space.planes:
        if p.name == "Task Environment":
            vals = {}
            for st in p.meta.stats:
                md = p.meta.stat_metadata.get(st.metadata_id)
                kind = st.WhichOneof("value")
                if md is not None and kind in ("int64_value", "uint64_value"):
                    vals[md.name] = int(getattr(st, kind))
            return vals.get("profile_start_time"), vals.get("profile_stop_time")
    return None, None


@trims_memory
def decode_xplane(path: str, host: str) -> TabCapture:
    """Decode one capture file into a :class:`TabCapture` (raises XPlaneError)."""
    st = os.stat(path)
    space = decode_xspace(
        path,
        stats_for=lambda pname, meta, ln: pname.startswith("/host:") and ln.name.startswith(LINE_PREFIX),
        stat_names=EVENT_STATS, stat_defaults=STAT_DEFAULTS, lazy_event_metadata=True)
    names: list[str] = []
    lanes: list[Lane] = []
    io_planes: list[PlaneData] = []
    io_info = None
    device_steps: list[dict[str, Any]] = []
    device_source = ""
    host_line_key: dict[int, str] = {}
    for plane in space.planes:
        is_host = plane.name.startswith("/host:")
        is_dev = plane.name.startswith("/device:")
        if is_host and io_info is None:
            info = _io_info(plane)
            if info is not None:
                io_info = info
        if not (is_host or is_dev):
            continue
        keys, codes, pnames = _plane_names(plane)
        base = len(names)
        names.extend(pnames)
        names_here = None
        for ln in plane.lines:
            if ln.count == 0:
                continue
            sl = slice(ln.first, ln.first + ln.count)
            if is_host and ln.name.startswith(LINE_PREFIX):
                if not io_planes or io_planes[-1] is not plane:
                    io_planes.append(plane)
                continue
            start = plane.start_ps[sl] // 1000
            end = (plane.start_ps[sl] + plane.duration_ps[sl]) // 1000
            nid = _lookup(plane.metadata_id[sl], keys, -1)
            nid = np.where(nid >= 0, nid + base, -1).astype(np.int32)
            src = np.arange(ln.first, ln.first + ln.count, dtype=np.int64)
            key = f"p{plane.index}.{ln.index}"
            label = ln.label or f"line {ln.id}"
            tf_data = False
            if is_host:
                if TF_DATA_RE.search(label):
                    tf_data = True
                else:
                    if names_here is None:
                        names_here = tf_data_flags(pnames)
                    tf_data = bool(names_here[np.where(nid >= 0, nid - base, -1)].any())
                host_line_key[ln.id] = key
            lane = make_lane(key, "host" if is_host else "device", label if is_host else
                              f"{_short_plane(plane.name)} {label}", plane.name, start, end, nid,
                              src=src, plane_index=plane.index, line_id=ln.id, tf_data=tf_data)
            lanes.append(lane)
            if is_dev and label == DEVICE_STEPS_LINE and not device_steps:
                device_steps = [{"start": int(s), "end": int(e), "name": names[i] if i >= 0 else ""}
                                for s, e, i in zip(lane.start.tolist(), lane.end.tolist(), lane.name_id.tolist())]
                device_steps.sort(key=lambda s: s["start"])
                device_source = f"{plane.name} Steps"

    io = _io_table(io_planes, io_info)
    del io_planes
    # Keep, per host/device event, only its byte range in the file (for details); drop the
    # plane arrays.
    for lane in lanes:
        plane = space.planes[lane.plane_index]
        lane.fpos = plane.file_pos[lane.src]
        lane.flen = plane.file_len[lane.src]
        lane.src = None
    used = {lane.plane_index for lane in lanes}
    planes = {p.index: p.meta for p in space.planes if p.index in used}
    md_files = {p.index: p.md_file for p in space.planes if p.index in used and p.md_file is not None}
    for plane in space.planes:
        plane.metadata_id = plane.start_ps = plane.duration_ps = None  # type: ignore[assignment]
        plane.file_pos = plane.file_len = None  # type: ignore[assignment]
        plane.stats = {}
    # I/O lanes, one per thread.
    if io is not None:
        threads = {int(t): (int(p), str(c)) for t, p, c in (io_info or {}).get("threads", [])}
        tids, first = np.unique(io.tid, return_index=True)
        bounds = list(first) + [len(io)]
        for i, tid in enumerate(tids.tolist()):
            a, b = int(bounds[i]), int(bounds[i + 1])
            pthread, comm = threads.get(tid, (0, ""))
            host_key = host_line_key.get(thread_line_id(pthread)) if pthread else None
            host_name = next((ln.name for ln in lanes if ln.key == host_key), None) if host_key else None
            label = f"{host_name or comm or 'thread'} (tid {tid})"
            lanes.append(make_lane(f"io.t{tid}", "io", label, "I/O", io.start[a:b], io.end[a:b],
                                    io.op[a:b], src=None, src_base=a, rows=1,
                                    tid=tid, extra={"host_lane": host_key, "comm": comm}))
    _order_lanes(lanes)

    steps, steps_source = capture_steps(path, names, lanes, planes, md_files, device_steps, device_source)
    for k, s in enumerate(steps):
        s["index"] = k

    if lanes:
        lo = min(int(ln.start.min()) for ln in lanes if len(ln)) if any(len(ln) for ln in lanes) else 0
        hi = max(int(ln.maxend.max()) for ln in lanes if len(ln)) if any(len(ln) for ln in lanes) else 1
    else:
        lo, hi = 0, 1
    start_ns, stop_ns = _task_env(space)
    no_io_reason = missing_io_reason(p.full_meta() for p in space.planes) if io_info is None else ""
    counter_records = list((io_info or {}).get("counters", []) or [])
    if io_info is not None:
        # the per-kind tables (~50,000 entries each for a million events) are used up
        io_info = {k: v for k, v in io_info.items()
                   if k not in ("counters", "event_kinds", "added_event_metadata", "added_stat_metadata")}
    return TabCapture(path=path, host=host, size=st.st_size, mtime_ns=st.st_mtime_ns, names=names,
                   lanes=lanes, planes=planes, md_files=md_files, io=io, io_info=io_info, counter_records=counter_records,
                   steps=steps, steps_source=steps_source, extent=(lo, max(hi, lo + 1)),
                   profile_start_ns=start_ns, profile_stop_ns=stop_ns, hostnames=space.hostnames,
                   warnings=list(space.warnings) + list(space.errors), no_io_reason=no_io_reason)


def _order_lanes(lanes: list[Lane]) -> None:
    """Host lanes (/host:CPU first, tf.data threads first, then by name), device lanes (by
    device kind and number), I/O lanes (by tid)."""

    def key(ln: Lane):
        if ln.group == "host":
            return (0, ln.plane != "/host:CPU", ln.plane, not ln.tf_data, ln.name.lower())
        if ln.group == "device":
            return (1, _device_sort(ln.plane), ln.name)
        return (2, ln.tid or 0, ln.name)

    lanes.sort(key=key)


def _device_sort(plane: str):
    m = re.match(r"/device:([A-Z_]+):(\d+)", plane)
    return (m.group(1), int(m.group(2))) if m else (plane, 0)


def _io_info(plane: PlaneData) -> dict[str, Any] | None:
    """The tb_iotrace.io JSON of a plane, read through the xplane reader API."""
    for st in plane.meta.stats:
        md = plane.meta.stat_metadata.get(st.metadata_id)
        if md is not None and md.name == IO_STAT:
            # A plane with just this stat: copying the whole metadata (~50,000 event
            # metadata for a million I/O events) cost time and ~3x its size in memory.
            space = XSpace()
            pl = space.planes.add(id=plane.meta.id, name=plane.meta.name)
            pl.stats.add().CopyFrom(st)
            pl.stat_metadata[st.metadata_id].CopyFrom(md)
            info = read_io_info(space)
            if info is not None:
                return info
    return None


def _io_table(planes: list[PlaneData], info: dict[str, Any] | None) -> IoTable | None:
    """The I/O table of the host planes' I/O lines (None when there are none), by the model's
    one decoder of the I/O events."""
    ev = io_events(planes, info, recorded_only=False)
    if ev is None:
        return None
    start, end = ev.file_ns()
    calls, tid = ev.calls, ev.tid
    del ev
    ops = calls.ops
    is_read = np.array([bool(READ_OPS_RE.search(o)) for o in ops] + [False])
    is_write = np.array([bool(WRITE_OPS_RE.search(o)) and not READ_OPS_RE.search(o) for o in ops] + [False])
    return IoTable(start=start, end=end, op=calls.op, path=calls.path, offset=calls.offset,
                   requested=calls.requested, returned=calls.returned, fd=calls.fd, errno=calls.errno,
                   tid=tid, ops=ops, paths=calls.paths, is_read=is_read, is_write=is_write)


__all__ = ["decode_xplane"]
