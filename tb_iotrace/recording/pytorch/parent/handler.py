""":class:`TraceHandler`: the ``on_trace_ready`` handler that writes PyTorch's trace with the window's I/O added (local folder or URL)."""
from __future__ import annotations

import atexit
import json
import os
import shutil
import socket
import tempfile
import time
from pathlib import Path
from typing import Any

from tb_iotrace.base.safenames import safe_component
from tb_iotrace.base.seconds import parse_seconds
from tb_iotrace.recording import checkpoint_hooks, landing
from tb_iotrace.store import remote, staging
from tb_iotrace.store.kineto import KinetoTraceError, add_io, read_trace, write_trace
from tb_iotrace.store.machine import machine_facts
from tb_iotrace.store.runrecord import job_rank
from tb_iotrace.recording.pytorch import state
from tb_iotrace.recording.pytorch.state import log
from tb_iotrace.recording.pytorch.record import end
from tb_iotrace.recording.pytorch.protocol import await_answers, pids_of
from tb_iotrace.recording.pytorch.parent.channels import remove_spool
from tb_iotrace.recording.pytorch.parent.profiler_window import Window, hooks_off, mark_late, torch_version


_SPOOLS: list[tuple[str, int]] = []     # (spool folder, the process that made it)


def _remove_spools() -> None:
    for path, owner in _SPOOLS:
        remove_spool(path, owner)


# once, at import: atexit runs the last registered first, so a window still open at exit, which
# TorchWindows.start's close (registered later) writes from its spool, is written before the
# spools go (a spool registered when its window opened was removed first: the window was lost)
atexit.register(_remove_spools)


def copy(src: str, dst: str) -> None:
    """PyTorch's export as it is (gzip-compressed for a ``.gz`` name)."""
    if dst.endswith(".gz"):
        import gzip

        with open(src, "rb") as fin, gzip.open(dst, "wb") as fout:
            shutil.copyfileobj(fin, fout)
    else:
        shutil.copyfile(src, dst)


def pytorch_facts(loaders: list[dict[str, Any]], machine: dict[str, Any]) -> dict[str, Any]:
    """The ``pytorch`` entry of the trace's ``tb_iotrace`` record: torch's version, the cores
    this process may use (the ``machine`` record's ``cpus``) and the DataLoaders the window
    iterated (:func:`.loaders.window_stopped`)."""
    import sys

    torch = sys.modules.get("torch")
    return {"version": str(getattr(torch, "__version__", "")), "cpus": int(machine.get("cpus") or 0),
            "dataloaders": loaders}


class TraceHandler:
    """``on_trace_ready`` callable: PyTorch's ``tensorboard_trace_handler`` output with the
    window's I/O added (see :func:`tb_iotrace.store.kineto.add_io`)."""

    def __init__(self, dir_name: str, worker_name: str | None = None, use_gzip: bool = False,
                 wait_s: float = state.WAIT_S, start_wait_s: float = state.START_WAIT_S) -> None:
        self.dir_name = os.fspath(dir_name)
        # a URL (s3://, gs://): each trace is written locally, then uploaded whole; a scheme
        # without its client is an error now, before the training starts
        self.url: str | None = None
        if remote.is_url(self.dir_name):
            remote.filesystem(self.dir_name)
            self.url = self.dir_name.rstrip("/")
        else:
            self.dir_name = remote.local_path(self.dir_name)
        self.worker_name = worker_name
        self.use_gzip = use_gzip
        # seconds a window waits for its workers: finite, not negative (nan or inf broke the window's end)
        self.wait_s = parse_seconds(wait_s, "wait_s")
        self.start_wait_s = parse_seconds(start_wait_s, "start_wait_s")
        self.pending: Window | None = None
        self.notes: list[str] = []
        self.unavailable: str | None = None   # why this process records no I/O at all
        self.written: list[str] = []       # trace files written, in order
        self.extra: dict[str, Any] = {}    # more keys of the trace's tb_iotrace record (who took the window)
        self._spool: str | None = None

    def spool(self) -> str:
        if self._spool is None or not os.path.isdir(self._spool):
            self._spool = tempfile.mkdtemp(prefix="tb_iotrace-torch-")
            _SPOOLS.append((self._spool, os.getpid()))
        return self._spool

    def note(self, text: str) -> None:
        self.notes.append(text)
        log.warning("tb_iotrace: %s", text)

    def _file_name(self) -> str:
        if not self.worker_name:
            self.worker_name = f"{socket.gethostname()}_{os.getpid()}"
        name = f"{safe_component(self.worker_name)}.{time.time_ns()}.pt.trace.json"
        return name + ".gz" if self.use_gzip else name

    def __call__(self, prof: Any) -> None:
        if self.url is None:
            os.makedirs(self.dir_name, exist_ok=True)
            out = os.path.join(self.dir_name, self._file_name())
        else:
            out = os.path.join(self.spool(), self._file_name())
        try:
            self._write(prof, out)
        finally:
            if self.url is not None and os.path.exists(out):
                self._upload(out)
        if self.url is None and out in self.written:    # whole: its summary made in the background
            landing.landed([out])

    def _upload(self, out: str) -> None:
        """Send a trace written in the spool to the URL; on failure keep it in a named folder
        and say so (the training goes on)."""
        url = remote.join(self.url or "", os.path.basename(out))
        try:
            remote.upload_file(out, url)
        except remote.RemoteError as exc:
            keep = staging.root() / "torch"
            try:
                keep.mkdir(parents=True, exist_ok=True)
                kept = str(keep / os.path.basename(out))
                shutil.move(out, kept)
                staging.prune_files("torch")      # bounded: the newest few kept
            except OSError:
                kept = out
            log.warning("tb_iotrace: the trace was not uploaded (%s); it is kept in %s", exc, kept)
            self.written = [kept if w == out else w for w in self.written]
            return
        whole = out in self.written
        self.written = [url if w == out else w for w in self.written]
        # whole in the bucket: its summary and job facts kept beside it there, by a child that
        # takes the local copy over (removed here when no child will)
        handed = landing.keep_for_landing([(Path(out), url)]) if whole else []
        if os.path.exists(out):
            os.unlink(out)
        landing.landed_uploaded(handed)

    def _write(self, prof: Any, out: str) -> None:
        win, self.pending = self.pending, None
        notes, self.notes = self.notes, []
        if self.unavailable:
            notes.append(self.unavailable)
        elif state.fetch_note is not None:
            notes.append(state.fetch_note)
        notes.extend(f"torch {torch_version()}: {why}" for why in hooks_off())
        procs: list[dict[str, Any]] = []
        extra: dict[str, Any] = {}
        if win is not None:
            missing = await_answers(win.waiting, f"D {win.number}", time.monotonic() + self.wait_s)
            if win.main is not None:
                procs.append(win.main)
            procs.extend(self._side_records(win, notes))
            extra["window_start_ns"] = win.start_ns
            extra["pytorch"] = pytorch_facts(win.loaders, win.machine)
            extra["machine"] = win.machine
            mark_late(procs, win, notes)
            if missing:
                extra["workers_missing"] = [p.pid or 0 for p in missing]
                notes.append(f"DataLoader worker(s) {pids_of(missing)} did not hand over their I/O within "
                             f"{self.wait_s:g} s of the window's end: their I/O is missing from this trace")
        else:
            extra["machine"] = machine_facts()
            if not self.unavailable:
                notes.append("no I/O recorded for this window (its start was not seen)")
        extra.update(self.extra)
        rank = job_rank(os.environ)       # the launcher's (torchrun's RANK), for the per-rank tables
        if rank is not None:
            extra["rank"] = rank
        tmp = os.path.join(self.spool(), f"export.{os.getpid()}.json")
        prof.export_chrome_trace(tmp)
        try:
            try:
                trace = read_trace(tmp)
            except KinetoTraceError as exc:   # never lose PyTorch's own trace
                log.warning("tb_iotrace: cannot add I/O to the trace: %s", exc)
                copy(tmp, out)
                return
            checkpoint_hooks.annotate(trace)
            write_trace(out, add_io(trace, procs, notes=notes, extra=extra))
            self.written.append(out)
        finally:
            try:
                os.unlink(tmp)
            except OSError:
                pass

    def _side_records(self, win: Window, notes: list[str]) -> list[dict[str, Any]]:
        """The workers' records of ``win``; one of an earlier window (handed over after its
        trace was written) is reported and dropped."""
        recs = []
        prefix = f"{win.number}."
        try:
            names = sorted(os.listdir(win.spool))
        except OSError as exc:    # the spool removed meanwhile (a /tmp cleaner): PyTorch's trace still goes out
            notes.append(f"the DataLoader workers' records were lost: their folder {win.spool} is gone "
                         f"({exc.strerror or exc})")
            return recs
        for name in names:
            if not name.endswith(".json") or name.startswith("export."):
                continue
            path = os.path.join(win.spool, name)
            try:
                if not name.startswith(prefix):
                    number, _, pid = name[:-len(".json")].partition(".")
                    notes.append(f"DataLoader worker pid {pid} handed over its I/O of an earlier window "
                                 f"({number}) after that window's trace was written; dropped")
                    continue
                with open(path, "rb") as fh:
                    recs.append(json.load(fh))
            except (OSError, ValueError) as exc:
                notes.append(f"worker record {name} unreadable: {exc}")
            finally:
                try:
                    os.unlink(path)
                except OSError:
                    pass
        return recs
