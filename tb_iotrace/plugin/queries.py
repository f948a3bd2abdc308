"""The plugin's routes as pure functions: ``*_impl(...) -> dict`` (JSON-ready).

They take a :class:`View` (one or several loaded captures on one clock) and plain
parameters, and know nothing about HTTP; :mod:`.plugin` parses requests, calls them and
turns exceptions into status codes. Times are ns on the view's clock (see :mod:`.model`).
"""

from __future__ import annotations

import math
import os
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import lod
from .model import Capture, Lane

MAX_WIDTH = 8192
HOME_PAD = 0.01  # margin around the extent of the default window, as a fraction
MAX_BINS = 4096
SIZE_BINS = ("0_100", "100_1K", "1K_10K", "10K_100K", "100K_1M", "1M_4M", "4M_10M", "10M_100M",
             "100M_1G", "1G_PLUS")
SIZE_EDGES = (100, 1024, 10 * 1024, 100 * 1024, 1024 ** 2, 4 * 1024 ** 2, 10 * 1024 ** 2,
              100 * 1024 ** 2, 1024 ** 3)


class NotFound(KeyError):
    pass


@dataclass
class Part:
    capture: Capture
    prefix: str  # lane key prefix ("" for a single host)
    offset: int  # ns added to this capture's times to reach the view's clock
    host: str


@dataclass
class View:
    """What one request looks at: one host, or every host of a run on a common clock."""

    run: str
    parts: list[Part]

    @property
    def single(self) -> Capture:
        return self.parts[0].capture

    def extent(self) -> tuple[int, int]:
        lo = min(p.capture.extent[0] + p.offset for p in self.parts)
        hi = max(p.capture.extent[1] + p.offset for p in self.parts)
        return lo, hi

    def lanes(self, io_by: str) -> list[tuple[Part, Lane]]:
        out = []
        for group in ("host", "device", "io"):
            for p in self.parts:
                for ln in p.capture.timeline_lanes(io_by):
                    if ln.group == group:
                        out.append((p, ln))
        return out

    def find_lane(self, key: str) -> tuple[Part, Lane]:
        for p in self.parts:
            if p.prefix and not key.startswith(p.prefix):
                continue
            ln = p.capture.lane(key[len(p.prefix):])
            if ln is not None:
                return p, ln
        raise NotFound(f"no lane {key!r}")


def make_view(run: str, captures: list[tuple[str, Capture]]) -> View:
    """A view of the given (host, capture) pairs; several hosts are aligned on their
    ``profile_start_time`` when every capture has one, else on their own starts."""
    if len(captures) == 1:
        host, cap = captures[0]
        return View(run, [Part(cap, "", 0, host)])
    starts = [c.profile_start_ns for _, c in captures]
    base = min(starts) if all(s is not None for s in starts) else None
    parts = []
    for i, (host, cap) in enumerate(captures):
        off = (cap.profile_start_ns - base) if base is not None else 0
        parts.append(Part(cap, f"h{i}/", int(off), host))
    return View(run, parts)


# --------------------------------------------------------------------------- helpers


def _lane_json(part: Part, lane: Lane, multi: bool) -> dict[str, Any]:
    d = lane.describe()
    d["key"] = part.prefix + lane.key
    if multi:
        d["host"] = part.host
        d["name"] = f"[{part.host}] {d['name']}"
        if d.get("host_lane"):
            d["host_lane"] = part.prefix + d["host_lane"]
    elif "host_lane" in d and d["host_lane"] is None:
        d.pop("host_lane")
    return d


def _fmt_float(x: float) -> float:
    return float(x) if math.isfinite(x) else 0.0


def _io_by(value: str | None) -> str:
    return "file" if value == "file" else "thread"


# --------------------------------------------------------------------------- capture summary


def capture_impl(view: View, io_by: str = "thread") -> dict[str, Any]:
    io_by = _io_by(io_by)
    multi = len(view.parts) > 1
    lanes = [_lane_json(p, ln, multi) for p, ln in view.lanes(io_by)]
    lo, hi = view.extent()
    io_events = sum(len(p.capture.io) for p in view.parts if p.capture.io is not None)
    has_io = any(p.capture.io_info is not None for p in view.parts)
    dropped = sum(int((p.capture.io_info or {}).get("dropped", 0)) for p in view.parts)
    capped = sum(int((p.capture.io_info or {}).get("capped", 0)) for p in view.parts)
    files = sum(p.capture.file_records for p in view.parts)
    messages = []
    if not has_io:
        messages.append("This capture has no I/O data: it was made without tb_iotrace. Call "
                        "tb_iotrace.enable() (or run `tb-iotrace run -- python train.py`) before "
                        "profiling to record file accesses.")
    elif io_events == 0 and files == 0:
        messages.append("tb_iotrace was enabled but saw no file access in this capture window.")
    if dropped:
        messages.append(f"{dropped} I/O operations were not recorded (trace buffer full or "
                        "capped); counters in the files table are still exact.")
    steps, source = _steps(view)
    processes = [dict((p.capture.io_info or {}).get("process") or {}, host=p.host) for p in view.parts
                 if (p.capture.io_info or {}).get("source") == "record"]
    return {
        "run": view.run,
        "source": "record" if processes else "profile",
        "processes": processes,
        "hosts": [p.host for p in view.parts],
        "extent": [lo, hi],
        "lanes": lanes,
        "io_by": io_by,
        "steps": steps,
        "steps_source": source,
        "io": {"has_io": has_io, "events": io_events, "dropped": dropped, "capped": capped,
               "files": files},
        "messages": messages,
        "warnings": [w for p in view.parts for w in p.capture.warnings][:20],
    }


def _steps(view: View) -> tuple[list[dict[str, Any]], str]:
    for p in view.parts:
        if p.capture.steps:
            return ([{"index": s["index"], "name": s["name"], "start": s["start"] + p.offset,
                      "end": s["end"] + p.offset} for s in p.capture.steps],
                    p.capture.steps_source + (f" on {p.host}" if len(view.parts) > 1 else ""))
    return [], ""


# --------------------------------------------------------------------------- timeline


def timeline_impl(view: View, start: float | None, end: float | None, width: int,
                  io_by: str = "thread", lanes: list[str] | None = None) -> dict[str, Any]:
    """Items to draw for ``[start, end]`` at ``width`` pixels (see :mod:`.lod`); without
    start/end, the capture's extent with a 1% margin (what the client's reset shows).

    Response (columnar; ``items.*`` arrays are aligned):
      start, end, width, ns_per_px
      lanes: [{key, group, name, plane, rows, events, tf_data, ...}] in draw order
      names: string table; files: string table (file paths of I/O items)
      q: the time unit of items.start/dur in ns (ns_per_px / 8)
      segments: {lane, row, length, first}: runs of consecutive items on one lane row;
             ``first`` is the lane event index of the run's first event
      items: start (in q units: from ``start`` for a segment's first item, else from the
             previous item's start), dur (q units, rounded up), name (index into names),
             count (events merged; the next item's first event index is this one's plus
             count), bytes (I/O: bytes moved), file (index into files, -1 none), err (errno)
    """
    io_by = _io_by(io_by)
    lo, hi = view.extent()
    pad = (hi - lo) * HOME_PAD  # the "home" window: the extent and a margin (the client's reset)
    t0 = float(lo - pad if start is None else start)
    t1 = float(hi + pad if end is None else end)
    if not (math.isfinite(t0) and math.isfinite(t1)):
        raise ValueError("start and end must be finite numbers")
    if t1 <= t0:
        t1 = t0 + 1.0
    width = int(min(max(int(width), 1), MAX_WIDTH))
    npp = (t1 - t0) / width
    multi = len(view.parts) > 1
    all_lanes = view.lanes(io_by)
    wanted = set(lanes) if lanes else None
    out_lanes = []
    names: dict[str, int] = {}
    files: dict[str, int] = {}
    name_maps: dict[int, np.ndarray] = {}  # see _intern
    file_maps: dict[int, np.ndarray] = {}
    cols: dict[str, list] = {k: [] for k in ("lane", "row", "start", "dur", "name", "count",
                                             "index", "bytes", "file", "err")}
    # (lane and row are one value per row window: kept as length-1 arrays, sent as segments)
    for li, (part, lane) in enumerate(all_lanes):
        out_lanes.append(_lane_json(part, lane, multi))
        if wanted is not None and (part.prefix + lane.key) not in wanted:
            continue
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
            cols["lane"].append(np.full(1, li, dtype=np.int64))
            cols["row"].append(np.full(1, r, dtype=np.int64))
            cols["start"].append(items.start + part.offset)
            cols["dur"].append(items.end - items.start)
            cols["count"].append(items.count)
            cols["index"].append(items.first)
            nid = lane.name_id[items.first]
            if lane.group == "io":
                io = cap.io
                w0, w1 = int(items.first[0]), int(items.first[-1] + items.count[-1])
                rows_ = lane.io_rows(w0, w1)
                rel = _Rel(items, w0)
                src = io.path[rows_][rel.first]
                ret = np.maximum(io.returned[rows_], 0)
                op_ = io.op[rows_]
                moved = np.where(io.is_read[op_] | io.is_write[op_], ret, 0)
                cols["bytes"].append(lod.group_sum(moved, rel))
                # merged items: the file only when all events of the item share it
                same = _same_file(io.path[rows_], rel)
                fcodes = np.where(same, src, -1)
                cols["file"].append(_intern(files, io.paths, fcodes, file_maps))
                cols["err"].append(io.errno[rows_][rel.first].astype(np.int64))
                cols["name"].append(_intern(names, io.ops, nid, name_maps))
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
    seg_lane = [int(a[0]) for a in cols["lane"]]
    seg_row = [int(a[0]) for a in cols["row"]]
    seg_len = [len(a) for a in cols["count"]]
    seg_first = [int(a[0]) for a in cols["index"]]
    if cols["start"]:
        st = np.concatenate(cols["start"]).astype(np.float64)
        du = np.concatenate(cols["dur"]).astype(np.float64)
        start_q = np.round((st - t0) / q).astype(np.int64)
        dur_q = np.ceil(du / q).astype(np.int64)
        heads = np.cumsum([0] + seg_len[:-1])
        delta = np.diff(start_q, prepend=0)
        delta[heads] = start_q[heads]  # each segment starts absolute
    else:
        delta = dur_q = np.zeros(0, dtype=np.int64)
    items = {"start": delta.tolist(), "dur": dur_q.tolist()}
    for k in ("name", "count", "bytes", "file", "err"):
        items[k] = np.concatenate(cols[k]).tolist() if cols[k] else []
    steps, _ = _steps(view)
    return {"start": t0, "end": t1, "width": width, "ns_per_px": npp, "q": q, "extent": [lo, hi],
            "lanes": out_lanes, "names": list(names), "files": list(files),
            "segments": {"lane": seg_lane, "row": seg_row, "length": seg_len, "first": seg_first},
            "items": items,
            "steps": [s for s in steps if s["end"] >= t0 and s["start"] <= t1]}


class _Rel(lod.Items):
    """Items re-based to a window starting at lane index ``w0`` (for arrays cut to it)."""

    def __init__(self, items: lod.Items, w0: int):
        super().__init__(items.start, items.end, items.first - w0, items.count)


def _same_file(codes: np.ndarray, items: lod.Items) -> np.ndarray:
    """Per item: do all its events name the same file? (``codes`` cut to the items.)"""
    if len(items) == 0:
        return np.zeros(0, dtype=bool)
    a = int(items.first[0])
    return np.minimum.reduceat(codes[a:], items.first - a) == np.maximum.reduceat(codes[a:], items.first - a)


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


# --------------------------------------------------------------------------- files table

# (column, POSIX counter, STDIO counter)
_FILE_COLUMNS = (
    ("bytes_read", "POSIX_BYTES_READ", "STDIO_BYTES_READ"),
    ("bytes_written", "POSIX_BYTES_WRITTEN", "STDIO_BYTES_WRITTEN"),
    ("reads", "POSIX_READS", "STDIO_READS"),
    ("writes", "POSIX_WRITES", "STDIO_WRITES"),
    ("opens", "POSIX_OPENS", "STDIO_OPENS"),
    ("seeks", "POSIX_SEEKS", "STDIO_SEEKS"),
    ("stats", "POSIX_STATS", None),
    ("seq_reads", "POSIX_SEQ_READS", None),
    ("consec_reads", "POSIX_CONSEC_READS", None),
    ("seq_writes", "POSIX_SEQ_WRITES", None),
    ("consec_writes", "POSIX_CONSEC_WRITES", None),
    ("read_time", "POSIX_F_READ_TIME", "STDIO_F_READ_TIME"),
    ("write_time", "POSIX_F_WRITE_TIME", "STDIO_F_WRITE_TIME"),
    ("meta_time", "POSIX_F_META_TIME", "STDIO_F_META_TIME"),
    ("max_byte_read", "POSIX_MAX_BYTE_READ", "STDIO_MAX_BYTE_READ"),
    ("max_byte_written", "POSIX_MAX_BYTE_WRITTEN", "STDIO_MAX_BYTE_WRITTEN"),
    ("common_access_size", "POSIX_ACCESS1_ACCESS", None),
)


def files_impl(view: View) -> dict[str, Any]:
    """Every file record with its Darshan counters (POSIX and STDIO rows), columnar.

    ``columns`` are derived, comparable across modules (see _FILE_COLUMNS; ``bandwidth`` =
    bytes / (read + write time) in bytes/s, ``seq_pct`` = sequential reads / reads); all
    raw counters per row are in ``counters`` (names) / ``values`` (rows x names, null when
    a module lacks the counter). ``traced_calls`` / ``traced_bytes`` come from the per-call
    trace (0 when events were dropped or capped)."""
    rows_path: list[str] = []
    rows_module: list[str] = []
    rows_host: list[str] = []
    names: list[str] = []
    name_idx: dict[str, int] = {}
    blocks = []
    derived: dict[str, list] = {c[0]: [] for c in _FILE_COLUMNS}
    derived.update({"bandwidth": [], "seq_pct": [], "traced_calls": [], "traced_bytes": []})
    for p in view.parts:
        ct = p.capture.counters
        n = len(ct.paths)
        if n == 0:
            continue
        rows_path += ct.paths
        rows_module += ct.modules
        rows_host += [p.host] * n
        for nm in ct.names:
            if nm not in name_idx:
                name_idx[nm] = len(names)
                names.append(nm)
        blocks.append((ct, n))
        mods = np.array(ct.modules, dtype=object)
        for col, posix, stdio in _FILE_COLUMNS:
            v = np.full(n, np.nan)
            pv = ct.col(posix)
            v = np.where(mods == "POSIX", pv, v)
            if stdio:
                v = np.where(mods == "STDIO", ct.col(stdio), v)
            derived[col].append(v)
        t = np.nan_to_num(derived["read_time"][-1]) + np.nan_to_num(derived["write_time"][-1])
        b = np.nan_to_num(derived["bytes_read"][-1]) + np.nan_to_num(derived["bytes_written"][-1])
        derived["bandwidth"].append(np.where(t > 0, b / np.where(t > 0, t, 1), np.nan))
        reads = derived["reads"][-1]
        derived["seq_pct"].append(np.where(reads > 0, 100.0 * derived["seq_reads"][-1] / np.where(reads > 0, reads, 1), np.nan))
        calls, moved = _traced_per_path(p.capture, ct.paths)
        derived["traced_calls"].append(calls)
        derived["traced_bytes"].append(moved)
    values = np.full((len(rows_path), len(names)), np.nan)
    r = 0
    for ct, n in blocks:
        cols = [name_idx[nm] for nm in ct.names]
        values[r:r + n][:, cols] = ct.values
        r += n

    def clean(a) -> list:
        return [None if (isinstance(x, float) and not math.isfinite(x)) else
                (int(x) if float(x).is_integer() and abs(x) < 2 ** 53 else x) for x in a]

    columns = {k: clean(np.concatenate(v).tolist()) if v else [] for k, v in derived.items()}
    has_io = any(p.capture.io_info is not None for p in view.parts)
    if not rows_path:
        msg = ("No I/O data in this capture (made without tb_iotrace)." if not has_io else
               "No file was accessed in this capture window (or every access was excluded).")
    else:
        msg = ""
    return {"rows": len(rows_path), "path": rows_path, "module": rows_module, "host": rows_host,
            "columns": columns, "counters": names,
            "values": [clean(row) for row in values.tolist()], "message": msg}


def _traced_per_path(cap: Capture, paths: list[str]) -> tuple[np.ndarray, np.ndarray]:
    n = len(paths)
    calls = np.zeros(n)
    moved = np.zeros(n)
    io = cap.io
    if io is None or len(io) == 0:
        return calls, moved
    cnt = np.bincount(io.path + 1, minlength=len(io.paths) + 1)[1:]
    rd, wr = io.moved()
    byts = np.bincount(io.path + 1, weights=(rd + wr).astype(np.float64), minlength=len(io.paths) + 1)[1:]
    where = {p: i for i, p in enumerate(io.paths)}
    for i, p in enumerate(paths):
        k = where.get(p)
        if k is not None:
            calls[i] = cnt[k]
            moved[i] = byts[k]
    return calls, moved


# --------------------------------------------------------------------------- histograms


def histograms_impl(view: View, path: str | None = None) -> dict[str, Any]:
    """Access-size histograms (read and write) from the POSIX_SIZE_* bins, the access
    pattern (sequential / consecutive / other) and the traced calls per op.

    ``source`` says where the sizes came from: "counters" (Darshan bins, exact), "trace"
    (binned from the per-call trace when no counter record exists) or "none"."""
    read = np.zeros(len(SIZE_BINS))
    write = np.zeros(len(SIZE_BINS))
    pattern = {"reads": 0.0, "seq_reads": 0.0, "consec_reads": 0.0, "writes": 0.0, "seq_writes": 0.0,
               "consec_writes": 0.0}
    any_counters = False
    for p in view.parts:
        ct = p.capture.counters
        if not ct.paths:
            continue
        sel = np.array([(path is None or q == path) and m == "POSIX" for q, m in zip(ct.paths, ct.modules)])
        if not sel.any():
            continue
        any_counters = True
        for i, b in enumerate(SIZE_BINS):
            read[i] += np.nansum(ct.col(f"POSIX_SIZE_READ_{b}")[sel])
            write[i] += np.nansum(ct.col(f"POSIX_SIZE_WRITE_{b}")[sel])
        for k, name in (("reads", "POSIX_READS"), ("seq_reads", "POSIX_SEQ_READS"),
                        ("consec_reads", "POSIX_CONSEC_READS"), ("writes", "POSIX_WRITES"),
                        ("seq_writes", "POSIX_SEQ_WRITES"), ("consec_writes", "POSIX_CONSEC_WRITES")):
            pattern[k] += float(np.nansum(ct.col(name)[sel]))
    source = "counters" if any_counters else "none"
    ops: dict[str, int] = {}
    for p in view.parts:
        io = p.capture.io
        if io is None or len(io) == 0:
            continue
        mask = slice(None)
        if path is not None:
            k = io.paths.index(path) if path in io.paths else None
            if k is None:
                continue
            mask = io.path == k
        codes = io.op[mask]
        cnt = np.bincount(codes, minlength=len(io.ops))
        for name, c in zip(io.ops, cnt.tolist()):
            if c:
                ops[name] = ops.get(name, 0) + int(c)
        if not any_counters:
            source = "trace"
            ret = io.returned[mask]
            rd = io.is_read[codes] & (ret >= 0)
            wr = io.is_write[codes] & (ret >= 0)
            edges = np.array(SIZE_EDGES)
            read += np.bincount(np.searchsorted(edges, ret[rd], side="left"), minlength=len(SIZE_BINS))[:len(SIZE_BINS)]
            write += np.bincount(np.searchsorted(edges, ret[wr], side="left"), minlength=len(SIZE_BINS))[:len(SIZE_BINS)]
            pattern["reads"] += float(rd.sum())
            pattern["writes"] += float(wr.sum())
    return {"bins": list(SIZE_BINS), "read": read.astype(np.int64).tolist(),
            "write": write.astype(np.int64).tolist(), "pattern": {k: int(v) for k, v in pattern.items()},
            "ops": dict(sorted(ops.items(), key=lambda kv: -kv[1])), "source": source, "path": path}


# --------------------------------------------------------------------------- bandwidth


def _integral(starts: np.ndarray, ends: np.ndarray, rates: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """F(t) = sum_i rate_i * |[s_i, e_i] intersect (-inf, t]| at each edge."""
    o = np.argsort(starts, kind="stable")
    s_sorted, rs = starts[o], rates[o]
    c_r = np.concatenate(([0.0], np.cumsum(rs)))
    c_rs = np.concatenate(([0.0], np.cumsum(rs * s_sorted)))
    o2 = np.argsort(ends, kind="stable")
    e_sorted, re_ = ends[o2], rates[o2]
    c_re = np.concatenate(([0.0], np.cumsum(re_)))
    c_ree = np.concatenate(([0.0], np.cumsum(re_ * e_sorted)))
    k1 = np.searchsorted(s_sorted, edges, side="right")
    k2 = np.searchsorted(e_sorted, edges, side="right")
    return (edges * c_r[k1] - c_rs[k1]) - (edges * c_re[k2] - c_ree[k2])


def bandwidth_impl(view: View, start: float | None, end: float | None, bins: int) -> dict[str, Any]:
    """Read and write bandwidth (bytes/s) in ``bins`` equal bins over [start, end]: each
    call's bytes are spread evenly over its duration, so the bins add up to the bytes moved
    inside the window. Also the average number of calls in flight per bin."""
    lo, hi = view.extent()
    t0 = float(lo if start is None else start)
    t1 = float(hi if end is None else end)
    if not (math.isfinite(t0) and math.isfinite(t1)):
        raise ValueError("start and end must be finite numbers")
    if t1 <= t0:
        t1 = t0 + 1.0
    bins = int(min(max(int(bins), 1), MAX_BINS))
    bw = (t1 - t0) / bins
    edges = np.linspace(0.0, t1 - t0, bins + 1)
    width_s = bw / 1e9
    read = np.zeros(bins)
    write = np.zeros(bins)
    busy = np.zeros(bins)
    total_read = total_write = 0
    for p in view.parts:
        io = p.capture.io
        if io is None or len(io) == 0:
            continue
        for lane in p.capture.io_lanes("thread"):
            i0, i1 = lod.window(lane.start, lane.maxend, 0, len(lane), t0 - p.offset, t1 - p.offset)
            if i1 <= i0:
                continue
            rows_ = lane.io_rows(i0, i1)
            s = (io.start[rows_] + p.offset).astype(np.float64) - t0
            e = (io.end[rows_] + p.offset).astype(np.float64) - t0
            op_ = io.op[rows_]
            ret = np.maximum(io.returned[rows_], 0).astype(np.float64)
            keep = e >= 0
            s, e = s[keep], np.maximum(e[keep], s[keep] + 1.0)
            rd = np.where(io.is_read[op_], ret, 0.0)[keep]
            wr = np.where(io.is_write[op_], ret, 0.0)[keep]
            # bytes inside the window only
            frac = (np.minimum(e, t1 - t0) - np.maximum(s, 0.0)) / (e - s)
            total_read += float((rd * frac).sum())
            total_write += float((wr * frac).sum())
            kb = np.floor(s / bw).astype(np.int64)
            ke = np.floor(e / bw).astype(np.int64)
            one = (kb == ke) & (kb >= 0) & (kb < bins)
            for arr, out in ((rd, read), (wr, write), (e - s, busy)):
                if one.any():
                    out += np.bincount(kb[one], weights=arr[one], minlength=bins)[:bins]
            many = ~one
            if many.any():
                sm, em = s[many], e[many]
                dur = em - sm
                for arr, out in ((rd[many], read), (wr[many], write), (dur, busy)):
                    m = arr > 0
                    if m.any():
                        F = _integral(sm[m], em[m], arr[m] / dur[m], edges)
                        out += np.diff(F)
    total_read = int(round(total_read))
    total_write = int(round(total_write))
    return {"start": t0, "end": t1, "bins": bins, "bin_ns": bw,
            "read_bps": [_fmt_float(x) for x in (read / width_s).tolist()],
            "write_bps": [_fmt_float(x) for x in (write / width_s).tolist()],
            "in_flight": [_fmt_float(x) for x in (busy / bw).tolist()],
            "total_read": total_read, "total_write": total_write}


# --------------------------------------------------------------------------- steps


def steps_impl(view: View, windows: int = 20) -> dict[str, Any]:
    """Per-step I/O: bytes read/written, calls, I/O time (union of call intervals per
    thread, summed over threads, clipped to the step), and the share of the step the host
    waited on input (union of IteratorGetNext-like host events). Without step markers the
    capture is cut into ``windows`` equal time windows, and ``has_steps`` is false."""
    steps, source = _steps(view)
    has_steps = bool(steps)
    if not has_steps:
        lo, hi = view.extent()
        edges = np.linspace(lo, hi, windows + 1)
        steps = [{"index": i, "name": f"window {i + 1}", "start": int(edges[i]), "end": int(edges[i + 1])}
                 for i in range(windows)]
        source = ""
    starts = np.array([s["start"] for s in steps], dtype=np.float64)
    ends = np.array([s["end"] for s in steps], dtype=np.float64)
    k = len(steps)
    read = np.zeros(k)
    write = np.zeros(k)
    calls = np.zeros(k)
    io_time = np.zeros(k)
    wait = np.zeros(k)
    for p in view.parts:
        cap = p.capture
        io = cap.io
        if io is not None and len(io):
            s = (io.start + p.offset).astype(np.float64)
            e = (io.end + p.offset).astype(np.float64)
            rd, wr = io.moved()
            idx = np.searchsorted(starts, s, side="right") - 1
            ok = (idx >= 0) & (s < ends[np.clip(idx, 0, k - 1)])
            np.add.at(read, idx[ok], rd[ok])
            np.add.at(write, idx[ok], wr[ok])
            np.add.at(calls, idx[ok], 1)
            for tid in np.unique(io.tid).tolist():
                m = io.tid == tid
                io_time += _covered(s[m], e[m], starts, ends)
        for lane in cap.lanes:
            if lane.group != "host":
                continue
            mask = _input_mask(cap, lane)
            if mask.any():
                wait += _covered((lane.start[mask] + p.offset).astype(np.float64),
                                 (lane.end[mask] + p.offset).astype(np.float64), starts, ends)
    dur = np.maximum(ends - starts, 1.0)
    return {"has_steps": has_steps, "source": source,
            "message": "" if has_steps else _no_steps_message(view),
            "steps": [{"index": st["index"], "name": st["name"], "start": st["start"], "end": st["end"],
                       "bytes_read": int(read[i]), "bytes_written": int(write[i]), "calls": int(calls[i]),
                       "io_time_ns": int(io_time[i]), "input_wait_ns": int(wait[i]),
                       "input_wait_pct": round(100.0 * min(wait[i], dur[i]) / dur[i], 2)}
                      for i, st in enumerate(steps)]}


def _no_steps_message(view: View) -> str:
    if all((p.capture.io_info or {}).get("source") == "record" for p in view.parts):
        return ("A whole-run record has no training steps (it has no TensorFlow timeline): showing "
                "equal time windows of the process's life instead.")
    return ("No step markers in this capture (no device 'Steps' line, no train/test TraceMe or "
            "Keras 'Profiled batch' events): showing equal time windows instead.")


def _is_input_wait(name: str) -> bool:
    from .model import INPUT_WAIT_RE
    return bool(INPUT_WAIT_RE.search(name))


def _input_mask(cap: Capture, lane: Lane) -> np.ndarray:
    got = lane.cache.get("_input")
    if got is None:
        ids = np.unique(lane.name_id)
        hit = [i for i in ids.tolist() if i >= 0 and _is_input_wait(cap.names[i])]
        got = np.isin(lane.name_id, np.array(hit, dtype=np.int32)) if hit else np.zeros(len(lane), bool)
        # only outermost events (row 0) so nested ones are not counted twice
        if lane.rows > 1:
            got &= np.arange(len(lane)) < lane.row_bounds[1]
        lane.cache["_input"] = got
    return got


def _covered(s: np.ndarray, e: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Length of the union of intervals [s, e] inside each [starts_k, ends_k]."""
    if len(s) == 0:
        return np.zeros(len(starts))
    o = np.argsort(s, kind="stable")
    s, e = s[o], np.maximum.accumulate(e[o])
    # merge overlapping intervals
    brk = np.ones(len(s), dtype=bool)
    brk[1:] = s[1:] > e[:-1]
    heads = np.flatnonzero(brk)
    us = s[heads]
    ue = np.maximum.reduceat(e, heads)
    ones = np.ones(len(us))
    return _integral(us, ue, ones, ends) - _integral(us, ue, ones, starts)


# --------------------------------------------------------------------------- findings


# tb_iotrace.analysis reads the capture file column-wise (tb_iotrace.analysis.source: about 4.4x
# the file at its peak, a few seconds per million I/O events), in a child process (see
# .findings_worker) so TensorBoard's own memory and request latency are untouched, one at a time
# per capture; captures above this size point to the CLI instead.
FINDINGS_MAX_BYTES = int(os.environ.get("TBIO_PLUGIN_FINDINGS_MAX_BYTES", 1 << 30))
FINDINGS_TIMEOUT_S = float(os.environ.get("TBIO_PLUGIN_FINDINGS_TIMEOUT_S", 600))
_findings_cache: dict[tuple[Any, ...], dict[str, Any]] = {}
_findings_locks: dict[tuple[Any, ...], threading.Lock] = {}
_findings_guard = threading.Lock()


def _findings_for(path: str) -> dict[str, Any]:
    from .cache import file_key
    from .records import total_size

    key = (path, *file_key(path))  # a record: its JSON's and its trace's size and mtime
    hit = _findings_cache.get(key)
    if hit is not None:
        return hit
    size = total_size(path) if path.endswith(".json") else key[1]
    if size > FINDINGS_MAX_BYTES:
        return {"findings": [], "message": (
            f"This capture is {size >> 20} MiB, above the tab's findings limit "
            f"({FINDINGS_MAX_BYTES >> 20} MiB): run `tb-iotrace report {path}` for its findings.")}
    with _findings_guard:
        lock = _findings_locks.setdefault(key, threading.Lock())
    with lock:  # concurrent requests for one capture wait for one child
        hit = _findings_cache.get(key)
        if hit is not None:
            return hit
        from .findings_worker import run_child

        try:
            out = run_child(path, FINDINGS_TIMEOUT_S)
        except RuntimeError as exc:  # cached too: a failing or slow analysis is not started again per request
            out = {"findings": [], "message": f"Findings could not be computed: {exc}"}
        finally:
            with _findings_guard:
                _findings_locks.pop(key, None)
        with _findings_guard:
            if len(_findings_cache) > 16:
                _findings_cache.clear()
            _findings_cache[key] = out
    return out


def findings_impl(view: View) -> dict[str, Any]:
    """Findings from tb_iotrace.analysis, per host of the view:
    ``{"findings": [{"id", "severity", "title", "statement", "evidence", "files", "ops",
    "suggestion", "host"?}], "message", "notes"}``."""
    findings: list[dict[str, Any]] = []
    notes: list[str] = []
    messages: list[str] = []
    for part in view.parts:
        try:
            got = _findings_for(part.capture.path)
        except Exception as exc:  # a finding failure never breaks the tab
            got = {"findings": [], "message": f"Findings could not be computed: {exc}"}
        for f in got["findings"]:
            findings.append(dict(f, host=part.host) if len(view.parts) > 1 else f)
        notes += got.get("notes", [])
        if got.get("message"):
            messages.append(got["message"])
    message = "" if findings else (messages[0] if messages else "No findings for this capture.")
    return {"findings": findings, "message": message, "notes": notes}


# --------------------------------------------------------------------------- event details


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
    else:
        nid = int(lane.name_id[index])
        out["name"] = cap.names[nid] if nid >= 0 else ""
        out["stats"] = {k: (v if isinstance(v, (int, float, str)) else repr(v))
                        for k, v in cap.event_stats(lane, index).items()}
    steps, _ = _steps(view)
    t = s + part.offset
    out["step"] = next(({"index": st["index"], "name": st["name"]} for st in steps
                        if st["start"] <= t < st["end"]), None)
    return out


def _enclosing(cap: Capture, lane: Lane, s: int, e: int, part: Part) -> dict[str, Any] | None:
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


__all__ = ["NotFound", "View", "bandwidth_impl", "capture_impl", "event_impl", "files_impl",
           "findings_impl", "histograms_impl", "make_view", "steps_impl", "timeline_impl"]
