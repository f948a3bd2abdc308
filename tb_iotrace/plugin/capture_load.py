"""Decoding one capture file into the tab's :class:`~tb_iotrace.plugin.tab_model.TabCapture`: the
planes' lines become lanes (host threads, device lines, the I/O lines' calls as one table), the
``tb_iotrace.io`` record gives the per-file counters and the process's facts, the steps come from
:mod:`tb_iotrace.plugin.steps`. The file is read column-wise (:mod:`tb_iotrace.model.columnar`);
nothing here keeps a protobuf message per event."""
from __future__ import annotations

import os
import re
from typing import Any

import numpy as np

from tb_iotrace.base.memory import trim_memory
from tb_iotrace.model.columnar import PlaneData, SpaceData, decode_xspace
from tb_iotrace.model.stepwait import DEVICE_STEPS_LINE
from tb_iotrace.plugin.steps import capture_steps
from tb_iotrace.plugin.tab_model import ABSENT, READ_OPS_RE, STAT_DEFAULTS, TF_DATA_RE, WRITE_OPS_RE, IoTable, Lane, TabCapture, make_lane, tf_data_flags
from tb_iotrace.store.xplane import XSpace, read_io_info
from tb_iotrace.store.xplane.origin import missing_io_reason
from tb_iotrace.store.xplane.schema import EVENT_STATS, IO_STAT, LINE_PREFIX, STAT_ERRNO, STAT_FD, STAT_OFFSET, STAT_PATH, STAT_REQUESTED, STAT_RETURNED, thread_line_id

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


def load_capture(path: str, host: str) -> TabCapture:
    """Decode one capture file into a :class:`TabCapture` (raises XPlaneError)."""
    try:
        return _load_capture(path, host)
    finally:
        trim_memory()


def _load_capture(path: str, host: str) -> TabCapture:
    st = os.stat(path)
    space = decode_xspace(
        path,
        stats_for=lambda pname, meta, ln: pname.startswith("/host:") and ln.name.startswith(LINE_PREFIX),
        stat_names=EVENT_STATS, stat_defaults=STAT_DEFAULTS, lazy_event_metadata=True)
    names: list[str] = []
    lanes: list[Lane] = []
    io_parts = []
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
                io_parts.append((plane, ln))
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

    io = _io_table(io_parts, io_info) if io_parts else None
    del io_parts
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


def _fill_bytes(requested: np.ndarray, returned: np.ndarray, kind_req: np.ndarray | None,
                kind_ret: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """bytes_requested/returned with the absent ones (ABSENT) filled in, in place: from the
    event's kind where it has one (``kind_*`` per event, ABSENT where none), else returned
    0 and requested == returned (format /1 wrote both; absent means a foreign event)."""
    for col, kind in ((returned, kind_ret), (requested, kind_req)):
        absent = col == ABSENT
        if absent.any():
            if kind is not None:
                col[absent] = kind[absent]
                absent &= col == ABSENT
            col[absent] = 0 if col is returned else returned[absent]
    return requested, returned


def _factorize(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sorted distinct ids, code of each) like np.unique(return_inverse=True), in O(n) with
    a dense table when the ids are small non-negative integers (metadata ids are)."""
    if len(ids) == 0:
        return ids[:0], np.zeros(0, dtype=np.int64)
    lo, hi = int(ids.min()), int(ids.max())
    if lo < 0 or hi > 50_000_000:
        uniq, inv = np.unique(ids, return_inverse=True)
        return uniq, inv.reshape(-1)
    present = np.zeros(hi + 1, dtype=bool)
    present[ids] = True
    uniq = np.flatnonzero(present)
    code = np.cumsum(present, dtype=np.int64) - 1
    return uniq.astype(ids.dtype), code[ids]


def _kind(raw: Any, text: str, exact_ops: dict[str, str]) -> tuple[str, str, int, int, int]:
    """(call, path, fd, bytes_requested, bytes_returned) of the events of XEventMetadata
    ``text``: its ``event_kinds`` entry (format /2, read as schema.event_kinds does), else
    the name is the call (format /1)."""
    if raw is None:
        return exact_ops.get(text, text), "", -1, ABSENT, ABSENT
    return str(raw[0]), str(raw[1]), int(raw[2]), int(raw[3]), int(raw[4])


_TID_RE = re.compile(r"\(tid (-?\d+)\)\s*$")


def _io_table(parts, info) -> IoTable:
    """Build the I/O table from the decoded I/O lines, one column at a time, dropping each
    decoded plane column once copied (keeps the peak near one copy of the events)."""
    by_name = {li.get("name"): li for li in (info or {}).get("lines", [])}
    exact_ops = (info or {}).get("exact_ops", {}) or {}
    exact_paths = (info or {}).get("exact_paths", {}) or {}
    plane = parts[0][0]
    slices, tids, orders = [], [], []
    for pl, ln in parts:
        sl = slice(ln.first, ln.first + ln.count)
        li = by_name.get(ln.name)
        if li is not None and "tid" in li:
            tid = int(li["tid"])
        else:
            m = _TID_RE.search(ln.name)
            tid = int(m.group(1)) if m else -ln.id
        s = pl.start_ps[sl]
        order = np.argsort(s, kind="stable") if len(s) > 1 and bool(np.any(s[1:] < s[:-1])) else None
        slices.append((pl, sl))
        tids.append(tid)
        orders.append(order)
    # rows ordered by (tid, start)
    line_order = sorted(range(len(slices)), key=lambda k: tids[k])
    slices = [slices[k] for k in line_order]
    orders = [orders[k] for k in line_order]
    tids = [tids[k] for k in line_order]

    # The usual layout (tb_iotrace writes one line per thread, by tid, events in time
    # order) makes every column one contiguous run of its plane column: a view, no copy.
    contiguous = (all(o is None for o in orders) and all(pl is slices[0][0] for pl, _ in slices)
                  and all(a[1].stop == b[1].start for a, b in zip(slices, slices[1:])))

    def column(get) -> np.ndarray:
        if contiguous and slices:
            return get(slices[0][0])[slices[0][1].start:slices[-1][1].stop]
        parts_ = []
        for (pl, sl), order in zip(slices, orders):
            a = get(pl)[sl]
            parts_.append(a if order is None else a[order])
        return np.concatenate(parts_) if parts_ else np.zeros(0, np.int64)

    def stat(name) -> np.ndarray:
        col = column(lambda pl: pl.stats[name])
        for pl, _ in slices:
            pl.stats.pop(name, None)
        return col

    start_ps = column(lambda pl: pl.start_ps)
    start = start_ps // 1000
    end = (start_ps + column(lambda pl: pl.duration_ps)) // 1000
    del start_ps
    tid = np.concatenate([np.full(sl.stop - sl.start, t, dtype=np.int64) for (pl, sl), t in zip(slices, tids)])
    # call, path and fd per event: from its metadata's event kind (format /2: the record maps
    # the metadata name to (call, path, fd)), or the metadata name is the call and path/fd
    # are event stats (format /1)
    md_ids, md_code = _factorize(column(lambda pl: pl.metadata_id))
    # Looked up for the kinds present only, column by column (a million-event capture has
    # ~50,000 kinds: a loop of numpy item assignments took ~0.15 s of the cold load).
    raw_kinds = (info or {}).get("event_kinds") or {}
    table_ids, table_names = plane.metadata_names()
    at = np.minimum(np.searchsorted(table_ids, md_ids), max(len(table_ids) - 1, 0))
    found = (table_ids[at] == md_ids) if len(table_ids) else np.zeros(len(md_ids), dtype=bool)
    texts = [table_names[i] if hit else "?" for i, hit in zip(at.tolist(), found.tolist())]
    rows = [_kind(raw_kinds.get(t), t, exact_ops) for t in texts]
    op_index: dict[str, int] = {}
    path_index: dict[str, int] = {}
    md_op = np.array([op_index.setdefault(r[0], len(op_index)) for r in rows], dtype=np.int16)
    md_path = np.array([path_index.setdefault(r[1], len(path_index)) if r[1] else -1 for r in rows],
                       dtype=np.int32)
    md_fd = np.array([r[2] for r in rows], dtype=np.int32)
    md_req = np.array([r[3] for r in rows], dtype=np.int64)
    md_ret = np.array([r[4] for r in rows], dtype=np.int64)
    del rows, texts
    ref_ids, ref_code = _factorize(stat(STAT_PATH))
    ref_path = np.full(len(ref_ids), -1, dtype=np.int32)
    for j, k in enumerate(ref_ids.tolist()):
        md = plane.meta.stat_metadata.get(k) if k else None
        text = md.name if md is not None else ""
        text = exact_paths.get(text, text)
        ref_path[j] = path_index.setdefault(text, len(path_index)) if text else -1
    ops, paths = list(op_index), list(path_index)
    op_code = md_op[md_code]
    path_code = md_path[md_code]
    if (ref_path != -1).any():
        by_ref = ref_path[ref_code]
        path_code = np.where(by_ref != -1, by_ref, path_code)
    del ref_code
    fd = stat(STAT_FD).astype(np.int32)
    stat_fd = fd != -1
    fd = np.where(stat_fd, fd, md_fd[md_code]) if stat_fd.any() else md_fd[md_code]
    has_kind = (md_req != ABSENT).any()
    requested, returned = _fill_bytes(stat(STAT_REQUESTED), stat(STAT_RETURNED),
                                      md_req[md_code] if has_kind else None,
                                      md_ret[md_code] if has_kind else None)
    del md_code, stat_fd
    is_read = np.array([bool(READ_OPS_RE.search(o)) for o in ops] + [False])
    is_write = np.array([bool(WRITE_OPS_RE.search(o)) and not READ_OPS_RE.search(o) for o in ops] + [False])
    return IoTable(start=start, end=end, op=op_code, path=path_code,
                   offset=stat(STAT_OFFSET), requested=requested,
                   returned=returned,
                   fd=fd, errno=stat(STAT_ERRNO).astype(np.int32), tid=tid,
                   ops=ops, paths=paths, is_read=is_read, is_write=is_write)


__all__ = ["load_capture"]
