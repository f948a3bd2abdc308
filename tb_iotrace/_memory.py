"""Giving freed heap memory back to the OS after a big decode (glibc keeps freed blocks in its
arenas otherwise, and the next allocations come on top of them)."""
from __future__ import annotations

from typing import Any

_libc: Any = None


def trim_memory() -> None:
    """``malloc_trim(0)`` where the C library is glibc; nothing elsewhere."""
    global _libc
    if _libc is False:
        return
    try:
        if _libc is None:
            import ctypes

            _libc = ctypes.CDLL("libc.so.6")
        _libc.malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: nothing to do
        _libc = False
