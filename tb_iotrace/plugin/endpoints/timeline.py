"""``/timeline``: the items to draw for a time window at a width in pixels (see :mod:`tb_iotrace.plugin.level_of_detail`)."""
from __future__ import annotations

from typing import Any

import numpy as np

from tb_iotrace.plugin import level_of_detail as lod, packed
from tb_iotrace.plugin.object_lanes import GROUP as OBJECT, failed_status, object_sums
from tb_iotrace.model.tab.columns import IoTable, Lane
from tb_iotrace.plugin.request_view import View, io_by_choice, time_window, view_steps

MAX_WIDTH = 8192
HOME_PAD = 0.01  # margin around the extent of the default window, as a fraction


def timeline_impl(view: View, start: float | None, end: float | None, width: int,
                  io_by: str = "thread", lanes: list[str] | None = None) -> dict[str, Any]:
    """Items to draw for ``[start, end]`` at ``width`` pixels (see :mod:`..level_of_detail`); without
    start/end, the capture's extent with a 1% margin (what the client's reset shows).

    Response (columnar; ``items.*`` arrays are aligned):
      start, end, width, ns_per_px, extent
      lanes: [{key, group, name, plane, rows, events, tf_data, ...}] in draw order: every lane
             of the view (as /capture sends them), whichever were asked for
      lane_count: how many lanes the view has (``segments.lane`` indexes them)
      names: string table; files: string table (file paths of I/O items)
      q: the time unit of items.start/dur in ns (ns_per_px / 8)
      segments: {lane, row, length, first}: runs of consecutive items on one lane row;
             ``first`` is the lane event index of the run's first event
      items: start (in q units: from ``start`` for a segment's first item, else from the
             previous item's start), dur (q units, rounded up), name (index into names),
             count (events merged; the next item's first event index is this one's plus
             count), bytes (I/O, objects: bytes moved), file (index into files, -1 none), err
             (errno; object lanes: the HTTP status of a failed request, -1 no answer)
    """
    fields, cols = timeline_columns(view, start, end, width, io_by, lanes)
    out = dict(fields)
    out["lanes"] = view.lane_table(io_by_choice(io_by)).described
    out["segments"] = {k: cols[f"segments.{k}"].tolist() for k in SEGMENT_COLUMNS}
    start = cols["items.start"]
    heads = np.cumsum([0] + out["segments"]["length"][:-1]) if len(start) else []
    start[heads] = cols["segments.start"]  # here each segment's first item starts absolute
    out["items"] = {k: cols[f"items.{k}"].tolist() for k in ITEM_COLUMNS}
    return out


def timeline_packed(view: View, start: float | None, end: float | None, width: int,
                    io_by: str = "thread", lanes: list[str] | None = None) -> bytes:
    """The answer of :func:`timeline_impl` as a :mod:`..packed` answer, without the lane
    descriptions (the tab has them from /capture; ``lane_count`` tells it which list the
    ``segments.lane`` column indexes): columns ``segments.<k>`` and ``items.<k>``, and
    ``segments.start``: the start of each segment's first item (q units from ``start``),
    whose ``items.start`` is 0 here."""
    return packed.pack(*timeline_columns(view, start, end, width, io_by, lanes))


SEGMENT_COLUMNS = ("lane", "row", "length", "first")
ITEM_COLUMNS = ("start", "dur", "name", "count", "bytes", "file", "err")


def timeline_columns(view: View, start: float | None, end: float | None, width: int,
                     io_by: str = "thread", lanes: list[str] | None = None
                     ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The answer's fields and its columns (``segments.*``, ``items.*``); see :func:`timeline_impl`.
    Only the lanes asked for (their keys; unknown keys are ignored) are visited."""
    io_by = io_by_choice(io_by)
    lo, hi = view.extent()
    pad = (hi - lo) * HOME_PAD  # the "home" window: the extent and a margin (the client's reset)
    t0 = float(lo - pad if start is None else start)
    t1 = float(hi + pad if end is None else end)
    t0, t1 = time_window(t0, t1)
    width = int(min(max(int(width), 1), MAX_WIDTH))
    npp = (t1 - t0) / width
    table = view.lane_table(io_by)
    if lanes is None:
        positions: list[int] | range = range(len(table.lanes))
    else:
        positions = sorted({table.index[k] for k in lanes if k in table.index})
    names: dict[str, int] = {}
    files: dict[str, int] = {}
    name_maps: dict[int, np.ndarray] = {}  # see _intern
    file_maps: dict[int, np.ndarray] = {}
    cols: dict[str, list] = {k: [] for k in ("start", "dur", "name", "count", "bytes", "file", "err")}
    seg_lane: list[int] = []
    seg_row: list[int] = []
    seg_len: list[int] = []
    seg_first: list[int] = []
    for li in positions:
        part, lane = table.lanes[li]
        cap = part.capture
        a0, a1 = t0 - part.offset, t1 - part.offset
        for r in range(lane.rows):
            a, b = int(lane.row_bounds[r]), int(lane.row_bounds[r + 1])
            if b <= a:
                continue
            i0, i1 = lod.window(lane.start, lane.maxend, a, b, a0, a1)
            if i1 <= i0:
                continue
            items = lod.merge_row(lane.start, lane.end, i0, i1, a0, npp)
            k = len(items)
            if k == 0:
                continue
            seg_lane.append(li)
            seg_row.append(r)
            seg_len.append(k)
            seg_first.append(int(items.first[0]))
            cols["start"].append(items.start + part.offset)
            cols["dur"].append(items.end - items.start)
            cols["count"].append(items.count)
            nid = lane.name_id[items.first]
            if lane.group == "io":
                io = cap.io
                moved_sum, change_sum = _io_sums(lane, io)
                head = items.first
                last = head + items.count
                rows_ = (lane.src_base + head) if lane.src is None else lane.src[head]
                cols["bytes"].append(moved_sum[last] - moved_sum[head])
                # merged items: the file only when all events of the item share it (no
                # change of file between its first and last event)
                same = change_sum[last] == change_sum[head + 1]
                fcodes = np.where(same, io.path[rows_], -1)
                cols["file"].append(_intern(files, io.paths, fcodes, file_maps))
                cols["err"].append(io.errno[rows_].astype(np.int64))
                cols["name"].append(_intern(names, io.ops, nid, name_maps))
            elif lane.group == OBJECT:
                sums = object_sums(cap, lane)
                cols["bytes"].append(sums[items.first + items.count] - sums[items.first])
                cols["file"].append(np.full(k, -1, dtype=np.int64))
                cols["err"].append(failed_status(cap, lane, items.first))
                cols["name"].append(_intern(names, lane.cache["names"], nid, name_maps))
            else:
                cols["bytes"].append(np.zeros(k, dtype=np.int64))
                cols["file"].append(np.full(k, -1, dtype=np.int64))
                cols["err"].append(np.zeros(k, dtype=np.int64))
                cols["name"].append(_intern(names, cap.names, nid, name_maps))
    # Compact encoding: times as integers in units of q = ns_per_px / 8 from t0 (an eighth
    # of a pixel is all the canvas can show); lane/row/first event as runs ("segments");
    # inside a segment, starts as deltas from the previous item and event indexes implied
    # by the counts (items of a row window are contiguous runs of its events).
    q = npp / 8.0
    out: dict[str, np.ndarray] = {
        "segments.lane": np.array(seg_lane, dtype=np.int64), "segments.row": np.array(seg_row, dtype=np.int64),
        "segments.length": np.array(seg_len, dtype=np.int64), "segments.first": np.array(seg_first, dtype=np.int64)}
    if cols["start"]:
        st = np.concatenate(cols["start"]).astype(np.float64)
        du = np.concatenate(cols["dur"]).astype(np.float64)
        start_q = np.round((st - t0) / q).astype(np.int64)
        heads = np.cumsum([0] + seg_len[:-1])
        out["segments.start"] = start_q[heads]
        out["items.start"] = np.diff(start_q, prepend=0)
        out["items.start"][heads] = 0  # in segments.start: the deltas stay small integers
        out["items.dur"] = np.ceil(du / q).astype(np.int64)
    else:
        out["segments.start"] = out["items.start"] = out["items.dur"] = np.zeros(0, dtype=np.int64)
    for k in ("name", "count", "bytes", "file", "err"):
        out[f"items.{k}"] = np.concatenate(cols[k]) if cols[k] else np.zeros(0, dtype=np.int64)
    steps, _ = view_steps(view)
    fields = {"start": t0, "end": t1, "width": width, "ns_per_px": npp, "q": q, "extent": [lo, hi],
              "lane_count": len(table.lanes), "names": list(names), "files": list(files),
              "steps": [s for s in steps if s["end"] >= t0 and s["start"] <= t1]}
    return fields, out


def _io_sums(lane: Lane, io: IoTable) -> tuple[np.ndarray, np.ndarray]:
    """Running sums over an I/O lane's events, made on the lane's first request and kept on
    it (16 bytes per event): bytes moved (``[k]``: before event k) and changes of file from
    one event to the next (``[k]``: among events 1..k-1). An item's bytes and whether its
    events share a file are then two lookups, not a pass over its events (zooming the 64
    hosts' I/O lanes went through every event in the window at each step)."""
    got = lane.cache.get("io_sums")
    if got is None:
        rows = lane.io_rows()
        op = io.op[rows]
        moved = np.where(io.is_read[op] | io.is_write[op], np.maximum(io.returned[rows], 0), 0)
        path = io.path[rows]
        n = len(path)
        moved_sum = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(moved, out=moved_sum[1:])
        change_sum = np.zeros(n + 1, dtype=np.int64)
        if n > 1:
            np.cumsum(path[1:] != path[:-1], out=change_sum[2:])
        got = lane.cache["io_sums"] = (moved_sum, change_sum)
    return got


def _intern(table: dict[str, int], strings: list[str], codes: np.ndarray,
            maps: dict[int, np.ndarray] | None = None) -> np.ndarray:
    """Map codes into ``strings`` to indices into the response's string table.

    ``maps`` (one per response and table) remembers, per ``strings`` list, the table index
    of every code already seen, so each string is looked up once per response rather than
    once per row (the same ~2,000 file paths show up on every I/O lane)."""
    out = np.full(len(codes), -1, dtype=np.int64)
    if len(codes) == 0:
        return out
    if maps is None:
        maps = {}
    m = maps.get(id(strings))
    if m is None:
        m = maps[id(strings)] = np.full(len(strings) + 1, -2, dtype=np.int64)  # -2: not seen
    codes = np.asarray(codes, dtype=np.int64)
    valid = (codes >= 0) & (codes < len(strings))
    at = np.where(valid, codes, len(strings))  # the last slot stands for every invalid code
    m[len(strings)] = -1
    new = np.unique(at[m[at] == -2])
    for c in new.tolist():
        s_ = strings[c]
        idx = table.get(s_)
        if idx is None:
            idx = table[s_] = len(table)
        m[c] = idx
    return m[at]
