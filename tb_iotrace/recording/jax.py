"""JAX profiler integration through the PJRT profiler extension.

jaxlib builds every profiler session from the profilers registered in its own
copy of the profiler library (TensorFlow's pluggable profiler never reaches
it).  Its ``register_plugin_profiler(capsule)`` takes a ``PJRT_Api`` capsule
named "pjrt_c_api" whose extension chain holds a profiler table; the native
module provides one (native/pjrt.c), so every JAX profiler session in this
process — ``jax.profiler.start_trace/stop_trace``, ``trace()``, remote captures
through ``jax.profiler.start_server``, Keras 3 on JAX — calls back here and
gets the window's I/O plane, exactly as TensorFlow's do (:mod:`.window`).

jaxlib checks the table's size exactly and a mismatch crashes the capture, so
registration happens only for jaxlib versions whose expected size is known
(``tb_iotrace.frameworks``); any other version gets one warning and is left untouched.
Registration is once per process and never undone (jaxlib keeps the factory).
"""
from __future__ import annotations

import os
import threading
from typing import Any

from .._ffi import native
from ..frameworks import JAXLIB_TABLE_SIZES, jaxlib_range, jaxlib_table_size
from .importhook import call_after_import
from .window import ProfileWindow

__all__ = ["STATE", "TABLE_SIZES", "attach", "jaxlib_version", "registered", "table_size_for"]

STATE = ProfileWindow("JAX")

# The hooked jaxlib releases and the table size each checks (tb_iotrace.frameworks); a test
# empties it to play a release tb_iotrace does not know.
TABLE_SIZES = JAXLIB_TABLE_SIZES

_attach_lock = threading.Lock()
_attached = False


def _new_lock_in_child() -> None:
    # A fork while another thread was inside attach() would leave the child's copy locked
    # forever: the child's enable() (which attaches) would hang.
    global _attach_lock
    _attach_lock = threading.Lock()


os.register_at_fork(after_in_child=_new_lock_in_child)


def table_size_for(version: str) -> int | None:
    """The profiler table size jaxlib ``version`` checks for, None when not known."""
    return jaxlib_table_size(version, TABLE_SIZES)


def jaxlib_version() -> str:
    import jaxlib.version  # type: ignore[import-not-found]

    return str(jaxlib.version.__version__)


def registered() -> bool:
    """Whether this process's jaxlib calls tb_iotrace at every profile."""
    return bool(native()[1].tbio_jax_registered())


def _register_function() -> Any:
    """jaxlib's register_plugin_profiler: in ``_profiler`` since 0.6.1, in
    ``xla_client.profiler`` from 0.4.20 to 0.6.0."""
    try:
        from jax._src.lib import _profiler  # type: ignore[attr-defined]

        fn = getattr(_profiler, "register_plugin_profiler", None)
        if fn is not None:
            return fn
    except ImportError:
        pass
    from jax._src.lib import xla_client  # type: ignore[attr-defined]

    return xla_client.profiler.register_plugin_profiler


def _capsule(ffi: Any, lib: Any, api: Any) -> Any:
    import ctypes

    new = ctypes.pythonapi.PyCapsule_New
    new.restype = ctypes.py_object
    new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    # the name must outlive the capsule: it is a static string of the native module
    name = int(ffi.cast("uintptr_t", lib.tbio_jax_capsule_name()))
    return new(int(ffi.cast("uintptr_t", api)), ctypes.cast(name, ctypes.c_char_p), None)


def _register_with_jax() -> None:
    """Register the profiler table with an imported jaxlib (once per process)."""
    ffi, lib = native()
    if lib.tbio_jax_registered():
        return
    try:
        version = jaxlib_version()
    except Exception as exc:
        STATE.warn_once("version", "tb_iotrace: cannot tell the jaxlib version (%s); "
                        "JAX profiles will not carry I/O", exc)
        return
    size = table_size_for(version)
    api = lib.tbio_jax_api(size) if size is not None else ffi.NULL
    if api == ffi.NULL:
        STATE.warn_once("version", "tb_iotrace: jaxlib %s is not a version tb_iotrace knows how to hook "
                        "(it hooks jaxlib %s); JAX profiles will not carry I/O", version,
                        jaxlib_range(TABLE_SIZES))
        return
    try:
        register = _register_function()
        register(_capsule(ffi, lib, api))
    except Exception as exc:
        STATE.warn_once("register", "tb_iotrace: jaxlib %s did not take the I/O profiler (%s); "
                        "JAX profiles will not carry I/O", version, exc)
        return
    lib.tbio_jax_set_registered()


def _install_callbacks() -> None:
    ffi, lib = native()

    @ffi.def_extern()
    def tbio_py_jax_start() -> int:
        return STATE.start()

    @ffi.def_extern()
    def tbio_py_jax_stop() -> int:
        return STATE.stop()

    @ffi.def_extern()
    def tbio_py_jax_collect(buffer: Any, size: int) -> int:
        return STATE.collect(ffi, buffer, size)

    lib.tbio_jax_set_python_ready(1)


def attach() -> None:
    """Make JAX profiles in this process carry I/O (now, or when jax is imported)."""
    global _attached
    with _attach_lock:
        if _attached:
            return
        _install_callbacks()
        _attached = True
        call_after_import("jax", _register_with_jax)
