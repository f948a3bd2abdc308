"""Two local MultiWorkerMirroredStrategy workers (CPU, loopback), worker 1's reads slowed by
construction (tests/integration/scripts/tf_multiworker_job.py): the report's job verdict across
the two captures names worker 1, worker 0 waits for it in TF's CollectiveReduceV2 about as long
as worker 1 waits for its input, and worker 0's own verdict says so."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("tensorflow")
pytestmark = [pytest.mark.tf, pytest.mark.slow]
PY = sys.executable
JOB = Path(__file__).parent / "scripts" / "tf_multiworker_job.py"


def test_slow_worker_named(tmp_path: Path) -> None:
    r = subprocess.run([PY, str(JOB), str(tmp_path)], capture_output=True, text=True, timeout=500)
    assert r.returncode == 0, r.stderr[-4000:]
    run_dir = tmp_path / "logs" / "plugins" / "profile" / "run"
    run_dir.mkdir(parents=True)
    for i in range(2):
        (cap,) = (tmp_path / f"logs{i}").glob("plugins/profile/*/*.xplane.pb")
        shutil.copyfile(cap, run_dir / f"worker{i}.xplane.pb")
    rep = subprocess.run([PY, "-m", "tb_iotrace", "report", str(tmp_path / "logs"), "--json", "--no-progress"],
                         capture_output=True, text=True, timeout=300)
    assert rep.returncode == 0, rep.stderr
    (run,) = json.loads(rep.stdout)["runs"]
    jv = run["job_verdict"]
    assert jv["ranks"] == 2 and jv["matched_steps"] == 6 and jv["straggler"]["label"] == "worker1", jv
    wait1 = jv["straggler"]["input_wait_ms_per_step"]
    assert wait1 >= 80, jv                       # two files a step at 100 ms each, by construction
    (other,) = jv["others"]
    assert other["label"] == "worker0" and abs(other["collective_wait_ms_per_step"] - wait1) <= 0.25 * wait1, other
    v0 = next(h for h in run["hosts"] if h["host"] == "worker0")["verdict"]
    assert v0["collectives"] and v0["waits_for"]["label"] == "worker1", v0
