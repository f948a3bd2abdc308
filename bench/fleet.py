"""Benchmark of the fleet dataset: ``fleet build`` and ``fleet query`` over many runs.

``--runs`` runs (1,000), one host each: a hard link (else a copy) of the real JAX capture
tests/data/jax_io.xplane.pb (43 KB: 5 files, 41 I/O calls, 4 steps) under its own run name
in one logdir. Each step is its own ``tb-iotrace`` process, as a user runs it:

- build: every run into a new dataset (``--jobs``, default the cores): seconds per run;
- build again with nothing changed (each source's stamp checked against the manifest);
- build after ``--add`` (10) new runs: what an incremental build costs;
- the dataset on disk: bytes in all, per host, and parts per table;
- queries with DuckDB (each process's start included): a count of files, bytes read per
  run over the files table, and ``fleet report`` (its three ready reports);
- ``--spark``: the same queries and report with Spark local (a JVM start in each).

The machine's load average is printed with the figures (wall times swing with it).

    python bench/fleet.py [--runs 1000] [--jobs N] [--add 10] [--spark] [--keep]
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
from _common import REPO, loadavg, work_dir  # noqa: E402

CAPTURE = REPO / "tests" / "data" / "jax_io.xplane.pb"
QUERIES = (
    ("count files", "SELECT COUNT(*) AS n FROM files"),
    ("bytes read per run", "SELECT run, SUM(POSIX_BYTES_READ) AS b FROM files GROUP BY run ORDER BY b DESC, run LIMIT 10"),
)


def tbio(*args: str) -> tuple[float, subprocess.CompletedProcess]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "tb_iotrace", *args], capture_output=True, text=True, env=env)
    dt = time.perf_counter() - t
    if r.returncode != 0:
        sys.exit(f"tb-iotrace {' '.join(args[:2])} failed ({r.returncode}): {r.stderr.strip()[-500:]}")
    return dt, r


def make_runs(logdir: Path, first: int, n: int) -> None:
    for i in range(first, first + n):
        d = logdir / "plugins" / "profile" / f"run{i:05d}"
        d.mkdir(parents=True)
        dst = d / f"host{i % 8}.xplane.pb"
        try:
            os.link(CAPTURE, dst)
        except OSError:
            dst.write_bytes(CAPTURE.read_bytes())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--add", type=int, default=10)
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--spark", action="store_true", help="also query with Spark local")
    ap.add_argument("--keep", action="store_true", help="keep the logdir and the dataset (path printed)")
    args = ap.parse_args()
    jobs = ["--jobs", str(args.jobs)] if args.jobs else []
    with work_dir("tbio-bench-fleet-", None, args.keep) as work:
        logdir, ds = work / "logdir", work / "ds"
        make_runs(logdir, 0, args.runs)
        print(f"{args.runs} runs of {CAPTURE.name} ({CAPTURE.stat().st_size:,} B), cores {os.cpu_count()}, "
              f"load {loadavg()}")
        dt, r = tbio("fleet", "build", str(logdir), "-o", str(ds), "--no-progress", *jobs)
        print(f"build:            {dt:7.1f} s  {1000 * dt / args.runs:6.1f} ms/run   ({r.stderr.strip().splitlines()[-1]})")
        dt, r = tbio("fleet", "build", str(logdir), "-o", str(ds), "--no-progress", *jobs)
        print(f"build, unchanged: {dt:7.1f} s  {1000 * dt / args.runs:6.1f} ms/run")
        make_runs(logdir, args.runs, args.add)
        dt, r = tbio("fleet", "build", str(logdir), "-o", str(ds), "--no-progress", *jobs)
        print(f"build, {args.add} new:     {dt:7.1f} s  ({r.stderr.strip().splitlines()[-1]})")
        hosts = args.runs + args.add
        parts = {t: sum(1 for _ in (ds / t).rglob("part-*.parquet")) for t in ("files", "hosts", "steps", "findings")
                 if (ds / t).exists()}
        total = sum(p.stat().st_size for p in ds.rglob("*") if p.is_file())
        print(f"dataset:          {total / 2**20:7.1f} MiB, {total / hosts / 1024:.1f} KiB per host "
              f"(capture {CAPTURE.stat().st_size / 1024:.1f} KiB); parts {parts}")
        for engine in ("duckdb", "spark") if args.spark else ("duckdb",):
            print(f"load {loadavg()}")
            for name, sql in QUERIES:
                dt, r = tbio("fleet", "query", str(ds), sql, "--engine", engine, "--json")
                print(f"query {engine:<6} {name:<20} {dt:6.1f} s  -> {json.dumps(json.loads(r.stdout)[:1])}")
            dt, r = tbio("fleet", "report", str(ds), "--engine", engine, "--json")
            got = json.loads(r.stdout)
            print(f"report {engine:<6} (3 reports)        {dt:6.1f} s  -> rows {[len(v) for v in got.values()]}")
        print(f"load {loadavg()}")


if __name__ == "__main__":
    main()
