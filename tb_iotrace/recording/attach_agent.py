"""What ``tb-iotrace attach`` runs inside the process it attaches to (see docs/attach.md).

The CLI makes a control folder, writes the request there and has the process run
:func:`start` on its main thread (a pending call injected by gdb, or ``sys.remote_exec``). The
agent records for the time asked and then undoes everything it did:

- the shim is enabled with :func:`tb_iotrace.recording.api.enable_shim` (the GOT patches only;
  nothing when the process records already, e.g. under ``tb-iotrace run``) and disabled at the
  end; one native session records the process;
- the *main* process (the PID given) takes its framework's profile window: TensorFlow's or JAX's
  (:class:`tb_iotrace.recording.window_writer.WindowWriter`, under ``<logdir>/plugins/profile``),
  or a torch.profiler window at the training thread's step boundaries
  (:class:`tb_iotrace.recording.pytorch.parent.step_windows.StepWindows`), written as a Kineto trace under
  ``<logdir>/pytorch/attach_<time>_<pid>_1/`` with the I/O of the main process and of its
  children (DataLoader workers: their fetch spans too) added; without a framework, each process
  writes a whole-run record of the attached seconds under ``<logdir>/plugins/iotrace``;
- *children* (DataLoader workers, other Python children, injected the same way after the main
  process answered) record their I/O until the main process's deadline; a DataLoader worker
  also times its fetches; one that exits before writes its record at exit (a multiprocessing
  finalizer); a worker forked while the window is open (a new epoch) records from its fork;
- the main process ending before the deadline (the job done) ends the attach at its exit (an
  ``atexit`` handler, on the exiting thread): its window is stopped there and written with what
  was recorded, the children told to hand over theirs now (``end``), a note says so.

Files in the control folder: ``status.<pid>.json`` (``ready``, ``refused``, ``error``, ``done``),
``children.json`` (the CLI's request to children: the deadline and the mode), ``expect.<pid>``
(a child records), ``rec.<pid>.json`` (its record), ``cancel`` (the CLI gave up: a late pending
call does nothing), ``end`` (the main process exited early: children end now).

What stays after detaching: tb_iotrace's modules and its native library (loaded, unpatched, no
thread), one ``os.register_at_fork`` handler (Python cannot remove one; it checks one global and
returns), and in a TensorFlow or JAX process tb_iotrace's registration as a profiler plugin
(inert outside a profile).
"""
from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import Any

from tb_iotrace.base.atomic import atomic_write

__all__ = ["Attachment", "start"]

_active: "Attachment | None" = None
_fork_hook = False
GO_WAIT_S = 120.0      # how long an agent waits for the CLI's go (the children being injected)
GRACE_S = 30.0         # how long the main process waits for its window to end and its children's records
POLL_S = 0.1           # how often a child looks for the main process's early ``end``


def _write_json(path: str, doc: Any) -> None:
    body = json.dumps(doc, separators=(",", ":")).encode()
    atomic_write(path, lambda fh: fh.write(body))


def _status(ctrl: str, state: str, **more: Any) -> None:
    try:
        _write_json(os.path.join(ctrl, f"status.{os.getpid()}.json"), {"state": state, "pid": os.getpid(), **more})
    except OSError:
        pass


def start(ctrl: str, request: str) -> None:
    """The injected entry (on the process's main thread). Never raises: what went wrong is in
    ``status.<pid>.json``."""
    global _active
    try:
        if os.path.exists(os.path.join(ctrl, "cancel")):
            return
        with open(os.path.join(ctrl, request), "rb") as fh:
            req = json.load(fh)
        if _active is not None:
            _status(ctrl, "refused", why=f"already attached (by tb-iotrace attach, pid {_active.req.get('cli_pid')})")
            return
        att = Attachment(ctrl, req)
        _active = att
        try:
            att.begin()
        except BaseException:
            _active = None
            att.undo()
            raise
    except BaseException as exc:   # noqa: BLE001 - the job must never see our failure
        _status(ctrl, "error", why=f"{type(exc).__name__}: {exc}")


class Attachment:
    """One attach in this process: begun on the main thread, ended by its own thread."""

    def __init__(self, ctrl: str, req: dict[str, Any], forked: bool = False) -> None:
        self.ctrl = ctrl
        self.req = req
        self.pid = os.getpid()
        self.main = int(req["pid"]) == self.pid and not forked
        self.logdir = str(req["logdir"])
        self.for_s = float(req["for_s"])
        self.deadline_ns = int(req.get("deadline_ns") or (time.time_ns() + int(self.for_s * 1e9)))
        self.mode = str(req.get("mode") or "")
        self.start_ns = time.time_ns()
        self.enabled_here = False
        self.sess: Any = None
        self.steps: Any = None        # StepWindows (a PyTorch main process)
        self.writer: Any = None       # WindowWriter (a TensorFlow or JAX main process)
        self.framework = ""
        self.main_rec: dict[str, Any] | None = None
        self.main_recording: Any = None
        self.rec_ready = threading.Event()
        self.window_done = threading.Event()
        self.window_written = False       # set by the window's on_trace_ready once its trace is written
        self.outputs: list[str] = []
        self.notes: list[str] = []
        self.fetchers: list[tuple[Any, Any]] = []
        self.finalizer: Any = None
        self.last_iter: Any = None
        self.done = False
        self.ending = False           # the main process's end has begun (at the deadline or at exit)
        self.exiting = False          # ... at its exit (atexit)
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="tb_iotrace-attach", daemon=True)

    # ----------------------------------------------------------------- begin
    def excludes(self) -> list[str]:
        import tempfile

        out = [self.ctrl + os.sep, os.path.join(tempfile.gettempdir(), "tb_iotrace-")]
        if "://" not in self.logdir:
            out.append(os.path.abspath(self.logdir) + os.sep)
        return out

    def begin(self) -> None:
        from tb_iotrace.recording import api
        from tb_iotrace.recording.session import begin_session

        self.enabled_here = api.enable_shim(self.excludes())
        if self.main:
            self._pick_mode()
        if self.mode != "xplane":
            self.sess = begin_session()
        if not self.main:
            self._child_extras()
            _touch(os.path.join(self.ctrl, f"expect.{self.pid}"))
        elif self.mode == "trace":
            self._arm_fork_hook()
        if self.main:
            import atexit

            atexit.register(self._at_exit)
        ready = {"mode": self.mode, "framework": self.framework, "deadline_ns": self.deadline_ns,
                 "start_ns": self.start_ns, "python": list(sys.version_info[:3])}
        _status(self.ctrl, "ready", **ready)
        self.thread.start()

    def _pick_mode(self) -> None:
        from tb_iotrace.recording.window_writer import loaded_framework

        fw = loaded_framework()
        if fw is not None:
            from tb_iotrace.recording import jax as jax_capture, tensorflow as tf_capture
            from tb_iotrace.recording.window_writer import WindowWriter

            (tf_capture if fw == "tensorflow" else jax_capture).attach()   # its windows carry I/O
            self.writer = WindowWriter(self.logdir)
            self.mode, self.framework = "xplane", fw       # the window starts at the go
            return
        if "torch.utils.data.dataloader" in sys.modules:
            from tb_iotrace.recording.pytorch.parent.step_windows import StepWindows

            self.steps = StepWindows(self._torch_handler, on_foreign=self._foreign)
            self.steps.install()          # the window is asked for at the go
            self.mode, self.framework = "trace", "pytorch"
            return
        self.mode = "record"

    def _foreign(self) -> None:
        self.notes.append("the job runs its own torch.profiler: no window taken (its own windows are its)")

    def _child_extras(self) -> None:
        """A DataLoader worker times its fetches; one that exits before the deadline writes its
        record at exit."""
        mp = sys.modules.get("multiprocessing.util")
        proc = sys.modules.get("multiprocessing.process")
        if mp is not None and proc is not None and proc.parent_process() is not None:
            self.exit_finalizer()
        if "torch.utils.data._utils.fetch" in sys.modules and self.mode == "trace":
            from torch.utils.data._utils import fetch

            from tb_iotrace.recording.pytorch import state
            from tb_iotrace.recording.pytorch.worker.fetch import wrap_fetch

            for name in state.FETCHERS:
                cls = getattr(fetch, name, None)
                if cls is not None and callable(getattr(cls, "fetch", None)):
                    real = cls.fetch
                    cls.fetch = wrap_fetch(real, name == "_IterableDatasetFetcher")
                    self.fetchers.append((cls, real))
            state.spans = []

    def exit_finalizer(self, *_: Any) -> None:
        """Write the record when this multiprocessing child exits before the deadline."""
        import multiprocessing.util as mp

        self.finalizer = mp.Finalize(None, self.finish, exitpriority=100)

    def _arm_fork_hook(self) -> None:
        global _fork_hook
        if not _fork_hook:
            os.register_at_fork(after_in_child=_after_fork_in_child)
            _fork_hook = True

    # ----------------------------------------------------------------- end
    def _await_go(self) -> None:
        """Wait for the CLI's go (every process recording: ``go`` holds the deadline), then start
        the window; without one within :data:`GO_WAIT_S`, the window starts now."""
        path = os.path.join(self.ctrl, "go")
        until = time.monotonic() + GO_WAIT_S
        while time.monotonic() < until and not self.stop.is_set():
            try:
                with open(path, "rb") as fh:
                    self.deadline_ns = int(json.load(fh)["deadline_ns"])
                break
            except (OSError, ValueError, KeyError):
                time.sleep(0.02)
        else:
            if self.stop.is_set():       # the process is exiting: no window now
                return
            self.deadline_ns = time.time_ns() + int(self.for_s * 1e9)
        if not self.main:
            return
        if self.steps is not None:
            self.steps.ask(max(0.0, (self.deadline_ns - time.time_ns()) / 1e9))
        elif self.writer is not None and not self.writer.start(self.framework):
            self.notes.append(f"the {self.framework} profiler did not start (one is running already?): I/O only")
            self.mode = "record"
            self.writer = None
            from tb_iotrace.recording.session import begin_session

            self.sess = begin_session()

    def _run(self) -> None:
        self._await_go()
        self._wait_deadline()
        self._end()

    def _wait_deadline(self) -> None:
        """Until the deadline; a child also until the main process says ``end`` (it exited)."""
        end = os.path.join(self.ctrl, "end")
        while not self.stop.is_set():
            left = (self.deadline_ns - time.time_ns()) / 1e9
            if left <= 0 or (not self.main and os.path.exists(end)):
                return
            self.stop.wait(left if self.main else min(left, POLL_S))

    def _end(self) -> None:
        try:
            if not self.main:
                self.finish()
                return
            with self.lock:
                begun, self.ending = self.ending, True
            if not begun:
                self._finish_main()
        except BaseException as exc:   # noqa: BLE001
            _status(self.ctrl, "error", why=f"{type(exc).__name__}: {exc}")

    def _at_exit(self) -> None:
        """The main process exits: the attach ends here if it has not (the job done before the
        deadline), with what was recorded until now; no step boundary will come to end the
        window, so it is stopped here, on the exiting thread."""
        self.exiting = True
        with self.lock:
            begun, self.ending = self.ending, True
        if begun:        # the deadline's end runs on the attach thread, its window waiting for a boundary
            self._stop_window_here()
            self.thread.join(2 * GRACE_S)
            return
        left = (self.deadline_ns - time.time_ns()) / 1e9
        if left > 0:
            self.notes.append(f"the process exited {left:.1f} s before the window's end: the window holds "
                              "what it did until then")
        try:
            _touch(os.path.join(self.ctrl, "end"))
        except OSError:
            pass
        self.stop.set()
        try:
            self._finish_main(at_exit=True)
        except BaseException as exc:   # noqa: BLE001
            _status(self.ctrl, "error", why=f"{type(exc).__name__}: {exc}")

    def _stop_window_here(self) -> None:
        if self.steps is not None and self.steps.prof is not None:
            try:      # stops the open window on this thread (its trace written), then unhooks
                self.steps.uninstall()
            except Exception as exc:   # noqa: BLE001
                self.notes.append(f"the PyTorch window at exit: {type(exc).__name__}: {exc}")

    def end_session(self) -> Any:
        from tb_iotrace.recording.session import Recording, end_session

        sess, self.sess = self.sess, None
        if sess is None:
            return None
        recording = Recording()
        end_session(sess, recording)
        return recording

    def finish(self) -> None:
        """A child's end (its thread at the deadline, or its exit): its record written."""
        with self.lock:
            if self.done:
                return
            self.done = True
            recording = self.end_session()
            spans = None
            if self.fetchers:
                from tb_iotrace.recording.pytorch import state

                spans, state.spans = state.spans, None
            if recording is not None:
                if self.mode == "trace":
                    from tb_iotrace.recording.pytorch.record import process_record

                    wid = _worker_id()
                    rec = process_record(recording, "worker" if wid is not None else "child", self.start_ns,
                                         list(spans) if spans is not None and wid is not None else None, wid)
                    _write_json(os.path.join(self.ctrl, f"rec.{self.pid}.json"), rec)
                else:
                    self.outputs.append(str(self._write_record(recording)))
            self.undo()
            _status(self.ctrl, "done", outputs=self.outputs, notes=self.notes)

    def _write_record(self, recording: Any) -> Any:
        from tb_iotrace.store.runrecord import write_record

        return write_record(self.logdir, recording, partial=False,
                            exit={"how": "attach", "note": f"recorded by tb-iotrace attach for {self.for_s:g} s"})

    def _finish_main(self, at_exit: bool = False) -> None:
        if self.mode == "xplane":
            from tb_iotrace.store.window_origin import write_origin

            published = self.writer.stop()
            write_origin(published, {"by": "tb-iotrace attach", "at_ns": self.start_ns, "pid": self.pid,
                                     "for_s": self.for_s})
            self.outputs.extend(published)
        elif self.mode == "record":
            recording = self.end_session()
            if recording is not None:
                self.outputs.append(str(self._write_record(recording)))
        else:
            from tb_iotrace.recording.pytorch.record import process_record

            recording = self.main_recording = self.end_session()
            self.main_rec = process_record(recording, "main", self.start_ns) if recording is not None else None
            self.rec_ready.set()
            self.steps.stop_now()
            if at_exit:
                self._stop_window_here()
            if not self.window_done.wait(0.0 if at_exit else GRACE_S):
                if self.steps.prof is None:
                    self.notes.append("no step boundary (DataLoader __next__, optimizer step) came while "
                                      "attached: no PyTorch window, I/O of the processes only")
                else:
                    self.notes.append(f"the training thread reached no step boundary within {GRACE_S:g} s of the "
                                      "end: the window was stopped from outside it")
                self._write_orphans()
            elif not self.window_written:      # the window ended but its trace was not written (notes say why)
                self._write_orphans()
        self.undo()
        _status(self.ctrl, "done", outputs=self.outputs, notes=self.notes + (self.steps.errors if self.steps else []))

    def _write_orphans(self) -> None:
        """No window: the main process's I/O as a whole-run record (its children's records, made
        for the trace, are not kept: the notes say so)."""
        if self.main_recording is not None:
            self.outputs.append(str(self._write_record(self.main_recording)))
        self.notes.append("the children's I/O was recorded for a trace that was not written: not kept")

    def undo(self) -> None:
        """Everything :meth:`begin` did, undone (the shim disabled if it was enabled here)."""
        global _active
        if self.main and not self.exiting:
            import atexit

            atexit.unregister(self._at_exit)
        if self.steps is not None:
            try:
                self.steps.uninstall()
            except Exception as exc:   # noqa: BLE001
                self.notes.append(f"the PyTorch hooks: {exc}")
        for cls, real in self.fetchers:
            cls.fetch = real
        self.fetchers = []
        if self.finalizer is not None:
            self.finalizer.cancel()
            self.finalizer = None
        if self.sess is not None:
            self.end_session()
        if self.enabled_here:
            from tb_iotrace.recording import api

            api.disable()
            self.enabled_here = False
        if _active is self:
            _active = None

    # ----------------------------------------------------------------- the PyTorch window
    def _torch_handler(self, source: str) -> Any:
        from tb_iotrace.recording.attach_trace import AttachTrace

        return AttachTrace(self, source)


def _touch(path: str) -> None:
    with open(path, "wb"):
        pass


def _worker_id() -> int | None:
    if "torch.utils.data" not in sys.modules:
        return None
    try:
        from torch.utils.data import get_worker_info

        info = get_worker_info()
    except Exception:   # noqa: BLE001
        return None
    return int(info.id) if info is not None else None


def _after_fork_in_child() -> None:
    """A child forked while the main process is attached (a new epoch's DataLoader worker)
    records from its fork to the deadline."""
    global _active
    parent = _active
    _active = None
    if parent is None or parent.done or parent.mode != "trace" or parent.rec_ready.is_set():
        return
    try:
        from tb_iotrace.recording.session import forget

        if parent.sess is not None:
            forget(parent.sess)      # the shim dropped the parent's sessions in the child
        req = dict(parent.req, deadline_ns=parent.deadline_ns, mode="trace")
        child = Attachment(parent.ctrl, req, forked=True)
        if parent.steps is not None:
            parent.steps.forget_in_child()
        _active = child
        from tb_iotrace.recording.session import begin_session

        child.sess = begin_session()
        child._child_extras()
        mp = sys.modules.get("multiprocessing.util")
        if mp is not None:      # a multiprocessing child clears finalizers at its start, then runs these
            mp.register_after_fork(child, Attachment.exit_finalizer)
        _touch(os.path.join(child.ctrl, f"expect.{child.pid}"))
        child.thread.start()
    except BaseException as exc:   # noqa: BLE001 - never fail the job's fork
        _status(parent.ctrl, "error", why=f"forked child: {type(exc).__name__}: {exc}")
