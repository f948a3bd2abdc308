"""A PyTorch job with no profiler and no tb_iotrace in its code, under ``tb-iotrace run
--profile-every``: torch.profiler windows taken at its DataLoader's iterations, each one run under
``<logdir>/pytorch``, diagnosed as the same job with ``tb_iotrace.torch.trace_handler`` is
(``test_diagnosis_jobs.assert_bound``: decode-bound, read-bound), listed in time order and marked
as taken by ``run`` by ``tb-iotrace report`` and by the tab's ``/windows``."""
from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tb_iotrace.store.kineto import io_record, read_trace

from test_diagnosis_jobs import assert_bound

SCRIPTS = Path(__file__).parent / "scripts"
JOB = SCRIPTS / "torch_zero_touch.py"


def run_under(work: Path, mode: str, seconds: float, every: float, length: float) -> Path:
    log = work / "log"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(SCRIPTS), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-m", "tb_iotrace", "run", "--logdir", str(log), "--profile-every",
                           str(every), "--profile-for", str(length), "--", sys.executable, str(JOB), str(work), mode,
                           str(seconds)], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "steps " in proc.stdout
    return log


def report(log: Path) -> dict:
    from tb_iotrace.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["report", str(log), "--json", "--no-progress", "--jobs", "1"]) == 0
    return json.loads(out.getvalue())


@pytest.mark.torch
@pytest.mark.parametrize("mode", ["decode", "read"])
def test_run_profile_every_diagnoses_a_plain_torch_job(mode: str, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    # 12 s of steps: windows asked for every 4 s from torch's import; on a loaded machine (the CI's
    # two workers and more) the job's start-up and each window's writing take seconds: 9 s of
    # steps once held one window only
    log = run_under(tmp_path, mode, 12.0, 4.0, 2.0)
    traces = sorted((log / "pytorch").glob("*/*.pt.trace.json"))
    assert len(traces) >= 2, traces            # windows at ~4 s, ~8 s, ~12 s (and one cut by the exit)
    full = []
    for path in traces:
        rec = io_record(read_trace(str(path)))
        assert rec is not None
        assert rec["steps_from"] == "dataloader" and "__next__" in rec["steps_note"]
        assert rec["window_origin"]["by"] == "tb-iotrace run --profile-every"
        assert {p["role"] for p in rec["processes"]} == {"main", "worker"}
        if rec["processes"][0]["end_ns"] - rec["processes"][0]["start_ns"] >= 1.5e9:
            # its workers fetched in it (a window cut by the exit may hold none: in a stress run, the
            # last one was 0.22 s long, after the workers had fetched their last batches)
            assert any(p.get("num_fetches", 0) > 0 for p in rec["processes"] if p["role"] == "worker")
            full.append(path)
    assert full, "no window ran its whole length"
    for path in full:
        if mode == "decode":
            v, _ = assert_bound(str(path), "decode", "num_workers=1 -> ")
        else:
            v, findings = assert_bound(str(path), "file_io", "num_workers=2 -> ")
            assert "redundant-reads" not in {f["id"] for f in findings}
        assert any("DataLoader's iterations" in n for n in v["notes"]), v["notes"]
    doc = report(log)
    (job,) = [j for j in doc["jobs"] if j["job"] == "pytorch"]
    starts = [w["start_ns"] for w in job["windows"]]
    assert len(starts) == len(traces) and starts == sorted(starts)
    assert all(w["taken_by"].startswith("tb-iotrace run --profile-every at ") for w in job["windows"])
    # the tab's table of the job's windows: the same windows, in the same order, marked the same
    pytest.importorskip("tensorboard")
    from plugin_client import make_client

    _, get = make_client(log)
    code, body = get("/windows", run=job["windows"][0]["run"])
    assert code == 200 and body["job"] == "pytorch" and body["unreadable"] == [], body
    keys = ("n", "run", "start_ns", "steps", "bytes_read", "taken_by")
    assert [{k: w.get(k) for k in keys} for w in body["windows"]] == [{k: w.get(k) for k in keys} for w in job["windows"]]
    assert all(w["kind"] == "kineto" for w in body["windows"])
