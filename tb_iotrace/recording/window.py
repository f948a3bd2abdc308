"""One framework profile window's recording: start, stop, collect.

A framework's profiler session (TensorFlow's pluggable profiler, JAX's PJRT
profiler extension) calls start, stop and then collect; collect hands over
the window's I/O as a serialized XSpace whose one plane the framework merges
into its host plane before it normalizes timestamps, so event times are
absolute CLOCK_REALTIME ns.  Nothing here raises: a failure is logged once and
the capture goes on without I/O.
"""
from __future__ import annotations

import logging
from typing import Any

from tb_iotrace.base import ckptcalls
from tb_iotrace.recording.ffi import native
from tb_iotrace.recording.forklock import ForkSafeLock
from tb_iotrace.recording.session import Recording, begin_session, end_session

log = logging.getLogger("tb_iotrace")

# Both frameworks' post-processing (MergeHostPlanesAndSortLines) merges planes of
# this name into /host:CPU, where xprof's trace viewers draw them
# (see tb_iotrace.store.xplane.encode).
PLANE_NAME = "/host:python-tracer"


class ProfileWindow:
    """The recording state of one framework's profiler (one window at a time)."""

    def __init__(self, framework: str) -> None:
        self.framework = framework
        # a fork while another thread is inside start/stop/collect must not leave the child's
        # copy held forever (its own profile windows would hang)
        self.lock = ForkSafeLock()
        self.session: Any = None
        self.pending: Any = None        # Recording of the last window
        self.payload: bytes | bytearray | None = None
        self.warned: set[str] = set()
        self.windows = 0

    def install_callbacks(self, prefix: str, set_ready: str) -> None:
        """Give the shim this window's start, stop and collect as its ``extern "Python"``
        callbacks ``<prefix>_start``, ``<prefix>_stop`` and ``<prefix>_collect``, then tell it
        Python is ready (``lib.<set_ready>(1)``)."""
        ffi, lib = native()
        ffi.def_extern(name=f"{prefix}_start")(lambda: self.start())
        ffi.def_extern(name=f"{prefix}_stop")(lambda: self.stop())
        ffi.def_extern(name=f"{prefix}_collect")(lambda buffer, size: self.collect(ffi, buffer, size))
        getattr(lib, set_ready)(1)

    def forget_uncollected(self, window: int) -> None:
        """Drop window number ``window`` if it is still the last one, stopped and not collected
        (the framework's stop returned without collecting it: it never will)."""
        with self.lock:
            if self.windows == window and self.session is None:
                self.pending, self.payload = None, None

    def warn_once(self, key: str, msg: str, *args: Any) -> None:
        if key not in self.warned:
            self.warned.add(key)
            log.warning(msg, *args)

    def start(self) -> int:
        try:
            with self.lock:
                self.pending, self.payload = None, None
                if self.session is not None:
                    # started again without a stop (a session that failed elsewhere, started
                    # anew): the open one ends unread, or it would hold a slot for good
                    stale, self.session = self.session, None
                    end_session(stale, None)
                self.session = begin_session()
            return 0
        except BaseException as exc:  # never into the framework
            self.warn_once("start", "tb_iotrace: could not start I/O capture for %s: %s", self.framework, exc)
            return -1

    def stop(self) -> int:
        try:
            with self.lock:
                if self.session is None:
                    return 0
                recording = Recording()
                end_session(self.session, recording)
                self.session = None
                self.pending = recording
                self.windows += 1
            return 0
        except BaseException as exc:
            self.warn_once("stop", "tb_iotrace: could not stop I/O capture for %s: %s", self.framework, exc)
            return -1

    def collect(self, ffi: Any, buffer: Any, size: int) -> int:
        """Bytes of the window's XSpace: the size when ``buffer`` is NULL, else copied into it
        (-1 when it does not fit or cannot be made); 0 when there is nothing to give."""
        try:
            with self.lock:
                if self.payload is None:
                    if self.pending is None:
                        return 0
                    self.payload = serialize(self.pending)
                data = self.payload
                if buffer == ffi.NULL:
                    return len(data)
                if size < len(data):
                    return -1
                ffi.memmove(buffer, data, len(data))
                self.payload, self.pending = None, None
                return len(data)
        except BaseException as exc:
            self.warn_once("collect", "tb_iotrace: could not write the I/O plane for %s: %s", self.framework, exc)
            return -1


def serialize(recording: Recording) -> bytes | bytearray:
    """The window's XSpace bytes: its I/O, and in its record the checkpoint library calls
    noted during it (safetensors, orbax, ``tf.train.Checkpoint``: the analysis labels their
    saves by call)."""
    from tb_iotrace.store.xplane import io_space_bytes

    trace = recording.to_iotrace()
    trace.checkpoint_calls = ckptcalls.between(recording.start_ns, recording.end_ns)
    # absolute CLOCK_REALTIME ns: the framework normalizes every plane to the profile start after merging
    return io_space_bytes(trace, PLANE_NAME, start_ns=0)
