"""What a rank's checkpoint phase needs beside its own figures to be compared with the other
ranks' (:mod:`tb_iotrace.analysis.checkpoints.ranks`): when its bulk data was on disk, on which
file system, and the training time the findings' shares are of (docs/checkpoints.md).

- ``finish_ns``: the end of the last call (write, fsync, close, rename) on the phase's bulk
  files, those that moved at least 1/16 of its largest file's bytes: a coordinator's small
  metadata file written after the others' data (DCP's ``.metadata``, written once every rank
  reported) does not make it finish late;
- ``fs_type``, ``mount_point``: the file system of the phase's largest file.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tb_iotrace.analysis.checkpoints.phase_findings import training_time_ns
from tb_iotrace.analysis.context import Context

BULK_SHARE = 1 / 16

__all__ = ["add_facts", "training"]


def _finish_ns(ctx: Context, ph: dict[str, Any], off_ps: int) -> int:
    rows = np.asarray(ph.get("_rows", np.zeros(0, np.int64)), np.int64)
    if not len(rows):
        return int(ph["end_ns"])
    codes = ctx.path_code[rows]
    moved = np.clip(ctx.trace.returned[rows], 0, None) * ctx.data[rows] * ~ctx.is_sync[rows]
    per = np.bincount(codes, weights=moved, minlength=len(ctx.paths))
    if not per.max():
        return int(ph["end_ns"])
    bulk = np.flatnonzero(per >= per.max() * BULK_SHARE)
    mine = rows[np.isin(codes, bulk)]
    return min((int(ctx.e_ps[mine].max()) + off_ps) // 1000, int(ph["end_ns"]))


def add_facts(ctx: Context, phases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The phases (in place, and returned) with ``finish_ns``, ``fs_type`` and ``mount_point``."""
    tr = ctx.trace
    off = int(tr.start_ns[0]) * 1000 - int(ctx.s_ps[0]) if len(tr) else 0     # capture clock -> epoch ps
    for ph in phases:
        ph["finish_ns"] = _finish_ns(ctx, ph, off)
        m = ctx.mounts.lookup(ph["path"]) if ph.get("path") else None
        ph["fs_type"], ph["mount_point"] = (str(m.fs_type), str(m.mount_point)) if m is not None else ("", "")
    return phases


def training(ctx: Context) -> dict[str, Any]:
    """The run's training time the checkpoint findings' shares are of: ``{"time_ns", "steps",
    "basis"}`` (:func:`tb_iotrace.analysis.checkpoints.phase_findings.training_time_ns`)."""
    time_ns, steps, basis = training_time_ns(ctx)
    return {"time_ns": int(time_ns), "steps": steps, "basis": basis}
