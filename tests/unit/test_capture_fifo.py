"""A FIFO opened by two threads of one traced process: the reader blocked in
open() must not stop the writer's open() (no shim lock is held across the
real call).  Each writer waits until the reader has closed its end before
opening again, so one reader never sees two writers' data (without that
handshake the script can hang by itself, traced or not)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = r"""
import os, sys, threading, time
mode, fifo = sys.argv[1], sys.argv[2]
import tb_iotrace
tb_iotrace.enable()
cap = tb_iotrace.capture() if mode == "cap" else None
if cap is not None and hasattr(cap, "__enter__"):
    cap.__enter__()
os.mkfifo(fifo)
closed = threading.Semaphore(0)
def feed():
    for _ in range(3):
        with open(fifo, "wb") as fh:
            time.sleep(0.1)
            fh.write(b"x" * 100)
        closed.acquire(timeout=30)
threading.Thread(target=feed, daemon=True).start()
got = []
for _ in range(3):
    with open(fifo, "rb") as fh:
        got.append(len(fh.read()))
    closed.release()
print("done", mode, got)
"""


@pytest.mark.parametrize("mode", ["enable", "cap"])
def test_fifo_between_threads_does_not_hang(tmp_path: Path, mode: str) -> None:
    script = tmp_path / "fifo_job.py"
    script.write_text(SCRIPT)
    try:
        out = subprocess.run([sys.executable, str(script), mode, str(tmp_path / "p")],
                             capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{mode}: FIFO open between two threads hung under the shim")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"done {mode} [100, 100, 100]"
