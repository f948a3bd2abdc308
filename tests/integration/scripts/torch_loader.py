"""A small training loop whose DataLoader(num_workers=2, fork) reads known files under
torch.profiler with tb_iotrace.torch.trace_handler (tests/integration/test_torch_profiler.py).

    torch_loader.py MODE WORK

MODE ``inside``: the workers start inside the profiled window (the epoch is iterated after the
profile starts) and exit inside it. MODE ``before``: persistent workers forked in an
unprofiled first epoch; the second epoch is profiled. MODE ``main``: no workers (the main
process reads), the trace gzip-compressed. MODE ``spawn``: as ``before`` with the ``spawn``
start method; MODE ``forkserver``: as ``inside`` with ``forkserver``. MODE ``stopped``: as ``before``,
with the first worker stopped (SIGSTOP) for STOP_S seconds when the window starts, as a loaded
machine may not run it (longer than the 2 s the window start used to wait), and again for 1 s
as the window stops; MODE ``stopped-short``:
the same with a handler that waits only SHORT_WAIT_S for the workers to begin. MODE
``stopped-end``: persistent workers, two windows of 3 steps over one epoch, the handler waiting
only SHORT_WAIT_S for the hand-overs, and the first worker stopped for STOP_S as the first window
ends: it misses the first hand-over. MODE ``renamed``: as ``inside``, playing a torch release
without the names of the spawn/forkserver worker hook and the worker shutdown hook; MODE
``renamed-window``: the same without the profiler window's stop_trace. Writes
WORK/result.json: the files and their sizes, the pids, the trace files written and the handler's
notes."""
from __future__ import annotations

import json
import os
import signal
import sys
import threading

import torch
from torch.utils.data import DataLoader

import tb_iotrace.torch as tbt
from torch_files import Files

NFILES = 12
STOP_S = 3.0
SHORT_WAIT_S = 0.3


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
    if mode.startswith("renamed"):
        from tb_iotrace.recording import pytorch as torch_capture
        from tb_iotrace.recording.pytorch.parent import loaders as torch_loaders

        if mode == "renamed-window":
            torch_capture.state.WINDOW_HOOK = ("torch.profiler.profiler", "_KinetoProfile", ("start_trace", "_stop_gone"))
        else:
            torch_capture.state.WORKER_HOOK = ("torch.utils.data._utils.worker", "_worker_loop_gone")
            torch_loaders.SHUTDOWN_HOOK = ("torch.utils.data.dataloader", "_MultiProcessingDataLoaderIter",
                                           "_shutdown_gone")
    if mode == "stopped-short":
        handler = tbt.trace_handler(os.path.join(work, "log"), start_wait_s=SHORT_WAIT_S)
    elif mode == "stopped-end":
        handler = tbt.trace_handler(os.path.join(work, "log"), wait_s=SHORT_WAIT_S)
    else:
        handler = tbt.trace_handler(os.path.join(work, "log"), use_gzip=(mode == "main"))
    if mode == "main":
        loader = DataLoader(Files(paths), batch_size=2)
    else:
        context = {"spawn": "spawn", "forkserver": "forkserver"}.get(mode, "fork")
        loader = DataLoader(Files(paths), batch_size=2, num_workers=2, multiprocessing_context=context,
                            persistent_workers=(mode in ("before", "spawn", "stopped", "stopped-short", "stopped-end")))
    model = torch.nn.Linear(64, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    pids: set[int] = set()
    stopped: list[int] = []
    if mode in ("before", "spawn", "stopped", "stopped-short", "stopped-end"):
        for _ in loader:   # unprofiled epoch: the persistent workers start here
            pass
        workers = loader._iterator._workers  # type: ignore[union-attr]
        pids = {w.pid for w in workers}
        if mode in ("stopped", "stopped-short"):
            stopped = [workers[0].pid]
            os.kill(stopped[0], signal.SIGSTOP)
            threading.Timer(STOP_S, os.kill, (stopped[0], signal.SIGCONT)).start()
        elif mode == "stopped-end":
            stopped = [workers[0].pid]
    steps = len(loader)
    if mode == "stopped-end":
        sched = torch.profiler.schedule(wait=0, warmup=0, active=steps // 2, repeat=2)
    else:
        sched = torch.profiler.schedule(wait=0, warmup=0, active=steps + 1, repeat=1)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], schedule=sched,
                                on_trace_ready=handler) as prof:
        for k, batch in enumerate(loader):
            loss = model(batch).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
            if mode == "stopped-end" and k == steps // 2 - 1:   # this prof.step() ends the first window
                os.kill(stopped[0], signal.SIGSTOP)
                threading.Timer(STOP_S, os.kill, (stopped[0], signal.SIGCONT)).start()
            prof.step()
        if stopped and mode != "stopped-end":
            os.kill(stopped[0], signal.SIGSTOP)
            threading.Timer(1.0, os.kill, (stopped[0], signal.SIGCONT)).start()
    if mode in ("inside", "forkserver") or mode.startswith("renamed"):
        pids = set()   # the workers are gone: the trace names them
    result = {"main_pid": os.getpid(), "worker_pids": sorted(pids),
              "files": {p: os.path.getsize(p) for p in paths},
              "written": handler.written, "steps": steps, "stopped": stopped, "stop_s": STOP_S}
    with open(os.path.join(work, "result.json"), "w") as fh:
        json.dump(result, fh)


if __name__ == "__main__":
    main()
