"""What one forked worker's life costs under ``tb-iotrace run``: the fixed cost a DataLoader with
workers restarted each epoch pays per worker (``bench/run_overhead.py``'s restarted case), plain
and under ``run`` in alternating turns, each turn a fresh process.

    python bench/worker_lifetime.py [--turns 4] [--forks 20] [--reads 16]

The job imports torch (as a DataLoader's parent has), then forks ``--forks`` children one at a
time; each reads ``--reads`` ``.npy`` files with ``np.load`` and ends with ``os._exit(0)`` (as
multiprocessing's fork workers do). Per fork it measures, in the parent: ``wall`` (fork to
reaped) and ``cpu`` (the child's user + system time, from RUSAGE_CHILDREN: what the load does
not inflate); in the child: ``start`` (the fork to the child's first line: the at-fork handlers,
the capture's start) and, under ``run``, ``finish`` (the record's end and write, timed around
the same call the ``os._exit`` wrapper makes). Medians per mode, then run/plain. The summary
child ``run`` starts after the job is off (``TBIO_LANDED_SUMMARIES=0``): it is no worker's cost.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from run_overhead import make_files   # the same 64 KiB .npy files as the loop bench's

REPO = Path(__file__).resolve().parent.parent

JOB = r'''
import json, os, resource, sys, time
import numpy as np
import torch   # noqa: F401  the parent's address space a DataLoader worker inherits
data, forks, reads, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
paths = sorted(os.path.join(data, n) for n in os.listdir(data))[:reads]
try:
    from tb_iotrace.recording import autostart
except ImportError:
    autostart = None
traced = autostart is not None and autostart._state is not None
rows = []
for k in range(forks + 1):                     # the first is a warm-up
    r, w = os.pipe()
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        t_in = time.perf_counter()
        for p in paths:
            np.load(p)
        t_fin = time.perf_counter()
        if traced:
            autostart._state.finish("os._exit", code=0)    # what the os._exit wrapper does
        t_end = time.perf_counter()
        os.write(w, json.dumps([t_in - t0, t_end - t_fin]).encode())
        (autostart._real_exit if traced else os._exit)(0)
    os.close(w)
    got = json.loads(os.read(r, 4096) or b"[0, 0]")
    os.close(r)
    os.waitpid(pid, 0)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    if k:
        rows.append({"wall": wall, "cpu": cpu, "start": got[0], "finish": got[1]})
with open(out, "w") as fh:
    json.dump(rows, fh)
'''


def turn(tmp: Path, mode: str, k: int, args: argparse.Namespace) -> list[dict[str, float]]:
    out = tmp / f"{mode}.{k}.json"
    job = tmp / "job.py"
    cmd = [sys.executable, str(job), str(tmp / "data"), str(args.forks), str(args.reads), str(out)]
    if mode == "run":
        cmd = [sys.executable, "-m", "tb_iotrace", "run", "--quiet", "--logdir", str(tmp / f"logs.{k}"), "--", *cmd]
    # no summary child after the run (TBIO_LANDED_SUMMARIES=0): it runs after the job, not in a
    # worker's life, and would take the next turn's CPU
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p),
               TBIO_LANDED_SUMMARIES="0")
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
    return json.loads(out.read_text())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--turns", type=int, default=4)
    ap.add_argument("--forks", type=int, default=20, help="children per turn (after one warm-up)")
    ap.add_argument("--reads", type=int, default=16, help=".npy files each child reads")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="tbio-worker-life-", ignore_cleanup_errors=True) as t:
        tmp = Path(t)
        (tmp / "data").mkdir()
        make_files(tmp / "data", args.reads)
        (tmp / "job.py").write_text(JOB)
        got: dict[str, list[dict[str, float]]] = {"plain": [], "run": []}
        print(f"load average before: {os.getloadavg()[0]:.2f}; {args.turns} turns x {args.forks} forks, "
              f"{args.reads} reads each")
        for k in range(args.turns):
            for mode in (("plain", "run") if k % 2 == 0 else ("run", "plain")):
                got[mode] += turn(tmp, mode, k, args)
        print(f"load average after: {os.getloadavg()[0]:.2f}")
        med = {m: {f: statistics.median(r[f] for r in rows) * 1e3 for f in ("wall", "cpu", "start", "finish")}
               for m, rows in got.items()}
        print(f"  {'per forked child (median ms)':30} {'plain':>8} {'run':>8} {'run-plain':>10} {'run/plain':>10}")
        for f in ("wall", "cpu", "start", "finish"):
            a, b = med["plain"][f], med["run"][f]
            ratio = f"{b / a:10.2f}" if a >= 0.05 else f"{'-':>10}"      # finish: nothing to write plain
            print(f"  {f:30} {a:8.2f} {b:8.2f} {b - a:+10.2f} {ratio}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
