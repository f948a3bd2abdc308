"""Which framework's training loop runs in this process: counts of its loop's calls, for
``tb-iotrace run --profile-every`` to take its windows on that framework's profiler
(:mod:`tb_iotrace.recording.window_choice`) in a process that imports more than one (DLIO's
PyTorch workloads import TensorFlow too).

- PyTorch: a DataLoader iterator's ``__next__`` and an optimizer's ``step()`` (counted by the
  step-boundary hooks, :mod:`tb_iotrace.recording.pytorch.parent.step_windows`);
- TensorFlow (or JAX fed by tf.data): a tf.data iterator's ``__next__`` called from Python
  (:mod:`tb_iotrace.recording.tf_iterator`) and a ``tf.function`` call (Keras' ``fit`` runs its
  train step as one; :mod:`tb_iotrace.recording.tf_loop_signal`).

A count is one integer increment on the training thread; the windows' thread reads the counts
(a lost increment between the two only delays a choice by a period).
"""
from __future__ import annotations

TORCH = "pytorch"
TF = "tensorflow"

COUNTS: dict[str, int] = {TORCH: 0, TF: 0}

__all__ = ["COUNTS", "TF", "TORCH", "snapshot"]


def snapshot() -> dict[str, int]:
    """The counts now (a copy)."""
    return dict(COUNTS)
