"""A two-rank training loop (gloo, CPU, two processes) that saves with
torch.distributed.checkpoint every few steps (tests/integration/test_dcp_ranks.py).

    python dcp_ranks_job.py WORK MODE [SLOW_CGROUP]   # MODE: save | async | trace | pair
Each rank holds its own 8 MiB of weights (keys named by rank, so each rank writes its own
shard; rank 0 also writes the checkpoint's .metadata) and saves them at steps 4 and 8 into
WORK/stepN. ``save``: dcp.save; ``async``: dcp.async_save, each waited for before the next;
``trace``: dcp.save, each rank's loop profiled by tb_iotrace.torch.trace_handler into WORK/logs
(its trace named rankN); ``pair``: two dcp.save calls back to back after the last step, into
WORK/step8 and WORK/step8b.
SLOW_CGROUP: a cgroup v1 blkio directory whose write throttle caps the disk; rank 1 joins it
(its writes, and the fsync that flushes them to the disk, run at the cap): the straggler.
The ranks set RANK in their environment (as torchrun does) for the record.
Writes WORK/result.<rank>.json: the rank's pid, its save times, its files' sizes per save.
"""
from __future__ import annotations

import json
import os
import sys
import time

STEPS, EVERY, WORLD = 8, 4, 2


def rank_main(rank: int, work: str, mode: str, cgroup: str) -> None:
    os.environ["RANK"] = str(rank)
    os.environ["WORLD_SIZE"] = str(WORLD)
    if cgroup and rank == 1:
        with open(os.path.join(cgroup, "cgroup.procs"), "w") as fh:
            fh.write(str(os.getpid()))
    import torch
    import torch.distributed as dist
    import torch.distributed.checkpoint as dcp

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{work}/rendezvous", rank=rank, world_size=WORLD)
    torch.manual_seed(rank)
    net = torch.nn.Sequential(*[torch.nn.Linear(512, 512) for _ in range(8)])     # 8 MiB of weights
    opt = torch.optim.SGD(net.parameters(), lr=1e-3)
    x = torch.randn(16, 512)
    saves: list[float] = []
    sizes: dict[str, dict[str, int]] = {}
    prof = None
    if mode == "trace":
        import tb_iotrace.torch as tbt

        prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                      schedule=torch.profiler.schedule(wait=0, warmup=0, active=STEPS, repeat=1),
                                      on_trace_ready=tbt.trace_handler(os.path.join(work, "logs"),
                                                                       worker_name=f"rank{rank}"))
        prof.__enter__()
    t0 = time.perf_counter()
    for k in range(STEPS):
        for _ in range(3):
            loss = net(x).square().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        if (mode != "pair" and (k + 1) % EVERY == 0) or (mode == "pair" and k + 1 == STEPS):
            state = {f"rank{rank}.{n}": t for n, t in net.state_dict().items()}
            paths = [os.path.join(work, f"step{k + 1}{x}") for x in (("", "b") if mode == "pair" else ("",))]
            for path in paths:       # pair: the second save right after the first, no step between
                s = time.perf_counter()
                if mode == "async":
                    dcp.async_save(state, checkpoint_id=path).result()
                else:
                    dcp.save(state, checkpoint_id=path)
                saves.append(time.perf_counter() - s)
            dist.barrier()
            for path in paths:
                mine = [f for f in os.listdir(path) if f.startswith(f"__{rank}_") or (rank == 0 and f == ".metadata")]
                sizes[path] = {f: os.path.getsize(os.path.join(path, f)) for f in mine}
        if prof is not None:
            prof.step()
    loop_s = time.perf_counter() - t0
    if prof is not None:
        prof.__exit__(None, None, None)
    dist.destroy_process_group()
    with open(os.path.join(work, f"result.{rank}.json"), "w") as fh:
        json.dump({"rank": rank, "pid": os.getpid(), "saves_s": saves, "loop_s": loop_s, "sizes": sizes}, fh)


def main() -> None:
    import multiprocessing as mp

    work, mode = sys.argv[1], sys.argv[2]
    cgroup = sys.argv[3] if len(sys.argv) > 3 else ""
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=rank_main, args=(r, work, mode, cgroup)) for r in range(WORLD)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    sys.exit(max(abs(p.exitcode or 0) for p in procs))


if __name__ == "__main__":
    main()
