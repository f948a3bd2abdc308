"""Reading the I/O data back from an XSpace (protobuf objects): the ``tb_iotrace.io`` record
(:func:`read_io_info`) and the trace (:func:`read_io_data`), from format /1 and /2 records,
also after TensorFlow merged our plane into its host plane (lines and stats are found by
name). This reader takes an XSpace in memory (protobuf objects: what the capture, a Kineto
conversion or a caller holds); a file is read column-wise by :mod:`tb_iotrace.model.io_events`.
Both turn the events into calls by the one rule of :mod:`tb_iotrace.store.xplane.io_fields`
(the store cannot import the model, and a space in memory has no file bytes to decode)."""
from __future__ import annotations

import json
from typing import Any

import numpy as np

from tb_iotrace.store.xplane.iotrace import IoTrace, ThreadInfo
from tb_iotrace.store.xplane.read_xspace import HOST_PLANE, find_plane
from tb_iotrace.store.xplane.io_fields import STAT_DEFAULTS, resolve_io_columns
from tb_iotrace.store.xplane.schema import EVENT_STATS, IO_STAT, LINE_PREFIX, READ_FORMATS, thread_line_id


def find_io_record(space) -> tuple[Any, int, dict[str, Any]] | None:
    """(plane, index of the plane stat, parsed JSON) of the I/O data, or None."""
    for plane in space.planes:
        for i, stat in enumerate(plane.stats):
            md = plane.stat_metadata.get(stat.metadata_id)
            if md is not None and md.name == IO_STAT and stat.WhichOneof("value") == "bytes_value":
                try:
                    info = json.loads(stat.bytes_value.decode("utf-8"))
                except (UnicodeDecodeError, ValueError, RecursionError):  # not ours, or hostile
                    continue
                if isinstance(info, dict) and info.get("format") in READ_FORMATS:
                    return plane, i, info
    return None


def io_line_names(info: dict[str, Any]) -> set[str]:
    return {li["name"] for li in info.get("lines", [])}


def recorded_lines(lines, info: dict[str, Any]) -> list[tuple[int, int, Any]]:
    """(tid, first start in absolute ns, line) of each I/O line the ``tb_iotrace.io`` record
    lists, in its order, found by name among ``lines`` (any objects with ``.name``: XLines,
    or the plugin decoder's lines); a listed line that is not there is left out."""
    by_name = {}
    for ln in lines:
        if ln.name.startswith(LINE_PREFIX):
            by_name.setdefault(ln.name, ln)
    out = []
    for li in info["lines"]:
        ln = by_name.get(li["name"])
        if ln is not None:
            out.append((int(li["tid"]), int(li["t0_ns"]), ln))
    return out


def read_io_data(space) -> IoTrace | None:
    """The I/O trace stored by :func:`merge_into_capture` / :func:`add_io_to_space`, with
    ``threads``, ``dropped`` and ``counters``; None if the space has none.

    Rows come back ordered by line (tid) then start time; times are absolute epoch ns.
    Events past the ``max_events`` cap are gone (``dropped`` counts them). Lines and stats
    are found by name, so this also reads files where TensorFlow merged our plane into its
    host plane (renumbered metadata, timestamps normalized to the profile start)."""
    found = find_io_record(space)
    if found is None:
        return None
    plane, _, info = found
    exact_ops = dict(info.get("exact_ops", {}))
    exact_paths = dict(info.get("exact_paths", {}))
    col_of = {}  # stat metadata id -> column index in EVENT_STATS
    for k, md in plane.stat_metadata.items():
        if md.name in EVENT_STATS:
            col_of[k] = EVENT_STATS.index(md.name)
    parts = []
    for tid, t0_ns, ln in recorded_lines(plane.lines, info):
        m = len(ln.events)
        mid = np.empty(m, dtype=np.int64)
        off_ps = np.empty(m, dtype=np.int64)
        dur_ps = np.empty(m, dtype=np.int64)
        # columns in EVENT_STATS order, each stat's "absent" value where an event leaves it out
        vals = np.array(STAT_DEFAULTS, dtype=np.int64)[:, None].repeat(m, axis=1)
        for i, ev in enumerate(ln.events):
            mid[i] = ev.metadata_id
            off_ps[i] = ev.offset_ps
            dur_ps[i] = ev.duration_ps
            for st in ev.stats:
                col = col_of.get(st.metadata_id)
                if col is not None:
                    vals[col, i] = st.ref_value if col == 0 else st.int64_value
        rel = off_ps // 1000
        start = rel - (rel.min() if m else 0) + t0_ns
        parts.append((tid, mid, start, start + dur_ps // 1000, vals))

    if parts:
        vals = np.concatenate([p[4] for p in parts], axis=1)
        mids = np.concatenate([p[1] for p in parts])
        table = plane.event_metadata
        present = [k for k in np.unique(mids).tolist() if k in table]
        # what the stats left out, the one rule of io_fields (the columnar reader's too)
        cols = resolve_io_columns(mids, lambda name: vals[EVENT_STATS.index(name)].copy(),
                                  np.array(present, dtype=np.int64), [table[k].name for k in present],
                                  plane.stat_metadata, info)
        trace = IoTrace(
            op=cols.op_text(), path=cols.path_text(), offset=cols.offset, requested=cols.requested,
            returned=cols.returned, fd=cols.fd, errno=cols.errno,
            start_ns=np.concatenate([p[2] for p in parts]),
            end_ns=np.concatenate([p[3] for p in parts]),
            tid=np.concatenate([np.full(len(p[1]), p[0], dtype=np.int64) for p in parts]))
    else:
        trace = IoTrace.empty()
    trace.threads = {int(t): ThreadInfo(int(p), str(c)) for t, p, c in info.get("threads", [])}
    trace.dropped = int(info.get("dropped", 0))
    trace.counters = list(info.get("counters", []))
    trace.mounts = str(info.get("mounts", ""))
    trace.machine = dict(info["machine"]) if isinstance(info.get("machine"), dict) else None
    trace.untracked = dict(info["untracked"]) if isinstance(info.get("untracked"), dict) else None
    trace.checkpoint_calls = checkpoint_calls(info)
    trace.objects = info.get("objects") if isinstance(info.get("objects"), dict) else None
    return trace


def checkpoint_calls(info: dict[str, Any]) -> list[dict[str, Any]]:
    """The checkpoint library calls an I/O record carries (``checkpoint_calls``), [] if none."""
    got = info.get("checkpoint_calls")
    return [dict(c) for c in got if isinstance(c, dict)] if isinstance(got, list) else []


def read_io_info(space) -> dict[str, Any] | None:
    """The ``tb_iotrace.io`` JSON record (lines, threads, counters, dropped...) without the
    events, or None. Lines written without a host plane at hand (TensorFlow's pluggable
    profiler path) get ``host_line_id``/``host_line_name`` filled in here when the host
    plane has a line for their thread (see :func:`thread_line_id`)."""
    found = find_io_record(space)
    if found is None:
        return None
    plane, _, info = found
    host = find_plane(space, HOST_PLANE)
    if host is not None:
        ids = None
        for li in info.get("lines", []):
            if li.get("host_line_id") is None and li.get("pthread_id"):
                if ids is None:
                    ids = {ln.id: ln for ln in host.lines if not ln.name.startswith(LINE_PREFIX)}
                match = ids.get(thread_line_id(li["pthread_id"]))
                if match is not None:
                    li["host_line_id"] = match.id
                    li["host_line_name"] = match.display_name or match.name
    return info
