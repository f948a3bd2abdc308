"""Reading XSpace files (``<host>.xplane.pb``) and columnar views of their planes.

Clock conventions (docs/internals.md, "Clock conventions"): an event starts at
``line.timestamp_ns * 1000 + event.offset_ps`` picoseconds. Saved captures are normalized to
the profile start, so that sum is "ps since profile start"; the ``Task Environment`` plane's
``profile_start_time`` stat (CLOCK_REALTIME epoch ns) turns it into absolute time:
``absolute_ns = profile_start_time + start_ps / 1000``. Older captures lack that plane.

Nothing here imports TensorFlow; messages come from :mod:`tb_iotrace.store.xplane._proto`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Iterable

import numpy as np

from tb_iotrace.store.xplane import wire
from tb_iotrace.store.xplane._proto import XPlane, XSpace
from tb_iotrace.store.xplane.lenient import parse_lenient

TASK_ENV_PLANE = "Task Environment"
HOST_PLANE = "/host:CPU"
GPU_PLANE_PREFIX = "/device:GPU:"
CUSTOM_PLANE_PREFIX = "/device:CUSTOM:"

_INT64_MAX = (1 << 63) - 1
_XSPACE_FIELDS = {1, 2, 3, 4}  # planes, errors, warnings, hostnames: all length-delimited


class XPlaneError(Exception):
    """An XSpace file could not be read: missing, empty, truncated or not an XSpace."""

    def __init__(self, path: Any, reason: str):
        self.path = str(path)
        self.reason = reason
        super().__init__(f"{self.path}: {reason}")


# --------------------------------------------------------------------------- loading


def parse_xspace(data: bytes, path: Any = "<bytes>") -> XSpace:
    """Parse serialized XSpace bytes; raise XPlaneError (never DecodeError) when they are
    empty, truncated or corrupt.

    Protobuf has no checksum: a file cut exactly between two top-level planes still parses
    (as an XSpace with fewer planes). Every other cut, and garbage, is reported.
    """
    if not data:
        raise XPlaneError(path, "file is empty (0 bytes): not an XSpace")
    try:
        for number, wire_type, _, _ in wire.top_level_fields(data):
            if number in _XSPACE_FIELDS and wire_type != wire.WT_LEN:
                raise ValueError(f"field {number} has wire type {wire_type}, expected 2")
    except ValueError as exc:
        raise XPlaneError(path, f"truncated or corrupt XSpace ({exc})") from None
    space = XSpace()
    try:
        parse_lenient(space, data)   # names that are not UTF-8 read with U+FFFD
    except Exception as exc:  # google.protobuf.message.DecodeError and runtime variants
        raise XPlaneError(path, f"truncated or corrupt XSpace ({type(exc).__name__}: {exc})") from None
    if not space.planes and not space.hostnames and not space.errors and not space.warnings:
        raise XPlaneError(path, "not an XSpace: no planes, hostnames, errors or warnings")
    return space


def open_capture(path: str) -> BinaryIO:
    """Open an ``.xplane.pb`` for reading; a missing, directory or unreadable path is an
    :class:`XPlaneError` naming it (the object and the columnar readers say the same)."""
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise XPlaneError(path, "no such file") from None
    except IsADirectoryError:
        raise XPlaneError(path, "is a directory, not an .xplane.pb file") from None
    except OSError as exc:
        raise XPlaneError(path, f"cannot read: {exc.strerror or exc}") from None


def load_xspace(path: str | os.PathLike) -> XSpace:
    """Read ``<host>.xplane.pb``; raise :class:`XPlaneError` for a missing, unreadable,
    empty, truncated or corrupt file."""
    path = os.fspath(path)
    with open_capture(path) as fh:
        try:
            data = fh.read()
        except OSError as exc:
            raise XPlaneError(path, f"cannot read: {exc.strerror or exc}") from None
    return parse_xspace(data, path)


# --------------------------------------------------------------------------- planes and clocks


def find_planes(space: XSpace, prefix: str) -> list[XPlane]:
    """Planes whose name starts with ``prefix``, in file order."""
    return [p for p in space.planes if p.name.startswith(prefix)]


def find_plane(space: XSpace, name: str) -> XPlane | None:
    """The first plane named exactly ``name``, or None."""
    for p in space.planes:
        if p.name == name:
            return p
    return None


def _task_env_stat(space: XSpace, stat_name: str) -> int | None:
    plane = find_plane(space, TASK_ENV_PLANE)
    if plane is None:
        return None
    for stat in plane.stats:
        md = plane.stat_metadata.get(stat.metadata_id)
        if md is not None and md.name == stat_name:
            value = stat_value(stat, plane)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return int(value)
    return None


def profile_start_ns(space: XSpace) -> int | None:
    """``profile_start_time`` (CLOCK_REALTIME epoch ns) of the ``Task Environment`` plane, or
    None for captures without it."""
    return _task_env_stat(space, "profile_start_time")


def profile_stop_ns(space: XSpace) -> int | None:
    """``profile_stop_time`` of the ``Task Environment`` plane, or None."""
    return _task_env_stat(space, "profile_stop_time")


def absolute_ns(start_ps, profile_start: int):
    """Profile-relative picoseconds (as in :attr:`LineColumns.start_ps`) to absolute epoch ns.

    Works on Python ints and numpy arrays (returns int64, rounding down to whole ns)."""
    if isinstance(start_ps, np.ndarray):
        return np.floor_divide(start_ps, 1000) + np.int64(profile_start)
    return int(profile_start) + int(start_ps) // 1000


def relative_ps(abs_ns, profile_start: int):
    """Absolute epoch ns to profile-relative picoseconds (inverse of :func:`absolute_ns`)."""
    if isinstance(abs_ns, np.ndarray):
        return (abs_ns.astype(np.int64) - np.int64(profile_start)) * np.int64(1000)
    return (int(abs_ns) - int(profile_start)) * 1000


# --------------------------------------------------------------------------- stats


def stat_value(stat, plane: XPlane):
    """Decode one XStat: int / float / str / bytes; a ``ref_value`` becomes the interned
    string (the name of the XStatMetadata it points at). An unset value is None."""
    kind = stat.WhichOneof("value")
    if kind is None:
        return None
    if kind == "ref_value":
        md = plane.stat_metadata.get(stat.ref_value)
        return md.name if md is not None else None
    return getattr(stat, kind)


def stat_name(plane: XPlane, metadata_id: int) -> str:
    md = plane.stat_metadata.get(metadata_id)
    return md.name if md is not None else ""


def stats_dict(stats: Iterable, plane: XPlane) -> dict[str, Any]:
    """``{stat name: decoded value}`` for a repeated XStat field (event, metadata or plane)."""
    out: dict[str, Any] = {}
    for stat in stats:
        out[stat_name(plane, stat.metadata_id)] = stat_value(stat, plane)
    return out


# --------------------------------------------------------------------------- columnar view


@dataclass
class LineColumns:
    """One XLine with its events as numpy arrays (int64), in file order.

    ``start_ps`` is ``timestamp_ns * 1000 + offset_ps`` (ps since the profile start in saved
    captures); aggregated events (``num_occurrences`` instead of ``offset_ps``) get offset 0.
    ``index`` is this line's position in ``plane.lines``; ``line`` the XLine itself (for
    event stats: ``line.events[i].stats``).
    """

    index: int
    id: int
    display_id: int
    name: str
    display_name: str
    timestamp_ns: int
    metadata_id: np.ndarray
    start_ps: np.ndarray
    duration_ps: np.ndarray
    line: Any = field(repr=False, default=None)

    def __len__(self) -> int:
        return len(self.metadata_id)

    @property
    def label(self) -> str:
        """What the trace viewer shows: display_name if set, else name."""
        return self.display_name or self.name

    @property
    def end_ps(self) -> np.ndarray:
        return self.start_ps + self.duration_ps


def line_columns(line, index: int = 0) -> LineColumns:
    """Columnar view of one XLine."""
    events = line.events
    n = len(events)
    mid = np.fromiter((e.metadata_id for e in events), dtype=np.int64, count=n)
    off = np.fromiter((e.offset_ps for e in events), dtype=np.int64, count=n)
    dur = np.fromiter((e.duration_ps for e in events), dtype=np.int64, count=n)
    base = int(line.timestamp_ns) * 1000
    if n:
        lo, hi = base + int(off.min()), base + int(off.max()) + int(dur.max())
        if lo < -_INT64_MAX or hi > _INT64_MAX:
            raise ValueError(
                f"line {line.name!r}: timestamps do not fit in int64 picoseconds "
                "(absolute, not normalized to the profile start?)")
    start = off + np.int64(base) if base else off
    return LineColumns(index=index, id=line.id, display_id=line.display_id, name=line.name,
                       display_name=line.display_name, timestamp_ns=line.timestamp_ns,
                       metadata_id=mid, start_ps=start, duration_ps=dur, line=line)


class PlaneColumns:
    """Columnar view of one XPlane: lines with numpy event arrays, names via metadata.

    Lines are converted lazily on first access of :attr:`lines` (or one at a time with
    :meth:`line`), then cached.
    """

    def __init__(self, plane: XPlane):
        self.plane = plane
        self.id = plane.id
        self.name = plane.name
        self._lines: list[LineColumns | None] = [None] * len(plane.lines)
        self._md_ids: np.ndarray | None = None
        self._md_names: np.ndarray | None = None
        self._md_display: np.ndarray | None = None

    def __repr__(self) -> str:
        return f"PlaneColumns(id={self.id}, name={self.name!r}, lines={len(self._lines)})"

    @property
    def num_lines(self) -> int:
        return len(self._lines)

    def line(self, index: int) -> LineColumns:
        cached = self._lines[index]
        if cached is None:
            cached = self._lines[index] = line_columns(self.plane.lines[index], index)
        return cached

    @property
    def lines(self) -> list[LineColumns]:
        return [self.line(i) for i in range(len(self._lines))]

    def line_by_name(self, name: str) -> LineColumns | None:
        for i, ln in enumerate(self.plane.lines):
            if ln.name == name or ln.display_name == name:
                return self.line(i)
        return None

    def num_events(self) -> int:
        return sum(len(ln.events) for ln in self.plane.lines)

    # -- names
    def _metadata_table(self) -> None:
        if self._md_ids is None:
            items = sorted(self.plane.event_metadata.items())
            self._md_ids = np.array([k for k, _ in items], dtype=np.int64)
            self._md_names = np.array([v.name for _, v in items] + [""], dtype=object)
            self._md_display = np.array([v.display_name or v.name for _, v in items] + [""], dtype=object)

    def _lookup(self, metadata_ids: np.ndarray, table: np.ndarray) -> np.ndarray:
        ids = self._md_ids
        pos = np.searchsorted(ids, metadata_ids)
        pos = np.minimum(pos, len(ids))
        found = np.zeros(len(metadata_ids), dtype=bool)
        in_range = pos < len(ids)
        found[in_range] = ids[pos[in_range]] == metadata_ids[in_range]
        return table[np.where(found, pos, len(ids))]

    def event_names(self, line: LineColumns | np.ndarray) -> np.ndarray:
        """Event names (object array of str) for a line or an array of metadata ids;
        unknown ids give ""."""
        self._metadata_table()
        ids = line.metadata_id if isinstance(line, LineColumns) else np.asarray(line, dtype=np.int64)
        return self._lookup(ids, self._md_names)

    def event_display_names(self, line: LineColumns | np.ndarray) -> np.ndarray:
        """Like :meth:`event_names` but display_name where set (what the viewer shows)."""
        self._metadata_table()
        ids = line.metadata_id if isinstance(line, LineColumns) else np.asarray(line, dtype=np.int64)
        return self._lookup(ids, self._md_display)

    def event_name(self, metadata_id: int) -> str:
        md = self.plane.event_metadata.get(metadata_id)
        return md.name if md is not None else ""

    # -- stats
    def stat_name(self, metadata_id: int) -> str:
        return stat_name(self.plane, metadata_id)

    def stat_value(self, stat):
        return stat_value(stat, self.plane)

    def event_stats(self, line: LineColumns | int, event_index: int,
                    with_metadata: bool = True) -> dict[str, Any]:
        """Decoded stats of one event; with_metadata also merges in the stats of its
        XEventMetadata (the event's own stats win)."""
        xline = self.plane.lines[line if isinstance(line, int) else line.index]
        event = xline.events[event_index]
        out: dict[str, Any] = {}
        if with_metadata:
            md = self.plane.event_metadata.get(event.metadata_id)
            if md is not None:
                out.update(stats_dict(md.stats, self.plane))
        out.update(stats_dict(event.stats, self.plane))
        return out

    def plane_stats(self) -> dict[str, Any]:
        return stats_dict(self.plane.stats, self.plane)


def columns(plane: XPlane) -> PlaneColumns:
    """Columnar view of a plane (see :class:`PlaneColumns`)."""
    return PlaneColumns(plane)


__all__ = [
    "CUSTOM_PLANE_PREFIX",
    "GPU_PLANE_PREFIX",
    "HOST_PLANE",
    "LineColumns",
    "PlaneColumns",
    "TASK_ENV_PLANE",
    "XPlaneError",
    "absolute_ns",
    "columns",
    "find_plane",
    "find_planes",
    "line_columns",
    "load_xspace",
    "parse_xspace",
    "profile_start_ns",
    "profile_stop_ns",
    "relative_ps",
    "stat_name",
    "stat_value",
    "stats_dict",
]
