"""What the shim records, set before or between recordings: the path prefixes left out (or
traced), the trace rows kept per capture and the most files tracked at once. Read from and
written to the shim itself (native/registry.c, native/session.c), never kept here."""
from __future__ import annotations

import os
from collections.abc import Iterable

from tb_iotrace.recording.ffi import NativeError, native

__all__ = ["MAX_SETTING", "excludes", "set_filters", "set_max_files", "set_trace_cap"]


def set_filters(include: Iterable[str] | None = None, exclude: Iterable[str] | None = None) -> None:
    """Set traced path prefixes.  A path is traced unless it starts with an
    exclude prefix and no longer include prefix.  The default excludes follow Darshan
    (/etc/ /dev/ /usr/ ..., see :func:`excludes`); ``include=["/dev/shm/"]`` traces tmpfs
    benchmarks."""
    ffi, lib = native()
    # os.fsencode: a prefix's non-UTF-8 bytes (as excludes() decodes them) go back as they were
    inc = os.fsencode("\n".join(include)) if include is not None else ffi.NULL
    exc = os.fsencode("\n".join(exclude)) if exclude is not None else ffi.NULL
    if lib.tbio_set_filters(inc, exc) != 0:
        raise NativeError("could not set filters: out of memory")


def excludes() -> list[str]:
    """The path prefixes left out now: the shim's defaults (native/registry.c, Darshan's
    list) until set_filters() replaces them. Read from the shim, never typed here."""
    ffi, lib = native()
    return [p for p in os.fsdecode(ffi.string(lib.tbio_get_excludes())).split("\n") if p]


MAX_SETTING = 2**63 - 1   # the shim keeps both settings in 64 bits (it bounds max files further itself)


def _in_range(name: str, value: int, low: int) -> int:
    """``value`` as the shim takes it, or ValueError naming ``name`` when outside [low, MAX_SETTING]."""
    if value < low:
        raise ValueError(f"{name} must be >= {low}")
    if value > MAX_SETTING:
        raise ValueError(f"{name} must be <= {MAX_SETTING}")
    return int(value)


def set_trace_cap(max_events: int) -> None:
    """Trace rows kept per capture (default 1,000,000, about 56 MB); counters stay exact past it."""
    native()[1].tbio_set_trace_cap(_in_range("max_events", max_events, 0))


def set_max_files(n: int) -> None:
    """Most distinct files (path, module) the captures running at once track
    (default 4,194,304; each costs about 1.8 KB per capture that touched it, see
    docs/capture.md).  A file past it is not tracked but counted: ``Recording.untracked``.
    Takes effect the next time recording starts with no capture running."""
    native()[1].tbio_set_max_files(_in_range("n", n, 1))
