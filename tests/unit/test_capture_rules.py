"""Darshan's POSIX counter rules (docs/internals.md, "Darshan counter rules"), end to end through
real calls made from Python (os.* -> libpython's PLT/GOT -> the shim).

Every expected number is derived by hand in the comments next to it.
"""
from __future__ import annotations

import mmap
import os
import platform
import sys
import threading
import time
from pathlib import Path

import numpy as np

from capture_util import events_for, rec

BIN_NAMES = ["0_100", "100_1K", "1K_10K", "10K_100K", "100K_1M", "1M_4M", "4M_10M", "10M_100M", "100M_1G",
             "1G_PLUS"]


def prefill(path: Path, n: int) -> Path:
    path.write_bytes(bytes(range(256)) * (n // 256) + bytes(n % 256))
    return path


def common(r, kind: str) -> list[tuple[int, int]]:
    """The four (value, count) slots of ACCESS or STRIDE."""
    return [(r.counters[f"POSIX_{kind}{i}_{kind}"], r.counters[f"POSIX_{kind}{i}_COUNT"]) for i in range(1, 5)]


def test_sequential_consecutive_strides(shim, tmp_path):
    p = prefill(tmp_path / "seq.bin", 65536)
    offsets = [0, 10, 20, 40, 60, 100, 140, 5]
    with shim.capture() as cap:
        fd = os.open(p, os.O_RDONLY)
        for o in offsets:
            assert len(os.pread(fd, 10, o)) == 10
        os.close(fd)
    r = rec(cap, p)
    c = r.counters
    # o=0: first access, neither; 10, 20: > last and == last+1 -> seq + consec;
    # 40, 60, 100, 140: > last but gaps -> seq only; 5: < last -> neither
    assert (c["POSIX_READS"], c["POSIX_SEQ_READS"], c["POSIX_CONSEC_READS"]) == (8, 6, 2)
    # strides (o - last - 1 when o > last and last != 0): 10: 0, 20: 0 (not counted),
    # 40: 40-29-1 = 10, 60: 60-49-1 = 10, 100: 100-69-1 = 30, 140: 140-109-1 = 30, 5: none.
    # Equal counts order by value, descending.
    assert common(r, "STRIDE") == [(30, 2), (10, 2), (0, 0), (0, 0)]
    assert common(r, "ACCESS") == [(10, 8), (0, 0), (0, 0), (0, 0)]
    assert c["POSIX_BYTES_READ"] == 80
    assert c["POSIX_MAX_BYTE_READ"] == 149
    assert c["POSIX_SIZE_READ_0_100"] == 8
    # every offset but 0 is off a 4 KiB block boundary
    blk = os.stat(p).st_blksize
    assert c["POSIX_FILE_ALIGNMENT"] == blk
    assert c["POSIX_FILE_NOT_ALIGNED"] == sum(o % blk != 0 for o in offsets) == 7
    assert (c["POSIX_OPENS"], c["POSIX_WRITES"], c["POSIX_RW_SWITCHES"]) == (1, 0, 0)
    rows = events_for(cap, p)
    assert [(op, off, req, ret) for op, off, req, ret, err, fd in rows if op == "pread64"] == \
        [("pread64", o, 10, 10) for o in offsets]


def test_size_bins_both_edges(shim, tmp_path):
    # one access at each inclusive upper edge and one byte past it
    edges = [100, 1024, 10240, 102400, 1048576, 4194304, 10485760]
    sizes = [0] + [s for e in edges for s in (e, e + 1)]
    p = tmp_path / "bins.bin"
    buf = bytes(max(sizes))
    with shim.capture() as cap:
        fd = os.open(p, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        for n in sizes:
            assert os.pwrite(fd, buf[:n], 0) == n
        for n in sizes:
            assert len(os.pread(fd, n, 0)) == n
        os.close(fd)
    c = rec(cap, p).counters
    # 0 and 100 -> 0_100; 101, 1024 -> 100_1K; ...; 10485761 -> 10M_100M
    want = [2, 2, 2, 2, 2, 2, 2, 1, 0, 0]
    assert [c[f"POSIX_SIZE_WRITE_{b}"] for b in BIN_NAMES] == want
    assert [c[f"POSIX_SIZE_READ_{b}"] for b in BIN_NAMES] == want
    assert c["POSIX_BYTES_WRITTEN"] == c["POSIX_BYTES_READ"] == sum(sizes)
    assert c["POSIX_WRITES"] == c["POSIX_READS"] == len(sizes)
    assert c["POSIX_MAX_BYTE_WRITTEN"] == c["POSIX_MAX_BYTE_READ"] == 10485760
    # MAX_*_TIME_SIZE names the size of the slowest access, which must be one of them
    assert c["POSIX_MAX_READ_TIME_SIZE"] in sizes and c["POSIX_MAX_WRITE_TIME_SIZE"] in sizes


def test_common_access_sizes_ranked_by_count_then_value(shim, tmp_path):
    p = tmp_path / "access.bin"
    plan = [10] * 7 + [20] * 5 + [30] * 5 + [40] * 3 + [50]
    with shim.capture() as cap:
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        for n in plan:
            os.pwrite(fd, b"a" * n, 0)
        os.close(fd)
    # 20 and 30 tie at 5: the larger value ranks first; 50 (count 1) falls off
    assert common(rec(cap, p), "ACCESS") == [(10, 7), (30, 5), (20, 5), (40, 3)]


def test_only_first_32_distinct_sizes_are_tracked(shim, tmp_path):
    p = prefill(tmp_path / "first32.bin", 4096)
    with shim.capture() as cap:
        fd = os.open(p, os.O_RDONLY)
        for n in range(1, 33):          # 32 distinct sizes, once each
            os.pread(fd, n, 0)
        for _ in range(10):             # a 33rd distinct size: ignored however often
            os.pread(fd, 1000, 0)
        os.pread(fd, 5, 0)              # 5 now counts 2
        os.close(fd)
    r = rec(cap, p)
    assert common(r, "ACCESS") == [(5, 2), (32, 1), (31, 1), (30, 1)]
    assert r.counters["POSIX_READS"] == 43
    assert r.counters["POSIX_SIZE_READ_100_1K"] == 10   # the ignored size still counts in the bins


def test_rw_switches_and_mixed_access_table(shim, tmp_path):
    p = tmp_path / "rw.bin"
    with shim.capture() as cap:
        fd = os.open(p, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        os.write(fd, b"w" * 64)          # w
        os.pread(fd, 16, 0)              # w->r: 1
        os.pread(fd, 16, 16)             # r
        os.pwrite(fd, b"x" * 16, 64)     # r->w: 2
        os.pread(fd, 16, 32)             # w->r: 3
        os.close(fd)
    r = rec(cap, p)
    assert r.counters["POSIX_RW_SWITCHES"] == 3
    # reads and writes share one access-size table: 16 x 4, 64 x 1
    assert common(r, "ACCESS") == [(16, 4), (64, 1), (0, 0), (0, 0)]


def test_open_resets_offset_and_last_byte(shim, tmp_path):
    p = prefill(tmp_path / "reopen.bin", 1000)
    with shim.capture() as cap:
        fd1 = os.open(p, os.O_RDONLY)
        os.read(fd1, 100)                # offset 0: neither seq nor consec
        fd2 = os.open(p, os.O_RDONLY)    # a new open resets Darshan's offset and last byte
        os.read(fd2, 100)                # offset 0 again: still neither
        os.close(fd2)
        os.close(fd1)
    c = rec(cap, p).counters
    # without the reset the second read would be at tracked offset 100 == last+1: seq + consec
    assert (c["POSIX_OPENS"], c["POSIX_READS"], c["POSIX_SEQ_READS"], c["POSIX_CONSEC_READS"]) == (2, 2, 0, 0)
    assert c["POSIX_MAX_BYTE_READ"] == 99
    assert [off for op, off, *_ in events_for(cap, p) if op == "read"] == [0, 0]


def test_zero_length_eof_read_is_a_read(shim, tmp_path):
    p = prefill(tmp_path / "eof.bin", 100)
    with shim.capture() as cap:
        fd = os.open(p, os.O_RDONLY)
        assert len(os.read(fd, 100)) == 100
        assert os.read(fd, 100) == b""
        os.close(fd)
    c = rec(cap, p).counters
    assert (c["POSIX_READS"], c["POSIX_BYTES_READ"], c["POSIX_SIZE_READ_0_100"]) == (2, 100, 2)
    # the EOF read at offset 100 == last byte + 1: sequential and consecutive
    assert (c["POSIX_SEQ_READS"], c["POSIX_CONSEC_READS"]) == (1, 1)
    reads = [(off, req, ret) for op, off, req, ret, err, fd in events_for(cap, p) if op == "read"]
    assert reads == [(0, 100, 100), (100, 100, 0)]


def test_dup_family_counts_as_open_and_dup(shim, tmp_path):
    import fcntl

    p = prefill(tmp_path / "dup.bin", 4096)
    with shim.capture() as cap:
        fd = os.open(p, os.O_RDONLY)
        os.read(fd, 10)                            # offset 0
        fd2 = os.dup(fd)                           # fcntl(F_DUPFD_CLOEXEC)
        fd3 = os.dup2(fd, 900)                     # dup2 onto a chosen number
        fd4 = fcntl.fcntl(fd, fcntl.F_DUPFD, 700)  # F_DUPFD, first free >= 700
        os.read(fd2, 10)                           # a dup does not reset: offset 10, consecutive
        os.read(fd4, 10)                           # offset 20, consecutive
        for f in (fd4, fd3, fd2, fd):
            os.close(f)
    c = rec(cap, p).counters
    assert (c["POSIX_OPENS"], c["POSIX_DUPS"]) == (4, 3)
    assert (c["POSIX_READS"], c["POSIX_BYTES_READ"], c["POSIX_CONSEC_READS"], c["POSIX_SEQ_READS"]) == (3, 30, 2, 2)
    assert fd3 == 900 and fd4 >= 700
    fds = [fd for op, off, req, ret, err, fd in events_for(cap, p) if op == "read"]
    assert fds == [fd, fd2, fd4]


def test_numpy_fromfile_dups_the_descriptor(shim, tmp_path):
    """NumPy reads a Python file object through dup() + fdopen() + fread():
    the dup is an open and a dup of the same path, and
    the STDIO stream opened on it is an fdopen of that path."""
    p = tmp_path / "np.bin"
    np.arange(1000, dtype=np.int32).tofile(p)
    with shim.capture() as cap:
        with open(p, "rb") as f:
            a = np.fromfile(f, dtype=np.int32, count=100)
    assert a[99] == 99
    c = rec(cap, p).counters
    s = rec(cap, p, "STDIO").counters
    assert (c["POSIX_OPENS"], c["POSIX_DUPS"]) == (2, 1)
    assert (s["STDIO_OPENS"], s["STDIO_FDOPENS"], s["STDIO_READS"], s["STDIO_BYTES_READ"]) == (1, 1, 1, 400)


def test_stat_family_and_mmap_are_counted(shim, tmp_path):
    p = prefill(tmp_path / "meta.bin", 8192)
    dfd = os.open(tmp_path, os.O_RDONLY)
    try:
        with shim.capture() as cap:
            os.stat(p)                             # stat
            os.lstat(p)                            # lstat
            os.stat("meta.bin", dir_fd=dfd)        # fstatat relative to a directory fd
            fd = os.open(p, os.O_RDONLY)
            os.fstat(fd)                           # fstat
            m = mmap.mmap(fd, 0, prot=mmap.PROT_READ)   # fstat + dup + mmap
            assert m[:4] == bytes(range(4))
            m.close()
            os.close(fd)
            assert not os.path.exists(tmp_path / "missing.bin")   # failed stat: not counted
    finally:
        os.close(dfd)
    c = rec(cap, p).counters
    assert c["POSIX_STATS"] == 5
    assert c["POSIX_MMAPS"] == 1
    assert (c["POSIX_OPENS"], c["POSIX_DUPS"]) == (2, 1)
    missing = [r for r in events_for(cap, tmp_path / "missing.bin")]
    assert len(missing) == 1 and missing[0][4] == 2   # ENOENT, traced


def test_file_alignment_is_the_block_size(shim, tmp_path):
    p = prefill(tmp_path / "align.bin", 3 * 4096)
    blk = os.stat(p).st_blksize
    with shim.capture() as cap:
        fd = os.open(p, os.O_RDONLY)
        for o in (0, blk, 2 * blk, 100, blk + 1):
            os.pread(fd, 1, o)
        os.close(fd)
    c = rec(cap, p).counters
    assert c["POSIX_FILE_ALIGNMENT"] == blk
    assert c["POSIX_FILE_NOT_ALIGNED"] == 2


def test_read_time_has_no_overlap(shim, tmp_path):
    """Four threads block in read() on one FIFO at the same time for ~0.4 s.
    Summed per call that is ~1.6 s; Darshan's no-overlap timer counts the
    covered wall time once, so F_READ_TIME fits inside the capture window."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    hold = 0.4
    got: list[bytes] = []
    tids: list[int] = []
    read_nr = {"x86_64": "0", "aarch64": "63"}[platform.machine()]

    def reader() -> None:
        tids.append(threading.get_native_id())
        got.append(os.read(fd, 1))

    def blocked_in_read(tid: int) -> bool:
        try:
            return Path(f"/proc/self/task/{tid}/syscall").read_text().split()[0] == read_nr
        except (OSError, IndexError):
            return False

    t_begin = time.monotonic()
    with shim.capture() as cap:
        fd = os.open(fifo, os.O_RDWR)   # O_RDWR: opening a FIFO this way never blocks
        threads = [threading.Thread(target=reader) for _ in range(4)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 20
        while not (len(tids) == 4 and all(blocked_in_read(t) for t in tids)) and time.monotonic() < deadline:
            time.sleep(0.005)
        time.sleep(hold)                # all four are blocked in read() from here on
        os.write(fd, b"abcd")
        for t in threads:
            t.join(10)
        os.close(fd)
    wall = time.monotonic() - t_begin
    window = (cap.end_ns - cap.start_ns) / 1e9
    assert sorted(got) == [b"a", b"b", b"c", b"d"]
    r = rec(cap, fifo)
    c, f = r.counters, r.fcounters
    assert (c["POSIX_READS"], c["POSIX_BYTES_READ"], c["POSIX_WRITES"], c["POSIX_BYTES_WRITTEN"]) == (4, 4, 1, 4)
    assert window <= wall
    assert f["POSIX_F_READ_TIME"] <= window
    assert f["POSIX_F_READ_TIME"] >= hold * 0.9              # the reads did block
    # Darshan's no-overlap rule accounts calls in completion order, not as a true union: a
    # read that started earlier but is accounted after a longer-ending one adds only its tail,
    # so F_MAX_READ_TIME may exceed F_READ_TIME by the starts' spread.  Both stay in the window.
    assert hold * 0.9 <= f["POSIX_F_MAX_READ_TIME"] <= window
    # timestamps are seconds since the capture began, inside the window, in order
    assert 0 <= f["POSIX_F_OPEN_START_TIMESTAMP"] <= f["POSIX_F_READ_START_TIMESTAMP"]
    assert f["POSIX_F_READ_START_TIMESTAMP"] < f["POSIX_F_WRITE_START_TIMESTAMP"] <= f["POSIX_F_READ_END_TIMESTAMP"]
    assert f["POSIX_F_READ_END_TIMESTAMP"] <= f["POSIX_F_CLOSE_START_TIMESTAMP"] <= f["POSIX_F_CLOSE_END_TIMESTAMP"]
    assert f["POSIX_F_CLOSE_END_TIMESTAMP"] <= window
    assert f["POSIX_F_META_TIME"] <= window


def test_write_time_includes_fsync(shim, tmp_path):
    p = tmp_path / "sync.bin"
    with shim.capture() as cap:
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.write(fd, b"s" * 4096)
        os.fsync(fd)
        os.fdatasync(fd)
        os.close(fd)
    r = rec(cap, p)
    assert (r.counters["POSIX_FSYNCS"], r.counters["POSIX_FDSYNCS"], r.counters["POSIX_WRITES"]) == (1, 1, 1)
    ops = [op for op, *_ in events_for(cap, p)]
    assert ops == ["open64", "write", "fsync", "fdatasync", "close"]
    # the syncs' durations are write time: at least the sum of the two sync rows
    ev = cap.events
    sync_ns = sum(int(ev.end_ns[i] - ev.start_ns[i]) for i in range(len(ev))
                  if ev.op[i] in ("fsync", "fdatasync") and ev.path[i] == str(p))
    assert r.fcounters["POSIX_F_WRITE_TIME"] >= sync_ns / 1e9 * 0.99
    assert r.fcounters["POSIX_F_WRITE_TIME"] <= (cap.end_ns - cap.start_ns) / 1e9
