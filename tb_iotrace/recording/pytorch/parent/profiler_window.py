"""A ``torch.profiler`` window: its start and stop sent to every worker and this process, waiting for their answers within bounds, and which hooks this torch release left off."""
from __future__ import annotations

import time
from typing import Any

from tb_iotrace.recording.pytorch.parent import loaders as torch_loaders
from tb_iotrace.store.machine import machine_facts
from tb_iotrace.recording.pytorch import state
from tb_iotrace.recording.pytorch.state import log
from tb_iotrace.recording.pytorch.record import begin, end, process_record
from tb_iotrace.recording.pytorch.protocol import Peer, await_answers, broadcast, pids_of
from tb_iotrace.recording.pytorch.protocol import write_window_file


class Window:
    """What a stopped window leaves for its handler."""

    def __init__(self, number: int, spool: str, main: dict[str, Any] | None, waiting: list[Peer],
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


def start_window(handler: "TraceHandler") -> None:
    with state.lock:
        if state.window is not None:
            return
        state.window_counter += 1
        state.window = (state.window_counter, handler.spool())
        write_window_file()
        # workers first, and waited for: the window is exact in every process (a worker
        # busy with a batch answers within the interpreter's switch interval)
        state.window_start_ns = time.time_ns()
        started = broadcast(f"S {state.window[0]} {state.window[1]}\n".encode())
        late = await_answers(started, f"R {state.window[0]}", time.monotonic() + handler.start_wait_s)
        state.late_start = {p.pid or 0: p.name() for p in late}
        if late:
            log.warning("tb_iotrace: DataLoader worker(s) %s did not begin recording within %g s; "
                        "the window goes on, they record from when they do", pids_of(late),
                        handler.start_wait_s)
        loaders_started()
        begin()


def stop_window(handler: "TraceHandler") -> None:
    with state.lock:
        if state.window is None:
            return
        number, spool = state.window
        recording = end()
        main = process_record(recording, "main", state.session_start_ns, cpu_ns=state.ended_cpu_ns,
                                     run_delay_ns=state.ended_run_delay_ns) if recording is not None else None
        machine = recording.machine if recording is not None and recording.machine else machine_facts()
        state.window = None
        write_window_file()
        waiting = broadcast(f"E {number}\n".encode())
        handler.pending = Window(number, spool, main, waiting, time.time_ns(), state.window_start_ns,
                                  dict(state.late_start), loaders_stopped(), machine)


def loaders_started() -> None:
    try:
        torch_loaders.window_started()
    except Exception as exc:   # the settings are advice's details: never fail the window for them
        log.warning("tb_iotrace: DataLoader settings not noted: %s", exc)


def loaders_stopped() -> list[dict[str, Any]]:
    try:
        return torch_loaders.window_stopped()
    except Exception as exc:
        log.warning("tb_iotrace: DataLoader settings not noted: %s", exc)
        return []


def torch_version() -> str:
    import sys

    return str(getattr(sys.modules.get("torch"), "__version__", "?"))


def hooks_off() -> list[str]:
    """Why each hook this torch turned off is off (empty when every hook is on); each trace's
    notes carry them."""
    return state.off + torch_loaders.off()


def mark_late(procs: list[dict[str, Any]], win: Window, notes: list[str]) -> None:
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
