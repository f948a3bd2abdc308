"""The "All hosts" view's job verdict (/findings of every host): four ranks made from a real
gloo rank's trace (tb_iotrace.plugin.synthetic_ranks), rank 2 slow: the answer's job verdict
names rank 2, its input-straggler finding is on rank 2's host, the other ranks' verdicts say
they wait for it; the same as `tb-iotrace report`."""
from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("tensorboard")
sys.path.insert(0, str(Path(__file__).resolve().parent / "fixtures"))
from plugin_client import make_client  # noqa: E402

from tb_iotrace.plugin.synthetic_ranks import make_ranks  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "data"


def _all(get, run: str) -> dict:
    deadline = time.monotonic() + 240
    while True:
        code, body = get("/findings", run=run, host="__all__")
        assert code == 200, body
        if not body["pending"] or time.monotonic() > deadline:
            return body
        time.sleep(0.5)


def test_all_hosts_job_verdict_names_the_slow_rank(tmp_path):
    make_ranks(DATA / "ddp_rank0.pt.trace.json.gz", tmp_path / "logs", 4, 2)
    _, get = make_client(tmp_path / "logs")
    code, runs = get("/runs")
    assert code == 200
    body = _all(get, "logs")
    assert body["pending"] == 0
    jv = body["job_verdict"]
    assert jv is not None and jv["ranks"] == 4 and jv["straggler"]["rank"] == 2, jv
    (f,) = [f for f in body["findings"] if f["id"] == "input-straggler"]
    assert f["host"] == jv["straggler"]["host"]
    told = {v["host"]: v.get("waits_for", {}).get("rank") for v in body["verdicts"]}
    assert sorted(told.values(), key=str) == [2, 2, 2, None], told
    shares = [(x.get("impact") or {}).get("step_share") or 0.0 for x in body["findings"]]
    assert shares == sorted(shares, reverse=True) and f["impact"]["step_share"] > 0.5   # ordered by what they cost


def test_one_host_has_no_job_verdict(tmp_path):
    make_ranks(DATA / "ddp_rank0.pt.trace.json.gz", tmp_path / "logs", 2, None)
    _, get = make_client(tmp_path / "logs")
    body = _all(get, "logs")
    assert body["job_verdict"] is not None and body["job_verdict"]["straggler"] is None
    code, one = get("/findings", run="logs", host="rank0")
    assert code == 200 and one["job_verdict"] is None
