"""How long the I/O tab's first open of a PyTorch trace takes: the JSON parse and the
conversion to an XSpace (tb_iotrace.store.kineto_xspace), side by side on one synthetic trace.

    python bench/kineto_convert.py                       # 300,000 op events + 200,000 I/O calls
    python bench/kineto_convert.py --ops 30000 --io 20000

The trace: one main thread with ProfilerStep#N spans of 2,000 aten ops each (three int args per
op, as Kineto writes), two DataLoader workers with one pread64 each per 3 us over 100 files, the
tb_iotrace record. Prints the file size, the parse and conversion times, their ratio (the
conversion against what reading the file costs anyway), the converted size and the peak RSS.
The tab converts a trace once per version and keeps the result (tb_iotrace/model/tab/of_kineto.py).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

BASE = 1_790_857_026_000_000_000


def make_trace(n_ops: int, n_io: int) -> dict:
    ev: list[dict] = [{"ph": "M", "name": "thread_name", "pid": 100, "tid": 100, "args": {"name": "thread 100 (python)"}}]
    t = 1000.0
    per = 2000
    for s in range(max(1, n_ops // per)):
        st = t
        ev.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{s}", "pid": 100, "tid": 100,
                   "ts": round(st, 3), "dur": per * 2.0 + 1, "args": {"External id": s}})
        for i in range(per - 1):
            ev.append({"ph": "X", "cat": "cpu_op", "name": f"aten::op{i % 50}", "pid": 100, "tid": 100,
                       "ts": round(t + 0.5, 3), "dur": 1.2,
                       "args": {"External id": i, "Record function id": 0, "Ev Idx": i}})
            t += 2.0
        t = st + per * 2.0 + 2
    procs = []
    for w, pid in enumerate((200, 201)):
        for i in range(n_io // 2):
            ev.append({"ph": "X", "cat": "tb_iotrace.io", "name": "pread64", "pid": pid, "tid": pid,
                       "ts": round(1000.0 + i * 3 + w, 3), "dur": 1.0,
                       "args": {"fd": 5, "path": f"/data/f{i % 100}.bin", "offset": i * 4096,
                                "bytes_requested": 4096, "bytes": 4096}})
        procs.append({"pid": pid, "role": "worker", "start_ns": BASE, "end_ns": BASE + 10**12,
                      "threads": [[pid, 1234 + w, "pt_data_worker"]], "counters": [], "dropped": 0,
                      "num_events": n_io // 2})
    return {"schemaVersion": 1, "baseTimeNanoseconds": BASE, "traceEvents": ev,
            "tb_iotrace": {"format": "tb_iotrace.kineto/1", "base_time_ns": BASE, "processes": procs, "notes": []}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ops", type=int, default=300_000)
    ap.add_argument("--io", type=int, default=200_000)
    args = ap.parse_args()
    from tb_iotrace.store.kineto import read_trace
    from tb_iotrace.store.kineto_xspace import to_xspace

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "w.1.pt.trace.json")
        with open(path, "w") as fh:
            json.dump(make_trace(args.ops, args.io), fh)
        size = os.path.getsize(path)
        t0 = time.perf_counter()
        trace = read_trace(path)
        t1 = time.perf_counter()
        space = to_xspace(trace, path)
        t2 = time.perf_counter()
        out = len(space.SerializeToString())
    load = os.getloadavg()[0]
    print(f"trace {size / 2**20:.1f} MiB, {args.ops} op events + {args.io} I/O calls"
          f"{' (machine LOADED: load %.1f)' % load if load > (os.cpu_count() or 1) else ''}")
    print(f"  parse JSON  {t1 - t0:6.2f} s")
    print(f"  convert     {t2 - t1:6.2f} s   ({(t2 - t1) / (t1 - t0):.2f}x the parse, "
          f"{(t2 - t1) / max(args.ops + args.io, 1) * 1e6:.1f} us per event)")
    print(f"  converted   {out / 2**20:.1f} MiB; peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
