"""Profile windows every so many seconds in a process that runs TensorFlow or JAX, with no
change to its code: what ``tb-iotrace run --profile-every S --profile-for D`` starts in each
Python process of the run (:mod:`tb_iotrace.recording.autostart`).

A thread of its own (``tb_iotrace-windows``) wakes every ``every_s`` seconds from the process's
start; when the import of TensorFlow or JAX has finished by then (:func:`tb_iotrace.recording.window_writer.pick_framework`
picks one, once no framework's import is under way), it profiles the next ``for_s`` seconds and publishes the window
(:class:`tb_iotrace.recording.window_writer.WindowWriter`: a URL gets each file uploaded whole). A process that never
imports either takes no window. A window still open when the process exits is stopped and
published at exit.

In a process that imports torch (:func:`tb_iotrace.recording.pytorch.parent.auto_window.arm_after_import`
sets :attr:`PeriodicWindows.torch`), each period's window goes to the framework whose training loop
runs (:mod:`tb_iotrace.recording.window_choice`): PyTorch's are torch.profiler windows taken at the
training thread's step boundaries, asked for here.
"""
from __future__ import annotations

import atexit
import os
import sys
import threading
import time
from typing import Any

from tb_iotrace.base.seconds import parse_seconds
from tb_iotrace.recording.importhook import call_after_import
from tb_iotrace.recording.loop_activity import TF, TORCH, snapshot

ENV_EVERY = "TB_IOTRACE_PROFILE_EVERY"
ENV_FOR = "TB_IOTRACE_PROFILE_FOR"
ENV_LOGDIR = "TB_IOTRACE_PROFILE_LOGDIR"
DEFAULT_FOR_S = 2.0

__all__ = ["DEFAULT_FOR_S", "ENV_EVERY", "ENV_FOR", "ENV_LOGDIR", "PeriodicWindows", "from_env"]


class PeriodicWindows:
    """Windows of ``for_s`` seconds starting every ``every_s`` seconds, into ``log_dir``."""

    def __init__(self, log_dir: str, every_s: float, for_s: float) -> None:
        if not every_s > 0 or not for_s > 0:
            raise ValueError("the window period and length must be > 0 seconds")
        if for_s >= every_s:
            raise ValueError(f"a window of {for_s:g} s every {every_s:g} s would never end before the next")
        # imported here, not with the module: every process of a run reads ENV_EVERY at start
        from tb_iotrace.recording.window_writer import FRAMEWORKS, WindowWriter

        self.every_s = every_s
        self.for_s = for_s
        self.log_dir = log_dir
        self.writer = WindowWriter(log_dir)
        self.torch: Any = None            # PyTorch's windows, once torch's import has finished
        self.torch_arming = False         # PyTorch's windows are armed when torch's import finishes
        self.last: str | None = None      # the framework the last window was asked of
        self._calls = snapshot()          # the loops' calls at the last choice
        # frameworks whose import has finished: one still importing (on the main thread) is in
        # sys.modules already, and starting its profiler from here would race its import
        self.ready: set[str] = set()
        for name in FRAMEWORKS:
            call_after_import(name, lambda name=name: self.ready.add(name))
        call_after_import("tensorflow", _count_tf_functions)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="tb_iotrace-windows", daemon=True)
        self._pid = os.getpid()

    def start(self) -> "PeriodicWindows":
        self._thread.start()
        atexit.register(self.close)
        return self

    def choose(self) -> str | None:
        """The framework of this period's window (:func:`tb_iotrace.recording.window_choice.choose`)."""
        from tb_iotrace.recording.window_choice import choose
        from tb_iotrace.recording.window_writer import pick_framework

        now = snapshot()
        torch_calls, other_calls = now[TORCH] - self._calls[TORCH], now[TF] - self._calls[TF]
        self._calls = now
        got = choose(pick_framework(self.ready), self.torch is not None, torch_calls, other_calls, self.last)
        if got is not None:
            self.last = got
        return got

    def _loop(self) -> None:
        from tb_iotrace.recording.window_choice import PYTORCH
        from tb_iotrace.recording.window_writer import FRAMEWORKS
        from tb_iotrace.store.window_origin import write_origin

        while not self._stop.wait(self.every_s):
            # while one framework's import is under way, wait: TensorFlow's import imports JAX,
            # whose profiler would take the window and hold none of TensorFlow's events
            if any(f in sys.modules and f not in self.ready for f in FRAMEWORKS):
                continue
            # nor while torch's import is: TensorFlow imported first would take the window of
            # a PyTorch loop about to start
            if self.torch_arming and "torch" in sys.modules:
                continue
            framework = self.choose()
            if framework == PYTORCH:
                self.torch.ask()       # from the training thread's next step boundary
                continue
            if self.torch is not None and self.torch.window_open():
                continue               # PyTorch's last window has not ended: one profiler at a time
            if framework is None or not self.writer.start(framework):
                continue
            started = time.time_ns()
            self._stop.wait(self.for_s)
            write_origin(self.writer.stop(), {"by": "tb-iotrace run --profile-every", "at_ns": started,
                                              "pid": os.getpid(), "every_s": self.every_s, "for_s": self.for_s,
                                              "framework": framework})

    def close(self) -> None:
        """Stop taking windows; a window open now is stopped and published."""
        if os.getpid() != self._pid:
            return
        self._stop.set()
        self._thread.join(timeout=self.for_s + 30)


def _count_tf_functions() -> None:
    from tb_iotrace.recording import tf_loop_signal

    tf_loop_signal.install()


def from_env_settings() -> tuple[float, float] | None:
    """(every, for) seconds the environment asks for (``TB_IOTRACE_PROFILE_EVERY``, ``..._FOR``);
    None when not asked. Raises ValueError for values that are not numbers."""
    raw = os.environ.get(ENV_EVERY, "").strip()
    if not raw:
        return None
    every = parse_seconds(raw, ENV_EVERY, allow_zero=False)
    length = parse_seconds(os.environ.get(ENV_FOR, "").strip() or DEFAULT_FOR_S, ENV_FOR, allow_zero=False)
    return every, length


def from_env(default_logdir: str) -> PeriodicWindows | None:
    """The windows the environment asks for (:func:`from_env_settings`, into
    ``TB_IOTRACE_PROFILE_LOGDIR`` or ``default_logdir``), started; None when not asked.
    Raises ValueError for values that are not finite positive seconds."""
    got = from_env_settings()
    if got is None:
        return None
    return PeriodicWindows(os.environ.get(ENV_LOGDIR) or default_logdir, *got).start()
