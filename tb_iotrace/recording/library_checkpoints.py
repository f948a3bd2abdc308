"""Checkpoint calls of safetensors, orbax and ``tf.train.Checkpoint``, noted for the whole-run
record (:mod:`tb_iotrace.base.ckptcalls`; docs/checkpoints.md).

:func:`install` (``tb-iotrace run`` calls it at start-up in every process) wraps, once the job
imports the library (importing it here would cost the job its import time):

- ``safetensors.torch.save_file`` / ``load_file`` (the file named; a save writes a temporary
  file in its directory and renames it; a load maps the file: no read calls, no bytes);
- orbax: ``Checkpointer``, ``AsyncCheckpointer``, ``StandardCheckpointer`` ``save`` /
  ``restore``, ``CheckpointManager.save`` / ``restore`` (orbax writes a temporary directory
  beside the one named and renames it: the files are looked for under its parent); an async
  save's call is what the caller waits for, its writes in the background are found by shape;
- ``tf.train.Checkpoint`` ``save`` / ``write`` / ``restore`` / ``read`` (the files beside the
  prefix: ``.index``, ``.data-NNNNN-of-NNNNN``);
- Keras 3: ``keras.Model.save`` / ``save_weights`` / ``load_weights`` (what ``ModelCheckpoint``
  calls each epoch; the ``.keras`` zip or ``.weights.h5`` file is written in place).

Each call is timed and noted (kind, path, the directory or file its files are under, the
function, start, end, thread); a call made inside another noted one (a manager's checkpointer)
is not noted again. The notes go to the whole-run record and to the TensorFlow/JAX profile
windows made meanwhile (:mod:`tb_iotrace.recording.window`); while a torch profiler records,
a save or load is also a ``tb_iotrace::checkpoint`` span of the PyTorch trace
(:func:`tb_iotrace.recording.checkpoint_hooks.span`). orbax's ``wait_until_finished``
(``AsyncCheckpointer``, ``CheckpointManager``) is noted as a ``wait``: the caller blocked on
an async save's background writes. The wrapper never changes what the call does or returns, and a failure
to wrap leaves the library as it was (its saves are then found by shape).
"""
from __future__ import annotations

import functools
import importlib.util
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from tb_iotrace.base import ckptcalls
from tb_iotrace.recording.forklock import ForkSafeLock
from tb_iotrace.recording import checkpoint_hooks

_inside = threading.local()
_lock = ForkSafeLock()     # a forked child gets it back free, whoever held it
_installed = False

__all__ = ["install", "wrap_now"]


def _fspath(p: Any) -> str:
    try:
        s = os.fspath(p)
        return os.fsdecode(s) if isinstance(s, bytes) else str(s)
    except TypeError:
        return str(p) if p is not None else ""


def _parent(p: str) -> str:
    return os.path.dirname(os.path.abspath(p.rstrip("/"))) if p else ""


# where a call's files are: (path shown, root its files are under) from (self, args, kwargs)
def _st_target(kind: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[str, str]:
    f = _fspath(args[1] if kind == "save" and len(args) > 1 else args[0] if kind == "load" and args
                else kwargs.get("filename"))
    f = os.path.abspath(f) if f else f
    return f, (_parent(f) if kind == "save" else f)     # safetensors writes a temporary file beside it


def _orbax_target(kind: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[str, str]:
    d = _fspath(args[1] if len(args) > 1 else kwargs.get("directory"))
    d = os.path.abspath(d) if d else d
    return d, (_parent(d) if kind == "save" else d)


def _manager_target(kind: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[str, str]:
    root = _fspath(getattr(args[0], "directory", ""))
    step = args[1] if len(args) > 1 else kwargs.get("step")
    return (os.path.join(root, str(step)) if root and step is not None else root), root


def _wait_target(kind: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[str, str]:
    d = _fspath(getattr(args[0], "directory", "")) if args else ""
    return d, d


def _tf_target(kind: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[str, str]:
    p = _fspath(args[1] if len(args) > 1 else kwargs.get("file_prefix") or kwargs.get("save_path"))
    p = os.path.abspath(p) if p else p
    return p, _parent(p)


def _wrap(real: Callable[..., Any], kind: str, target: Callable[..., tuple[str, str]], call: str) -> Callable[..., Any]:
    if getattr(real, "__tbio_wrapper__", False):
        return real

    @functools.wraps(real)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if getattr(_inside, "on", False):
            return real(*args, **kwargs)
        try:
            path, root = target(kind, args, kwargs)
        except Exception:
            path, root = "", ""
        start = time.time_ns()
        _inside.on = True
        try:
            with checkpoint_hooks.span(kind, path, root, call):
                return real(*args, **kwargs)
        finally:
            _inside.on = False
            ckptcalls.note(kind, path, root, call, start, time.time_ns(), threading.get_native_id())

    wrapper.__tbio_wrapper__ = True      # type: ignore[attr-defined]
    return wrapper


def _wrap_attr(owner: Any, name: str, kind: str, target: Callable[..., tuple[str, str]], call: str) -> None:
    real = owner.__dict__.get(name) if isinstance(owner, type) else getattr(owner, name, None)
    if real is not None and callable(real):
        setattr(owner, name, _wrap(real, kind, target, call))


def _safetensors(mod: Any) -> None:
    _wrap_attr(mod, "save_file", "save", _st_target, "safetensors.torch.save_file")
    _wrap_attr(mod, "load_file", "load", _st_target, "safetensors.torch.load_file")


def _orbax(mod: Any) -> None:
    for cls_name in ("Checkpointer", "AsyncCheckpointer", "StandardCheckpointer"):
        cls = getattr(mod, cls_name, None)
        if isinstance(cls, type):
            _wrap_attr(cls, "save", "save", _orbax_target, f"orbax.checkpoint.{cls_name}.save")
            _wrap_attr(cls, "restore", "load", _orbax_target, f"orbax.checkpoint.{cls_name}.restore")
    mgr = getattr(mod, "CheckpointManager", None)
    if isinstance(mgr, type):
        _wrap_attr(mgr, "save", "save", _manager_target, "orbax.checkpoint.CheckpointManager.save")
        _wrap_attr(mgr, "restore", "load", _manager_target, "orbax.checkpoint.CheckpointManager.restore")
    for cls_name in ("AsyncCheckpointer", "CheckpointManager"):      # the loop waiting for the writes
        cls = getattr(mod, cls_name, None)
        if isinstance(cls, type):
            _wrap_attr(cls, "wait_until_finished", "wait", _wait_target,
                       f"orbax.checkpoint.{cls_name}.wait_until_finished")


def _tensorflow(mod: Any) -> None:
    cls = getattr(getattr(mod, "train", None), "Checkpoint", None)
    if isinstance(cls, type):
        for name, kind in (("save", "save"), ("write", "save"), ("restore", "load"), ("read", "load")):
            _wrap_attr(cls, name, kind, _tf_target, f"tf.train.Checkpoint.{name}")


def _keras_target(kind: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[str, str]:
    f = _fspath(args[1] if len(args) > 1 else kwargs.get("filepath"))
    f = os.path.abspath(f) if f else f
    return f, f


def _keras(mod: Any) -> None:
    cls = getattr(mod, "Model", None)
    if isinstance(cls, type):
        for name, kind in (("save", "save"), ("save_weights", "save"), ("load_weights", "load")):
            _wrap_attr(cls, name, kind, _keras_target, f"keras.Model.{name}")


HOOKS: dict[str, Callable[[Any], None]] = {"safetensors.torch": _safetensors, "orbax.checkpoint": _orbax,
                                           "tensorflow": _tensorflow, "keras": _keras}


def wrap_now(name: str) -> None:
    """Wrap the library ``name`` (a key of :data:`HOOKS`) if it is imported; never raises."""
    mod = sys.modules.get(name)
    if mod is None:
        return
    try:
        HOOKS[name](mod)
    except Exception:
        pass


class _Finder:
    """A meta path finder: wraps a library's functions once its module has been executed."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name not in HOOKS or getattr(_inside, "finding", False):
            return None
        _inside.finding = True
        try:
            spec = importlib.util.find_spec(name)
        except Exception:
            return None
        finally:
            _inside.finding = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        orig = spec.loader.exec_module

        def exec_module(module: Any) -> None:
            orig(module)
            wrap_now(name)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def install() -> None:
    """Wrap the libraries already imported, and the others when the job imports them
    (idempotent; never raises)."""
    global _installed
    with _lock:
        if _installed:
            return
        _installed = True
    try:
        for name in HOOKS:
            wrap_now(name)
        sys.meta_path.insert(0, _Finder())
    except Exception:
        pass
