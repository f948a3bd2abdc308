"""A ``torch.profiler`` window's start and stop (tb_iotrace.recording.pytorch.parent.profiler_window),
with DataLoader workers played over real socket pairs: a window is opened once (numbered 1, 2, ...
in turn), its ``S``/``E`` lines reach every live worker and the control folder's ``window`` file
follows it; a worker that does not answer the start is named late and the window goes on; one that
is gone is dropped, not waited for; the stopped window handed to its handler carries what it needs
(number, spool, waiting workers, late ones, loaders, the main record and the machine); DataLoader
notes that fail never fail the window; and the late workers' records and notes are as their start
times make necessary. The native session is played here (tests/unit/test_record.py and
tests/unit/test_parent_hooks.py run the real one)."""
from __future__ import annotations

import logging
import socket
import sys
import threading
import time
import types
from pathlib import Path
from typing import Any

import pytest

from tb_iotrace.recording.pytorch import state
from tb_iotrace.recording.pytorch.parent import loaders as torch_loaders
from tb_iotrace.recording.pytorch.parent import profiler_window
from tb_iotrace.recording.pytorch.parent.profiler_window import Window
from tb_iotrace.recording.pytorch.protocol import Peer, await_answers, read_window_file

MACHINE = {"format": 1, "cpus": 5, "mounts": []}     # machine_facts(), played: the fallback is recognisable


class Handler:
    """What start_window/stop_window read of a TraceHandler: its spool, its start wait, ``pending``."""

    def __init__(self, spool: str, start_wait_s: float = 60.0) -> None:
        self._spool = spool
        self.start_wait_s = start_wait_s
        self.pending: Window | None = None

    def spool(self) -> str:
        return self._spool


class Worker:
    """A DataLoader worker at the far end of a real socket pair: it said hello (``H <pid>``, taken
    by the parent's peer now) and, when ``answers``, a thread answers ``S n`` with ``R n`` and
    ``E n`` with ``D n``; the lines it got are kept (before it answers)."""

    def __init__(self, pid: int, answers: bool = True) -> None:
        parent, self.sock = socket.socketpair()
        self.peer = Peer(parent)
        self.lines: list[str] = []
        self.sock.sendall(f"H {pid}\n".encode())
        assert self.peer.read() and self.peer.pid == pid
        state.channels.append(self.peer)
        self.thread: threading.Thread | None = None
        if answers:
            self.thread = threading.Thread(target=self._serve, daemon=True)
            self.thread.start()

    def _serve(self) -> None:
        buf = b""
        while True:
            try:
                data = self.sock.recv(4096)
            except OSError:
                return
            if not data:
                return
            buf += data
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                text = line.decode()
                self.lines.append(text)
                kind, number = text.split(" ")[:2]
                try:
                    self.sock.sendall(f"{'R' if kind == 'S' else 'D'} {number}\n".encode())
                except OSError:         # the parent closed its end (the test is over)
                    return

    def received(self, n: int) -> list[str]:
        """A silent worker's first ``n`` lines, read from its end (bounded wait)."""
        self.sock.settimeout(60)
        buf = b""
        while buf.count(b"\n") < n:
            data = self.sock.recv(4096)
            assert data, buf
            buf += data
        return buf.decode().splitlines()

    def close(self) -> None:
        self.peer.sock.close()
        if self.thread is not None:
            self.thread.join(60)
            assert not self.thread.is_alive()
        self.sock.close()


@pytest.fixture()
def calls(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[str]:
    """No window, no peers, a control folder of this test; the session and the DataLoader notes
    played: what start/stop asked of them, in order."""
    control = tmp_path / "ctl"
    control.mkdir()
    for name, value in (("window", None), ("window_counter", 0), ("control", str(control)), ("channels", []),
                        ("listener", None), ("late_start", {}), ("window_start_ns", 0), ("session", None)):
        monkeypatch.setattr(state, name, value)
    got: list[str] = []
    monkeypatch.setattr(profiler_window, "begin", lambda: got.append("begin"))
    monkeypatch.setattr(profiler_window, "end", lambda: got.append("end"))      # nothing recorded: None
    monkeypatch.setattr(profiler_window, "machine_facts", lambda: dict(MACHINE))
    monkeypatch.setattr(torch_loaders, "window_started", lambda: got.append("loaders started"))

    def stopped() -> list[dict[str, Any]]:
        got.append("loaders stopped")
        return [{"id": 1, "num_workers": 2}]
    monkeypatch.setattr(torch_loaders, "window_stopped", stopped)
    return got


def test_a_window_reaches_every_worker_once_and_is_handed_over(calls: list[str], tmp_path: Path) -> None:
    spool = str(tmp_path / "spool")
    workers = [Worker(101), Worker(102)]
    h = Handler(spool)
    try:
        before = time.time_ns()
        profiler_window.start_window(h)
        after = time.time_ns()
        assert state.window == (1, spool) and read_window_file(str(state.control)) == (1, spool)
        assert before <= state.window_start_ns <= after
        assert state.late_start == {} and calls == ["loaders started", "begin"]
        assert [w.lines for w in workers] == [[f"S 1 {spool}"]] * 2      # both answered R 1: they got it

        profiler_window.start_window(h)          # already open: no second window, nothing sent or begun
        assert state.window == (1, spool) and state.window_counter == 1 and calls == ["loaders started", "begin"]

        profiler_window.stop_window(h)
        win = h.pending
        assert win is not None and state.window is None
        assert read_window_file(str(state.control)) is None
        assert calls == ["loaders started", "begin", "end", "loaders stopped"]
        assert (win.number, win.spool, win.main, win.late) == (1, spool, None, {})
        assert win.waiting == [w.peer for w in workers]
        assert win.start_ns == state.window_start_ns and before <= win.start_ns <= win.stop_ns
        assert win.loaders == [{"id": 1, "num_workers": 2}] and win.machine == MACHINE   # nothing recorded: this machine's
        assert await_answers(win.waiting, "D 1", time.monotonic() + 60) == []
        assert [w.lines for w in workers] == [[f"S 1 {spool}", "E 1"]] * 2

        h.pending = None
        profiler_window.stop_window(h)           # none open: nothing handed over, nothing ended
        assert h.pending is None and calls == ["loaders started", "begin", "end", "loaders stopped"]

        profiler_window.start_window(h)          # the next window is number 2, in every worker
        assert state.window == (2, spool) and [w.lines[-1] for w in workers] == [f"S 2 {spool}"] * 2
        profiler_window.stop_window(h)
        assert h.pending is not None and h.pending.number == 2 and state.window is None
    finally:
        for w in workers:
            w.close()


def test_a_worker_that_does_not_answer_is_late_and_the_window_goes_on(
        calls: list[str], tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    spool = str(tmp_path / "spool")
    silent = Worker(4242, answers=False)
    h = Handler(spool, start_wait_s=0.5)
    with caplog.at_level(logging.WARNING, logger="tb_iotrace"):
        profiler_window.start_window(h)
    assert state.window == (1, spool) and calls == ["loaders started", "begin"]   # recording all the same
    assert state.late_start == {4242: "pid 4242"}
    assert [r.getMessage() for r in caplog.records if "pid 4242" in r.getMessage()
            and "did not begin recording within 0.5 s" in r.getMessage()]
    profiler_window.stop_window(h)
    assert h.pending is not None and h.pending.late == {4242: "pid 4242"} and h.pending.waiting == [silent.peer]
    assert silent.received(2) == [f"S 1 {spool}", "E 1"]        # told both, though it never answered

    # the silent worker is gone before the next window, another answers: the gone one is dropped
    # (not waited for, not late) and the last window's late list is not carried over
    silent.sock.close()
    other = Worker(4343)
    h.start_wait_s = 60.0
    try:
        profiler_window.start_window(h)
        assert state.window == (2, spool) and state.late_start == {}
        assert state.channels == [other.peer] and other.lines == [f"S 2 {spool}"]
        profiler_window.stop_window(h)
        assert h.pending is not None and h.pending.waiting == [other.peer] and h.pending.late == {}
    finally:
        other.close()
        silent.peer.sock.close()


class Recording:
    def __init__(self, machine: dict[str, Any]) -> None:
        self.machine = machine


@pytest.mark.parametrize("machine", [{"format": 1, "cpus": 3, "mounts": [["/", "ext4", "/dev/x"]]}, {}])
def test_the_main_record_and_the_machine_come_from_the_session(
        calls: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, machine: dict[str, Any]) -> None:
    """What the main process recorded is its record (role ``main``, from the session's start, with
    the CPU and run-queue times the session ended with); the machine is the recording's own, else
    this machine's now."""
    rec = Recording(machine)
    monkeypatch.setattr(profiler_window, "end", lambda: rec)
    built: list[tuple[Any, ...]] = []

    def process_record(recording: Any, role: str, start_ns: int, **kw: Any) -> dict[str, Any]:
        built.append((recording, role, start_ns, kw))
        return {"pid": 1, "role": role}
    monkeypatch.setattr(profiler_window, "process_record", process_record)
    h = Handler(str(tmp_path))
    profiler_window.start_window(h)
    monkeypatch.setattr(state, "session_start_ns", 1234)
    monkeypatch.setattr(state, "ended_cpu_ns", 55)
    monkeypatch.setattr(state, "ended_run_delay_ns", 66)
    profiler_window.stop_window(h)
    assert built == [(rec, "main", 1234, {"cpu_ns": 55, "run_delay_ns": 66})]
    assert h.pending is not None and h.pending.main == {"pid": 1, "role": "main"}
    assert h.pending.machine == (machine or MACHINE)


def test_dataloader_notes_that_fail_never_fail_the_window(
        calls: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    def boom() -> Any:
        raise RuntimeError("loader gone")
    monkeypatch.setattr(torch_loaders, "window_started", boom)
    monkeypatch.setattr(torch_loaders, "window_stopped", boom)
    h = Handler(str(tmp_path))
    with caplog.at_level(logging.WARNING, logger="tb_iotrace"):
        profiler_window.start_window(h)
        assert state.window == (1, str(tmp_path)) and calls == ["begin"]
        profiler_window.stop_window(h)
    assert state.window is None and h.pending is not None and h.pending.loaders == []
    assert [r.getMessage() for r in caplog.records].count("tb_iotrace: DataLoader settings not noted: loader gone") == 2


def test_hooks_off_are_the_recordings_then_the_loaders(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(state, "off", [])
    monkeypatch.setattr(torch_loaders, "_off", [])
    assert profiler_window.hooks_off() == []
    monkeypatch.setattr(state, "off", ["the spawn/forkserver worker hook is off (x)"])
    monkeypatch.setattr(torch_loaders, "_off", ["the worker shutdown hook is off (y)"])
    got = profiler_window.hooks_off()
    assert got == ["the spawn/forkserver worker hook is off (x)", "the worker shutdown hook is off (y)"]
    got.append("z")                          # the caller's list: the hooks' own are left as they are
    assert state.off == ["the spawn/forkserver worker hook is off (x)"] and torch_loaders.off() == [
        "the worker shutdown hook is off (y)"]


def test_torch_version_is_the_imported_torchs_or_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = types.ModuleType("torch")
    fake.__version__ = "9.8.7+cpu"  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch", fake)
    assert profiler_window.torch_version() == "9.8.7+cpu"
    monkeypatch.setitem(sys.modules, "torch", types.ModuleType("torch"))     # no __version__
    assert profiler_window.torch_version() == "?"
    monkeypatch.delitem(sys.modules, "torch")                                # not imported
    assert profiler_window.torch_version() == "?"


S0 = 1_795_474_975_000_000_000      # the window's start as sent to the workers


def window(late: dict[int, str]) -> Window:
    return Window(1, "/spool", None, [], S0 + 10**10, S0, late, [], {})


def test_late_workers_count_from_the_windows_start_and_are_named() -> None:
    procs: list[dict[str, Any]] = [
        {"pid": 10, "role": "main", "start_ns": S0 - 5},
        {"pid": 11, "role": "worker", "start_ns": S0 + 1_500_000_000},    # late, began 1.5 s after
        {"pid": 13, "role": "worker", "start_ns": S0 + 20},                # answered in time
    ]
    notes: list[str] = []
    profiler_window.mark_late(procs, window({11: "pid 11", 12: "pid 12", 0: "pid unknown"}), notes)
    assert procs[1]["late_start_ns"] == 1_500_000_000
    assert "late_start_ns" not in procs[0] and "late_start_ns" not in procs[2]
    assert notes == [
        "DataLoader worker pid 11 began recording 1.500 s after the window started (the machine did not run it "
        "sooner): its I/O before then is not in this trace",
        "DataLoader worker pid 12 did not answer the window's start in time and left no record of the window",
        "DataLoader worker pid unknown did not answer the window's start in time and left no record of the window",
    ]


def test_no_late_workers_change_nothing_and_odd_records_do_not_fail() -> None:
    procs: list[dict[str, Any]] = [{"pid": 11, "role": "worker", "start_ns": S0 + 7}, {"role": "worker"}, {}]
    notes: list[str] = []
    profiler_window.mark_late(procs, window({}), notes)
    assert notes == [] and procs == [{"pid": 11, "role": "worker", "start_ns": S0 + 7}, {"role": "worker"}, {}]
    # a late pid whose only record is the main process's (not a worker): not counted late, and not
    # said to have left no record
    procs = [{"pid": 11, "role": "main", "start_ns": S0 + 9}, {"role": "worker"}]
    profiler_window.mark_late(procs, window({11: "pid 11"}), notes)
    assert notes == [] and "late_start_ns" not in procs[0]
