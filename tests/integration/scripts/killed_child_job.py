"""A job whose child process is SIGKILLed after a periodic flush, for ``tb-iotrace run --flush``
(tests/integration/test_run_partial.py).

    killed_child_job.py DATA OUT

The main process writes DATA/a.bin (4 x 4096 B) and DATA/b.bin (3000 B), starts a child that
reads a.bin in four ``os.pread`` calls of 4096 B and, once its record (a periodic flush) holds
those reads (two flushes after them), kills itself with SIGKILL; then the main process reads b.bin whole and exits.
OUT (JSON): the main and child pids."""
from __future__ import annotations

import json
import os
import subprocess
import sys

CHILD = r'''
import glob, json, os, signal, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
for i in range(4):
    assert len(os.pread(fd, 4096, i * 4096)) == 4096
os.close(fd)
done = time.time_ns()
pattern = os.path.join(os.environ["TB_IOTRACE_RUN_DIR"], "plugins", "iotrace", f"*.{os.getpid()}.json")
seen = set()
deadline = time.monotonic() + 60
# two flushes written after the reads: the second one's window began after them, so it holds them
while len(seen) < 2 and time.monotonic() < deadline:
    for path in glob.glob(pattern):
        try:
            with open(path) as fh:
                doc = json.load(fh)
        except (OSError, ValueError):
            continue
        if doc.get("partial") and doc["end_ns"] > done:
            seen.add(doc["generation"])
    time.sleep(0.02)
os.kill(os.getpid(), signal.SIGKILL)
'''


def main() -> None:
    data, out = sys.argv[1], sys.argv[2]
    a, b = os.path.join(data, "a.bin"), os.path.join(data, "b.bin")
    with open(a, "wb") as fh:
        fh.write(b"a" * 4 * 4096)
    with open(b, "wb") as fh:
        fh.write(b"b" * 3000)
    child = subprocess.Popen([sys.executable, "-c", CHILD, a])
    child.wait()
    with open(b, "rb") as fh:
        assert len(fh.read()) == 3000
    with open(out, "w") as fh:
        json.dump({"main_pid": os.getpid(), "child_pid": child.pid, "child_rc": child.returncode}, fh)


if __name__ == "__main__":
    main()
