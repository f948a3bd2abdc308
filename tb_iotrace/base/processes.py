"""Whether a process is alive, by its pid (signal 0): the stale-folder sweeps and attach's
claims ask it."""
from __future__ import annotations

import os


def pid_alive(pid: int) -> bool:
    """True while ``pid`` names a running process (another user's included); False for a pid
    that names none, or is not a single process's (0 or below)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:        # another user's process: alive
        return True
    return True
