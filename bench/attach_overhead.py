"""What ``tb-iotrace attach`` costs a running PyTorch job: steps per second before, while and
after it is attached, side by side with the same job that nobody attaches to.

Two identical jobs run at once (a small model, a DataLoader with 2 fork workers reading 256
files of 64 KiB, a fixed CPU cost per sample, a 5 ms step); each appends the time of every step
to a file. After WARM seconds, job A is attached for FOR seconds; B never is. Each phase's rate
is counted over the same wall-clock interval in both jobs, so the machine's load (shared with
everything else) falls on both alike: the figure is A's rate over B's.

    python bench/attach_overhead.py [--for 6] [--warm 10] [--after 10] [--rounds 4]

Rounds attach to A and B in turn (each is the other's control), and the medians of the ratios
over the rounds are printed last (a loaded machine moves one round's ratio by 20%).

Prints one line per phase: ``before``, ``inject`` (the attach's start: gdb stops each process
for about a second while it calls in), ``attached`` (the window: its first step to the deadline)
and ``after`` (from 1 s after the detach).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

JOB = r"""
import os, sys, time, torch
from torch.utils.data import DataLoader, Dataset
work, stamps, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
paths = []
os.makedirs(os.path.join(work, "data"), exist_ok=True)
for i in range(256):
    p = os.path.join(work, "data", f"f{i:04d}")
    with open(p, "wb") as fh:
        fh.write(bytes([i % 251]) * (64 << 10))
    paths.append(p)
class Files(Dataset):
    def __len__(self): return len(paths)
    def __getitem__(self, i):
        with open(paths[i], "rb") as fh:
            x = torch.frombuffer(bytearray(fh.read()[:64]), dtype=torch.uint8).float()
        for _ in range(100):
            x = torch.tanh(x * 1.0001)
        return x
loader = DataLoader(Files(), batch_size=8, num_workers=2, multiprocessing_context="fork")
model = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
out = open(stamps, "w", buffering=1)
end = time.time() + seconds
while time.time() < end:
    for batch in loader:
        loss = model(batch).square().mean()
        opt.zero_grad(); loss.backward(); opt.step()
        time.sleep(0.005)
        out.write(f"{time.time_ns()}\n")
        if time.time() >= end:
            break
"""


def steps_in(path: Path, a_ns: int, b_ns: int) -> int:
    return sum(1 for line in path.read_text().split() if a_ns <= int(line) < b_ns)


def window_of(log: Path) -> tuple[int, int]:
    """The attached window: its first step after the go to the deadline, as the trace says."""
    sys.path.insert(0, str(REPO))
    from tb_iotrace.store.kineto import io_record, read_trace

    (trace,) = log.glob("pytorch/attach_*/*.pt.trace.json")
    rec = io_record(read_trace(str(trace)))
    main = next(p for p in rec["processes"] if p["role"] == "main")
    return int(rec["window_start_ns"]), int(main["end_ns"])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--for", dest="seconds", type=float, default=6.0)
    ap.add_argument("--warm", type=float, default=10.0)
    ap.add_argument("--after", type=float, default=10.0)
    ap.add_argument("--rounds", type=int, default=4, help="attaches, to A and B in turn (default 4)")
    args = ap.parse_args()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    with tempfile.TemporaryDirectory(prefix="tb_iotrace-bench-attach-") as tmp:
        work = Path(tmp)
        total = args.rounds * (args.warm + args.seconds + args.after + 30) + 60
        jobs = {}
        for name in ("A", "B"):
            (work / name).mkdir()
            jobs[name] = subprocess.Popen([sys.executable, "-c", JOB, str(work / name), str(work / f"{name}.txt"),
                                           str(total)], env=env, stderr=subprocess.DEVNULL)
        while not all((work / f"{n}.txt").exists() and (work / f"{n}.txt").stat().st_size for n in jobs):
            time.sleep(0.2)
        ratios: dict[str, list[float]] = {}
        print(f"tb-iotrace attach overhead ({os.cpu_count()} CPUs): steps/s of the attached job over the "
              "untouched one's, over the same intervals")
        for k in range(args.rounds):
            hit, other = ("A", "B") if k % 2 == 0 else ("B", "A")
            time.sleep(args.warm)
            t_attach = time.time_ns()
            log = work / f"log{k}"
            r = subprocess.run([sys.executable, "-m", "tb_iotrace", "attach", str(jobs[hit].pid), "--for",
                                str(args.seconds), "--logdir", str(log), "--quiet"],
                               capture_output=True, text=True, env=env)
            t_detach = time.time_ns()
            if r.returncode != 0:
                sys.exit(f"attach failed: {r.stderr.strip()}")
            time.sleep(args.after + 1)
            win_a, win_b = window_of(log)
            phases = {"before": (t_attach - int(args.warm * 0.8e9), t_attach),
                      "inject": (t_attach, win_a),
                      "attached": (win_a, win_b),
                      "after": (t_detach + int(1e9), t_detach + int(args.after * 1e9))}
            cells = []
            for name, (a, b) in phases.items():
                sa = steps_in(work / f"{hit}.txt", a, b) / ((b - a) / 1e9)
                sb = steps_in(work / f"{other}.txt", a, b) / ((b - a) / 1e9)
                if sb:
                    ratios.setdefault(name, []).append(sa / sb)
                cells.append(f"{name} {sa:5.1f}/{sb:5.1f} = {sa / sb if sb else float('nan'):.2f}")
            print(f"  round {k + 1} (attached to {hit}, load {os.getloadavg()[0]:.1f}): " + "; ".join(cells))
        for p in jobs.values():
            p.terminate()
            p.wait()
        import statistics

        print("  median over the rounds: " + "; ".join(f"{n} {statistics.median(v):.2f}" for n, v in ratios.items()))


if __name__ == "__main__":
    main()
