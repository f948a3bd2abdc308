"""Shared helpers of bench/tf_overhead.py and bench/stop_latency.py.

Both benchmarks run every measurement in a fresh interpreter (``tb_iotrace.enable()``
patches a whole process, and TensorFlow keeps process-wide state), so the parent
process only builds inputs, starts children one after the other, collects the JSON
each child writes, and prints figures.  A child is this same script started with
``--child``; it writes one JSON object to the path given by ``--result``.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator, Sequence

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def repo_on_path() -> None:
    """Run from a checkout without installing: the repository root first on sys.path."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))


def child_env(cpus: Sequence[int] | None = None, nice: int = 0) -> dict[str, str]:
    """The environment of every child: CPU-only TensorFlow, quiet logs, the checkout importable,
    and the CPUs / nice value every child applies to itself (see apply_affinity)."""
    env = dict(os.environ)
    if nice:
        env["TBIO_BENCH_NICE"] = str(nice)
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    env["CUDA_VISIBLE_DEVICES"] = ""
    env.setdefault("PYTHONHASHSEED", "0")
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    if cpus is not None:
        env["TBIO_BENCH_CPUS"] = ",".join(map(str, cpus))
    return env


def apply_affinity() -> list[int] | None:
    """In a child, before any thread starts: pin to the CPUs the parent chose (TBIO_BENCH_CPUS)
    and apply its nice increment (TBIO_BENCH_NICE; negative needs root), same for every side.
    Threads started later inherit both."""
    nice = int(os.environ.get("TBIO_BENCH_NICE", "0") or 0)
    if nice:
        os.nice(nice)
    want = os.environ.get("TBIO_BENCH_CPUS")
    if not want or not hasattr(os, "sched_setaffinity"):
        return sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    cpus = {int(c) for c in want.split(",") if c}
    os.sched_setaffinity(0, cpus)
    return sorted(cpus)


def parse_cpus(spec: str | None) -> list[int] | None:
    """"all" / None -> every allowed CPU; "1" or "0,1" -> those."""
    if spec is None or spec == "all":
        return sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return sorted({int(c) for c in spec.split(",") if c != ""})


@contextlib.contextmanager
def work_dir(prefix: str, parent: str | None, keep: bool) -> Iterator[Path]:
    """A scratch directory for a benchmark's files: removed at the end, or kept (and its
    path printed) with ``keep``."""
    work = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    try:
        yield work
    finally:
        if keep:
            print(f"work directory kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


class ChildFailed(RuntimeError):
    pass


def run_child(script: Path, args: Sequence[str], result: Path, *, env: dict[str, str],
              timeout: float) -> dict[str, Any]:
    """Run ``python script --child ... --result result`` and return the JSON it wrote."""
    if result.exists():
        result.unlink()
    cmd = [sys.executable, str(script), "--child", *args, "--result", str(result)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    wall = time.perf_counter() - t0
    if proc.returncode != 0 or not result.exists():
        raise ChildFailed(f"child failed (rc={proc.returncode}): {' '.join(cmd)}\n"
                          f"--- stdout ---\n{proc.stdout[-3000:]}\n--- stderr ---\n{proc.stderr[-6000:]}")
    out = json.loads(result.read_text())
    out["child_wall_s"] = wall
    if proc.stdout.strip():
        out["child_stdout"] = proc.stdout
    return out


def write_result(path: str | os.PathLike[str], data: dict[str, Any]) -> None:
    tmp = Path(str(path) + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, default=str))
    os.replace(tmp, path)


def med(xs: Sequence[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def spread(xs: Sequence[float]) -> float:
    """(max - min) / median: how much the trials of one side disagree."""
    if len(xs) < 2:
        return 0.0
    m = statistics.median(xs)
    return (max(xs) - min(xs)) / m if m else float("nan")


def fmt_list(xs: Sequence[float], fmt: str = "{:.2f}") -> str:
    return "[" + ", ".join(fmt.format(x) for x in xs) + "]"


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"
