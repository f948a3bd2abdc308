"""Benchmark of the job verdict across many ranks (tb_iotrace.analysis.job_verdict) and of the
tab's "All hosts" of those ranks after a TensorBoard restart.

``--ranks`` ranks (64) of one run, made from the real gloo rank's PyTorch trace
(tests/data/ddp_rank0.pt.trace.json.gz, tb_iotrace.plugin.synthetic_ranks), rank ``--slow``'s
waits exchanged so that it is the straggler. Summaries and job facts are kept in a cache of the
run's own (``TB_IOTRACE_CACHE``). Measured in one run, each in a new process:

- the CLI: ``tb-iotrace report --json`` (every trace decoded and analysed, the job verdict built,
  each rank's job facts kept: what the job verdict cost before the facts), then ``tb-iotrace
  report --hosts --json`` (the per-host table and the job verdict from the stored summaries and
  job facts alone);
- the tab: a new TensorBoard, ``/hosts`` of all ranks (cold: summaries made), then ``/findings``
  asked again until every rank is analysed (their job facts kept); TensorBoard restarted:
  ``/hosts`` (the table and the job verdict from the stored summaries and facts: the target,
  under 3 s), then ``/findings`` again until its job verdict is there (every rank analysed
  again: how long the restarted tab waited for the job verdict before the facts).

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
import urllib.parse
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import REPO, child_env, loadavg, repo_on_path, work_dir  # noqa: E402

repo_on_path()
from plugin_hosts import start_tb, stop_tb  # noqa: E402

from tb_iotrace.plugin.synthetic_ranks import make_ranks  # noqa: E402

TARGET_S = 3.0
SOURCE = REPO / "tests" / "data" / "ddp_rank0.pt.trace.json.gz"


def ask(base: str, route: str, **q: str) -> tuple[float, dict]:
    t = time.perf_counter()
    url = f"{base}/data/plugin/iotrace/{route}?{urllib.parse.urlencode(q)}"
    with urllib.request.urlopen(url, timeout=600) as r:
        body = json.loads(r.read())
    return time.perf_counter() - t, body


def findings_done(base: str, run: str, limit_s: float = 600.0) -> tuple[float, dict]:
    """Seconds until ``/findings`` of all hosts has its job verdict and nothing pending."""
    t = time.perf_counter()
    while True:
        _, body = ask(base, "findings", run=run, host="__all__")
        if (body.get("job_verdict") and not body.get("pending")) or time.perf_counter() - t > limit_s:
            return time.perf_counter() - t, body
        time.sleep(0.25)


def cli(logs: Path, *extra: str) -> tuple[float, dict]:
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "tb_iotrace", "report", str(logs), "--json", "--no-progress", *extra],
                       capture_output=True, text=True, env=child_env(), check=True)
    return time.perf_counter() - t, json.loads(r.stdout)


def straggler(jv: dict | None) -> object:
    return ((jv or {}).get("straggler") or {}).get("rank")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--slow", type=int, default=7)
    args = ap.parse_args()
    with work_dir("tbio-ranks-", None, False) as d:
        os.environ["TB_IOTRACE_CACHE"] = str(d / "cache")     # this run's summaries and job facts only
        logs = d / "logs"
        make_ranks(SOURCE, logs, args.ranks, args.slow)
        print(f"{args.ranks} ranks made from {SOURCE.name}, rank {args.slow} slow")
        print(f"machine: {os.cpu_count()} CPUs, load average {loadavg()} (shared: other jobs inflate wall times)")
        print(f"command: python bench/job_verdict_ranks.py --ranks {args.ranks} --slow {args.slow}  (checkout {REPO.name})")
        report_s, doc = cli(logs)
        (run,) = doc["runs"]
        hosts_s, hdoc = cli(logs, "--hosts")
        (hrun,) = hdoc["runs"]
        tb, base = start_tb(logs, {})
        try:
            cold_hosts_s, cold_hosts = ask(base, "hosts", run=run["run"], host="__all__")
            cold_find_s, cold_find = findings_done(base, run["run"])
        finally:
            stop_tb(tb)
        tb, base = start_tb(logs, {})
        try:
            warm_hosts_s, warm_hosts = ask(base, "hosts", run=run["run"], host="__all__")
            warm_find_s, warm_find = findings_done(base, run["run"])
        finally:
            stop_tb(tb)
        print(f"load average after: {loadavg()}")
    want = args.slow

    def ok(jv: dict | None) -> str:
        return f"rank {straggler(jv)} named ({'ok' if straggler(jv) == want else 'WRONG'})"

    print(f"\nCLI, job verdict of {args.ranks} ranks, each in a new process:")
    print(f"  report --json (every trace decoded and analysed; facts kept): {report_s:6.2f} s  {ok(run['job_verdict'])}")
    print(f"  report --hosts --json (stored summaries and job facts, {hdoc['computed']} hosts read): "
          f"{hosts_s:6.2f} s  {ok(hrun.get('job_verdict'))}  same verdict: {hrun.get('job_verdict') == run['job_verdict']}"
          f"   x{report_s / hosts_s:.1f} faster")
    print(f"tab, All hosts of {args.ranks} ranks:")
    first = "none yet" if cold_hosts.get("job_verdict") is None else ok(cold_hosts["job_verdict"])
    print(f"  first TensorBoard: /hosts {cold_hosts_s:.2f} s (job verdict: {first}); /findings until every rank "
          f"is analysed {cold_find_s:.2f} s  {ok(cold_find.get('job_verdict'))}")
    print(f"  after a restart: /hosts with the job verdict {warm_hosts_s:.2f} s  {ok(warm_hosts.get('job_verdict'))}  "
          f"same as the findings': {warm_hosts.get('job_verdict') == cold_find.get('job_verdict')}   "
          f"target < {TARGET_S:.0f} s: {'ok' if warm_hosts_s < TARGET_S and straggler(warm_hosts.get('job_verdict')) == want else 'MISSED'}")
    print(f"  after a restart, the job verdict from /findings (every rank analysed again, as before the facts): "
          f"{warm_find_s:.2f} s  {ok(warm_find.get('job_verdict'))}   x{warm_find_s / warm_hosts_s:.0f} the /hosts answer")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
