"""Adding an I/O trace to a saved capture ``<host>.xplane.pb`` in place (:func:`merge_into_capture`):
the file is rewritten atomically with the encoded I/O lines appended to its host plane's bytes,
and xprof's caches beside it are removed."""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tb_iotrace.base.atomic import atomic_write
from tb_iotrace.store.xplane import wire
from tb_iotrace.store.xplane._proto import XSpace
from tb_iotrace.store.xplane.event_rows import EventBlock
from tb_iotrace.store.xplane.encode import apply_metadata, encode_trace, host_plane, remove_io_data, start_clock
from tb_iotrace.store.xplane.iotrace import IoTrace
from tb_iotrace.store.xplane.read_xspace import HOST_PLANE, load_xspace
from tb_iotrace.store.xplane.schema import CACHE_SUFFIXES, DEFAULT_MAX_EVENTS, XPLANE_SUFFIX


@dataclass
class MergeResult:
    path: str
    num_events: int  # events written
    dropped: int  # trace.dropped + capped
    capped: int  # dropped by the max_events cap
    profile_start_ns: int
    lines: list[dict[str, Any]] = field(default_factory=list)
    caches_removed: list[str] = field(default_factory=list)
    replaced_previous: bool = False
    seconds: float = 0.0


def cache_paths(xplane_path: str | os.PathLike) -> list[Path]:
    """xprof's cache files for ``<host>.xplane.pb`` (they may not exist)."""
    p = Path(xplane_path)
    name = p.name
    host = name[: -len(XPLANE_SUFFIX)] if name.endswith(XPLANE_SUFFIX) else p.stem
    return [p.with_name(host + suffix) for suffix in CACHE_SUFFIXES]


def merge_into_capture(xplane_path: str | os.PathLike, trace: IoTrace, *,
                       start_ns: int | None = None,
                       max_events: int = DEFAULT_MAX_EVENTS) -> MergeResult:
    """Add ``trace`` to a saved capture ``<host>.xplane.pb`` (see the module docstring),
    replacing I/O data merged before; rewrite the file atomically (temp file + rename,
    same permissions) and delete xprof's ``<host>*.SSTABLE`` caches beside it so the trace
    viewer rebuilds them. Raises :class:`XPlaneError` if the file cannot be read and
    ValueError if the capture has no profile start and ``start_ns`` is not given."""
    t0 = time.perf_counter()
    path = Path(xplane_path)
    space = load_xspace(path)
    start = start_clock(space, start_ns, str(path))
    replaced = remove_io_data(space)
    host, _ = host_plane(space)
    enc = encode_trace(trace, host, start, max_events)
    apply_metadata(host, enc)

    # Serialize: the space without planes, then each plane as an XSpace.planes entry, with
    # the encoded I/O lines appended to the host plane's bytes (concatenation == merge).
    rest = XSpace()
    rest.errors.extend(space.errors)
    rest.warnings.extend(space.warnings)
    rest.hostnames.extend(space.hostnames)
    chunks = [rest.SerializeToString()]
    host_index = next(i for i, p in enumerate(space.planes) if p.name == HOST_PLANE)
    for i, plane in enumerate(space.planes):
        raw = plane.SerializeToString()
        extra = enc.lines_chunks if i == host_index else []
        size = len(raw) + sum(len(c) for c in extra)
        chunks.append(wire.tag(1, wire.WT_LEN) + wire.varint_bytes(size))
        chunks.append(raw)
        chunks.extend(extra)
    atomic_write(path, lambda fh: _write_chunks(fh, chunks), fsync=True)

    removed = []
    for cache in cache_paths(path):
        try:
            cache.unlink()
            removed.append(str(cache))
        except FileNotFoundError:
            pass
    info = enc.info
    return MergeResult(path=str(path), num_events=enc.num_events, dropped=info["dropped"],
                       capped=info["capped"], profile_start_ns=start, lines=info["lines"],
                       caches_removed=removed, replaced_previous=replaced,
                       seconds=time.perf_counter() - t0)


def _write_chunks(fh, chunks: list) -> None:
    for chunk in chunks:
        fh.write(chunk.tobytes() if isinstance(chunk, EventBlock) else chunk)
