"""The PyTorch diagnosis jobs' loops with no profiler and no tb_iotrace in the code: what
``tb-iotrace run --profile-every`` and ``tb-iotrace attach`` diagnose with no code change.

    torch_zero_touch.py WORK MODE SECONDS [FILES]

MODE ``decode``: as ``torch_decode_bound.py`` (one persistent fork worker, 96 files of 32 KiB,
batch 4, a 2 ms step), epochs until SECONDS have passed (0: until WORK/stop exists); 20 ms of
CPU work per sample rather than 8: the step here, not marked by the job, holds its model's ops
as the profiler records them, and on a loaded machine (a stress run: load 6 on 2 cores) that
took a fifth of a 32 ms batch and the wait fell under half the step; 80 ms keeps the margin.
MODE ``read``: as ``torch_read_bound.py`` (two fork workers, each reading its own named pipe fed
64 KiB by a writer that is not traced, batch 2, a 1 ms step), for SECONDS; the writers sleep 40 ms
a chunk rather than 15 (the step here, not marked by the job, also holds its model's ops as the
profiler records them: a longer wait keeps the margin on a loaded machine).
MODE ``files``: two fork workers (new ones each epoch) reading 256 files of 64 KiB whole, a fixed
amount of CPU work per sample (the same result however fast the machine), batch 8, a 5 ms step;
a small model; SECONDS epochs (rounded, at least 1; 0: epochs until WORK/stop exists); FILES
(default 256) sets an epoch's length.

Prints ``steps N checksum C`` at the end (C: the model's weights summed). In ``files`` mode the
run is a fixed number of epochs (SECONDS rounded, at least 1) of fixed data from a fixed seed, so C
is the same for every run; the other modes run for SECONDS. Writes WORK/result.json: the main pid,
the steps, the files read, the checksum.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import torch
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

from torch_files import Files

READ_DELAY_S = 0.04
CHUNK = 64 << 10
# the pipes' writer (torch_read_bound.py's): a chunk every DELAY seconds, not traced
WRITER = """
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY)
chunk = b"p" * int(sys.argv[2])
for _ in range(int(sys.argv[3])):
    time.sleep(float(sys.argv[4]))
    os.write(fd, chunk)
os.close(fd)
"""


def make_files(work: str, n: int, size: int = 32 << 10) -> list[str]:
    """diag_torch.make_files (this job imports nothing of tb_iotrace)."""
    data = os.path.join(work, "data")
    os.makedirs(data, exist_ok=True)
    paths = []
    for i in range(n):
        p = os.path.join(data, f"img{i:04d}.bin")
        with open(p, "wb") as fh:
            fh.write(bytes([i % 251]) * (size + i))
        paths.append(p)
    return paths


class Decoded(Files):
    """diag_torch.Decoded: file i read whole, then ``decode_s`` of busy CPU work."""

    def __init__(self, paths: list[str], decode_s: float) -> None:
        super().__init__(paths)
        self.decode_s = decode_s

    def __getitem__(self, i: int) -> torch.Tensor:
        x = super().__getitem__(i)
        end = time.perf_counter() + self.decode_s
        while time.perf_counter() < end:
            x = torch.tanh(x * 1.0001)
        return x


class Pipes(IterableDataset):
    """torch_read_bound.Pipes: worker k reads WORK/pipe<k>, a sample per read."""

    def __init__(self, work: str) -> None:
        self.work = work

    def __iter__(self):
        info = get_worker_info()
        fd = os.open(os.path.join(self.work, f"pipe{info.id if info else 0}"), os.O_RDONLY)
        try:
            while True:
                b = os.read(fd, CHUNK)
                if not b:
                    return
                yield torch.frombuffer(bytearray(b[:64].ljust(64, b"\0")), dtype=torch.uint8).float()
        finally:
            os.close(fd)


class FixedWork(Files):
    """Sample i: file i read whole, then 100 rounds of CPU work (a fixed count: deterministic)."""

    def __getitem__(self, i: int) -> torch.Tensor:
        x = super().__getitem__(i)
        for _ in range(100):
            x = torch.tanh(x * 1.0001)
        return x


def loop(loader: DataLoader, seconds: float, compute_s: float, epochs: int | None = None,
         stop_file: str = "") -> tuple[int, float]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    steps, end, epoch = 0, time.monotonic() + seconds, 0
    while (epochs is None and time.monotonic() < end) or (epochs is not None and epoch < epochs) or (
            stop_file and not (epoch and os.path.exists(stop_file))):
        for batch in loader:
            loss = model(batch[:, :64]).square().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            time.sleep(compute_s)
            steps += 1
            if epochs is None and time.monotonic() >= end:
                break
        epoch += 1
    return steps, float(sum(p.detach().double().sum() for p in model.parameters()))


def leftovers() -> dict:
    """What an attach could have left in this process: threads, wrapped torch functions, hooks,
    an enabled shim (for the tests; the job's output stays the same)."""
    import threading

    from torch.profiler.profiler import _KinetoProfile
    from torch.optim import optimizer
    from torch.utils.data.dataloader import _BaseDataLoaderIter

    out = {"threads": [t.name for t in threading.enumerate() if "tb_iotrace" in t.name],
           "wrapped": [n for n, f in (("__next__", _BaseDataLoaderIter.__next__),
                                      ("prepare_trace", _KinetoProfile.prepare_trace)) if hasattr(f, "__wrapped__")],
           "optimizer_hooks": len(optimizer._global_optimizer_post_hooks)}
    api = sys.modules.get("tb_iotrace.recording.api")
    out["shim_enabled"] = bool(api is not None and api.is_enabled())
    return out


def main() -> None:
    work, mode, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
    files: list[str] = []
    writers = []
    if mode == "decode":
        files = make_files(work, 96)
        loader = DataLoader(Decoded(files, 0.02), batch_size=4, num_workers=1, persistent_workers=True,
                            multiprocessing_context="fork")
        if seconds:
            steps, checksum = loop(loader, seconds, 0.002)
        else:
            steps, checksum = loop(loader, 0.0, 0.002, epochs=0, stop_file=os.path.join(work, "stop"))
    elif mode == "read":
        files = [os.path.join(work, f"pipe{k}") for k in range(2)]
        chunks = int(seconds / READ_DELAY_S) + 8
        for p in files:
            os.mkfifo(p)
            writers.append(subprocess.Popen([sys.executable, "-c", WRITER, p, str(CHUNK), str(chunks),
                                             str(READ_DELAY_S)]))
        loader = DataLoader(Pipes(work), batch_size=2, num_workers=2, multiprocessing_context="fork")
        steps, checksum = loop(loader, 1e9, 0.001, epochs=1)
    else:
        files = make_files(work, int(sys.argv[4]) if len(sys.argv) > 4 else 256, 64 << 10)
        loader = DataLoader(FixedWork(files), batch_size=8, num_workers=2, multiprocessing_context="fork")
        epochs = max(1, round(seconds / 1.0)) if seconds else 0
        steps, checksum = loop(loader, 0.0, 0.005, epochs=epochs,
                               stop_file="" if seconds else os.path.join(work, "stop"))
    for w in writers:
        w.wait()
    print(f"steps {steps} checksum {checksum:.6f}", flush=True)
    with open(os.path.join(work, "result.json"), "w") as fh:
        json.dump({"main_pid": os.getpid(), "steps": steps, "files": files, "checksum": checksum,
                   "leftovers": leftovers()}, fh)


if __name__ == "__main__":
    main()
