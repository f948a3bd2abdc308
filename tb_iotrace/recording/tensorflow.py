"""TensorFlow profiler integration through the pluggable profiler C API.

The native module exports ``TF_InitProfiler``; once TensorFlow has loaded it
(``load_pluggable_device_library``), every profiler session in this process
— ``tf.profiler.experimental.start/stop``, ``Profile``, the Keras callback,
and remote captures through the profiler server — calls back here:

- start: begin a native recording session of its own (independent of any
  user ``capture()`` running at the same time);
- stop: end it and keep the result;
- collect: serialize the I/O as an XSpace whose one plane TensorFlow merges
  into its host plane (see ``PLANE_NAME``) before it normalizes timestamps, so
  event times are given as absolute CLOCK_REALTIME ns.

Nothing here may raise into TensorFlow: every failure is logged once and the
capture goes on without I/O.
"""
from __future__ import annotations

import logging
import os
import sys
import threading
from typing import Any

from .._ffi import native
from .session import Capture, begin_session, end_session

log = logging.getLogger("tb_iotrace")

# TensorFlow merges planes of this name into /host:CPU when it post-processes
# a capture (MergeHostPlanesAndSortLines), which puts the I/O lines where both
# of xprof's trace viewers draw them (see tb_iotrace.xplane.iowriter).
PLANE_NAME = "/host:python-tracer"
ENV_LIBRARY_PATH = "TF_PLUGGABLE_DEVICE_LIBRARY_PATH"


class _ProfilerState:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.session: Any = None
        self.pending: Any = None        # Capture of the last window
        self.payload: bytes | bytearray | None = None
        self.warned: set[str] = set()
        self.windows = 0

    def warn_once(self, key: str, msg: str, *args: Any) -> None:
        if key not in self.warned:
            self.warned.add(key)
            log.warning(msg, *args)


STATE = _ProfilerState()


def library_path() -> str:
    ffi, lib = native()
    from .. import _native  # type: ignore[attr-defined]

    return os.path.abspath(_native.__file__)


def _serialize(cap: Capture) -> bytes | bytearray:
    from ..xplane import io_space_bytes  # here, not at the top: enable() stays light

    # absolute CLOCK_REALTIME ns: TF normalizes every plane to the profile start after merging
    return io_space_bytes(cap.to_iotrace(), PLANE_NAME, start_ns=0)


def _install_callbacks() -> None:
    ffi, lib = native()

    @ffi.def_extern()
    def tbio_py_prof_start() -> int:
        try:
            with STATE.lock:
                STATE.pending, STATE.payload = None, None
                STATE.session = begin_session()
            return 0
        except BaseException as exc:  # never into TensorFlow
            STATE.warn_once("start", "tb_iotrace: could not start I/O capture: %s", exc)
            return -1

    @ffi.def_extern()
    def tbio_py_prof_stop() -> int:
        try:
            with STATE.lock:
                if STATE.session is None:
                    return 0
                cap = Capture()
                end_session(STATE.session, cap)
                STATE.session = None
                STATE.pending = cap
                STATE.windows += 1
            return 0
        except BaseException as exc:
            STATE.warn_once("stop", "tb_iotrace: could not stop I/O capture: %s", exc)
            return -1

    @ffi.def_extern()
    def tbio_py_prof_collect(buffer: Any, size: int) -> int:
        try:
            with STATE.lock:
                if STATE.payload is None:
                    if STATE.pending is None:
                        return 0
                    STATE.payload = _serialize(STATE.pending)
                data = STATE.payload
                if buffer == ffi.NULL:
                    return len(data)
                if size < len(data):
                    return -1
                ffi.memmove(buffer, data, len(data))
                STATE.payload, STATE.pending = None, None
                return len(data)
        except BaseException as exc:
            STATE.warn_once("collect", "tb_iotrace: could not write the I/O plane: %s", exc)
            return -1

    lib.tbio_tf_set_python_ready(1)


_attach_lock = threading.Lock()
_attached = False


def _load_into_tensorflow() -> None:
    """Register the shim with an imported TensorFlow (no-op if already done)."""
    _, lib = native()
    if lib.tbio_tf_registered():
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


class _TensorFlowImportHook:
    """Registers the profiler right after ``import tensorflow`` finishes."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "tensorflow":
            return None
        import importlib.util

        if self in sys.meta_path:
            sys.meta_path.remove(self)   # one shot; the other finders locate tensorflow
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        orig_exec = loader.exec_module  # type: ignore[attr-defined]

        def exec_module(module: Any) -> None:
            orig_exec(module)
            _load_into_tensorflow()

        loader.exec_module = exec_module  # type: ignore[attr-defined]
        return spec


def attach() -> None:
    """Make TensorFlow profiles in this process carry I/O (now, or when TF is imported)."""
    global _attached
    with _attach_lock:
        if _attached:
            return
        _install_callbacks()
        _attached = True
        if "tensorflow" in sys.modules:
            _load_into_tensorflow()
        else:
            sys.meta_path.insert(0, _TensorFlowImportHook())
