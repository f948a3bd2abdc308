"""A PyTorch job that also imports TensorFlow (as DLIO does) under ``tb-iotrace run
--profile-every``: the windows are torch.profiler's, taken at its DataLoader's iterations, and
diagnosed (decode-bound, as the same job without TensorFlow); no TensorFlow window is taken, in
either import order. Before, the job got TensorFlow windows (TensorFlow imported first: no
PyTorch window at all) or both kinds (torch first), and no PyTorch verdict from the first."""
from __future__ import annotations

import glob
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tb_iotrace.store.kineto import io_record, read_trace

from test_diagnosis_jobs import assert_bound

SCRIPTS = Path(__file__).parent / "scripts"
QUIET = {"TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": ""}


@pytest.mark.slow
@pytest.mark.tf
@pytest.mark.torch
@pytest.mark.parametrize("order", ["tf-first", "torch-first"])
def test_a_torch_job_that_imports_tensorflow_gets_torch_windows(order: str, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("tensorflow")
    log = tmp_path / "log"
    env = dict(os.environ, **QUIET,
               PYTHONPATH=os.pathsep.join([str(SCRIPTS), os.environ.get("PYTHONPATH", "")]))
    # 14 s of steps, windows of 2 s every 4 s: TensorFlow's import takes seconds under load, and
    # the loop's first windows must still run their length (test_torch_zero_touch's margins)
    proc = subprocess.run([sys.executable, "-m", "tb_iotrace", "run", "--logdir", str(log), "--profile-every", "4",
                           "--profile-for", "2", "--", sys.executable, str(SCRIPTS / "torch_beside_tf.py"), order,
                           str(tmp_path), "decode", "14"], capture_output=True, text=True, timeout=400, env=env)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "steps " in proc.stdout
    tf_windows = glob.glob(str(log / "plugins" / "profile" / "*" / "*.xplane.pb"))
    assert tf_windows == [], tf_windows
    traces = sorted((log / "pytorch").glob("*/*.pt.trace.json"))
    assert len(traces) >= 2, (traces, proc.stderr[-2000:])
    full = []
    for path in traces:
        rec = io_record(read_trace(str(path)))
        assert rec is not None and rec["steps_from"] == "dataloader", rec
        assert rec["window_origin"]["by"] == "tb-iotrace run --profile-every"
        main = rec["processes"][0]
        wall = main["end_ns"] - main["start_ns"]
        # every process's CPU time over the window
        assert main["role"] == "main" and 0 < main["cpu_ns"] < 16 * wall, main.get("cpu_ns")
        workers = [p for p in rec["processes"] if p["role"] == "worker"]
        assert workers and all(p["cpu_ns"] > 0 for p in workers)
        # and the time its threads waited for a core (the workers model's W: tb_iotrace.base.run_delay)
        assert all(0 <= p["run_delay_ns"] <= 16 * wall for p in rec["processes"] if p["role"]), rec["processes"]
        if wall >= 1.5e9:
            full.append(path)
    assert full, "no window ran its whole length"
    for path in full:
        v, _ = assert_bound(str(path), "decode", "num_workers=1 -> ")
        assert any("DataLoader's iterations" in n for n in v["notes"]), v["notes"]


@pytest.mark.slow
@pytest.mark.tf
@pytest.mark.torch
def test_a_keras_fit_that_imports_torch_keeps_tensorflow_windows(tmp_path: Path) -> None:
    """The other way round: torch imported, the loop Keras' fit (its train step a tf.function):
    TensorFlow's windows, none of PyTorch's."""
    pytest.importorskip("torch")
    pytest.importorskip("keras")
    from tb_iotrace.store.window_origin import read_origin

    log = tmp_path / "log"
    # 20 s of fitting: a window every 3 s is taken once the loop has run a period, and under load
    # (a loaded CI runner) a window's stop and export take seconds: 10 s gave none once. Not
    # --quiet: a failure shows what the windows said
    proc = subprocess.run([sys.executable, "-m", "tb_iotrace", "run", "--logdir", str(log), "--profile-every", "3",
                           "--profile-for", "1", "--", sys.executable,
                           str(SCRIPTS / "keras_fit_beside_torch.py"), str(tmp_path / "out"), "20"],
                          capture_output=True, text=True, timeout=400, env=dict(os.environ, **QUIET))
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert not (log / "pytorch").exists(), sorted((log / "pytorch").rglob("*"))
    windows = sorted(glob.glob(str(log / "plugins" / "profile" / "*" / "*.xplane.pb")))
    assert len(windows) >= 2, (windows, proc.stderr[-2000:])
    assert all((read_origin(x) or {}).get("framework") == "tensorflow" for x in windows)
