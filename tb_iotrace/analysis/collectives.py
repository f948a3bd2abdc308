"""The collective wait of a capture: the share of step time a rank spends in collectives
(gradient all-reduce, reduce-scatter, all-gather, broadcast, barriers) (docs/diagnosis.md).

A data-parallel step ends in a collective that finishes when the last rank joins it: a rank
whose peers are late spends that time inside the collective. Which events are collectives
(:data:`COLLECTIVE`), on any host line and any device line:

- PyTorch (Kineto): ``gloo:*`` and ``nccl:*`` (the process group's work, from its enqueue to
  its end), ``c10d::*`` (the dispatched op), ``record_param_comms``, and the NCCL kernels on
  the GPU lines (``ncclKernel_*``, ``ncclDevKernel_*``);
- TensorFlow: the collective ops (``CollectiveReduceV2``, ``CollectiveGatherV2``,
  ``CollectiveBcastSend``/``Recv``, ``NcclAllReduce``, ``HorovodAllreduce``...), by their type
  after the colon of TF's ``<op name>:<op type>`` (``sgd/CollectiveReduceV2:CollectiveReduceV2``);
- XLA (TensorFlow and JAX on GPU/TPU): the HLO collectives on the device lines
  (``all-reduce``, ``all-reduce-start``/``-done``, ``all-gather``, ``reduce-scatter``,
  ``all-to-all``, ``collective-permute``), and JAX's ``psum``/``pmean``/``all_gather`` where
  they name an event.

The wait is the union of those events (two overlapping ones count once), inside the steps:
per step, and as a share of the steps' summed duration. It includes the collective's own
transfer: on one machine (gloo over loopback) that is small; across nodes, compare ranks (a
rank that waits for a peer spends far longer in the same collective than the peer does).
"""
from __future__ import annotations

import re
from typing import Any

import numpy as np

from tb_iotrace.model.named_spans import named_intervals, on_host_or_device
from tb_iotrace.model.stepwait import covered

COLLECTIVE = re.compile(
    r"^%?(gloo:|nccl:|c10d::|record_param_comms|nccl(Dev)?Kernel|Collective(Reduce|Gather|Bcast|Permute|AllToAll)"
    r"|NcclAllReduce|Horovod(Allreduce|Allgather|Broadcast)"
    # HLO instruction names are the op, an optional -start/-done and a numeric suffix: XLA's
    # compiler passes (``all-reduce-promotion``, ``all_to_all_decomposer`` on its compiler
    # threads) are not collectives
    r"|((all|reduce)[-_](reduce|gather|scatter|to[-_]all)|collective[-_]permute)([-_](start|done))?(\.\d+)*$"
    r"|p(sum|mean|max|min)\b|all_gather\b)", re.I)

__all__ = ["COLLECTIVE", "collective_fields", "collective_intervals", "is_collective", "per_step"]


def is_collective(name: str) -> bool:
    """Whether an event of this name is a collective (see the module docstring); a TensorFlow
    op event is named ``<op name>:<op type>``, its type after the last colon."""
    if COLLECTIVE.match(name) is not None:
        return True
    kind = name.rsplit(":", 1)[-1] if ":" in name else ""
    return bool(kind) and COLLECTIVE.match(kind.strip()) is not None


def collective_intervals(space: Any) -> tuple[np.ndarray, np.ndarray]:
    """The collectives of every host and device line of ``space``, merged (ps, the capture's
    clock); tb_iotrace's own I/O lines are left out."""
    return named_intervals(space, is_collective, on_host_or_device)


def per_step(iv: tuple[np.ndarray, np.ndarray], steps: list[dict[str, Any]]) -> np.ndarray:
    """The collective wait inside each step (ps), ``steps`` with ``start_ps``/``end_ps``."""
    if not steps:
        return np.zeros(0, np.int64)
    return covered(iv, [s["start_ps"] for s in steps], [s["end_ps"] for s in steps])


def collective_fields(space: Any, steps: list[dict[str, Any]]) -> dict[str, Any]:
    """The verdict's collective fields, and ``collective_wait_ps`` set on each step (in place):
    ``collective_wait_share`` (None without steps or without a host timeline: nothing to take
    the share of), ``collective_wait_ms_per_step``, ``collectives`` (whether any collective
    event is in the capture)."""
    if space is None:
        return {"collective_wait_share": None, "collective_wait_ms_per_step": None, "collectives": False}
    iv = collective_intervals(space)
    per = per_step(iv, steps)
    for s, c in zip(steps, per.tolist()):
        s["collective_wait_ps"] = int(c)
    time = sum(max(0, s["end_ps"] - s["start_ps"]) for s in steps)
    if not steps or time <= 0:
        return {"collective_wait_share": None, "collective_wait_ms_per_step": None, "collectives": bool(len(iv[0]))}
    return {"collective_wait_share": float(per.sum()) / time,
            "collective_wait_ms_per_step": float(per.sum()) / len(steps) / 1e9, "collectives": bool(len(iv[0]))}
