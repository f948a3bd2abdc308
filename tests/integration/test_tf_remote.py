"""Remote capture through the profiler server (TensorBoard's "Capture profile"
button uses the same path): TensorFlow asks the pluggable profiler, no Python
wrapper involved.  Two workers in one trace: each file carries its own I/O."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tb_iotrace.store.xplane import load_xspace, read_io_data

pytestmark = pytest.mark.tf
SCRIPTS = Path(__file__).parent / "scripts"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_remote_capture_two_workers(tmp_path: Path) -> None:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    ports = [free_port(), free_port()]
    names = ["w0", "w1"]
    workers = [subprocess.Popen([sys.executable, str(SCRIPTS / "tf_server_worker.py"), str(p), str(tmp_path), n],
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
               for p, n in zip(ports, names)]
    try:
        deadline = time.time() + 120
        while not all((tmp_path / f"{n}.ready").exists() for n in names):
            assert time.time() < deadline, "workers did not start"
            assert all(w.poll() is None for w in workers), [w.stderr.read()[-2000:] for w in workers]
            time.sleep(0.2)
        logdir = tmp_path / "logs"
        client = ("import tensorflow as tf, sys; tf.profiler.experimental.client.trace("
                  "sys.argv[1], sys.argv[2], 2000)")
        addrs = ",".join(f"grpc://localhost:{p}" for p in ports)
        proc = subprocess.run([sys.executable, "-c", client, addrs, str(logdir)], env=env,
                              capture_output=True, text=True, timeout=180)
        assert proc.returncode == 0, proc.stderr[-3000:]
    finally:
        (tmp_path / "stop").touch()
        for w in workers:
            try:
                w.wait(timeout=30)
            except subprocess.TimeoutExpired:
                w.kill()
    files = sorted(logdir.glob("plugins/profile/*/*.xplane.pb"))
    assert len(files) == 2, files
    seen = {}
    for f in files:
        trace = read_io_data(load_xspace(f))
        assert trace is not None, f
        paths = {p for p in trace.path.tolist() if p.endswith(".bin")}
        assert len(paths) == 1, paths          # each worker's file holds only its own I/O
        (path,) = paths
        sel = (trace.path == path) & (trace.op == "read") & (trace.returned > 0)
        assert sel.sum() > 0
        # whole passes of 64 KiB: four 16 KiB reads each (any partial pass at the edges aside)
        assert set(np.unique(trace.returned[sel]).tolist()) == {16384}
        seen[f.name] = Path(path).stem
    assert sorted(seen.values()) == names
