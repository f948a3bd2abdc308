"""bench/gpu_check.py, the few-minute check of a CUDA machine, run here on the CPU (--device cpu)
so that one run on a GPU machine suffices: its PyTorch and JAX jobs pass and say what they saw,
its TensorFlow job passes where TensorFlow is importable and is skipped with a printed line where
it is not (the GPU machine has no TensorFlow), and a failed assertion makes it exit 1."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "gpu_check.py"


def run(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    proc = subprocess.run([sys.executable, str(SCRIPT), "--device", "cpu", "--quick", "--out", str(tmp_path / "out"),
                           *args], capture_output=True, text=True, timeout=300, env=env)
    return proc.returncode, proc.stdout + proc.stderr


@pytest.mark.torch
@pytest.mark.jax
def test_torch_and_jax_jobs_pass_on_cpu(tmp_path: Path) -> None:
    rc, out = run(tmp_path, "--only", "torch", "--only", "jax")
    assert rc == 0, out[-4000:]
    assert "gpu_check: 2 of 2 jobs passed" in out
    # PyTorch: the workers' reads, one I/O lane per worker in the tab
    assert "  torch: OK" in out and "(worker): " in out and "I/O lanes: worker " in out
    # the tuned twin (persistent workers, a 300 ms step standing for the GPU): not input-bound,
    # asserted by the check itself
    assert "verdict expected: not input; got: not input " in out
    # JAX: the check read from the loaded jaxlib, every .npy file's bytes, four steps
    assert "checks a table of exactly 80 bytes; table 80, registered True" in out
    assert "report: 1 host(s), 4/4 data files read" in out and "4 files, 4 steps" in out
    assert "  jax: OK" in out


@pytest.mark.tf
def test_tensorflow_job_passes_on_cpu(tmp_path: Path) -> None:
    rc, out = run(tmp_path, "--only", "tf")
    assert rc == 0, out[-4000:]
    assert "report: 1 host(s), 4/4 data files read" in out and "  tf: OK" in out


def test_tensorflow_missing_is_skipped_with_a_line(tmp_path: Path) -> None:
    """A machine without TensorFlow (played: a ``tensorflow`` package that fails to import)."""
    fake = tmp_path / "fake"
    (fake / "tensorflow").mkdir(parents=True)
    (fake / "tensorflow" / "__init__.py").write_text("raise ImportError('No module named tensorflow (played)')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(fake), os.environ.get("PYTHONPATH", "")]))
    rc, out = run(tmp_path, "--only", "tf", env=env)
    assert rc == 0, out[-4000:]
    assert "== TensorFlow: not importable on this machine (ImportError: No module named tensorflow (played)): " \
           "skipped" in out


@pytest.mark.jax
def test_a_failed_assertion_exits_1(tmp_path: Path) -> None:
    """--device cuda on a machine where JAX has no GPU: the JAX job's GPU assertion fails, the
    check says so and exits 1 (the job itself ran: the CPU is what JAX found)."""
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    proc = subprocess.run([sys.executable, str(SCRIPT), "--device", "cuda", "--quick", "--only", "jax",
                           "--out", str(tmp_path / "out")], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "jax: FAILED" in proc.stdout and "jax runs on cpu, not on the GPU" in proc.stdout
    assert "gpu_check: 0 of 1 jobs passed, failed: jax" in proc.stdout
