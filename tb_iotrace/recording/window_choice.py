"""Which profiler ``tb-iotrace run --profile-every`` takes the next window on, in a process
that may import PyTorch beside TensorFlow or JAX: the framework whose training loop runs.

Without PyTorch's step hooks armed (no torch, or a DataLoader worker), TensorFlow or JAX as
:func:`tb_iotrace.recording.window_writer.pick_framework` picks (unchanged). With them and no
TensorFlow or JAX, PyTorch. With both, the loop's calls since the last choice decide
(:mod:`tb_iotrace.recording.loop_activity`): PyTorch's (a DataLoader iterated, an optimizer
step) against the other's (a tf.data iterator's ``next()``, a ``tf.function`` call: Keras'
``fit``), the more calls winning; with none in the period, the last choice stands; with none yet
at all, JAX when JAX is the other (its loop has no call counted here), else no window until a
loop runs (TensorFlow imported beside torch is not a TensorFlow loop).
"""
from __future__ import annotations

PYTORCH = "pytorch"

__all__ = ["PYTORCH", "choose"]


def choose(other: str | None, torch_armed: bool, torch_calls: int, other_calls: int,
           last: str | None) -> str | None:
    """The framework of the next window: ``other`` the TensorFlow/JAX pick (None without
    either), ``torch_armed`` whether PyTorch's step hooks are in, ``torch_calls`` and
    ``other_calls`` the loops' calls since the last choice, ``last`` the last choice made."""
    if not torch_armed:
        return other
    if other is None:
        return PYTORCH
    if torch_calls > other_calls:
        return PYTORCH
    if other_calls > torch_calls:
        return other
    if last in (PYTORCH, other):
        return last
    if torch_calls:            # a tie of two running loops: the one armed for its steps
        return PYTORCH
    return other if other == "jax" else None
