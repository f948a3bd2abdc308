"""Four DDP ranks (gloo, CPU, four processes), each rank's loop profiled by
tb_iotrace.torch.trace_handler (tests/integration/scripts/ddp_ranks_job.py), and the report's
job verdict across them (tb_iotrace.analysis.job_verdict, docs/diagnosis.md):

- balanced loaders: the job is not input-bound, no straggler, no imbalance;
- rank 2's reads slowed by construction (100 ms before each sample, 4 samples a step; the
  step's own work is 80 ms): rank 2 named the straggler, the others' collective wait per step
  within 25% of rank 2's input wait per step, rank 0's own verdict says it waits for rank 2;
- rank 2's shard twice the bytes per sample: ``imbalanced-shards`` names rank 2.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytestmark = [pytest.mark.torch, pytest.mark.slow]
PY = sys.executable
JOB = Path(__file__).parent / "scripts" / "ddp_ranks_job.py"


def _run(work: Path, mode: str) -> dict:
    r = subprocess.run([PY, str(JOB), str(work), mode], capture_output=True, text=True, timeout=400)
    assert r.returncode == 0, r.stderr[-4000:]
    rep = subprocess.run([PY, "-m", "tb_iotrace", "report", str(work / "logs"), "--json", "--no-progress"],
                         capture_output=True, text=True, timeout=300)
    assert rep.returncode == 0, rep.stderr
    (run,) = json.loads(rep.stdout)["runs"]
    text = subprocess.run([PY, "-m", "tb_iotrace", "report", str(work / "logs"), "--no-progress"],
                          capture_output=True, text=True, timeout=300)
    assert text.returncode == 0 and "Job verdict (4 ranks" in text.stdout, text.stdout[-3000:]
    return run


def _fleet_row(tmp_path: Path) -> dict:
    """The fleet dataset's ``input-stragglers`` row of the run (one run here)."""
    pytest.importorskip("pyarrow")
    pytest.importorskip("duckdb")
    ds = tmp_path / "ds"
    b = subprocess.run([PY, "-m", "tb_iotrace", "fleet", "build", str(tmp_path / "logs"), "-o", str(ds), "--no-progress"],
                       capture_output=True, text=True, timeout=300)
    assert b.returncode == 0, b.stderr
    q = subprocess.run([PY, "-m", "tb_iotrace", "fleet", "report", str(ds), "--json"], capture_output=True, text=True,
                       timeout=300)
    assert q.returncode == 0, q.stderr
    (row,) = json.loads(q.stdout)["input-stragglers"]
    return row


def _by_rank(run: dict) -> dict[int, dict]:
    return {h["process"]["rank"]: h for h in run["hosts"]}


def test_balanced_ranks_not_input_bound(tmp_path: Path) -> None:
    run = _run(tmp_path, "balanced")
    jv = run["job_verdict"]
    assert jv["ranks"] == 4 and jv["matched_steps"] == 6, jv
    assert jv["bound"] == "not input" and jv["straggler"] is None and jv["imbalance"] is None, jv
    assert not [f for h in run["hosts"] for f in h["findings"] if f["id"] in ("input-straggler", "imbalanced-shards")]
    for h in run["hosts"]:
        assert "waits_for" not in h["verdict"] and h["verdict"]["collectives"], h["verdict"]
        assert all("collective_wait_ps" in s for s in h["steps"])


def test_slow_rank_named_and_others_wait_for_it(tmp_path: Path) -> None:
    run = _run(tmp_path, "slow")
    jv = run["job_verdict"]
    st = jv["straggler"]
    assert jv["bound"] == "input" and st is not None and st["rank"] == 2, jv
    ranks = _by_rank(run)
    wait2 = st["input_wait_ms_per_step"]
    assert wait2 >= 300, st                     # 4 samples x 100 ms by construction
    assert {o["rank"] for o in jv["others"]} == {0, 1, 3}
    for o in jv["others"]:
        # the others wait for rank 2 in the all-reduce about as long as rank 2 waits for its input
        assert abs(o["collective_wait_ms_per_step"] - wait2) <= 0.25 * wait2, (o, wait2)
        v = ranks[o["rank"]]["verdict"]
        assert v["waits_for"]["rank"] == 2 and "Waits for rank 2" in v["advice"], v
        assert abs(v["collective_wait_ms_per_step"] - wait2) <= 0.25 * wait2
    found = [f for f in ranks[2]["findings"] if f["id"] == "input-straggler"]
    assert len(found) == 1 and found[0]["impact"]["step_share"] >= 0.5, found
    assert ranks[2]["verdict"]["bound"] == "input" and "waits_for" not in ranks[2]["verdict"]
    # the fleet dataset's per-run report names the same rank's host
    row = _fleet_row(tmp_path)
    assert row["ranks"] == 4 and row["slowest_host"] == ranks[2]["host"] and row["job_input_wait_pct"] >= 50, row


def test_heavy_shard_named(tmp_path: Path) -> None:
    run = _run(tmp_path, "heavy")
    im = run["job_verdict"]["imbalance"]
    assert im is not None and im["rank"] == 2 and im["what"] == "bytes" and 1.8 <= im["ratio"] <= 2.2, im
    found = [f for f in _by_rank(run)[2]["findings"] if f["id"] == "imbalanced-shards"]
    assert len(found) == 1 and "rank 2" in found[0]["statement"], found
