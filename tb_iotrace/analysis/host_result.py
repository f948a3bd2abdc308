"""One host's whole result, built once per source: what ``tb-iotrace report`` (text and
``--json``) and the fleet dataset show of a host, and what the run's document
(:mod:`tb_iotrace.analysis.run_result`) adds up.

:func:`build` reads the source and runs the analysis once (:func:`tb_iotrace.analysis.analyze`):
its verdict, findings (each with its impact), checkpoint phases and the attribution of the I/O
to the steps, which gives the host's steps and input wait (the one rule of
:mod:`tb_iotrace.model.stepwait`); then the files and their totals, objects, endpoints, the
per-host table's row and the notes. :meth:`HostResult.to_dict` is the host's entry of the
report's JSON (schema: docs/formats.md). Nothing here writes: keeping the row and the job facts
for the file's version is the caller's (``tb_iotrace.cli.hostrows.kept``).
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tb_iotrace.analysis import file_totals
from tb_iotrace.analysis.analyze import analyze
from tb_iotrace.analysis.attribution import Attribution, attribute
from tb_iotrace.analysis.collectives import collective_fields
from tb_iotrace.analysis.object_report import objects_doc
from tb_iotrace.analysis.object_steps import add_object_steps
from tb_iotrace.base.codepaths import code_paths
from tb_iotrace.base.recordid import darshan_ids, renamed_from
from tb_iotrace.model.endpoints import is_endpoint, source_endpoints
from tb_iotrace.model.sources import Source, SourceError
from tb_iotrace.model.stepwait import InputWait, input_wait
from tb_iotrace.store.objcolumns import ObjectColumnsError, checked, rows

__all__ = ["HostAnalysis", "HostResult", "analysed_part", "build", "summary_row", "write_errors_note"]

NO_WAIT = InputWait(0, 0, 0.0, "none", 0)
Files = list[dict[str, Any]] | file_totals.TableFiles


@dataclass
class HostResult:
    """One host (a capture, a whole-run record's process, a PyTorch trace's process)."""

    host: str                          # <host> of a capture, <host>.<pid> of a record
    kind: str                          # the source's kind (model.sources)
    source: str                        # its path as given
    verdict: dict[str, Any] | None     # tb_iotrace.analysis.verdict; None without an analysis
    partial: bool
    dropped: int
    untracked: dict[str, Any] | None
    nevents: int
    timeseries: dict[str, Any] | None
    totals: dict[str, dict[str, Any]]  # per module
    files: Files                       # a record's columns are listed as they are written
    code_loading: dict[str, Any]
    objects: dict[str, Any] | None
    endpoints: list[dict[str, Any]]
    findings: list[dict[str, Any]]     # ordered by impact
    checkpoints: list[dict[str, Any]]
    training: dict[str, Any] | None    # the time the checkpoint findings' shares are of
    steps: list[dict[str, Any]]
    has_step_markers: bool
    summary: dict[str, Any]            # the per-host table's row (file_totals.host_row)
    notes: list[str]
    profile: dict[str, Any] | None = None         # a profile window's bounds (captures, traces)
    window_origin: dict[str, Any] | None = None   # who took the window (run, attach)
    no_io_reason: str | None = None               # a capture without tb_iotrace's I/O record: why
    process: dict[str, Any] | None = None         # records and PyTorch traces

    def to_dict(self) -> dict[str, Any]:
        """The host's entry of ``report --json`` (docs/formats.md), its keys in that order; the
        optional ones only when set."""
        doc = {"host": self.host, "kind": self.kind, "source": self.source, "verdict": self.verdict,
               "partial": self.partial, "dropped": self.dropped, "untracked": self.untracked,
               "nevents": self.nevents, "timeseries": self.timeseries, "totals": self.totals,
               "files": self.files, "code_loading": self.code_loading, "objects": self.objects,
               "endpoints": self.endpoints, "findings": self.findings, "checkpoints": self.checkpoints,
               "training": self.training, "steps": self.steps, "has_step_markers": self.has_step_markers,
               "summary": self.summary, "notes": self.notes}
        for key in ("profile", "window_origin", "no_io_reason", "process"):
            value = getattr(self, key)
            if value is not None:
                doc[key] = value
        return doc


@dataclass
class _Analysed:
    """What the analysis gave the host; ``done`` when it ran to its end."""

    findings: list[dict[str, Any]]
    verdict: dict[str, Any] | None
    checkpoints: list[dict[str, Any]]
    training: dict[str, Any]
    note: str | None = None
    done: bool = False
    collective_wait_ps: list[int] | None = None   # per step of its attribution, as it measured them
    ran: bool = False                             # it had I/O to analyse (analyze gave a result)
    notes: list[str] = field(default_factory=list)          # the analysis's own (mounts, timeline, drops)
    data_files: list[dict[str, Any]] = field(default_factory=list)   # the files it counted (no code)
    error: Exception | None = None                # why it failed (``note`` says it in words)


@dataclass
class HostAnalysis:
    """The analysed part of a host's result (:func:`analysed_part`), what :func:`build` starts
    from: its verdict, findings, checkpoint phases and training time, steps and input wait, and
    of the analysis alone its notes and data files (the tab's findings show them)."""

    findings: list[dict[str, Any]]
    verdict: dict[str, Any] | None
    checkpoints: list[dict[str, Any]]
    training: dict[str, Any] | None
    steps: list[dict[str, Any]]
    has_step_markers: bool
    input_wait: InputWait
    ran: bool                           # the host had I/O to analyse
    notes: list[str]                    # the analysis's own notes
    data_files: list[dict[str, Any]]    # the files it counted: data, not code loading
    failed: str | None = None           # "analysis failed: ..." (the report's note)
    error: Exception | None = None      # the exception behind ``failed``

    def data_read(self) -> dict[str, Any]:
        """The bytes read from its data files and their number (network endpoints, the ranks'
        own gloo/NCCL connections among them, left out), and ``dirs``: the bytes per folder, the
        16 largest (where a straggler's data comes from): what the job verdict reads of a host
        whose files it does not list (the tab's findings answer, the job facts)."""
        got = [(str(f.get("path", "")), int(f.get("bytes_read") or 0)) for f in self.data_files
               if not is_endpoint(f.get("path"))]
        dirs: dict[str, int] = {}
        for path, b in got:
            if b > 0:
                dirs[os.path.dirname(path)] = dirs.get(os.path.dirname(path), 0) + b
        top = sorted(dirs.items(), key=lambda kv: (-kv[1], kv[0]))[:16]
        return {"bytes_read": sum(b for _, b in got), "files": sum(1 for _, b in got if b > 0), "dirs": dict(top)}


def _analysed(src: Source) -> tuple[_Analysed, Attribution | None]:
    """Findings, verdict and checkpoint phases (docs/checkpoints.md) with the training time
    their shares are of, for captures, records that kept their trace and a Kineto trace's
    main process (its workers' hosts have none: the main process's verdict is the job's); and
    the attribution of the I/O to the timeline the analysis made (None without one)."""
    given = src.analysis_input()
    if given is None:
        return _Analysed([], None, [], {}), None
    space, trace = given
    try:
        if space is not None:
            result = analyze(space, trace=trace)
        else:
            result = analyze(None, trace=trace, python=src.python(), checkpoint_calls=src.checkpoint_calls())
    except SourceError:
        raise
    except Exception as exc:  # noqa: BLE001 - the analysis must never break the report
        return _Analysed([], None, [], {}, note=f"analysis failed: {type(exc).__name__}: {exc}", error=exc), None
    if result is None:
        return _Analysed([], None, [], {}, done=True), None
    waits = [int(s["collective_wait_ps"]) for s in result.steps] if result.attribution is not None else None
    return (_Analysed(result.findings, result.verdict or None, result.checkpoints, result.training, done=True,
                      collective_wait_ps=waits, ran=True, notes=list(result.notes), data_files=result.files),
            result.attribution)


def _object_rows(trace: Any) -> list[dict[str, Any]]:
    """The object requests a timeline's trace holds ([] when none or malformed: /objects says so)."""
    try:
        return rows(checked(getattr(trace, "objects", None)))
    except ObjectColumnsError:
        return []


def _attribution(src: Source, analysed: bool = False, att: Attribution | None = None) -> Attribution | None:
    """The attribution of the host's timeline: ``att``, the analysis's own, when it was
    ``analysed`` (it ran to its end), else (``report --hosts``'s row alone, an analysis that
    failed) computed here; None without a timeline or when it cannot be made."""
    if not src.has_timeline or src.io_trace() is None:
        return None
    if analysed:
        return att
    try:
        return attribute(src.space(), src.timeline_trace())   # a PyTorch job's: every process's I/O
    except Exception:  # noqa: BLE001 - no steps rather than no report
        return None


def _steps(src: Source, att: Attribution | None,
           collective_wait_ps: list[int] | None = None) -> tuple[list[dict[str, Any]], bool, InputWait]:
    """The timeline's steps, whether it has step markers, and its input wait (ps); each step's
    collective wait as the analysis measured it (``collective_wait_ps``, one per step of
    ``att``), else measured here."""
    if att is None:
        return [], False, NO_WAIT
    iw = input_wait(att.wait_iv, [s.start_ps for s in att.steps], [s.end_ps for s in att.steps])
    steps = [s.to_dict() for s in att.steps]
    if collective_wait_ps is not None and len(collective_wait_ps) == len(steps):
        for s, c in zip(steps, collective_wait_ps):
            s["collective_wait_ps"] = c
    else:
        collective_fields(src.space(), steps)     # each step's collective_wait_ps
    add_object_steps(steps, _object_rows(att.trace), att.origin_ns)   # and its objects, where there are
    return steps, bool(att.has_step_markers), iw


def _totals(files: Files) -> dict[str, dict[str, Any]]:
    out = {}
    for m, t in file_totals.totals(files).items():
        out[m] = {"files": t.files, "bytes_read": t.bytes_read, "bytes_written": t.bytes_written,
                  "reads": t.reads, "writes": t.writes, "opens": t.opens, "read_time": t.read_time,
                  "write_time": t.write_time, "meta_time": t.meta_time,
                  "read_bw_mib_s": t.read_bw, "write_bw_mib_s": t.write_bw}
    return out


def _renamed(counters: dict[str, Any], remap: dict[int, int]) -> dict[str, Any]:
    if not remap or not counters.get("POSIX_RENAMED_FROM"):
        return counters
    return {**counters, "POSIX_RENAMED_FROM": renamed_from(counters["POSIX_RENAMED_FROM"], remap)}


def _counter(files: list[dict[str, Any]], name: str) -> list[float]:
    return [float(f["counters"][name]) if name in f["counters"] else float(f["fcounters"].get(name, math.nan))
            for f in files]


def _row(src: Source, files: Any, iw: InputWait) -> dict[str, Any]:
    """The host's row of the per-host table (:func:`tb_iotrace.analysis.file_totals.host_row`, as
    the tab's /hosts): its counters' bytes and read time (a record's columns, else ``files``),
    its traced calls, and its input wait (ps) by the one rule (inside the steps, over their time)."""
    if src.files_as_columns():
        table = src.table()
        assert table is not None
        modules, counter = table.module_names(), table.column
    else:
        modules, counter = [f["module"] for f in files], (lambda name: _counter(files, name))
    return file_totals.host_row(src.host, modules, counter, io_calls=src.nevents(), input_wait_ns=iw.wait / 1000,
                               span_ns=iw.time / 1000, wait_basis=iw.basis)


def summary_row(src: Source) -> dict[str, Any]:
    """The host's row of the per-host table alone (``report --hosts``), as :func:`build`'s
    ``summary``, without its analysis or file listing."""
    _, _, iw = _steps(src, _attribution(src))
    return _row(src, None if src.files_as_columns() else list(src.files()), iw)


def _listing(src: Source, files: Any) -> Files:
    """The host's files for the report. A whole-run record's from its columns, built as they
    are written; the ids are those the shim stored: Darshan's hash of each path."""
    if src.files_as_columns():
        table = src.table()
        assert table is not None
        paths = [p for t in table.modules.values() for p in t.path_strings()]
        code = code_paths(paths, src.python())
        is_code = np.fromiter((p in code for p in paths), dtype=bool, count=len(paths))
        del paths
        ids = (np.concatenate([t.record_id for t in table.modules.values()]) if len(table)
               else np.zeros(0, np.uint64))
        return file_totals.TableFiles(table, ids, is_code)
    ids, remap = darshan_ids(files)
    code = code_paths([f["path"] for f in files], src.python())
    return [{"path": f["path"], "module": f["module"], "record_id": rid,
             **({"rank": f["rank"]} if "rank" in f else {}), "code": f["path"] in code,
             "counters": _renamed(f["counters"], remap), "fcounters": f["fcounters"]}
            for f, rid in zip(files, ids)]


def write_errors_note(errors: Any) -> list[str]:
    """What a record says of its own writes that failed (a full disk), as a report note."""
    if not isinstance(errors, dict) or not errors.get("count"):
        return []
    what = ("the trace was left out to keep the final counters" if errors.get("trace_left_out")
            else "this record is the last write that succeeded")
    return [f"{errors['count']} write(s) of this record failed (last: {errors.get('last')}); {what}"]


def analysed_part(src: Source) -> HostAnalysis:
    """The analysed part of the host's result alone: the analysis (run once) and the steps of
    its attribution; what :func:`build` starts from (reads the source; writes nothing)."""
    analysed, att = _analysed(src)
    steps, markers, iw = _steps(src, _attribution(src, analysed.done, att), analysed.collective_wait_ps)
    del att                            # its per-call columns are not kept past the steps
    return HostAnalysis(findings=analysed.findings, verdict=analysed.verdict, checkpoints=analysed.checkpoints,
                        training=analysed.training or None, steps=steps, has_step_markers=markers, input_wait=iw,
                        ran=analysed.ran, notes=analysed.notes, data_files=analysed.data_files,
                        failed=analysed.note, error=analysed.error)


def build(src: Source) -> HostResult:
    """The host's whole result (reads the source; writes nothing)."""
    analysed = analysed_part(src)
    steps, markers, iw = analysed.steps, analysed.has_step_markers, analysed.input_wait
    files = None if src.files_as_columns() else src.files()
    listed = _listing(src, files)
    summary = _row(src, files, iw)
    out = HostResult(
        host=src.host, kind=src.kind, source=src.name, verdict=analysed.verdict, partial=src.partial(),
        dropped=src.dropped(), untracked=src.untracked(), nevents=src.nevents(), timeseries=src.timeseries(),
        totals=_totals(listed), files=listed, code_loading=file_totals.code_summary(listed),
        objects=objects_doc(src.objects(), src.objects_left_out()),
        endpoints=[e.to_dict() for e in source_endpoints(src)],
        findings=analysed.findings, checkpoints=analysed.checkpoints, training=analysed.training,
        steps=steps, has_step_markers=markers, summary=summary, notes=[analysed.failed] if analysed.failed else [],
        profile=src.profile_bounds(), window_origin=src.window_origin(), no_io_reason=src.no_io_reason(),
        process=src.process())
    out.notes += src.process_notes()
    out.notes += write_errors_note(src.write_errors())
    return out
