"""Time and peak memory of ``tb_iotrace.analysis.analyze(path)`` on a large capture (the
shared GPU capture plus synthetic I/O events, as bench/plugin_timeline.py builds it), each
run in a fresh process. The I/O tab's findings panel runs this analysis: its memory budget is
5x the file size.

    python bench/analysis_memory.py [--events 1000000] [--runs 3] [--capture FILE]
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GPU = ROOT / "tests" / "data" / "gpu_multi_worker.xplane.pb"

RUN = """
import json, os, sys, time
def mem():
    d = dict(l.split(":", 1) for l in open("/proc/self/status") if ":" in l)
    return int(d["VmRSS"].split()[0]) * 1024, int(d["VmHWM"].split()[0]) * 1024
import numpy
from tb_iotrace.analysis import analyze
base, _ = mem()
t = time.perf_counter()
a = analyze(sys.argv[1])
dt = time.perf_counter() - t
_, hwm = mem()
import tb_iotrace
print(json.dumps({"s": dt, "peak": hwm - base, "ids": a.ids if a else None, "from": os.path.dirname(tb_iotrace.__file__)}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--capture", help="an existing .xplane.pb instead of building one")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.capture:
            path = Path(args.capture)
        else:
            from tb_iotrace.plugin.synthetic import make_logdir

            path = make_logdir(tmp, GPU, n_events=args.events)
        size = path.stat().st_size
        # run outside the checkout: the tb_iotrace measured is the one PYTHONPATH (or the install) gives
        runs = [json.loads(subprocess.run([sys.executable, "-c", RUN, str(path)], check=True, capture_output=True,
                                          text=True, cwd=tmp).stdout) for _ in range(args.runs)]
    peak = statistics.median(r["peak"] for r in runs)
    times = ", ".join(f"{r['s']:.2f}" for r in runs)
    print(f"capture {size / 2**20:.1f} MiB; analyze: median {statistics.median(r['s'] for r in runs):.2f} s "
          f"(runs: {times}), peak RSS growth {peak / 2**20:.0f} MiB "
          f"= {peak / size:.1f}x the file (budget 5x); findings {runs[0]['ids']}; tb_iotrace from {runs[0]['from']}")


if __name__ == "__main__":
    main()
