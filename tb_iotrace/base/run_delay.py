"""How long this process's threads waited for a core: the kernel's run-queue delay (the second
field of ``/proc/self/task/<tid>/schedstat``, ns). With the CPU time it is the time the process
wanted a core: a DataLoader worker whose fetch took 20 ms of which 4 ms on a core and 15 ms
waiting for one (another process held them) needed the cores for 19 ms, one that waited 15 ms on
a lock or a request in flight did not. ``/proc/`` is among the recording's default excludes, so
these reads are not the job's I/O."""
from __future__ import annotations

import os

__all__ = ["run_delay_since", "run_delays"]

TASKS = "/proc/self/task"


def run_delays() -> dict[int, int] | None:
    """Thread id -> ns it has waited on the run queue so far; None where the kernel does not say."""
    try:
        tids = os.listdir(TASKS)
    except OSError:
        return None
    out: dict[int, int] = {}
    for name in tids:
        try:
            fd = os.open(f"{TASKS}/{name}/schedstat", os.O_RDONLY)
            try:
                fields = os.read(fd, 128).split()
            finally:
                os.close(fd)
            out[int(name)] = int(fields[1])
        except (OSError, ValueError, IndexError):
            continue         # a thread that ended meanwhile
    return out or None


def run_delay_since(before: dict[int, int] | None) -> int | None:
    """The run-queue delay of this process's threads since ``before`` (:func:`run_delays`): a thread
    started since counts whole; one that ended since is not counted (its time is gone with it)."""
    if before is None:
        return None
    now = run_delays()
    if now is None:
        return None
    return sum(max(0, ns - before.get(tid, 0)) for tid, ns in now.items())
