"""A training loop whose batches come over HTTP (urllib, by host name) from a server on
127.0.0.1 in this process, profiled with tb_iotrace.torch.trace_handler
(tests/integration/test_sockets_windows.py).

    torch_sockets.py WORK

num_workers=0: the main process fetches inside __next__, so which step fetched what is known.
The steps outside the active window fetch from one server, the active ones from another: the
second server's counts are what the window's endpoint must hold. Writes WORK/result.json: both
servers' ports and counts, the trace files written."""
from __future__ import annotations

import json
import os
import sys
import urllib.request

import torch
from torch.utils.data import DataLoader, Dataset

import tb_iotrace.torch as tbt

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "unit", "fixtures"))
from counting_server import CountingServer  # noqa: E402

WAIT, WARMUP, ACTIVE = 1, 1, 4


class Objects(Dataset):
    def __init__(self) -> None:
        self.port = 0

    def __len__(self) -> int:
        return 64

    def __getitem__(self, i: int) -> torch.Tensor:
        with urllib.request.urlopen(f"http://localhost:{self.port}/{4096 + 8 * i}", timeout=30) as r:
            return torch.frombuffer(bytearray(r.read()), dtype=torch.uint8).float().mean()


def main() -> None:
    work = sys.argv[1]
    handler = tbt.trace_handler(os.path.join(work, "log"))
    data = Objects()
    # the active steps' server answers after 30 ms: a latency-bound job, by construction
    with CountingServer() as outside, CountingServer(delay_s=0.03) as inside:
        loader = iter(DataLoader(data, batch_size=2, num_workers=0))
        sched = torch.profiler.schedule(wait=WAIT, warmup=WARMUP, active=ACTIVE, repeat=1)
        with torch.profiler.profile(schedule=sched, on_trace_ready=handler) as prof:
            for step in range(WAIT + WARMUP + ACTIVE + 1):
                data.port = inside.port if WAIT + WARMUP <= step < WAIT + WARMUP + ACTIVE else outside.port
                next(loader).sum()
                prof.step()
        inside.wait_idle()
        outside.wait_idle()
    with open(os.path.join(work, "result.json"), "w") as f:
        json.dump({"inside": {"port": inside.port, "received": inside.received, "sent": inside.sent,
                              "connections": inside.connections},
                   "outside": {"port": outside.port}, "written": list(handler.written)}, f)


if __name__ == "__main__":
    main()
