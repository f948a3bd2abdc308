"""Object requests per step, in the report and the tab's /steps: synthetic PyTorch traces
(tests/unit/fixtures/torch_fetch_trace.py) whose worker GETs four 16 KiB ranges in each 10 ms
step, 1 ms after the step starts."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from tb_iotrace.analysis.object_steps import per_step

import torch_fetch_trace


def test_per_step_by_start() -> None:
    """A request counts in the step its start falls in ([start, end)), none outside every step."""
    starts = np.array([0, 10, 30])
    ends = np.array([10, 20, 40])
    n, b = per_step(starts, ends, np.array([-1, 0, 9, 10, 25, 39, 40]), np.array([1, 2, 4, 8, 16, 32, 64]))
    assert n.tolist() == [2, 1, 1] and b.tolist() == [6, 8, 32]


def _report(p: Path, *args: str) -> subprocess.CompletedProcess[str]:
    r = subprocess.run([sys.executable, "-m", "tb_iotrace", "report", *args, str(p)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r


def test_report_steps_carry_objects(tmp_path: Path) -> None:
    p = tmp_path / "w.pt.trace.json.gz"
    torch_fetch_trace.make(p, object_ms=2)
    hosts = json.loads(_report(p, "--json").stdout)["runs"][0]["hosts"]
    [main] = [h for h in hosts if h["process"]["pid"] == 100]
    assert len(main["steps"]) == 10
    assert [(s["object_requests"], s["object_bytes"]) for s in main["steps"]] == [(4, 4 * 16384)] * 10
    text = _report(p).stdout
    head = text[text.index("Per-step I/O"):].splitlines()
    assert "objects" in head[1] and "obj. bytes" in head[1]
    assert head[2].split()[-3:] == ["4", "64.0", "KiB"]


def test_report_steps_without_objects_unchanged(tmp_path: Path) -> None:
    p = tmp_path / "plain.pt.trace.json.gz"
    torch_fetch_trace.make(p)
    hosts = json.loads(_report(p, "--json").stdout)["runs"][0]["hosts"]
    [main] = [h for h in hosts if h["process"]["pid"] == 100]
    assert main["steps"] and all("object_requests" not in s for s in main["steps"])
    assert "obj. bytes" not in _report(p).stdout


def _steps(tmp_path: Path, **kw: object) -> dict:
    from tb_iotrace.plugin.cache import LogdirIndex
    from tb_iotrace.plugin.endpoints.steps import steps_impl

    run = tmp_path / "logs" / "job"
    run.mkdir(parents=True)
    torch_fetch_trace.make(run / "w0.1790857026000.pt.trace.json.gz", **kw)
    index = LogdirIndex(str(tmp_path / "logs"))
    [info] = index.runs()
    return steps_impl(index.view(info.run, sorted(info.hosts.items())))


def test_tab_steps_carry_objects(tmp_path: Path) -> None:
    body = _steps(tmp_path, object_ms=2)
    assert body["has_steps"] and len(body["steps"]) == 10
    assert [(s["object_requests"], s["object_bytes"]) for s in body["steps"]] == [(4, 65536)] * 10


def test_tab_steps_without_objects(tmp_path: Path) -> None:
    body = _steps(tmp_path)
    assert body["has_steps"] and all("object_requests" not in s for s in body["steps"])
