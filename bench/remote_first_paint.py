"""Benchmark: the I/O tab's first paint, server side (``/runs`` + ``/capture`` + a full-view
``/timeline``), of one capture read from a local S3 server (moto, on 127.0.0.1) against the
same capture on disk, as a ratio. Cold: a fresh plugin and an empty remote cache each time (the
capture fetched once); warm: the next fresh plugin with the cache kept (listing only).

    python bench/remote_first_paint.py [--events 200000] [--repeat 3]

Needs the [cloud] extra and moto[server] (requirements-dev.txt).
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "unit" / "fixtures"))
sys.path.insert(0, str(ROOT))

from cloud_servers import start_s3  # noqa: E402
from plugin_client import make_client  # noqa: E402

from tb_iotrace.plugin.synthetic import make_logdir

GPU = ROOT / "tests" / "data" / "gpu_multi_worker.xplane.pb"


def first_paint(logdir: str) -> float:
    t = time.perf_counter()
    _, get = make_client(logdir)
    code, runs = get("/runs")
    assert code == 200 and runs["runs"], runs
    run = runs["runs"][0]["run"]
    host = runs["runs"][0]["hosts"][0]
    code, cap = get("/capture", run=run, host=host)
    assert code == 200, cap
    lo, hi = cap["extent"]
    code, _ = get("/timeline", run=run, host=host, start=lo, end=hi, width=1250)
    assert code == 200
    return time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="tbio-remote-bench-"))
    srv = start_s3()
    try:
        os.environ.update(srv.env)
        local = tmp / "logs"
        path = make_logdir(local, GPU, run="r", host="worker0", n_events=args.events, n_files=2000)
        import fsspec

        fs = fsspec.filesystem("s3")
        fs.mkdir("bench")
        fs.put_file(str(path), "bench/logs/" + path.relative_to(local).as_posix())
        size = path.stat().st_size
        disk, cold, warm = [], [], []
        first_paint(str(local))          # imports and the decoders' first use, in neither figure
        for i in range(args.repeat):
            disk.append(first_paint(str(local)))
            os.environ["TB_IOTRACE_CACHE"] = str(tmp / f"cache{i}")
            cold.append(first_paint("s3://bench/logs"))
            warm.append(first_paint("s3://bench/logs"))
        d, c, w = (statistics.median(x) for x in (disk, cold, warm))
        print(f"capture {size / 2**20:.1f} MiB ({args.events} I/O events), median of {args.repeat}: "
              f"disk {d * 1e3:.0f} ms, s3 cold {c * 1e3:.0f} ms (x{c / d:.2f}), s3 warm {w * 1e3:.0f} ms "
              f"(x{w / d:.2f})")
    finally:
        srv.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
