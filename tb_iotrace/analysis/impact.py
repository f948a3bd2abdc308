"""What a finding costs the step, and the severity that follows from it (docs/diagnosis.md).

``impact``: ``{"step_share": float | None, "ms_per_step": float | None, "basis": str}``:

- the time the step is **blocked** by the finding's calls: the part of the input wait during
  which one of them was in flight (the loader's reads the step waits for), plus the calls on the
  training thread inside steps (a write or read the step makes itself); ``input-bound`` costs
  its whole wait, ``worker-restarts`` the workers' starts and stops;
- ``step_share`` that time over the steps' time; ``ms_per_step`` per step (basis ``"steps"``);
  without step markers over the span of the input waits, ``ms_per_step`` None (basis
  ``"input waits"``); with no host timeline at all (a whole-run record) both None (basis
  ``"no timeline"``: nothing says whether the job waited) and the severity is the rule's.

Severity: under ``impact_info_share`` of step time a finding is ``info`` whatever its pattern
(and its statement says why); from ``impact_critical_share`` ``critical``; between, the rule's
own (``warning`` for most, ``info`` for rules that only inform: then ``warning``).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tb_iotrace.model.stepwait import covered, input_wait, merge
from tb_iotrace.analysis.context import Context
from tb_iotrace.analysis.pytorch import worker_starts, worker_stops
from tb_iotrace.analysis.thresholds import Thresholds


def _window(ctx: Context, steps: list[dict[str, Any]]) -> tuple[int, int | None, str]:
    """(time the shares are of, steps or None, basis)."""
    if ctx.att is None:
        return 0, None, "no timeline"
    iw = input_wait(ctx.wait_iv, [s["start_ps"] for s in steps], [s["end_ps"] for s in steps])
    if iw.basis == "steps":
        return iw.time, iw.count, "steps"
    if iw.basis == "input waits":
        return iw.time, None, "input waits"
    return 0, None, "no input waits"


def blocked_ps(ctx: Context, rows: np.ndarray) -> int:
    """Picoseconds the step is blocked by the calls ``rows``: in flight during an input wait, or
    on the training thread inside a step."""
    if not len(rows):
        return 0
    calls = merge(ctx.s_ps[rows], ctx.e_ps[rows])
    ws, we = ctx.wait_iv
    in_wait = int(covered(calls, ws, we).sum()) if len(ws) else 0
    own = rows[ctx.train_rows[rows]]
    if ctx.att is not None:
        own = own[ctx.att.step[own] >= 0]
    if not len(own):
        return in_wait
    mine = merge(ctx.s_ps[own], ctx.e_ps[own])
    both = int(covered(mine, ws, we).sum()) if len(ws) else 0
    return in_wait + int((mine[1] - mine[0]).sum()) - both


def impact_of(ctx: Context, steps: list[dict[str, Any]], finding: dict[str, Any],
              rows: np.ndarray | None) -> dict[str, Any]:
    time, nsteps, basis = _window(ctx, steps)
    fid = finding["id"]
    if basis == "no timeline" or time <= 0:
        return {"step_share": None, "ms_per_step": None, "basis": basis}
    if fid == "input-bound":
        cost = round(finding["evidence"]["input_wait_s"] * 1e12)
    elif fid == "worker-restarts":
        cost = round(finding["evidence"]["cost_s"] * 1e12)
    else:
        cost = blocked_ps(ctx, rows) if rows is not None else 0
    share = min(cost / time, 1.0)
    return {"step_share": share, "ms_per_step": cost / nsteps / 1e9 if nsteps else None, "basis": basis}


def grade(th: Thresholds, finding: dict[str, Any]) -> None:
    """Set the finding's severity from its impact (in place); say why when it is lowered."""
    share = finding["impact"]["step_share"]
    if share is None:
        return
    was = finding["severity"]
    if share < th.impact_info_share:
        finding["severity"] = "info"
        if was != "info":
            ms = finding["impact"]["ms_per_step"]
            per = "" if ms is None else (f", {ms:.2f} ms per step" if ms >= 0.1 else f", {ms * 1e3:.0f} us per step")
            finding["statement"] += (f" But the step waits on these calls only {100 * share:.1f}% of its time"
                                     f"{per}: under {100 * th.impact_info_share:.0f}% this is info, not a "
                                     f"{was}.")
    elif share >= th.impact_critical_share:
        finding["severity"] = "critical"
    elif was == "info":
        finding["severity"] = "warning"


__all__ = ["blocked_ps", "grade", "impact_of"]
