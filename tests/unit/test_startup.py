"""How a DataLoader worker joins the recording (tb_iotrace.recording.pytorch.worker.startup), the
parts a unit test can reach in one process (real forks and spawned workers:
tests/integration/test_torch_fetch_spans.py, test_torch_profiler.py): a forked worker, already set
up, goes straight to torch's worker function; a spawned worker that cannot reach the main process
says so and still runs (never fails the job); a fork with no channel pair keeps nothing of the
parent's channels, listener or session."""
from __future__ import annotations

import logging
import socket

from tb_iotrace.recording.pytorch import protocol, state
from tb_iotrace.recording.pytorch.worker import startup


def test_forked_worker_goes_straight_to_torchs_function(monkeypatch) -> None:
    calls = []

    def real(*args, **kwargs):
        calls.append((args, kwargs))
        return "ran"

    monkeypatch.setattr(state, "real_loop", real)
    monkeypatch.setattr(state, "child_sock", object())     # set up at fork
    monkeypatch.setattr(state, "fetch_note", "no fetch spans here")   # leave torch's fetchers alone
    monkeypatch.setattr(startup, "start_spawned", lambda control: calls.append(("spawned", control)))
    assert startup.WorkerEntry("/unused")(1, 2, worker_id=3) == "ran"
    assert calls == [((1, 2), {"worker_id": 3})]


def test_spawned_worker_that_cannot_connect_says_so_and_runs(shim, monkeypatch, tmp_path, caplog) -> None:
    monkeypatch.setattr(state, "child_sock", None)
    monkeypatch.setattr(state, "role", "main")
    with caplog.at_level(logging.WARNING, logger="tb_iotrace"):
        startup.start_spawned(str(tmp_path))      # no socket in this control folder
    assert state.child_sock is None and state.role == "main"
    assert any("no I/O capture in DataLoader worker" in r.getMessage() for r in caplog.records)


def test_fork_without_a_pair_keeps_nothing_of_the_parent(monkeypatch) -> None:
    a, b = socket.socketpair()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    monkeypatch.setattr(state, "lock", state.lock)
    monkeypatch.setattr(state, "pending_pair", None)
    monkeypatch.setattr(state, "channels", [protocol.Peer(a)])
    monkeypatch.setattr(state, "listener", listener)
    monkeypatch.setattr(state, "control", "/parent/control")
    monkeypatch.setattr(state, "session", None)
    monkeypatch.setattr(state, "role", "main")
    startup.after_fork_in_child()
    assert state.channels == [] and a.fileno() == -1
    assert state.listener is None and state.control is None and listener.fileno() == -1
    assert state.role == "main"
    b.close()
