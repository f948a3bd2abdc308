"""A job's own TCP traffic is not storage: two gloo ranks (CPU, ``env://`` on 127.0.0.1,
tests/integration/scripts/gloo_local_job.py) that all-reduce every step, read their files through
a DataLoader and fetch three objects over HTTP from a server on 127.0.0.1. Under
``tb_iotrace.torch.trace_handler`` (the handler made after ``init_process_group``, a second group
made inside the window) and under ``tb-iotrace run``: no endpoint for the store or gloo's pairs,
the HTTP server the only endpoint with its exact connections, no ``object_io`` in the verdict,
the host's bytes read exactly its files' (the data files' exactly what the ranks read)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytestmark = [pytest.mark.torch, pytest.mark.slow]
PY = sys.executable
JOB = Path(__file__).parent / "scripts" / "gloo_local_job.py"


def _report(logs: Path) -> dict:
    r = subprocess.run([PY, "-m", "tb_iotrace", "report", str(logs), "--json", "--no-progress"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout)


def _check(work: Path, rank_hosts: list[dict], truth: dict) -> None:
    assert len(truth["ranks"]) == 2 and len(rank_hosts) == 2
    http = f"tcp://127.0.0.1:{truth['http_port']}"
    for h in rank_hosts:
        (rank,) = [r for r in truth["ranks"] if r["pid"] == h["process"]["pid"]]
        eps = h.get("endpoints", [])
        # the store (MASTER_PORT) and gloo's pairs are not endpoints; the HTTP server is, whole
        assert [e["endpoint"] for e in eps] == [http], eps
        assert eps[0]["connections"] == 3
        assert eps[0]["bytes_in"] > rank["fetched"] == 3 * 3000    # the bodies, with their headers
        wb = (h.get("verdict") or {}).get("wait_breakdown") or {}
        assert not wb.get("object_io"), wb
        data = [f for f in h["files"] if f"{work}/data/rank" in f["path"]]
        assert sum(f["counters"]["POSIX_BYTES_READ"] for f in data) == rank["file_bytes"] == 12 * (16 << 10)
        every = sum(f["counters"].get("POSIX_BYTES_READ", 0) for f in h["files"] if not f["path"].startswith("tcp://"))
        assert h["totals"]["POSIX"]["bytes_read"] == every + eps[0]["bytes_in"]


def test_trace_handler_ranks(tmp_path: Path) -> None:
    r = subprocess.run([PY, str(JOB), str(tmp_path), "handler"], capture_output=True, text=True, timeout=400)
    assert r.returncode == 0, r.stderr[-4000:]
    truth = json.loads((tmp_path / "truth.json").read_text())
    (run,) = _report(tmp_path / "logs")["runs"]
    _check(tmp_path, run["hosts"], truth)


def test_run_ranks(tmp_path: Path) -> None:
    r = subprocess.run([PY, "-m", "tb_iotrace", "run", "--quiet", "--logdir", str(tmp_path / "logs"), "--",
                        PY, str(JOB), str(tmp_path), "plain"], capture_output=True, text=True, timeout=400)
    assert r.returncode == 0, r.stderr[-4000:]
    truth = json.loads((tmp_path / "truth.json").read_text())
    hosts = [h for run in _report(tmp_path / "logs")["runs"] for h in run["hosts"]]
    pids = {r["pid"] for r in truth["ranks"]}
    _check(tmp_path, [h for h in hosts if h["process"]["pid"] in pids], truth)
    # no process of the job (the launcher, its helpers) lists the store or a pair either
    assert {e["endpoint"] for h in hosts for e in h.get("endpoints", [])} == {f"tcp://127.0.0.1:{truth['http_port']}"}
