"""Benchmark of the first "All hosts" of a logdir nobody has opened (no summaries kept): this
checkout against another one (``--old``, its native modules built), side by side.

``--hosts`` hosts (512) of one run, each the shared GPU capture (tests/data/gpu_multi_worker.xplane.pb)
with ``--events`` synthetic I/O calls merged (20,000; built as bench/summary_hosts.py does). Each
round, for each checkout in turn (alternating which goes first): the summaries cleared, a new
TensorBoard (``TBIO_PLUGIN_PREFETCH=0``) running that checkout, ``/hosts`` of all hosts (cold:
every capture decoded, in child processes on a machine of several cores, its summary written);
the rows of both checkouts compared. Target: under 10 s.

Wall times on a shared machine swing with its load (printed, with each request's).

    python bench/first_open_hosts.py --old /tmp/base [--hosts 512] [--events 20000] [--rounds 2] [--keep DIR]
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import REPO, loadavg, repo_on_path, work_dir  # noqa: E402

repo_on_path()
from plugin_hosts import RUN, start_tb, stop_tb  # noqa: E402
from summary_hosts import build, clear_summaries  # noqa: E402

TARGET_S = 10.0


def cold_hosts(d: Path, root: Path) -> tuple[float, dict]:
    """A new TensorBoard running the checkout ``root``: /hosts of every host, cold."""
    clear_summaries(d)
    path = os.pathsep.join([str(root)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                                          if p and Path(p).resolve() not in (REPO.resolve(), root.resolve())])
    tb, base = start_tb(d, {"PYTHONPATH": path, "TBIO_SUMMARIES": "1"})
    try:
        t = time.perf_counter()
        q = urllib.parse.urlencode({"run": RUN, "host": "__all__"})
        with urllib.request.urlopen(f"{base}/data/plugin/iotrace/hosts?{q}", timeout=600) as r:
            body = json.loads(r.read())
        return time.perf_counter() - t, body
    finally:
        stop_tb(tb)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", required=True, help="the other checkout (its tb_iotrace, native modules built)")
    ap.add_argument("--hosts", type=int, default=512)
    ap.add_argument("--events", type=int, default=20_000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--keep", help="build/keep the logdir here (reused when it exists)")
    args = ap.parse_args()
    old = Path(args.old).resolve()
    keep = Path(args.keep) if args.keep else None
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
    with (contextlib.nullcontext(keep) if keep is not None else work_dir("tbio-firstopen-", None, False)) as d:
        files = build(d, args.hosts, args.events)
        print(f"{args.hosts} hosts x (GPU capture + {args.events} I/O calls): "
              f"{sum(p.stat().st_size for p in files) / 2**20:.0f} MiB of captures")
        print(f"machine: {os.cpu_count()} CPUs, load average {loadavg()} (shared: other jobs inflate wall times)")
        print(f"command: python bench/first_open_hosts.py --old {args.old} --hosts {args.hosts} --events {args.events} "
              f"--rounds {args.rounds}  (checkout {REPO.name})")
        got: dict[str, list[float]] = {"old": [], "new": []}
        rows: dict[str, dict] = {}
        for k in range(args.rounds):
            order = [("old", old), ("new", REPO)] if k % 2 == 0 else [("new", REPO), ("old", old)]
            for name, root in order:
                s, body = cold_hosts(d, root)
                got[name].append(s)
                rows[name] = body
                print(f"  round {k + 1} {name}: {s:.2f} s  (load {loadavg()})", flush=True)
    same = [{k: v for k, v in r.items() if k != "host"} for r in rows["old"]["hosts"]] == \
        [{k: v for k, v in r.items() if k != "host"} for r in rows["new"]["hosts"]]
    o, n = statistics.median(got["old"]), statistics.median(got["new"])
    print(f"\nfirst All hosts of {args.hosts} hosts without summaries, median of {args.rounds}: "
          f"old {o:.2f} s, new {n:.2f} s (new/old {n / o:.2f}); same rows: {same}   "
          f"target < {TARGET_S:.0f} s: {'ok' if n < TARGET_S else 'MISSED'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
