"""README command 1: the demo trains on real files, prints the report and serves TensorBoard."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.tf
DEMO = Path(__file__).parents[2] / "examples" / "demo.py"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_demo_prints_the_report_and_serves_the_io_tab(tmp_path: Path) -> None:
    port = free_port()
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="", PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, str(DEMO), "--workdir", str(tmp_path), "--epochs", "2",
                             "--port", str(port)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    out: list[str] = []
    try:
        deadline = time.time() + 240
        assert proc.stdout is not None
        for line in proc.stdout:
            out.append(line)
            if f"http://localhost:{port}/#iotrace" in line:
                break
            assert time.time() < deadline, "".join(out[-40:])
        text = "".join(out)
        assert "tb-iotrace report" in text
        assert "train-000.tfrecord" in text, text[-3000:]      # the profiled steps read the shards
        # TensorBoard serves the I/O tab's plugin
        for _ in range(120):
            try:
                body = urllib.request.urlopen(f"http://127.0.0.1:{port}/data/plugins_listing", timeout=5).read()
                break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail("TensorBoard did not answer")
        assert b'"iotrace"' in body
        proc.send_signal(signal.SIGINT)                         # Ctrl-C stops it cleanly
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
