"""Giving freed heap memory back to the OS after a big decode (glibc keeps freed blocks in its
arenas otherwise, and the next allocations come on top of them)."""
from __future__ import annotations

import contextlib
import functools
import threading
from typing import Any, Callable, Iterator, TypeVar

_F = TypeVar("_F", bound=Callable[..., Any])

_libc: Any = None
_batch = threading.local()


@contextlib.contextmanager
def one_trim() -> Iterator[None]:
    """Within it, this thread's :func:`trim_memory` calls wait for its end and trim once:
    decoding the 64 captures of an "All hosts" view trimmed after each, and every trim gave
    back pages the next decode faulted in again (~0.15 s of system time in all)."""
    depth = getattr(_batch, "depth", 0)
    _batch.depth = depth + 1
    try:
        yield
    finally:
        _batch.depth = depth
        if depth == 0 and getattr(_batch, "pending", False):
            _batch.pending = False
            trim_memory()


def trim_memory() -> None:
    """``malloc_trim(0)`` where the C library is glibc; nothing elsewhere (inside
    :func:`one_trim`, at its end)."""
    global _libc
    if getattr(_batch, "depth", 0):
        _batch.pending = True
        return
    if _libc is False:
        return
    try:
        if _libc is None:
            import ctypes

            _libc = ctypes.CDLL("libc.so.6")
        _libc.malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: nothing to do
        _libc = False


def trims_memory(fn: _F) -> _F:
    """``fn``, then :func:`trim_memory`, however it returns (a decoder's freed columns go back)."""
    @functools.wraps(fn)
    def trimmed(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        finally:
            trim_memory()
    return trimmed  # type: ignore[return-value]
