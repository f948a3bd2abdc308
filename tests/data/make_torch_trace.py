"""Regenerates the small PyTorch trace in this folder (CPU torch 2.13.0, tb_iotrace.torch):

    python tests/data/make_torch_trace.py OUTDIR

writes OUTDIR/worker0.<ns>.pt.trace.json.gz (tb_iotrace.torch.trace_handler, worker name
``worker0``, gzip) and OUTDIR/torch_loader.json (the files read, their sizes, the pids).

The job: a DataLoader(num_workers=2, fork, persistent workers, batch_size=2) over 8 files
/tmp/tbio_torch_data/sample<i>.bin of 1000 + 37*i bytes (each read whole, once, by a worker,
with ``open`` + ``read``); the workers start in an unprofiled first epoch, the second epoch is
profiled: ProfilerStep#0..#4 (four batches and the step that ends the window), a tiny Linear
model's forward, backward and SGD step per batch. CPU activity only (no GPU here).
"""
from __future__ import annotations

import json
import os
import shutil
import sys

import torch
from torch.utils.data import DataLoader, Dataset

import tb_iotrace.torch as tbt

DATA = "/tmp/tbio_torch_data"
NFILES = 8


class Files(Dataset):
    def __init__(self, paths: list[str]) -> None:
        self.paths = paths

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, i: int) -> torch.Tensor:
        with open(self.paths[i], "rb") as fh:
            data = fh.read()
        return torch.frombuffer(bytearray(data[:16]), dtype=torch.uint8).float()


def main() -> None:
    out = sys.argv[1]
    shutil.rmtree(DATA, ignore_errors=True)
    os.makedirs(DATA)
    paths = []
    for i in range(NFILES):
        p = os.path.join(DATA, f"sample{i}.bin")
        with open(p, "wb") as fh:
            fh.write(bytes([i]) * (1000 + 37 * i))
        paths.append(p)
    handler = tbt.trace_handler(out, worker_name="worker0", use_gzip=True)
    loader = DataLoader(Files(paths), batch_size=2, num_workers=2, persistent_workers=True)
    model = torch.nn.Linear(16, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in loader:          # the persistent workers start here, outside the window
        pass
    workers = sorted(w.pid for w in loader._iterator._workers)  # type: ignore[union-attr]
    sched = torch.profiler.schedule(wait=0, warmup=0, active=len(loader) + 1, repeat=1)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], schedule=sched,
                                on_trace_ready=handler) as prof:
        for batch in loader:
            loss = model(batch).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
            prof.step()
    assert len(handler.written) == 1, handler.written
    with open(os.path.join(out, "torch_loader.json"), "w") as fh:
        json.dump({"trace": os.path.basename(handler.written[0]), "main_pid": os.getpid(),
                   "worker_pids": workers, "files": {p: os.path.getsize(p) for p in paths},
                   "torch": torch.__version__}, fh, indent=1)


if __name__ == "__main__":
    main()
