"""A training loop that saves 64 MiB with torch.save + os.fsync on the training thread every
EVERY steps and, at the end, loads the last save back to check it, timing its saves and its
loop itself (tests/integration/test_torch_checkpoints.py: a whole-run record's share of the run).

    python torch_save_every_job.py WORK
Writes WORK/result.json: the save times, the loop time, the run's time from the start of this
script (before torch's import), the files' sizes, the pid.
"""
from __future__ import annotations

import time

T_START = time.perf_counter()

import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402

import torch  # noqa: E402

STEPS, EVERY = 80, 20
WIDTH = 2048                   # 4 Linear(2048, 2048): 64 MiB of weights


def main() -> None:
    work = sys.argv[1]
    torch.set_num_threads(1)
    torch.manual_seed(0)
    net = torch.nn.Sequential(*[torch.nn.Linear(WIDTH, WIDTH) for _ in range(4)])
    opt = torch.optim.SGD(net.parameters(), lr=1e-4)
    x = torch.randn(4, WIDTH)          # short steps: the saves are a clear share of the run
    saves: list[float] = []
    sizes: dict[str, int] = {}
    t0 = time.perf_counter()
    for k in range(STEPS):
        loss = net(x).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if (k + 1) % EVERY == 0:
            path = os.path.join(work, f"step{k + 1}.pt")
            s = time.perf_counter()
            with open(path, "wb") as fh:
                torch.save({"model": net.state_dict(), "step": k + 1}, fh)
                fh.flush()
                os.fsync(fh.fileno())
            saves.append(time.perf_counter() - s)
            sizes[path] = os.path.getsize(path)
    loop_s = time.perf_counter() - t0
    back = torch.load(path)          # the last save read back: the run's one load
    assert back["step"] == STEPS
    end = time.perf_counter()
    with open(os.path.join(work, "result.json"), "w") as fh:
        json.dump({"saves_s": saves, "loop_s": loop_s, "run_s": end - T_START, "sizes": sizes,
                   "pid": os.getpid()}, fh)


if __name__ == "__main__":
    main()
