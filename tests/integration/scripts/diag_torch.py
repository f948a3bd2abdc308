"""What the PyTorch diagnosis jobs (``torch_*_bound.py``, ``torch_main_process_loading.py``,
``torch_worker_restarts.py``, ``torch_not_input_bound.py``) share: files written to a temp
folder (read back from the page cache), a dataset that reads one file per sample and then
transforms it on the CPU for a set time (busy, no sleep: it stands for image decoding and
augmentation), and a profiled training loop whose step "computes" for a set time. Each job
writes WORK/result.json: the trace written, the main pid, the files, the expected verdict."""
from __future__ import annotations

import json
import os
import time
from typing import Any

import torch

import tb_iotrace.torch as tbt
from torch_files import Files


def make_files(work: str, n: int, size: int = 32 << 10) -> list[str]:
    data = os.path.join(work, "data")
    os.makedirs(data, exist_ok=True)
    paths = []
    for i in range(n):
        p = os.path.join(data, f"img{i:04d}.bin")
        with open(p, "wb") as fh:
            fh.write(bytes([i % 251]) * (size + i))
        paths.append(p)
    return paths


def busy(x: torch.Tensor, seconds: float) -> torch.Tensor:
    """CPU work for ``seconds`` of wall time (a decode and augmentation)."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        x = torch.tanh(x * 1.0001)
    return x


class Decoded(Files):
    """Sample i: file i read whole, then ``decode_s`` of CPU work on it."""

    def __init__(self, paths: list[str], decode_s: float) -> None:
        super().__init__(paths)
        self.decode_s = decode_s

    def __getitem__(self, i: int) -> torch.Tensor:
        return busy(super().__getitem__(i), self.decode_s)


def handler(work: str) -> Any:
    """The trace handler; made before any DataLoader starts its workers."""
    return tbt.trace_handler(os.path.join(work, "log"))


def train(loader: Any, h: Any, *, compute_s: float, epochs: int = 1, skip: int = 0,
          active: int | None = None) -> int:
    """``epochs`` epochs; the profile skips ``skip`` steps, then records ``active`` (all the
    rest when None). The step: forward, backward and ``compute_s`` of sleep (the GPU's time)."""
    model = torch.nn.Linear(64, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    if active is None:
        active = epochs * len(loader) - skip
    # a skipped step warms the profiler up (PyTorch warns without a warmup step)
    sched = torch.profiler.schedule(wait=max(skip - 1, 0), warmup=min(skip, 1), active=active, repeat=1)
    steps = 0
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], schedule=sched,
                                on_trace_ready=h) as prof:
        for _ in range(epochs):
            for batch in loader:
                loss = model(batch).sum()
                opt.zero_grad()
                loss.backward()
                opt.step()
                time.sleep(compute_s)
                prof.step()
                steps += 1
    return steps


def write_result(work: str, h: Any, expected: dict[str, Any], **more: Any) -> None:
    result = {"main_pid": os.getpid(), "written": h.written, "expected": expected, **more}
    with open(os.path.join(work, "result.json"), "w") as fh:
        json.dump(result, fh)
