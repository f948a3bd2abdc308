"""A plain Python job that holds N files open (default 10,000) while it reads them in turn for
SECONDS, then prints ``ok`` and exits 0 (every read checked: 16 bytes of the file's own value).

    hold_files.py WORK SECONDS [N]
"""
from __future__ import annotations

import os
import resource
import sys
import time


def main() -> None:
    work, seconds = sys.argv[1], float(sys.argv[2])
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 10_000
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < n + 64:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(n + 64, hard), hard))
    folder = os.path.join(work, "held")
    os.makedirs(folder, exist_ok=True)
    fds = []
    for i in range(n):
        path = os.path.join(folder, f"f{i:05d}")
        with open(path, "wb") as fh:
            fh.write(bytes([i % 256]) * 16)
        fds.append(os.open(path, os.O_RDONLY))
    print("holding", len(fds), flush=True)
    i = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if os.pread(fds[i % n], 16, 0) != bytes([i % n % 256]) * 16:
            sys.exit(f"file {i % n} read back wrong")
        i += 1
        time.sleep(0.002)
    for fd in fds:
        os.close(fd)
    print("ok", flush=True)


if __name__ == "__main__":
    main()
