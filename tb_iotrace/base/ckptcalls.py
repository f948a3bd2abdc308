"""The checkpoint calls a process made (safetensors, orbax, ``tf.train.Checkpoint``: the
library hooks of :mod:`tb_iotrace.recording.library_checkpoints` note them), kept until its
whole-run record is written (:mod:`tb_iotrace.store.runrecord`: ``"checkpoint_calls"``) and for
the TensorFlow/JAX profile windows made meanwhile (:func:`between`: the capture's I/O record
carries those of its window), where the analysis takes them as the phases' spans
(docs/checkpoints.md). Pure: a list and a lock.

A call: ``{"kind": "save"|"load"|"wait", "path", "root", "call", "start_ns", "end_ns", "tid"}``
(CLOCK_REALTIME ns; ``root``: the file or directory its files are written under, which may
differ from ``path``: a library that writes a temporary directory beside the one named and
renames it; ``wait``: orbax's ``wait_until_finished``, the caller waiting for a save's
background writes).
"""
from __future__ import annotations

import os
import threading
from typing import Any

MAX_CALLS = 10_000           # a process saving more keeps its first ones (the rest: by shape)

_lock = threading.Lock()
_calls: list[dict[str, Any]] = []

__all__ = ["MAX_CALLS", "between", "note", "snapshot"]


def note(kind: str, path: str, root: str, call: str, start_ns: int, end_ns: int, tid: int) -> None:
    with _lock:
        if len(_calls) < MAX_CALLS:
            _calls.append({"kind": kind, "path": path, "root": root, "call": call, "start_ns": int(start_ns),
                           "end_ns": int(end_ns), "tid": int(tid)})


def snapshot() -> list[dict[str, Any]]:
    """The calls noted so far, oldest first (copies)."""
    with _lock:
        return [dict(c) for c in _calls]


def between(start_ns: int, end_ns: int) -> list[dict[str, Any]]:
    """The calls that overlap [start_ns, end_ns] (a profile window), oldest first (copies)."""
    with _lock:
        return [dict(c) for c in _calls if c["end_ns"] >= start_ns and c["start_ns"] <= end_ns]


def _forget() -> None:          # a forked child records its own calls, not its parent's
    global _lock
    _lock = threading.Lock()
    _calls.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget)
