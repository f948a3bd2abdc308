"""Benchmark of the job verdict across many ranks (tb_iotrace.analysis.job_verdict) and of the
tab's "All hosts" of those ranks after a TensorBoard restart.

``--ranks`` ranks (64) of one run, made from the real gloo rank's PyTorch trace
(tests/data/ddp_rank0.pt.trace.json.gz, tb_iotrace.plugin.synthetic_ranks), rank ``--slow``'s
waits exchanged so that it is the straggler. Measured in one run:

- ``tb-iotrace report --json`` in a new process (every trace decoded and analysed, the job
  verdict built): wall seconds, and that the verdict names the slow rank;
- the tab's ``/hosts`` of all ranks in a new TensorBoard (summaries cleared: cold), then in a
  restarted one (the target: under 3 s).

Wall times on a shared machine swing with its load (printed).

    python bench/job_verdict_ranks.py [--ranks 64] [--slow 7]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import REPO, child_env, loadavg, repo_on_path, work_dir  # noqa: E402

repo_on_path()
from plugin_hosts import get, start_tb, stop_tb  # noqa: E402

from tb_iotrace.plugin.synthetic_ranks import make_ranks  # noqa: E402

TARGET_S = 3.0
SOURCE = REPO / "tests" / "data" / "ddp_rank0.pt.trace.json.gz"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--slow", type=int, default=7)
    args = ap.parse_args()
    with work_dir("tbio-ranks-", None, False) as d:
        logs = d / "logs"
        make_ranks(SOURCE, logs, args.ranks, args.slow)
        print(f"{args.ranks} ranks made from {SOURCE.name}, rank {args.slow} slow")
        print(f"machine: {os.cpu_count()} CPUs, load average {loadavg()} (shared: other jobs inflate wall times)")
        print(f"command: python bench/job_verdict_ranks.py --ranks {args.ranks} --slow {args.slow}  (checkout {REPO.name})")
        t = time.perf_counter()
        r = subprocess.run([sys.executable, "-m", "tb_iotrace", "report", str(logs), "--json", "--no-progress"],
                           capture_output=True, text=True, env=child_env(), check=True)
        report_s = time.perf_counter() - t
        (run,) = json.loads(r.stdout)["runs"]
        jv = run["job_verdict"]
        named = (jv.get("straggler") or {}).get("rank")
        tb, base = start_tb(logs, {})
        try:
            cold = get(base, "hosts", run=run["run"], host="__all__")
        finally:
            stop_tb(tb)
        tb, base = start_tb(logs, {})
        try:
            restart = get(base, "hosts", run=run["run"], host="__all__")
        finally:
            stop_tb(tb)
        print(f"load average after: {loadavg()}")
    print(f"\njob verdict (tb-iotrace report --json, new process, {args.ranks} traces decoded and analysed): "
          f"{report_s:.2f} s; straggler named: rank {named} ({'ok' if named == args.slow else 'WRONG'})")
    print(f"All hosts (/hosts of {args.ranks} ranks): cold {cold:.2f} s; after a restart {restart:.2f} s   "
          f"target < {TARGET_S:.0f} s: {'ok' if restart < TARGET_S else 'MISSED'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
