"""Level of detail: what one lane row shows in a time window at a given resolution.

Coordinate spaces (the same names as in ``plugin_frontend/timeline/coords.js``):

- *time*: ns since the capture's profile start (int64 on the server, a JS number on the
  client: exact to 2^53 ns, about 104 days).
- *x*: CSS pixels from the left edge of the timeline's plot area.
  ``x = (t - t0) / ns_per_px`` with ``ns_per_px = (t1 - t0) / width``.

The server merges, per row, runs of consecutive events that are narrower than one pixel
and start in the same pixel column into one item (``count`` > 1, the union of their
extents, the summed bytes), and sends every event at least one pixel wide as itself. A row
therefore sends at most about two items per pixel column whatever the number of events,
which bounds the response for a million events to what the screen can show.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MIN_PX = 1.0


@dataclass
class Items:
    """Drawable items of one row (columnar). ``first`` is the lane index of the first event
    of the item; ``count`` how many events it stands for."""

    start: np.ndarray
    end: np.ndarray
    first: np.ndarray
    count: np.ndarray

    def __len__(self) -> int:
        return len(self.start)


def window(start: np.ndarray, maxend: np.ndarray, a: int, b: int, t0: float, t1: float) -> tuple[int, int]:
    """Index range [i0, i1) within row [a, b) of events that may overlap [t0, t1]:
    ``maxend`` is the running max of the ends, so it is sorted and every event before i0
    ends before t0."""
    i0 = a + int(np.searchsorted(maxend[a:b], t0, side="left"))
    i1 = a + int(np.searchsorted(start[a:b], t1, side="right"))
    return i0, max(i0, i1)


def merge_row(start: np.ndarray, end: np.ndarray, i0: int, i1: int, t0: float, ns_per_px: float) -> Items:
    """Merge sub-pixel events of one row window (see the module docstring)."""
    s = start[i0:i1]
    e = end[i0:i1]
    n = len(s)
    if n == 0:
        z = np.zeros(0, dtype=np.int64)
        return Items(z, z, z, z)
    wide = (e - s) >= MIN_PX * ns_per_px
    # pixel column of each start; truncation puts starts left of the window (x < 0) in
    # column 0, where they are drawn clipped anyway
    col = ((s - t0) * (1.0 / ns_per_px)).astype(np.int64)
    brk = np.empty(n, dtype=bool)
    brk[0] = True
    if n > 1:
        np.not_equal(col[1:], col[:-1], out=brk[1:])
        brk[1:] |= wide[1:]
        brk[1:] |= wide[:-1]
    heads = np.flatnonzero(brk)
    count = np.diff(np.append(heads, n))
    g_end = np.maximum.reduceat(e, heads) if n else e
    return Items(start=s[heads], end=g_end, first=heads + i0, count=count)


def group_sum(values: np.ndarray, items: Items) -> np.ndarray:
    """Sum of ``values`` (aligned with the lane) over each item's events."""
    if len(items) == 0:
        return np.zeros(0, dtype=values.dtype)
    return np.add.reduceat(values[items.first[0]:items.first[-1] + items.count[-1]],
                           items.first - items.first[0])
