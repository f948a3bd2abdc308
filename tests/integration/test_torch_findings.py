"""Findings in PyTorch's terms, on real CPU torch loops profiled with
tb_iotrace.torch.trace_handler (tests/integration/scripts/torch_findings.py), each finding's
numbers checked against the Kineto trace itself: ``ProfilerStep#N`` are the steps, the
DataLoader iterator's ``__next__`` the input wait, the trace's I/O events the bytes per process."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tb_iotrace.analysis import analyze
from tb_iotrace.analysis.attribution import op_kind
from tb_iotrace.cli import main as cli_main
from tb_iotrace.store.kineto import CATEGORY, io_record, read_trace
from tb_iotrace.store.kineto_xspace import to_xspace

pytest.importorskip("torch")
pytestmark = pytest.mark.torch
SCRIPT = Path(__file__).parent / "scripts" / "torch_findings.py"
NEXT = "enumerate(DataLoader)#"


def run_loop(mode: str, work: Path) -> tuple[dict, dict]:
    proc = subprocess.run([sys.executable, str(SCRIPT), mode, str(work)], capture_output=True, text=True,
                          timeout=240)
    assert proc.returncode == 0, proc.stderr[-4000:]
    result = json.loads((work / "result.json").read_text())
    (written,) = result["written"]
    return result, read_trace(written)


def kineto_times(trace: dict) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """(steps, __next__ waits) of the main process as absolute [start, end) ns, from the trace."""
    base = int(trace["baseTimeNanoseconds"])

    def iv(e: dict) -> tuple[int, int]:
        s = base + round(e["ts"] * 1000)
        return s, s + round(e["dur"] * 1000)

    xs = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    steps = sorted(iv(e) for e in xs if str(e.get("name", "")).startswith("ProfilerStep#"))
    waits = sorted(iv(e) for e in xs if str(e.get("name", "")).startswith(NEXT))
    return steps, waits


def wait_in_steps(steps: list[tuple[int, int]], waits: list[tuple[int, int]]) -> int:
    """ns of the waits inside the steps (the waits of one thread never overlap)."""
    return sum(max(0, min(we, se) - max(ws, ss)) for ss, se in steps for ws, we in waits)


def bytes_read(trace: dict, files: dict, pids: set[int]) -> int:
    return sum(e["args"]["bytes"] for e in trace["traceEvents"]
               if e.get("cat") == CATEGORY and e["pid"] in pids and op_kind(e["name"]) == "read"
               and e["args"].get("path") in files)


def test_main_process_reading_names_num_workers(tmp_path: Path) -> None:
    """num_workers=0: the main process reads every sample inside __next__ while the step waits:
    input-bound, in PyTorch's terms, with the wait share and the bytes the trace holds."""
    result, trace = run_loop("main", tmp_path)
    space = to_xspace(trace)
    a = analyze(space)
    assert a is not None
    f = a.finding("input-bound")
    assert f is not None, a.text()
    # the tab's findings read the converted file column-wise: the same finding
    converted = tmp_path / "converted.xplane.pb"
    converted.write_bytes(space.SerializeToString())
    from_file = analyze(str(converted))
    assert from_file is not None and from_file.finding("input-bound") == f
    ev = f["evidence"]
    steps, waits = kineto_times(trace)
    assert ev["steps"] == len(steps) == result["steps"] + 1
    total = sum(e - s for s, e in steps)
    wait = wait_in_steps(steps, waits)
    assert ev["step_time_s"] == pytest.approx(total / 1e9, abs=len(steps) * 2e-9)
    assert ev["input_wait_s"] == pytest.approx(wait / 1e9, abs=len(waits) * 2e-9)
    assert ev["input_wait_share"] == pytest.approx(wait / total, rel=1e-6)
    assert ev["input_wait_share"] >= 0.30
    # every byte of the samples was read by the main process, none by a worker
    files = result["files"]
    assert ev["main_process_bytes_read"] == bytes_read(trace, files, {result["main_pid"]}) == sum(files.values())
    assert ev["worker_bytes_read"] == 0 and ev["worker_io_during_wait_s"] == 0
    assert 0 < ev["main_process_io_during_wait_s"] == ev["io_during_wait_s"]
    assert (ev["framework"], ev["num_workers"], ev["prefetch_factor"], ev["cause"]) == \
        ("PyTorch", 0, None, "main-process-loading")
    assert "num_workers=0" in f["statement"] and "__next__" in f["statement"]
    assert "num_workers=N" in f["suggestion"] and "persistent_workers=True" in f["suggestion"]
    assert "tf.data" not in f["suggestion"] and "pin_memory" not in f["suggestion"]   # no GPU here
    assert f["ops"] == [f"{NEXT}_SingleProcessDataLoaderIter.__next__"]
    assert "worker-restarts" not in a.ids
    # the verdict: input-bound; the main process is the loader, so the whole wait is
    # measured: its reads (as the finding's share) and its own work under __next__ (decode)
    v = a.verdict
    assert v["bound"] == "input" and v["input_wait_share"] == pytest.approx(ev["input_wait_share"])
    assert v["unmeasured"] == [] and v["wait_breakdown"]["file_io"] == pytest.approx(ev["io_share_of_wait"])
    assert sum(v["wait_breakdown"].values()) == pytest.approx(1.0)
    assert v["change"].startswith("num_workers=0 -> ") and v["expected_step_time_change"] < 0
    assert f["impact"]["step_share"] == pytest.approx(ev["input_wait_share"]) and a.ids[0] == "input-bound"
    # the other findings speak PyTorch too
    for other in a.findings:
        assert "tf.data" not in other["suggestion"] and "TFRecord" not in other["suggestion"], other


def test_workers_that_keep_up_are_not_input_bound(tmp_path: Path) -> None:
    """Two persistent workers reading small files ahead of a 100 ms step: no input-bound finding,
    and the analysis did see the steps and the (short) waits."""
    result, trace = run_loop("workers", tmp_path)
    a = analyze(to_xspace(trace))
    assert a is not None
    assert "input-bound" not in a.ids and "worker-restarts" not in a.ids, a.text()
    steps, waits = kineto_times(trace)
    assert a.summary["steps"] == len(steps)
    assert a.summary["input_wait_ps"] == pytest.approx(wait_in_steps(steps, waits) * 1000, abs=len(waits) * 2000)
    assert a.summary["input_wait_ps"] < 0.20 * a.summary["step_time_ps"]
    v = a.verdict      # the verdict's share is the summary's, under xprof's 20%
    assert v["input_wait_share"] == pytest.approx(a.summary["input_wait_ps"] / a.summary["step_time_ps"])
    assert v["bound"] in ("not input", "partly input") and not any(x["severity"] == "warning" for x in a.findings
                                                                   if x["impact"]["step_share"] < 0.05)
    rec = io_record(trace)
    assert rec is not None
    workers = {p["pid"] for p in rec["processes"] if p["role"] == "worker"}
    assert len(workers) == 2
    assert bytes_read(trace, result["files"], workers) == sum(result["files"].values())
    assert a.summary["bytes_read"] == sum(result["files"].values())


def test_starved_workers_name_num_workers(tmp_path: Path) -> None:
    """Two persistent workers reading 2 MiB files from a cold page cache for a step that takes
    no time: input-bound, the workers did all the reading (bytes as in the trace), and the
    advice is about the workers (num_workers / prefetch_factor with their values)."""
    result, trace = run_loop("starved", tmp_path)
    a = analyze(to_xspace(trace))
    assert a is not None
    f = a.finding("input-bound")
    assert f is not None, a.text()
    ev = f["evidence"]
    rec = io_record(trace)
    assert rec is not None
    workers = {p["pid"] for p in rec["processes"] if p["role"] == "worker"}
    files = result["files"]
    assert ev["worker_bytes_read"] == bytes_read(trace, files, workers) == sum(files.values())
    assert ev["main_process_bytes_read"] == 0 and ev["main_process_io_during_wait_s"] == 0
    assert 0 < ev["worker_io_during_wait_s"] == ev["io_during_wait_s"]
    assert ev["cause"] in ("workers-behind", "workers-behind-bursts")
    assert (ev["num_workers"], ev["prefetch_factor"], ev["persistent_workers"]) == (2, 2, True)
    assert "2 worker processes do not keep up" in f["statement"]
    assert ev["cpus"] >= 1 and f"num_workers (now 2; {ev['cpus']} cores usable)" in f["suggestion"] and "prefetch_factor (now 2" in f["suggestion"]
    assert "worker-restarts" not in a.ids
    # the verdict: input-bound on the workers' reads; decode and starved are measured
    # only when the trace has the workers' fetch spans, else said to be unmeasured
    v = a.verdict
    assert v["bound"] == "input" and v["wait_breakdown"]["file_io"] == pytest.approx(ev["io_share_of_wait"])
    fetch = any(e.get("name") == "tb_iotrace::fetch" for e in trace["traceEvents"])
    assert (v["unmeasured"] == []) is fetch and (v["wait_breakdown"]["decode"] is None) is not fetch
    assert v["change"].startswith("num_workers=2 -> ") or v["cause"] == "starved", v


def test_workers_restarted_each_epoch_name_persistent_workers(tmp_path: Path, capsys) -> None:
    """Three epochs of a loader without persistent_workers in one window: each starts two new
    workers and ends by stopping them; worker-restarts says what that cost, each start timed
    from iter() to the end of the epoch's first __next__ in the trace."""
    result, trace = run_loop("restarts", tmp_path)
    a = analyze(to_xspace(trace))
    assert a is not None
    f = a.finding("worker-restarts")
    assert f is not None, a.text()
    ev = f["evidence"]
    rec = io_record(trace)
    assert rec is not None
    (dl,) = rec["pytorch"]["dataloaders"]
    assert dl["persistent_workers"] is False and len(dl["epochs"]) == result["epochs"] == ev["epoch_starts"]
    assert len(dl["worker_pids"]) == 2 * result["epochs"]
    _, waits = kineto_times(trace)
    expected = []
    for epoch in dl["epochs"]:
        assert len(epoch["workers_started"]) == 2
        first_end = next(we for ws, we in waits if ws >= epoch["end_ns"])
        expected.append((first_end - epoch["start_ns"]) / 1e9)
    assert ev["per_start_s"] == pytest.approx(expected, abs=2e-9)
    stops = [(s["end_ns"] - s["start_ns"]) / 1e9 for s in dl["worker_stops"]]
    assert len(stops) == result["epochs"] and ev["per_stop_s"] == pytest.approx(stops)
    # each stop ran inside the __next__ that ended its epoch
    for s in dl["worker_stops"]:
        assert any(ws <= s["start_ns"] and s["end_ns"] <= we for ws, we in waits)
    steps, _ = kineto_times(trace)
    total = sum(e - s for s, e in steps) / 1e9
    assert ev["share"] == pytest.approx((sum(expected) + sum(stops)) / total, rel=1e-6)
    assert "persistent_workers=False" in f["statement"] and "persistent_workers=True" in f["suggestion"]
    ib = a.finding("input-bound")
    if ib is not None:     # the waits are the restarts: the advice says so, not "more workers"
        assert ib["evidence"]["cause"] == "worker-restarts", ib
        assert "persistent_workers=True" in ib["suggestion"]

    # tb-iotrace report: the main process's host has the trace's steps and findings, the workers' none
    assert cli_main(["report", str(tmp_path / "log"), "--json"]) == 0
    hosts = {h["process"]["pid"]: h for r in json.loads(capsys.readouterr().out)["runs"] for h in r["hosts"]}
    main = hosts.pop(result["main_pid"])
    assert {f["id"]: f["evidence"] for f in main["findings"]} == {f["id"]: f["evidence"] for f in a.findings}
    assert len(main["steps"]) == len(steps)
    assert set(hosts) == set(dl["worker_pids"]) and all(not h["findings"] and not h["steps"] for h in hosts.values())
