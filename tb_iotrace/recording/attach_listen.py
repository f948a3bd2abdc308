"""The control channel ``tb-iotrace run`` leaves in every process it starts, so that
``tb-iotrace attach`` gets in with no ptrace (a container without ``CAP_SYS_PTRACE``, Yama's
``ptrace_scope=3``, no gdb).

A daemon thread (``tb_iotrace-attach-listen``) looks every :data:`POLL_S` seconds for the file
``<tmp>/tb_iotrace-attach-<pid>/channel`` that ``attach`` writes into its control folder; it takes
the file (renames it, so one request is served once) and starts the agent
(:func:`tb_iotrace.recording.attach_agent.start`) with the control folder and the request file the
file names (a child's channel names its main process's control folder). A forked child
(a DataLoader worker) gets a listener of its own. Idle, the thread costs one ``stat`` a poll.
"""
from __future__ import annotations

import os
import tempfile
import threading

__all__ = ["CHANNEL", "POLL_S", "channel_path", "channel_prefix", "listen"]

POLL_S = 0.25
CHANNEL = "channel"
_started_in: int | None = None


def channel_prefix() -> str:
    """The path prefix of every process's control folder (``<tmp>/tb_iotrace-attach-``)."""
    return os.path.join(tempfile.gettempdir(), "tb_iotrace-attach-")


def channel_path(pid: int) -> str:
    return os.path.join(channel_prefix() + str(pid), CHANNEL)


def _serve() -> None:
    stop = threading.Event()
    while not stop.wait(POLL_S):
        path = channel_path(os.getpid())
        if not os.path.exists(path):
            continue
        taken = path + ".taken"
        try:
            os.replace(path, taken)
            try:
                with open(taken, encoding="utf-8") as fh:
                    ctrl, request = fh.read().split("\n")[:2]
            finally:
                os.unlink(taken)     # a malformed request leaves nothing behind either
        except (OSError, ValueError):
            continue
        from tb_iotrace.recording import attach_agent

        attach_agent.start(ctrl, request)


def listen() -> None:
    """Start this process's listener (once per process; again in each forked child)."""
    global _started_in
    if _started_in == os.getpid():
        return
    first = _started_in is None
    _started_in = os.getpid()
    threading.Thread(target=_serve, name="tb_iotrace-attach-listen", daemon=True).start()
    if first:
        os.register_at_fork(after_in_child=listen)
