"""Storage endpoints: the network connections a source's process opened, read from its
per-file records and I/O calls.

The shim traces a client's TCP connection as a "file" named ``tcp://HOST:PORT`` (HOST the name
the process resolved, else the address; which sockets count: native/sockets.c and
docs/capture.md). Its POSIX record is the endpoint's counters: ``OPENS`` the connections,
``READS``/``WRITES`` the calls in and out, ``BYTES_READ``/``BYTES_WRITTEN`` the bytes,
``F_READ_TIME``/``F_WRITE_TIME`` the time in them, ``SIZE_READ_*`` the sizes received. Its rows
are the socket calls (``connect``, ``send``/``recv``..., ``read``/``write`` on the socket).

Everything here works on any :class:`~tb_iotrace.model.sources.Source`: a capture, a whole-run
record or a PyTorch trace carry endpoints as they carry files.
"""
from __future__ import annotations

import errno
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

PREFIX = "tcp://"
SIZE_BINS = ("0_100", "100_1K", "1K_10K", "10K_100K", "100K_1M", "1M_4M", "4M_10M", "10M_100M",
             "100M_1G", "1G_PLUS")


def is_endpoint(path: Any) -> bool:
    """Whether a file name is a network endpoint rather than a file."""
    return isinstance(path, str) and path.startswith(PREFIX)


def endpoint_mask(paths: np.ndarray) -> np.ndarray:
    """Per row of a path column: the row is a call on an endpoint."""
    if not len(paths):
        return np.zeros(0, bool)
    kinds, inverse = np.unique(paths.astype(object).astype(str), return_inverse=True)
    return np.array([is_endpoint(k) for k in kinds.tolist()], bool)[inverse.reshape(-1)]


@dataclass
class Endpoint:
    """One endpoint's totals (its record's counters, summed over records of the same name)."""

    name: str
    connections: int = 0
    calls_in: int = 0
    calls_out: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    time_in_s: float = 0.0
    time_out_s: float = 0.0
    sizes_in: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SIZE_BINS, 0))

    def to_dict(self) -> dict[str, Any]:
        return {"endpoint": self.name, "connections": self.connections, "calls_in": self.calls_in,
                "calls_out": self.calls_out, "bytes_in": self.bytes_in, "bytes_out": self.bytes_out,
                "time_in_s": self.time_in_s, "time_out_s": self.time_out_s, "sizes_in": dict(self.sizes_in)}


def endpoint_totals(files: Sequence[Mapping[str, Any]]) -> list[Endpoint]:
    """The endpoints among per-file records (Darshan-style dicts), most bytes in first."""
    out: dict[str, Endpoint] = {}
    for rec in files:
        name = str(rec.get("path", ""))
        if not is_endpoint(name) or rec.get("module", "POSIX") != "POSIX":
            continue
        c, fc = rec.get("counters") or {}, rec.get("fcounters") or {}
        e = out.setdefault(name, Endpoint(name))
        e.connections += int(c.get("POSIX_OPENS", 0))
        e.calls_in += int(c.get("POSIX_READS", 0))
        e.calls_out += int(c.get("POSIX_WRITES", 0))
        e.bytes_in += int(c.get("POSIX_BYTES_READ", 0))
        e.bytes_out += int(c.get("POSIX_BYTES_WRITTEN", 0))
        e.time_in_s += float(fc.get("POSIX_F_READ_TIME", 0.0))
        e.time_out_s += float(fc.get("POSIX_F_WRITE_TIME", 0.0))
        for b in SIZE_BINS:
            e.sizes_in[b] += int(c.get(f"POSIX_SIZE_READ_{b}", 0))
    return sorted(out.values(), key=lambda e: (-e.bytes_in, -e.bytes_out, e.name))


def socket_intervals(cols: Mapping[str, np.ndarray]) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """The storage socket calls of I/O columns (:data:`~tb_iotrace.model.sources.IO_COLUMNS`) as
    time intervals per thread: tid -> (start_ns, end_ns), in start order.

    A call on a non-blocking socket that found nothing to do (``EAGAIN``: Python's sockets with a
    timeout, asyncio, the CRT) is followed by a wait in poll/epoll, which the shim does not trace,
    then the call again: its interval runs until the next call of the same thread on the same
    socket, so the wait counts as what it was, a wait on storage. Other failed calls keep their
    own time."""
    paths = np.asarray(cols["path"])
    hit = endpoint_mask(paths)
    out: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    if not hit.any():
        return out
    tid = np.asarray(cols["tid"])[hit]
    fd = np.asarray(cols["fd"])[hit]
    err = np.asarray(cols["errno"])[hit]
    s = np.asarray(cols["start_ns"], np.int64)[hit]
    e = np.asarray(cols["end_ns"], np.int64)[hit].copy()
    again = np.isin(err, (errno.EAGAIN, errno.EWOULDBLOCK))
    for t in np.unique(tid).tolist():
        m = np.flatnonzero(tid == t)
        m = m[np.lexsort((s[m], fd[m]))]               # by socket, then time
        nxt_same = np.zeros(len(m), bool)
        nxt_same[:-1] = fd[m][1:] == fd[m][:-1]
        bridge = np.flatnonzero(again[m] & nxt_same)
        e[m[bridge]] = np.maximum(e[m[bridge]], s[m[bridge + 1]])
        order = m[np.argsort(s[m], kind="stable")]
        out[int(t)] = (s[order], e[order])
    return out


def source_endpoints(src: Any) -> list[Endpoint]:
    """A source's endpoint totals (from its per-file records; a whole-run record's columns are
    scanned for endpoint names first, so a record of a million files builds no dict per file)."""
    if src.files_as_columns():
        table = src.table()
        posix = table.module("POSIX") if table is not None else None
        if posix is None:
            return []
        names = posix.path_strings()
        return endpoint_totals([posix.record(i, p) for i, p in enumerate(names) if is_endpoint(p)])
    return endpoint_totals(src.files())


def source_socket_intervals(src: Any) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """A source's storage socket calls as intervals per thread (epoch ns; empty without calls)."""
    got = src.io_columns()
    return socket_intervals(got[0]) if got is not None else {}
