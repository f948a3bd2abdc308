"""The I/O tab's /windows on a job of many profile windows: the first listing (each window's
capture decoded once) and the next (rows kept while the files are unchanged).

    python bench/windows_listing.py [--windows 50]

The windows are tests/data/jax_io.xplane.pb (42 KiB, four steps) moved an hour apart
(tests/unit/fixtures/moved_capture.py), in a temporary folder."""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "unit" / "fixtures")]

from moved_capture import job_logdir  # noqa: E402
from plugin_client import make_client  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--windows", type=int, default=50)
    n = ap.parse_args().windows
    with tempfile.TemporaryDirectory() as tmp:
        job_logdir(Path(tmp), {f"s{i:04d}": i for i in range(n)})
        _, get = make_client(tmp)
        times = []
        for _ in range(2):
            t0 = time.perf_counter()
            code, body = get("/windows", run="job/s0000")
            times.append(time.perf_counter() - t0)
            assert code == 200 and len(body["windows"]) == n, body
    print(f"/windows, {n} windows: first listing {times[0] * 1e3:.0f} ms, again {times[1] * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
