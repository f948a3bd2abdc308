"""Installing the recording into torch: the profiler's ``start_trace``/``stop_trace`` wrapped, the fork handlers, the worker entry, the loader hooks."""
from __future__ import annotations

import os
from typing import Any

from tb_iotrace.recording import checkpoint_hooks, library_checkpoints
from tb_iotrace.recording.pytorch.parent import loaders as torch_loaders
from tb_iotrace.recording.pytorch import state
from tb_iotrace.recording.pytorch.state import log
from tb_iotrace.recording.pytorch.worker.fetch import note_fetch_spans
from tb_iotrace.recording.pytorch.parent.channels import after_fork_in_parent, before_fork, install_worker_entry
from tb_iotrace.recording.pytorch.worker.startup import after_fork_in_child
from tb_iotrace.recording.pytorch.parent.profiler_window import hooks_off, start_window, stop_window, torch_version
from tb_iotrace.recording.pytorch.parent.handler import TraceHandler


def wrap(real: Any, action: Any) -> Any:
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        handler = getattr(self, "on_trace_ready", None)
        if not isinstance(handler, TraceHandler):
            return real(self, *args, **kwargs)
        if action is start_window:
            try:
                action(handler)
                started = True
            except Exception as exc:
                handler.note(f"I/O capture not started: {exc}")
                started = False
            try:
                return real(self, *args, **kwargs)
            except BaseException:
                # torch refused to start: no trace will come, so the window is closed again
                # (left open, it recorded into the next profile's window, which took it over)
                if started:
                    try:
                        stop_window(handler)
                        handler.pending = None
                    except Exception as exc:
                        handler.note(f"I/O capture not stopped cleanly: {exc}")
                raise
        try:
            return real(self, *args, **kwargs)
        finally:
            try:
                action(handler)
            except Exception as exc:
                handler.note(f"I/O capture not stopped cleanly: {exc}")
    wrapper.__wrapped__ = real  # type: ignore[attr-defined]
    wrapper.__tbio_wrapper__ = True  # type: ignore[attr-defined]
    return wrapper


def window_class() -> Any:
    """The class whose start/stop this module wraps, None when this torch lacks a name."""
    import importlib

    module, cls_name, methods = state.WINDOW_HOOK
    try:
        cls = getattr(importlib.import_module(module), cls_name)
    except (ImportError, AttributeError):
        return None
    return cls if all(callable(getattr(cls, m, None)) for m in methods) else None


def install() -> None:
    """Hook torch.profiler's window start/stop and the fork of workers (idempotent). Raises when
    this torch lacks the window's names (nothing could be recorded); a missing DataLoader name
    turns only its own hook off (:func:`hooks_off`)."""
    with state.lock:
        if state.installed:
            return
        cls = window_class()
        if cls is None:
            module, cls_name, methods = state.WINDOW_HOOK
            names = " / ".join(f"{module}.{cls_name}.{m}" for m in methods)
            raise RuntimeError(f"torch {torch_version()}: the profiler window hook is off ({names} is "
                               "missing in this torch), so no I/O is recorded")
        start, stop = state.WINDOW_HOOK[2]
        if not getattr(getattr(cls, start), "__tbio_wrapper__", False):
            setattr(cls, start, wrap(getattr(cls, start), start_window))
            setattr(cls, stop, wrap(getattr(cls, stop), stop_window))
        os.register_at_fork(before=before_fork, after_in_parent=after_fork_in_parent,
                            after_in_child=after_fork_in_child)
        state.installed = True
        checkpoint_hooks.install()
        library_checkpoints.install()      # safetensors (orbax, tf.train.Checkpoint) calls as spans too
        try:
            torch_loaders.install()
        except Exception as exc:
            state.off.append(f"the DataLoader settings hook is off ({exc})")
        try:
            install_worker_entry()
        except Exception as exc:
            state.off.append(f"the spawn/forkserver worker hook is off ({exc}): DataLoader workers started with "
                        "spawn or forkserver carry no I/O")
        for why in hooks_off():
            log.warning("tb_iotrace: torch %s: %s", torch_version(), why)
        note_fetch_spans()


def installed() -> bool:
    return state.installed
