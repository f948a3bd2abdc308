"""The protocol between a process and its DataLoader workers, both ends in one place: the lines
(``H``/``S``/``R``/``E``/``D``/``N``, see the package's docstring): the parent's peers, broadcast
and answers, the worker's serving loop and its record at exit; and the control folder a
``spawn``/``forkserver`` worker finds the main process by: the socket it connects to
(:data:`CONTROL_SOCKET`) and the ``window`` file it reads the current window from (written by the
parent, :func:`write_window_file`; read by the worker, :func:`read_window_file`)."""
from __future__ import annotations

import os
import select
import socket
import time

from tb_iotrace.base.atomic import atomic_write
from tb_iotrace.recording.pytorch import state
from tb_iotrace.recording.pytorch.state import log
from tb_iotrace.recording.pytorch.record import begin, end, write_side_record


CONTROL_SOCKET = "ctl.sock"     # in the control folder: where spawned workers connect


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


def close_listener() -> None:
    if state.listener is not None:
        state.listener.close()
    state.listener, state.control = None, None


def accept_pending() -> None:
    """Take the connections spawned/forkserver workers made since the last broadcast."""
    if state.listener is None:
        return
    while True:
        try:
            conn, _ = state.listener.accept()
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            return
        conn.setblocking(True)
        state.channels.append(Peer(conn))


def exit_record() -> None:
    with state.lock:
        win = state.window
        if win is not None and state.session is not None:
            try:
                write_side_record(*win)
            except Exception as exc:
                log.warning("tb_iotrace: pid %d could not write its I/O record: %s", os.getpid(), exc)


def register_exit_record() -> None:
    """Write the window's record when a ``multiprocessing`` child exits inside the window
    (it ends with ``os._exit``: atexit never runs, its finalizers do). The registry is
    cleared after this hook runs, hence the after-fork registration."""
    import sys

    util = sys.modules.get("multiprocessing.util")
    if util is None:
        return

    def register(_obj: object) -> None:
        util.Finalize(None, exit_record, exitpriority=100)

    util.register_after_fork(ExitHook, register)


class ExitHook:
    """A weak-referenceable key for ``multiprocessing.util.register_after_fork``."""


def serve(sock: socket.socket) -> None:
    """The child's thread: ``S`` begins recording the window, ``E`` ends it; both answered
    with the window's number."""
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
                with state.lock:
                    if parts[0] == "S" and len(parts) == 3:
                        state.window = (int(parts[1]), parts[2])
                        begin()
                        sock.sendall(f"R {number}\n".encode())
                    elif parts[0] == "E":
                        win, state.window = state.window, None
                        if win is not None and write_side_record(*win):
                            reply = f"D {number}\n".encode()
                        sock.sendall(reply)
            except Exception as exc:
                log.warning("tb_iotrace: pid %d I/O capture: %s", os.getpid(), exc)
                if parts[0] == "E":
                    try:
                        sock.sendall(reply)
                    except OSError:
                        return


class Peer:
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
        if self in state.channels:
            state.channels.remove(self)
        self.sock.close()


def broadcast(msg: bytes) -> list[Peer]:
    """Send ``msg`` to every live child; the channels it reached (dead ones are dropped)."""
    accept_pending()
    reached = []
    for ch in list(state.channels):
        try:
            ch.sock.sendall(msg)
            reached.append(ch)
        except OSError:
            ch.close()
    return reached


def await_answers(channels: list[Peer], answer: str, deadline: float) -> list[Peer]:
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


def pids_of(peers: list[Peer]) -> str:
    return ", ".join(p.name() for p in peers)
