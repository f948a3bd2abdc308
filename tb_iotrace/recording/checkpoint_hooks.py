"""``torch.save`` / ``torch.load`` (and ``torch.distributed.checkpoint``'s ``save``, ``load``,
``async_save``) seen as checkpoint phases in a PyTorch trace.

:func:`install` (called where the torch glue installs its hooks) wraps ``torch.save`` and
``torch.load`` (and their ``torch.serialization`` names), and DCP's functions once the job
imports ``torch.distributed.checkpoint``. While a profiler records, each call
runs inside ``torch.profiler.record_function("tb_iotrace::checkpoint")`` and is noted (thread,
start, end, kind, path); Kineto writes no arguments of a ``record_function``, so
:func:`annotate`, called on the exported trace before tb_iotrace adds its I/O, gives each
``tb_iotrace::checkpoint`` event the args ``{"kind": "save"|"load", "path", "root", "call"}``
of the call it times (``call``: the function, e.g. ``torch.save``; ``root``: where its files
are, the path itself for torch's calls). The library hooks
(:mod:`tb_iotrace.recording.library_checkpoints`: safetensors, orbax, ``tf.train.Checkpoint``)
time their calls in a window through :func:`span` the same way. The analysis
(:mod:`tb_iotrace.analysis.checkpoints.detection`) uses the spans when present.
Outside a profiler the wrappers call straight through. Code that bound ``from torch import
save`` before :func:`install` keeps the real function (its saves are still found by shape).
"""
from __future__ import annotations

import contextlib
import functools
import os
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

from tb_iotrace.recording.forklock import ForkSafeLock

SPAN_NAME = "tb_iotrace::checkpoint"
MAX_CALLS = 10_000              # noted calls kept at most (a window that is never exported)
SLACK_NS = 1_000_000            # Kineto's ts against time.time_ns()

_lock = ForkSafeLock()     # a forked child gets it back free, whoever held it
_calls: list[tuple[int, int, int, str, str, str, str]] = []     # (tid, start_ns, end_ns, kind, path, call, root)
_installed = False
_inside = threading.local()       # a checkpoint call on this thread is running (DCP calls torch.save)

__all__ = ["SPAN_NAME", "annotate", "install", "span"]


def _path_of(f: Any) -> str:
    """The path a torch.save/load call names: a str/PathLike, or a file object's name."""
    try:
        if isinstance(f, (str, bytes, os.PathLike)):
            p = os.fspath(f)
            return os.fsdecode(p) if isinstance(p, bytes) else p
        name = getattr(f, "name", None)
        return name if isinstance(name, str) else ""
    except Exception:
        return ""


def _torch_target(kind: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """torch.save(obj, f) / torch.load(f): the file."""
    if kind == "save":
        return args[1] if len(args) > 1 else kwargs.get("f")
    return args[0] if args else kwargs.get("f")


def _dcp_target(kind: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """torch.distributed.checkpoint save/load/async_save: checkpoint_id, else the storage's path."""
    if kwargs.get("checkpoint_id") is not None:
        return kwargs["checkpoint_id"]
    storage = kwargs.get("storage_writer") or kwargs.get("storage_reader")
    return getattr(storage, "path", None)


def _wrap(real: Any, kind: str, target_of: Any = _torch_target, call: str = "") -> Any:
    import torch

    call = call or f"torch.{kind}"

    @functools.wraps(real)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if not torch.autograd.profiler._is_profiler_enabled or getattr(_inside, "on", False):   # noqa: SLF001
            return real(*args, **kwargs)
        try:
            target = target_of(kind, args, kwargs)
        except Exception:
            target = None
        start = time.time_ns()
        _inside.on = True
        try:
            with torch.profiler.record_function(SPAN_NAME):
                return real(*args, **kwargs)
        finally:
            _inside.on = False
            _note(start, kind, _path_of(target), call, _path_of(target))

    wrapper.__tbio_wrapper__ = True      # type: ignore[attr-defined]
    return wrapper


def _note(start: int, kind: str, path: str, call: str, root: str) -> None:
    with _lock:
        if len(_calls) < MAX_CALLS:
            _calls.append((threading.get_native_id(), start, time.time_ns(), kind, path, call, root))


def _profiling() -> bool:
    torch = sys.modules.get("torch")
    try:
        return bool(torch is not None and torch.autograd.profiler._is_profiler_enabled)   # noqa: SLF001
    except AttributeError:
        return False


@contextlib.contextmanager
def span(kind: str, path: str, root: str, call: str) -> Iterator[None]:
    """A library's checkpoint call (``kind`` save or load) timed as a ``tb_iotrace::checkpoint``
    span while a torch profiler records, and noted for :func:`annotate`; outside one, or
    inside another checkpoint call on this thread, nothing."""
    if kind not in ("save", "load") or getattr(_inside, "on", False) or not _profiling():
        yield
        return
    import torch

    start = time.time_ns()
    _inside.on = True
    try:
        with torch.profiler.record_function(SPAN_NAME):
            yield
    finally:
        _inside.on = False
        _note(start, kind, path, call, root)


def install() -> None:
    """Wrap torch.save and torch.load (idempotent; never raises: without it saves are found by
    the files' shape)."""
    global _installed
    with _lock:
        if _installed:
            return
        try:
            import torch
            import torch.serialization as ser

            for name, kind in (("save", "save"), ("load", "load")):
                real = getattr(torch, name)
                if getattr(real, "__tbio_wrapper__", False):
                    continue
                w = _wrap(real, kind)
                setattr(torch, name, w)
                if getattr(ser, name, None) is real:
                    setattr(ser, name, w)
            _installed = True
        except Exception:
            return
    _after_dcp_import()


def _wrap_dcp() -> None:
    """Wrap torch.distributed.checkpoint's save, load and async_save (an async save's span is
    the part the caller waits for: staging and submitting; its writes in the background are
    found by shape)."""
    try:
        import torch.distributed.checkpoint as dcp

        for name, kind in (("save", "save"), ("async_save", "save"), ("load", "load")):
            real = getattr(dcp, name, None)
            if real is not None and not getattr(real, "__tbio_wrapper__", False):
                setattr(dcp, name, _wrap(real, kind, _dcp_target, f"torch.distributed.checkpoint.{name}"))
    except Exception:
        pass


def _after_dcp_import() -> None:
    """Wrap DCP now if the job imported it, else when it does (importing it here would cost the
    job its import time)."""
    import sys

    if "torch.distributed.checkpoint" in sys.modules:
        _wrap_dcp()
    else:
        sys.meta_path.insert(0, _DcpFinder())


class _DcpFinder:
    """A one-shot meta path finder: wraps DCP's functions once its package has been executed."""

    NAME = "torch.distributed.checkpoint"

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        import sys

        if name != self.NAME:
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        import importlib.util

        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        orig = spec.loader.exec_module       # type: ignore[attr-defined]

        def exec_module(module: Any) -> None:
            orig(module)
            _wrap_dcp()

        spec.loader.exec_module = exec_module  # type: ignore[attr-defined]
        return spec


def annotate(trace: dict[str, Any]) -> int:
    """Give each ``tb_iotrace::checkpoint`` event of an exported Kineto trace the kind and path
    of the call it times (in place); the calls used, and older ones, are forgotten. Returns how
    many events got them."""
    events = trace.get("traceEvents")
    if not isinstance(events, list):
        return 0
    base = int(trace.get("baseTimeNanoseconds", 0) or 0)
    with _lock:
        calls = list(_calls)
    done, latest = 0, 0
    for e in events:
        if not isinstance(e, dict) or e.get("name") != SPAN_NAME or e.get("ph") != "X":
            continue
        try:
            t = base + int(float(e["ts"]) * 1000)
        except (KeyError, TypeError, ValueError):
            continue
        latest = max(latest, t)
        for tid, start, end, kind, path, call, root in calls:
            if tid == e.get("tid") and start - SLACK_NS <= t <= end:
                args = e.setdefault("args", {})
                if isinstance(args, dict):
                    args["kind"], args["path"], args["call"], args["root"] = kind, path, call, root
                    done += 1
                break
    with _lock:
        _calls[:] = [c for c in _calls if c[1] > latest + SLACK_NS]
    return done
