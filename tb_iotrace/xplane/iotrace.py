"""The per-operation I/O trace exchanged between capture, xplane writer and readers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

# Column name -> dtype. op and path are object arrays of str.
COLUMNS: dict[str, Any] = {
    "op": object,
    "path": object,
    "offset": np.int64,
    "requested": np.int64,
    "returned": np.int64,
    "fd": np.int32,
    "errno": np.int32,
    "start_ns": np.int64,
    "end_ns": np.int64,
    "tid": np.int64,
}


class ThreadInfo(NamedTuple):
    """What the capture knows about an OS thread that did I/O."""

    pthread_id: int  # pthread_self() value (TF's host line id is std::hash of it)
    comm: str  # the thread's comm name (/proc/self/task/<tid>/comm)


def _text_array(values) -> np.ndarray:
    """An object array of str; bytes are decoded with surrogateescape (lossless)."""
    arr = np.asarray(values)
    if arr.dtype.kind == "U":
        return arr.astype(object)
    if arr.dtype == object and all(type(v) is str for v in arr.tolist()):
        return arr
    out = np.empty(len(arr), dtype=object)
    for i, v in enumerate(arr.tolist()):
        if isinstance(v, bytes):
            v = v.decode("utf-8", "surrogateescape")
        elif v is None:
            v = ""
        out[i] = str(v)
    return out


@dataclass(eq=False)
class IoTrace:
    """One I/O operation per row; all arrays have the same length.

    op         call name ("pread64", "open", "fwrite", ...)
    path       file path (any text; undecodable bytes as surrogateescape); "" if unknown
    offset     file offset of the access, -1 if none
    requested  bytes asked for (0 for calls without a size)
    returned   the call's return value (bytes moved for read/write; -1 on error)
    fd         file descriptor, -1 if none
    errno      0 = success
    start_ns, end_ns   absolute CLOCK_REALTIME epoch ns
    tid        OS thread id

    threads    tid -> ThreadInfo(pthread_id, comm)
    dropped    operations the capture could not record (buffer full, cap, ...)
    mounts     the traced process's /proc/self/mountinfo at capture time ("" if unknown)
    counters   Darshan-style per-file records:
               [{"path": str, "module": "POSIX"|"STDIO", "counters": {...}, "fcounters": {...}}]
    """

    op: np.ndarray
    path: np.ndarray
    offset: np.ndarray
    requested: np.ndarray
    returned: np.ndarray
    fd: np.ndarray
    errno: np.ndarray
    start_ns: np.ndarray
    end_ns: np.ndarray
    tid: np.ndarray
    threads: dict[int, ThreadInfo] = field(default_factory=dict)
    dropped: int = 0
    counters: list[dict] = field(default_factory=list)
    mounts: str = ""    # /proc/self/mountinfo of the traced process at capture time ("" unknown)

    def __post_init__(self) -> None:
        n = None
        for name, dtype in COLUMNS.items():
            value = getattr(self, name)
            if dtype is object:
                arr = _text_array(value)
            else:
                arr = np.asarray(value, dtype=dtype)
            if arr.ndim != 1:
                raise ValueError(f"IoTrace.{name} must be one-dimensional")
            if n is None:
                n = len(arr)
            elif len(arr) != n:
                raise ValueError(f"IoTrace.{name} has {len(arr)} rows, expected {n}")
            setattr(self, name, arr)
        self.threads = {int(t): ThreadInfo(int(info[0]), str(info[1])) for t, info in self.threads.items()}
        self.dropped = int(self.dropped)
        self.counters = list(self.counters)

    def __len__(self) -> int:
        return len(self.start_ns)

    @classmethod
    def empty(cls, **kwargs) -> "IoTrace":
        cols = {name: np.empty(0, dtype=dtype) for name, dtype in COLUMNS.items()}
        return cls(**cols, **kwargs)

    def take(self, index) -> "IoTrace":
        """Rows selected by an index array or boolean mask (threads/counters/dropped kept)."""
        cols = {name: getattr(self, name)[index] for name in COLUMNS}
        return IoTrace(**cols, threads=dict(self.threads), dropped=self.dropped,
                       counters=list(self.counters), mounts=self.mounts)

    def columns(self) -> dict[str, np.ndarray]:
        return {name: getattr(self, name) for name in COLUMNS}


__all__ = ["COLUMNS", "IoTrace", "ThreadInfo"]
