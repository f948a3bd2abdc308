"""How a DataLoader worker joins the recording: a forked one from the socket pair made at its
fork (:func:`after_fork_in_child`), a ``spawn``/``forkserver`` one by connecting to the main
process's listener (:func:`start_spawned`, run by :class:`WorkerEntry`, torch's worker function
wrapped and pickled into each worker); either then serves the line protocol
(:func:`tb_iotrace.recording.pytorch.protocol.serve`) on a daemon thread, ``tb_iotrace-torch``."""
from __future__ import annotations

import os
import socket
import threading
from typing import Any

from tb_iotrace.recording.session import forget
from tb_iotrace.recording.pytorch import state
from tb_iotrace.recording.pytorch.state import log
from tb_iotrace.recording.pytorch.record import begin
from tb_iotrace.recording.pytorch.worker.fetch import time_fetches
from tb_iotrace.recording.pytorch.protocol import (CONTROL_SOCKET, close_listener, exit_record, read_window_file,
                                                   register_exit_record, serve)


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
        sock.connect(os.path.join(control, CONTROL_SOCKET))
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
