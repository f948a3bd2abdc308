"""DLIO's PyTorch npz workload: its own AU and samples/s plain and with the advised worker
count, in alternating turns, and tb_iotrace's verdict and advice on it (one traced run per
computation time). Needs a DLIO install (docs/diagnosis.md, "DLIO"); not run by the tests.

    python bench/dlio_advice.py --dlio-python /tmp/dlio-venv/bin/python --data /tmp/dlio-data \\
        --out /tmp/dlio-bench --turns 3 --computation-times 0 0.03 --workers 2 --compare 3

The data (unet3d-like npz, 64 files of 4 MiB) is made once with ``--generate``. The traced run is
DLIO under ``tb-iotrace run --profile-every``: DLIO imports TensorFlow even for its PyTorch loader,
and the windows go to the loop that runs (PyTorch's here).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

TBIO = str(Path(sys.executable).with_name("tb-iotrace"))


def dlio_args(a: argparse.Namespace, workers: int, ct: float, out: Path, generate: bool = False,
              epochs: int = 0, prefetch: int = 0) -> list[str]:
    return ["workload=unet3d_a100", f"++workload.dataset.num_files_train={a.files}",
            f"++workload.dataset.record_length={a.record_bytes}", "++workload.dataset.record_length_stdev=0",
            f"++workload.dataset.data_folder={a.data}", f"++workload.workflow.generate_data={generate}",
            f"++workload.workflow.train={not generate}", "++workload.workflow.checkpoint=False",
            "++workload.reader.batch_size=4", f"++workload.reader.read_threads={workers}",
            f"++workload.train.epochs={epochs or a.epochs}", f"++workload.train.computation_time={ct}",
            f"++workload.output.folder={out}", f"hydra.run.dir={out}/hydra"] + \
        ([f"++workload.reader.prefetch_size={prefetch}"] if prefetch else [])


def mpirun() -> list[str]:
    return ["nice", "-n", "10", "mpirun", "-np", "1", "--allow-run-as-root", "--bind-to", "none"]


def run_plain(a: argparse.Namespace, workers: int, ct: float, out: Path, prefetch: int = 0) -> dict[str, float]:
    shutil.rmtree(out, ignore_errors=True)
    cmd = mpirun() + [a.dlio_python, "-m", "dlio_benchmark.main"] + dlio_args(a, workers, ct, out, prefetch=prefetch)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600)
    m = json.loads((out / "summary.json").read_text())["metric"]
    return {"au": m["train_au_mean_percentage"], "sps": m["train_throughput_mean_samples_per_second"]}


def run_traced(a: argparse.Namespace, workers: int, ct: float, out: Path) -> tuple[dict[str, float], str]:
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    logdir = out / "logdir"
    cmd = ([TBIO, "run", "--logdir", str(logdir), "--profile-every", str(a.every), "--profile-for", str(a.window),
            "--"] + mpirun() + [a.dlio_python, "-m", "dlio_benchmark.main"]
           + dlio_args(a, workers, ct, out / "dlio", epochs=a.trace_epochs))
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600)
    m = json.loads((out / "dlio" / "summary.json").read_text())["metric"]
    rep = subprocess.run([TBIO, "report", str(logdir)],
                         capture_output=True, text=True, timeout=600).stdout
    lines = [ln for ln in rep.splitlines() if ln.startswith(("Verdict", "  advice", "  model", "  cause"))
             or "pytorch/" in ln]
    return {"au": m["train_au_mean_percentage"], "sps": m["train_throughput_mean_samples_per_second"]}, \
        "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dlio-python", default="/tmp/dlio-venv/bin/python")
    p.add_argument("--data", default="/tmp/dlio-data")
    p.add_argument("--out", default="/tmp/dlio-bench")
    p.add_argument("--files", type=int, default=64)
    p.add_argument("--record-bytes", type=int, default=4 << 20)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--trace-epochs", type=int, default=8, help="epochs of the traced run (windows need steps)")
    p.add_argument("--turns", type=int, default=3)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--compare", type=int, default=0, help="also run plain with this many workers")
    p.add_argument("--compare-prefetch", type=int, default=0,
                   help="also run plain with --workers and DLIO's reader.prefetch_size set to this")
    p.add_argument("--computation-times", type=float, nargs="+", default=[0.0, 0.03])
    p.add_argument("--every", type=float, default=1.0, help="profile window period (s)")
    p.add_argument("--window", type=float, default=0.9, help="profile window length (s)")
    p.add_argument("--generate", action="store_true")
    p.add_argument("--no-trace", action="store_true")
    a = p.parse_args()
    os.environ["DFTRACER_ENABLE"] = "0"
    out = Path(a.out)
    if a.generate:
        subprocess.run(mpirun() + [a.dlio_python, "-m", "dlio_benchmark.main"]
                       + dlio_args(a, a.workers, 0.0, out / "gen", generate=True), check=True, timeout=600)
        return 0
    print(f"load at start: {os.getloadavg()[0]:.1f} ({os.cpu_count()} cores)")
    for ct in a.computation_times:
        if not a.no_trace:
            r, verdict = run_traced(a, a.workers, ct, out / f"traced-{ct}")
            print(f"computation_time={ct}: traced, {a.workers} workers: AU {r['au']:.1f}%, {r['sps']:.1f} samples/s")
            print(verdict)
        counts = [(a.workers, 0)] + ([(a.compare, 0)] if a.compare else []) + \
            ([(a.workers, a.compare_prefetch)] if a.compare_prefetch else [])
        res: dict[tuple[int, int], list[dict[str, float]]] = {n: [] for n in counts}
        for t in range(a.turns):
            for n in (counts if t % 2 == 0 else counts[::-1]):
                res[n].append(run_plain(a, n[0], ct, out / f"plain-{ct}-{n[0]}-{n[1]}", prefetch=n[1]))
        for n in counts if a.turns else []:
            sps = [r["sps"] for r in res[n]]
            au = [r["au"] for r in res[n]]
            pf = f", prefetch_size={n[1]}" if n[1] else ""
            print(f"computation_time={ct}: plain, {n[0]} workers{pf}: samples/s {' '.join(f'{x:.1f}' for x in sps)} "
                  f"(mean {sum(sps) / len(sps):.1f}), AU % {' '.join(f'{x:.1f}' for x in au)}")
        print(f"load now: {os.getloadavg()[0]:.1f} at {time.strftime('%H:%M:%S')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
