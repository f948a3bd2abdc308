"""Training loops whose DataLoader settings the findings should name, profiled with
tb_iotrace.torch.trace_handler (tests/integration/test_torch_findings.py).

    torch_findings.py MODE WORK

MODE ``main``: ``num_workers=0``: the main process reads a 2 MiB file per sample, from a cold
page cache, inside the DataLoader's ``__next__`` while the step waits (input-bound). MODE ``workers``: two persistent
workers read small files and the step takes 100 ms (it stands for the GPU's compute), so the
workers keep ahead (not input-bound). MODE ``starved``: two persistent workers read 2 MiB files
from a cold page cache for a step that takes no time: the workers do not keep up. MODE ``restarts``: two workers without
``persistent_workers``, three short epochs inside one window: each epoch starts its workers
anew. Writes WORK/result.json: the files and their sizes, the pids, the trace written."""
from __future__ import annotations

import json
import os
import sys
import time

import torch
from torch.utils.data import DataLoader

import tb_iotrace.torch as tbt
from torch_files import Files


def drop_cache(paths: list[str]) -> None:
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def make_files(work: str, n: int, size: int, cold: bool = False) -> list[str]:
    data = os.path.join(work, "data")
    os.makedirs(data, exist_ok=True)
    paths = []
    for i in range(n):
        p = os.path.join(data, f"sample{i:03d}.bin")
        with open(p, "wb") as fh:
            fh.write(bytes([i % 251]) * (size + i))
            if cold:
                fh.flush()
                os.fsync(fh.fileno())     # clean pages: fadvise(DONTNEED) cannot drop dirty ones
        paths.append(p)
    if cold:
        drop_cache(paths)
    return paths


def main() -> None:
    mode, work = sys.argv[1], sys.argv[2]
    handler = tbt.trace_handler(os.path.join(work, "log"))
    model = torch.nn.Linear(64, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def step(batch: torch.Tensor, compute_s: float) -> None:
        loss = model(batch).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if compute_s:
            time.sleep(compute_s)

    if mode == "main":
        paths = make_files(work, 16, 2 << 20, cold=True)
        loader = DataLoader(Files(paths), batch_size=2)
        epochs, compute_s = 1, 0.0
    elif mode == "workers":
        paths = make_files(work, 24, 4096)
        loader = DataLoader(Files(paths), batch_size=2, num_workers=2, persistent_workers=True,
                            multiprocessing_context="fork")
        for _ in loader:     # unprofiled epoch: the workers start here
            pass
        # 100 ms: the main process's own hand-over of a ready batch (queue, unpickling) took
        # up to 18 ms under load, a warning's share of a 20 ms step
        epochs, compute_s = 1, 0.1
    elif mode == "starved":
        paths = make_files(work, 16, 2 << 20, cold=True)
        loader = DataLoader(Files(paths), batch_size=2, num_workers=2, persistent_workers=True,
                            multiprocessing_context="fork")
        for _ in loader:     # unprofiled epoch: the workers start here
            pass
        drop_cache(paths)    # the profiled epoch reads from the disk again
        epochs, compute_s = 1, 0.0
    else:
        paths = make_files(work, 8, 4096)
        loader = DataLoader(Files(paths), batch_size=2, num_workers=2, multiprocessing_context="fork")
        epochs, compute_s = 3, 0.002
    steps = epochs * len(loader)
    sched = torch.profiler.schedule(wait=0, warmup=0, active=steps + 1, repeat=1)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], schedule=sched,
                                on_trace_ready=handler) as prof:
        for _ in range(epochs):
            for batch in loader:
                step(batch, compute_s)
                prof.step()
    result = {"main_pid": os.getpid(), "files": {p: os.path.getsize(p) for p in paths},
              "written": handler.written, "steps": steps, "epochs": epochs}
    with open(os.path.join(work, "result.json"), "w") as fh:
        json.dump(result, fh)


if __name__ == "__main__":
    main()
