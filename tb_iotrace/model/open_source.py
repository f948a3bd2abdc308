"""Finding the sources under a path or URL: :func:`open_source` gives every (run, host) source
as :mod:`tb_iotrace.model.sources` objects, whatever their kind.

PATH may be:

- a logdir: every profile run (``[<tb run>/]plugins/profile/<session>/<host>.xplane.pb``, run
  ``[<tb run>/]<session>``), every whole-run record folder
  (``[<dir>/]plugins/iotrace/<host>.<pid>.json``, run ``[<dir>/]iotrace``, one host per process)
  and every folder of PyTorch traces (run ``<dir>``, as the I/O tab names it; a foreign or
  corrupt trace is skipped with a note on stderr);
- a run directory (holding ``*.xplane.pb``) or a ``plugins/iotrace`` folder;
- one capture file (``<host>.xplane.pb``) or one whole-run record (``<host>.<pid>.json``);
- a PyTorch Kineto trace written by ``tb_iotrace.torch.trace_handler``
  (``<worker>.<ns>.pt.trace.json[.gz]``), or the folder of such traces: one host per process
  that recorded I/O (``<trace name>/pid<N>``, ``<worker>`` for the main process);
- a URL (``s3://``, ``gs://``, ...), read through its local mirror.

Which kind a file is, :mod:`tb_iotrace.model.source_kinds` says (a Darshan log is named as one,
with the command that converts it).
"""
from __future__ import annotations

import os
from pathlib import Path

from tb_iotrace.base.safenames import printable
from tb_iotrace.model.source_kinds import CAPTURE, DARSHAN, KINETO, RECORD, kind_by_name, kind_of, listed_kind
from tb_iotrace.model.capture_source import CaptureSource
from tb_iotrace.model.record_source import RecordSource
from tb_iotrace.model.sources import Source, SourceError
from tb_iotrace.model.torch_trace_source import TorchTraceSource
from tb_iotrace.store import remote
from tb_iotrace.store.kineto import KinetoTraceError, io_record, trace_rank
from tb_iotrace.store.logdir import KINETO_SUFFIXES, XPLANE_SUFFIX, is_read_name, scan
from tb_iotrace.store.runrecord import RECORD_RUN, RECORD_SUFFIX, find_records

SKIPPED = "tb-iotrace: skipped "     # how the scan names a file it skips, on stderr


def kineto_sources(path: Path, run: str) -> list[Source]:
    """One source per process of a Kineto trace's tb_iotrace record; SourceError when the file
    is not a Kineto trace or carries no I/O record."""
    from tb_iotrace.store.kineto_json import read_header

    try:
        header = read_header(path)                      # the record alone: no event is decoded
        rec = io_record(header, str(path))
    except KinetoTraceError as exc:
        raise SourceError(str(exc)) from None
    if rec is None:
        raise SourceError(f"{path}: a Kineto trace without tb_iotrace I/O (written by "
                        f"torch.profiler.tensorboard_trace_handler, not tb_iotrace.torch.trace_handler?)")
    name = next((path.name[: -len(sfx)] for sfx in KINETO_SUFFIXES[::-1] if path.name.endswith(sfx)), path.name)
    rank = trace_rank(header)     # a distributed job's: every process of the trace (its workers inherit it)
    out = []
    for proc in rec["processes"]:
        if not isinstance(proc, dict) or not isinstance(proc.get("pid"), int) or isinstance(proc["pid"], bool):
            raise SourceError(f"{path}: malformed tb_iotrace record (a process without a pid)")
        host = name if proc.get("role") == "main" else f"{name}/pid{proc['pid']}"
        out.append(TorchTraceSource(run=run, host=host, path=str(path), proc=dict(proc, rank=rank),
                                    notes=[str(n) for n in rec.get("notes", [])]))
    return out


def _kineto_folder(folder: Path, run: str) -> list[Source]:
    """The traces of a trace_handler folder; a foreign or corrupt one is skipped with a note
    on stderr (SourceError only when none loads)."""
    import sys

    out: list[Source] = []
    errors = []
    for p in sorted(folder.iterdir()):
        if kind_by_name(p) == KINETO and p.is_file():
            try:
                out.extend(kineto_sources(p, run))
            except SourceError as exc:
                errors.append(str(exc))
    if errors and not out:
        raise SourceError("; ".join(errors))
    for e in errors:
        sys.stderr.write(f"{SKIPPED}{printable(e)}\n")
    return out


def _record_sources(folder: Path, run: str) -> list[Source]:
    out = []
    for p in find_records(folder):
        out.append(RecordSource(run=run, host=p.name[: -len(RECORD_SUFFIX)], path=str(p)))
    return out


def _xplane_sources(folder: Path, run: str) -> list[Source]:
    out = []
    for p in sorted(folder.iterdir()):
        if kind_by_name(p) == CAPTURE and not p.name.startswith(".") and p.is_file():
            out.append(CaptureSource(run=run, host=p.name[: -len(XPLANE_SUFFIX)], path=str(p)))
    return out


def _scan_logdir(root: Path) -> list[Source]:
    """Every profile run and whole-run record folder under ``root``, as the plugin sees them."""
    import sys

    out: list[Source] = []
    runs, _ = scan(str(root), records=True, kineto=True)
    for r in runs:
        for host, fpath in sorted(r.hosts.items()):
            kind = listed_kind(fpath)
            if kind == KINETO:
                try:
                    out.extend(kineto_sources(Path(fpath), r.run))
                except SourceError as exc:
                    sys.stderr.write(f"{SKIPPED}{printable(exc)}\n")
            else:
                out.append((RecordSource if kind == RECORD else CaptureSource)(run=r.run, host=host, path=fpath))
    out.sort(key=lambda s: (s.run, s.host))
    return out


def open_source(path: str, run: str | None = None, host: str | None = None) -> list[Source]:
    """Sources under ``path`` filtered by ``run``/``host``; raise SourceError when there are none.
    A URL (``s3://``, ``gs://``, ...) is read through its local mirror (:func:`remote.fetch`)."""
    if remote.is_url(path):
        try:
            local = str(remote.fetch(path, is_read_name))
        except remote.RemoteError as exc:
            raise SourceError(str(exc)) from None
        try:
            sources = open_source(local, run, host)
        except SourceError as exc:
            raise SourceError(str(exc).replace(local, path)) from None
        for src in sources:
            src.shown = src.path.replace(local, path.rstrip("/"), 1) if src.path.startswith(local) else None
        return sources
    path = remote.local_path(path)
    p = Path(path)
    if not p.exists():
        raise SourceError(f"{path}: no such file or directory")
    if p.is_file():
        kind = kind_of(path)
        if kind == DARSHAN:
            raise SourceError(f"{path}: a Darshan log, read once converted to a capture: "
                              f"tb-iotrace import-darshan {path} --logdir DIR")
        if kind == KINETO:
            sources = kineto_sources(p, p.parent.name or ".")
        elif kind == CAPTURE:
            name = p.name[: -len(XPLANE_SUFFIX)] if p.name.endswith(XPLANE_SUFFIX) else p.stem
            sources: list[Source] = [CaptureSource(run=p.parent.name or ".", host=name, path=str(p))]
        else:
            rec = RecordSource(run=RECORD_RUN, host=p.name[: -len(RECORD_SUFFIX)] if p.name.endswith(RECORD_SUFFIX) else p.name,
                               path=str(p))
            rec.record()  # validate now: a corrupt file is a user error
            sources = [rec]
    elif not os.access(p, os.R_OK | os.X_OK):
        raise SourceError(f"{path}: permission denied")
    else:
        sources = _xplane_sources(p, p.name)
        if not sources:
            sources = _kineto_folder(p, p.name)
        if not sources and p.name == "iotrace" and p.parent.name == "plugins":
            sources = _record_sources(p, RECORD_RUN)
        if not sources:
            sources = _scan_logdir(p)
        if not sources:
            raise SourceError(f"{path}: no profile captures (plugins/profile/*/*.xplane.pb) or run records "
                            f"(plugins/iotrace/*.json) found")
    if run is not None:
        picked = [s for s in sources if s.run == run]
        if not picked:
            raise SourceError(f"no run {run!r} in {path} (runs: {', '.join(sorted({s.run for s in sources}))})")
        sources = picked
    if host is not None:
        picked = [s for s in sources if s.host == host]
        if not picked:
            raise SourceError(f"no host {host!r} in {path} (hosts: {', '.join(sorted({s.host for s in sources}))})")
        sources = picked
    return sources


def group_by_run(sources: list[Source]) -> dict[str, list[Source]]:
    out: dict[str, list[Source]] = {}
    for s in sources:
        out.setdefault(s.run, []).append(s)
    return out


__all__ = ["SKIPPED", "group_by_run", "kineto_sources", "open_source"]
