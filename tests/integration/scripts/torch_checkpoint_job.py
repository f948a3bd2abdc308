"""A training loop that restores a checkpoint at start and saves one with torch.save + os.fsync
every N steps on the training thread, timing each save itself (tests/integration/test_torch_checkpoints.py).

    python torch_checkpoint_job.py WORK MODE   # MODE: init | run | trace | dcp | none
init writes WORK/init.pt (outside any recording); run is plain (for ``tb-iotrace run``); trace
profiles every step with tb_iotrace.torch.trace_handler (WORK/log); dcp does too, saving with
torch.distributed.checkpoint.save (one process) into a directory per save; async does too with
torch.distributed.checkpoint.async_save; none trains without checkpoints. Writes
WORK/result.json: the save times (saves_s, the caller's line; calls_s, async only: the call
itself, timed inside tb_iotrace's wrapper), the loop time, the files' sizes.
"""
from __future__ import annotations

import json
import os
import sys
import time

import torch

STEPS, EVERY = 12, 4


def model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(*[torch.nn.Linear(512, 512) for _ in range(8)])   # 8 MiB of weights


def slow_finish_writer(path: str):
    """DCP's file writer, its ``.metadata`` written 0.3 s after the data files (what a loaded
    machine's scheduler can do to a background writer): one save all the same."""
    from torch.distributed.checkpoint import FileSystemWriter

    class SlowFinish(FileSystemWriter):
        def finish(self, *args, **kwargs):
            time.sleep(0.3)
            return super().finish(*args, **kwargs)

    return SlowFinish(path)


def main() -> None:
    work, mode = sys.argv[1], sys.argv[2]
    torch.set_num_threads(1)
    net = model()
    opt = torch.optim.SGD(net.parameters(), lr=1e-3)
    if mode == "init":
        torch.save({"model": net.state_dict()}, os.path.join(work, "init.pt"))
        return
    calls: list[float] = []     # async: each async_save call's own time, inside tb_iotrace's span
    if mode == "async":
        # timed inside the wrapper tb_iotrace puts around async_save (DCP imported before the
        # handler: the wrapper wraps this timer), while saves_s times the caller's line around
        # it: the span lies between the two, whatever the load puts between them
        import torch.distributed.checkpoint as dcp

        real_async_save = dcp.async_save

        def timed_async_save(*args, **kwargs):
            s = time.perf_counter()
            try:
                return real_async_save(*args, **kwargs)
            finally:
                calls.append(time.perf_counter() - s)

        dcp.async_save = timed_async_save
    handler = None
    if mode in ("trace", "dcp", "async"):
        import tb_iotrace.torch as tbt
        handler = tbt.trace_handler(os.path.join(work, "log"))
    x = torch.randn(16, 512)
    # saved beside the weights (a replay buffer, say): 32 MiB a save, so the saves stay well above
    # the blocking finding's 5% of the loop when load slows the arithmetic threefold and not the
    # fsyncs (a CI run: 3 saves of the weights alone, 8 ms each, in 1.1 s of loop)
    extra = torch.randn(6 << 20)
    saves: list[float] = []
    pending: list = []
    sizes: dict[str, int] = {}

    def loop(step_done) -> tuple[float, float]:
        t0 = time.perf_counter()
        if mode != "none":
            state = torch.load(os.path.join(work, "init.pt"))
            net.load_state_dict(state["model"])
        t_load = time.perf_counter() - t0
        for k in range(STEPS):
            for _ in range(3):
                loss = net(x).square().mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
            if mode in ("dcp", "async") and (k + 1) % EVERY == 0:
                import torch.distributed.checkpoint as dcp

                path = os.path.join(work, f"step{k + 1}")
                s = time.perf_counter()
                if mode == "async":
                    pending.append((path, dcp.async_save({"model": net.state_dict()}, checkpoint_id=path,
                                                         storage_writer=slow_finish_writer(path))))
                else:
                    dcp.save({"model": net.state_dict()}, checkpoint_id=path)
                saves.append(time.perf_counter() - s)
                if mode == "dcp":
                    sizes[path] = sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path))
            elif mode != "none" and (k + 1) % EVERY == 0:
                path = os.path.join(work, f"step{k + 1}.pt")
                s = time.perf_counter()
                with open(path, "wb") as fh:
                    torch.save({"model": net.state_dict(), "buffer": extra, "step": k + 1}, fh)
                    fh.flush()
                    os.fsync(fh.fileno())
                saves.append(time.perf_counter() - s)
                sizes[path] = os.path.getsize(path)
            step_done()
        for path, fut in pending:
            fut.result()
            sizes[path] = sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path))
        return time.perf_counter() - t0, t_load

    if handler is not None:
        sched = torch.profiler.schedule(wait=0, warmup=0, active=STEPS + 1, repeat=1)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], schedule=sched,
                                    on_trace_ready=handler) as prof:
            loop_s, load_s = loop(prof.step)
    else:
        loop_s, load_s = loop(lambda: None)
    with open(os.path.join(work, "result.json"), "w") as fh:
        json.dump({"saves_s": saves, "calls_s": calls, "loop_s": loop_s, "load_s": load_s, "sizes": sizes, "pid": os.getpid(),
                   "init_size": os.path.getsize(os.path.join(work, "init.pt")) if mode != "none" else 0}, fh)


if __name__ == "__main__":
    main()
