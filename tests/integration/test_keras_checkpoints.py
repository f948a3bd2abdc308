"""Keras ModelCheckpoint under ``tb-iotrace run``: each epoch's .keras save is a phase named by
its call (``keras.Model.save``, what ModelCheckpoint calls; docs/checkpoints.md), its bytes the
file's."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("keras")
pytestmark = [pytest.mark.tf, pytest.mark.slow]
PY = sys.executable
JOB = Path(__file__).parent / "scripts" / "keras_checkpoint_job.py"


def test_model_checkpoint_saves_are_phases(tmp_path: Path) -> None:
    logdir = tmp_path / "logs"
    r = subprocess.run([PY, "-m", "tb_iotrace", "run", "--logdir", str(logdir), "--", PY, str(JOB), str(tmp_path)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-4000:]
    sizes = json.loads(r.stdout.strip().splitlines()[-1])
    assert len(sizes) == 3
    rep = subprocess.run([PY, "-m", "tb_iotrace", "report", str(logdir), "--json"], capture_output=True, text=True,
                         timeout=120)
    (run,) = json.loads(rep.stdout)["runs"]
    saves = [p for h in run["hosts"] for p in h["checkpoints"] if p["kind"] == "save"]
    assert sorted(p["path"] for p in saves) == sorted(sizes)
    for p in saves:   # zipfile writes each member's header again once its size is known: a few bytes more
        assert sizes[p["path"]] <= p["bytes"] <= sizes[p["path"]] + 4096
        assert p["source"] == "keras.Model.save" and p["blocking_ns"] > 0, p
