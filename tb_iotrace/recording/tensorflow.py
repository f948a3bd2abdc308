"""TensorFlow profiler integration through the pluggable profiler C API.

The native module exports ``TF_InitProfiler``; once TensorFlow has loaded it
(``load_pluggable_device_library``), every profiler session in this process
— ``tf.profiler.experimental.start/stop``, ``Profile``, the Keras callback,
and remote captures through the profiler server — calls back here:

- start: begin a native recording session of its own (independent of any
  user ``capture()`` running at the same time);
- stop: end it and keep the result until collect asks for it, or until the
  Python ``stop`` that ended it returns without collecting (``save=False``, Keras'
  warm-up window: TensorFlow tells a profiler nothing more, so that ``stop`` is
  wrapped, see :func:`_drop_unsaved_windows`);
- collect: serialize the I/O as an XSpace whose one plane TensorFlow merges
  into its host plane (:mod:`.window`).
"""
from __future__ import annotations

import functools
import os
import sys
from typing import Any

from tb_iotrace.recording.forklock import ForkSafeLock
from tb_iotrace.recording.ffi import native
from tb_iotrace.recording.importhook import call_after_import
from tb_iotrace.recording.tf_iterator import wrap_iterators
from tb_iotrace.recording.window import PLANE_NAME, ProfileWindow

__all__ = ["ENV_LIBRARY_PATH", "PLANE_NAME", "STATE", "attach", "library_path"]
ENV_LIBRARY_PATH = "TF_PLUGGABLE_DEVICE_LIBRARY_PATH"

STATE = ProfileWindow("TensorFlow")


def library_path() -> str:
    ffi, lib = native()
    from tb_iotrace import _native

    return os.path.abspath(_native.__file__)


def _install_callbacks() -> None:
    STATE.install_callbacks("tbio_py_prof", "tbio_tf_set_python_ready")


_attach_lock = ForkSafeLock()
_attached = False


def _load_into_tensorflow() -> None:
    """Register the shim with an imported TensorFlow (no-op if already done)."""
    _, lib = native()
    if lib.tbio_tf_registered():
        _drop_unsaved_windows()
        return
    try:
        from tensorflow.python.framework import load_library

        load_library.load_pluggable_device_library(library_path())
    except Exception as exc:  # old TF, stripped build, ...
        STATE.warn_once("load", "tb_iotrace: TensorFlow did not load the I/O profiler (%s); "
                        "TensorFlow profiles will not carry I/O", exc)
        return
    if not lib.tbio_tf_registered():
        STATE.warn_once("load", "tb_iotrace: TensorFlow loaded the library but did not register "
                        "its profiler; TensorFlow profiles will not carry I/O")
        return
    _drop_unsaved_windows()


def _drop_unsaved_windows() -> None:
    """Wrap ``tf.profiler.experimental.stop`` so that a window it stopped without collecting
    (``save=False``: Keras' warm-up, an abandoned profile) is dropped when it returns rather
    than kept until the next start. The one function object is replaced wherever a TensorFlow
    module holds it (profiler_v2, the public API modules); remote captures never go through it
    and always collect. Idempotent; where TensorFlow has no such function nothing changes."""
    try:
        from tensorflow.python.profiler import profiler_v2
    except Exception:
        return
    real = profiler_v2.__dict__.get("stop")
    if real is None or getattr(real, "__tbio_wrapper__", False):
        return

    @functools.wraps(real)
    def stop(*args: Any, **kwargs: Any) -> Any:
        window = STATE.windows + 1          # the number the window it stops gets
        try:
            return real(*args, **kwargs)
        finally:
            STATE.forget_uncollected(window)

    stop.__tbio_wrapper__ = True  # type: ignore[attr-defined]
    for name, mod in list(sys.modules.items()):
        # __dict__, not getattr: TensorFlow's lazily loaded API modules import on attribute access
        if name.startswith("tensorflow") and getattr(mod, "__dict__", {}).get("stop") is real:
            mod.stop = stop  # type: ignore[attr-defined]


def attach() -> None:
    """Make TensorFlow profiles in this process carry I/O (now, or when TF is imported)."""
    global _attached
    with _attach_lock:
        if _attached:
            return
        _install_callbacks()
        _attached = True
        call_after_import("tensorflow", _load_into_tensorflow)
        call_after_import("tensorflow", _wrap_url_profiles)   # a URL log dir: staged, uploaded
        call_after_import("tensorflow", wrap_iterators)   # the loop's whole next(): its input wait


def _wrap_url_profiles() -> None:
    from tb_iotrace.recording import url_profiles   # imported with TensorFlow, not at every start

    url_profiles.wrap_tensorflow()
