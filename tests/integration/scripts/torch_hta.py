"""One profiled window of a small CPU training loop (DataLoader(num_workers=2, fork) reading
known files) written twice: by ``tb_iotrace.torch.trace_handler`` into WORK/ours and by
``torch.profiler.tensorboard_trace_handler`` into WORK/plain, both from the same export
(Kineto saves a window's trace only once), for tests/integration/test_torch_hta.py.

    torch_hta.py WORK

Writes WORK/result.json: the files read and their sizes, the main pid, the traces written."""
from __future__ import annotations

import json
import os
import shutil
import sys
from typing import Any

import torch
from torch.utils.data import DataLoader

import tb_iotrace.torch as tbt
from torch_files import Files

NFILES = 8


class ExportOnce:
    """The profile, its trace exported once: a later export copies the first file."""

    def __init__(self, prof: Any) -> None:
        self.prof = prof
        self.first: str | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.prof, name)

    def export_chrome_trace(self, path: str, **kwargs: Any) -> None:
        if self.first is None:
            self.prof.export_chrome_trace(path, **kwargs)
            self.first = path
        else:
            shutil.copyfile(self.first, path)


class SideBySide(tbt.TraceHandler):
    """PyTorch's own handler, then ours, on the same window."""

    def __init__(self, ours: str, plain: str) -> None:
        super().__init__(ours, worker_name="rank0")
        self.plain = torch.profiler.tensorboard_trace_handler(plain, worker_name="rank0")

    def __call__(self, prof: Any) -> None:
        once = ExportOnce(prof)
        self.plain(once)
        super().__call__(once)


def main() -> None:
    work = sys.argv[1]
    data = os.path.join(work, "data")
    os.makedirs(data, exist_ok=True)
    paths = []
    for i in range(NFILES):
        p = os.path.join(data, f"sample{i}.bin")
        with open(p, "wb") as fh:
            fh.write(bytes([i]) * (1000 + 37 * i))
        paths.append(p)
    # enables tb_iotrace and hooks the profiler (the handler itself is a TraceHandler too)
    tbt.trace_handler(os.path.join(work, "ours"))
    handler = SideBySide(os.path.join(work, "ours"), os.path.join(work, "plain"))
    loader = DataLoader(Files(paths, head=16), batch_size=2, num_workers=2)
    model = torch.nn.Linear(16, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    sched = torch.profiler.schedule(wait=0, warmup=0, active=len(loader) + 1, repeat=1)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], schedule=sched,
                                on_trace_ready=handler) as prof:
        for batch in loader:
            loss = model(batch).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
            prof.step()
    result = {"main_pid": os.getpid(), "files": {p: os.path.getsize(p) for p in paths},
              "ours": sorted(os.listdir(os.path.join(work, "ours"))),
              "plain": sorted(os.listdir(os.path.join(work, "plain")))}
    with open(os.path.join(work, "result.json"), "w") as fh:
        json.dump(result, fh)


if __name__ == "__main__":
    main()
