"""What the parts of the PyTorch recording share in one process: the window recording now, this process's session, its peers (forked or spawned DataLoader workers), and the settings of the hooks (tests play a renamed torch release by changing ``WINDOW_HOOK``/``WORKER_HOOK`` here)."""
from __future__ import annotations

import logging
import socket
import threading

from typing import Any


log = logging.getLogger("tb_iotrace")


# Upper bounds for a worker the machine does not run (answers take milliseconds otherwise);
# what a worker misses by them is counted and said in the trace, never dropped silently.
WAIT_S = 60.0         # how long a handler waits for the workers' records
START_WAIT_S = 30.0   # how long a window's start waits for the workers to begin recording
lock = threading.Lock()
installed = False

# The window recording now in this process: (window id, spool dir), or None. A forked child
# inherits it and starts recording at once.
window: tuple[int, str] | None = None
session: Any = None            # this process's native session for the window
session_start_ns = 0
session_cpu_ns = 0              # this process's CPU time (time.process_time_ns) at the session's start
ended_cpu_ns: int | None = None  # its CPU time over the window just ended
session_run_delays: dict[int, int] | None = None   # its threads' run-queue delays at the start (base.run_delay)
ended_run_delay_ns: int | None = None  # the time its threads waited for a core over the window just ended
role = "main"
channels: list["Peer"] = []   # parent ends, one per child (forked or connected) still alive
pending_pair: tuple[socket.socket, socket.socket] | None = None
child_sock: socket.socket | None = None
window_counter = 0
control: str | None = None                 # this process's control folder (spawned workers)
listener: socket.socket | None = None      # where spawned workers connect
real_loop: Any = None                      # torch's own worker function

# The fetch spans of the window this worker records now (None: not recording, or not a worker):
# (start_ns, end_ns, tid, samples) tuples; replaced, not cleared, at each window's start and end,

# so a fetch that began in one window never lands in another.
spans: list[tuple[int, int, int, int]] | None = None
ended_spans: list[tuple[int, int, int, int]] = []    # those of the window just ended
worker_id: int | None = None
fetch_note: str | None = None              # why workers time no fetch (this torch lacks the names)
FETCHERS = ("_MapDatasetFetcher", "_IterableDatasetFetcher")   # in torch.utils.data._utils.fetch

# The window now open: when its start was sent, and the workers that did not answer it in time.
window_start_ns = 0
late_start: dict[int, str] = {}

# The private names of torch this module wraps (torch_loaders has its own). A torch release that
# renames one turns that hook off: the window hook's absence makes trace_handler write PyTorch's

# trace without I/O, the others lose what they alone record; every trace's notes say which hook is
# off and why (hooks_off()). Tests play a renamed release by changing these.
WINDOW_HOOK = ("torch.profiler.profiler", "_KinetoProfile", ("start_trace", "stop_trace"))
WORKER_HOOK = ("torch.utils.data._utils.worker", "_worker_loop")
off: list[str] = []
