"""orbax's ``wait_until_finished`` as blocking: a job that waits for an async save's background
writes (right after the save, or before the next one) stops its loop there, and the wait is
part of that save's ``blocking_ns`` (docs/checkpoints.md).

The waits are noted calls (:mod:`tb_iotrace.base.ckptcalls`, kind ``wait``) of a whole-run
record or a capture's I/O record. A wait belongs to the last orbax save that started before
it; it blocks when made on the training thread (the host line that holds the steps; any
thread when the capture has no steps, and in a whole-run record, which has no timeline) while
the training goes on: before the last step ends, or, without steps, before another orbax save
(a job that has finished its loop waits for its last save too: that stops no training). The
time it adds is what the save's blocked stretches do not already cover.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tb_iotrace.analysis.checkpoints.spans import call_line, epoch_offset_ps, hook_spans, noted_calls
from tb_iotrace.analysis.context import Context
from tb_iotrace.analysis.intervals import merge

ORBAX = "orbax.checkpoint"

__all__ = ["add_waits"]


def _covered(block: list[tuple[int, int]]) -> int:
    if not block:
        return 0
    s, e = merge(np.array([a for a, _ in block], np.int64), np.array([b for _, b in block], np.int64))
    return int((e - s).sum())


def add_waits(ctx: Context, phases: list[dict[str, Any]], space: Any = None) -> list[dict[str, Any]]:
    """The phases (in place, and returned) with each orbax save's waits in its ``blocking_ns``
    and blocked stretches (``_block``, capture-clock ps)."""
    waits = [c for c in noted_calls(ctx) if c.get("kind") == "wait"]
    saves = sorted((p for p in phases if p["kind"] == "save" and str(p.get("source", "")).startswith(ORBAX)),
                   key=lambda p: int(p["start_ns"]))
    if not waits or not saves or not len(ctx.trace):
        return phases
    _, step_lines = hook_spans(space)
    off = epoch_offset_ps(ctx)
    steps = ctx.att.steps if ctx.att is not None else []
    # the training goes on after a wait that starts before this (epoch ns)
    last_ns = ((max(int(st.end_ps) for st in steps) + off) // 1000 if steps
               else max(int(p["start_ns"]) for p in saves))
    for w in waits:
        try:
            start, end = int(w["start_ns"]), int(w["end_ns"])
        except (KeyError, TypeError, ValueError):
            continue
        if step_lines and call_line(ctx, w.get("tid")) not in step_lines:
            continue       # another thread waited: the loop ran on
        owner = next((p for p in reversed(saves) if int(p["start_ns"]) <= start), None)
        if owner is None or end <= start or start >= last_ns:
            continue
        block = list(owner.get("_block") or [])
        before = _covered(block)
        block.append((start * 1000 - off, end * 1000 - off))
        owner["_block"] = block
        owner["blocking_ns"] = int(owner.get("blocking_ns", 0)) + (_covered(block) - before) // 1000
    return phases
