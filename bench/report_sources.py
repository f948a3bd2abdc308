"""``tb-iotrace report --json`` (``--text``: the text) on the sources held in tests/data (and any PATH given), this tree
and ``--against REV`` side by side: each round runs every tree once per source, alternating which
goes first, each in a fresh child (``--jobs 1``: one process, so its CPU time is all of the work);
the median wall and CPU time (user + system) of its first report per source and tree, the median
CPU of the reports it makes again in the same process ("again": imports and a PyTorch trace's
conversion paid, a capture read again), and whether the two trees' documents are the same bytes.

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
import contextlib, hashlib, io, json, os, statistics, sys, time
import numpy, google.protobuf                      # the imports every path pays, before the clock
from tb_iotrace.cli import main
got = []
for _ in range(int(sys.argv[2])):
    out = io.StringIO()
    t, c = time.perf_counter(), time.process_time()     # user + system, ns resolution
    with contextlib.redirect_stdout(out):
        rc = main(["report", *(["--json"] if sys.argv[3] == "json" else []), "--jobs", "1", "--no-progress", sys.argv[1]])
    assert rc == 0, rc
    got.append((time.perf_counter() - t, time.process_time() - c))
print(json.dumps({"s": got[0][0], "cpu": got[0][1],
                  "again": statistics.median(g[1] for g in got[1:]) if len(got) > 1 else None,
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


def measure(root: Path, name: str, cwd: Path, repeat: int, form: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(root), PYTHONHASHSEED="0", TBIO_SUMMARIES="0")   # nothing kept
    out = subprocess.run([sys.executable, "-c", CHILD, name, str(repeat), form], env=env, cwd=cwd, check=True, capture_output=True,
                         text=True, timeout=1800)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*", metavar="PATH", help="more sources (default: the held ones only)")
    ap.add_argument("--against", metavar="REV", required=True, help="the commit to compare with")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=4, help="reports per child: the 2nd on are 'again'")
    ap.add_argument("--text", action="store_true", help="the text report instead of --json")
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
        print(f"{args.rounds} rounds of the {'text' if args.text else 'JSON'} report; {os.cpu_count()} CPUs, "
              f"load {os.getloadavg()[0]:.1f}")
        for r in range(args.rounds):
            for n in names:
                for t, root in (trees if r % 2 == 0 else trees[::-1]):
                    got[(n, t)].append(measure(root, n, work, args.repeat, "text" if args.text else "json"))
        print(f"  {'source':38} {'tree':>10} {'wall':>7} {'CPU':>7} {'ratio':>6} {'again':>7} {'ratio':>6}  same output")
        total = {t: [0.0, 0.0] for t, _ in trees}
        base = trees[1][0]
        for n in names:
            shas = {t: {x["sha"] for x in got[(n, t)]} for t, _ in trees}
            cpu = {t: statistics.median(x["cpu"] for x in got[(n, t)]) for t, _ in trees}
            again = {t: statistics.median(x["again"] or 0.0 for x in got[(n, t)]) for t, _ in trees}
            for t, _ in trees:
                wall = statistics.median(x["s"] for x in got[(n, t)])
                total[t][0] += cpu[t]
                total[t][1] += again[t]
                mine = t == trees[0][0]
                r1 = f"{cpu[t] / cpu[base]:6.2f}" if mine and cpu[base] else ""
                r2 = f"{again[t] / again[base]:6.2f}" if mine and again[base] else ""
                print(f"  {n[:38]:38} {t[:10]:>10} {wall:6.2f}s {cpu[t]:6.2f}s {r1:>6} {again[t]:6.3f}s {r2:>6}"
                      + (f"  {'yes' if shas[t] == shas[base] and len(shas[t]) == 1 else 'NO'}" if mine else ""))
        (a, a2), (b, b2) = (total[t] for t, _ in trees)
        print(f"  all sources: CPU {a:.2f}s against {b:.2f}s ({a / b:.2f}x), again {a2:.2f}s against {b2:.2f}s "
              f"({a2 / max(b2, 1e-9):.2f}x); load after {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
