"""``tb-iotrace run`` waits for the job's processes that outlive its command.

A job's main process may end before its children: ``os._exit`` or a signal leaves its DataLoader
workers running until their watchdog sees the parent gone (up to 5 s in torch), and they write
their records only then. The runner makes itself the job's child subreaper (Linux
``PR_SET_CHILD_SUBREAPER``): orphaned descendants become its children, so it can wait for them
(bounded) before it counts the records, and name those still running."""
from __future__ import annotations

import ctypes
import os
import sys
import time

PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Orphaned descendants are re-parented to this process (Linux); False where unsupported."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def children() -> list[int]:
    """This process's live children (from /proc), zombies reaped on the way."""
    reap()
    me = os.getpid()
    pids: set[int] = set()
    try:
        tasks = os.listdir(f"/proc/{me}/task")
        for tid in tasks:
            with open(f"/proc/{me}/task/{tid}/children", encoding="ascii") as fh:
                pids.update(int(p) for p in fh.read().split())
    except OSError:   # no /proc/<pid>/task/<tid>/children (CONFIG_PROC_CHILDREN): every stat
        pids = {pid for pid in _all_pids() if _ppid(pid) == me}
    return sorted(pids)


def _all_pids() -> list[int]:
    try:
        return [int(n) for n in os.listdir("/proc") if n.isdigit()]
    except OSError:
        return []


def _ppid(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
        return int(stat[stat.rindex(b")") + 2:].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def reap() -> None:
    """Collect the exit status of every child that ended (they would stay zombies)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def wait_for_children(limit_s: float, poll_s: float = 0.05) -> list[int]:
    """Wait up to ``limit_s`` seconds for every child to end; the pids still running then."""
    deadline = time.monotonic() + max(0.0, limit_s)
    while True:
        left = children()
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(poll_s)
