"""Turning a PATH given on the command line into (run, host) sources.

PATH may be:

- a logdir: every profile run (``[<tb run>/]plugins/profile/<session>/<host>.xplane.pb``, run
  ``[<tb run>/]<session>``), every whole-run record folder
  (``[<dir>/]plugins/iotrace/<host>.<pid>.json``, run ``[<dir>/]iotrace``, one host per process)
  and every folder of PyTorch traces (run ``<dir>``, as the I/O tab names it; a foreign or
  corrupt trace is skipped with a note);
- a run directory (holding ``*.xplane.pb``) or a ``plugins/iotrace`` folder;
- one capture file (``<host>.xplane.pb``) or one whole-run record (``<host>.<pid>.json``);
- a PyTorch Kineto trace written by ``tb_iotrace.torch.trace_handler``
  (``<worker>.<ns>.pt.trace.json[.gz]``), or the folder of such traces: one host per process
  that recorded I/O (``<trace name>/pid<N>``, ``<worker>`` for the main process). Its
  :meth:`Source.space` is the trace converted by :mod:`tb_iotrace.store.kineto_xspace` (one conversion
  shared by the processes of a file), its :meth:`Source.io_trace` that process's calls with its
  own counters.
"""
from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tb_iotrace.store import remote
from tb_iotrace.store.filetable import FileTable
from tb_iotrace.store.kineto import KinetoTraceError, io_record, read_trace, trace_rank
from tb_iotrace.store.logdir import KINETO_SUFFIXES, XPLANE_SUFFIX, is_kineto_name, is_read_name, scan
from tb_iotrace.store.runrecord import RECORD_RUN, RECORD_SUFFIX, RecordError, RunRecord, find_records, read_record
from tb_iotrace.base.safenames import printable
from tb_iotrace.cli._base import UserError


@dataclass
class Source:
    run: str
    host: str
    kind: str                       # "xplane", "record" or "kineto"
    path: str
    _space: Any = None
    _record: RunRecord | None = None
    _trace: Any = None
    _loaded: bool = False
    notes: list[str] = field(default_factory=list)
    process: dict[str, Any] | None = None   # kineto: this process's part of the tb_iotrace record
    shown: str | None = None                # the URL a remote source was fetched from (reports name it)

    @property
    def name(self) -> str:
        """Where the source is, as the user gave it (a URL's object, not its cached copy)."""
        return self.shown or self.path

    # ------------------------------------------------------------------ loading
    def space(self) -> Any:
        """The XSpace (xplane sources; a Kineto trace's converted one, shared by its processes)."""
        if self.kind == "kineto":
            if self._space is None:
                self._space = _kineto_space(self.path)
            return self._space
        if self.kind != "xplane":
            return None
        if self._space is None:
            from tb_iotrace.store.xplane import XPlaneError, load_xspace

            try:
                self._space = load_xspace(self.path)
            except XPlaneError as exc:
                raise UserError(str(exc)) from None
        return self._space

    def record(self) -> RunRecord | None:
        if self.kind != "record":
            return None
        if self._record is None:
            try:
                self._record = read_record(self.path)
            except RecordError as exc:
                raise UserError(str(exc)) from None
        return self._record

    def io_trace(self) -> Any:
        """The IoTrace stored in a capture (None when it holds no I/O); a Kineto source's: its
        process's calls and counters."""
        if self.kind == "kineto":
            if not self._loaded:
                self._trace = _process_trace(self.space(), self.process or {})
                self._loaded = True
            return self._trace
        if self.kind != "xplane":
            return None
        if not self._loaded:
            from tb_iotrace.store.xplane import read_io_data

            try:
                self._trace = read_io_data(self.space())
            except (ValueError, KeyError, TypeError) as exc:
                raise UserError(f"{self.path}: unreadable I/O record ({exc})") from None
            self._loaded = True
        return self._trace

    def files(self) -> Sequence[dict[str, Any]]:
        """The per-file records; of a whole-run record, built one at a time as they are read
        (:meth:`table` has them as columns)."""
        if self.kind == "kineto":
            return list((self.process or {}).get("counters", []))
        if self.kind == "record":
            try:
                return self.record().files  # type: ignore[union-attr]
            except RecordError as exc:
                raise UserError(str(exc)) from None
        tr = self.io_trace()
        return list(tr.counters) if tr is not None else []

    def table(self) -> FileTable | None:
        """A whole-run record's files as columns (None for other sources)."""
        if self.kind != "record":
            return None
        try:
            return self.record().table()  # type: ignore[union-attr]
        except RecordError as exc:
            raise UserError(str(exc)) from None

    def partial(self) -> bool:
        return self.kind == "record" and self.record().partial  # type: ignore[union-attr]

    def dropped(self) -> int:
        if self.kind == "kineto":
            return int((self.process or {}).get("dropped", 0))
        if self.kind == "record":
            return int(self.record().doc.get("dropped", 0))  # type: ignore[union-attr]
        tr = self.io_trace()
        return int(tr.dropped) if tr is not None else 0

    def untracked(self) -> dict[str, Any] | None:
        """What the capture counted but could not track (files past the table bound, ...)."""
        if self.kind == "kineto":
            u = (self.process or {}).get("untracked")
        elif self.kind == "record":
            u = self.record().doc.get("untracked")  # type: ignore[union-attr]
        else:
            tr = self.io_trace()
            u = tr.untracked if tr is not None else None
        return dict(u) if isinstance(u, dict) else None

    def timeseries(self) -> dict[str, Any] | None:
        """A whole-run record's time series (tb_iotrace.store.timeseries JSON form), else None."""
        if self.kind != "record":
            return None
        ts = self.record().doc.get("timeseries")  # type: ignore[union-attr]
        if ts is None:
            return None
        from tb_iotrace.store.timeseries import TimeSeries, TimeSeriesError

        try:
            return TimeSeries.from_dict(ts).to_dict()
        except TimeSeriesError as exc:
            raise UserError(f"{self.path}: {exc}") from None

    def nevents(self) -> int:
        if self.kind == "kineto":
            return int((self.process or {}).get("num_events", 0))
        if self.kind == "record":
            return int(self.record().doc.get("nevents", 0))  # type: ignore[union-attr]
        tr = self.io_trace()
        return len(tr) if tr is not None else 0


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
        raise UserError(str(exc)) from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read: {exc.strerror or exc}") from None


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


def kineto_sources(path: Path, run: str) -> list[Source]:
    """One source per process of a Kineto trace's tb_iotrace record; UserError when the file
    is not a Kineto trace or carries no I/O record."""
    try:
        trace = read_trace(path)
        rec = io_record(trace, str(path))
    except KinetoTraceError as exc:
        raise UserError(str(exc)) from None
    if rec is None:
        raise UserError(f"{path}: a Kineto trace without tb_iotrace I/O (written by "
                        f"torch.profiler.tensorboard_trace_handler, not tb_iotrace.torch.trace_handler?)")
    name = next((path.name[: -len(sfx)] for sfx in KINETO_SUFFIXES[::-1] if path.name.endswith(sfx)), path.name)
    rank = trace_rank(trace)      # a distributed job's: every process of the trace (its workers inherit it)
    out = []
    for proc in rec["processes"]:
        if not isinstance(proc, dict) or not isinstance(proc.get("pid"), int):
            raise UserError(f"{path}: malformed tb_iotrace record (a process without a pid)")
        host = name if proc.get("role") == "main" else f"{name}/pid{proc['pid']}"
        out.append(Source(run=run, host=host, kind="kineto", path=str(path), process=dict(proc, rank=rank),
                          notes=[str(n) for n in rec.get("notes", [])]))
    return out


def _kineto_folder(folder: Path, run: str) -> list[Source]:
    """The traces of a trace_handler folder; a foreign or corrupt one is skipped with a note
    on stderr (UserError only when none loads)."""
    import sys

    out: list[Source] = []
    errors = []
    for p in sorted(folder.iterdir()):
        if is_kineto_name(p.name) and p.is_file():
            try:
                out.extend(kineto_sources(p, run))
            except UserError as exc:
                errors.append(str(exc))
    if errors and not out:
        raise UserError("; ".join(errors))
    for e in errors:
        sys.stderr.write(f"tb-iotrace: skipped {printable(e)}\n")
    return out


def _record_sources(folder: Path, run: str) -> list[Source]:
    out = []
    for p in find_records(folder):
        out.append(Source(run=run, host=p.name[: -len(RECORD_SUFFIX)], kind="record", path=str(p)))
    return out


def _xplane_sources(folder: Path, run: str) -> list[Source]:
    out = []
    for p in sorted(folder.iterdir()):
        if p.name.endswith(XPLANE_SUFFIX) and not p.name.startswith(".") and p.is_file():
            out.append(Source(run=run, host=p.name[: -len(XPLANE_SUFFIX)], kind="xplane", path=str(p)))
    return out


def _scan_logdir(root: Path) -> list[Source]:
    """Every profile run and whole-run record folder under ``root``, as the plugin sees them."""
    import sys

    out: list[Source] = []
    runs, _ = scan(str(root), records=True, kineto=True)
    for r in runs:
        if r.kind == "kineto":
            for _, fpath in sorted(r.hosts.items()):
                try:
                    out.extend(kineto_sources(Path(fpath), r.run))
                except UserError as exc:
                    sys.stderr.write(f"tb-iotrace: skipped {printable(exc)}\n")
            continue
        for host, fpath in sorted(r.hosts.items()):
            out.append(Source(run=r.run, host=host, kind=r.kind if r.kind == "record" else "xplane", path=fpath))
    out.sort(key=lambda s: (s.run, s.host))
    return out


def _sniff(path: Path) -> str:
    """'xplane', 'record' or '' for a file of unknown format."""
    if path.name.endswith(XPLANE_SUFFIX):
        return "xplane"
    try:
        with open(path, "rb") as fh:
            head = fh.read(256)
    except OSError as exc:
        raise UserError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if head.lstrip().startswith(b"{"):
        return "record"
    if head[:1] == b"\x0a":  # XSpace field 1 (planes), length-delimited
        return "xplane"
    return ""


def resolve(path: str, run: str | None = None, host: str | None = None) -> list[Source]:
    """Sources under ``path`` filtered by ``run``/``host``; raise UserError when there are none.
    A URL (``s3://``, ``gs://``, ...) is read through its local mirror (:func:`remote.fetch`)."""
    if remote.is_url(path):
        try:
            local = str(remote.fetch(path, is_read_name))
        except remote.RemoteError as exc:
            raise UserError(str(exc)) from None
        try:
            sources = resolve(local, run, host)
        except UserError as exc:
            raise UserError(str(exc).replace(local, path)) from None
        for src in sources:
            src.shown = src.path.replace(local, path.rstrip("/"), 1) if src.path.startswith(local) else None
        return sources
    path = remote.local_path(path)
    p = Path(path)
    if not p.exists():
        raise UserError(f"{path}: no such file or directory")
    if p.is_file() and is_kineto_name(p.name):
        sources = kineto_sources(p, p.parent.name or ".")
    elif p.is_file():
        kind = _sniff(p)
        if not kind:
            raise UserError(f"{path}: unknown format (expected a logdir, a run directory, "
                            f"a .xplane.pb capture or a tb_iotrace run record .json)")
        if kind == "xplane":
            name = p.name[: -len(XPLANE_SUFFIX)] if p.name.endswith(XPLANE_SUFFIX) else p.stem
            sources = [Source(run=p.parent.name or ".", host=name, kind="xplane", path=str(p))]
        else:
            sources = [Source(run=RECORD_RUN, host=p.name[: -len(RECORD_SUFFIX)] if p.name.endswith(RECORD_SUFFIX) else p.name,
                              kind="record", path=str(p))]
            sources[0].record()  # validate now: a corrupt file is a user error
    elif not os.access(p, os.R_OK | os.X_OK):
        raise UserError(f"{path}: permission denied")
    else:
        sources = _xplane_sources(p, p.name)
        if not sources:
            sources = _kineto_folder(p, p.name)
        if not sources and p.name == "iotrace" and p.parent.name == "plugins":
            sources = _record_sources(p, RECORD_RUN)
        if not sources:
            sources = _scan_logdir(p)
        if not sources:
            raise UserError(f"{path}: no profile captures (plugins/profile/*/*.xplane.pb) or run records "
                            f"(plugins/iotrace/*.json) found")
    if run is not None:
        picked = [s for s in sources if s.run == run]
        if not picked:
            raise UserError(f"no run {run!r} in {path} (runs: {', '.join(sorted({s.run for s in sources}))})")
        sources = picked
    if host is not None:
        picked = [s for s in sources if s.host == host]
        if not picked:
            raise UserError(f"no host {host!r} in {path} (hosts: {', '.join(sorted({s.host for s in sources}))})")
        sources = picked
    return sources


def group_by_run(sources: list[Source]) -> dict[str, list[Source]]:
    out: dict[str, list[Source]] = {}
    for s in sources:
        out.setdefault(s.run, []).append(s)
    return out
