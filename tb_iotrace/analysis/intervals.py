"""Sets of time intervals as two sorted numpy arrays (starts, ends)."""
from __future__ import annotations

import numpy as np

from tb_iotrace.model.stepwait import merge

__all__ = ["clip", "in_flight", "merge", "overlap"]


def overlap(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> int:
    """Length of the intersection of two disjoint sorted interval sets."""
    (as_, ae), (bs, be) = a, b
    total, i, j = 0, 0, 0
    while i < len(as_) and j < len(bs):
        lo, hi = max(as_[i], bs[j]), min(ae[i], be[j])
        if hi > lo:
            total += int(hi - lo)
        if ae[i] < be[j]:
            i += 1
        else:
            j += 1
    return total


def clip(iv: tuple[np.ndarray, np.ndarray], lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
    s, e = np.clip(iv[0], lo, hi), np.clip(iv[1], lo, hi)
    keep = e > s
    return s[keep], e[keep]


def in_flight(starts: np.ndarray, ends: np.ndarray,
              windows: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """How many of the calls [starts, ends] are in flight at once inside ``windows`` (sorted
    disjoint intervals): (count, time inside the windows) for each stretch of constant count.
    A call ending when another starts does not overlap it."""
    if not len(starts) or not len(windows[0]):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    t = np.concatenate([starts, ends])
    step = np.concatenate([np.ones(len(starts), np.int64), -np.ones(len(ends), np.int64)])
    order = np.lexsort((step, t))              # at equal times, ends (-1) before starts
    t, count = t[order], np.cumsum(step[order])
    ws, we = windows
    cum = np.concatenate([[0], np.cumsum(we - ws)])

    def inside(x: np.ndarray) -> np.ndarray:   # window time before x
        i = np.searchsorted(ws, x, side="right") - 1
        ok = i >= 0
        j = np.where(ok, i, 0)
        return np.where(ok, cum[j] + np.minimum(x - ws[j], we[j] - ws[j]), 0)

    w = inside(t[1:]) - inside(t[:-1])
    return count[:-1], w
