"""Op and counter names, read from the native tables generated from
native/hooks.def and native/counters.def (never typed here)."""
from __future__ import annotations

from functools import lru_cache

from tb_iotrace.recording.ffi import native

MODULES = ("POSIX", "STDIO")


@lru_cache(maxsize=1)
def op_names() -> tuple[str, ...]:
    ffi, lib = native()
    return tuple(ffi.string(lib.tbio_op_name(i)).decode() for i in range(lib.tbio_op_count()))


@lru_cache(maxsize=None)
def counter_names(module: str, is_float: bool) -> tuple[str, ...]:
    ffi, lib = native()
    m = MODULES.index(module)
    n = lib.tbio_counter_count(m, int(is_float))
    return tuple(ffi.string(lib.tbio_counter_name(m, int(is_float), i)).decode() for i in range(n))
