"""The columnar reader's tables: a space's planes, each plane's lines and events as numpy
columns."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

import numpy as np

from tb_iotrace.store.xplane import XPlane
from tb_iotrace.store.xplane.lenient import parse_lenient
from tb_iotrace.store.xplane.read_xspace import XPlaneError
from tb_iotrace.store.xplane.wire import varint_bytes

# Where a plane's event metadata lie in its file: (path, ids ascending, start, end of each
# map entry's bytes).
MetadataFile = tuple[str, np.ndarray, np.ndarray, np.ndarray]


def read_event_metadata(md_file: MetadataFile, ids: Iterable[int] | None = None) -> Any:
    """The event metadata map (``XPlane.event_metadata``) of the entries of ``ids`` (all when
    None) read back from the file: a plane decoded with ``lazy_event_metadata`` keeps where
    they are, not the parsed messages."""
    path, keys, starts, ends = md_file
    if ids is None:
        sel = np.arange(len(keys))
    else:
        want = np.array(sorted(set(int(i) for i in ids)), dtype=np.int64)
        at = np.minimum(np.searchsorted(keys, want), max(len(keys) - 1, 0))
        sel = at[keys[at] == want] if len(keys) else at[:0]
    entry_tag = b"\x22"  # field 4 (event_metadata), length-delimited
    parts = []
    with open(path, "rb") as fh:
        for a, b in zip(starts[sel].tolist(), ends[sel].tolist()):
            fh.seek(a)
            raw = fh.read(b - a)
            parts.append(entry_tag + varint_bytes(len(raw)) + raw)
    plane = XPlane()
    try:
        parse_lenient(plane, b"".join(parts))
    except Exception as exc:  # DecodeError: the file changed since it was decoded, or is corrupt
        raise XPlaneError(path, f"event metadata unreadable ({type(exc).__name__}: {exc}); "
                                "the file may have changed since it was read") from None
    return plane.event_metadata


@dataclass
class LineInfo:
    """One XLine: header fields and the slice ``[first, first+count)`` of its plane's event
    arrays (events in file order)."""

    index: int
    id: int
    display_id: int
    name: str
    display_name: str
    timestamp_ns: int
    first: int
    count: int

    @property
    def label(self) -> str:
        return self.display_name or self.name


@dataclass
class PlaneData:
    """One XPlane, columnar. ``meta`` is an XPlane with everything but the lines."""

    index: int
    id: int
    name: str
    meta: XPlane
    lines: list[LineInfo]
    metadata_id: np.ndarray  # int64 per event
    start_ps: np.ndarray  # int64 per event: timestamp_ns*1000 + offset_ps
    duration_ps: np.ndarray  # int64
    file_pos: np.ndarray  # int64: where the event's bytes start in the file
    file_len: np.ndarray  # int32: how many bytes
    stats: dict[str, np.ndarray] = field(default_factory=dict)  # stat name -> int64 column
    # set when decoded with lazy_event_metadata: meta has no event metadata, read them from here
    md_file: MetadataFile | None = None
    # (ids ascending, name, display name or name) of the event metadata: see metadata_table;
    # the display names may be None (the native decoder leaves them to metadata_table)
    md_table: tuple[np.ndarray, list[str], list[str] | None] | None = None

    @property
    def num_events(self) -> int:
        return len(self.metadata_id)

    def metadata_table(self) -> tuple[np.ndarray, list[str], list[str]]:
        """(event metadata ids ascending, name of each, display name or else name of each):
        ids and names read from the file by the native decoder (iterating
        ``meta.event_metadata``, a protobuf map of ~50,000 messages for a million I/O events,
        costs ~0.1 s), from ``meta`` otherwise; display names from ``meta`` on first use."""
        if self.md_table is None:
            items = sorted(self.meta.event_metadata.items())
            self.md_table = (np.array([k for k, _ in items], dtype=np.int64), [md.name for _, md in items],
                             [md.display_name or md.name for _, md in items])
        ids, names, labels = self.md_table
        if labels is None:
            em = self.event_metadata()
            labels = [em[k].display_name or nm for k, nm in zip(ids.tolist(), names)]
            self.md_table = (ids, names, labels)
        return ids, names, labels

    def metadata_names(self) -> tuple[np.ndarray, list[str]]:
        """(event metadata ids ascending, name of each): metadata_table without the display
        names."""
        if self.md_table is None:
            return self.metadata_table()[:2]
        return self.md_table[0], self.md_table[1]

    def event_names(self) -> dict[int, str]:
        return {k: (md.display_name or md.name) for k, md in self.event_metadata().items()}

    def event_metadata(self) -> Any:
        """``meta.event_metadata``, read back from the file when decoded lazily."""
        return self.meta.event_metadata if self.md_file is None else read_event_metadata(self.md_file)

    def full_meta(self) -> XPlane:
        """``meta`` with its event metadata (a copy read back from the file when decoded
        lazily)."""
        if self.md_file is None:
            return self.meta
        out = XPlane()
        out.CopyFrom(self.meta)
        for k, md in read_event_metadata(self.md_file).items():
            out.event_metadata[k].CopyFrom(md)
        return out


@dataclass
class SpaceData:
    path: str
    size: int
    planes: list[PlaneData]
    hostnames: list[str]
    errors: list[str]
    warnings: list[str]
