"""The protocol between a process and its DataLoader workers (tb_iotrace.recording.pytorch.protocol):
the control folder's ``window`` file as the parent writes it and a spawned worker reads it, and
one exchange of lines over a real socket pair: the worker's hello names its pid, an ``E`` with no
window recording is answered ``N`` (counted as the hand-over ``D``), and a worker that closes its
end is not waited for."""
from __future__ import annotations

import os
import socket
import threading
import time

from tb_iotrace.recording.pytorch import protocol, state


def test_window_file_round_trip(monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(state, "control", str(tmp_path))
    monkeypatch.setattr(state, "window", (7, "/spool/dir with space"))
    protocol.write_window_file()
    assert (tmp_path / "window").read_text() == "7 /spool/dir with space\n"
    assert protocol.read_window_file(str(tmp_path)) == (7, "/spool/dir with space")
    monkeypatch.setattr(state, "window", None)
    protocol.write_window_file()
    assert (tmp_path / "window").read_text() == "none\n"
    assert protocol.read_window_file(str(tmp_path)) is None
    (tmp_path / "window").write_text("x7 /spool\n")
    assert protocol.read_window_file(str(tmp_path)) is None
    assert protocol.read_window_file(str(tmp_path / "missing")) is None


def test_write_window_file_without_control_folder_writes_nothing(monkeypatch, tmp_path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(state, "control", None)
    monkeypatch.setattr(state, "window", (1, "/s"))
    protocol.write_window_file()
    assert os.listdir(tmp_path) == []


def test_end_without_window_answered_and_closed_worker_not_awaited(monkeypatch) -> None:
    monkeypatch.setattr(state, "channels", [])
    monkeypatch.setattr(state, "listener", None)
    monkeypatch.setattr(state, "window", None)
    monkeypatch.setattr(state, "session", None)
    parent, child = socket.socketpair()
    peer = protocol.Peer(parent)
    state.channels.append(peer)
    child.sendall(f"H {os.getpid()}\n".encode())
    worker = threading.Thread(target=protocol.serve, args=(child,), daemon=True)
    worker.start()
    reached = protocol.broadcast(b"E 3\n")
    assert reached == [peer]
    assert protocol.await_answers(reached, "D 3", time.monotonic() + 60) == []
    assert peer.pid == os.getpid() and protocol.pids_of([peer]) == f"pid {os.getpid()}"
    child.shutdown(socket.SHUT_RDWR)    # the worker is gone: its end of file ends the wait
    worker.join(60)
    assert not worker.is_alive()
    assert protocol.await_answers([peer], "D 4", time.monotonic() + 60) == []
    assert state.channels == []          # its channel was dropped
    child.close()
