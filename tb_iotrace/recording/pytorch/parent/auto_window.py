"""``tb-iotrace run --profile-every S --profile-for D`` in a PyTorch job: a torch.profiler window
of D seconds every S seconds, taken at the training thread's step boundaries
(:mod:`.step_windows`), each written by a :class:`.handler.TraceHandler` (the DataLoader workers'
I/O and fetch spans included, as ``tb_iotrace.torch.trace_handler`` writes them) into a folder of
its own, ``<logdir>/pytorch/<YYYY_MM_DD_HH_MM_SS>_<pid>_<n>/``: one run per window, so
``tb-iotrace report`` and the tab list the job's windows in time order (job ``pytorch``).

Armed when torch's import finishes (:func:`arm_after_import`) in the job's processes (not in a
spawned DataLoader worker), whatever else they import: the run's windows thread
(:class:`tb_iotrace.recording.periodic.PeriodicWindows`) asks for a window every S seconds when
PyTorch's loop is the one that runs (:mod:`tb_iotrace.recording.window_choice`: a job that imports
TensorFlow but trains with PyTorch, as DLIO's PyTorch workloads do, gets PyTorch's windows). A
window still open at exit is stopped and written there (:meth:`TorchWindows.close`, before the
handlers' spools are removed).
"""
from __future__ import annotations

import atexit
import os
import sys
import threading
import time
from typing import Any

from tb_iotrace.recording.pytorch.parent.step_windows import StepWindows

__all__ = ["TorchWindows", "arm_after_import", "own_paths", "session_name", "window_origin"]

SUBDIR = "pytorch"


def session_name(start_ns: int, pid: int, n: int, prefix: str = "") -> str:
    """A window's folder name: its start (UTC, to the second), the pid and its number."""
    return prefix + time.strftime("%Y_%m_%d_%H_%M_%S", time.gmtime(start_ns / 1e9)) + f"_{pid}_{n}"


def window_origin(by: str, start_ns: int, **more: Any) -> dict[str, Any]:
    """Who took a window and when (``window_origin`` of the trace's ``tb_iotrace`` record)."""
    return {"by": by, "at_ns": int(start_ns), "pid": os.getpid(), **more}


class TorchWindows:
    """Windows of ``for_s`` seconds into ``<logdir>/pytorch``, each when asked (:meth:`ask`)."""

    def __init__(self, logdir: str, every_s: float, for_s: float) -> None:
        self.logdir = logdir
        self.every_s = every_s
        self.for_s = for_s
        self.n = 0
        self.handlers: list[Any] = []
        self.steps = StepWindows(self._handler)

    def _handler(self, source: str) -> Any:
        from tb_iotrace.recording.pytorch.parent.handler import TraceHandler
        from tb_iotrace.recording.pytorch.parent.step_windows import steps_note

        self.n += 1
        now = time.time_ns()
        folder = os.path.join(self.logdir, SUBDIR, session_name(now, os.getpid(), self.n))
        h = TraceHandler(folder)
        h.extra = {"steps_from": source, "steps_note": steps_note(source),
                   "window_origin": window_origin("tb-iotrace run --profile-every", now,
                                                  every_s=self.every_s, for_s=self.for_s)}
        self.handlers.append(h)
        return h

    def start(self) -> "TorchWindows":
        from tb_iotrace.recording import pytorch as torch_recording

        # the handlers' module first: its removal of their spools at exit runs after close()
        from tb_iotrace.recording.pytorch.parent import handler  # noqa: F401

        torch_recording.install()        # the workers' fork/spawn hooks, the window hook
        self.steps.install()
        atexit.register(self.close)
        return self

    def ask(self) -> None:
        """A window of ``for_s`` from the next step boundary (none once the job runs its own
        torch.profiler)."""
        self.steps.ask(self.for_s)

    def window_open(self) -> bool:
        """A window is asked for or open now."""
        return self.steps.prof is not None or self.steps.wanted_s is not None

    def close(self) -> None:
        """At exit (on the main thread, the training thread of most jobs): a window still open
        is stopped and written."""
        if self.steps.prof is not None and threading.current_thread() is threading.main_thread():
            try:
                self.steps.uninstall()
            except Exception as exc:
                sys.stderr.write(f"tb-iotrace: the last PyTorch window was not written: {exc}\n")


def own_paths(logdir: str) -> list[str]:
    """Path prefixes of what the windows themselves write (the traces, the handlers' spools and
    control folders): left out of every recording, like the record folder."""
    import tempfile

    out = [os.path.join(tempfile.gettempdir(), "tb_iotrace-torch-")]
    if "://" not in logdir:
        out.append(os.path.join(os.path.abspath(logdir), SUBDIR) + os.sep)
    return out


def arm_after_import(windows: Any) -> None:
    """Once torch's import has finished, give ``windows`` (the run's
    :class:`tb_iotrace.recording.periodic.PeriodicWindows`) PyTorch's windows: a
    :class:`TorchWindows` into its log dir, of its length."""
    from tb_iotrace.recording.importhook import call_after_import

    def arm() -> None:
        try:
            mp = sys.modules.get("multiprocessing.process")
            if mp is not None and mp.parent_process() is not None:   # a spawned DataLoader worker
                return
            windows.torch = TorchWindows(windows.log_dir, windows.every_s, windows.for_s).start()
        except Exception as exc:
            sys.stderr.write(f"tb-iotrace: no PyTorch profile windows in pid {os.getpid()}: {exc}\n")
        finally:
            windows.torch_arming = False

    windows.torch_arming = True          # no window while torch's import is under way
    call_after_import("torch", arm)
