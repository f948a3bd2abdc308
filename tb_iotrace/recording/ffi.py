"""Loads the cffi extension (this import is the dlopen that attaches the shim)."""
from __future__ import annotations

from functools import lru_cache
from typing import Any


class NativeError(RuntimeError):
    """The native shim could not be loaded or refused a request."""


@lru_cache(maxsize=1)
def native() -> tuple[Any, Any]:
    """Return (ffi, lib) of tb_iotrace._native, or raise NativeError saying why."""
    try:
        from tb_iotrace import _native
    except ImportError as exc:  # not built, wrong platform, ...
        raise NativeError(
            f"the tb_iotrace native shim is not available ({exc}); "
            "reinstall with a C compiler present: pip install ."
        ) from exc
    return _native.ffi, _native.lib


def last_error() -> str:
    ffi, lib = native()
    return ffi.string(lib.tbio_last_error()).decode("utf-8", "replace")
