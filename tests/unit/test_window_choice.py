"""tb_iotrace.recording.window_choice: the window of a process that imports PyTorch beside
TensorFlow or JAX goes to the framework whose training loop runs."""
from __future__ import annotations

from tb_iotrace.recording.window_choice import PYTORCH, choose


def test_without_torch_hooks_the_tensorflow_or_jax_pick_stands() -> None:
    assert choose("tensorflow", False, 0, 0, None) == "tensorflow"
    assert choose("jax", False, 5, 0, None) == "jax"
    assert choose(None, False, 5, 0, None) is None


def test_torch_alone_takes_torch_windows_before_its_loop_runs() -> None:
    assert choose(None, True, 0, 0, None) == PYTORCH


def test_the_loop_that_runs_wins() -> None:
    # a DataLoader iterated in a job that only imported TensorFlow (DLIO's PyTorch workloads)
    assert choose("tensorflow", True, 40, 0, None) == PYTORCH
    # a Keras fit (tf.function calls) in a job that imported torch too
    assert choose("tensorflow", True, 0, 12, None) == "tensorflow"
    assert choose("tensorflow", True, 3, 12, PYTORCH) == "tensorflow"
    # JAX fed by torch's DataLoader: the DataLoader's steps are PyTorch's windows
    assert choose("jax", True, 8, 0, None) == PYTORCH


def test_a_quiet_period_keeps_the_last_choice() -> None:
    assert choose("tensorflow", True, 0, 0, PYTORCH) == PYTORCH
    assert choose("tensorflow", True, 0, 0, "tensorflow") == "tensorflow"
    assert choose("tensorflow", True, 5, 5, "tensorflow") == "tensorflow"
    assert choose("tensorflow", True, 5, 5, None) == PYTORCH


def test_no_loop_yet_beside_tensorflow_takes_no_window() -> None:
    # TensorFlow imported beside torch is no TensorFlow loop: a window now would be an empty one
    assert choose("tensorflow", True, 0, 0, None) is None
    # JAX's loop has no counted call: its windows as before
    assert choose("jax", True, 0, 0, None) == "jax"
    # a last choice of a framework no longer picked does not stand
    assert choose("jax", True, 0, 0, "tensorflow") == "jax"
