"""PyTorch profiler integration: the I/O of a ``torch.profiler`` window, DataLoader workers
included, for :class:`TraceHandler` (``tb_iotrace.torch.trace_handler``).

PyTorch tells ``on_trace_ready`` about a window only after it ended, so the window's
start and stop are taken from the profiler itself: :func:`install` wraps
``_KinetoProfile.start_trace`` / ``stop_trace`` (class attributes; ``profile.__init__``
binds them into its action map, and the handler is built before the profile, as the
argument of ``on_trace_ready``). The wrappers record only for a profile whose
``on_trace_ready`` is a :class:`TraceHandler`; every other profile is untouched.

Forked children (DataLoader workers with the ``fork`` start method) start with no capture
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
answer (at most :data:`START_WAIT_S`, generous: answers take milliseconds when the worker
runs); a worker that answers later still records, from when it began: its record says by
how much it began late (``late_start_ns``) and the trace's notes say so. The handler waits
for every hand-over (at most :data:`WAIT_S`); a worker that missed it is named in the notes
and in the record's ``workers_missing``, and its record, if it comes later, is reported by
the next window's handler and dropped.

``spawn``/``forkserver`` workers are fresh interpreters (or forks of one) that inherit none of
this. :func:`install` replaces the DataLoader's worker function
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
"""
from __future__ import annotations

import atexit
import json
import logging
import os
import select
import shutil
import socket
import tempfile
import threading
import time
from typing import Any

from tb_iotrace.store import remote
from tb_iotrace.base.atomic import atomic_write
from tb_iotrace.store.kineto import KinetoTraceError, add_io, read_trace, write_trace
from tb_iotrace.store.machine import machine_facts
from tb_iotrace.base.safenames import safe_component
from tb_iotrace.recording import checkpoint_hooks, torch_loaders
from tb_iotrace.recording.session import Capture, begin_session, end_session, forget

__all__ = ["FETCHERS", "START_WAIT_S", "TraceHandler", "WAIT_S", "WINDOW_HOOK", "WORKER_HOOK", "WorkerEntry",
           "fetch_spans_unavailable", "hooks_off",
           "install", "installed", "process_record"]

log = logging.getLogger("tb_iotrace")

# Upper bounds for a worker the machine does not run (answers take milliseconds otherwise);
# what a worker misses by them is counted and said in the trace, never dropped silently.
WAIT_S = 60.0         # how long a handler waits for the workers' records
START_WAIT_S = 30.0   # how long a window's start waits for the workers to begin recording

_lock = threading.Lock()
_installed = False
# The window recording now in this process: (window id, spool dir), or None. A forked child
# inherits it and starts recording at once.
_window: tuple[int, str] | None = None
_session: Any = None            # this process's native session for the window
_session_start_ns = 0
_role = "main"
_channels: list["_Peer"] = []   # parent ends, one per child (forked or connected) still alive
_pending_pair: tuple[socket.socket, socket.socket] | None = None
_child_sock: socket.socket | None = None
_window_counter = 0
_control: str | None = None                 # this process's control folder (spawned workers)
_listener: socket.socket | None = None      # where spawned workers connect
_real_loop: Any = None                      # torch's own worker function
# The fetch spans of the window this worker records now (None: not recording, or not a worker):
# (start_ns, end_ns, tid, samples) tuples; replaced, not cleared, at each window's start and end,
# so a fetch that began in one window never lands in another.
_spans: list[tuple[int, int, int, int]] | None = None
_ended_spans: list[tuple[int, int, int, int]] = []    # those of the window just ended
_worker_id: int | None = None
_fetch_note: str | None = None              # why workers time no fetch (this torch lacks the names)
FETCHERS = ("_MapDatasetFetcher", "_IterableDatasetFetcher")   # in torch.utils.data._utils.fetch


def process_record(cap: Capture, role: str, start_ns: int,
                   fetches: list[tuple[int, int, int, int]] | None = None,
                   worker_id: int | None = None) -> dict[str, Any]:
    """A capture as the process record :mod:`tb_iotrace.store.kineto` writes; a DataLoader worker's
    also holds its fetch spans (``fetches``: equal-length lists ``start_ns``, ``end_ns``,
    ``tid``, ``samples``) and its ``worker_id``."""
    ev = cap.events
    events = {
        "op": ev.op.tolist(), "path": ev.path.tolist(),
        "offset": ev.offset.tolist(), "requested": ev.requested.tolist(), "returned": ev.returned.tolist(),
        "fd": ev.fd.tolist(), "errno": ev.errno.tolist(), "start_ns": ev.start_ns.tolist(),
        "end_ns": ev.end_ns.tolist(), "tid": ev.tid.tolist(),
    }
    rec: dict[str, Any] = {
        "pid": os.getpid(), "role": role, "start_ns": int(cap.start_ns or start_ns), "end_ns": int(cap.end_ns),
        "threads": [[t.tid, t.pthread_self, t.name] for t in cap.threads if t.nevents or t.dropped],
        "events": events, "counters": cap.records(), "dropped": int(cap.dropped),
    }
    if cap.untracked:
        rec["untracked"] = cap.untracked.to_dict()
    if fetches is not None:
        rec["fetches"] = {k: [int(f[i]) for f in fetches] for i, k in enumerate(FETCH_COLUMNS)}
        if worker_id is not None:
            rec["worker_id"] = int(worker_id)
    return rec


# ------------------------------------------------------------------ this process's window


def _begin() -> None:
    global _session, _session_start_ns, _spans
    if _session is None:
        _session_start_ns = time.time_ns()
        _session = begin_session()
        if _role == "worker":
            _spans = []     # after the session began: every span lies inside it


def _end() -> Capture | None:
    global _session, _spans, _ended_spans
    sess, _session = _session, None
    # before the session ends: every span kept ended inside it
    spans, _spans = _spans, None
    _ended_spans = spans if spans is not None else []
    if sess is None:
        return None
    cap = Capture()
    end_session(sess, cap)
    return cap


def _write_side_record(window: int, spool: str) -> str | None:
    """End this (child) process's session and write its record; the path, None if none."""
    cap = _end()
    if cap is None:
        return None
    path = os.path.join(spool, f"{window}.{os.getpid()}.json")
    rec = process_record(cap, _role, _session_start_ns, list(_ended_spans) if _role == "worker" else None,
                         _worker_id)
    body = json.dumps(rec, separators=(",", ":")).encode()
    atomic_write(path, lambda fh: fh.write(body))
    return path


# ------------------------------------------------------------------ forked children


def _before_fork() -> None:
    global _pending_pair
    if _installed:
        try:
            _pending_pair = socket.socketpair()
        except OSError:
            _pending_pair = None


def _after_fork_in_parent() -> None:
    global _pending_pair
    pair, _pending_pair = _pending_pair, None
    if pair is not None:
        pair[1].close()
        _channels.append(_Peer(pair[0]))


def _after_fork_in_child() -> None:
    global _pending_pair, _child_sock, _session, _role, _lock
    _lock = threading.Lock()
    pair, _pending_pair = _pending_pair, None
    for ch in _channels:
        ch.sock.close()
    _channels.clear()
    _close_listener()
    if _session is not None:
        forget(_session)    # the shim dropped the parent's sessions in the child
        _session = None
    if pair is None:
        return
    pair[0].close()
    _child_sock = pair[1]
    _role = "worker"
    try:
        pair[1].sendall(f"H {os.getpid()}\n".encode())
        if _window is not None:
            _begin()
        _register_exit_record()
        threading.Thread(target=_serve, args=(pair[1],), name="tb_iotrace-torch", daemon=True).start()
    except Exception as exc:
        log.warning("tb_iotrace: no I/O capture in forked pid %d: %s", os.getpid(), exc)


def _close_listener() -> None:
    global _listener, _control
    if _listener is not None:
        _listener.close()
    _listener, _control = None, None


def _read_window_file(control: str) -> tuple[int, str] | None:
    try:
        with open(os.path.join(control, "window"), encoding="utf-8") as fh:
            text = fh.read().strip()
    except OSError:
        return None
    number, _, spool = text.partition(" ")
    return (int(number), spool) if number.isdigit() and spool else None


def _write_window_file() -> None:
    if _control is None:
        return
    text = f"{_window[0]} {_window[1]}\n" if _window is not None else "none\n"
    atomic_write(os.path.join(_control, "window"), lambda fh: fh.write(text.encode()))


def _accept_pending() -> None:
    """Take the connections spawned/forkserver workers made since the last broadcast."""
    if _listener is None:
        return
    while True:
        try:
            conn, _ = _listener.accept()
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            return
        conn.setblocking(True)
        _channels.append(_Peer(conn))


class WorkerEntry:
    """The DataLoader worker function, wrapped: pickled by value into ``spawn``/``forkserver``
    workers with this process's control folder; a forked worker (already set up) goes
    straight to torch's function."""

    def __init__(self, control: str) -> None:
        self.control = control

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        real = _real_loop
        if real is None or isinstance(real, WorkerEntry):
            from torch.utils.data._utils import worker

            real = worker.__dict__["_worker_loop"]
            if isinstance(real, WorkerEntry):   # the worker's __main__ installed us at import
                real = _real_loop
        if _child_sock is None:
            _start_spawned(self.control)
        _time_fetches(args, kwargs)
        return real(*args, **kwargs)


def _start_spawned(control: str) -> None:
    """In a spawn/forkserver worker: enable, connect, record the current window, serve."""
    global _child_sock, _role, _window
    try:
        from tb_iotrace.recording import api

        api.enable()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(os.path.join(control, "ctl.sock"))
        sock.sendall(f"H {os.getpid()}\n".encode())
        _child_sock, _role = sock, "worker"
        with _lock:
            _window = _read_window_file(control)
            if _window is not None:
                _begin()
        import multiprocessing.util as util

        util.Finalize(None, _exit_record, exitpriority=100)
        threading.Thread(target=_serve, args=(sock,), name="tb_iotrace-torch", daemon=True).start()
    except Exception as exc:
        log.warning("tb_iotrace: no I/O capture in DataLoader worker pid %d: %s", os.getpid(), exc)


# ------------------------------------------------------------------ DataLoader fetch spans


FETCH_COLUMNS = ("start_ns", "end_ns", "tid", "samples")


def fetch_spans_unavailable() -> str | None:
    """Why DataLoader workers cannot time their fetches with this torch (None: they can)."""
    try:
        from torch.utils.data._utils import fetch
    except Exception as exc:   # noqa: BLE001 - any import failure means no spans
        return f"DataLoader fetch spans not recorded: torch.utils.data._utils.fetch not importable ({exc})"
    missing = [n for n in FETCHERS if not callable(getattr(getattr(fetch, n, None), "fetch", None))]
    if missing:
        import sys

        version = getattr(sys.modules.get("torch"), "__version__", "?")
        return (f"DataLoader fetch spans not recorded: torch {version} has no "
                + ", ".join(f"torch.utils.data._utils.fetch.{n}.fetch" for n in missing))
    return None


def _samples(data: Any, index: Any) -> int:
    try:
        return len(data)
    except TypeError:
        try:
            return len(index)
        except TypeError:
            return 1


def _wrap_fetch(real: Any, iterable: bool) -> Any:
    """``fetch`` timed while this worker records a window. ``samples``: the batch's index
    count (a map-style fetch returns all of them or raises); for an iterable dataset, the
    samples handed to ``collate_fn`` (its last batch may be short)."""
    def fetch(self: Any, possibly_batched_index: Any) -> Any:
        spans = _spans
        if spans is None:
            return real(self, possibly_batched_index)
        got: list[int] = []
        collate = None
        if iterable and getattr(self, "auto_collation", False):
            collate = self.collate_fn

            def counting(data: Any) -> Any:
                got.append(_samples(data, possibly_batched_index))
                return collate(data)
            self.collate_fn = counting
        start = time.time_ns()
        try:
            out = real(self, possibly_batched_index)
        finally:
            end = time.time_ns()
            if collate is not None:
                self.collate_fn = collate
        if _spans is spans:
            if iterable:
                n = got[0] if got else 1
            else:
                n = _samples(possibly_batched_index, None) if getattr(self, "auto_collation", False) else 1
            spans.append((start, end, threading.get_native_id(), n))
        return out
    fetch.__wrapped__ = real  # type: ignore[attr-defined]
    fetch.__tbio_wrapper__ = True  # type: ignore[attr-defined]
    return fetch


def _time_fetches(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """In a DataLoader worker, before torch's worker loop: note the worker's id and wrap the
    fetchers (this process's classes only). Never fails the worker."""
    global _worker_id
    if _fetch_note is not None or fetch_spans_unavailable() is not None:
        return
    try:
        wid = kwargs.get("worker_id", args[10] if len(args) > 10 else None)
        _worker_id = int(wid) if isinstance(wid, int) else None
        from torch.utils.data._utils import fetch

        for name in FETCHERS:
            cls = getattr(fetch, name)
            if not getattr(cls.fetch, "__tbio_wrapper__", False):
                cls.fetch = _wrap_fetch(cls.fetch, name == "_IterableDatasetFetcher")
    except Exception as exc:
        log.warning("tb_iotrace: DataLoader worker pid %d will not time its fetches: %s", os.getpid(), exc)


def _install_worker_entry() -> None:
    """Listen for spawned workers and put :class:`WorkerEntry` in torch's worker function."""
    global _control, _listener, _real_loop
    import importlib

    try:
        worker = importlib.import_module(WORKER_HOOK[0])
    except ImportError:
        worker = None
    current = worker.__dict__.get(WORKER_HOOK[1]) if worker is not None else None
    if current is None:
        _off.append(f"the spawn/forkserver worker hook is off ({'.'.join(WORKER_HOOK)} is missing in this "
                    "torch): DataLoader workers started with spawn or forkserver carry no I/O (forked "
                    "workers do)")
        return
    if isinstance(current, WorkerEntry):
        return
    control = tempfile.mkdtemp(prefix="tb_iotrace-torch-ctl-")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(os.path.join(control, "ctl.sock"))
    listener.listen(64)
    listener.setblocking(False)
    atexit.register(_remove_spool, control, os.getpid())
    _control, _listener, _real_loop = control, listener, current
    _write_window_file()
    setattr(worker, WORKER_HOOK[1], WorkerEntry(control))


def _exit_record() -> None:
    with _lock:
        win = _window
        if win is not None and _session is not None:
            try:
                _write_side_record(*win)
            except Exception as exc:
                log.warning("tb_iotrace: pid %d could not write its I/O record: %s", os.getpid(), exc)


def _register_exit_record() -> None:
    """Write the window's record when a ``multiprocessing`` child exits inside the window
    (it ends with ``os._exit``: atexit never runs, its finalizers do). The registry is
    cleared after this hook runs, hence the after-fork registration."""
    import sys

    util = sys.modules.get("multiprocessing.util")
    if util is None:
        return

    def register(_obj: object) -> None:
        util.Finalize(None, _exit_record, exitpriority=100)

    util.register_after_fork(_ExitHook, register)


class _ExitHook:
    """A weak-referenceable key for ``multiprocessing.util.register_after_fork``."""


def _serve(sock: socket.socket) -> None:
    """The child's thread: ``S`` begins recording the window, ``E`` ends it; both answered
    with the window's number."""
    global _window
    buf = b""
    while True:
        try:
            data = sock.recv(4096)
        except OSError:
            return
        if not data:
            return
        buf += data
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            parts = line.decode("utf-8", "replace").split(" ", 2)
            number = parts[1] if len(parts) > 1 else "0"
            reply = f"N {number}\n".encode()
            try:
                with _lock:
                    if parts[0] == "S" and len(parts) == 3:
                        _window = (int(parts[1]), parts[2])
                        _begin()
                        sock.sendall(f"R {number}\n".encode())
                    elif parts[0] == "E":
                        win, _window = _window, None
                        if win is not None and _write_side_record(*win):
                            reply = f"D {number}\n".encode()
                        sock.sendall(reply)
            except Exception as exc:
                log.warning("tb_iotrace: pid %d I/O capture: %s", os.getpid(), exc)
                if parts[0] == "E":
                    try:
                        sock.sendall(reply)
                    except OSError:
                        return


class _Peer:
    """The parent's end of one child's channel: the lines it sent, its pid once it said it."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = b""
        self.pid: int | None = None
        self.answers: set[str] = set()     # "R 3", "D 3": answers read and not yet awaited

    def name(self) -> str:
        return f"pid {self.pid}" if self.pid else "pid unknown"

    def read(self) -> bool:
        """Take what the child sent (the socket is readable); False at end-of-file."""
        try:
            data = self.sock.recv(4096)
        except OSError:
            data = b""
        if not data:
            return False
        self.buf += data
        while b"\n" in self.buf:
            line, self.buf = self.buf.split(b"\n", 1)
            kind, _, arg = line.decode("utf-8", "replace").partition(" ")
            if kind == "H" and arg.isdigit():
                self.pid = int(arg)
            elif kind in ("R", "D", "N"):
                self.answers.add(f"{'D' if kind == 'N' else kind} {arg}")
        return True

    def close(self) -> None:
        if self in _channels:
            _channels.remove(self)
        self.sock.close()


def _broadcast(msg: bytes) -> list[_Peer]:
    """Send ``msg`` to every live child; the channels it reached (dead ones are dropped)."""
    _accept_pending()
    reached = []
    for ch in list(_channels):
        try:
            ch.sock.sendall(msg)
            reached.append(ch)
        except OSError:
            ch.close()
    return reached


def _await_answers(channels: list[_Peer], answer: str, deadline: float) -> list[_Peer]:
    """Wait until each channel gave ``answer`` (e.g. ``"R 3"``; ``N`` counts as ``D``) or
    closed (a child that exited: its exit record, if any, is written), or the deadline; the
    channels still open that did not. Other lines (a late answer to an earlier message) are
    read and left aside. ``poll``: a training process may hold more than FD_SETSIZE files."""
    left = {ch.sock.fileno(): ch for ch in channels if ch.sock.fileno() >= 0}
    for fd, ch in list(left.items()):
        if answer in ch.answers:
            ch.answers.discard(answer)
            del left[fd]
    poller = select.poll()
    for fd in left:
        poller.register(fd, select.POLLIN)
    while left:
        timeout = deadline - time.monotonic()
        if timeout <= 0:
            break
        for fd, _ in poller.poll(max(1, int(timeout * 1000))):
            ch = left.get(fd)
            if ch is None:
                continue
            if not ch.read():
                poller.unregister(fd)
                del left[fd]
                ch.close()
            elif answer in ch.answers:
                ch.answers.discard(answer)
                poller.unregister(fd)
                del left[fd]
    return list(left.values())


def _pids_of(peers: list[_Peer]) -> str:
    return ", ".join(p.name() for p in peers)


# ------------------------------------------------------------------ the profiler's window


class _Window:
    """What a stopped window leaves for its handler."""

    def __init__(self, number: int, spool: str, main: dict[str, Any] | None, waiting: list[_Peer],
                 stop_ns: int, start_ns: int, late: dict[int, str], loaders: list[dict[str, Any]],
                 machine: dict[str, Any]) -> None:
        self.number = number
        self.spool = spool
        self.main = main
        self.waiting = waiting
        self.stop_ns = stop_ns
        self.start_ns = start_ns     # when the window's start was sent to the workers
        self.late = late             # pid -> name of the workers that did not begin in time
        self.loaders = loaders       # the DataLoaders iterated in the window (torch_loaders)
        self.machine = machine       # tb_iotrace.store.machine's record of this machine, at the stop


# The window now open: when its start was sent, and the workers that did not answer it in time.
_window_start_ns = 0
_late_start: dict[int, str] = {}


def _start_window(handler: "TraceHandler") -> None:
    global _window, _window_counter, _window_start_ns, _late_start
    with _lock:
        if _window is not None:
            return
        _window_counter += 1
        _window = (_window_counter, handler.spool())
        _write_window_file()
        # workers first, and waited for: the window is exact in every process (a worker
        # busy with a batch answers within the interpreter's switch interval)
        _window_start_ns = time.time_ns()
        started = _broadcast(f"S {_window[0]} {_window[1]}\n".encode())
        late = _await_answers(started, f"R {_window[0]}", time.monotonic() + handler.start_wait_s)
        _late_start = {p.pid or 0: p.name() for p in late}
        if late:
            log.warning("tb_iotrace: DataLoader worker(s) %s did not begin recording within %g s; "
                        "the window goes on, they record from when they do", _pids_of(late),
                        handler.start_wait_s)
        _loaders_started()
        _begin()


def _stop_window(handler: "TraceHandler") -> None:
    global _window
    with _lock:
        if _window is None:
            return
        number, spool = _window
        cap = _end()
        main = process_record(cap, "main", _session_start_ns) if cap is not None else None
        machine = cap.machine if cap is not None and cap.machine else machine_facts()
        _window = None
        _write_window_file()
        waiting = _broadcast(f"E {number}\n".encode())
        handler.pending = _Window(number, spool, main, waiting, time.time_ns(), _window_start_ns,
                                  dict(_late_start), _loaders_stopped(), machine)


def _loaders_started() -> None:
    try:
        torch_loaders.window_started()
    except Exception as exc:   # the settings are advice's details: never fail the window for them
        log.warning("tb_iotrace: DataLoader settings not noted: %s", exc)


def _loaders_stopped() -> list[dict[str, Any]]:
    try:
        return torch_loaders.window_stopped()
    except Exception as exc:
        log.warning("tb_iotrace: DataLoader settings not noted: %s", exc)
        return []


def _pytorch_facts(loaders: list[dict[str, Any]], machine: dict[str, Any]) -> dict[str, Any]:
    """The ``pytorch`` entry of the trace's ``tb_iotrace`` record: torch's version, the cores
    this process may use (the ``machine`` record's ``cpus``) and the DataLoaders the window
    iterated (:func:`torch_loaders.window_stopped`)."""
    import sys

    torch = sys.modules.get("torch")
    return {"version": str(getattr(torch, "__version__", "")), "cpus": int(machine.get("cpus") or 0),
            "dataloaders": loaders}


def _wrap(real: Any, action: Any) -> Any:
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        handler = getattr(self, "on_trace_ready", None)
        if not isinstance(handler, TraceHandler):
            return real(self, *args, **kwargs)
        if action is _start_window:
            try:
                action(handler)
            except Exception as exc:
                handler.note(f"I/O capture not started: {exc}")
            return real(self, *args, **kwargs)
        try:
            return real(self, *args, **kwargs)
        finally:
            try:
                action(handler)
            except Exception as exc:
                handler.note(f"I/O capture not stopped cleanly: {exc}")
    wrapper.__wrapped__ = real  # type: ignore[attr-defined]
    wrapper.__tbio_wrapper__ = True  # type: ignore[attr-defined]
    return wrapper


# The private names of torch this module wraps (torch_loaders has its own). A torch release that
# renames one turns that hook off: the window hook's absence makes trace_handler write PyTorch's
# trace without I/O, the others lose what they alone record; every trace's notes say which hook is
# off and why (hooks_off()). Tests play a renamed release by changing these.
WINDOW_HOOK = ("torch.profiler.profiler", "_KinetoProfile", ("start_trace", "stop_trace"))
WORKER_HOOK = ("torch.utils.data._utils.worker", "_worker_loop")
_off: list[str] = []


def _torch_version() -> str:
    import sys

    return str(getattr(sys.modules.get("torch"), "__version__", "?"))


def _window_class() -> Any:
    """The class whose start/stop this module wraps, None when this torch lacks a name."""
    import importlib

    module, cls_name, methods = WINDOW_HOOK
    try:
        cls = getattr(importlib.import_module(module), cls_name)
    except (ImportError, AttributeError):
        return None
    return cls if all(callable(getattr(cls, m, None)) for m in methods) else None


def install() -> None:
    """Hook torch.profiler's window start/stop and the fork of workers (idempotent). Raises when
    this torch lacks the window's names (nothing could be recorded); a missing DataLoader name
    turns only its own hook off (:func:`hooks_off`)."""
    global _installed
    with _lock:
        if _installed:
            return
        cls = _window_class()
        if cls is None:
            module, cls_name, methods = WINDOW_HOOK
            names = " / ".join(f"{module}.{cls_name}.{m}" for m in methods)
            raise RuntimeError(f"torch {_torch_version()}: the profiler window hook is off ({names} is "
                               "missing in this torch), so no I/O is recorded")
        start, stop = WINDOW_HOOK[2]
        if not getattr(getattr(cls, start), "__tbio_wrapper__", False):
            setattr(cls, start, _wrap(getattr(cls, start), _start_window))
            setattr(cls, stop, _wrap(getattr(cls, stop), _stop_window))
        os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent,
                            after_in_child=_after_fork_in_child)
        _installed = True
        checkpoint_hooks.install()
        try:
            torch_loaders.install()
        except Exception as exc:
            _off.append(f"the DataLoader settings hook is off ({exc})")
        try:
            _install_worker_entry()
        except Exception as exc:
            _off.append(f"the spawn/forkserver worker hook is off ({exc}): DataLoader workers started with "
                        "spawn or forkserver carry no I/O")
        for why in hooks_off():
            log.warning("tb_iotrace: torch %s: %s", _torch_version(), why)
        _note_fetch_spans()


def hooks_off() -> list[str]:
    """Why each hook this torch turned off is off (empty when every hook is on); each trace's
    notes carry them."""
    return _off + torch_loaders.off()


def _note_fetch_spans() -> None:
    global _fetch_note
    _fetch_note = fetch_spans_unavailable()
    if _fetch_note is not None:
        log.warning("tb_iotrace: %s", _fetch_note)


def installed() -> bool:
    return _installed


def _remove_spool(path: str, owner: int) -> None:
    if os.getpid() == owner:     # a forked child exiting normally leaves its parent's folder
        shutil.rmtree(path, ignore_errors=True)


def _copy(src: str, dst: str) -> None:
    """PyTorch's export as it is (gzip-compressed for a ``.gz`` name)."""
    if dst.endswith(".gz"):
        import gzip

        with open(src, "rb") as fin, gzip.open(dst, "wb") as fout:
            shutil.copyfileobj(fin, fout)
    else:
        shutil.copyfile(src, dst)


def _mark_late(procs: list[dict[str, Any]], win: _Window, notes: list[str]) -> None:
    """Count and say how late the workers that missed the window's start began recording."""
    for rec in procs:
        pid = int(rec.get("pid", 0))
        if rec.get("role") != "worker" or pid not in win.late:
            continue
        late_ns = int(rec["start_ns"]) - win.start_ns
        rec["late_start_ns"] = late_ns
        notes.append(f"DataLoader worker pid {pid} began recording {late_ns / 1e9:.3f} s after the window "
                     "started (the machine did not run it sooner): its I/O before then is not in this trace")
    for pid, name in win.late.items():
        if not pid or not any(int(r.get("pid", 0)) == pid for r in procs):
            notes.append(f"DataLoader worker {name} did not answer the window's start in time and left "
                         "no record of the window")


class TraceHandler:
    """``on_trace_ready`` callable: PyTorch's ``tensorboard_trace_handler`` output with the
    window's I/O added (see :func:`tb_iotrace.store.kineto.add_io`)."""

    def __init__(self, dir_name: str, worker_name: str | None = None, use_gzip: bool = False,
                 wait_s: float = WAIT_S, start_wait_s: float = START_WAIT_S) -> None:
        self.dir_name = os.fspath(dir_name)
        # a URL (s3://, gs://): each trace is written locally, then uploaded whole; a scheme
        # without its client is an error now, before the training starts
        self.url: str | None = None
        if remote.is_url(self.dir_name):
            remote.filesystem(self.dir_name)
            self.url = self.dir_name.rstrip("/")
        else:
            self.dir_name = remote.local_path(self.dir_name)
        self.worker_name = worker_name
        self.use_gzip = use_gzip
        self.wait_s = wait_s
        self.start_wait_s = start_wait_s
        self.pending: _Window | None = None
        self.notes: list[str] = []
        self.unavailable: str | None = None   # why this process records no I/O at all
        self.written: list[str] = []       # trace files written, in order
        self._spool: str | None = None

    def spool(self) -> str:
        if self._spool is None or not os.path.isdir(self._spool):
            self._spool = tempfile.mkdtemp(prefix="tb_iotrace-torch-")
            atexit.register(_remove_spool, self._spool, os.getpid())
        return self._spool

    def note(self, text: str) -> None:
        self.notes.append(text)
        log.warning("tb_iotrace: %s", text)

    def _file_name(self) -> str:
        if not self.worker_name:
            self.worker_name = f"{socket.gethostname()}_{os.getpid()}"
        name = f"{safe_component(self.worker_name)}.{time.time_ns()}.pt.trace.json"
        return name + ".gz" if self.use_gzip else name

    def __call__(self, prof: Any) -> None:
        if self.url is None:
            os.makedirs(self.dir_name, exist_ok=True)
            out = os.path.join(self.dir_name, self._file_name())
        else:
            out = os.path.join(self.spool(), self._file_name())
        try:
            self._write(prof, out)
        finally:
            if self.url is not None and os.path.exists(out):
                self._upload(out)

    def _upload(self, out: str) -> None:
        """Send a trace written in the spool to the URL; on failure keep it in a named folder
        and say so (the training goes on)."""
        url = remote.join(self.url or "", os.path.basename(out))
        try:
            remote.upload_file(out, url)
        except remote.RemoteError as exc:
            keep = remote.cache_root().parent / "staging" / "torch"
            try:
                keep.mkdir(parents=True, exist_ok=True)
                kept = str(keep / os.path.basename(out))
                shutil.move(out, kept)
            except OSError:
                kept = out
            log.warning("tb_iotrace: the trace was not uploaded (%s); it is kept in %s", exc, kept)
            self.written = [kept if w == out else w for w in self.written]
            return
        os.unlink(out)
        self.written = [url if w == out else w for w in self.written]

    def _write(self, prof: Any, out: str) -> None:
        win, self.pending = self.pending, None
        notes, self.notes = self.notes, []
        if self.unavailable:
            notes.append(self.unavailable)
        elif _fetch_note is not None:
            notes.append(_fetch_note)
        notes.extend(f"torch {_torch_version()}: {why}" for why in hooks_off())
        procs: list[dict[str, Any]] = []
        extra: dict[str, Any] = {}
        if win is not None:
            missing = _await_answers(win.waiting, f"D {win.number}", time.monotonic() + self.wait_s)
            if win.main is not None:
                procs.append(win.main)
            procs.extend(self._side_records(win, notes))
            extra["window_start_ns"] = win.start_ns
            extra["pytorch"] = _pytorch_facts(win.loaders, win.machine)
            extra["machine"] = win.machine
            _mark_late(procs, win, notes)
            if missing:
                extra["workers_missing"] = [p.pid or 0 for p in missing]
                notes.append(f"DataLoader worker(s) {_pids_of(missing)} did not hand over their I/O within "
                             f"{self.wait_s:g} s of the window's end: their I/O is missing from this trace")
        else:
            extra["machine"] = machine_facts()
            if not self.unavailable:
                notes.append("no I/O recorded for this window (its start was not seen)")
        tmp = os.path.join(self.spool(), f"export.{os.getpid()}.json")
        prof.export_chrome_trace(tmp)
        try:
            try:
                trace = read_trace(tmp)
            except KinetoTraceError as exc:   # never lose PyTorch's own trace
                log.warning("tb_iotrace: cannot add I/O to the trace: %s", exc)
                _copy(tmp, out)
                return
            checkpoint_hooks.annotate(trace)
            write_trace(out, add_io(trace, procs, notes=notes, extra=extra))
            self.written.append(out)
        finally:
            try:
                os.unlink(tmp)
            except OSError:
                pass

    def _side_records(self, win: _Window, notes: list[str]) -> list[dict[str, Any]]:
        """The workers' records of ``win``; one of an earlier window (handed over after its
        trace was written) is reported and dropped."""
        recs = []
        prefix = f"{win.number}."
        for name in sorted(os.listdir(win.spool)):
            if not name.endswith(".json") or name.startswith("export."):
                continue
            path = os.path.join(win.spool, name)
            try:
                if not name.startswith(prefix):
                    number, _, pid = name[:-len(".json")].partition(".")
                    notes.append(f"DataLoader worker pid {pid} handed over its I/O of an earlier window "
                                 f"({number}) after that window's trace was written; dropped")
                    continue
                with open(path, "rb") as fh:
                    recs.append(json.load(fh))
            except (OSError, ValueError) as exc:
                notes.append(f"worker record {name} unreadable: {exc}")
            finally:
                try:
                    os.unlink(path)
                except OSError:
                    pass
        return recs
