"""One source of I/O (one host of one run) and the same tables from every kind of it.

A source is a profile capture (``<host>.xplane.pb``:
:class:`tb_iotrace.model.capture_source.CaptureSource`), a whole-run record of ``tb-iotrace run``
(``<host>.<pid>.json`` and its trace: :class:`tb_iotrace.model.record_source.RecordSource`), or
one process of a PyTorch trace written by ``tb_iotrace.torch.trace_handler``
(:class:`tb_iotrace.model.torch_trace_source.TorchTraceSource`); this module holds what they
share (:class:`Source`, the default of every method).
Each gives the same things: its XSpace when it has a timeline, its I/O calls (an ``IoTrace``
and as columns), its per-file counters (as dicts, and as columns for a record), what it dropped
or could not track, and the facts of its process. The kinds are known here and nowhere above:
the report, the exports and the fleet ask these methods, never the kind. Finding sources under a
path is :func:`tb_iotrace.model.open_source.open_source`, which file is which kind
:mod:`tb_iotrace.model.source_kinds`.

An unreadable source raises :class:`SourceError`, one line naming the file.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from tb_iotrace.model.source_kinds import SourceError
from tb_iotrace.store.filetable import FileTable

def count_field(doc: dict[str, Any], key: str, path: str) -> int:
    """A count in a source's stored document: absent or null is 0; anything but a number makes
    the source unreadable (SourceError naming the file), never a TypeError in a report."""
    v = doc.get(key)
    if v is None:
        return 0
    if isinstance(v, bool) or not isinstance(v, (int, float)) or (isinstance(v, float) and not math.isfinite(v)):
        raise SourceError(f"{path}: {key} is not a count ({v!r:.40})")
    return int(v)


# The columns of a source's I/O calls (absolute epoch ns times), as :meth:`Source.io_columns` gives them.
IO_COLUMNS = ("start_ns", "end_ns", "op", "path", "offset", "requested", "returned", "fd", "errno", "tid")


@dataclass
class Source:
    run: str
    host: str
    path: str
    notes: list[str] = field(default_factory=list)
    shown: str | None = None                # the URL a remote source was fetched from (reports name it)
    kind: ClassVar[str] = ""                # source_kinds' CAPTURE, RECORD or KINETO: a name for reports, never a branch

    @property
    def name(self) -> str:
        """Where the source is, as the user gave it (a URL's object, not its cached copy)."""
        return self.shown or self.path

    @property
    def part(self) -> str:
        """Which part of its file the source is ("" for the whole file)."""
        return ""

    @property
    def has_timeline(self) -> bool:
        """Whether it carries a host/device timeline (its :meth:`space`) over which its steps,
        input wait and findings are computed."""
        return False

    def space(self) -> Any:
        """The XSpace (None for a source without a timeline)."""
        return None

    def io_trace(self) -> Any:
        """Its I/O calls and per-file counters as an IoTrace (None when it holds no calls)."""
        return None

    def io_columns(self) -> tuple[dict[str, np.ndarray], dict[int, str]] | None:
        """Its I/O calls as columns (:data:`IO_COLUMNS`) and tid -> thread name (None without)."""
        tr = self.io_trace()
        if tr is None:
            return None
        return ({k: getattr(tr, k) for k in IO_COLUMNS}, {int(k): v.comm for k, v in tr.threads.items()})

    def files(self) -> Sequence[dict[str, Any]]:
        """The per-file records (Darshan-style dicts)."""
        tr = self.io_trace()
        return list(tr.counters) if tr is not None else []

    def table(self) -> FileTable | None:
        """The per-file records as columns, where the source keeps them so (a whole-run record)."""
        return None

    def files_as_columns(self) -> bool:
        """Whether :meth:`table` holds the files (and :meth:`files` would build them one by one)."""
        return False

    def partial(self) -> bool:
        return False

    def dropped(self) -> int:
        tr = self.io_trace()
        return int(tr.dropped) if tr is not None else 0

    def untracked(self) -> dict[str, Any] | None:
        """What the capture counted but could not track (files past the table bound, ...)."""
        tr = self.io_trace()
        u = tr.untracked if tr is not None else None
        return dict(u) if isinstance(u, dict) else None

    def timeseries(self) -> dict[str, Any] | None:
        """A recording's time series (tb_iotrace.store.timeseries JSON form), else None."""
        return None

    def nevents(self) -> int:
        tr = self.io_trace()
        return len(tr) if tr is not None else 0

    def mounts(self) -> str:
        """The traced process's mount table as it stored it ("" when unknown)."""
        tr = self.io_trace()
        return str(getattr(tr, "mounts", "") or "")

    def process(self) -> dict[str, Any] | None:
        """The facts of the process it recorded (pid, role or argv, start and end, exit, rank)."""
        return None

    def process_notes(self) -> list[str]:
        """What the source says of its own recording (a record's exit note, a trace's notes)."""
        return []

    def python(self) -> dict[str, Any] | None:
        """The process's interpreter prefixes and sys.path (whole-run records)."""
        return None

    def objects(self) -> list[dict[str, Any]]:
        """Its object-storage requests, one dict per request (tb_iotrace.store.objcolumns'
        columns; [] when none): a capture's and a PyTorch process's from their I/O record, a
        whole-run record's from its document."""
        tr = self.io_trace()
        return object_rows(getattr(tr, "objects", None) if tr is not None else None, self.path)

    def objects_left_out(self) -> int:
        """The object requests it made but did not keep, past the per-process cap."""
        from tb_iotrace.store.objcolumns import left_out

        tr = self.io_trace()
        return left_out(getattr(tr, "objects", None) if tr is not None else None)

    def checkpoint_calls(self) -> list[Any] | None:
        """The checkpoint library calls the process noted (whole-run records)."""
        return None

    def trace_missing(self) -> str:
        """Why a partial recording's calls are absent, once its trace was asked for ("" else)."""
        return ""

    def use_reader(self, read: Any) -> None:
        """Read the source's file with ``read`` (path -> (XSpace, IoTrace or None)), for a caller
        that needs only the analysis's part of it (the analysis's column-wise reader of a
        capture); sources of other kinds keep their own reader."""

    def write_errors(self) -> dict[str, Any] | None:
        """What the recording says of its own writes that failed (a full disk)."""
        return None

    def analysis_input(self) -> tuple[Any, Any] | None:
        """What the analysis reads for this host's findings and verdict: (XSpace or None,
        IoTrace or None); None when the host has none of its own."""
        tr = self.io_trace()
        return (None, tr) if tr is not None else None

    def timeline_trace(self) -> Any:
        """The I/O calls this host's timeline (its steps) counts: its own; a PyTorch main
        process's, every process of the job (its DataLoader workers read its batches)."""
        return self.io_trace()

    def profile_bounds(self) -> dict[str, int | None] | None:
        """A profile window's start and stop (epoch ns), for sources that are one."""
        return None

    def window_origin(self) -> dict[str, Any] | None:
        """Who took this profile window and when (``tb-iotrace run --profile-every``, ``tb-iotrace
        attach``: ``{"by", "at_ns", "pid", ...}``); None for the job's own windows."""
        return None

    def no_io_reason(self) -> str | None:
        """Why a profile without tb_iotrace's record holds no I/O (None when it has some)."""
        return None

    def origin_ns(self) -> int:
        """Where its clock starts (epoch ns): the profile's start, else the first call's."""
        from tb_iotrace.store.xplane import profile_start_ns, read_io_info

        space = self.space()
        start = profile_start_ns(space) if space is not None else None
        if start is None:
            info = (read_io_info(space) or {}) if space is not None else {}
            start = int(info.get("profile_start_ns") or 0)
            if not start:
                tr = self.io_trace()
                start = int(tr.start_ns.min()) if tr is not None and len(tr) else 0
        return int(start)

    def exe(self) -> str:
        """The command line of the process ("" when the source does not keep it)."""
        return ""

    def life_ns(self) -> tuple[int, int] | None:
        """The recorded process's whole life (start, end epoch ns): whole-run records only."""
        return None

    def machine_name(self) -> str:
        """The host name the recording gave itself (the source's host when it gave none)."""
        return self.host


def object_rows(doc: Any, path: str) -> list[dict[str, Any]]:
    """The object-storage requests of an I/O record's ``objects`` columns, one dict each ([] when
    none); malformed columns raise :class:`SourceError` naming the file."""
    from tb_iotrace.store.objcolumns import ObjectColumnsError, checked, rows

    try:
        return rows(checked(doc))
    except ObjectColumnsError as exc:
        raise SourceError(f"{path}: malformed object requests ({exc})") from None


__all__ = ["IO_COLUMNS", "Source", "SourceError", "count_field", "object_rows"]
