"""How the tab gets findings: tb_iotrace.analysis runs in a child process
(:mod:`.findings_worker`), one at a time per capture and at most ``FINDINGS_CHILDREN`` at
once in all, its answer kept in a small LRU keyed by the file's size and mtime; captures above
a size point to the CLI instead. Policy only: the endpoint is :mod:`.impl.findings`."""
from __future__ import annotations

import os
import threading
from collections import OrderedDict
from typing import Any

from . import findings_worker
from .cache import file_key
from .records import total_size

# tb_iotrace.analysis reads the capture file column-wise (tb_iotrace.analysis.source: about 4.4x
# the file at its peak, a few seconds per million I/O events), in a child process (see
# .findings_worker) so TensorBoard's own memory and request latency are untouched, one at a time
# per capture; captures above this size point to the CLI instead.
FINDINGS_MAX_BYTES = int(os.environ.get("TBIO_PLUGIN_FINDINGS_MAX_BYTES", 1 << 30))
FINDINGS_TIMEOUT_S = float(os.environ.get("TBIO_PLUGIN_FINDINGS_TIMEOUT_S", 600))
# Switching runs asks for one capture after another: each child may take 4.4x its file for
# minutes, so they queue for a few slots; a request that waits FINDINGS_WAIT_S for one gets a
# "busy" answer (not cached: opening the run again asks again).
FINDINGS_CHILDREN = max(1, int(os.environ.get("TBIO_PLUGIN_FINDINGS_CHILDREN", 1)))
FINDINGS_WAIT_S = float(os.environ.get("TBIO_PLUGIN_FINDINGS_WAIT_S", 60))
FINDINGS_CACHED = 16            # answers kept, least recently used dropped first
_findings_cache: OrderedDict[tuple[Any, ...], dict[str, Any]] = OrderedDict()
_findings_locks: dict[tuple[Any, ...], threading.Lock] = {}
_findings_guard = threading.Lock()
_children = threading.BoundedSemaphore(FINDINGS_CHILDREN)


def _cached(key: tuple[Any, ...]) -> dict[str, Any] | None:
    with _findings_guard:
        hit = _findings_cache.get(key)
        if hit is not None:
            _findings_cache.move_to_end(key)
        return hit


def _busy() -> dict[str, Any]:
    n = FINDINGS_CHILDREN
    return {"findings": [], "message": (
        f"Findings are being computed for other captures ({n} at a time, waited {FINDINGS_WAIT_S:.0f} s): "
        "open this run again in a moment.")}


def findings_for(path: str) -> dict[str, Any]:
    """The findings of one capture file: cached by its size and mtime; computed in a child
    process, one at a time per capture; a pointer to the CLI above ``FINDINGS_MAX_BYTES``."""
    key = (path, *file_key(path))  # a record: its JSON's and its trace's size and mtime
    hit = _cached(key)
    if hit is not None:
        return hit
    size = total_size(path) if path.endswith(".json") else key[1]
    if size > FINDINGS_MAX_BYTES:
        return {"findings": [], "message": (
            f"This capture is {size >> 20} MiB, above the tab's findings limit "
            f"({FINDINGS_MAX_BYTES >> 20} MiB): run `tb-iotrace report {path}` for its findings.")}
    with _findings_guard:
        lock = _findings_locks.setdefault(key, threading.Lock())
    with lock:  # concurrent requests for one capture wait for one child
        hit = _cached(key)
        if hit is not None:
            return hit
        if not _children.acquire(timeout=FINDINGS_WAIT_S):
            with _findings_guard:
                _findings_locks.pop(key, None)
            return _busy()
        try:
            out = findings_worker.run_child(path, FINDINGS_TIMEOUT_S)
        except RuntimeError as exc:  # cached too: a failing or slow analysis is not started again per request
            out = {"findings": [], "message": f"Findings could not be computed: {exc}"}
        finally:
            _children.release()
            with _findings_guard:
                _findings_locks.pop(key, None)
        with _findings_guard:
            _findings_cache[key] = out
            while len(_findings_cache) > FINDINGS_CACHED:
                _findings_cache.popitem(last=False)
    return out
