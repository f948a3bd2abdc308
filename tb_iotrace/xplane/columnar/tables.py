"""The columnar reader's tables: a space's planes, each plane's lines and events as numpy
columns."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._proto import XPlane


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
            em = self.meta.event_metadata
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
        return {k: (md.display_name or md.name) for k, md in self.meta.event_metadata.items()}


@dataclass
class SpaceData:
    path: str
    size: int
    planes: list[PlaneData]
    hostnames: list[str]
    errors: list[str]
    warnings: list[str]
