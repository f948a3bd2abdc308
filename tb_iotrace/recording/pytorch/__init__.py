"""PyTorch profiler integration: the I/O of a ``torch.profiler`` window, DataLoader workers
included, for :class:`TraceHandler` (``tb_iotrace.torch.trace_handler``).

PyTorch tells ``on_trace_ready`` about a window only after it ended, so the window's
start and stop are taken from the profiler itself: :func:`.parent.hooks.install` wraps
``_KinetoProfile.start_trace`` / ``stop_trace`` (class attributes; ``profile.__init__``
binds them into its action map, and the handler is built before the profile, as the
argument of ``on_trace_ready``). The wrappers record only for a profile whose
``on_trace_ready`` is a :class:`TraceHandler`; every other profile is untouched.

Forked children (DataLoader workers with the ``fork`` start method) start with no recording
(the shim drops the parent's sessions at fork). While installed, each fork gets a socket
pair: the child keeps one end and a daemon thread (``tb_iotrace-torch``) that waits on it,
the parent the other. The protocol is lines: the child first says ``H <pid>``. At window
start the parent sends ``S <window> <spool>``; the child begins a session and answers
``R <window>``. At window stop it sends ``E <window>``; the child ends the session, writes
its process record (:mod:`tb_iotrace.store.kineto`) to ``<spool>/<window>.<pid>.json`` and answers
``D <window>`` (``N <window>``: nothing recorded). A child forked inside a window starts
recording at once (it inherits the window), and one that exits inside a window (end of an
epoch) writes its record at exit (a ``multiprocessing`` finalizer); end-of-file on its
channel says it is gone. Answers name their window, so a late answer to a start is never
taken for a hand-over.

A loaded machine may not run a worker for seconds. The window start waits for every ``R``
answer (at most :data:`.state.START_WAIT_S`, generous: answers take milliseconds when the worker
runs); a worker that answers later still records, from when it began: its record says by
how much it began late (``late_start_ns``) and the trace's notes say so. The handler waits
for every hand-over (at most :data:`.state.WAIT_S`); a worker that missed it is named in the notes
and in the record's ``workers_missing``, and its record, if it comes later, is reported by
the next window's handler and dropped.

``spawn``/``forkserver`` workers are fresh interpreters (or forks of one) that inherit none of
this. :func:`.parent.hooks.install` replaces the DataLoader's worker function
(``torch.utils.data._utils.worker._worker_loop``) with a :class:`WorkerEntry`, pickled into
each worker with the address of a Unix socket this process listens on. In the worker it enables
tb_iotrace, connects, reads the current window from ``<control>/window`` (so a worker started
inside a window records at once) and serves ``S``/``E`` as a forked child does. The parent
takes new connections (non-blocking ``accept``) right before each ``S``/``E`` broadcast, after
rewriting ``<control>/window``: a worker that connected before sees the message, one that
connects after reads the new state.

Every DataLoader worker (fork, spawn or forkserver: :class:`WorkerEntry` runs in each) wraps
torch's fetchers (``torch.utils.data._utils.fetch._MapDatasetFetcher.fetch`` and
``_IterableDatasetFetcher.fetch``, in the worker only: the main process's stay torch's) to time
each index batch it fetches while it records a window: one span per batch (``start_ns``,
``end_ns``, the fetching thread's OS ``tid``, ``samples`` collated), in its process record
under ``fetches``. Idle (no window), a fetch costs one global read. Only a fetch that begins and
ends while the worker records is kept (one in flight as the worker begins or stops recording is
not: its span would be cut). A torch without those names runs untouched; the trace's notes say
why there are no spans.

The parts, by process. In both: :mod:`.state` (what the parts share in one process) and
:mod:`.record` (a process's session and record). Between them: :mod:`.protocol` (the lines, both
ends, and the control folder a spawned worker finds the main process by). The main process,
:mod:`.parent`: :mod:`.parent.channels` (its end of each worker's channel: the socket pair at
fork, the listener and :class:`WorkerEntry` for spawned workers), :mod:`.parent.profiler_window`
(a window's start and stop), :mod:`.parent.handler` (:class:`TraceHandler`), :mod:`.parent.hooks`
(installing into torch), :mod:`.parent.loaders` (which DataLoaders a window iterated),
:mod:`.parent.step_windows` and :mod:`.parent.auto_window` (windows tb_iotrace takes itself). A
worker, :mod:`.worker`: :mod:`.worker.startup` (joining the recording at fork, or as a spawned
worker through :class:`WorkerEntry`, and serving the protocol) and :mod:`.worker.fetch` (fetch
spans).
"""
from __future__ import annotations

from tb_iotrace.recording.pytorch.worker.fetch import fetch_spans_unavailable
from tb_iotrace.recording.pytorch.parent.handler import TraceHandler
from tb_iotrace.recording.pytorch.parent.hooks import install, installed
from tb_iotrace.recording.pytorch.record import process_record
from tb_iotrace.recording.pytorch.state import FETCHERS, START_WAIT_S, WAIT_S, WINDOW_HOOK, WORKER_HOOK
from tb_iotrace.recording.pytorch.parent.profiler_window import hooks_off
from tb_iotrace.recording.pytorch.worker.startup import WorkerEntry

__all__ = ["FETCHERS", "START_WAIT_S", "TraceHandler", "WAIT_S", "WINDOW_HOOK", "WORKER_HOOK", "WorkerEntry",
           "fetch_spans_unavailable", "hooks_off", "install", "installed", "process_record"]
