"""Object-storage requests per step, attributed as file calls are
(:func:`tb_iotrace.analysis.attribution.attribute`): a request counts in the step its start
falls in (``[start, end)``), its bytes with it; a request that starts outside every step counts
in none. Used by the report's steps and the tab's ``/steps`` (docs/objects.md)."""
from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["add_object_steps", "per_step"]


def per_step(starts: np.ndarray, ends: np.ndarray, req_start: np.ndarray,
             req_bytes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(requests, bytes) per step, for steps ``[starts_k, ends_k)`` sorted by start and
    requests starting at ``req_start`` (same clock) that moved ``req_bytes``."""
    k = len(starts)
    count = np.zeros(k, np.int64)
    moved = np.zeros(k, np.int64)
    if not k or not len(req_start):
        return count, moved
    pos = np.searchsorted(starts, req_start, side="right") - 1
    ok = (pos >= 0) & (req_start < ends[np.clip(pos, 0, k - 1)])
    np.add.at(count, pos[ok], 1)
    np.add.at(moved, pos[ok], np.maximum(req_bytes[ok], 0))
    return count, moved


def add_object_steps(steps: list[dict[str, Any]], reqs: list[dict[str, Any]], origin_ns: int) -> bool:
    """Put ``object_requests`` and ``object_bytes`` in each of the report's ``steps`` (capture
    ps, ``start_ps``/``end_ps``) from ``reqs`` (rows of :mod:`tb_iotrace.store.objcolumns`,
    epoch ns; the capture clock's 0 at ``origin_ns``). Nothing changes when there are no
    requests (False)."""
    if not steps or not reqs:
        return False
    starts = np.array([s["start_ps"] for s in steps], np.int64)
    ends = np.array([s["end_ps"] for s in steps], np.int64)
    o = np.argsort(starts, kind="stable")
    rs = (np.array([int(r["start_ns"]) for r in reqs], np.int64) - int(origin_ns)) * 1000
    rb = np.array([int(r["bytes"]) for r in reqs], np.int64)
    count, moved = per_step(starts[o], ends[o], rs, rb)
    for j, i in enumerate(o.tolist()):
        steps[i]["object_requests"] = int(count[j])
        steps[i]["object_bytes"] = int(moved[j])
    return True
