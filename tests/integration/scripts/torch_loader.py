"""A small training loop whose DataLoader(num_workers=2, fork) reads known files under
torch.profiler with tb_iotrace.torch.trace_handler (tests/integration/test_torch_profiler.py).

    torch_loader.py MODE WORK

MODE ``inside``: the workers start inside the profiled window (the epoch is iterated after the
profile starts) and exit inside it. MODE ``before``: persistent workers forked in an
unprofiled first epoch; the second epoch is profiled. MODE ``main``: no workers (the main
process reads), the trace gzip-compressed. MODE ``spawn``: as ``before`` with the ``spawn``
start method; MODE ``forkserver``: as ``inside`` with ``forkserver``. Writes WORK/result.json: the files and
their sizes, the pids, the trace files written and the handler's notes."""
from __future__ import annotations

import json
import os
import sys

import torch
from torch.utils.data import DataLoader, Dataset

import tb_iotrace.torch as tbt

NFILES = 12


class Files(Dataset):
    def __init__(self, paths: list[str]) -> None:
        self.paths = paths

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, i: int) -> torch.Tensor:
        with open(self.paths[i], "rb") as fh:
            data = fh.read()
        return torch.frombuffer(bytearray(data[:64]), dtype=torch.uint8).float()


def main() -> None:
    mode, work = sys.argv[1], sys.argv[2]
    data = os.path.join(work, "data")
    os.makedirs(data, exist_ok=True)
    paths = []
    for i in range(NFILES):
        p = os.path.join(data, f"sample{i:02d}.bin")
        with open(p, "wb") as fh:
            fh.write(bytes([i]) * (1000 + 37 * i))
        paths.append(p)
    handler = tbt.trace_handler(os.path.join(work, "log"), use_gzip=(mode == "main"))
    if mode == "main":
        loader = DataLoader(Files(paths), batch_size=2)
    else:
        context = {"spawn": "spawn", "forkserver": "forkserver"}.get(mode, "fork")
        loader = DataLoader(Files(paths), batch_size=2, num_workers=2, multiprocessing_context=context,
                            persistent_workers=(mode in ("before", "spawn")))
    model = torch.nn.Linear(64, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    pids: set[int] = set()
    if mode in ("before", "spawn"):
        for _ in loader:   # unprofiled epoch: the persistent workers start here
            pass
        pids = {w.pid for w in loader._iterator._workers}  # type: ignore[union-attr]
    steps = len(loader)
    sched = torch.profiler.schedule(wait=0, warmup=0, active=steps + 1, repeat=1)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], schedule=sched,
                                on_trace_ready=handler) as prof:
        for batch in loader:
            loss = model(batch).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
            prof.step()
    if mode in ("inside", "forkserver"):
        pids = set()   # the workers are gone: the trace names them
    result = {"main_pid": os.getpid(), "worker_pids": sorted(pids),
              "files": {p: os.path.getsize(p) for p in paths},
              "written": handler.written, "steps": steps}
    with open(os.path.join(work, "result.json"), "w") as fh:
        json.dump(result, fh)


if __name__ == "__main__":
    main()
