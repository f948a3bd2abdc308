"""The verdict's advice on a real PyTorch job fits the machine that ran it
(tb_iotrace.analysis.loader_capacity): DataLoader workers that already keep every usable core
busy get no "more workers" advice, but what can help and the effect of halving the work. The
margin comes from the job's construction: as many workers as cores, each always busy
decoding (busy-waited wall time), the main process waiting for every batch."""
from __future__ import annotations

from pathlib import Path

import pytest

from test_diagnosis_jobs import diagnosis, run_job


@pytest.mark.torch
def test_workers_on_every_core_get_no_more_workers(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    result = run_job("torch_cores_busy", tmp_path)
    (path,) = result["written"]
    v, findings = diagnosis(path)
    n = result["num_workers"]
    assert v["bound"] == "input" and v["cause"] == "decode", v
    assert f"num_workers={n} ->" not in v["change"] and v["change"].startswith("no more DataLoader workers"), v
    for what in ("cheaper decode", "decode on the GPU", "preprocess offline", "more cores"):
        assert what in v["change"]
    # halving the work: at most half the step time (the model), never the whole wait
    assert -0.5 <= v["expected_step_time_change"] < 0, v
    top = findings[0]
    assert top["id"] == "input-bound" and top["suggestion"] == f"Biggest expected effect: {v['advice']}"
    assert "raise num_workers" not in top["suggestion"]
