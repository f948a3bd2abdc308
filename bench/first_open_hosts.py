"""Benchmark of the first "All hosts" of a logdir nobody has opened: captures without summaries
(this checkout, and another one with ``--old``, its native modules built) against the same
captures as tb_iotrace writes them (their summaries made as they landed), side by side.

``--hosts`` hosts (512) of one run, each the shared GPU capture (tests/data/gpu_multi_worker.xplane.pb)
with ``--events`` synthetic I/O calls merged (20,000; built as bench/summary_hosts.py does). Each
round, for each checkout in turn (alternating which goes first): the summaries cleared, a new
TensorBoard (``TBIO_PLUGIN_PREFETCH=0``) running that checkout, ``/hosts`` of all hosts (cold:
every capture decoded, in child processes on a machine of several cores, its summary written);
then (``landed``) the summaries cleared and made again as the process that writes each capture
makes them (tb_iotrace.analysis.landed's :func:`keep_landed`, here in this process for
``--sample`` captures, the row kept for the other copies: in a job each rank makes its own on its
own machine, so its cost is printed per capture, not added), and a new TensorBoard of this
checkout asked the same. The rows of every
case compared. Target: under 10 s.

Wall times on a shared machine swing with its load (printed, with each request's).

    python bench/first_open_hosts.py [--old /tmp/base] [--hosts 512] [--events 20000] [--rounds 2] [--keep DIR]
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


def land(files: list[Path], sample: int) -> float:
    """The summaries made as each capture lands, as the writer's child keeps them: the first
    ``sample`` captures each decoded (tb_iotrace.analysis.landed's :func:`keep_landed`), CPU
    seconds per capture returned; the others, byte-for-byte copies of the first (as
    :func:`build` makes them), get the same row kept under their own identity (in a job each
    rank makes its own on its own machine, in parallel: decoding all 512 here, on a loaded
    2-core machine, would only measure this machine)."""
    from tb_iotrace.analysis.landed import keep_landed
    from tb_iotrace.store import summaries

    t = time.process_time()
    for f in files[:sample]:
        assert keep_landed(f.name[: -len(".xplane.pb")], str(f), facts=False) == ["summary"]
    per = (time.process_time() - t) / max(min(sample, len(files)), 1)
    row = summaries.load(str(files[0]))
    assert row is not None
    data = files[0].read_bytes()
    for f in files[sample:]:
        assert f.read_bytes() == data
        assert summaries.save(str(f), row) is not None
    return per


def cold_hosts(d: Path, root: Path, clear: bool = True) -> tuple[float, dict]:
    """A new TensorBoard running the checkout ``root``: /hosts of every host (``clear``: with
    no summary kept)."""
    if clear:
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
    ap.add_argument("--old", help="another checkout to compare (its tb_iotrace, native modules built)")
    ap.add_argument("--hosts", type=int, default=512)
    ap.add_argument("--events", type=int, default=20_000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--sample", type=int, default=16, help="captures decoded as they land (the rest are copies)")
    ap.add_argument("--keep", help="build/keep the logdir here (reused when it exists)")
    args = ap.parse_args()
    old = Path(args.old).resolve() if args.old else None
    keep = Path(args.keep) if args.keep else None
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
    with (contextlib.nullcontext(keep) if keep is not None else work_dir("tbio-firstopen-", None, False)) as d:
        files = build(d, args.hosts, args.events)
        print(f"{args.hosts} hosts x (GPU capture + {args.events} I/O calls): "
              f"{sum(p.stat().st_size for p in files) / 2**20:.0f} MiB of captures")
        print(f"machine: {os.cpu_count()} CPUs, load average {loadavg()} (shared: other jobs inflate wall times)")
        print(f"command: python bench/first_open_hosts.py{' --old ' + args.old if args.old else ''} --hosts {args.hosts} "
              f"--events {args.events} --rounds {args.rounds} --sample {args.sample}  (checkout {REPO.name})")
        got: dict[str, list[float]] = {"old": [], "new": [], "landed": []}
        rows: dict[str, dict] = {}
        per_capture: list[float] = []
        for k in range(args.rounds):
            order = ([("old", old)] if old is not None else []) + [("new", REPO), ("landed", REPO)]
            if k % 2:
                order.reverse()
            for name, root in order:
                if name == "landed":
                    clear_summaries(d)
                    per_capture.append(land(files, args.sample))
                s, body = cold_hosts(d, root, clear=name != "landed")
                got[name].append(s)
                rows[name] = body
                print(f"  round {k + 1} {name}: {s:.2f} s  (load {loadavg()})", flush=True)
    strip = {n: [{k: v for k, v in r.items() if k != "host"} for r in b["hosts"]] for n, b in rows.items()}
    same = all(v == strip["new"] for v in strip.values()) and len(strip["new"]) == args.hosts
    med = {n: statistics.median(v) for n, v in got.items() if v}
    print(f"\nfirst All hosts of {args.hosts} hosts, median of {args.rounds} (load {loadavg()}):")
    if "old" in med:
        print(f"  old checkout, no summaries:           {med['old']:.2f} s")
    print(f"  no summaries (captures decoded now):  {med['new']:.2f} s")
    print(f"  written by tb_iotrace (summaries made as they landed): {med['landed']:.2f} s "
          f"(landed/none {med['landed'] / med['new']:.3f}); the writer's cost: "
          f"{1000 * statistics.median(per_capture):.0f} ms CPU per capture, in its background child")
    print(f"  same rows in every case: {same}   target < {TARGET_S:.0f} s: "
          f"none {'ok' if med['new'] < TARGET_S else 'MISSED'}, landed {'ok' if med['landed'] < TARGET_S else 'MISSED'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
