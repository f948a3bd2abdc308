"""The native path: native/codec/xdecode.c (``tb_iotrace._codec``) scans one file's bytes (read into memory):
fields of a plane, event metadata, the runs of events of each line."""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from tb_iotrace.store.xplane import XPlane
from tb_iotrace.model.columnar.planes import LineInfo, PlaneData
from tb_iotrace.model.columnar.walk import walk_line


_XD_ERRORS = {
    -1: "a varint runs past the end of its message",
    -2: "a varint longer than 10 bytes",
    -3: "a field runs past the end of its message",
    -4: "unsupported wire type",
    -5: "field number 0",
    -6: "an event of 2 GiB or more",
    -7: "fewer events than counted",
    -8: "bad arguments to the native decoder",
}


class NativeScan:
    """native/codec/xdecode.c over one file's bytes (a cffi view of them, released by close())."""

    def __init__(self, ffi, lib, data) -> None:
        self.ffi, self.lib = ffi, lib
        self.buf = ffi.from_buffer("uint8_t[]", data)
        self._stop = ffi.new("int64_t *")

    def close(self) -> None:
        self.ffi.release(self.buf)

    def _check(self, rc: int, what: str) -> int:
        if rc < 0:
            raise ValueError(f"{what}: {_XD_ERRORS.get(rc, f'error {rc}')}")
        return rc

    def _ptr(self, ctype: str, arr: np.ndarray, at: int = 0):
        return self.ffi.from_buffer(ctype, arr) + at

    def fields(self, start: int, end: int) -> np.ndarray:
        """Rows number, wire type, tag start, value start, value end of each top-level field
        of the message at [start, end)."""
        lib, null = self.lib, self.ffi.NULL
        n = self._check(lib.tbio_xd_fields(self.buf, start, end, 0, null, null, null, null, null), "plane")
        out = np.empty((5, n), dtype=np.int64)
        if n:
            p = [self._ptr("int64_t[]", row) for row in out]
            self._check(lib.tbio_xd_fields(self.buf, start, end, n, *p), "plane")
        return out

    def event_metadata(self, data, fields: np.ndarray) -> tuple[tuple[np.ndarray, list[str], None],
                                                              tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """PlaneData.metadata_table's ids and names from the plane's event_metadata map entries
        (field 4): as protobuf reads the map, the last entry of a key wins. The display names
        are left out (None): nothing on the plugin's load path reads them (decoding them was
        ~3 ms of a 25 ms capture); PlaneData.metadata_table reads them from ``meta`` on use.
        Also (ids, entry start, entry end): where each entry's bytes lie in the file."""
        num, wt, _, a, b = fields
        m = (num == 4) & (wt == 2)
        starts, ends = a[m], b[m]
        n = len(starts)
        out = np.zeros((5, n), dtype=np.int64)
        if n:
            i64 = "int64_t[]"
            self._check(self.lib.tbio_xd_event_metadata(
                self.buf, len(self.buf), n, self._ptr(i64, starts), self._ptr(i64, ends),
                *[self._ptr(i64, row) for row in out]), "event metadata")
        key, na, nb = out[0], out[1], out[2]
        order = np.argsort(key, kind="stable")
        key = key[order]
        last = np.ones(n, dtype=bool)
        last[:-1] = key[1:] != key[:-1]
        order = order[last]
        names = [data[x:y].decode("utf-8", "replace") for x, y in zip(na[order].tolist(), nb[order].tolist())]
        return (key[last], names, None), (key[last], starts[order], ends[order])

    def count(self, pos: int, end: int) -> tuple[int, int]:
        """(events in the run at pos, where the run ends)."""
        n = self._check(self.lib.tbio_xd_count_events(self.buf, pos, end, self._stop), "line events")
        return n, int(self._stop[0])

    def events(self, pos: int, end: int, n: int, at: int, out: dict[str, np.ndarray],
               stat_col: tuple[np.ndarray, np.ndarray] | None, cols: list[np.ndarray]) -> None:
        """Decode the n events at pos into the columns of ``out`` from row ``at``."""
        ffi = self.ffi
        i64 = "int64_t[]"
        if stat_col is not None and cols and stat_col[1][0] >= 0:
            keys, kcols = stat_col
            nkeys = len(keys)
            kp, cp = self._ptr(i64, keys), self._ptr(i64, kcols)
            colp = ffi.new("int64_t *[]", [self._ptr(i64, c, at) for c in cols])
        else:
            nkeys, kp, cp, colp = 0, ffi.NULL, ffi.NULL, ffi.NULL
        self._check(self.lib.tbio_xd_events(
            self.buf, pos, end, n, self._ptr(i64, out["pos"], at), self._ptr("int32_t[]", out["len"], at),
            self._ptr(i64, out["mid"], at), self._ptr(i64, out["off"], at), self._ptr(i64, out["dur"], at),
            nkeys, kp, cp, len(cols), colp), "line events")


def decode_plane_native(native: NativeScan, data, index: int, meta: XPlane,
                         line_ranges: list[tuple[int, int]],
                         stats_for: Callable[[str, XPlane, LineInfo], bool],
                         stat_cols: Callable[[], tuple[np.ndarray, np.ndarray] | None],
                         stat_names: Sequence[str], stat_defaults: Sequence[int]) -> PlaneData:
    """_decode_plane with native/codec/xdecode.c: count the events of every line first, then
    decode them straight into the plane's columns (no per-run pieces to concatenate)."""
    heads: list[dict[str, Any]] = []
    runs: list[tuple[int, int, int, bool]] = []  # (pos, end, n, want stats) in file order
    counts: list[int] = []
    for li, (a, b) in enumerate(line_ranges):
        probe = LineInfo(index=li, id=0, display_id=0, name="", display_name="", timestamp_ns=0,
                         first=0, count=0)
        want: list[bool | None] = [None]
        got = [0]

        def on_events(head, pos, lend):
            if want[0] is None:
                probe.name, probe.display_name = head["name"], head["display_name"]
                want[0] = bool(stat_names) and bool(stats_for(meta.name, meta, probe))
            n, stop = native.count(pos, lend)
            runs.append((pos, lend, n, bool(want[0])))
            got[0] += n
            return stop

        heads.append(walk_line(data, None, a, b, on_events))
        counts.append(got[0])
    total = sum(counts)
    out = {"pos": np.empty(total, np.int64), "len": np.empty(total, np.int32), "mid": np.empty(total, np.int64),
           "off": np.empty(total, np.int64), "dur": np.empty(total, np.int64)}
    cols = [np.full(total, d, dtype=np.int64) for d in stat_defaults]
    at = 0
    for pos, lend, n, want in runs:
        if n:
            native.events(pos, lend, n, at, out, stat_cols() if want else None, cols)
        at += n
    lines: list[LineInfo] = []
    first = 0
    start_ps = out["off"]
    for li, (head, count) in enumerate(zip(heads, counts)):
        lines.append(LineInfo(index=li, first=first, count=count, **head))
        if count and head["timestamp_ns"]:
            start_ps[first:first + count] += np.int64(head["timestamp_ns"] * 1000)
        first += count
    return PlaneData(index=index, id=int(meta.id), name=meta.name, meta=meta, lines=lines,
                     metadata_id=out["mid"], start_ps=start_ps, duration_ps=out["dur"],
                     file_pos=out["pos"], file_len=out["len"], stats=dict(zip(stat_names, cols)))
