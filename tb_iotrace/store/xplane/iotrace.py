"""The per-operation I/O trace exchanged between capture, xplane writer and readers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

# Column name -> dtype. op and path are object arrays of str (or given as Labels).
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


@dataclass(frozen=True, eq=False)
class Labels:
    """A text column as integer codes into a small table of names.

    The capture hands ``op`` and ``path`` over this way: a million-row trace then holds no
    str object per row, and the xplane writer interns names from the table directly.
    ``IoTrace`` turns it into an object array only when the column is read."""

    codes: np.ndarray   # int, one per row, each in range(len(names))
    names: tuple[str, ...]

    def __post_init__(self) -> None:
        codes = np.asarray(self.codes)
        if codes.ndim != 1 or (codes.size and codes.dtype.kind not in "iu"):
            raise ValueError("Labels.codes must be a one-dimensional integer array")
        names = tuple(_text_array(list(self.names)).tolist()) if len(self.names) else ()
        if codes.size and (int(codes.min()) < 0 or int(codes.max()) >= len(names)):
            raise ValueError("Labels.codes out of range of Labels.names")
        object.__setattr__(self, "codes", codes)
        object.__setattr__(self, "names", names)

    def __len__(self) -> int:
        return len(self.codes)

    def values(self) -> np.ndarray:
        """The column as an object array of str."""
        table = np.empty(len(self.names), dtype=object)
        table[:] = self.names
        return table[self.codes] if len(self.codes) else np.empty(0, dtype=object)

    def take(self, index) -> "Labels":
        return Labels(self.codes[index], self.names)


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
    untracked  what the capture saw but could not track, counted (None: nothing):
               {"files", "calls", "bytes_read", "bytes_written", "reentrant_calls", "examples"}
    mounts     the traced process's /proc/self/mountinfo at capture time ("" if unknown)
    machine    the machine that made it (tb_iotrace.store.machine's record: cpus, mount table), None
               when not recorded
    checkpoint_calls   the checkpoint library calls noted in the window (tb_iotrace.base.ckptcalls:
               safetensors, orbax, tf.train.Checkpoint), [] when none
    objects    the object-storage requests of the window as columns (tb_iotrace.store.objcolumns),
               None when none
    window_ns  a whole-run record's window (epoch ns start, end): the process's run; None for a
               capture (its window is the profile's)
    pid        the traced process's id when one process made the trace (a whole-run record), else
               None: its main thread is the one whose id is the pid
    counters   Darshan-style per-file records:
               [{"path": str, "module": "POSIX"|"STDIO", "counters": {...}, "fcounters": {...}}]

    ``op`` and ``path`` may be given as :class:`Labels`; they then stay codes until read
    (:meth:`labels` gives them to the writer without building str objects).
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
    counters: Sequence[dict] = field(default_factory=list)  # a list, or a whole-run record's lazy records
    untracked: dict | None = None
    mounts: str = ""    # /proc/self/mountinfo of the traced process at capture time ("" unknown)
    machine: dict | None = None   # tb_iotrace.store.machine record of the machine that made it
    checkpoint_calls: list = field(default_factory=list)   # tb_iotrace.base.ckptcalls' calls of the window
    objects: dict | None = None   # object-storage requests as columns (tb_iotrace.store.objcolumns)
    window_ns: tuple[int, int] | None = None   # a whole-run record's run (epoch ns), None for a capture
    pid: int | None = None     # a whole-run record's process (its main thread's id), None for a capture

    def __post_init__(self) -> None:
        n = None
        self._labels: dict[str, Labels] = {}
        for name, dtype in COLUMNS.items():
            value = getattr(self, name)
            if isinstance(value, Labels):
                if n is not None and len(value) != n:
                    raise ValueError(f"IoTrace.{name} has {len(value)} rows, expected {n}")
                n = len(value)
                self._labels[name] = value
                delattr(self, name)  # built on first read (__getattr__)
                continue
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
        if not isinstance(self.counters, Sequence):   # a whole-run record's lazy records stay lazy
            self.counters = list(self.counters)

    def __getattr__(self, name: str) -> Any:
        labels = self.__dict__.get("_labels", {})
        if name in labels:
            arr = labels[name].values()
            setattr(self, name, arr)
            return arr
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __len__(self) -> int:
        return len(self.start_ns)

    def labels(self, name: str) -> Labels | None:
        """The column ``name`` ("op" or "path") as given in :class:`Labels` form, else None."""
        return self.__dict__.get("_labels", {}).get(name)

    @classmethod
    def empty(cls, **kwargs) -> "IoTrace":
        cols = {name: np.empty(0, dtype=dtype) for name, dtype in COLUMNS.items()}
        return cls(**cols, **kwargs)

    def take(self, index) -> "IoTrace":
        """Rows selected by an index array or boolean mask (threads/counters/dropped kept)."""
        cols = {name: (self.labels(name).take(index) if self.labels(name) is not None  # type: ignore[union-attr]
                       else getattr(self, name)[index]) for name in COLUMNS}
        return IoTrace(**cols, threads=dict(self.threads), dropped=self.dropped,
                       counters=self.counters, mounts=self.mounts, untracked=self.untracked,
                       machine=self.machine, checkpoint_calls=list(self.checkpoint_calls), objects=self.objects,
                       window_ns=self.window_ns, pid=self.pid)

    def columns(self) -> dict[str, np.ndarray]:
        return {name: getattr(self, name) for name in COLUMNS}


__all__ = ["COLUMNS", "IoTrace", "Labels", "ThreadInfo"]
