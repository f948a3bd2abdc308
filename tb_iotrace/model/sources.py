"""One source of I/O (one host of one run) and the same tables from every kind of it.

A source is a profile capture (``<host>.xplane.pb``: :class:`CaptureSource`), a whole-run record
of ``tb-iotrace run`` (``<host>.<pid>.json`` and its trace: :class:`RecordSource`), or one process
of a PyTorch trace written by ``tb_iotrace.torch.trace_handler`` (:class:`TorchTraceSource`).
Each gives the same things: its XSpace when it has a timeline, its I/O calls (an ``IoTrace``
and as columns), its per-file counters (as dicts, and as columns for a record), what it dropped
or could not track, and the facts of its process. The kinds are known here and nowhere above:
the report, the exports and the fleet ask these methods, never the kind. Finding sources under a
path is :func:`tb_iotrace.model.open_source.open_source`, which file is which kind
:mod:`tb_iotrace.model.source_kinds`.

An unreadable source raises :class:`SourceError`, one line naming the file.
"""
from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from tb_iotrace.model.source_kinds import CAPTURE, KINETO, RECORD, SourceError
from tb_iotrace.store.filetable import FileTable
from tb_iotrace.store.kineto import KinetoTraceError
from tb_iotrace.store.runrecord import RecordError, RunRecord, checked_trace, read_record, record_window

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
        return _object_rows(getattr(tr, "objects", None) if tr is not None else None, self.path)

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


@dataclass
class CaptureSource(Source):
    """A profile capture (``<host>.xplane.pb``) of TensorFlow, JAX or a converted trace."""

    kind: ClassVar[str] = CAPTURE
    _space: Any = field(default=None, repr=False)
    _trace: Any = field(default=None, repr=False)
    _loaded: bool = field(default=False, repr=False)
    _read: Any = field(default=None, repr=False)     # use_reader's

    @property
    def has_timeline(self) -> bool:
        return True

    def use_reader(self, read: Any) -> None:
        self._read = read

    def _read_both(self) -> None:
        self._space, self._trace = self._read(self.path)    # its errors as the reader raises them
        self._loaded = True

    def window_origin(self) -> dict[str, Any] | None:
        from tb_iotrace.store.window_origin import read_origin

        return read_origin(self.path) if "://" not in self.path else None

    def space(self) -> Any:
        if self._space is None and self._read is not None:
            self._read_both()
        if self._space is None:
            from tb_iotrace.store.xplane import XPlaneError, load_xspace

            try:
                self._space = load_xspace(self.path)
            except XPlaneError as exc:
                raise SourceError(str(exc)) from None
        return self._space

    def io_trace(self) -> Any:
        if not self._loaded and self._read is not None:
            self._read_both()
        if not self._loaded:
            from tb_iotrace.store.xplane import read_io_data

            try:
                self._trace = read_io_data(self.space())
            except (ValueError, KeyError, TypeError) as exc:
                raise SourceError(f"{self.path}: unreadable I/O record ({exc})") from None
            self._loaded = True
        return self._trace

    def analysis_input(self) -> tuple[Any, Any] | None:
        tr = self.io_trace()
        return (self.space(), tr) if tr is not None else None

    def profile_bounds(self) -> dict[str, int | None] | None:
        """The profile window's start and stop (epoch ns; None when the capture has none)."""
        from tb_iotrace.store.xplane import profile_start_ns, profile_stop_ns

        return {"start_ns": profile_start_ns(self.space()), "stop_ns": profile_stop_ns(self.space())}

    def no_io_reason(self) -> str | None:
        """Why a capture without tb_iotrace's record holds no I/O (None when it has some)."""
        if self.io_trace() is not None:
            return None
        from tb_iotrace.store.xplane.origin import missing_io_reason

        return missing_io_reason(self.space().planes)


@dataclass
class RecordSource(Source):
    """One process's whole-run record (``tb-iotrace run``): its JSON and, when kept, its trace."""

    kind: ClassVar[str] = RECORD
    _record: RunRecord | None = field(default=None, repr=False)
    _trace: Any = field(default=None, repr=False)
    _loaded: bool = field(default=False, repr=False)

    def record(self) -> RunRecord:
        if self._record is None:
            try:
                self._record = read_record(self.path)
            except RecordError as exc:
                raise SourceError(str(exc)) from None
        return self._record

    @property
    def doc(self) -> dict[str, Any]:
        return self.record().doc

    def io_columns(self) -> tuple[dict[str, np.ndarray], dict[int, str]] | None:
        """The record's stored trace as columns (the one conversion of a record's trace)."""
        try:
            t = self.record().trace()
        except RecordError as exc:
            raise SourceError(str(exc)) from None
        if t is None:
            return None
        try:
            t = checked_trace(t)
        except RecordError as exc:
            raise SourceError(f"{self.path}: {exc}") from None
        ops = np.array(t["ops"] + [""], dtype=object)
        paths = np.array(t["paths"] + [""], dtype=object)
        cols = {
            "start_ns": t["start_ns"], "end_ns": t["end_ns"],
            "op": ops[t["op_id"]],
            "path": paths[t["file_id"]],   # -1 (no file): the last entry, ""
            "offset": t["offset"], "requested": t["requested"], "returned": t["returned"],
            "fd": t["fd"], "errno": t["errno"], "tid": t["tid"],
        }
        names = {int(th["tid"]): th.get("name", "") for th in self.doc.get("threads", [])}
        return cols, names

    def io_trace(self) -> Any:
        """The record's stored trace as an IoTrace, with its counters and machine (None without)."""
        if not self._loaded:
            from tb_iotrace.store.xplane import IoTrace

            got = self.io_columns()
            if got is not None:
                cols, names = got
                machine = self.doc.get("machine")
                self._trace = IoTrace(**cols, threads=self._threads(), dropped=self.dropped(), counters=self.files(),
                                      untracked=self.untracked(),
                                      machine=dict(machine) if isinstance(machine, dict) else None,
                                      window_ns=record_window(self.doc))
            self._loaded = True
        return self._trace

    def _threads(self) -> dict[int, tuple[int, str]]:
        return {int(th.get("tid", 0)): (int(th.get("pthread_self") or 0), str(th.get("name") or ""))
                for th in self.doc.get("threads", []) if isinstance(th, dict)}

    def analysis_input(self) -> tuple[Any, Any] | None:
        """Its trace; without one (not kept, or a partial record's parts missing), an empty one
        carrying its per-file counters: the findings of the counters."""
        tr = self.io_trace()
        if tr is None:
            from tb_iotrace.store.xplane import IoTrace

            z = np.zeros(0, np.int64)
            machine = self.doc.get("machine")
            tr = IoTrace(op=np.zeros(0, object), path=np.zeros(0, object), offset=z, requested=z, returned=z,
                         fd=z, errno=z, start_ns=z, end_ns=z, tid=z, threads=self._threads(), dropped=self.dropped(),
                         counters=self.files(), untracked=self.untracked(),
                         machine=dict(machine) if isinstance(machine, dict) else None,
                         window_ns=record_window(self.doc))
        return None, tr

    def trace_missing(self) -> str:
        return self.record().trace_missing

    def files(self) -> Sequence[dict[str, Any]]:
        """The per-file records, built one at a time as they are read (:meth:`table` has them
        as columns)."""
        try:
            return self.record().files
        except RecordError as exc:
            raise SourceError(str(exc)) from None

    def table(self) -> FileTable | None:
        try:
            return self.record().table()
        except RecordError as exc:
            raise SourceError(str(exc)) from None

    def files_as_columns(self) -> bool:
        return not isinstance(self.doc.get("files"), list)

    def partial(self) -> bool:
        return bool(self.record().partial)

    def dropped(self) -> int:
        return int(self.doc.get("dropped", 0))

    def untracked(self) -> dict[str, Any] | None:
        u = self.doc.get("untracked")
        return dict(u) if isinstance(u, dict) else None

    def timeseries(self) -> dict[str, Any] | None:
        ts = self.doc.get("timeseries")
        if ts is None:
            return None
        from tb_iotrace.store.timeseries import TimeSeries, TimeSeriesError

        try:
            return TimeSeries.from_dict(ts).to_dict()
        except TimeSeriesError as exc:
            raise SourceError(f"{self.path}: {exc}") from None

    def nevents(self) -> int:
        return int(self.doc.get("nevents", 0))

    def mounts(self) -> str:
        return ""

    def process(self) -> dict[str, Any] | None:
        return {k: self.doc.get(k) for k in ("pid", "ppid", "argv", "start_ns", "end_ns", "exit", "rank")}

    def process_notes(self) -> list[str]:
        note = (self.doc.get("exit") or {}).get("note")
        return [note] if note else []

    def python(self) -> dict[str, Any] | None:
        return self.doc.get("python")

    def objects(self) -> list[dict[str, Any]]:
        return _object_rows(self.doc.get("objects"), self.path)

    def objects_left_out(self) -> int:
        from tb_iotrace.store.objcolumns import left_out

        return left_out(self.doc.get("objects"))

    def checkpoint_calls(self) -> list[Any] | None:
        calls = self.doc.get("checkpoint_calls")
        return calls if isinstance(calls, list) else None

    def write_errors(self) -> dict[str, Any] | None:
        errors = self.doc.get("write_errors")
        return errors if isinstance(errors, dict) else None

    def origin_ns(self) -> int:
        return int(self.doc.get("start_ns") or 0)

    def exe(self) -> str:
        argv = self.doc.get("argv") or []
        if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
            raise SourceError(f"{self.path}: malformed record: argv is not a list of strings")
        return " ".join(argv)

    def life_ns(self) -> tuple[int, int] | None:
        return int(self.doc.get("start_ns") or 0), int(self.doc.get("end_ns") or 0)

    def machine_name(self) -> str:
        return str(self.doc.get("host") or self.host)


def _object_rows(doc: Any, path: str) -> list[dict[str, Any]]:
    from tb_iotrace.store.objcolumns import ObjectColumnsError, checked, rows

    try:
        return rows(checked(doc))
    except ObjectColumnsError as exc:
        raise SourceError(f"{path}: malformed object requests ({exc})") from None


@functools.lru_cache(maxsize=2)
def _converted(path: str, size: int, mtime_ns: int) -> Any:
    from tb_iotrace.store.kineto_xspace import read_xspace

    return read_xspace(path)


def _kineto_space(path: str) -> Any:
    """The converted XSpace of a Kineto trace (the last two kept: a file's processes share it)."""
    try:
        st = os.stat(path)
        return _converted(path, st.st_size, st.st_mtime_ns)
    except KinetoTraceError as exc:
        raise SourceError(str(exc)) from None
    except OSError as exc:
        raise SourceError(f"{path}: cannot read: {exc.strerror or exc}") from None


def _process_trace(space: Any, proc: dict[str, Any]) -> Any:
    """One process's part of a converted Kineto trace: its threads' calls, its own counters."""
    from tb_iotrace.store.kineto_xspace import KINETO_KEY
    from tb_iotrace.store.xplane import read_io_data, read_io_info

    tr = read_io_data(space)
    if tr is None:
        return None
    info = (read_io_info(space) or {}).get(KINETO_KEY) or {}
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
            self._trace = _process_trace(self.space(), self.proc)
            self._loaded = True
        return self._trace

    def files(self) -> Sequence[dict[str, Any]]:
        return list(self.proc.get("counters", []))

    def dropped(self) -> int:
        return int(self.proc.get("dropped", 0))

    def untracked(self) -> dict[str, Any] | None:
        u = self.proc.get("untracked")
        return dict(u) if isinstance(u, dict) else None

    def nevents(self) -> int:
        return int(self.proc.get("num_events", 0))

    def objects(self) -> list[dict[str, Any]]:
        """This process's own requests (the main process's trace holds its workers' too)."""
        return _object_rows(self.proc.get("objects"), self.path)

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
        from tb_iotrace.store.xplane import read_io_info

        kin = (read_io_info(self.space()) or {}).get("kineto")
        origin = kin.get("window_origin") if isinstance(kin, dict) else None
        return dict(origin) if isinstance(origin, dict) else None


__all__ = ["IO_COLUMNS", "CaptureSource", "RecordSource", "Source", "SourceError", "TorchTraceSource"]
