"""The I/O calls of a capture file as columns: the one decoder of the I/O lines' events of a
file decoded column-wise (:mod:`tb_iotrace.model.columnar`), used by the tab
(:mod:`tb_iotrace.model.tab.of_xplane`) and the analysis (:mod:`tb_iotrace.analysis.slim_xspace`).

What each event's stats mean, and what a left-out one stands for, is the one rule of
:mod:`tb_iotrace.store.xplane.io_fields` (its docstring has the "absent" convention); the
protobuf reader of a space in memory (:func:`tb_iotrace.store.xplane.read_io_data`) applies
the same rule, so the two agree call for call (``tests/unit/test_io_events.py``).

Which lines, in which order (``recorded_only``):

- False (the tab): every ``I/O`` line with events of the planes given, its tid from the
  ``tb_iotrace.io`` record, else from the line's name ``(tid N)``, else minus the line id;
  lines by tid (stably), each line's events by start;
- True (the analysis, as ``read_io_data``): the lines the record lists, found by name, in its
  order, events in file order; a listed line that is not there is left out.

The decoder must be given the planes with their event stats decoded (``decode_xspace`` with
``stat_names=EVENT_STATS, stat_defaults=STAT_DEFAULTS`` for the I/O lines); it takes each stat
column out of its plane once copied (``PlaneData.stats``), so the peak stays near one copy of
the events.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from tb_iotrace.model.columnar.planes import LineInfo, PlaneData
from tb_iotrace.store.xplane.io_fields import IoColumns, resolve_io_columns
from tb_iotrace.store.xplane.read_io import recorded_lines
from tb_iotrace.store.xplane.schema import LINE_PREFIX

_TID_RE = re.compile(r"\(tid (-?\d+)\)\s*$")


@dataclass
class IoLineRows:
    """Where one I/O line's calls are in :class:`IoEvents`, and its clocks."""

    tid: int
    first: int
    count: int
    timestamp_ns: int          # the XLine's timestamp_ns (start_ps counts from it)
    t0_ns: int | None          # the record's first start of the line, epoch ns (None: not listed)


@dataclass
class IoEvents:
    """The I/O calls of a capture, one row per call: their values (:class:`IoColumns`:
    call, path, offset, fd, bytes requested and returned, errno), the thread, and the times
    as the file has them (``start_ps``: ps on the file's clock, ``duration_ps``).
    :meth:`file_ns` and :meth:`epoch_ns` give start and end in ns."""

    calls: IoColumns
    tid: np.ndarray            # int64
    start_ps: np.ndarray       # int64, the file's clock
    duration_ps: np.ndarray    # int64
    lines: list[IoLineRows]

    def __len__(self) -> int:
        return len(self.tid)

    def file_ns(self) -> tuple[np.ndarray, np.ndarray]:
        """(start, end) in ns on the file's clock (since the profile start in a saved
        capture: host, device and I/O events line up)."""
        return self.start_ps // 1000, (self.start_ps + self.duration_ps) // 1000

    def epoch_ns(self) -> tuple[np.ndarray, np.ndarray]:
        """(start, end) in absolute epoch ns, as ``read_io_data`` gives them: each line's
        first event at the record's ``t0_ns`` of the line, the others at their offsets
        from it (ValueError for a line the record does not list)."""
        start, end = [], []
        for ln in self.lines:
            if ln.t0_ns is None:
                raise ValueError(f"I/O line of tid {ln.tid} is not in the tb_iotrace.io record")
            sl = slice(ln.first, ln.first + ln.count)
            rel = (self.start_ps[sl] - np.int64(ln.timestamp_ns * 1000)) // 1000
            s0 = rel - (rel.min() if ln.count else 0) + ln.t0_ns
            start.append(s0)
            end.append(s0 + self.duration_ps[sl] // 1000)
        if not start:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        return np.concatenate(start), np.concatenate(end)


def _all_lines(planes: Sequence[PlaneData], info: dict[str, Any]) -> list[tuple[PlaneData, LineInfo, int, int | None]]:
    by_name = {li.get("name"): li for li in info.get("lines", [])}
    out = []
    for pl in planes:
        for ln in pl.lines:
            if ln.count == 0 or not ln.name.startswith(LINE_PREFIX):
                continue
            li = by_name.get(ln.name)
            if li is not None and "tid" in li:
                tid = int(li["tid"])
            else:
                m = _TID_RE.search(ln.name)
                tid = int(m.group(1)) if m else -ln.id
            t0 = int(li["t0_ns"]) if li is not None and "t0_ns" in li else None
            out.append((pl, ln, tid, t0))
    out.sort(key=lambda part: part[2])
    return out


def io_events(planes: Sequence[PlaneData], info: dict[str, Any] | None, *,
              recorded_only: bool) -> IoEvents | None:
    """The I/O calls of ``planes`` (None when they have no I/O line with events, or, with
    ``recorded_only``, none the record lists); ``info`` is the ``tb_iotrace.io`` record
    (None: the tab shows I/O lines of a capture whose record is missing). The module
    docstring says which lines in which order."""
    info = info or {}
    if recorded_only:
        parts = [(pl, ln, tid, t0) for pl in planes[:1]
                 for tid, t0, ln in recorded_lines(pl.lines, info)]
    else:
        parts = _all_lines(planes, info)
    if not parts:
        return None
    plane = parts[0][0]
    slices = [(pl, slice(ln.first, ln.first + ln.count)) for pl, ln, _, _ in parts]
    orders: list[np.ndarray | None] = []
    for pl, sl in slices:
        s = pl.start_ps[sl]
        unsorted = not recorded_only and len(s) > 1 and bool(np.any(s[1:] < s[:-1]))
        orders.append(np.argsort(s, kind="stable") if unsorted else None)
    # The usual layout (tb_iotrace writes one line per thread, by tid, events in time order)
    # makes every column one contiguous run of its plane column: a view, no copy.
    contiguous = (all(o is None for o in orders) and all(pl is plane for pl, _ in slices)
                  and all(a[1].stop == b[1].start for a, b in zip(slices, slices[1:])))

    def column(get: Callable[[PlaneData], np.ndarray]) -> np.ndarray:
        if contiguous:
            return get(plane)[slices[0][1].start:slices[-1][1].stop]
        pieces = []
        for (pl, sl), order in zip(slices, orders):
            a = get(pl)[sl]
            pieces.append(a if order is None else a[order])
        return np.concatenate(pieces)

    def stat(name: str) -> np.ndarray:
        col = column(lambda pl: pl.stats[name])
        for pl, _ in slices:
            pl.stats.pop(name, None)
        return col

    start_ps = column(lambda pl: pl.start_ps)
    duration_ps = column(lambda pl: pl.duration_ps)
    tid = np.concatenate([np.full(sl.stop - sl.start, t, dtype=np.int64)
                          for (_, sl), (_, _, t, _) in zip(slices, parts)])
    md_ids, md_names = plane.metadata_names()
    calls = resolve_io_columns(column(lambda pl: pl.metadata_id), stat, md_ids, md_names,
                               plane.meta.stat_metadata, info)
    lines, first = [], 0
    for pl, ln, t, t0 in parts:
        lines.append(IoLineRows(tid=t, first=first, count=ln.count, timestamp_ns=ln.timestamp_ns, t0_ns=t0))
        first += ln.count
    return IoEvents(calls=calls, tid=tid, start_ps=start_ps, duration_ps=duration_ps, lines=lines)


__all__ = ["IoEvents", "IoLineRows", "io_events"]
