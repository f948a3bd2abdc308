"""enable()/disable()/capture(): the Python face of the native shim."""
from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from tb_iotrace.recording.forklock import ForkSafeLock
from tb_iotrace.recording.ffi import NativeError, last_error, native
from tb_iotrace.recording import jax, library_checkpoints, local_traffic, session, shim_settings, tensorflow
from tb_iotrace.recording.session import Recording, begin_session, check_layout, end_session
from tb_iotrace.recording.shim_settings import MAX_SETTING, set_filters, set_max_files, set_trace_cap

__all__ = ["enable", "disable", "is_enabled", "capture", "Recording", "set_filters", "set_trace_cap", "set_max_files",
           "NativeError"]

_lock = ForkSafeLock()


def _env_prefixes(name: str) -> list[str] | None:
    v = os.environ.get(name)
    return [p for p in v.split(os.pathsep) if p] if v else None


def _env_count(name: str, least: int) -> int | None:
    """A count from the environment (None when unset or empty); ValueError naming the variable
    when it is no whole number from ``least`` to 2**63 - 1."""
    raw = os.environ.get(name, "")
    if raw == "":
        return None
    try:
        n = int(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r:.40}: not a whole number") from None
    if not least <= n <= MAX_SETTING:
        raise ValueError(f"{name}={raw:.40}: must be between {least} and {MAX_SETTING}")
    return n


def enable() -> None:
    """Patch every loaded library (and those loaded later); idempotent.

    Also registers the shim with TensorFlow as a pluggable profiler and with
    JAX as a PJRT profiler plugin (now, or when they are imported), so every
    TensorFlow and JAX profile carries I/O.

    Environment: TBIO_INCLUDE / TBIO_EXCLUDE (os.pathsep-separated prefixes),
    TBIO_TRACE_CAP and TBIO_MAX_FILES are applied on the first call;
    TBIO_TENSORFLOW=0 and TBIO_JAX=0 skip the TensorFlow and JAX registrations."""
    with _lock:
        ffi, lib = native()
        check_layout()
        if lib.tbio_is_enabled():
            return
        # every setting checked before any is applied: a bad one leaves none half set
        cap, most = _env_count("TBIO_TRACE_CAP", 0), _env_count("TBIO_MAX_FILES", 1)
        inc, exc = _env_prefixes("TBIO_INCLUDE"), _env_prefixes("TBIO_EXCLUDE")
        if inc is not None or exc is not None:
            set_filters(inc, exc)
        if cap is not None:
            set_trace_cap(cap)
        if most is not None:
            set_max_files(most)
        if lib.tbio_enable() != 0:
            raise NativeError(f"tb_iotrace could not patch this process: {last_error()}")
        library_checkpoints.install()      # safetensors/orbax/tf.train.Checkpoint calls for the windows
        local_traffic.install()            # the job's own TCP traffic (torch.distributed, TF's cluster) is local
        if os.environ.get("TBIO_TENSORFLOW", "1") != "0":
            tensorflow.attach()
        if os.environ.get("TBIO_JAX", "1") != "0":
            jax.attach()


def enable_shim(exclude_more: list[str]) -> bool:
    """Patch every loaded library, and nothing else (no TensorFlow/JAX registration, no
    checkpoint-library wrappers, no import hooks): what ``tb-iotrace attach`` does in a running
    process, undone by :func:`disable`. ``exclude_more``: path prefixes left out beside the
    current ones. False when the shim was enabled already (then nothing is changed)."""
    with _lock:
        ffi, lib = native()
        check_layout()
        if lib.tbio_is_enabled():
            return False
        set_filters(None, shim_settings.excludes() + [p for p in exclude_more if p])
        if lib.tbio_enable() != 0:
            raise NativeError(f"tb_iotrace could not patch this process: {last_error()}")
        local_traffic.mark_group_sockets()   # a running job's process group: its sockets are its own
        return True


def disable() -> None:
    """Restore every patched slot; safe to call when not enabled."""
    with _lock:
        session.end_all_and_disable()


def is_enabled() -> bool:
    return bool(native()[1].tbio_is_enabled())


@contextmanager
def capture() -> Iterator[Recording]:
    """Record every file access of this process inside the ``with`` block.

    Enables the shim if needed.  Captures may overlap or nest (a TensorFlow
    profile window is one too): each gets exact counters and the trace of its
    own window.  At most 4 record at once; a fifth raises NativeError."""
    enable()
    sess = begin_session()
    recording = Recording()
    try:
        yield recording
    finally:
        end_session(sess, recording)
