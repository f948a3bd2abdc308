"""Columnar decoding of ``<host>.xplane.pb`` for the plugin and the analysis: numpy arrays straight from the
protobuf wire bytes, no Python object per event.

Why not ``tb_iotrace.store.xplane.load_xspace`` + ``read_io_data``: parsing a 64 MB capture (the
shared GPU capture plus 1,000,000 I/O events) into protobuf objects takes about 400 MB of
memory (upb arenas, ~6x the file) and ``read_io_data`` then walks the events in Python
(about 4 s). The plugin must stay under 5x the file size and paint in about a second, so
it decodes the file itself:

1. The file is read into memory whole (not memory-mapped: see :func:`read_whole`).
2. Planes and lines are walked in Python (a few thousand fields). Every field of a plane
   except its lines (metadata maps, plane stats) is handed to protobuf, as the byte spans
   between the lines, as one small ``XPlane`` (``meta``): names, stat names and the
   ``tb_iotrace.io`` JSON come from there.
3. Inside each line, a tight loop records where each event's bytes start and end
   (~0.3 us per event).
4. The events' fields are then decoded *lock-step*, vectorized over all events at once:
   step k decodes field k of every event that still has fields left (numpy gathers for
   tags and varints). Event stats are only decoded for the lines that ask for them (the
   I/O lines), into int64 columns keyed by stat *name* (stat metadata ids are renumbered
   when TensorFlow merges planes, names are not).

The result keeps, per event, ``metadata_id``, ``start_ps`` (``timestamp_ns*1000 +
offset_ps``), ``duration_ps`` and the byte range of the event in the file, so the stats of
one event can be read later (``event_stats``) without keeping anything else in memory.

Modules: :mod:`tb_iotrace.model.columnar.planes` (what a decode returns), :mod:`.walk` (wire walking, lock-step field
decoding), :mod:`.tokens` (the token decoder of a line's events), :mod:`.native_scan`
(native/codec/xdecode.c, used where ``tb_iotrace._codec`` is built); this module puts a plane
together from them (:func:`decode_xspace`, :func:`event_stats`).

Malformed input (truncated, garbage, lengths running past their parent) raises
:class:`tb_iotrace.store.xplane.XPlaneError` with the reason.
"""
from __future__ import annotations

import os
from array import array
from typing import Any, Callable, Sequence

import numpy as np

from tb_iotrace.store.codecs import codec
from tb_iotrace.store.xplane import XEvent, XPlane
from tb_iotrace.store.xplane.lenient import parse_lenient
from tb_iotrace.store.xplane.read_xspace import XPlaneError, open_capture, stats_dict
from tb_iotrace.model.columnar.native_scan import NativeScan, decode_plane_native
from tb_iotrace.model.columnar.planes import LineInfo, MetadataFile, PlaneData, SpaceData, read_event_metadata
from tb_iotrace.model.columnar.tokens import EventRun, token_run
from tb_iotrace.model.columnar.walk import CHUNK, check_events, decode_events, field_spans, fields, walk_events, walk_line

# Lines at least this big are decoded on THREADS worker threads by the NumPy path. One by
# default: two lines' pieces and temporaries at once put its peak at 5.6x the file for the
# bench capture (4.6x on one thread, over the 5x budget), for ~0.15 s of wall time; the
# native scanner needs no threads.
PARALLEL_LINE_BYTES = 1 << 20
THREADS = 1


# False: the NumPy path even where the native module is built (tests compare the two;
# TBIO_PLUGIN_NATIVE=0 in the environment does it for a whole process, e.g. a benchmark's
# TensorBoard).
USE_NATIVE = os.environ.get("TBIO_PLUGIN_NATIVE", "1") != "0"


def _native_lib() -> tuple[Any, Any] | None:
    """(ffi, lib) of the codecs (tb_iotrace._codec) where they are built (and USE_NATIVE),
    else None."""
    return codec() if USE_NATIVE else None


# --------------------------------------------------------------------------- planes


def _plane_parts(data, start: int, end: int, native,
                 skip_event_metadata: bool = False) -> tuple[XPlane, list[tuple[int, int]], np.ndarray | None]:
    """The plane's metadata (every field but the lines, handed to protobuf as the byte spans
    between line fields, joined; with ``skip_event_metadata`` (native path only) the
    event_metadata map entries are left out too) and the byte range of each line's payload."""
    meta_spans: list[list[int]] = []
    line_ranges: list[tuple[int, int]] = []
    fields = None
    if native is not None:
        fields = native.fields(start, end)
        num, wt, at, a, b = fields
        is_line = (num == 3) & (wt == 2)
        line_ranges = list(zip(a[is_line].tolist(), b[is_line].tolist()))
        if skip_event_metadata:
            is_line = is_line | ((num == 4) & (wt == 2))
        # Maximal runs of non-line fields (fields tile the message: each starts where the
        # previous one ends).
        other = ~is_line
        prev_line = np.ones(len(num), dtype=bool)
        prev_line[1:] = is_line[:-1]
        next_line = np.ones(len(num), dtype=bool)
        next_line[:-1] = is_line[1:]
        meta_spans = [list(x) for x in zip(at[other & prev_line].tolist(), b[other & next_line].tolist())]
    else:
        for number, w, t, x, y in field_spans(data, start, end):
            if number == 3 and w == 2:
                line_ranges.append((x, y))
            elif meta_spans and meta_spans[-1][1] == t:
                meta_spans[-1][1] = y
            else:
                meta_spans.append([t, y])
    meta = XPlane()
    with memoryview(data) as view:  # one copy of the spans, not two
        raw = b"".join(view[x:y] for x, y in meta_spans)
    try:
        parse_lenient(meta, raw)
    except Exception as exc:  # DecodeError and runtime variants
        raise ValueError(f"plane metadata: {type(exc).__name__}: {exc}") from None
    return meta, line_ranges, fields


def _stat_columns(meta: XPlane, stat_names: Sequence[str]) -> tuple[np.ndarray, np.ndarray] | None:
    """(sorted stat metadata ids, column of each) for the stats named ``stat_names``
    (by name: TensorFlow renumbers ids when it merges planes)."""
    if not stat_names:
        return None
    keys, cols = [], []
    wanted = list(stat_names)
    sm = meta.stat_metadata
    for k in sm:  # not .items(): its Python-level iterator costs as much again
        name = sm[k].name
        if name in wanted:
            keys.append(k)
            cols.append(wanted.index(name))
    if not keys:
        return np.array([-(1 << 61)], np.int64), np.array([-1], np.int64)
    order = np.argsort(np.array(keys, dtype=np.int64))
    return np.array(keys, dtype=np.int64)[order], np.array(cols, dtype=np.int64)[order]


def _decode_plane(data, buf, index: int, start: int, end: int,
                  stats_for: Callable[[str, XPlane, LineInfo], bool],
                  stat_names: Sequence[str], stat_defaults: Sequence[int], native=None,
                  lazy_md: str = "") -> PlaneData:
    meta, line_ranges, fields = _plane_parts(data, start, end, native, bool(lazy_md and native is not None))
    memo: list[tuple[np.ndarray, np.ndarray] | None] = []

    def stat_cols() -> tuple[np.ndarray, np.ndarray] | None:
        # Read on the first line that wants stats: most planes have none, and walking the
        # stat metadata map (~1,400 entries in a GPU capture's planes) costs ~0.5 ms a plane.
        if not memo:
            memo.append(_stat_columns(meta, stat_names))
        return memo[0]

    if native is not None:
        plane = decode_plane_native(native, data, index, meta, line_ranges, stats_for, stat_cols,
                                     stat_names, stat_defaults)
        plane.md_table, spans = native.event_metadata(data, fields)
        if lazy_md:
            plane.md_file = (lazy_md, *spans)
        return plane

    def decode_line(li: int, a: int, b: int) -> tuple[dict[str, Any], list[EventRun]]:
        line_runs: list[EventRun] = []
        probe = LineInfo(index=li, id=0, display_id=0, name="", display_name="", timestamp_ns=0,
                         first=0, count=0)
        want: list[bool | None] = [None]

        def on_events(head, pos, lend):
            if want[0] is None:
                probe.name, probe.display_name = head["name"], head["display_name"]
                want[0] = bool(stat_names) and bool(stats_for(meta.name, meta, probe))
            sc = stat_cols() if want[0] else None
            got = token_run(buf, pos, lend, sc, stat_defaults if want[0] else ())
            if got is not None:
                stop, rs = got
            else:
                ev_start, ev_end = array("q"), array("q")
                stop = walk_events(data, pos, lend, ev_start, ev_end)
                s = np.frombuffer(ev_start, dtype=np.int64).copy()
                e = np.frombuffer(ev_end, dtype=np.int64).copy()
                cols = [np.full(len(s), d, dtype=np.int64) for d in stat_defaults] if want[0] else []
                rs = []
                for c0 in range(0, len(s), CHUNK):
                    c1 = min(c0 + CHUNK, len(s))
                    m, o, d = decode_events(buf, s[c0:c1], e[c0:c1], sc, [c[c0:c1] for c in cols])
                    rs.append(EventRun(s[c0:c1], (e - s)[c0:c1], m, o, d, [c[c0:c1] for c in cols]))
            for r in rs:   # as strict as the native scan (it reads every field)
                if not r.well_formed:
                    check_events(buf, r.pos, r.pos + r.len)
            line_runs.extend(rs)
            return stop

        head = walk_line(data, buf, a, b, on_events)
        return head, line_runs

    # Big lines are decoded on worker threads (numpy releases the GIL in its loops).
    big = [i for i, (a, b) in enumerate(line_ranges) if b - a >= PARALLEL_LINE_BYTES]
    results: dict[int, tuple[dict[str, Any], list[EventRun]]] = {}
    if len(big) > 1 and THREADS > 1:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=min(THREADS, len(big))) as pool:
            futures = {i: pool.submit(decode_line, i, *line_ranges[i]) for i in big}
            for i, (a, b) in enumerate(line_ranges):
                if i not in futures:
                    results[i] = decode_line(i, a, b)
            for i, f in futures.items():
                results[i] = f.result()
    else:
        for i, (a, b) in enumerate(line_ranges):
            results[i] = decode_line(i, a, b)

    lines: list[LineInfo] = []
    runs: list[EventRun] = []
    total = 0
    for li in range(len(line_ranges)):
        head, line_runs = results.pop(li)
        count = sum(len(r.mid) for r in line_runs)
        lines.append(LineInfo(index=li, first=total, count=count, **head))
        runs.extend(line_runs)
        total += count

    def cat(attr: str, dtype, col: int | None = None) -> np.ndarray:
        # Concatenate one column of all runs, dropping each run's piece as it goes so the
        # peak stays near one copy of the column.
        parts = []
        for r in runs:
            if col is None:
                parts.append(getattr(r, attr))
                setattr(r, attr, None)
            elif r.cols:
                parts.append(r.cols[col])
                r.cols[col] = None
            else:
                parts.append(np.full(len(r.pos), stat_defaults[col], dtype=np.int64))
        return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype)

    stats: dict[str, np.ndarray] = {}
    for c, name in enumerate(stat_names):
        stats[name] = cat("cols", np.int64, c)
    mid = cat("mid", np.int64)
    start_ps = cat("off", np.int64)
    dur = cat("dur", np.int64)
    file_len = cat("len", np.int32)
    file_pos = cat("pos", np.int64)
    del runs
    for ln in lines:
        if ln.count and ln.timestamp_ns:
            start_ps[ln.first:ln.first + ln.count] += np.int64(ln.timestamp_ns * 1000)
    return PlaneData(index=index, id=int(meta.id), name=meta.name, meta=meta,
                     lines=lines, metadata_id=mid, start_ps=start_ps, duration_ps=dur,
                     file_pos=file_pos, file_len=file_len, stats=stats)


def read_whole(path: str) -> bytes:
    """The file's bytes, read into memory (XPlaneError when empty, unreadable, or changed in
    size while read).

    Not a memory map: a writer that truncates the file while it is mapped (``cp new old``, a
    profiler rewriting its capture) turns every later touch of a page past the new end into
    a SIGBUS, which kills the whole process (TensorBoard). A copy costs one read from the
    page cache (~1-2 ms per 10 MB, against ~25 ms per 10 MB to decode) and the file's size
    in memory while it is decoded, as the mapped pages did."""
    with open_capture(path) as fh:
        try:
            size = os.fstat(fh.fileno()).st_size
            if size == 0:
                raise XPlaneError(path, "file is empty (0 bytes): not an XSpace")
            data = fh.read(size)
            more = fh.read(1)
        except OSError as exc:
            raise XPlaneError(path, f"cannot read: {exc.strerror or exc}") from None
    if len(data) != size or more:
        raise XPlaneError(path, "the file changed while it was read (being rewritten?): reload to read it again")
    return data


def decode_xspace(path: str | os.PathLike, *,
                  stats_for: Callable[[str, XPlane, LineInfo], bool] = lambda *a: False,
                  stat_names: Sequence[str] = (), stat_defaults: Sequence[int] = (),
                  lazy_event_metadata: bool = False) -> SpaceData:
    """Decode ``<host>.xplane.pb`` into :class:`SpaceData`.

    ``stats_for(plane_name, plane_meta, line)`` says for which lines the event stats named
    ``stat_names`` are decoded (int64 columns, ``stat_defaults`` where absent).

    ``lazy_event_metadata``: where the native decoder runs, the planes' ``meta`` leave out the
    event metadata (protobuf parsing it was ~1.3 ms of a GPU capture's ~20 ms, and it is most
    of ``meta``'s memory); the names are in ``metadata_names()``, the rest is read back from
    the file on use (``PlaneData.event_metadata``, ``full_meta``, :func:`event_stats`)."""
    path = os.fspath(path)
    data = read_whole(path)
    size = len(data)
    buf = np.frombuffer(data, dtype=np.uint8)
    lib = _native_lib()
    native = NativeScan(*lib, data) if lib is not None else None
    try:
        planes: list[PlaneData] = []
        hostnames: list[str] = []
        errors: list[str] = []
        warnings: list[str] = []
        for number, wt, a, b in fields(data, 0, size):
            if number in (1, 2, 3, 4) and wt != 2:
                raise ValueError(f"field {number} has wire type {wt}, expected 2")
            if number == 1:
                planes.append(_decode_plane(data, buf, len(planes), a, b, stats_for, stat_names,
                                            stat_defaults, native, path if lazy_event_metadata else ""))
            elif number in (2, 3, 4):
                text = bytes(data[a:b]).decode("utf-8", "replace")
                (errors, warnings, hostnames)[number - 2].append(text)
        if not planes and not hostnames and not errors and not warnings:
            raise ValueError("not an XSpace: no planes, hostnames, errors or warnings")
    except (ValueError, IndexError) as exc:
        raise XPlaneError(path, f"truncated or corrupt XSpace ({exc})") from None
    finally:
        del buf
        if native is not None:
            native.close()
    return SpaceData(path=path, size=size, planes=planes, hostnames=hostnames, errors=errors,
                     warnings=warnings)


def event_stats(path: str | os.PathLike, meta: XPlane, pos: int, length: int,
                md_file: MetadataFile | None = None) -> dict[str, Any]:
    """Decoded stats of one event (its XEventMetadata's stats, then its own), read from the
    file at the byte range recorded when decoding (``PlaneData.file_pos/file_len``); the
    event's metadata from ``meta``, or from the file (``md_file``: ``PlaneData.md_file`` of a
    plane decoded with ``lazy_event_metadata``)."""
    with open(path, "rb") as fh:
        fh.seek(int(pos))
        raw = fh.read(int(length))
    ev = XEvent()
    try:
        parse_lenient(ev, raw)
    except Exception as exc:  # DecodeError: the file changed since it was decoded, or is corrupt
        raise XPlaneError(path, f"event unreadable ({type(exc).__name__}: {exc}); "
                                "the file may have changed since it was read") from None
    out: dict[str, Any] = {}
    if md_file is not None:
        md = read_event_metadata(md_file, [ev.metadata_id]).get(ev.metadata_id)
    else:
        md = meta.event_metadata.get(ev.metadata_id)
    if md is not None:
        out.update(stats_dict(md.stats, meta))
    out.update(stats_dict(ev.stats, meta))
    return out


__all__ = ["LineInfo", "MetadataFile", "PlaneData", "SpaceData", "decode_xspace", "event_stats",
           "read_event_metadata", "read_whole"]
