"""One process of a PyTorch (Kineto) trace written by ``tb_iotrace.torch.trace_handler`` as a
:class:`tb_iotrace.model.sources.Source`: the trace converted to an XSpace once per file (its
processes share it), each process's calls and counters taken from it."""
from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from tb_iotrace.model.source_kinds import KINETO, SourceError
from tb_iotrace.model.sources import Source, count_field, object_rows
from tb_iotrace.store.kineto import KinetoTraceError

__all__ = ["TorchTraceSource"]


@functools.lru_cache(maxsize=2)
def _converted(path: str, size: int, mtime_ns: int) -> Any:
    from tb_iotrace.store.kineto_xspace import read_xspace

    return read_xspace(path)


@functools.lru_cache(maxsize=2)
def _record(path: str, size: int, mtime_ns: int) -> tuple[Any, dict[str, Any]]:
    """The converted trace's I/O calls (every process's) and its ``tb_iotrace`` record's
    ``kineto`` part, parsed once for all the file's processes (read only: each process takes
    its own copy of its calls)."""
    from tb_iotrace.store.kineto_xspace import KINETO_KEY
    from tb_iotrace.store.xplane import read_io_data, read_io_info

    space = _converted(path, size, mtime_ns)
    kin = (read_io_info(space) or {}).get(KINETO_KEY)
    return read_io_data(space), kin if isinstance(kin, dict) else {}


def _cached(path: str, of: Any) -> Any:
    """``of(path, size, mtime_ns)``: a Kineto trace's conversion or its parts, kept per file
    version; a missing or unreadable file is a SourceError."""
    try:
        st = os.stat(path)
        return of(path, st.st_size, st.st_mtime_ns)
    except KinetoTraceError as exc:
        raise SourceError(str(exc)) from None
    except OSError as exc:
        raise SourceError(f"{path}: cannot read: {exc.strerror or exc}") from None


def _kineto_space(path: str) -> Any:
    """The converted XSpace of a Kineto trace (the last two kept: a file's processes share it)."""
    return _cached(path, _converted)


def _process_trace(path: str, proc: dict[str, Any]) -> Any:
    """One process's part of a converted Kineto trace: its threads' calls, its own counters."""
    tr, info = _cached(path, _record)
    if tr is None:
        return None
    tids = next((p.get("tids") or [] for p in info.get("processes", []) if p.get("pid") == proc.get("pid")), [])
    out = tr.take(np.isin(tr.tid, np.asarray(tids, dtype=np.int64)))
    out.counters = list(proc.get("counters") or [])
    out.dropped = int(proc.get("dropped") or 0)
    out.untracked = proc.get("untracked") if isinstance(proc.get("untracked"), dict) else None
    return out


@dataclass
class TorchTraceSource(Source):
    """One process of a PyTorch (Kineto) trace written by ``tb_iotrace.torch.trace_handler``:
    the main process (whose timeline the trace is) or a DataLoader worker."""

    kind: ClassVar[str] = KINETO
    proc: dict[str, Any] = field(default_factory=dict)    # this process's part of the tb_iotrace record
    _trace: Any = field(default=None, repr=False)
    _loaded: bool = field(default=False, repr=False)

    @property
    def part(self) -> str:
        return f"pid{self.proc.get('pid')}"

    @property
    def is_main(self) -> bool:
        return self.proc.get("role") == "main"

    @property
    def has_timeline(self) -> bool:
        """The main process's: the timeline Kineto recorded is that process's (its workers'
        hosts have their I/O only; the main process's verdict is the job's)."""
        return self.is_main

    def space(self) -> Any:
        """The trace converted to an XSpace (shared by its processes)."""
        return _kineto_space(self.path)

    def io_trace(self) -> Any:
        if not self._loaded:
            self._trace = _process_trace(self.path, self.proc)
            self._loaded = True
        return self._trace

    def files(self) -> Sequence[dict[str, Any]]:
        return list(self.proc.get("counters", []))

    def dropped(self) -> int:
        return count_field(self.proc, "dropped", self.path)

    def untracked(self) -> dict[str, Any] | None:
        u = self.proc.get("untracked")
        return dict(u) if isinstance(u, dict) else None

    def nevents(self) -> int:
        return int(self.proc.get("num_events", 0))

    def objects(self) -> list[dict[str, Any]]:
        """This process's own requests (the main process's trace holds its workers' too)."""
        return object_rows(self.proc.get("objects"), self.path)

    def objects_left_out(self) -> int:
        from tb_iotrace.store.objcolumns import left_out

        return left_out(self.proc.get("objects"))

    def process(self) -> dict[str, Any] | None:
        return {k: self.proc.get(k) for k in ("pid", "role", "start_ns", "end_ns", "rank")}

    def analysis_input(self) -> tuple[Any, Any] | None:
        """The main process's: the whole trace (its workers' I/O joined to its loop); a worker's
        host has none (the main process's verdict is the job's)."""
        return (self.space(), None) if self.is_main else None

    def timeline_trace(self) -> Any:
        """The main process's steps count the I/O of every process of the trace (the workers'
        reads are its batches); a worker has no timeline of its own: its I/O."""
        if not self.is_main:
            return self.io_trace()
        from tb_iotrace.store.xplane import read_io_data

        return read_io_data(self.space())

    def process_notes(self) -> list[str]:
        return list(self.notes)

    def profile_bounds(self) -> dict[str, int | None] | None:
        """The main process's: the profile window's start and stop (a worker's host has none)."""
        if not self.is_main:
            return None
        from tb_iotrace.store.xplane import profile_start_ns, profile_stop_ns

        return {"start_ns": profile_start_ns(self.space()), "stop_ns": profile_stop_ns(self.space())}

    def window_origin(self) -> dict[str, Any] | None:
        origin = _cached(self.path, _record)[1].get("window_origin")
        return dict(origin) if isinstance(origin, dict) else None

