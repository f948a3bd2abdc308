"""JAX profiler integration through the PJRT profiler extension.

jaxlib builds every profiler session from the profilers registered in its own
copy of the profiler library (TensorFlow's pluggable profiler never reaches
it).  Its ``register_plugin_profiler(capsule)`` takes a ``PJRT_Api`` capsule
named "pjrt_c_api" whose extension chain holds a profiler table; the native
module provides one (native/pjrt.c), so every JAX profiler session in this
process — ``jax.profiler.start_trace/stop_trace``, ``trace()``, remote captures
through ``jax.profiler.start_server``, Keras 3 on JAX — calls back here and
gets the window's I/O plane, exactly as TensorFlow's do (:mod:`.window`).

jaxlib checks the table's size (up to 0.10 exactly, and a mismatch crashes the capture; from
0.11 a minimum), so registration reads that check from the loaded jaxlib itself
(:mod:`.jaxlib_check`; a stripped library's size comes from the wheels of that release read
before) and hands over a table that passes it (80 or 104 bytes, native/pjrt.c).
A jaxlib without a plugin profiler, or whose check cannot be read or is passed by no table
tb_iotrace has, gets one warning and is left untouched (``TBIO_JAX_TABLE=80|104`` forces a table
on a jaxlib whose check cannot be read). Registration is once per process and never undone
(jaxlib keeps the factory).
"""
from __future__ import annotations

import mmap
import os
from typing import TYPE_CHECKING, Any, Callable

from tb_iotrace.recording.forklock import ForkSafeLock
from tb_iotrace.recording.ffi import native
from tb_iotrace.recording.importhook import call_after_import
from tb_iotrace.base.frameworks import JAXLIB_CHECKS_READ, release
from tb_iotrace.recording.window import ProfileWindow

if TYPE_CHECKING:   # imported when jax is (every process of a `run` imports this module at start)
    from tb_iotrace.recording.jaxlib_check import TableCheck

__all__ = ["IMPLEMENTED_TABLES", "STATE", "attach", "hook_state", "jaxlib_version", "library_paths",
           "loaded_check", "registered"]

STATE = ProfileWindow("JAX")

# The table sizes native/pjrt.c serves (tbio_jax_api).
IMPLEMENTED_TABLES = (80, 104)
# The shared objects that hold jaxlib's C++ (the plugin tracer among it): one since 0.6.0.
LIBRARY_NAMES = ("libjax_common", "xla_extension")
MAPS = "/proc/self/maps"   # where the mapped libraries are listed

_attach_lock = ForkSafeLock()
_attached = False
# What registration found: jaxlib's version, the library read, its check, the table handed over.
_hook_state: dict[str, Any] = {}


def library_paths() -> list[str]:
    """The loaded jaxlib's shared objects that may hold its plugin tracer: the ones of the
    ``jaxlib`` package this process has mapped (``/proc/self/maps``), ``libjax_common`` and
    ``xla_extension`` first; the package's files of those names when none is mapped."""
    import jaxlib  # type: ignore[import-not-found]

    pkg = os.path.realpath(os.path.dirname(jaxlib.__file__)) + os.sep
    mapped: list[str] = []
    try:
        with open(MAPS, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                parts = line.rstrip("\n").split(None, 5)
                path = parts[5] if len(parts) == 6 else ""
                if path.startswith(pkg) and ".so" in os.path.basename(path) and path not in mapped:
                    mapped.append(path)
    except OSError:
        pass
    if not mapped:
        mapped = [os.path.join(dirpath, f) for dirpath, _, names in os.walk(pkg) for f in sorted(names)
                  if f.endswith(".so") and f.startswith(LIBRARY_NAMES)]

    def rank(path: str) -> tuple[int, str]:
        return (0 if os.path.basename(path).startswith(LIBRARY_NAMES) else 1, path)

    return sorted(mapped, key=rank)


def loaded_check() -> tuple[TableCheck, str]:
    """How the loaded jaxlib checks the profiler table, and the library it was read from."""
    from tb_iotrace.recording.jaxlib_check import TableCheck, read_table_check

    for path in library_paths():
        try:
            with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as m:
                check = read_table_check(m)
        except (OSError, ValueError):
            continue
        if check.kind != "none":
            return check, path
    return TableCheck("none"), ""


# How the check is found; a test replaces it to play a release tb_iotrace cannot read.
read_check: Callable[[], tuple[TableCheck, str]] = loaded_check


def hook_state() -> dict[str, Any]:
    """What registration with jaxlib found (empty before jax is imported): ``jaxlib``,
    ``library``, ``check`` (its description), ``table`` (bytes, None when not registered)
    and ``registered``."""
    return dict(_hook_state, registered=registered()) if _hook_state else {}


def _forced_table() -> int | None:
    raw = os.environ.get("TBIO_JAX_TABLE", "").strip()
    return int(raw) if raw.isdigit() and int(raw) in IMPLEMENTED_TABLES else None


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
    """Register a profiler table with an imported jaxlib (once per process), if the table
    check the jaxlib makes is one a table of tb_iotrace passes."""
    ffi, lib = native()
    if lib.tbio_jax_registered():
        return
    try:
        version = jaxlib_version()
    except Exception as exc:
        STATE.warn_once("version", "tb_iotrace: cannot tell the jaxlib version (%s); "
                        "JAX profiles will not carry I/O", exc)
        return
    from tb_iotrace.recording.jaxlib_check import TableCheck, table_size_for, with_known_size

    try:
        check, path = read_check()
    except Exception as exc:   # never into the user's import of jax
        check, path = TableCheck("unknown", detail=f"reading jaxlib failed: {exc}"), ""
    check = with_known_size(check, release(version), JAXLIB_CHECKS_READ)
    size = table_size_for(check, IMPLEMENTED_TABLES)
    forced = _forced_table() if check.kind == "unknown" else None
    _hook_state.update(jaxlib=version, library=path, check=check.describe(), table=size or forced)
    if size is None and forced is None:
        if check.kind == "none":
            why = "it has no plugin profiler (jaxlib 0.4.19 and later have one)"
        elif check.kind == "unknown":
            why = (f"it makes {check.describe()}; set TBIO_JAX_TABLE=80 or 104 to register a table "
                   "anyway (a size it does not take crashes its captures)")
        else:
            why = (f"it wants {check.describe()} and tb_iotrace has tables of "
                   f"{' and '.join(map(str, IMPLEMENTED_TABLES))} bytes")
        STATE.warn_once("version", "tb_iotrace cannot hook jaxlib %s (%s): %s; JAX profiles will not "
                        "carry I/O", version, os.path.basename(path) or "no library read", why)
        return
    api = lib.tbio_jax_api(size or forced)
    try:
        register = _register_function()
        register(_capsule(ffi, lib, api))
    except Exception as exc:
        STATE.warn_once("register", "tb_iotrace: jaxlib %s did not take the I/O profiler (%s); "
                        "JAX profiles will not carry I/O", version, exc)
        return
    lib.tbio_jax_set_registered()


def _install_callbacks() -> None:
    STATE.install_callbacks("tbio_py_jax", "tbio_jax_set_python_ready")


def attach() -> None:
    """Make JAX profiles in this process carry I/O (now, or when jax is imported)."""
    global _attached
    with _attach_lock:
        if _attached:
            return
        _install_callbacks()
        _attached = True
        call_after_import("jax", _register_with_jax)
        call_after_import("jax", _wrap_url_profiles)   # a URL log dir: staged, uploaded


def _wrap_url_profiles() -> None:
    from tb_iotrace.recording import url_profiles

    url_profiles.wrap_jax()
