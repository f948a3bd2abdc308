"""``tb_iotrace.torch.trace_handler``: the Kineto trace PyTorch writes, with the
profiled window's I/O of the main process and of its DataLoader workers (fork, spawn and
forkserver; started before the window or inside it), checked on a
real CPU torch run in a subprocess against ground truth: the files it reads and their sizes."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from tb_iotrace.analysis.attribution import op_kind
from tb_iotrace.cli import main as cli_main
from tb_iotrace.store.kineto import CATEGORY, io_record, read_trace

pytest.importorskip("torch")
pytestmark = pytest.mark.torch
SCRIPTS = Path(__file__).parent / "scripts"


def run_loop(mode: str, work: Path) -> tuple[dict, dict]:
    proc = subprocess.run([sys.executable, str(SCRIPTS / "torch_loader.py"), mode, str(work)],
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-4000:]
    result = json.loads((work / "result.json").read_text())
    assert len(result["written"]) == 1, result
    assert Path(result["written"][0]).parent == work / "log"
    assert result["written"][0].endswith(".pt.trace.json.gz" if mode == "main" else ".pt.trace.json")
    return result, read_trace(result["written"][0])


@pytest.mark.parametrize("mode", ["inside", "before", "spawn", "forkserver"])
def test_worker_reads_are_in_the_trace(mode: str, tmp_path: Path, capsys) -> None:
    result, trace = run_loop(mode, tmp_path)
    main = result["main_pid"]
    files = result["files"]
    base = int(trace["baseTimeNanoseconds"])
    events = trace["traceEvents"]

    steps = [e for e in events if str(e.get("name", "")).startswith("ProfilerStep#") and e.get("ph") == "X"]
    assert len(steps) >= result["steps"], [e["name"] for e in steps]
    lo = min(e["ts"] for e in steps)
    hi = max(e["ts"] + e["dur"] for e in steps)

    rec = io_record(trace)
    assert rec is not None and rec["notes"] == []
    procs = {p["pid"]: p for p in rec["processes"]}
    assert procs[main]["role"] == "main"
    workers = sorted(pid for pid, p in procs.items() if p["role"] == "worker")
    assert len(workers) == 2 and main not in workers
    if mode in ("before", "spawn"):
        assert workers == result["worker_pids"]   # the persistent workers, forked before the window

    io = [e for e in events if e.get("cat") == CATEGORY]
    read_bytes: dict[str, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    for e in io:
        assert e["ph"] == "X" and e["pid"] in procs
        # on Kineto's clock, inside the profiled steps and the process's own window
        assert lo <= e["ts"] and e["ts"] + e["dur"] <= hi, (e, lo, hi)
        start_ns = base + round(e["ts"] * 1000)
        assert procs[e["pid"]]["start_ns"] - 1000 <= start_ns <= procs[e["pid"]]["end_ns"] + 1000
        path = e["args"].get("path")
        if path in files and op_kind(e["name"]) == "read":
            read_bytes[path][e["pid"]] += e["args"]["bytes"]
    # every file read whole, by exactly one worker, and by neither the main process nor twice
    assert set(read_bytes) == set(files)
    for path, by_pid in read_bytes.items():
        assert len(by_pid) == 1 and next(iter(by_pid)) in workers, (path, dict(by_pid))
        assert sum(by_pid.values()) == files[path], (path, dict(by_pid))
    assert {pid for by_pid in read_bytes.values() for pid in by_pid} == set(workers)

    # the window's Darshan counters say the same
    for path, size in files.items():
        recs = [c for pid in workers for c in procs[pid]["counters"] if c["path"] == path and c["module"] == "POSIX"]
        assert len(recs) == 1, path
        assert recs[0]["counters"]["POSIX_BYTES_READ"] == size
        assert recs[0]["counters"]["POSIX_OPENS"] == 1

    # one named track per worker and I/O thread
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    for e in io:
        assert (e["pid"], e["tid"]) in names
    procnames = {e["pid"] for e in events if e.get("ph") == "M" and e.get("name") == "process_name"}
    assert set(workers) <= procnames

    # the DataLoader the window iterated, with its settings and its workers
    (dl,) = rec["pytorch"]["dataloaders"]
    assert rec["pytorch"]["version"].startswith("2.")
    persistent = mode in ("before", "spawn")
    assert {k: dl[k] for k in ("num_workers", "prefetch_factor", "persistent_workers", "pin_memory",
                               "batch_size", "start_method", "iterator")} == {
        "num_workers": 2, "prefetch_factor": 2, "persistent_workers": persistent, "pin_memory": False,
        "batch_size": 2, "start_method": {"inside": "fork", "before": "fork"}.get(mode, mode),
        "iterator": "_MultiProcessingDataLoaderIter"}
    assert dl["worker_pids"] == workers
    (epoch,) = dl["epochs"]
    assert epoch["new_iterator"] is not persistent
    assert epoch["workers_started"] == ([] if persistent else workers)
    assert procs[main]["start_ns"] <= epoch["start_ns"] <= epoch["end_ns"] <= procs[main]["end_ns"]

    # tb-iotrace report reads the folder: one host per process, the workers' bytes
    assert cli_main(["report", str(tmp_path / "log"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    hosts = {h["process"]["pid"]: h for r in doc["runs"] for h in r["hosts"]}
    assert set(hosts) == set(procs)
    got = sum(f["counters"]["POSIX_BYTES_READ"] for pid in workers for f in hosts[pid]["files"] if f["path"] in files)
    assert got == sum(files.values())


def reads_by_file(trace: dict, files: dict) -> dict[str, dict[int, int]]:
    """Bytes read from each of ``files`` per pid, from the trace's I/O events."""
    got: dict[str, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    for e in trace["traceEvents"]:
        if e.get("cat") == CATEGORY and op_kind(e["name"]) == "read" and e["args"].get("path") in files:
            got[e["args"]["path"]][e["pid"]] += e["args"]["bytes"]
    return {path: dict(by_pid) for path, by_pid in got.items()}


def test_worker_not_run_at_window_start(tmp_path: Path) -> None:
    """A loaded machine: a persistent worker is not run (SIGSTOP) for 3 s as the window starts
    and for 1 s as it stops. The window start used to give up on it after 2 s; its late answer to
    the start was then taken for its hand-over at the stop, and the trace went out without its
    reads, saying nothing of it. Now the start waits for it, answers are told apart, and every
    byte is in the trace."""
    result, trace = run_loop("stopped", tmp_path)
    files = result["files"]
    by_file = reads_by_file(trace, files)
    assert {p: sum(b.values()) for p, b in by_file.items()} == files
    pids = {pid for b in by_file.values() for pid in b}
    assert pids == set(result["worker_pids"])
    rec = io_record(trace)
    assert rec is not None and rec["notes"] == []
    assert all("late_start_ns" not in p for p in rec["processes"])


def test_late_worker_start_counted_and_said(tmp_path: Path) -> None:
    """The same worker with a handler that waits only 0.3 s for the workers to begin: the window
    goes on without it, and the trace says by how much it began late (counted in its process
    record and in a note); its I/O is still handed over at the stop."""
    result, trace = run_loop("stopped-short", tmp_path)
    (late,) = result["stopped"]
    rec = io_record(trace)
    assert rec is not None
    procs = {p["pid"]: p for p in rec["processes"]}
    assert set(result["worker_pids"]) <= set(procs)
    main = procs[result["main_pid"]]
    lateness = procs[late]["late_start_ns"]
    assert lateness == procs[late]["start_ns"] - rec["window_start_ns"]
    assert rec["window_start_ns"] <= main["start_ns"]
    # it did not run for stop_s after the window began; the window start waited only 0.3 s
    assert lateness >= (result["stop_s"] - 0.3) * 1e9 * 0.9, lateness
    assert [n for n in rec["notes"] if f"pid {late}" in n and "began recording" in n], rec["notes"]
    other = [p for p in result["worker_pids"] if p != late]
    assert all("late_start_ns" not in procs[p] for p in other)
    by_file = reads_by_file(trace, result["files"])
    # what the late worker read after it began, and everything the other read, is there
    assert sum(b.get(other[0], 0) for b in by_file.values()) > 0
    assert sum(b.get(late, 0) for b in by_file.values()) > 0
    for path, by_pid in by_file.items():
        assert sum(by_pid.values()) <= result["files"][path]


def test_missed_hand_over_named_and_late_record_reported(tmp_path: Path) -> None:
    """A worker not run for 3 s as the first of two windows ends, with a handler that waits only
    0.3 s for the hand-overs: the first trace names it as missing (note and ``workers_missing``)
    instead of going out silently without its I/O; its record, written once it runs again, is
    reported by the second window's trace and not mixed into it."""
    proc = subprocess.run([sys.executable, str(SCRIPTS / "torch_loader.py"), "stopped-end", str(tmp_path)],
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-4000:]
    result = json.loads((tmp_path / "result.json").read_text())
    (late,) = result["stopped"]
    first, second = (read_trace(p) for p in result["written"])
    r1, r2 = io_record(first), io_record(second)
    assert r1 is not None and r2 is not None
    assert r1["workers_missing"] == [late]
    assert late not in {p["pid"] for p in r1["processes"]}
    assert [n for n in r1["notes"] if f"pid {late}" in n and "did not hand over" in n], r1["notes"]
    assert [n for n in r2["notes"] if f"pid {late}" in n and "earlier window (1)" in n], r2["notes"]
    assert "workers_missing" not in r2
    procs2 = {p["pid"]: p for p in r2["processes"]}
    assert set(result["worker_pids"]) <= set(procs2)
    # the second trace's events of that worker are its second window's only
    for e in second["traceEvents"]:
        if e.get("cat") == CATEGORY and e["pid"] == late:
            start_ns = int(second["baseTimeNanoseconds"]) + round(e["ts"] * 1000)
            assert start_ns >= procs2[late]["start_ns"] - 1000


def test_renamed_dataloader_names_turn_their_hooks_off_and_say_so(tmp_path: Path) -> None:
    """A torch release without the names of the spawn/forkserver worker hook and of the worker
    shutdown hook: the job runs, forked workers' reads are all in the trace (they need neither
    hook), and the trace's notes say which hooks are off and what is lost."""
    result, trace = run_loop("renamed", tmp_path)
    by_file = reads_by_file(trace, result["files"])
    assert {p: sum(b.values()) for p, b in by_file.items()} == result["files"]
    rec = io_record(trace)
    assert rec is not None
    import torch

    want = [f"torch {torch.__version__}: the spawn/forkserver worker hook is off "
            "(torch.utils.data._utils.worker._worker_loop_gone is missing in this torch)",
            f"torch {torch.__version__}: the worker shutdown hook is off "
            "(torch.utils.data.dataloader._MultiProcessingDataLoaderIter._shutdown_gone is missing in this torch)"]
    assert [n.split(":", 2)[0] + ":" + n.split(":", 2)[1] for n in rec["notes"]] == want, rec["notes"]
    (dl,) = rec["pytorch"]["dataloaders"]
    assert dl["num_workers"] == 2 and dl["worker_stops"] == []   # settings noted, stops not timed


def test_renamed_profiler_window_writes_the_trace_without_io(tmp_path: Path) -> None:
    """Without the profiler window's names nothing can be recorded: the job runs, PyTorch's
    trace is written as its own handler writes it, and its notes say why it has no I/O."""
    result, trace = run_loop("renamed-window", tmp_path)
    assert [e for e in trace["traceEvents"] if e.get("cat") == CATEGORY] == []
    assert any(str(e.get("name", "")).startswith("ProfilerStep#") for e in trace["traceEvents"])
    rec = io_record(trace)
    assert rec is not None and rec["processes"] == []
    assert [n for n in rec["notes"] if "the profiler window hook is off "
            "(torch.profiler.profiler._KinetoProfile.start_trace / "
            "torch.profiler.profiler._KinetoProfile._stop_gone is missing in this torch)" in n], rec["notes"]


def test_main_process_reads_gzip_trace(tmp_path: Path) -> None:
    result, trace = run_loop("main", tmp_path)
    main, files = result["main_pid"], result["files"]
    rec = io_record(trace)
    assert rec is not None and [p["role"] for p in rec["processes"]] == ["main"]
    (dl,) = rec["pytorch"]["dataloaders"]
    assert (dl["num_workers"], dl["prefetch_factor"], dl["persistent_workers"], dl["worker_pids"], dl["iterator"],
            dl["start_method"]) == (0, None, False, [], "_SingleProcessDataLoaderIter", None)
    assert [e["new_iterator"] for e in dl["epochs"]] == [True]
    got: dict[str, int] = defaultdict(int)
    for e in trace["traceEvents"]:
        if e.get("cat") == CATEGORY and op_kind(e["name"]) == "read" and e["args"].get("path") in files:
            assert e["pid"] == main and e["tid"] == main
            got[e["args"]["path"]] += e["args"]["bytes"]
    assert got == files
