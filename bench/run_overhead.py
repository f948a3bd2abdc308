"""What ``tb-iotrace run`` costs a training job: the job's own training-loop time, its start-up
and its exit, plain and under ``run``, in alternating turns (the machine's load drifts: turns
side by side cancel it).

    python bench/run_overhead.py [--turns 5] [--epochs 3] [--files 512] [--keras]

Jobs (each a fresh process; the job times itself):

- ``persistent``: a DataLoader, 2 workers (fork), ``persistent_workers=True``, EPOCHS epochs over
  FILES ``.npy`` files (64 KiB each), a small matmul per batch;
- ``restarted``: the same with workers started again each epoch (``persistent_workers=False``);
- ``keras`` (``--keras``): a Keras ``fit`` on a ``tf.data`` pipeline reading the same files.

Per job and mode it prints the median over turns of: ``loop`` (the training loop, first batch
to last, timed by the job), ``startup`` (launch to the job's first line: interpreter, imports,
the capture's start), ``exit`` (the loop's end to the process's end, as the runner or shell sees
it: the workers' shut-down, the records written), ``wall`` and ``cpu`` (user + system time of
every process of the job, the runner included) and the loop's ratio run/plain: of the
medians, per turn, and of the fastest turn of each (what a loaded machine disturbs least).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

JOB = r'''
import json, os, sys, time
t_start = time.time()
import numpy as np
kind, data, epochs, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
paths = sorted(os.path.join(data, n) for n in os.listdir(data))
t_imports = None
if kind == "keras":
    import tensorflow as tf
    import keras
    def load(p):
        return np.load(p.decode() if isinstance(p, bytes) else p).reshape(-1)[:256]
    ds = (tf.data.Dataset.from_tensor_slices(paths)
          .map(lambda p: tf.numpy_function(load, [p], tf.float32), num_parallel_calls=2)
          .map(lambda x: (tf.reshape(x, [256]), tf.reduce_sum(x))).batch(16).prefetch(2))
    model = keras.Sequential([keras.Input((256,)), keras.layers.Dense(64, activation="relu"), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    t_imports = time.time()
    model.fit(ds, epochs=epochs, verbose=0)
    t_loop0 = t_imports
else:
    import torch
    from torch.utils.data import DataLoader, Dataset
    class Files(Dataset):
        def __len__(self): return len(paths)
        def __getitem__(self, i): return torch.from_numpy(np.load(paths[i]))
    loader = DataLoader(Files(), batch_size=16, num_workers=2, persistent_workers=kind == "persistent",
                        multiprocessing_context="fork", shuffle=True)
    w = torch.randn(128, 128)
    t_imports = time.time()
    t_loop0 = t_imports
    for _ in range(epochs):
        for batch in loader:
            x = batch.reshape(-1, 128)
            for _ in range(4):
                x = torch.tanh(x @ w)
    keep = loader   # alive until exit, as a trainer's would be
t_loop1 = time.time()
with open(out, "w") as fh:
    json.dump({"start": t_start, "imports": t_imports, "loop0": t_loop0, "loop1": t_loop1}, fh)
'''


def make_files(d: Path, n: int) -> None:
    import numpy as np

    rng = np.random.default_rng(0)
    for i in range(n):
        np.save(d / f"s{i:05d}.npy", rng.random(16384, dtype=np.float32))   # 64 KiB + header


def one(kind: str, traced: bool, data: Path, epochs: int, work: Path, run_args: tuple[str, ...] = ()) -> dict[str, float]:
    out = work / "t.json"
    if out.exists():
        out.unlink()
    job = work / "job.py"
    py = sys.executable
    cmd = [py, str(job), kind, str(data), str(epochs), str(out)]
    logdir = work / "logs"
    if traced:
        cmd = [py, "-m", "tb_iotrace", "run", "--quiet", "--logdir", str(logdir), *run_args, "--"] + cmd
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]),
               TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.time()
    r = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit {r.returncode}\n{r.stderr[-3000:]}")
    t1 = time.time()
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    t = json.loads(out.read_text())
    if traced:
        import shutil

        shutil.rmtree(logdir, ignore_errors=True)
    return {"loop": t["loop1"] - t["loop0"], "startup": t["start"] - t0, "imports": t["imports"] - t["start"],
            "exit": t1 - t["loop1"], "wall": t1 - t0, "cpu": cpu}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--turns", type=int, default=5)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--files", type=int, default=512)
    ap.add_argument("--keras", action="store_true", help="also a Keras fit (TensorFlow)")
    ap.add_argument("--flush", default=None, help="tb-iotrace run --flush SECONDS (default: run's own)")
    ap.add_argument("--jobs", default=None, help="comma-separated subset of persistent,restarted,keras")
    args = ap.parse_args()
    kinds = args.jobs.split(",") if args.jobs else ["persistent", "restarted"] + (["keras"] if args.keras else [])
    run_args = ("--flush", args.flush) if args.flush is not None else ()
    with tempfile.TemporaryDirectory(prefix="tbio-run-overhead-") as tmp:
        work = Path(tmp)
        data = work / "data"
        data.mkdir()
        make_files(data, args.files)
        (work / "job.py").write_text(JOB)
        print(f"load average at start: {os.getloadavg()[0]:.2f} ({os.cpu_count()} CPUs); "
              f"{args.turns} turns, {args.epochs} epochs, {args.files} files")
        for kind in kinds:
            one(kind, False, data, 1, work)     # warm the page cache and the imports
            res: dict[bool, list[dict[str, float]]] = {False: [], True: []}
            for turn in range(args.turns):
                for traced in ((False, True) if turn % 2 == 0 else (True, False)):
                    res[traced].append(one(kind, traced, data, args.epochs, work, run_args))
            med = {tr: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for tr, rs in res.items()}
            ratios = [t["loop"] / p["loop"] for p, t in zip(res[False], res[True])]
            print(f"{kind:<10} loop  plain {med[False]['loop']:7.3f} s  run {med[True]['loop']:7.3f} s  "
                  f"ratio {med[True]['loop'] / med[False]['loop']:.3f} (per turn: "
                  f"{', '.join(f'{r:.3f}' for r in ratios)}); fastest of each "
                  f"{min(r['loop'] for r in res[True]) / min(r['loop'] for r in res[False]):.3f}")
            for k in ("startup", "imports", "exit", "wall", "cpu"):
                print(f"{'':<10} {k:<8} plain {med[False][k]:7.3f} s  run {med[True][k]:7.3f} s  "
                      f"(+{med[True][k] - med[False][k]:.3f} s)")
        print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
