"""Darshan HEATMAP records (module 15, version 1) from the whole-run time series.

Darshan's heatmap module keeps, per process and per instrumented module, the bytes read and
written per time bin: bins of 0.1 s from the job start, doubled (pairs merged) until the run
fits in 200 bins; at shutdown every rank's records are cut to ``ceil(run length / width)`` bins
of the one width, so all ranks share one grid (PyDarshan refuses records that do not). Empty
heatmaps are dropped. Record: ``{id, rank, double bin_width_seconds, int64 nbins, two pointer
slots}`` then ``nbins`` write bins and ``nbins`` read bins (int64); named ``heatmap:<MODULE>``.

Here the same grid is computed for the log's whole job (earliest process start to latest end),
and each of a process's series bins lands whole in the grid bin holding its start (a call
counts in the bin it began in, as the native bins count it; Darshan spreads one call's bytes
over the bins it spans): each module's bins sum exactly to its files' bytes, and a time is
off by at most one of the series' own bins (~1 ms at first, at most 1/128 of the process's
life).
"""
from __future__ import annotations

import math
import struct
from dataclasses import dataclass

from tb_iotrace.store.timeseries import TimeSeries

HEATMAP_ID, HEATMAP_VER = 15, 1
INITIAL_WIDTH_S = 0.1      # DARSHAN_INITIAL_BIN_WIDTH_SECONDS
MAX_BINS = 200             # DARSHAN_MAX_HEATMAP_BINS
_HEAD = struct.Struct("<Qqdq2Q")   # base record, width, nbins, the two pointer slots


@dataclass(frozen=True)
class Grid:
    """Bins of ``width_s`` seconds from the job start."""

    width_s: float
    nbins: int


def grid(duration_s: float) -> Grid:
    """Darshan's grid for a job of ``duration_s`` seconds: 0.1 s doubled until the job fits
    in 200 bins, then as many bins as the job needs (at least one)."""
    width = INITIAL_WIDTH_S
    while duration_s > width * MAX_BINS:
        width *= 2.0
    return Grid(width, max(1, min(MAX_BINS, math.ceil(duration_s / width))))


def module_bins(series: TimeSeries, module: str, job_start_ns: int, g: Grid) -> tuple[list[int], list[int]] | None:
    """(read bins, write bins) of one module's bytes on the grid, or None when the series
    has no split by module or the module moved no bytes (Darshan drops empty heatmaps)."""
    if series.modules is None or module not in series.modules:
        return None
    reads, writes = series.modules[module]
    if not any(reads) and not any(writes):
        return None
    width_ns = g.width_s * 1e9
    read, write = [0] * g.nbins, [0] * g.nbins
    for i, (r, w) in enumerate(zip(reads, writes)):
        if r or w:
            t = series.start_ns + i * series.bin_ns - job_start_ns
            j = min(g.nbins - 1, max(0, int(t // width_ns)))
            read[j] += r
            write[j] += w
    return read, write


def pack(record_id: int, rank: int, g: Grid, read: list[int], write: list[int]) -> bytes:
    """One HEATMAP record as the log holds it: the write bins, then the read bins."""
    n = g.nbins
    return _HEAD.pack(record_id, rank, g.width_s, n, 0, 0) + struct.pack(f"<{n}q{n}q", *write, *read)
