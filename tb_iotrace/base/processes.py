"""Whether a process is alive, by its pid (signal 0): the stale-folder sweeps and attach's
claims ask it."""
from __future__ import annotations

import os


def pid_alive(pid: int) -> bool:
    """True while ``pid`` names a running process (another user's included); False for a pid
    that names none, is not a single process's (0 or below), or names one that has exited and
    waits for its parent to reap it (a zombie: signal 0 still reaches it)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:        # another user's process: alive
        return True
    return not _exited(pid)


def _exited(pid: int) -> bool:
    """``pid`` is a zombie (or being reaped), by its state in /proc (where there is one)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            state = fh.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state in (b"Z", b"X")
