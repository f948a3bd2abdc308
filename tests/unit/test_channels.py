"""The main process's ends of its DataLoader workers' channels
(tb_iotrace.recording.pytorch.parent.channels): the socket pair made at a fork leaves the parent one
end as a peer; the spawn listener puts a WorkerEntry in the worker function with a control folder a
spawned worker can reach (its socket and window file) and removes the folder only in the process that
made it; a missing worker function turns the hook off with a note; and the entry a spawned worker
receives unpickles in a fresh interpreter from its module's path."""
from __future__ import annotations

import os
import pickle
import socket
import subprocess
import sys
import types
from pathlib import Path

from tb_iotrace.recording.pytorch import protocol, state
from tb_iotrace.recording.pytorch.parent import channels
from tb_iotrace.recording.pytorch.worker.startup import WorkerEntry


def test_fork_pair_leaves_the_parent_one_peer(monkeypatch) -> None:
    monkeypatch.setattr(state, "installed", True)
    monkeypatch.setattr(state, "channels", [])
    monkeypatch.setattr(state, "pending_pair", None)
    channels.before_fork()
    pair = state.pending_pair
    assert pair is not None
    channels.after_fork_in_parent()
    assert state.pending_pair is None
    assert [p.sock for p in state.channels] == [pair[0]]
    assert pair[1].fileno() == -1        # the child's end is closed here
    pair[0].close()


def test_not_installed_makes_no_pair(monkeypatch) -> None:
    monkeypatch.setattr(state, "installed", False)
    monkeypatch.setattr(state, "channels", [])
    monkeypatch.setattr(state, "pending_pair", None)
    channels.before_fork()
    channels.after_fork_in_parent()
    assert state.pending_pair is None and state.channels == []


def test_worker_entry_installed_with_a_reachable_control_folder(monkeypatch) -> None:
    real = lambda *a, **k: None   # noqa: E731 - torch's worker function, played
    fake = types.ModuleType("tbio_test_worker_mod")
    fake._worker_loop = real
    monkeypatch.setitem(sys.modules, fake.__name__, fake)
    monkeypatch.setattr(state, "WORKER_HOOK", (fake.__name__, "_worker_loop"))
    for name in ("control", "listener", "real_loop", "window"):
        monkeypatch.setattr(state, name, None)
    monkeypatch.setattr(state, "off", [])
    channels.install_worker_entry()
    try:
        entry = fake._worker_loop
        assert isinstance(entry, WorkerEntry) and entry.control == state.control
        assert state.real_loop is real and state.off == []
        assert protocol.read_window_file(state.control) is None     # no window yet
        assert (Path(state.control) / "window").read_text() == "none\n"
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(os.path.join(state.control, protocol.CONTROL_SOCKET))
        listener = state.listener
        monkeypatch.setattr(state, "channels", [])
        protocol.accept_pending()
        assert len(state.channels) == 1
        state.channels[0].sock.close()
        s.close()
        channels.install_worker_entry()      # again: already installed, nothing new
        assert state.listener is listener and fake._worker_loop is entry
        channels.remove_spool(state.control, os.getpid() + 1)    # not the owner: kept
        assert os.path.isdir(state.control)
    finally:
        state.listener.close()
        channels.remove_spool(state.control, os.getpid())
    assert not os.path.exists(state.control)


def test_missing_worker_function_turns_the_hook_off(monkeypatch) -> None:
    monkeypatch.setattr(state, "WORKER_HOOK", ("tbio_no_such_module_here", "_worker_loop"))
    monkeypatch.setattr(state, "off", [])
    monkeypatch.setattr(state, "listener", None)
    channels.install_worker_entry()
    assert state.listener is None
    assert len(state.off) == 1 and "spawn/forkserver worker hook is off" in state.off[0]


def test_worker_entry_unpickles_in_a_fresh_interpreter(tmp_path) -> None:
    blob = pickle.dumps(WorkerEntry(str(tmp_path)))
    code = ("import pickle, sys; e = pickle.loads(sys.stdin.buffer.read()); "
            "print(type(e).__module__, type(e).__name__, e.control)")
    out = subprocess.run([sys.executable, "-c", code], input=blob, capture_output=True, timeout=300, check=True)
    assert out.stdout.decode().split() == ["tb_iotrace.recording.pytorch.worker.startup", "WorkerEntry", str(tmp_path)]
