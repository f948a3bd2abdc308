"""A whole-run record of ``tb-iotrace run`` (``<host>.<pid>.json`` and its trace) as a
:class:`tb_iotrace.model.sources.Source`: its counters as columns, its trace when kept, its
process facts."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from tb_iotrace.model.source_kinds import RECORD, SourceError
from tb_iotrace.model.sources import Source, count_field, object_rows
from tb_iotrace.store.filetable import FileTable
from tb_iotrace.store.runrecord import RecordError, RunRecord, checked_trace, read_record, record_threads, record_window

__all__ = ["RecordSource"]


@dataclass
class RecordSource(Source):
    """One process's whole-run record (``tb-iotrace run``): its JSON and, when kept, its trace."""

    kind: ClassVar[str] = RECORD
    _record: RunRecord | None = field(default=None, repr=False)
    _trace: Any = field(default=None, repr=False)
    _loaded: bool = field(default=False, repr=False)
    _thread_doc: dict[int, dict[str, Any]] | None = field(default=None, repr=False)

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
        names = {tid: str(th.get("name", "")) for tid, th in self._thread_entries().items()}
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
                                      window_ns=record_window(self.doc), pid=self._pid())
            self._loaded = True
        return self._trace

    def _pid(self) -> int | None:
        pid = self.doc.get("pid")
        return pid if isinstance(pid, int) and not isinstance(pid, bool) and pid > 0 else None

    def _thread_entries(self) -> dict[int, dict[str, Any]]:
        """The document's threads by tid, checked once (SourceError for a damaged list)."""
        if self._thread_doc is None:
            try:
                self._thread_doc = record_threads(self.doc)
            except RecordError as exc:
                raise SourceError(f"{self.path}: {exc}") from None
        return self._thread_doc

    def _threads(self) -> dict[int, tuple[int, str]]:
        return {tid: (int(th.get("pthread_self") or 0), str(th.get("name") or ""))
                for tid, th in self._thread_entries().items()}

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
                         window_ns=record_window(self.doc), pid=self._pid())
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
        return count_field(self.doc, "dropped", self.path)

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
        return count_field(self.doc, "nevents", self.path)

    def mounts(self) -> str:
        return ""

    def process(self) -> dict[str, Any] | None:
        return {k: self.doc.get(k) for k in ("pid", "ppid", "argv", "start_ns", "end_ns", "exit", "rank")}

    def process_notes(self) -> list[str]:
        ex = self.doc.get("exit")
        note = ex.get("note") if isinstance(ex, dict) else None
        return [str(note)] if note else []

    def python(self) -> dict[str, Any] | None:
        return self.doc.get("python")

    def objects(self) -> list[dict[str, Any]]:
        return object_rows(self.doc.get("objects"), self.path)

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

