"""Benchmark of the I/O tab's "All hosts" table (``/hosts``) of many hosts, cold and after
TensorBoard restarts, with and without the per-capture summaries
(tb_iotrace/store/summaries.py).

``--hosts`` hosts (512) of one run, each the shared GPU capture (tests/data/gpu_multi_worker.xplane.pb)
with ``--events`` synthetic I/O calls merged (20,000; one capture built, then copied: every host
is still a file of its own, decoded on its own). Measured in one run, each TensorBoard a new
process (``TBIO_PLUGIN_PREFETCH=0``: nothing decoded before the request):

- with summaries (the default, kept beside the captures; cleared first): /hosts cold (every
  capture decoded, its summary written), again in the same process, and in a restarted
  TensorBoard (the target: under 3 s);
- without summaries (``TBIO_SUMMARIES=0``: what main did before): /hosts cold, and again in a
  restarted TensorBoard; the two sides interleaved, ``--rounds`` times;
- with summaries made in TensorBoard's own process, one capture at a time
  (``TBIO_SUMMARY_JOBS=1``: what main did before the child processes): /hosts cold;
- ``tb-iotrace report --hosts --json`` in a new process, reading the same summaries.

Wall times on a shared machine swing with its load (printed).

    python bench/summary_hosts.py [--hosts 512] [--events 20000] [--rounds 2] [--keep DIR]
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import REPO, child_env, loadavg, repo_on_path, work_dir  # noqa: E402

repo_on_path()
from plugin_hosts import GPU, RUN, get, start_tb, stop_tb  # noqa: E402
from plugin_timeline import proc_cpu  # noqa: E402

from tb_iotrace.store import summaries
from tb_iotrace.plugin.synthetic import make_logdir

TARGET_S = 3.0


def build(d: Path, hosts: int, events: int) -> list[Path]:
    first = make_logdir(d, GPU, run=RUN, host="worker000", n_events=events) \
        if not (d / "plugins" / "profile" / RUN / "worker000.xplane.pb").exists() else \
        d / "plugins" / "profile" / RUN / "worker000.xplane.pb"
    out = [first]
    for i in range(1, hosts):
        p = first.with_name(f"worker{i:03d}.xplane.pb")
        if not p.exists():
            shutil.copyfile(first, p)
        out.append(p)
    return out


def clear_summaries(d: Path) -> None:
    shutil.rmtree(d / "plugins" / "iotrace" / "summaries", ignore_errors=True)


def hosts_once(d: Path, env: dict[str, str], repeat: bool = False) -> list[tuple[float, float]]:
    """A new TensorBoard: the /hosts of every host (and again with ``repeat``): (wall seconds,
    TensorBoard's CPU seconds) each."""
    tb, base = start_tb(d, env)
    try:
        out = []
        for _ in range(2 if repeat else 1):
            cpu = proc_cpu(tb.pid)
            wall = get(base, "hosts", run=RUN, host="__all__")
            out.append((wall, proc_cpu(tb.pid) - cpu))
        return out
    finally:
        stop_tb(tb)


def report_hosts(d: Path) -> tuple[float, int]:
    t = time.perf_counter()
    got = subprocess.run([sys.executable, "-m", "tb_iotrace", "report", str(d), "--hosts", "--json"],
                         capture_output=True, text=True, env=child_env(), check=True)
    return time.perf_counter() - t, int(json.loads(got.stdout)["computed"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", type=int, default=512)
    ap.add_argument("--events", type=int, default=20_000)
    ap.add_argument("--keep", help="build/keep the logdir here (reused when it exists)")
    ap.add_argument("--rounds", type=int, default=2, help="rounds of the four TensorBoard starts, interleaved")
    args = ap.parse_args()
    keep = Path(args.keep) if args.keep else None
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
    with (contextlib.nullcontext(keep) if keep is not None else work_dir("tbio-summaries-", None, False)) as d:
        files = build(d, args.hosts, args.events)
        total = sum(p.stat().st_size for p in files)
        print(f"{args.hosts} hosts x (GPU capture + {args.events} I/O calls): {total / 2**20:.0f} MiB of captures")
        print(f"machine: {os.cpu_count()} CPUs, load average {loadavg()} (shared: other jobs inflate wall times)")
        print(f"command: python bench/summary_hosts.py --hosts {args.hosts} --events {args.events} --rounds {args.rounds}"
              f"  (checkout {REPO.name})")
        off, on = {summaries.ENV: "0"}, {summaries.ENV: "1"}
        got: dict[str, list[tuple[float, float]]] = {k: [] for k in ("old_cold", "old_restart", "cold", "repeat",
                                                                    "restart", "serial_cold")}
        for _ in range(args.rounds):     # interleaved: the machine's load moves both sides alike
            clear_summaries(d)
            got["serial_cold"].append(hosts_once(d, {**on, "TBIO_SUMMARY_JOBS": "1"})[0])
            clear_summaries(d)
            cold, repeat = hosts_once(d, on, repeat=True)
            got["cold"].append(cold)
            got["repeat"].append(repeat)
            got["restart"].append(hosts_once(d, on)[0])
            got["old_cold"].append(hosts_once(d, off)[0])
            got["old_restart"].append(hosts_once(d, off)[0])
        kept = list((d / "plugins" / "iotrace" / "summaries").glob("*" + summaries.SUFFIX))
        size = sum(p.stat().st_size for p in kept)
        cli_s, computed = report_hosts(d)
        print(f"load average after: {loadavg()}")
    ok = max(w for w, _ in got["restart"]) < TARGET_S

    def fmt(k: str) -> str:
        return " / ".join(f"{w:.2f} ({c:.2f} CPU)" for w, c in got[k])

    print(f"\nAll hosts (/hosts of {args.hosts} hosts), wall s (TensorBoard's CPU s) per round ({args.rounds}), "
          f"each TensorBoard a new process:")
    print(f"  no summaries (TBIO_SUMMARIES=0): cold {fmt('old_cold')}; after a restart {fmt('old_restart')}")
    print(f"  summaries (default): cold {fmt('cold')} (decodes and writes them); after a restart "
          f"{fmt('restart')}   target < {TARGET_S:.0f} s: {'ok' if ok else 'MISSED'}")
    print(f"  summaries made one at a time in TensorBoard's process (TBIO_SUMMARY_JOBS=1): cold {fmt('serial_cold')}; "
          f"in child processes (default, {os.cpu_count()} cores): cold {fmt('cold')}   target < 10 s: "
          f"{'ok' if max(w for w, _ in got['cold']) < 10 else 'MISSED'}")
    print(f"  same process, asked again: {fmt('repeat')}; {len(kept)} summaries kept, {size / 1024:.0f} KiB in all")
    print(f"  tb-iotrace report --hosts --json, a new process: {cli_s:.2f} s ({computed} captures decoded)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
