"""DataLoader workers timing their fetches, for tests/integration/test_torch_fetch_spans.py.

    torch_fetch_spans.py START_METHOD WORK

DataLoader(num_workers=2, batch_size=BATCH, prefetch_factor=PREFETCH, START_METHOD) over NFILES
files (one open and one whole read per sample, then DECODE_S of CPU-free waiting); the profile
skips 2 steps and records ACTIVE. Writes WORK/result.json: the trace written, the main pid, the
files, the loader's settings and ``received_ns``, when the training loop got each batch
(CLOCK_REALTIME, the trace's clock).
"""
from __future__ import annotations

import json
import os
import sys
import time

import torch
from torch.utils.data import DataLoader

import tb_iotrace.torch as tbt
from torch_files import Files

NFILES = 48
BATCH = 3
WORKERS = 2
PREFETCH = 2
ACTIVE = 8
DECODE_S = 0.004


class SlowFiles(Files):
    def __getitem__(self, i: int) -> torch.Tensor:
        x = super().__getitem__(i)
        time.sleep(DECODE_S)
        return x


def main() -> None:
    method, work = sys.argv[1], sys.argv[2]
    data = os.path.join(work, "data")
    os.makedirs(data, exist_ok=True)
    paths = []
    for i in range(NFILES):
        p = os.path.join(data, f"s{i:03d}.bin")
        with open(p, "wb") as fh:
            fh.write(bytes([i % 251]) * (2000 + 13 * i))
        paths.append(p)
    handler = tbt.trace_handler(os.path.join(work, "log"))
    loader = DataLoader(SlowFiles(paths), batch_size=BATCH, num_workers=WORKERS, prefetch_factor=PREFETCH,
                        multiprocessing_context=method)
    model = torch.nn.Linear(64, 1)
    received: list[int] = []
    sched = torch.profiler.schedule(wait=2, warmup=0, active=ACTIVE, repeat=1)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], schedule=sched,
                                on_trace_ready=handler) as prof:
        for batch in loader:
            received.append(time.time_ns())
            model(batch).sum().backward()
            prof.step()
    result = {"main_pid": os.getpid(), "written": handler.written, "received_ns": received,
              "files": {p: os.path.getsize(p) for p in paths},
              "batch": BATCH, "workers": WORKERS, "prefetch": PREFETCH}
    with open(os.path.join(work, "result.json"), "w") as fh:
        json.dump(result, fh)


if __name__ == "__main__":
    main()
