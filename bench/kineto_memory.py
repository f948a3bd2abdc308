"""Time and peak memory of reading a large PyTorch (Kineto) trace, against the file's size:
``tb-iotrace report --json`` and the I/O tab's first open of the trace (the
plugin's conversion, ``tb_iotrace.model.tab.of_kineto.decode_kineto``), each in a fresh child process
whose own peak is read from ``/proc/self/status`` (VmHWM: not ru_maxrss, which a child
can inherit from its parent's address space).

    python bench/kineto_memory.py                           # 1,000,000 op events + 200,000 I/O calls
    python bench/kineto_memory.py --against 30c4dcb         # and that commit's tree, same trace, same run
    python bench/kineto_memory.py --ops 100000 --io 20000 --gzip --runs 1

The trace: the main process (pid 100) runs ``ProfilerStep#N`` spans of 2,000 aten ops each
(three int args per op, as Kineto writes) on its main thread and the I/O calls (pread64 over 100
files) on a second thread (a DataLoader without workers); ``--workers N`` moves the I/O to N
DataLoader worker processes instead. The ``tb_iotrace`` record names the processes and their
threads, so the report converts the trace and analyses it. The report handles each process of
the record as a host, in its own child process when there are several (each converts the trace):
the figures add the largest such child's peak (RUSAGE_CHILDREN) to the report's own. ``--against REV`` exports that commit's ``tb_iotrace`` (``git archive``) beside this
tree's built C modules and runs the same children on it. Target: peak at most 3x the file.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BASE = 1_790_857_026_000_000_000
PER_STEP = 2000

CHILD = r"""
import contextlib, json, os, resource, sys, time

def peak_mib():
    status = dict(l.split(":", 1) for l in open("/proc/self/status") if ":" in l)
    return int(status["VmHWM"].split()[0]) / 1024

what, path = sys.argv[1], sys.argv[2]
import numpy, google.protobuf                      # the imports every path pays, before the clock
import tb_iotrace
from tb_iotrace.cli import main
from tb_iotrace.model.tab.of_kineto import decode_kineto
before = peak_mib()
t = time.perf_counter()
if what == "report":
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
        rc = main(["report", path, "--json"])
    assert rc == 0, rc
else:
    cap = decode_kineto(path, "w")
dt = time.perf_counter() - t
children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024   # forked workers: their own peaks
print(json.dumps({"s": dt, "peak": peak_mib(), "children": children, "before": before,
                  "from": os.path.dirname(tb_iotrace.__file__)}))
"""


def write_trace(path: Path, n_ops: int, n_io: int, workers: int = 0) -> None:
    """The benchmark's trace (see the module doc), written as text: no dict per event."""
    opener = gzip.open if path.name.endswith(".gz") else open
    span = {"start_ns": BASE, "end_ns": BASE + 10**12, "counters": [], "dropped": 0}
    if workers:
        makers = [(200 + w, 200 + w, n_io // workers + (w < n_io % workers), w) for w in range(workers)]
        procs = [{"pid": 100, "role": "main", "threads": [[100, 7001, "python"]], "num_events": 0} | span]
        procs += [{"pid": pid, "role": "worker", "worker_id": w, "threads": [[tid, 7100 + w, "pt_data_worker"]],
                   "num_events": n} | span for pid, tid, n, w in makers]
    else:
        makers = [(100, 101, n_io, 0)]
        procs = [{"pid": 100, "role": "main", "threads": [[100, 7001, "python"], [101, 7002, "reader"]],
                  "num_events": n_io} | span]
    with opener(path, "wt", encoding="utf-8") as fh:
        fh.write('{"schemaVersion": 1, "baseTimeNanoseconds": %d, "traceEvents": [\n' % BASE)
        fh.write('{"ph": "M", "name": "thread_name", "pid": 100, "tid": 100, "args": {"name": "thread 100 (python)"}}')
        t = 1000.0
        for step in range(max(1, n_ops // PER_STEP)):
            st = t
            fh.write(',\n{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d", "pid": 100, "tid": 100, '
                     '"ts": %.3f, "dur": %.1f, "args": {"External id": %d}}' % (step, st, PER_STEP * 2.0 + 1, step))
            fh.write("".join(',\n{"ph": "X", "cat": "cpu_op", "name": "aten::op%d", "pid": 100, "tid": 100, '
                             '"ts": %.3f, "dur": 1.2, "args": {"External id": %d, "Record function id": 0, '
                             '"Ev Idx": %d}}' % (i % 50, t + 0.5 + 2 * i, i, i) for i in range(PER_STEP - 1)))
            t = st + PER_STEP * 2.0 + 2
        for pid, tid, n, w in makers:
            fh.write("".join(',\n{"ph": "X", "cat": "tb_iotrace.io", "name": "pread64", "pid": %d, "tid": %d, '
                             '"ts": %.3f, "dur": 1.0, "args": {"fd": 5, "path": "/data/f%d.bin", "offset": %d, '
                             '"bytes_requested": 4096, "bytes": 4096}}' % (pid, tid, 1000.0 + i * 3 + w, i % 100, i * 4096)
                             for i in range(n)))
        fh.write('\n], "traceName": "w.1.pt.trace.json", "tb_iotrace": ')
        fh.write(json.dumps({"format": "tb_iotrace.kineto/1", "base_time_ns": BASE, "processes": procs, "notes": []}))
        fh.write("}\n")


def export_tree(rev: str, into: Path) -> Path:
    """``rev``'s tb_iotrace (git archive) with this tree's built C modules: a PYTHONPATH root."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev, "tb_iotrace"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    for so in (REPO / "tb_iotrace").glob("_*.so"):
        shutil.copy2(so, into / "tb_iotrace" / so.name)
    return into


def measure(what: str, trace: Path, root: Path, cwd: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(root), PYTHONHASHSEED="0")
    out = subprocess.run([sys.executable, "-c", CHILD, what, str(trace)], env=env, cwd=cwd, check=True,
                         capture_output=True, text=True, timeout=3600)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ops", type=int, default=1_000_000)
    ap.add_argument("--io", type=int, default=200_000)
    ap.add_argument("--workers", type=int, default=0, help="DataLoader worker processes making the I/O")
    ap.add_argument("--gzip", action="store_true", help="write the trace as .pt.trace.json.gz")
    ap.add_argument("--runs", type=int, default=1, help="children per (tree, measurement); the median is shown")
    ap.add_argument("--against", metavar="REV", help="also measure this commit's tb_iotrace, same trace")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="tbio-kineto-mem-") as tmp:
        trace = Path(tmp) / ("w.1.pt.trace.json" + (".gz" if args.gzip else ""))
        write_trace(trace, args.ops, args.io, args.workers)
        size = trace.stat().st_size
        text = size
        if args.gzip:
            with gzip.open(trace, "rb") as fh:
                text = sum(len(b) for b in iter(lambda: fh.read(1 << 24), b""))
        trees = [("this tree", REPO)]
        if args.against:
            trees.append((args.against, export_tree(args.against, Path(tmp) / "against")))
        print(f"trace {size / 2**20:.1f} MiB{f' (gzip of {text / 2**20:.1f} MiB of JSON)' if args.gzip else ''}: "
              f"{args.ops:,} op events + {args.io:,} I/O calls"
              f"{f' by {args.workers} DataLoader workers' if args.workers else ''}; "
              f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
        print(f"  {'':15} {'tree':>10} {'time':>8} {'peak VmHWM':>11} {'peak/JSON':>10} {'(imports)':>10}")
        for what, label in (("report", "report --json"), ("tab", "tab 1st open")):
            for name, root in trees:
                runs = [measure(what, trace, root, tmp) for _ in range(args.runs)]
                s = statistics.median(r["s"] for r in runs)
                peak = statistics.median(r["peak"] + r["children"] for r in runs)
                print(f"  {label:15} {name[:10]:>10} {s:7.1f}s {peak:8.0f} MiB {peak * 2**20 / text:9.1f}x "
                      f"{runs[0]['before']:6.0f} MiB")
    print(f"  load after: {os.getloadavg()[0]:.1f}; peak: the child's VmHWM (+ its largest worker's, if any); "
          f"peak/JSON: that against the trace's JSON text; target <= 3x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
