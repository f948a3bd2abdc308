"""16 threads doing mixed POSIX and STDIO calls at once: counters exact, and
the trace exact (rows + dropped == calls made), whatever the trace cap."""
from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from capture_util import load_libio, rec

NTHREADS = 16
ROUNDS = 40
SHARED_SIZE = NTHREADS * 4096


class Workload:
    """Each thread: its own POSIX file, its own STDIO file, and a shared file."""

    def __init__(self, tmp: Path, lib) -> None:
        self.tmp, self.lib = tmp, lib
        self.shared = tmp / "shared.bin"
        self.shared.write_bytes(b"s" * SHARED_SIZE)
        self.calls = [0] * NTHREADS
        self.tids = [0] * NTHREADS
        self.errors: list[BaseException] = []
        self.barrier = threading.Barrier(NTHREADS)

    def own(self, i: int) -> Path:
        return self.tmp / f"own{i}.bin"

    def stdio(self, i: int) -> Path:
        return self.tmp / f"stdio{i}.txt"

    def body(self, i: int) -> None:
        lib, n = self.lib, 0
        self.tids[i] = threading.get_native_id()
        self.barrier.wait()
        p = self.own(i)
        fd = os.open(p, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600); n += 1
        sfd = os.open(self.shared, os.O_RDONLY); n += 1
        for k in range(ROUNDS):
            assert os.write(fd, b"w" * 1000) == 1000; n += 1
            assert len(os.pread(fd, 500, k * 1000)) == 500; n += 1
            assert len(os.pread(sfd, 4096, i * 4096)) == 4096; n += 1
            os.stat(p); n += 1
        os.close(sfd); n += 1
        os.close(fd); n += 1
        fp = lib.c_fopen(str(self.stdio(i)).encode(), b"w+"); n += 1
        assert fp
        for _ in range(ROUNDS):
            assert lib.c_fwrite(fp, 1, 100) == 100; n += 1
        assert lib.c_fseek(fp, 0, 0) == 0; n += 1
        for _ in range(ROUNDS):
            assert lib.c_fread(fp, 1, 100) == 100; n += 1
        assert lib.c_fclose(fp) == 0; n += 1
        self.calls[i] = n

    def run(self) -> None:
        def guarded(i: int) -> None:
            try:
                self.body(i)
            except BaseException as e:  # pragma: no cover - reported below
                self.errors.append(e)
                self.barrier.abort()

        ts = [threading.Thread(target=guarded, args=(i,), name=f"io{i}") for i in range(NTHREADS)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(60)
        assert not any(t.is_alive() for t in ts), "worker threads hung"
        assert not self.errors, self.errors

    def check_counters(self, cap) -> None:
        for i in range(NTHREADS):
            c = rec(cap, self.own(i)).counters
            assert (c["POSIX_OPENS"], c["POSIX_WRITES"], c["POSIX_READS"], c["POSIX_STATS"]) == \
                (1, ROUNDS, ROUNDS, ROUNDS)
            assert (c["POSIX_BYTES_WRITTEN"], c["POSIX_BYTES_READ"]) == (1000 * ROUNDS, 500 * ROUNDS)
            s = rec(cap, self.stdio(i), "STDIO").counters
            assert (s["STDIO_OPENS"], s["STDIO_WRITES"], s["STDIO_READS"], s["STDIO_SEEKS"]) == \
                (1, ROUNDS, ROUNDS, 1)
            assert (s["STDIO_BYTES_WRITTEN"], s["STDIO_BYTES_READ"]) == (100 * ROUNDS, 100 * ROUNDS)
        c = rec(cap, self.shared).counters
        assert (c["POSIX_OPENS"], c["POSIX_READS"], c["POSIX_BYTES_READ"]) == \
            (NTHREADS, NTHREADS * ROUNDS, NTHREADS * ROUNDS * 4096)
        assert c["POSIX_MAX_BYTE_READ"] == SHARED_SIZE - 1
        assert c["POSIX_ACCESS1_ACCESS"] == 4096 and c["POSIX_ACCESS1_COUNT"] == NTHREADS * ROUNDS
        # 16 threads reading at once: the no-overlap timer still fits in the window
        assert rec(cap, self.shared).fcounters["POSIX_F_READ_TIME"] <= (cap.end_ns - cap.start_ns) / 1e9

    def worker_threads(self, cap):
        by_tid = {t.tid: t for t in cap.threads}
        missing = [tid for tid in self.tids if tid not in by_tid]
        assert not missing, f"threads without a trace entry: {missing}"
        return [by_tid[tid] for tid in self.tids]


@pytest.fixture()
def work(shim, tmp_path, libio_path):
    shim.enable()
    return Workload(tmp_path, load_libio(libio_path))


def test_counters_and_trace_exact(shim, work):
    with shim.capture() as cap:
        work.run()
    work.check_counters(cap)
    infos = work.worker_threads(cap)
    assert [t.nevents for t in infos] == work.calls
    assert [t.dropped for t in infos] == [0] * NTHREADS
    assert cap.dropped == 0
    # every row of a worker is on one of its files, in its own call order
    for i, t in enumerate(infos):
        rows = cap.events.thread == t.index
        assert int(rows.sum()) == work.calls[i]
        paths = set(cap.events.path[rows])
        assert paths == {str(work.own(i)), str(work.shared), str(work.stdio(i))}
    assert set(cap.events.tid[cap.events.thread == infos[3].index]) == {work.tids[3]}


@pytest.mark.parametrize("trace_cap", [1000, 0])
def test_small_trace_cap_drops_exactly(shim, work, trace_cap):
    shim.set_trace_cap(trace_cap)
    with shim.capture() as cap:
        work.run()
    work.check_counters(cap)           # counters stay exact when the trace is full
    infos = work.worker_threads(cap)
    assert [t.nevents + t.dropped for t in infos] == work.calls
    assert len(cap.events) <= trace_cap
    assert len(cap.events) == sum(t.nevents for t in cap.threads)
    assert cap.dropped == sum(t.dropped for t in cap.threads)
    assert cap.dropped >= sum(work.calls) - trace_cap
    if trace_cap == 0:
        assert len(cap.events) == 0 and cap.dropped >= sum(work.calls)


@pytest.mark.slow
def test_disable_while_threads_do_io(shim, tmp_path, libio_path):
    """enable/capture/disable over and over while 4 threads hammer pread:
    nothing crashes, every pread returns its bytes, and a final quiet capture
    is still exact."""
    lib = load_libio(libio_path)
    p = tmp_path / "hammer.bin"
    p.write_bytes(b"h" * 8192)
    stop = threading.Event()
    errors: list[BaseException] = []
    done = [0] * 4

    def hammer(i: int) -> None:
        try:
            fd = os.open(p, os.O_RDONLY)
            while not stop.is_set():
                assert len(os.pread(fd, 64, 128 * i)) == 64
                assert lib.c_pread(fd, 64, 0) == 64
                done[i] += 1
            os.close(fd)
        except BaseException as e:  # pragma: no cover
            errors.append(e)

    ts = [threading.Thread(target=hammer, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    try:
        for _ in range(25):
            with shim.capture():
                pass
            shim.disable()
            shim.enable()
            shim.disable()
    finally:
        stop.set()
        for t in ts:
            t.join(30)
    assert not errors, errors
    assert all(d > 0 for d in done)
    with shim.capture() as cap:
        fd = os.open(p, os.O_RDONLY)
        for _ in range(7):
            os.pread(fd, 100, 0)
        os.close(fd)
    c = rec(cap, p).counters
    assert (c["POSIX_OPENS"], c["POSIX_READS"], c["POSIX_BYTES_READ"]) == (1, 7, 700)
