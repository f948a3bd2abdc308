"""Encode a per-operation I/O trace into an XSpace so xprof's trace viewers draw it.

The design (where the I/O lines go, their names, stats and record, each measured against xprof's
viewers) is in docs/internals.md, "Where the I/O lines go in an XSpace, and why".
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from tb_iotrace.store.xplane import wire
from tb_iotrace.store.xplane._proto import XLine, XPlane
from tb_iotrace.store.xplane.event_rows import EventBlock, EventColumns, KindValues, join_chunks
from tb_iotrace.store.xplane.iotrace import IoTrace, Labels
from tb_iotrace.store.xplane.read_io import find_io_record, io_line_names
from tb_iotrace.store.xplane.read_xspace import HOST_PLANE, find_plane, profile_start_ns
from tb_iotrace.store.xplane.schema import DEFAULT_MAX_EVENTS, EVENT_STATS, FORMAT, IO_STAT, LINE_PREFIX, STAT_FD, STAT_PATH, STAT_REQUESTED, STAT_RETURNED, kind_name, thread_line_id

def _safe_text(s: str) -> tuple[str, bool]:
    """(text protobuf can store as a string field, whether it is exactly ``s``)."""
    try:
        s.encode("utf-8")
        return s, True
    except UnicodeEncodeError:
        return s.encode("utf-8", "backslashreplace").decode("utf-8"), False


def _factorize(values: np.ndarray) -> tuple[list, np.ndarray]:
    """(distinct values in first-seen order, code per row).

    Rows are grouped by object identity first (a numpy sort of ints: traces
    built from a lookup table share one str object per distinct value), then
    the few distinct objects are merged by value."""
    objs = values.tolist()
    if not objs:
        return [], np.zeros(0, dtype=np.int64)
    ids = np.fromiter(map(id, objs), dtype=np.int64, count=len(objs))
    _, first, inv = np.unique(ids, return_index=True, return_inverse=True)
    table: dict = {}
    remap = np.empty(len(first), dtype=np.int64)
    for j in np.argsort(first, kind="stable").tolist():
        remap[j] = table.setdefault(objs[int(first[j])], len(table))
    return list(table), remap[inv.reshape(-1)]


def _factorize_labels(labels: Labels) -> tuple[list, np.ndarray]:
    """(distinct names used, code per row) of a Labels column: unused names dropped, equal
    names merged (two file records may share a path), no per-row Python object."""
    if not len(labels):
        return [], np.zeros(0, dtype=np.int64)
    used = np.flatnonzero(np.bincount(labels.codes, minlength=len(labels.names)))
    table: dict = {}
    remap = np.zeros(len(labels.names), dtype=np.int64)
    for j in used.tolist():
        remap[j] = table.setdefault(labels.names[j], len(table))
    return list(table), remap[labels.codes]


def _factorize_column(trace: IoTrace, name: str) -> tuple[list, np.ndarray]:
    labels = trace.labels(name)
    return _factorize_labels(labels) if labels is not None else _factorize(getattr(trace, name))


def _small_int_codes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(values, return_inverse=True) for int values; O(n) through a dense table
    when they are small non-negative numbers (OS thread ids are below 2**22)."""
    if len(values) and 0 <= int(values.min()) and int(values.max()) < (1 << 23):
        present = np.zeros(int(values.max()) + 1, dtype=bool)
        present[values] = True
        uniq = np.flatnonzero(present)
        lut = np.cumsum(present, dtype=np.int64) - 1
        return uniq.astype(values.dtype), lut[values]
    uniq, inv = np.unique(values, return_inverse=True)
    return uniq, inv.reshape(-1)


def _kind_codes(op: np.ndarray, path: np.ndarray, fd: np.ndarray,
                npaths: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(sorted distinct keys ``(op * npaths + path) << 32 | uint32(fd)``, code per row, first
    row of each key), in
    O(n) when equal kinds come in runs (an I/O trace: one thread reading one file): keys
    are only built at the starts of runs."""
    n = len(op)
    if not n:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    change = op[1:] != op[:-1]
    change |= path[1:] != path[:-1]
    change |= fd[1:] != fd[:-1]
    starts = np.concatenate(([0], np.flatnonzero(change) + 1))
    del change
    key = ((op[starts].astype(np.int64) * npaths + path[starts]) << 32) | (fd[starts].astype(np.int64) & 0xFFFFFFFF)
    uniq, first_run, inv = np.unique(key, return_index=True, return_inverse=True)
    return uniq, np.repeat(inv.reshape(-1), np.diff(np.append(starts, n))), starts[first_run]


def _is_sorted_by(line_of: np.ndarray, start_ns: np.ndarray) -> bool:
    """Rows already ordered by (line, start time)? (A capture's are: thread by thread, each
    in call order, threads in tid order or not.)"""
    if len(line_of) < 2:
        return True
    dl = np.diff(line_of)
    return bool((dl >= 0).all() and ((dl > 0) | (np.diff(start_ns) >= 0)).all())


@dataclass
class Encoded:
    """An I/O trace turned into host-plane additions (nothing applied yet)."""

    lines_chunks: list  # serialized XPlane.lines entries (field 3) in pieces (bytes, EventBlock)
    # new XEventMetadata id -> (name, display_name, path, fd, bytes_requested, bytes_returned)
    event_metadata: dict[int, tuple[str, str, str, int, int, int]]
    stat_metadata: dict[int, str]  # new XStatMetadata id -> name
    info: dict[str, Any]  # the JSON record (see _info_json)
    num_events: int

    @property
    def lines_blob(self) -> bytes:
        """The XPlane.lines entries as one byte string, ready to append to a plane."""
        return bytes(join_chunks(self.lines_chunks))


def encode_trace(trace: IoTrace, host: XPlane | None, start_ns: int, max_events: int) -> Encoded:
    n_all = len(trace)
    if max_events < 0:
        raise ValueError("max_events must be >= 0")
    # Bounded size: keep the first max_events operations by start time.
    if n_all > max_events:
        keep = np.sort(np.argsort(trace.start_ns, kind="stable")[:max_events])
        trace_kept = trace.take(keep)
        capped = n_all - max_events
    else:
        trace_kept, capped = trace, 0
    n = len(trace_kept)

    existing_lines = list(host.lines) if host is not None else []
    md_base = max(list(host.event_metadata.keys()) + [0]) + 1 if host is not None else 1
    sd_next = max(list(host.stat_metadata.keys()) + [0]) + 1 if host is not None else 1
    stat_by_name: dict[str, int] = {}
    if host is not None:
        for k, md in host.stat_metadata.items():
            stat_by_name.setdefault(md.name, k)
    new_stats: dict[int, str] = {}

    def stat_id(name: str) -> int:
        nonlocal sd_next
        if name not in stat_by_name:
            stat_by_name[name] = sd_next
            new_stats[sd_next] = name
            sd_next += 1
        return stat_by_name[name]

    sids = {name: stat_id(name) for name in EVENT_STATS + (IO_STAT,)}

    # Lines: one per tid, ordered by tid, with small display ids no host line shows.
    taken: set[int] = set()
    for ln in existing_lines:
        for v in (ln.id, ln.display_id):
            taken.update((v, v & 0xFFFFFFFF, ((v & 0xFFFFFFFF) ^ 0x80000000) - 0x80000000))
    host_by_id = {ln.id: ln for ln in existing_lines}
    tids, line_of = _small_int_codes(trace_kept.tid)
    lines_info = []
    next_id = 1
    for tid in tids.tolist():
        while next_id in taken:
            next_id += 1
        info = trace.threads.get(tid)
        host_line = None
        if info is not None and info.pthread_id:
            host_line = host_by_id.get(thread_line_id(info.pthread_id))
        if host_line is not None:
            label = host_line.display_name or host_line.name
        else:
            label = (info.comm if info is not None and info.comm else "thread")
        lines_info.append({
            "line_id": next_id, "display_id": next_id, "tid": tid,
            "pthread_id": info.pthread_id if info is not None else None,
            "comm": info.comm if info is not None else None,
            "name": _safe_text(f"{LINE_PREFIX}{label} (tid {tid})")[0],
            "host_line_id": host_line.id if host_line is not None else None,
            "host_line_name": (host_line.name if host_line is not None else None),
        })
        next_id += 1

    ops, op_code = _factorize_column(trace_kept, "op")
    paths, path_code = _factorize_column(trace_kept, "path")

    # Order: by line, then start time (a capture's rows usually are already).
    start = trace_kept.start_ns
    if _is_sorted_by(line_of, start):
        def col(a: np.ndarray) -> np.ndarray:
            return a
        line_sorted = line_of
    else:
        order = np.lexsort((start, line_of))

        def col(a: np.ndarray) -> np.ndarray:
            return a[order]
        line_sorted = line_of[order]
    # Event metadata: one per event kind, i.e. distinct (call, path, fd); see _kind_name.
    fd_col = col(trace_kept.fd)
    kind_keys, kind_code, kind_first = _kind_codes(col(op_code), col(path_code), fd_col, max(len(paths), 1))
    # each kind's byte counts: those of its first event; its events write them where they differ
    requested, returned = col(trace_kept.requested), col(trace_kept.returned)
    kind_values = KindValues(md_base, requested[kind_first], returned[kind_first])
    event_md: dict[int, tuple[str, str]] = {}
    kinds: dict[str, list] = {}
    for j, k in enumerate(kind_keys.tolist()):
        combo, fd_u = k >> 32, k & 0xFFFFFFFF
        op, path = ops[combo // max(len(paths), 1)], paths[combo % max(len(paths), 1)]
        fd = fd_u - (1 << 32) if fd_u >> 31 else fd_u
        name = base = _safe_text(kind_name(op, path, fd))[0]
        dup = 1
        while name in kinds:   # a path that itself ends like " (fd N)"
            dup += 1
            name = f"{base} #{dup}"
        req, ret = int(kind_values.requested[j]), int(kind_values.returned[j])
        kinds[name] = [op, path, fd, req, ret]
        event_md[md_base + j] = (name, _safe_text(op)[0], _safe_text(path)[0], fd, req, ret)
    start_sorted = col(start)
    counts = np.bincount(line_sorted, minlength=len(tids))
    first = np.cumsum(counts) - counts
    line_ts = start_sorted[first] - np.int64(start_ns) if n else np.zeros(0, dtype=np.int64)
    # in place where possible: a million-event window makes each temporary 8 MB of fresh memory
    offset_ps = np.repeat(line_ts + np.int64(start_ns), counts)
    np.subtract(start_sorted, offset_ps, out=offset_ps)
    offset_ps *= np.int64(1000)
    dur_ps = col(trace_kept.end_ns) - start_sorted
    np.maximum(dur_ps, 0, out=dur_ps)
    dur_ps *= np.int64(1000)
    kind_code += md_base

    errno = col(trace_kept.errno)
    events = EventColumns(   # path and fd are in the event's metadata (kind), not in its stats
        metadata_id=kind_code, offset_ps=offset_ps, duration_ps=dur_ps, path_ref=None,
        offset=col(trace_kept.offset), requested=requested, returned=returned, fd=None,
        errno=errno if errno.any() else None)
    stat_ids = tuple(sids[name] for name in EVENT_STATS)
    chunks: list = []
    for i, li in enumerate(lines_info):
        a = int(first[i])
        b = a + int(counts[i])
        header = XLine(id=li["line_id"], display_id=li["display_id"], name=li["name"],
                       display_name=li["name"], timestamp_ns=int(line_ts[i])).SerializeToString()
        body = EventBlock(events.slice(a, b), stat_ids, kind_values)
        li["num_events"] = int(counts[i])
        li["t0_ns"] = int(line_ts[i]) + int(start_ns)
        # XPlane.lines entry: tag, length, the line's own fields, its events
        chunks += [wire.tag(3, wire.WT_LEN) + wire.varint_bytes(len(header) + len(body)), header, body]

    info = _info_json(trace, start_ns, capped, max_events, n, lines_info,
                      {k: v[0] for k, v in event_md.items()}, new_stats, sids, kinds)
    return Encoded(chunks, event_md, new_stats, info, n)


def _info_json(trace, start_ns, capped, max_events, n, lines_info, event_md, new_stats, sids,
               kinds) -> dict[str, Any]:
    """The ``tb_iotrace.io`` plane stat (JSON). Keys:

    format            "tb_iotrace.io/2"
    profile_start_ns  epoch ns that event times are relative to
    num_events        events written
    dropped           operations not in the file: trace.dropped + capped
    capped            of which dropped by the max_events cap
    max_events        the cap used
    lines             [{line_id, display_id, tid, pthread_id, comm, name, host_line_id,
                        host_line_name, num_events, t0_ns}] for the I/O lines added; t0_ns is
                      the absolute start of the line's first event, which keeps the times
                      right whatever clock the file is later shifted to
                      (TensorFlow normalizes to the profile start)
    threads           [[tid, pthread_id, comm], ...]: the trace's whole thread table
    stat_ids          {stat name: XStatMetadata id} used by the events when written
    added_event_metadata, added_stat_metadata   {id: name} this merge created (removed on
                      re-merge while the ids still hold those names)
    event_kinds       {XEventMetadata name: [call, path, fd, bytes_requested,
                      bytes_returned]} of every event kind written (call and path exactly,
                      also when not valid UTF-8: the stored name then has backslash
                      escapes); the byte counts are what its events leave out
    exact_ops, exact_paths   (format /1 only) {stored text: original str} for names that are
                      not valid UTF-8

    Readers go by names (stat names, line names), not by the ids above: TensorFlow's
    pluggable-profiler path merges our plane into /host:CPU and renumbers metadata.
    counters          the trace's Darshan per-file records, as given
    mounts            the traced process's /proc/self/mountinfo text at capture time
    machine           (when recorded) the machine that made the capture: {format
                      "tb_iotrace.machine/1", cpus (usable cores), cpus_online, cpu_quota,
                      mounts: [[mount_point, fs_type, source], ...]} (tb_iotrace.store.machine)
    checkpoint_calls  (only when some were noted) the checkpoint library calls of the window:
                      [{kind, path, root, call, start_ns, end_ns, tid}] (tb_iotrace.base.ckptcalls)
    objects           (only when some were made) the object-storage requests of the window as
                      columns (tb_iotrace.store.objcolumns)
    untracked         (only when something was) what the capture counted but could not
                      track: {files, calls, bytes_read, bytes_written, reentrant_calls,
                      examples}: files past the file-table bound, signal-handler calls
    """
    return {
        "format": FORMAT,
        "profile_start_ns": int(start_ns),
        "num_events": int(n),
        "dropped": int(trace.dropped) + int(capped),
        "capped": int(capped),
        "max_events": int(max_events),
        "lines": lines_info,
        "threads": [[int(t), int(i.pthread_id), i.comm] for t, i in sorted(trace.threads.items())],
        "stat_ids": {k: int(v) for k, v in sids.items()},
        "added_event_metadata": {str(k): v for k, v in sorted(event_md.items())},
        "added_stat_metadata": {str(k): v for k, v in sorted(new_stats.items())},
        "event_kinds": kinds,
        "mounts": str(getattr(trace, "mounts", "") or ""),
        "counters": trace.counters,
        **({"untracked": dict(trace.untracked)} if getattr(trace, "untracked", None) else {}),
        **({"machine": dict(trace.machine)} if isinstance(getattr(trace, "machine", None), dict) else {}),
        **({"checkpoint_calls": list(trace.checkpoint_calls)} if getattr(trace, "checkpoint_calls", None) else {}),
        **({"objects": dict(trace.objects)} if getattr(trace, "objects", None) else {}),
    }


def apply_metadata(plane: XPlane, enc: Encoded) -> None:
    sid = enc.info["stat_ids"]
    for k, (name, display, path, fd, req, ret) in enc.event_metadata.items():
        md = plane.event_metadata[k]
        md.id = k
        md.name = name
        md.display_name = display
        # the kind's path, fd and byte counts as metadata stats: both trace viewers list
        # them with the event's own stats (which win) when an event is selected
        if path:
            st = md.stats.add()
            st.metadata_id = sid[STAT_PATH]
            st.str_value = path
        if fd != -1:
            st = md.stats.add()
            st.metadata_id = sid[STAT_FD]
            st.int64_value = fd
        for stat, value in ((STAT_REQUESTED, req), (STAT_RETURNED, ret)):
            st = md.stats.add()
            st.metadata_id = sid[stat]
            st.int64_value = value
    for k, name in enc.stat_metadata.items():
        md = plane.stat_metadata[k]
        md.id = k
        md.name = name
    stat = plane.stats.add()
    stat.metadata_id = enc.info["stat_ids"][IO_STAT]
    stat.bytes_value = json.dumps(enc.info, ensure_ascii=True, separators=(",", ":")).encode("ascii")


def remove_io_data(space) -> bool:
    """Take out what :func:`add_io_to_space` / :func:`merge_into_capture` added (I/O lines,
    the plane stat, and the metadata created for them while their ids still hold the names
    recorded: a TensorFlow merge renumbers them, and then orphans are left, which is
    harmless). Returns whether there was any."""
    found = find_io_record(space)
    if found is None:
        return False
    plane, stat_index, info = found
    names = io_line_names(info)
    keep = [ln for ln in plane.lines if not (ln.name in names and ln.name.startswith(LINE_PREFIX))]
    if len(keep) != len(plane.lines):
        kept = [ln.SerializeToString() for ln in keep]
        del plane.lines[:]
        for raw in kept:
            plane.lines.add().ParseFromString(raw)
    del plane.stats[stat_index]
    for table, key in ((plane.event_metadata, "added_event_metadata"),
                       (plane.stat_metadata, "added_stat_metadata")):
        added = info.get(key, {})
        if not isinstance(added, dict):
            continue
        ids = {int(k): v for k, v in added.items()}
        if all(k in table and table[k].name == v for k, v in ids.items()):
            for k in ids:
                del table[k]
    return True


def host_plane(space) -> tuple[Any, bool]:
    """The ``/host:CPU`` plane (created, appended, when missing) and whether it was created."""
    plane = find_plane(space, HOST_PLANE)
    if plane is not None:
        return plane, False
    used = {p.id for p in space.planes}
    plane = space.planes.add()
    plane.id = next(i for i in range(len(used) + 1) if i not in used)
    plane.name = HOST_PLANE
    return plane, True


def start_clock(space, start_ns: int | None, where: str) -> int:
    if start_ns is not None:
        return int(start_ns)
    value = profile_start_ns(space)
    if value is None:
        raise ValueError(
            f"{where}: no 'Task Environment' plane with profile_start_time; pass start_ns= "
            "(the epoch ns the capture's timestamps are relative to)")
    return value


def add_io_to_space(space, trace: IoTrace, *, start_ns: int | None = None,
                    max_events: int = DEFAULT_MAX_EVENTS, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Add ``trace`` to ``space`` (in memory) as I/O lines of its ``/host:CPU`` plane,
    replacing I/O data added before. Returns the JSON record written (see :func:`_info_json`);
    ``extra`` adds keys of the caller's to it (a key of the record's own is refused).

    ``space`` may be our XSpace or TensorFlow's (only the protobuf API is used)."""
    start = start_clock(space, start_ns, "XSpace")
    remove_io_data(space)
    host, _ = host_plane(space)
    enc = encode_trace(trace, host, start, max_events)
    if extra:
        clash = sorted(set(extra) & set(enc.info))
        if clash:
            raise ValueError(f"extra keys {clash} are the I/O record's own")
        enc.info.update(extra)
    apply_metadata(host, enc)
    host.MergeFromString(enc.lines_blob)
    return enc.info


def io_space_bytes(trace: IoTrace, plane_name: str, *, start_ns: int = 0,
                   max_events: int = DEFAULT_MAX_EVENTS) -> bytearray:
    """A serialized XSpace holding one plane ``plane_name`` with the I/O lines and the
    ``tb_iotrace.io`` record, built without parsing the encoded lines back (what the
    TensorFlow pluggable profiler hands over; TF merges the plane into its host plane)."""
    enc = encode_trace(trace, None, int(start_ns), max_events)
    plane = XPlane()
    plane.id = 0
    plane.name = plane_name
    apply_metadata(plane, enc)
    head = plane.SerializeToString()   # repeated field 3 (lines) may come last
    size = len(head) + sum(len(c) for c in enc.lines_chunks)
    # one XSpace.planes entry, joined in one copy
    return join_chunks([wire.tag(1, wire.WT_LEN) + wire.varint_bytes(size), head, *enc.lines_chunks])
