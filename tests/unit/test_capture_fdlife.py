"""Descriptor numbers closed inside libc (closedir after os.scandir(fd),
shutil.rmtree, os.fwalk) and made again by socket, pipe, ... calls: the new
descriptor's traffic is never counted as I/O of the file the number named."""
from __future__ import annotations

import os
import shutil
import socket
from pathlib import Path

from capture_util import events_for

DATA_OPS = {"read", "write", "pread", "pread64", "pwrite", "pwrite64", "readv", "writev"}


def _scandir_then_socketpair(d: Path, nbytes: int) -> tuple[int, set[int]]:
    """os.scandir(fd) then a socketpair; the fd numbers of the pair come back."""
    dfd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert sorted(e.name for e in os.scandir(dfd)) == ["f"]   # dup + fdopendir; closedir closes the dup
        a, b = socket.socketpair()
        with a, b:
            sent = 0
            while sent < nbytes:
                sent += os.write(a.fileno(), b"s" * min(1000, nbytes - sent))
                os.read(b.fileno(), 1000)
            return sent, {a.fileno(), b.fileno()}
    finally:
        os.close(dfd)


def test_scandir_dup_number_reused_by_socketpair(shim, tmp_path):
    d = tmp_path / "dir"
    d.mkdir()
    (d / "f").write_bytes(b"x")
    with shim.capture() as cap:
        sent, pair = _scandir_then_socketpair(d, 10_000)
    assert sent == 10_000
    rows = events_for(cap, d)
    # the test means what it says: scandir's dup (traced as fcntl on the
    # directory) had a number the socketpair then reused
    dup_fds = {fd for op, *_rest, fd in rows if op.startswith("fcntl")}
    assert dup_fds & pair, (rows, pair)
    assert [r for r in rows if r[0] in DATA_OPS] == []
    r = cap.file(d)
    assert r is None or (r.counters["POSIX_BYTES_WRITTEN"], r.counters["POSIX_BYTES_READ"]) == (0, 0)


def test_rmtree_then_pipe_traffic_not_counted(shim, tmp_path):
    """shutil.rmtree walks with os.scandir(fd) too; a pipe made right after reuses a number it closed."""
    top = tmp_path / "tree"
    for sub in ("a", "b/c"):
        (top / sub).mkdir(parents=True)
        (top / sub / "f").write_bytes(b"y" * 10)
    with shim.capture() as cap:
        shutil.rmtree(top)
        fds = []
        for _ in range(4):   # take the low numbers rmtree freed
            r, w = os.pipe()
            fds += [r, w]
            os.write(w, b"p" * 100)
            assert os.read(r, 100) == b"p" * 100
        for fd in fds:
            os.close(fd)
    for path in (top, top / "a", top / "b", top / "b" / "c"):
        assert [r for r in events_for(cap, path) if r[0] in DATA_OPS] == [], path
