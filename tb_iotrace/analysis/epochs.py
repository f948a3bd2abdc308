"""How many times a job was meant to read its data: the epochs a capture holds, so that a
dataset read once per epoch is not "read again" (``redundant-reads``, docs/findings.md).

Two sources, the larger wins:

- **the DataLoader's iterations** (PyTorch captures): the epochs begun in the window, plus the
  one under way when it began (:mod:`tb_iotrace.analysis.pytorch`);
- **the files' read pattern**: each data file's scans (an open of it; for a file opened once,
  a read that goes back to offset 0) in time order. When at least :data:`MIN_FILES` files are
  scanned the same number of times ``k >= 2`` and their ``j``-th scans all come before any of
  their ``j+1``-th (the dataset swept ``k`` times, one file after another, each once per sweep),
  the capture holds ``k`` epochs. A file read twice within a sweep breaks that order: reading
  twice within one epoch stays redundant, and so does one file read again and again alone
  (nothing tells its passes from epochs).
"""
from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

MIN_FILES = 2
OPENS = ("open", "open64", "openat", "openat64", "__open_2", "__open64_2", "__openat_2", "__openat64_2",
         "fopen", "fopen64")


def _scan_starts(ctx: Any) -> dict[int, list[int]]:
    """Per data file (path code): the start (ns) of each scan (see the module docstring)."""
    tr = ctx.trace
    out: dict[int, list[int]] = {}
    meta = ctx.meta_rows
    if len(meta):
        opens = meta[np.isin(tr.op[meta].astype(str), OPENS)]
        for c, t in zip(ctx.path_code[opens].tolist(), tr.start_ns[opens].tolist()):
            out.setdefault(c, []).append(int(t))
    out = {c: sorted(v) for c, v in out.items() if len(v) >= 2}
    rows = ctx.read_rows[(tr.offset[ctx.read_rows] >= 0) & (tr.returned[ctx.read_rows] > 0)]
    if len(rows):
        rows = rows[np.lexsort((tr.start_ns[rows], ctx.path_code[rows]))]
        code, off = ctx.path_code[rows], tr.offset[rows].astype(np.int64)
        first = np.ones(len(rows), bool)
        first[1:] = code[1:] != code[:-1]
        back = np.zeros(len(rows), bool)
        back[1:] = ~first[1:] & (off[1:] == 0) & (off[:-1] > 0)
        by_code: dict[int, list[int]] = {}
        for c, t in zip(code[first | back].tolist(), tr.start_ns[rows[first | back]].tolist()):
            by_code.setdefault(c, []).append(int(t))
        for c, v in by_code.items():
            if c not in out or len(out[c]) < 2:
                out[c] = v
    read = set(ctx.path_code[ctx.read_rows].tolist())
    return {c: v for c, v in out.items() if c in read}


def pattern_epochs(ctx: Any) -> int:
    """Epochs from the files' read pattern (1 when the pattern shows none)."""
    scans = _scan_starts(ctx)
    counts = Counter(len(v) for v in scans.values())
    if not counts:
        return 1
    k, files = counts.most_common(1)[0]
    if k < 2 or files < MIN_FILES:
        return 1
    swept = np.array([v for v in scans.values() if len(v) == k], np.int64)     # files x k
    lo, hi = swept.min(axis=0), swept.max(axis=0)
    return k if bool((hi[:-1] < lo[1:]).all()) else 1


def loader_epochs(ctx: Any) -> int:
    """Epochs of the DataLoaders a PyTorch capture iterated (1 for other captures)."""
    run = getattr(ctx, "torch", None)
    if run is None:
        return 1
    return max([len(d.get("epochs") or []) + 1 for d in run.loaders] or [1])


def epochs(ctx: Any) -> tuple[int, str]:
    """(epochs the capture holds, where that comes from: "DataLoader", "read pattern", "none")."""
    a, b = loader_epochs(ctx), pattern_epochs(ctx)
    if max(a, b) <= 1:
        return 1, "none"
    return (a, "DataLoader") if a >= b else (b, "read pattern")


__all__ = ["MIN_FILES", "epochs", "loader_epochs", "pattern_epochs"]
