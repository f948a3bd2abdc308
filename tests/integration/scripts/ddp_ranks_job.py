"""A four-rank DDP training loop (gloo, CPU, four processes), each rank profiled by
tb_iotrace.torch.trace_handler into WORK/logs (its trace named rankN)
(tests/integration/test_ddp_ranks.py).

    python ddp_ranks_job.py WORK MODE      # MODE: balanced | slow | heavy

Each rank reads its own shard: one file per sample under WORK/data/rankN, a DataLoader with
num_workers=0 (the reads run in the rank's own loop, inside ``__next__``). The step's own work
is a small model plus a fixed 80 ms (a sleep standing for the model's compute, so that the
machine's load cannot make a balanced job input-bound).

- ``balanced``: every rank's samples are 16 KiB files;
- ``slow``: rank 2's dataset sleeps 100 ms before each sample's read (a slow read path by
  construction), so its input wait is about 0.4 s a step and the other ranks wait for it in
  the all-reduce;
- ``heavy``: rank 2's samples are 32 KiB files, twice the others' bytes per sample.
Writes WORK/result.<rank>.json: the rank's pid and its loop time.
"""
from __future__ import annotations

import json
import os
import sys
import time

WORLD, STEPS, BATCH, SAMPLE = 4, 6, 4, 16 << 10
SLOW_RANK, READ_DELAY_S, WORK_S = 2, 0.1, 0.08


def rank_main(rank: int, work: str, mode: str) -> None:
    os.environ["RANK"] = str(rank)
    os.environ["WORLD_SIZE"] = str(WORLD)
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.data import DataLoader, Dataset

    import tb_iotrace.torch as tbt

    torch.set_num_threads(1)
    size = 2 * SAMPLE if mode == "heavy" and rank == SLOW_RANK else SAMPLE
    n = (STEPS + 3) * BATCH
    folder = os.path.join(work, "data", f"rank{rank}")
    os.makedirs(folder, exist_ok=True)
    paths = []
    for i in range(n):
        p = os.path.join(folder, f"s{i}.bin")
        with open(p, "wb") as fh:
            fh.write(os.urandom(size))
        paths.append(p)
    slow = mode == "slow" and rank == SLOW_RANK

    class Shard(Dataset):
        def __len__(self) -> int:
            return n

        def __getitem__(self, i: int) -> torch.Tensor:
            if slow:
                time.sleep(READ_DELAY_S)
            with open(paths[i], "rb") as fh:
                data = fh.read()
            return torch.frombuffer(bytearray(data[:256]), dtype=torch.float32)

    dist.init_process_group("gloo", init_method=f"file://{work}/rendezvous", rank=rank, world_size=WORLD)
    torch.manual_seed(0)
    net = DDP(torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1)))
    opt = torch.optim.SGD(net.parameters(), lr=1e-3)
    prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                  schedule=torch.profiler.schedule(wait=1, warmup=1, active=STEPS, repeat=1),
                                  on_trace_ready=tbt.trace_handler(os.path.join(work, "logs"),
                                                                   worker_name=f"rank{rank}"))
    t0 = time.perf_counter()
    with prof:
        for k, x in enumerate(DataLoader(Shard(), batch_size=BATCH, num_workers=0)):
            if k >= STEPS + 2:
                break
            time.sleep(WORK_S)
            loss = net(x).square().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            prof.step()
    loop_s = time.perf_counter() - t0
    dist.destroy_process_group()
    with open(os.path.join(work, f"result.{rank}.json"), "w") as fh:
        json.dump({"rank": rank, "pid": os.getpid(), "loop_s": loop_s}, fh)


def main() -> None:
    import multiprocessing as mp

    work, mode = sys.argv[1], sys.argv[2]
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=rank_main, args=(r, work, mode)) for r in range(WORLD)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=240)
    for p in procs:
        if p.is_alive():
            p.kill()
    sys.exit(max(abs(p.exitcode or 0) for p in procs))


if __name__ == "__main__":
    main()
