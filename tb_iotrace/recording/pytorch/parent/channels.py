"""The main process's ends of its DataLoader workers' channels: a socket pair made at each fork
(:func:`before_fork`, :func:`after_fork_in_parent`; the child keeps the other end,
:mod:`tb_iotrace.recording.pytorch.worker.startup`), and for ``spawn``/``forkserver`` workers a
listening socket in a control folder, with :class:`WorkerEntry` put in torch's worker function
(:func:`install_worker_entry`); the spool and control folders removed at exit by the process
that made them (:func:`remove_spool`)."""
from __future__ import annotations

import atexit
import os
import shutil
import socket
import tempfile

from tb_iotrace.recording.pytorch import state
from tb_iotrace.recording.pytorch.protocol import CONTROL_SOCKET, Peer, write_window_file
from tb_iotrace.recording.pytorch.worker.startup import WorkerEntry


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
    listener.bind(os.path.join(control, CONTROL_SOCKET))
    listener.listen(64)
    listener.setblocking(False)
    atexit.register(remove_spool, control, os.getpid())
    state.control, state.listener, state.real_loop = control, listener, current
    write_window_file()
    setattr(worker, state.WORKER_HOOK[1], WorkerEntry(control))


def remove_spool(path: str, owner: int) -> None:
    if os.getpid() == owner:     # a forked child exiting normally leaves its parent's folder
        shutil.rmtree(path, ignore_errors=True)
