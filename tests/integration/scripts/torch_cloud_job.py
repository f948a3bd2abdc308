"""A PyTorch job profiled with tb_iotrace.torch.trace_handler(URL): two windows of two steps,
each step reading the data file whole. argv: data file, URL."""
import sys

import torch

import tb_iotrace.torch

data, url = sys.argv[1], sys.argv[2]
handler = tb_iotrace.torch.trace_handler(url, worker_name="w0")
with torch.profiler.profile(schedule=torch.profiler.schedule(wait=0, warmup=1, active=2, repeat=2),
                            on_trace_ready=handler) as prof:
    for _ in range(6):
        with open(data, "rb") as fh:
            while fh.read(65536):
                pass
        prof.step()
print("\n".join(handler.written))
