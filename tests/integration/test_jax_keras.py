"""Keras 3 on the JAX backend, its TensorBoard callback with profile_batch: the profiled window
carries the I/O of the batches it profiles, and its steps ("Profiled batch <n>") attribute it.
Keras profiles the JAX backend only on Python >= 3.12 (it warns and writes no capture on 3.11),
so the workload runs in the 3.12 venv ./dev.sh sets up (TBIO_PY312)."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tb_iotrace.analysis.attribution import attribute, op_kind
from tb_iotrace.store.xplane import load_xspace, read_io_data

pytestmark = pytest.mark.jax
ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).parent / "scripts" / "keras_jax_window.py"


def python312() -> str:
    env = os.environ.get("TBIO_PY312")
    if env and Path(env).is_file():
        return env
    key = hashlib.sha256((ROOT / "requirements-py312.txt").read_bytes()).hexdigest()[:16]
    cached = Path.home() / ".cache" / "tb_iotrace" / f"venv312-{key}" / "bin" / "python"
    if cached.is_file():
        return str(cached)
    pytest.fail("no Python 3.12 venv for the Keras-on-JAX test: run ./dev.sh setup (it builds "
                f"{cached.parent.parent} from requirements-py312.txt)")


def test_keras_profile_batch_on_jax(tmp_path: Path) -> None:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", JAX_PLATFORMS="cpu", CUDA_VISIBLE_DEVICES="",
               PYTHONPATH=str(ROOT))
    proc = subprocess.run([python312(), str(SCRIPT), str(tmp_path), "2"], capture_output=True, text=True,
                          timeout=400, env=env)
    assert proc.returncode == 0, proc.stderr[-4000:]
    res = json.loads((tmp_path / "result.json").read_text())
    assert len(res["xplanes"]) == 1, res["xplanes"]
    space = load_xspace(res["xplanes"][0])
    trace = read_io_data(space)
    assert trace is not None, "the Keras window has no I/O plane"
    att = attribute(space, trace)
    # profile_batch=(2, 4): Keras's global batches 2..4, its "Profiled batch <n>" events count from 0
    assert [(s.name, s.step_num) for s in att.steps] == [(f"Profiled batch {n}", n) for n in (1, 2, 3)]
    is_read = np.array([op_kind(o) == "read" for o in trace.op]) & (trace.errno == 0)
    read_files = {p for p in set(trace.path[is_read].tolist()) if p in res["files"]}
    # Keras's JAX trainer fetches a batch inside its step: the window holds batches 1..3's files
    assert read_files == {res["files"][i] for i in (1, 2, 3)}, read_files
    for path in read_files:
        i = res["files"].index(path)
        rows = np.flatnonzero(is_read & (trace.path == path))
        # each batch file read whole, once, inside the window
        assert int(trace.returned[rows].sum()) == res["sizes"][i], path
    # reads during a profiled batch are attributed to it
    inside = np.flatnonzero(is_read & np.isin(trace.path, list(read_files)) & (att.step >= 0))
    assert len(inside) > 0
