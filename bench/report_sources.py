"""``tb-iotrace report --json`` on the sources held in tests/data (and any PATH given), this tree
and ``--against REV`` side by side: each round runs every tree once per source, alternating which
goes first, each in a fresh child (``--jobs 1``: one process, so its CPU time is all of the work);
the median wall and CPU time (user + system) per source and tree, and whether the two trees'
documents are the same bytes.

    python bench/report_sources.py --against 4e7bf76            # 5 rounds
    python bench/report_sources.py --against HEAD~3 --rounds 9 big.pt.trace.json.gz

On a loaded machine read the CPU column: the wall time follows the load.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"
HELD = ["gpu_multi_worker.xplane.pb", "jax_io.xplane.pb", "jax_gpu_h200_noio.xplane.pb", "torch_loader.pt.trace.json.gz",
        "h200_tuned.pt.trace.json.gz", "kineto_gpu_synthetic.pt.trace.json", "run_v1", "ddp_rank0.pt.trace.json.gz",
        "dlio_one_step_window.pt.trace.json.gz"]

CHILD = r"""
import contextlib, hashlib, io, json, os, sys, time
import numpy, google.protobuf                      # the imports every path pays, before the clock
from tb_iotrace.cli import main
out = io.StringIO()
t, c = time.perf_counter(), os.times()
with contextlib.redirect_stdout(out):
    rc = main(["report", "--json", "--jobs", "1", "--no-progress", sys.argv[1]])
e = os.times()
assert rc == 0, rc
print(json.dumps({"s": time.perf_counter() - t, "cpu": (e.user - c.user) + (e.system - c.system),
                  "sha": hashlib.sha256(out.getvalue().encode()).hexdigest()}))
"""


def export_tree(rev: str, into: Path) -> Path:
    """``rev``'s tb_iotrace (git archive) with this tree's built C modules: a PYTHONPATH root."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev, "tb_iotrace"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    for so in (REPO / "tb_iotrace").glob("_*.so"):
        shutil.copy2(so, into / "tb_iotrace" / so.name)
    return into


def measure(root: Path, name: str, cwd: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(root), PYTHONHASHSEED="0", TBIO_SUMMARIES="0")   # nothing kept
    out = subprocess.run([sys.executable, "-c", CHILD, name], env=env, cwd=cwd, check=True, capture_output=True,
                         text=True, timeout=1800)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*", metavar="PATH", help="more sources (default: the held ones only)")
    ap.add_argument("--against", metavar="REV", required=True, help="the commit to compare with")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="tbio-report-bench-") as tmp:
        work = Path(tmp) / "sources"
        work.mkdir()
        names = []
        for p in [DATA / n for n in HELD] + [Path(p).resolve() for p in args.paths]:
            (shutil.copytree if p.is_dir() else shutil.copy)(p, work / p.name)
            names.append(p.name)
        trees = [("this tree", REPO), (args.against, export_tree(args.against, Path(tmp) / "against"))]
        got: dict[tuple[str, str], list[dict]] = {(n, t): [] for n in names for t, _ in trees}
        print(f"{args.rounds} rounds; {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
        for r in range(args.rounds):
            for n in names:
                for t, root in (trees if r % 2 == 0 else trees[::-1]):
                    got[(n, t)].append(measure(root, n, work))
        print(f"  {'source':38} {'tree':>10} {'wall':>7} {'CPU':>7} {'CPU ratio':>9}  same output")
        total = {t: 0.0 for t, _ in trees}
        for n in names:
            shas = {t: {x["sha"] for x in got[(n, t)]} for t, _ in trees}
            cpu = {t: statistics.median(x["cpu"] for x in got[(n, t)]) for t, _ in trees}
            for t, _ in trees:
                wall = statistics.median(x["s"] for x in got[(n, t)])
                total[t] += cpu[t]
                ratio = f"{cpu[t] / cpu[trees[1][0]]:9.2f}" if t == trees[0][0] and cpu[trees[1][0]] else ""
                print(f"  {n[:38]:38} {t[:10]:>10} {wall:6.2f}s {cpu[t]:6.2f}s {ratio:>9}"
                      + (f"  {'yes' if shas[t] == shas[trees[1][0]] and len(shas[t]) == 1 else 'NO'}"
                         if t == trees[0][0] else ""))
        a, b = (total[t] for t, _ in trees)
        print(f"  all sources: CPU {a:.2f}s against {b:.2f}s ({a / b:.2f}x); load after {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
