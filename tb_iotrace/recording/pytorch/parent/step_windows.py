"""torch.profiler windows that tb_iotrace takes itself, in a job that calls no ``prof.step()``:
``tb-iotrace run --profile-every`` (:mod:`.auto_window`) and ``tb-iotrace attach``.

torch.profiler records the CPU ops of the thread that started it only (its callbacks are
thread-local), so a window must start and stop on the training thread. Nothing of the job's code
runs there for us, except what it calls: the DataLoader's ``__next__`` (``_BaseDataLoaderIter``,
wrapped at class level) and the optimizer's ``step()`` (torch's global step post-hook). These
calls are the *step boundaries*: a window is asked for from any thread (:meth:`StepWindows.ask`),
starts at the next boundary, calls ``prof.step()`` at each one (so each step is a
``ProfilerStep#N`` as with the job's own ``prof.step()``) and stops at the first boundary after
its length. The steps stand for the DataLoader's iterations (one ``__next__`` to the next: the
input wait opens each step) when a DataLoader was iterated since the hooks went in, else for the
optimizer's ``step()`` calls; the trace says which (``steps_from``) and the verdict's notes repeat
it.

A job that runs its own torch.profiler is left alone: no window starts while one is enabled, and
a profile the job starts while ours is open stops ours first (the job's goes on as if we had never
been there; no more windows are taken). Idle, a boundary costs one attribute read and one count
of the loop's calls (:mod:`tb_iotrace.recording.loop_activity`).

Everything installed here is undone by :meth:`StepWindows.uninstall` (``attach`` leaves nothing
behind).
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable

from tb_iotrace.recording.loop_activity import COUNTS, TORCH
from tb_iotrace.recording.pytorch.state import log

__all__ = ["LOADER", "OPTIMIZER", "StepWindows", "steps_note"]

LOADER = "dataloader"
OPTIMIZER = "optimizer"
_ITER = ("torch.utils.data.dataloader", "_BaseDataLoaderIter", "__next__")


def steps_note(source: str) -> str:
    """What the verdict's notes say of the steps of a window tb_iotrace took itself."""
    if source == LOADER:
        return ("steps are the DataLoader's iterations (one __next__ to the next), taken by tb_iotrace "
                "without prof.step(): each step opens with its input wait")
    return ("steps are the optimizer's step() calls (one to the next), taken by tb_iotrace without "
            "prof.step(): no DataLoader was iterated")


def _always_record(step: int) -> Any:
    from torch.profiler import ProfilerAction

    return ProfilerAction.RECORD


class StepWindows:
    """Profile windows started and stopped at the training thread's step boundaries.

    ``make_handler(source)`` returns the ``on_trace_ready`` of one window (called on the training
    thread at the window's start); ``on_foreign()`` is called once when the job runs its own
    profiler."""

    def __init__(self, make_handler: Callable[[str], Any], on_foreign: Callable[[], None] | None = None) -> None:
        self.make_handler = make_handler
        self.on_foreign = on_foreign
        self.lock = threading.Lock()
        self.wanted_s: float | None = None   # a window of this length is asked for
        self.prof: Any = None                 # the window open now
        self.source = ""                      # what its steps are
        self.deadline = 0.0                   # time.monotonic() after which it stops
        self.loader_seen = False              # a DataLoader was iterated since install()
        self.foreign = False                  # the job runs its own profiler: no more windows
        self.windows = 0                      # windows written
        self.errors: list[str] = []
        self.last_iter: Any = None            # the DataLoader iterator of the last boundary
        self._real_next: Any = None
        self._iter_cls: Any = None
        self._opt_handle: Any = None
        self._real_start: Any = None
        self._kineto_cls: Any = None

    # ----------------------------------------------------------------- hooks
    def install(self) -> None:
        """Wrap the DataLoader's ``__next__``, the optimizer's step and the profiler's start
        (``prepare_trace``)."""
        import importlib

        module, cls_name, meth = _ITER
        cls = getattr(importlib.import_module(module), cls_name)
        real = getattr(cls, meth)
        me = self

        def __next__(it: Any) -> Any:
            me.last_iter = it
            COUNTS[TORCH] += 1       # PyTorch's loop runs (tb_iotrace.recording.window_choice)
            if me.wanted_s is not None or me.prof is not None:
                me.boundary(LOADER)
            else:
                me.loader_seen = True
            return real(it)
        __next__.__wrapped__ = real  # type: ignore[attr-defined]
        setattr(cls, meth, __next__)
        self._iter_cls, self._real_next = cls, real
        from torch.optim.optimizer import register_optimizer_step_post_hook

        self._opt_handle = register_optimizer_step_post_hook(self._after_opt_step)
        from torch.profiler.profiler import _KinetoProfile

        # the first call of a profile's start (before start_trace): ours must be off before the
        # job's profile prepares Kineto (stopping ours after that crashed the process)
        start = _KinetoProfile.prepare_trace

        def prepare_trace(prof: Any, *args: Any, **kwargs: Any) -> Any:
            if prof is not me.prof:
                me.job_profiler()
            return start(prof, *args, **kwargs)
        prepare_trace.__wrapped__ = start  # type: ignore[attr-defined]
        _KinetoProfile.prepare_trace = prepare_trace
        self._kineto_cls, self._real_start = _KinetoProfile, start

    def uninstall(self) -> None:
        """Undo :meth:`install` (a window still open is stopped first, on this thread)."""
        if self.prof is not None:
            self._stop()
        if self._iter_cls is not None:
            setattr(self._iter_cls, _ITER[2], self._real_next)
            self._iter_cls = None
        if self._opt_handle is not None:
            self._opt_handle.remove()
            self._opt_handle = None
        if self._kineto_cls is not None:
            self._kineto_cls.prepare_trace = self._real_start
            self._kineto_cls = None

    def forget_in_child(self) -> None:
        """In a forked child: the class attributes back, the parent's open profile left alone (the
        child records nothing of it)."""
        self.prof = None
        self.wanted_s = None
        self.uninstall()

    def _after_opt_step(self, opt: Any, args: Any, kwargs: Any) -> None:
        COUNTS[TORCH] += 1
        if self.wanted_s is not None or self.prof is not None:
            self.boundary(OPTIMIZER)

    # ----------------------------------------------------------------- windows
    def ask(self, seconds: float) -> None:
        """Ask for a window of ``seconds`` (from any thread); it starts at the next boundary."""
        if not self.foreign:
            self.wanted_s = seconds

    def boundary(self, kind: str) -> None:
        """A step boundary on the training thread."""
        if kind == LOADER:
            self.loader_seen = True
        try:
            if self.prof is None:
                self._maybe_start(kind)
            elif kind == self.source:
                if time.monotonic() >= self.deadline:
                    self._stop()
                else:
                    self.prof.step()
        except Exception as exc:   # never fail the job's step
            self.errors.append(str(exc))
            log.warning("tb_iotrace: profile window failed: %s", exc)
            prof, self.prof = self.prof, None
            self.wanted_s = None
            if prof is not None:      # never leave the profiler on in the job
                try:
                    prof.stop()
                except Exception:   # noqa: BLE001
                    pass

    def _maybe_start(self, kind: str) -> None:
        want = self.wanted_s
        if want is None or self.foreign:
            return
        source = LOADER if self.loader_seen else OPTIMIZER
        if kind != source:
            return
        import torch

        enabled = getattr(torch._C._autograd, "_profiler_enabled", None)
        if enabled is not None and enabled():   # the job's own profile is open on this thread
            self.job_profiler()
            return
        from torch.profiler import ProfilerActivity, profile

        acts = [ProfilerActivity.CPU]
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            acts.append(ProfilerActivity.CUDA)
        self.wanted_s = None
        self.source = source
        handler = self.make_handler(source)
        prof = profile(activities=acts, schedule=_always_record, on_trace_ready=handler)
        self.deadline = time.monotonic() + want
        self.prof = prof
        prof.start()

    def stop_now(self) -> None:
        """Stop the open window at the next boundary, whatever its length."""
        self.deadline = 0.0
        self.wanted_s = None

    def _stop(self) -> None:
        prof, self.prof = self.prof, None
        if prof is not None:
            prof.stop()        # on_trace_ready writes the window's trace
            self.windows += 1

    def job_profiler(self) -> None:
        """The job runs its own torch.profiler: ours stops (the job's wins) and no more are taken."""
        if self.foreign:
            return
        self.foreign = True
        self.wanted_s = None
        if self.prof is not None:
            try:
                self._stop()
            except Exception as exc:
                self.errors.append(str(exc))
        log.warning("tb_iotrace: the job runs its own torch.profiler: tb_iotrace takes no profile windows "
                    "of its own (the job's windows carry the I/O where they use tb_iotrace.torch.trace_handler)")
        if self.on_foreign is not None:
            self.on_foreign()
