"""A module-level lock that a forked child gets back unlocked.

A fork while another thread holds a plain ``threading.Lock`` leaves the child's copy locked
forever: the child's next ``enable()``, ``capture()`` or attach would hang. The native shim
resets its own locks at fork; this does the same for the Python side's."""
from __future__ import annotations

import os
import threading
from types import TracebackType


class ForkSafeLock:
    """``with lock:`` as with ``threading.Lock``; replaced by a fresh lock in a forked child."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        os.register_at_fork(after_in_child=self._renew)

    def _renew(self) -> None:
        self._lock = threading.Lock()

    def __enter__(self) -> bool:
        return self._lock.acquire()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._lock.release()

    def locked(self) -> bool:
        return self._lock.locked()
