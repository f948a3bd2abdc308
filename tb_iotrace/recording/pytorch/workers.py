"""DataLoader workers: forked ones get a socket pair at fork, spawned ones (``spawn``/``forkserver``) connect to this process's listener through :class:`WorkerEntry`, torch's worker function replaced."""
from __future__ import annotations

import atexit
import os
import shutil
import socket
import tempfile
import threading
from typing import Any

from tb_iotrace.base.atomic import atomic_write
from tb_iotrace.recording.session import forget
from tb_iotrace.recording.pytorch import state
from tb_iotrace.recording.pytorch.state import log
from tb_iotrace.recording.pytorch.record import begin
from tb_iotrace.recording.pytorch.worker.fetch import time_fetches
from tb_iotrace.recording.pytorch.protocol import Peer, close_listener, exit_record, register_exit_record, serve


def before_fork() -> None:
    if state.installed:
        try:
            state.pending_pair = socket.socketpair()
        except OSError:
            state.pending_pair = None


def after_fork_in_parent() -> None:
    pair, state.pending_pair = state.pending_pair, None
    if pair is not None:
        pair[1].close()
        state.channels.append(Peer(pair[0]))


def after_fork_in_child() -> None:
    state.lock = threading.Lock()
    pair, state.pending_pair = state.pending_pair, None
    for ch in state.channels:
        ch.sock.close()
    state.channels.clear()
    close_listener()
    if state.session is not None:
        forget(state.session)    # the shim dropped the parent's sessions in the child
        state.session = None
    if pair is None:
        return
    pair[0].close()
    state.child_sock = pair[1]
    state.role = "worker"
    try:
        pair[1].sendall(f"H {os.getpid()}\n".encode())
        if state.window is not None:
            begin()
        register_exit_record()
        threading.Thread(target=serve, args=(pair[1],), name="tb_iotrace-torch", daemon=True).start()
    except Exception as exc:
        log.warning("tb_iotrace: no I/O capture in forked pid %d: %s", os.getpid(), exc)


def read_window_file(control: str) -> tuple[int, str] | None:
    try:
        with open(os.path.join(control, "window"), encoding="utf-8") as fh:
            text = fh.read().strip()
    except OSError:
        return None
    number, _, spool = text.partition(" ")
    return (int(number), spool) if number.isdigit() and spool else None


def write_window_file() -> None:
    if state.control is None:
        return
    text = f"{state.window[0]} {state.window[1]}\n" if state.window is not None else "none\n"
    atomic_write(os.path.join(state.control, "window"), lambda fh: fh.write(text.encode()))


class WorkerEntry:
    """The DataLoader worker function, wrapped: pickled by value into ``spawn``/``forkserver``
    workers with this process's control folder; a forked worker (already set up) goes
    straight to torch's function."""

    def __init__(self, control: str) -> None:
        self.control = control

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        real = state.real_loop
        if real is None or isinstance(real, WorkerEntry):
            from torch.utils.data._utils import worker

            real = worker.__dict__["_worker_loop"]
            if isinstance(real, WorkerEntry):   # the worker's __main__ installed us at import
                real = state.real_loop
        if state.child_sock is None:
            start_spawned(self.control)
        time_fetches(args, kwargs)
        return real(*args, **kwargs)


def start_spawned(control: str) -> None:
    """In a spawn/forkserver worker: enable, connect, record the current window, serve."""
    try:
        from tb_iotrace.recording import api

        api.enable()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(os.path.join(control, "ctl.sock"))
        sock.sendall(f"H {os.getpid()}\n".encode())
        state.child_sock, state.role = sock, "worker"
        with state.lock:
            state.window = read_window_file(control)
            if state.window is not None:
                begin()
        import multiprocessing.util as util

        util.Finalize(None, exit_record, exitpriority=100)
        threading.Thread(target=serve, args=(sock,), name="tb_iotrace-torch", daemon=True).start()
    except Exception as exc:
        log.warning("tb_iotrace: no I/O capture in DataLoader worker pid %d: %s", os.getpid(), exc)


def install_worker_entry() -> None:
    """Listen for spawned workers and put :class:`WorkerEntry` in torch's worker function."""
    import importlib

    try:
        worker = importlib.import_module(state.WORKER_HOOK[0])
    except ImportError:
        worker = None
    current = worker.__dict__.get(state.WORKER_HOOK[1]) if worker is not None else None
    if current is None:
        state.off.append(f"the spawn/forkserver worker hook is off ({'.'.join(state.WORKER_HOOK)} is missing in this "
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
    atexit.register(remove_spool, control, os.getpid())
    state.control, state.listener, state.real_loop = control, listener, current
    write_window_file()
    setattr(worker, state.WORKER_HOOK[1], WorkerEntry(control))


def remove_spool(path: str, owner: int) -> None:
    if os.getpid() == owner:     # a forked child exiting normally leaves its parent's folder
        shutil.rmtree(path, ignore_errors=True)
