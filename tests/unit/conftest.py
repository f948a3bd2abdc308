"""Fixtures of the capture tests: a compiled libio fixture library and a clean shim.

The helpers they use are in fixtures/capture_util.py (on sys.path through `pythonpath` in
pyproject.toml, so the workload scripts in fixtures/ can import them too)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pytest

from capture_util import DEFAULT_TRACE_CAP, compile_so


@pytest.fixture(scope="session")
def libio_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("libio")
    return compile_so("libio.c", d / "libio.so")


@pytest.fixture()
def shim() -> Iterator[Any]:
    """tb_iotrace with a clean slate, and everything process-global put back after."""
    import tb_iotrace
    from tb_iotrace.recording.ffi import native

    ffi, lib = native()
    excludes = ffi.string(lib.tbio_get_excludes())
    tb_iotrace.disable()
    try:
        yield tb_iotrace
    finally:
        tb_iotrace.disable()
        lib.tbio_set_filters(b"", excludes)
        lib.tbio_set_trace_cap(DEFAULT_TRACE_CAP)


@pytest.fixture(scope="session")
def cpu_capture(tmp_path_factory):
    """A real TF CPU capture around a tiny tf.function, with real file I/O on the main thread
    between two calls; returns (xplane path, IoTrace of that I/O, its start/end markers)."""
    import os
    import threading
    import time

    import tensorflow as tf

    from tb_iotrace.store import xplane as X

    @tf.function
    def f(x):
        return tf.reduce_sum(tf.matmul(x, x))

    x = tf.ones((32, 32))
    f(x)
    logdir = tmp_path_factory.mktemp("cpu_logdir")
    data_file = logdir / "data.bin"
    tid = threading.get_native_id()
    comm = Path(f"/proc/self/task/{tid}/comm").read_text().strip()
    tf.profiler.experimental.start(str(logdir))
    f(x)
    ops = []
    t = time.time_ns()
    fd = os.open(data_file, os.O_CREAT | os.O_WRONLY, 0o644)
    ops.append(("open", -1, 0, fd, t, time.time_ns()))
    t = time.time_ns()
    n = os.pwrite(fd, b"x" * 4096, 0)
    ops.append(("pwrite64", 0, 4096, n, t, time.time_ns()))
    os.close(fd)
    fd = os.open(data_file, os.O_RDONLY)
    t = time.time_ns()
    data = os.pread(fd, 8192, 0)
    ops.append(("pread64", 0, 8192, len(data), t, time.time_ns()))
    t = time.time_ns()
    data = os.pread(fd, 8192, 4096)  # the zero-length EOF read
    ops.append(("pread64", 4096, 8192, len(data), t, time.time_ns()))
    os.close(fd)
    f(x)
    tf.profiler.experimental.stop()
    path = next(logdir.glob("plugins/profile/*/*.xplane.pb"))
    trace = X.IoTrace(
        op=[o[0] for o in ops], path=[str(data_file)] * len(ops), offset=[o[1] for o in ops],
        requested=[o[2] for o in ops], returned=[o[3] if o[0] != "open" else 0 for o in ops],
        fd=[o[3] if o[0] == "open" else -1 for o in ops], errno=[0] * len(ops),
        start_ns=[o[4] for o in ops], end_ns=[o[5] for o in ops], tid=[tid] * len(ops),
        # a comm that differs from the host line's name, to prove the line was found by id
        threads={tid: (threading.get_ident(), comm + "-io")}, dropped=0,
    )
    return path, trace
