"""Whole-run records: what ``tb-iotrace run`` leaves for each Python process it traced.

Layout: ``<DIR>/plugins/iotrace/<host>.<pid>.json``, ``<host>.<pid>.files.npz`` (the per-file
counters, columnar: :mod:`tb_iotrace.store.filetable`) and ``<host>.<pid>.npz`` (the trace, when kept);
a process that replaced its image with ``os.exec*`` leaves ``<host>.<pid>.exec<N>.json`` for
the image it had before its N-th exec (the new image, if Python, writes ``<host>.<pid>.json``).

The JSON document (format ``tb_iotrace.run/2``)::

    {
      "format": "tb_iotrace.run/2",
      "host": str, "pid": int, "ppid": int, "argv": [str, ...],
      "start_ns": int, "end_ns": int,           # CLOCK_REALTIME epoch ns of the window
      "partial": bool,                          # true: a periodic flush, the process did not
                                                # finish writing (killed, or still running);
                                                # counters then cover [start_ns, end_ns] only
                                                # and sequential/stride counters are approximate
      "exit": {"how": "exit"|"os._exit"|"signal"|"exception"|"flush", "code": int|null,
               "signal": int|null, "exception": str|null},
      "file_table": "<host>.<pid>.files.npz",   # beside the JSON: every file's counters as
                                                # columns (tb_iotrace.store.filetable: paths stored once,
                                                # as bytes; counter names once per module)
      "nfiles": {"POSIX": int, "STDIO": int},   # rows per module in it
      "threads": [{"index", "tid", "pthread_self", "name", "nevents", "dropped"}],
      "nevents": int, "dropped": int,
      "untracked": {"files", "calls", "bytes_read", "bytes_written", "reentrant_calls",
                    "examples"},                # only when something was counted but not
                                                # tracked (files past TBIO_MAX_FILES, calls
                                                # from signal handlers inside the shim)
      "trace": "<host>.<pid>.npz" | null,       # beside the JSON
      "trace_parts": ["<host>.<pid>.part<k>.npz", ...],
                                                # only in a periodic flush: the flushed
                                                # windows' calls, one file per window (each
                                                # written once), joined in order by readers
      "timeseries": {"start_ns", "bin_ns", "bytes_read": [...], "bytes_written": [...],
                     "calls": [...], "io_time_s": [...],
                     "modules": {"POSIX": {"bytes_read", "bytes_written"}, "STDIO": {...}}},
                                                # the whole window in at most 256 bins, however
                                                # long (tb_iotrace.store.timeseries); whatever the
                                                # trace cap kept; in a periodic flush, the
                                                # flushed windows' bins each placed whole at
                                                # its start (timeseries.accumulate)
      "python": {"prefixes": [str], "path": [str]},  # sys.*prefix and sys.path: which paths
                                                # are code loading (tb_iotrace.base.codepaths)
      "generation": int,                        # this write's number, also in the zip comment
                                                # of its file table and trace
                                                # ("tb_iotrace.generation=<n>"): a reader
                                                # never pairs one write's JSON with another's
      "next_generation"?: int,                  # a periodic flush's: the number its process's
                                                # next write of this record takes; a table or
                                                # trace of that number is read with this JSON
                                                # (the process was killed between renaming
                                                # them and the JSON: the newer counts, not none)
      "write_errors": {"count": int, "last": str, "trace_left_out"?: bool}
                                                # only when writes of this record failed (a
                                                # full disk): how many, the last error, and
                                                # whether this final record left its trace out
                                                # to keep its counters
      "checkpoint_calls": [{"kind", "path", "root", "call", "start_ns", "end_ns", "tid"}],
                                                # only when the process made some: its
                                                # safetensors/orbax/tf.train.Checkpoint calls
                                                # (tb_iotrace.base.ckptcalls; docs/checkpoints.md)
      "objects": {column: [...]},               # only when the process made some: its
                                                # object-storage requests as columns
                                                # (tb_iotrace.store.objcolumns; docs/objects.md)
      "rank": int,                              # only in a distributed job: the process's rank
                                                # (env RANK, OMPI_COMM_WORLD_RANK, PMI_RANK,
                                                # PMIX_RANK, SLURM_PROCID at write time)
      "machine": {"format", "cpus", "cpus_online", "cpu_quota",
                  "mounts": [[mount_point, fs_type, source], ...]}
                                                # the machine that ran it: usable cores and
                                                # mount table (tb_iotrace.store.machine); absent in
                                                # older records
    }

A write puts the trace, the file table and the JSON under temporary names first and renames
them (the JSON last) only when all three are written: a write that fails leaves the previous
record whole.

The ``.npz`` holds one array per trace column (``start_ns``, ``end_ns``, ``offset``,
``requested``, ``returned``, ``fd``, ``errno``, ``tid``: int64; ``op_id``, ``file_id``:
int32, -1 when none) plus ``op_names`` and ``paths`` (str arrays the ids index).

Format ``tb_iotrace.run/1`` (still read) kept the files in the JSON itself: ``"files": [{"path",
"module", "record_id", "counters": {...}, "fcounters": {...}}]``, about 2.5 KB a file, which made a
record of a million files gigabytes of JSON. A ``/2`` document may carry such an inline ``files``
list instead of ``file_table`` (small hand-made records).
"""
from __future__ import annotations

import json
import os
import socket
import stat
import zipfile
import time
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Sequence
from typing import Any, BinaryIO

import numpy as np

from tb_iotrace.base import ckptcalls, objreqs
from tb_iotrace.store.objcolumns import to_columns
from tb_iotrace.base.atomic import Staged
from tb_iotrace.base.codepaths import this_python
from tb_iotrace.base.limits import json_loads, load_npz, max_trace_bytes, read_limited
from tb_iotrace.base.safenames import safe_component
from tb_iotrace.store.filetable import LAST_KEYS, MAX_KEYS, FileTable, TableError, load_table
from tb_iotrace.store import npz_stored
from tb_iotrace.store.machine import machine_facts
from tb_iotrace.store.record_files import (RECORD_DIR, RECORD_RUN, RECORD_SUFFIX, TABLE_SUFFIX,  # noqa: F401
                                           find_records, record_dir)

FORMAT = "tb_iotrace.run/2"
FORMAT_V1 = "tb_iotrace.run/1"
FORMATS = (FORMAT, FORMAT_V1)
GENERATION_TAG = b"tb_iotrace.generation="   # the zip comment of a record's .npz files


class RecordError(ValueError):
    """A whole-run record that cannot be read."""


def hostname() -> str:
    return socket.gethostname() or "localhost"


def record_paths(run_dir: str | os.PathLike[str], pid: int | None = None,
                 host: str | None = None, suffix: str = "") -> tuple[Path, Path]:
    d = record_dir(run_dir)
    # the machine's name is whatever its owner set (a container's can hold "/" or ".."): one
    # safe file name component, as every name that becomes a path
    stem = f"{safe_component(host or hostname())}.{pid if pid is not None else os.getpid()}{suffix}"
    return d / f"{stem}{RECORD_SUFFIX}", d / f"{stem}.npz"


def table_path(json_path: str | os.PathLike[str]) -> Path:
    """The file table beside a record (``<stem>.files.npz``)."""
    p = Path(json_path)
    stem = p.name[: -len(RECORD_SUFFIX)] if p.name.endswith(RECORD_SUFFIX) else p.name
    return p.with_name(stem + TABLE_SUFFIX)


def trace_arrays(recording: Any) -> dict[str, np.ndarray]:
    """Columns of a recording.session.Recording's trace, as stored in the .npz (``paths``: the
    files its rows name, not every file the capture has counters for)."""
    ev = recording.events
    n = len(ev)
    file_id = ev.file_id.astype(np.int64)
    fid = np.where(file_id == 0xFFFFFFFF, -1, file_id)
    ids, inv = np.unique(fid, return_inverse=True)
    names = ev.path_names(ids[ids >= 0]) if len(ids) else []
    has = np.array([-1] * int((ids < 0).sum()) + [0 if nm else -1 for nm in names], dtype=np.int64)
    has[has == 0] = np.arange(int((has == 0).sum()))
    fid = has[inv.reshape(-1)] if n else np.zeros(0, np.int64)
    paths = [nm for nm in names if nm]
    # (copy=False: a column the recording already has in the stored type is not copied again)
    return {
        "start_ns": ev.start_ns.astype(np.int64, copy=False), "end_ns": ev.end_ns.astype(np.int64, copy=False),
        "op_id": ev.op_id.astype(np.int32, copy=False), "file_id": fid.astype(np.int32),
        "offset": ev.offset.astype(np.int64, copy=False), "requested": ev.requested.astype(np.int64, copy=False),
        "returned": ev.returned.astype(np.int64, copy=False), "fd": ev.fd.astype(np.int64, copy=False),
        "errno": ev.errno.astype(np.int64, copy=False),
        "tid": ev.tid.astype(np.int64, copy=False) if n else np.zeros(0, np.int64),
        "op_names": np.array(list(ev.op_names), dtype=str),
        "paths": np.array(paths, dtype=object).astype(str),
    }


def _stamp(generation: int) -> bytes:
    """The zip comment that marks a written ``.npz`` with the generation of the record it
    belongs to (readers of the arrays never see it), written with the zip, not reopened after."""
    return GENERATION_TAG + str(generation).encode()


def _savez(fh: BinaryIO, arrays: dict[str, np.ndarray], comment: bytes) -> None:
    """``np.savez`` (stored, no pickle), with the zip's comment set as it is written."""
    npz_stored.write(fh, list(arrays.items()), comment)


def stored_generation(fh: BinaryIO) -> int | None:
    """The generation an ``.npz`` of a record was written with (None: none, an older writer);
    the file position is kept."""
    pos = fh.tell()
    try:
        with zipfile.ZipFile(fh) as z:
            comment = z.comment
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        return None
    finally:
        fh.seek(pos)
    if not comment.startswith(GENERATION_TAG):
        return None
    try:
        return int(comment[len(GENERATION_TAG):])
    except ValueError:
        return None


def write_record(run_dir: str | os.PathLike[str], recording: Any, *, partial: bool, exit: dict[str, Any] | None = None,
                 files: FileTable | list[dict[str, Any]] | None = None, start_ns: int | None = None,
                 end_ns: int | None = None, with_trace: bool = True, suffix: str = "",
                 untracked: dict[str, Any] | None = None, timeseries: Any = None,
                 write_errors: dict[str, Any] | None = None,
                 trace: dict[str, np.ndarray] | None = None,
                 trace_parts: Sequence[tuple[str, int]] | None = None,
                 generation: int | None = None, next_generation: int | None = None) -> Path:
    """Write the record of this process from a recording.session.Recording (or explicit ``files``).

    ``suffix`` goes after the pid (``.exec1``: the image a process had before an exec).
    The trace, the file table and the JSON are each written in full under a temporary name,
    then renamed, the JSON last, all three stamped with one new generation: a write that fails
    (a full disk) leaves the previous record whole, and a reader never pairs one write's JSON
    with another's table or trace (:meth:`RunRecord.table`). ``write_errors``: earlier writes
    of this record that failed (``{"count", "last"[, "trace_left_out"]}``), kept in the JSON.
    ``trace``: the trace columns to store without a ``recording`` (a periodic flush: the flushed
    windows' traces, :mod:`tb_iotrace.store.trace_merge`). ``trace_parts``: instead, the
    (name, rows) of trace parts already written beside the record (:func:`write_trace_part`),
    which the JSON lists (``"trace_parts"``): a flush writes only its own window's calls.
    ``generation``: this write's number (:func:`new_generation` when None); ``next_generation``:
    the number the writer's next write of this record will take (the JSON says so: a reader
    takes a table or trace of that number with it, see :meth:`RunRecord._same_write`)."""
    jpath, npath = record_paths(run_dir, suffix=suffix)
    jpath.parent.mkdir(parents=True, exist_ok=True)
    table = files if isinstance(files, FileTable) else FileTable.from_dicts(files) if files is not None \
        else recording.table if recording is not None else FileTable()
    tpath = table_path(jpath)
    if generation is None:
        generation = new_generation()
    with Staged() as stage:
        trace_name = None
        arrays = None
        if recording is not None and with_trace and len(recording.events):
            arrays = trace_arrays(recording)
        elif recording is None and trace is not None and len(trace["start_ns"]):
            arrays = trace
        nevents = len(arrays["start_ns"]) if arrays is not None else len(recording.events) if recording is not None else \
            sum(n for _, n in trace_parts or ())
        if arrays is not None:
            stage.write(npath, lambda fh: _savez(fh, arrays, _stamp(generation)))
            trace_name = npath.name
        inline = not any(table.counts().values())   # no file: "files": [] in the JSON, one file less
        if not inline:
            stage.write(tpath, lambda fh: table.save(fh, comment=_stamp(generation)))
        _write_doc(stage, jpath, recording, partial=partial, exit=exit, table=table, tpath=tpath, start_ns=start_ns,
                   end_ns=end_ns, trace_name=trace_name, untracked=untracked, timeseries=timeseries,
                   generation=generation, next_generation=next_generation, write_errors=write_errors,
                   nevents=nevents,
                   trace_parts=[n for n, _ in trace_parts or ()] if arrays is None else None)
    return jpath


def new_generation() -> int:
    """A record write's number: 62 random bits from the OS (``secrets`` would import hashlib and
    OpenSSL into every traced process)."""
    return int.from_bytes(os.urandom(8), "little") >> 2


def write_trace_part(run_dir: str | os.PathLike[str], k: int, recording: Any) -> tuple[str, int]:
    """Write the calls of one flushed window (``recording``) as this process's ``k``-th trace part;
    its (file name, rows)."""
    from tb_iotrace.base.atomic import atomic_write

    jpath, _ = record_paths(run_dir)
    jpath.parent.mkdir(parents=True, exist_ok=True)
    name = trace_part_name(jpath, k)
    arrays = trace_arrays(recording)
    atomic_write(jpath.parent / name, lambda fh: np.savez(fh, **arrays))
    return name, len(arrays["start_ns"])


def _write_doc(stage: Staged, jpath: Path, recording: Any, *, partial: bool, exit: dict[str, Any] | None,
               table: FileTable, tpath: Path, start_ns: int | None, end_ns: int | None, trace_name: str | None,
               untracked: dict[str, Any] | None, timeseries: Any, generation: int,
               next_generation: int | None,
               write_errors: dict[str, Any] | None, nevents: int = 0,
               trace_parts: list[str] | None = None) -> None:
    doc = {
        "format": FORMAT, "host": hostname(), "pid": os.getpid(), "ppid": os.getppid(),
        "argv": list(getattr(__import__("sys"), "argv", []) or []),
        "start_ns": int(start_ns if start_ns is not None else getattr(recording, "start_ns", 0)),
        "end_ns": int(end_ns if end_ns is not None else getattr(recording, "end_ns", 0)),
        "partial": bool(partial),
        "exit": dict(exit or {}),
        **({"files": []} if not any(table.counts().values()) else {"file_table": tpath.name}),
        "nfiles": table.counts(),
        "threads": [dict(t.__dict__) for t in recording.threads] if recording is not None else [],
        "nevents": nevents,
        "dropped": int(recording.dropped) if recording is not None else 0,
        "trace": trace_name,
        "python": this_python(),
        "generation": generation,
        **({"next_generation": next_generation} if next_generation is not None else {}),
        "machine": (recording.machine if recording is not None and getattr(recording, "machine", None)
                    else machine_facts()),
    }
    calls = ckptcalls.snapshot()
    if calls:
        doc["checkpoint_calls"] = calls
    # the session's own (its end freed the notes), else those noted so far (a partial record)
    own = recording is not None and hasattr(recording, "objects")
    reqs = recording.objects if own else objreqs.between(doc["start_ns"], doc["end_ns"] or time.time_ns())
    lost = int(getattr(recording, "objects_left_out", 0) or 0) if own else objreqs.dropped()
    if reqs or lost:
        doc["objects"] = to_columns(reqs, lost)      # the run's object-storage requests (docs/objects.md)
    rank = job_rank(os.environ)
    if rank is not None:
        doc["rank"] = rank
    if write_errors:
        doc["write_errors"] = dict(write_errors)
    if trace_parts:
        doc["trace_parts"] = list(trace_parts)
    ts = getattr(recording, "timeseries", None) if timeseries is None else timeseries
    if ts is not None:
        doc["timeseries"] = ts.to_dict()
    if recording is not None and recording.untracked:
        untracked = recording.untracked.to_dict()
    if untracked:
        doc["untracked"] = dict(untracked)
    data = json.dumps(doc, separators=(",", ":")).encode()
    stage.write(jpath, lambda fh: fh.write(data))


RANK_VARS = ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID")


def job_rank(env: Any) -> int | None:
    """The process's rank in a distributed job, as its launcher says (torchrun's RANK, Open MPI,
    PMI, Slurm), read when the record is written (a job that sets RANK itself counts); None
    outside one."""
    for name in RANK_VARS:
        val = env.get(name)
        # isdecimal, not isdigit: "²" is a digit int() refuses (a record lost at the job's exit)
        if val is not None and str(val).strip().isdecimal():
            return int(val)
    return None


def record_threads(doc: dict[str, Any]) -> dict[int, dict[str, Any]]:
    """The record's threads by tid; RecordError when ``threads`` is not a list of objects each
    with an integer tid (a damaged record is refused, never half read)."""
    threads = doc.get("threads") or []
    if not isinstance(threads, list):
        raise RecordError(f"threads is a {type(threads).__name__}, not a list")
    out: dict[int, dict[str, Any]] = {}
    for th in threads:
        tid = th.get("tid") if isinstance(th, dict) else None
        if not isinstance(tid, int) or isinstance(tid, bool):
            raise RecordError(f"a thread entry without an integer tid ({th!r:.60})")
        out[tid] = th
    return out


def record_window(doc: dict[str, Any]) -> tuple[int, int] | None:
    """The record's window (epoch ns start, end): the process's run, or its part a partial
    record covers; None when the document has no sound one."""
    start, end = doc.get("start_ns"), doc.get("end_ns")
    if isinstance(start, int) and isinstance(end, int) and 0 < start <= end:
        return start, end
    return None


@dataclass
class RunRecord:
    path: Path
    doc: dict[str, Any]
    _table: FileTable | None = None
    trace_missing: str = ""    # set by trace(): why a partial record's calls are not there

    @property
    def name(self) -> str:
        """``<host>.<pid>``, the record's host name in reports."""
        return self.path.name[: -len(RECORD_SUFFIX)]

    @property
    def files(self) -> Sequence[dict[str, Any]]:
        """The files as JSON-like records (``{"path", "module", "record_id", "counters",
        "fcounters"}``), each built when read; :meth:`table` has them as columns."""
        inline = self.doc.get("files")
        return inline if isinstance(inline, list) else self.table().dicts()

    @property
    def nfiles(self) -> int:
        """Rows of the file table (without loading it)."""
        inline = self.doc.get("files")
        if isinstance(inline, list):
            return len(inline)
        counts = self.doc.get("nfiles")
        if isinstance(counts, dict) and all(isinstance(v, int) for v in counts.values()):
            return sum(counts.values())
        return len(self.table())

    def table(self) -> FileTable:
        """Every file's counters as columns (loaded once; RecordError when unreadable)."""
        if self._table is None:
            inline = self.doc.get("files")
            try:
                if isinstance(inline, list):
                    self._table = FileTable.from_dicts(inline)
                else:
                    self._table = self._load_table()
            except TableError as exc:
                raise RecordError(f"{self.path}: {exc}") from None
        return self._table

    def _load_table(self) -> FileTable:
        name = self.doc.get("file_table")
        if not isinstance(name, str):
            raise RecordError(f"{self.path}: its 'file_table' entry is not a file name")
        # always the table beside the record, never through a link (as the trace)
        p = table_path(self.path)
        try:
            with open(os.open(p, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC), "rb") as fh:
                if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                    raise RecordError(f"{p}: not a regular file")
                self._same_write(p, stored_generation(fh))
                return load_table(fh, str(p))
        except FileNotFoundError:
            raise RecordError(f"{p}: the record's file table is missing") from None
        except OSError as exc:
            raise RecordError(f"{p}: cannot read the file table ({exc})") from None

    def _same_write(self, part: Path, generation: int | None) -> None:
        """Check that a file beside the record was written with its JSON (same generation; a
        record from before generations has none to check). When not, the record is being
        rewritten (a periodic flush between reading the JSON and this file): read the JSON
        again, once, and go on with it if it is the write ``part`` belongs to. Else, a file of
        the write the JSON names as the next (``next_generation``) goes with it: its writer was
        killed between renaming that file and the JSON, and the newer counts are whole."""
        want = self.doc.get("generation")
        if not isinstance(want, int) or generation == want:
            return
        nxt = self.doc.get("next_generation")
        try:
            doc = read_record(self.path).doc
        except RecordError:
            doc = {}
        if generation is not None and doc.get("generation") == generation:
            self.doc, self._table = doc, None
            return
        if isinstance(nxt, int) and generation == nxt:
            return
        raise RecordError(f"{part}: not from the same write as {self.path.name} (a write of the record was "
                          f"cut short between its files, or it is being rewritten: read it again)")

    @property
    def partial(self) -> bool:
        return bool(self.doc.get("partial"))

    def trace(self) -> dict[str, np.ndarray] | None:
        """The stored trace columns (see the module docstring), or None."""
        parts = self.doc.get("trace_parts")
        if parts:
            return self._trace_parts(parts)
        name = self.doc.get("trace")
        if not name:
            return None
        if not isinstance(name, str):
            raise RecordError(f"{self.path}: its 'trace' entry is not a file name")
        # Always the .npz beside the record (record_paths names both), never through a link:
        # a record found in a logdir must not make its reader open a file outside it.
        p = self.path.with_suffix(".npz")
        try:
            with open(os.open(p, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC), "rb") as fh:
                if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                    raise ValueError("not a regular file")
                self._same_write(p, stored_generation(fh))
                # bounded: declared sizes checked before anything is allocated
                return load_npz(fh, max_trace_bytes(), "the trace")
        except (OSError, ValueError, KeyError, EOFError) as exc:
            raise RecordError(f"{p}: cannot read the trace ({exc})") from None


    def _trace_parts(self, parts: Any) -> dict[str, np.ndarray] | None:
        """A periodic flush's trace: its windows' parts beside the record, joined in order."""
        from tb_iotrace.store.trace_merge import merge

        if not isinstance(parts, list) or not all(isinstance(n, str) and _part_index(n) is not None for n in parts):
            raise RecordError(f"{self.path}: its 'trace_parts' entry is not a list of its trace parts")
        got, total = [], 0
        for name in parts:
            # always the record's own parts (by their number), beside it and never through a link:
            # a record copied or renamed without its parts has none, not another record's
            p = self.path.parent / trace_part_name(self.path, _part_index(name) or 0)
            if self.partial and not p.exists():
                self.trace_missing = (f"its per-call trace parts are missing ({p.name} is not beside it): "
                                      "counters only")
                return None
            try:
                with open(os.open(p, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC), "rb") as fh:
                    if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                        raise ValueError("not a regular file")
                    t = load_npz(fh, max_trace_bytes() - total, "the trace")
            except (OSError, ValueError, KeyError, EOFError) as exc:
                raise RecordError(f"{p}: cannot read the trace ({exc})") from None
            total += sum(int(getattr(a, "nbytes", 0)) for a in t.values())
            got.append(t)
        return merge(got)


def trace_part_name(json_path: str | os.PathLike[str], k: int) -> str:
    """The file name of a periodic flush's ``k``-th trace part (beside the record's JSON)."""
    return f"{Path(json_path).stem}.part{int(k)}.npz"


def _part_index(name: str) -> int | None:
    """``k`` of a trace part's file name ``<stem>.part<k>.npz``; None for any other name."""
    if not name.endswith(".npz") or "/" in name or ".part" not in name:
        return None
    k = name[name.rindex(".part") + 5:-4]
    return int(k) if k.isdigit() and len(k) < 10 else None


def is_trace_part(json_path: str | os.PathLike[str], name: str) -> bool:
    stem = Path(json_path).stem
    return name.startswith(stem + ".part") and name.endswith(".npz") and name[len(stem) + 5:-4].isdigit()


TRACE_COLUMNS = ("start_ns", "end_ns", "op_id", "file_id", "offset", "requested", "returned", "fd", "errno", "tid")


def checked_trace(t: dict[str, np.ndarray]) -> dict[str, Any]:
    """A stored trace with its bounds checked once, for every reader (the tab, the report, the
    exports): every column present and of one length (RecordError otherwise); op ids inside the op
    table (an unknown one points at an extra last entry ``"?"``); file ids inside the path table
    (an unknown one is -1: no file). Adds ``ops`` and ``paths``, the tables as lists of str."""
    for k in TRACE_COLUMNS + ("op_names", "paths"):
        if k not in t:
            raise RecordError(f"trace column {k!r} is missing")
    n = len(t["start_ns"])
    for k in TRACE_COLUMNS:
        if len(t[k]) != n:
            raise RecordError(f"trace column {k!r} has {len(t[k])} rows, expected {n}")
    ops = [str(x) for x in t["op_names"].tolist()]
    paths = [str(x) for x in t["paths"].tolist()]
    op = t["op_id"]
    bad_op = (op < 0) | (op >= len(ops))
    if bad_op.any():
        op = np.where(bad_op, len(ops), op)
        ops.append("?")
    fid = t["file_id"]
    fid = np.where((fid >= 0) & (fid < len(paths)), fid, -1)
    return {**{k: t[k] for k in TRACE_COLUMNS}, "op_id": op, "file_id": fid, "ops": ops, "paths": paths}


def is_record_file(path: str | os.PathLike[str]) -> bool:
    p = str(path)
    if not p.endswith(RECORD_SUFFIX):
        return False
    try:
        with open(p, "rb") as fh:
            head = fh.read(64)
    except OSError:
        return False
    return b'"format"' in head and any(f.encode() in head for f in FORMATS)


def read_record(path: str | os.PathLike[str]) -> RunRecord:
    p = Path(path)
    try:
        with open(p, "rb") as fh:
            doc = json_loads(read_limited(fh, max_trace_bytes(), "the record"), "the record's JSON")
    except FileNotFoundError:
        raise RecordError(f"{p}: no such file") from None
    except (OSError, ValueError) as exc:
        raise RecordError(f"{p}: not a tb_iotrace run record ({exc.__class__.__name__}: {exc})") from None
    if not isinstance(doc, dict) or doc.get("format") not in FORMATS:
        raise RecordError(f"{p}: not a tb_iotrace run record (format {FORMAT} expected)")
    if not isinstance(doc.get("files"), list) and (doc.get("format") == FORMAT_V1
                                                   or not isinstance(doc.get("file_table"), str)):
        raise RecordError(f"{p}: a tb_iotrace run record without its files")
    return RunRecord(p, doc)


# --------------------------------------------------------------------------- merging flushes

def merge_untracked(acc: dict[str, Any], more: dict[str, Any]) -> None:
    """Add one flush window's untracked counts (Recording.untracked.to_dict()) to ``acc``."""
    for k in ("files", "calls", "bytes_read", "bytes_written", "reentrant_calls"):
        acc[k] = int(acc.get(k, 0)) + int(more.get(k) or 0)
    acc["examples"] = (list(acc.get("examples", [])) + list(more.get("examples") or []))[:8]


def merge_files(acc: dict[tuple[str, str], dict[str, Any]], files: list[dict[str, Any]]) -> None:
    """Add consecutive windows' per-file records into ``acc`` (keyed by (module, path)), as
    dicts (tb_iotrace.store.filetable.Accumulator does it on columns, with the same rules).

    Counts, bytes and times add up; maxima take the max; start timestamps the first, end
    timestamps the last; settings and common-value slots keep the latest window's value."""
    for f in files:
        key = (f["module"], f["path"])
        cur = acc.get(key)
        if cur is None:
            cur = acc[key] = {"path": f["path"], "module": f["module"], "record_id": f.get("record_id", 0),
                              "counters": dict(f["counters"]), "fcounters": dict(f["fcounters"])}
            if f.get("file_type"):
                cur["file_type"] = f["file_type"]
            continue
        if f.get("file_type"):     # a named pipe, a socket: the capture that saw it open says so
            cur["file_type"] = f["file_type"]
        for k, v in f["counters"].items():
            if any(k.endswith(m) for m in MAX_KEYS):
                cur["counters"][k] = max(cur["counters"].get(k, v), v)
            elif any(m in k for m in LAST_KEYS):
                cur["counters"][k] = v
            else:
                cur["counters"][k] = cur["counters"].get(k, 0) + v
        for k, v in f["fcounters"].items():
            old = cur["fcounters"].get(k, 0.0)
            if "START_TIMESTAMP" in k:
                cur["fcounters"][k] = min(x for x in (old, v) if x > 0) if (old > 0 or v > 0) else 0.0
            elif "END_TIMESTAMP" in k or "MAX_" in k:
                cur["fcounters"][k] = max(old, v)
            else:
                cur["fcounters"][k] = old + v
