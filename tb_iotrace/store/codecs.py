"""Loads the compiled XPlane codecs (``tb_iotrace._codec``: native/codec/encode.c and
xdecode.c). A module of its own, apart from the interposer, so reading and writing captures
never loads the shim. Every caller has a NumPy path for when it is not built."""
from __future__ import annotations

from functools import lru_cache
from typing import Any


@lru_cache(maxsize=1)
def codec() -> tuple[Any, Any] | None:
    """(ffi, lib) of tb_iotrace._codec, or None where it is not built."""
    try:
        from tb_iotrace import _codec
    except ImportError:  # built without a C compiler: the NumPy paths
        return None
    return _codec.ffi, _codec.lib
