"""Sets of time intervals as two sorted numpy arrays (starts, ends)."""
from __future__ import annotations

import numpy as np


def merge(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Union of intervals as sorted disjoint intervals."""
    keep = ends > starts
    s, e = starts[keep], ends[keep]
    if not len(s):
        return s, e
    order = np.argsort(s, kind="stable")
    s, e = s[order], e[order]
    run_end = np.maximum.accumulate(e)
    new = np.ones(len(s), bool)
    new[1:] = s[1:] > run_end[:-1]
    heads = np.flatnonzero(new)
    return s[heads], np.maximum.reduceat(e, heads)


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
