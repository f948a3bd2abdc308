"""The CPU jobs that prove the diagnosis (issue 19), run for real, checked for what the capture
side records: the machine that ran them (its usable cores and mount table), the DataLoader
workers' fetch spans, the I/O of their data. Each job's docstring (and ``expected`` in its
result) names the verdict and top finding the analysis must give on it; those assertions join
these once the analysis gives verdicts."""
from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tb_iotrace.kineto import CATEGORY, io_record, read_trace
from tb_iotrace.machine import host_facts, machine_facts
from tb_iotrace.xplane import load_xspace, read_io_data

SCRIPTS = Path(__file__).parent / "scripts"


def run_job(name: str, work: Path) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, str(SCRIPTS / f"{name}.py"), str(work)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    result = json.loads((work / "result.json").read_text())
    assert result["expected"]["verdict"] in ("input-bound", "not input-bound")
    return result


def assert_this_machine(facts: dict[str, Any] | None) -> None:
    here = machine_facts()
    assert facts is not None and facts["cpus"] == here["cpus"]
    assert {(m["mount_point"], m["fs_type"], m["source"]) for m in facts["mounts"]} == {tuple(m) for m in here["mounts"]}


TORCH_JOBS = {   # job: (num_workers, epochs)
    "torch_decode_bound": (1, 1),
    "torch_read_bound": (2, 1),
    "torch_main_process_loading": (0, 1),
    "torch_worker_restarts": (2, 4),
    "torch_not_input_bound": (2, 1),
}


@pytest.mark.torch
@pytest.mark.parametrize("name", sorted(TORCH_JOBS))
def test_torch_job_records(name: str, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    workers, epochs = TORCH_JOBS[name]
    result = run_job(name, tmp_path)
    (path,) = result["written"]
    trace = read_trace(path)
    rec = io_record(trace)
    assert rec is not None and rec["notes"] == []
    assert_this_machine(host_facts(trace))
    (dl,) = rec["pytorch"]["dataloaders"]
    assert dl["num_workers"] == workers
    procs = {p["pid"]: p for p in rec["processes"]}
    spans = [e for e in trace["traceEvents"] if e.get("name") == "tb_iotrace::fetch"]
    by_pid = Counter(e["pid"] for e in spans)
    worker_pids = {pid for pid, p in procs.items() if p["role"] == "worker"}
    if workers == 0:
        assert not spans and not worker_pids
    else:
        # every worker that served the window timed its fetches, one span per batch
        assert set(by_pid) == worker_pids and len(worker_pids) == workers * epochs
        assert {e["args"]["worker_id"] for e in spans} == set(range(workers))
        assert all(e["args"]["samples"] >= 1 for e in spans)
    if name == "torch_worker_restarts":
        assert len(dl["epochs"]) == epochs
        assert all(len(ep["workers_started"]) == workers for ep in dl["epochs"])
    data = set(result["files"])
    reads = [e for e in trace["traceEvents"] if e.get("cat") == CATEGORY and e["name"] in ("read", "pread64")
             and e["args"].get("path") in data and e["args"].get("bytes", 0) > 0]
    assert reads and {e["pid"] for e in reads} <= (worker_pids or {result["main_pid"]})
    if name == "torch_read_bound":
        # each pipe read by one worker, its reads inside that worker's fetch spans but the edges'
        pipe_of = {e["pid"]: e["args"]["path"] for e in reads}
        assert len(set(pipe_of.values())) == len(pipe_of) == workers
        inside = sum(any(s["pid"] == r["pid"] and s["ts"] <= r["ts"] and r["ts"] + r["dur"] <= s["ts"] + s["dur"]
                         for s in spans) for r in reads)
        assert inside >= len(reads) - 4 * workers


@pytest.mark.tf
@pytest.mark.parametrize("name", ["tf_read_bound", "tf_map_bound"])
def test_tf_job_records(name: str, tmp_path: Path) -> None:
    pytest.importorskip("tensorflow")
    result = run_job(name, tmp_path)
    space = load_xspace(result["xplane"])
    assert_this_machine(host_facts(space))
    io = read_io_data(space)
    assert io is not None
    if name == "tf_read_bound":   # one read per element (and the end of the pipe)
        assert (io.path == result["fifo"]).sum() >= result["steps"]
    else:                         # the file in TFRecordDataset's 256 KiB buffers
        assert (io.path == result["data"]).sum() >= 1


@pytest.mark.jax
def test_jax_grain_job_records(tmp_path: Path) -> None:
    pytest.importorskip("grain")
    result = run_job("jax_grain_decode_bound", tmp_path)
    space = load_xspace(result["xplane"])
    assert_this_machine(host_facts(space))
    io = read_io_data(space)
    # a read per record, but those read ahead before the window: grain's prefetch buffer (1)
    # and its one read thread's record in flight
    assert io is not None and (io.path == result["data"]).sum() >= result["steps"] - 2
