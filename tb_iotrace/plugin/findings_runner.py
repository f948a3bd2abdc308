"""How the tab gets findings: tb_iotrace.analysis runs in a child process
(:mod:`.findings_worker`), one at a time per capture and at most ``FINDINGS_CHILDREN`` at
once in all, its answer kept in a small LRU keyed by the file's size and mtime; captures above
a size point to the CLI instead. Policy only: the endpoint is :mod:`tb_iotrace.plugin.endpoints.findings`."""
from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from typing import Any

from tb_iotrace.model.source_kinds import RECORD, listed_kind
from tb_iotrace.plugin import findings_worker
from tb_iotrace.plugin.cache import file_key
from tb_iotrace.model.tab.of_record import total_size

# tb_iotrace.analysis reads the capture file column-wise (tb_iotrace.analysis.slim_xspace: about 4.4x
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
# "All hosts" asks for every host's findings: they are computed in one child for all the hosts
# not cached yet (findings_worker --each), in the background; the request waits up to this long
# and answers with the hosts done so far ("pending": the others; asking again shows more).
FINDINGS_ALL_WAIT_S = float(os.environ.get("TBIO_PLUGIN_FINDINGS_ALL_WAIT_S", 5))
FINDINGS_CACHED = 256           # answers kept (a few KB each), least recently used dropped first
_findings_cache: OrderedDict[tuple[Any, ...], dict[str, Any]] = OrderedDict()
_findings_locks: dict[tuple[Any, ...], threading.Lock] = {}
_findings_guard = threading.Lock()
_children = threading.BoundedSemaphore(FINDINGS_CHILDREN)
_in_batch: set[tuple[Any, ...]] = set()     # keys a background batch is computing
_batch_done = threading.Condition(_findings_guard)


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


def _store(key: tuple[Any, ...], out: dict[str, Any]) -> None:
    """Cache an answer (holding ``_findings_guard``)."""
    _findings_cache[key] = out
    _findings_cache.move_to_end(key)
    while len(_findings_cache) > FINDINGS_CACHED:
        _findings_cache.popitem(last=False)


def _too_big(path: str, key: tuple[Any, ...]) -> dict[str, Any] | None:
    size = total_size(path) if listed_kind(path) == RECORD else key[1]
    if size > FINDINGS_MAX_BYTES:
        return {"findings": [], "message": (
            f"This capture is {size >> 20} MiB, above the tab's findings limit "
            f"({FINDINGS_MAX_BYTES >> 20} MiB): run `tb-iotrace report {path}` for its findings.")}
    return None


def _run_batch(items: list[tuple[str, tuple[Any, ...]]]) -> None:
    """Compute the findings of ``items`` ((path, key)) in one child, caching each answer as it
    arrives; on the child's failure the unanswered ones get its reason (cached too)."""
    keys = dict(items)
    done: set[str] = set()

    def on_result(path: str, out: dict[str, Any] | None, error: str | None) -> None:
        if path not in keys:
            return
        if out is None:
            out = {"findings": [], "message": f"Findings could not be computed: {error}"}
        with _batch_done:
            _store(keys[path], out)
            _in_batch.discard(keys[path])
            done.add(path)
            _batch_done.notify_all()

    try:
        with _children:  # the global limit; this runs in the background, so it may wait
            findings_worker.run_child_each([p for p, _ in items], FINDINGS_TIMEOUT_S, on_result)
    except Exception as exc:  # RuntimeError from the child; anything else must not hang requests
        for path, key in items:
            if path not in done:
                on_result(path, {"findings": [], "message": f"Findings could not be computed: {exc}"}, None)
    finally:
        with _batch_done:
            _in_batch.difference_update(keys.values())
            _batch_done.notify_all()


def findings_for_all(paths: list[str], wait_s: float | None = None) -> dict[str, dict[str, Any] | None]:
    """The findings of several capture files (every host of a run): cached answers at once;
    the others computed in one background child for all of them (one at a time with the other
    children), waited for up to ``wait_s`` (``FINDINGS_ALL_WAIT_S``). A path whose answer is
    not ready by then maps to None: asking again later picks it up from the cache."""
    wait_s = FINDINGS_ALL_WAIT_S if wait_s is None else wait_s
    out: dict[str, dict[str, Any] | None] = {}
    todo: dict[str, tuple[Any, ...]] = {}
    for path in paths:
        key = (path, *file_key(path))
        hit = _cached(key)
        if hit is None:
            hit = _too_big(path, key)
        if hit is not None:
            out[path] = hit
        else:
            todo[path] = key
    if todo:
        with _batch_done:
            new = [(p, k) for p, k in todo.items() if k not in _in_batch]
            _in_batch.update(k for _, k in new)
        if new:
            threading.Thread(target=_run_batch, args=(new,), name="tb_iotrace-findings", daemon=True).start()
        deadline = time.monotonic() + wait_s
        with _batch_done:
            while True:
                missing = [p for p, k in todo.items() if k not in _findings_cache]
                left = deadline - time.monotonic()
                if not missing or left <= 0 or not any(todo[p] in _in_batch for p in missing):
                    break
                _batch_done.wait(left)
            for p, k in todo.items():
                out[p] = _findings_cache.get(k)
    return out


def findings_for(path: str) -> dict[str, Any]:
    """The findings of one capture file: cached by its size and mtime; computed in a child
    process, one at a time per capture; a pointer to the CLI above ``FINDINGS_MAX_BYTES``."""
    key = (path, *file_key(path))  # a record: its JSON's and its trace's size and mtime
    hit = _cached(key)
    if hit is not None:
        return hit
    big = _too_big(path, key)
    if big is not None:
        return big
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
            _store(key, out)
    return out
