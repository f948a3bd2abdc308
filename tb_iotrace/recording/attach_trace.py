"""The Kineto trace of a PyTorch window taken by ``tb-iotrace attach``: PyTorch's export with the
I/O of the attached main process and of its children added (:func:`tb_iotrace.store.kineto.add_io`),
called as ``on_trace_ready`` on the training thread when the window stops."""
from __future__ import annotations

import glob
import json
import os
import time
from typing import Any

from tb_iotrace.store.kineto import KinetoTraceError, add_io, read_trace, write_trace
from tb_iotrace.store.machine import machine_facts

__all__ = ["AttachTrace", "loader_facts"]


def loader_facts(it: Any) -> list[dict[str, Any]]:
    """The settings of the DataLoader whose iterator made the steps (what the advice needs),
    from the iterator's own attributes; [] when unknown."""
    if it is None:
        return []
    sampler = getattr(it, "_index_sampler", None)
    workers = getattr(it, "_workers", None) or []
    return [{"id": 0, "num_workers": int(getattr(it, "_num_workers", 0) or 0),
             "prefetch_factor": getattr(it, "_prefetch_factor", None),
             "persistent_workers": bool(getattr(it, "_persistent_workers", False)),
             "pin_memory": bool(getattr(it, "_pin_memory", False)),
             "batch_size": getattr(sampler, "batch_size", None),
             "iterator": type(it).__name__,
             "worker_pids": sorted(int(w.pid) for w in workers if getattr(w, "pid", None)),
             "epochs": [], "worker_stops": []}]


class AttachTrace:
    """``on_trace_ready`` of the window an :class:`tb_iotrace.recording.attach_agent.Attachment` takes."""

    def __init__(self, att: Any, source: str) -> None:
        from tb_iotrace.recording.pytorch.parent.auto_window import SUBDIR, session_name, window_origin
        from tb_iotrace.recording.pytorch.parent.step_windows import steps_note

        self.att = att
        self.source = source
        self.start_ns = time.time_ns()
        self.folder = os.path.join(att.logdir, SUBDIR, session_name(self.start_ns, att.pid, 1, prefix="attach_"))
        self.extra = {"steps_from": source, "steps_note": steps_note(source),
                      "window_origin": window_origin("tb-iotrace attach", att.start_ns, for_s=att.for_s)}

    def __call__(self, prof: Any) -> None:
        """Write the window; when it cannot be, why goes to the attach's notes and the agent keeps
        the main process's I/O as a record (``window_written`` stays false)."""
        att = self.att
        try:
            self._write(prof)
        except Exception as exc:   # noqa: BLE001 - the job goes on
            att.notes.append(f"the PyTorch window was not written: {type(exc).__name__}: {exc}")
        finally:
            att.window_done.set()

    def _write(self, prof: Any) -> None:
        att = self.att
        notes = [f"attached by tb-iotrace attach for {att.for_s:g} s; the I/O covers the attached time, "
                 "the profile the steps from the first boundary after attaching to the first after its end"]
        if not att.rec_ready.wait(att.for_s + 30):
            notes.append("the main process's I/O was not handed over in time")
        procs = [att.main_rec] if att.main_rec is not None else []
        procs += self._children(notes)
        import socket
        import sys

        machine = machine_facts()
        torch = sys.modules.get("torch")
        extra = dict(self.extra, window_start_ns=self.start_ns, machine=machine,
                     pytorch={"version": str(getattr(torch, "__version__", "")), "cpus": int(machine.get("cpus") or 0),
                              "dataloaders": loader_facts(att.steps.last_iter if att.steps else None)})
        os.makedirs(self.folder, exist_ok=True)
        tmp = os.path.join(att.ctrl, f"export.{att.pid}.json")
        prof.export_chrome_trace(tmp)
        out = os.path.join(self.folder, f"{socket.gethostname()}_{att.pid}.{time.time_ns()}.pt.trace.json")
        try:
            trace = read_trace(tmp)
        except KinetoTraceError as exc:    # said in the attach's notes (__call__)
            raise RuntimeError(f"PyTorch's export is unreadable: {exc}") from None
        finally:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        write_trace(out, add_io(trace, procs, notes=notes + att.notes, extra=extra))
        att.outputs.append(out)
        att.window_written = True

    def _children(self, notes: list[str]) -> list[dict[str, Any]]:
        """The records of every child that said it records (``expect.<pid>``), waited for."""
        ctrl = self.att.ctrl
        until = time.monotonic() + 30.0
        while True:
            expected = {int(p.rsplit(".", 1)[1]) for p in glob.glob(os.path.join(ctrl, "expect.*"))}
            have = {int(p.rsplit(".", 2)[1]) for p in glob.glob(os.path.join(ctrl, "rec.*.json"))}
            if expected <= have or time.monotonic() > until:
                break
            time.sleep(0.05)
        if expected - have:
            notes.append(f"child process(es) {sorted(expected - have)} did not hand over their I/O in time")
        recs = []
        for pid in sorted(have):
            try:
                with open(os.path.join(ctrl, f"rec.{pid}.json"), "rb") as fh:
                    recs.append(json.load(fh))
            except (OSError, ValueError) as exc:
                notes.append(f"the record of child {pid} unreadable: {exc}")
        return recs
