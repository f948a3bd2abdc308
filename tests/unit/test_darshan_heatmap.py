"""tb_iotrace.export.darshan_heatmap: Darshan's heatmap grid (0.1 s doubled until the job fits in
200 bins), a module's bytes placed on it, and the record's bytes."""
from __future__ import annotations

import struct

import pytest

from tb_iotrace.export.darshan_heatmap import MAX_BINS, Grid, grid, module_bins, pack
from tb_iotrace.store.timeseries import TimeSeries


@pytest.mark.parametrize("duration,want", [
    (0.0, Grid(0.1, 1)), (0.05, Grid(0.1, 1)), (1.0, Grid(0.1, 10)), (20.0, Grid(0.1, 200)),
    (20.01, Grid(0.2, 101)), (40.0, Grid(0.2, 200)), (3600.0, Grid(25.6, 141)),
])
def test_grid(duration: float, want: Grid) -> None:
    g = grid(duration)
    assert g.width_s == pytest.approx(want.width_s) and g.nbins == want.nbins
    assert 1 <= g.nbins <= MAX_BINS


def series(reads: list[int], writes: list[int], start_ns: int = 0, bin_ns: float = 1e6,
           modules: bool = True) -> TimeSeries:
    n = len(reads)
    return TimeSeries(start_ns, bin_ns, tuple(reads), tuple(writes), (1,) * n, (0.0,) * n,
                      {"POSIX": (tuple(reads), tuple(writes)), "STDIO": ((0,) * n, (0,) * n)} if modules else None)


def test_each_bin_lands_whole_where_it_starts_and_sums_stay_exact() -> None:
    g = Grid(0.1, 5)                              # 100 ms bins; the series has 50 ms bins from 20 ms on
    s = series([1, 2, 3, 4, 0, 0, 0, 0, 0, 9], [0, 0, 0, 0, 0, 0, 0, 0, 7, 0], start_ns=20_000_000, bin_ns=50e6)
    read, write = module_bins(s, "POSIX", 0, g)
    # series bin i starts at 20 + 50 i ms: bins 0,1 -> grid 0; 2,3 -> 1; 8 -> 4; 9 (470 ms) -> 4
    assert read == [3, 7, 0, 0, 9] and write == [0, 0, 0, 0, 7]
    assert sum(read) == sum(s.bytes_read) and sum(write) == sum(s.bytes_written)


def test_bins_outside_the_grid_go_to_its_ends() -> None:
    g = Grid(0.1, 2)
    s = series([5, 0, 6], [0, 0, 0], start_ns=0, bin_ns=150e6)     # the last starts at 300 ms: past the grid
    read, _ = module_bins(s, "POSIX", 50_000_000, g)                # the first starts before the job
    assert read == [5, 6]


def test_no_record_without_modules_or_bytes() -> None:
    g = Grid(0.1, 3)
    assert module_bins(series([1], [1], modules=False), "POSIX", 0, g) is None
    assert module_bins(series([1], [1]), "STDIO", 0, g) is None      # moved nothing
    assert module_bins(series([1], [1]), "MPIIO", 0, g) is None      # not recorded


def test_pack_writes_the_write_bins_before_the_read_bins() -> None:
    g = Grid(0.2, 3)
    data = pack(42, 7, g, read=[1, 2, 3], write=[4, 5, 6])
    head = struct.calcsize("<Qqdq2Q")
    assert len(data) == head + 6 * 8
    assert struct.unpack("<Qqdq2Q", data[:head]) == (42, 7, 0.2, 3, 0, 0)
    assert struct.unpack("<6q", data[head:]) == (4, 5, 6, 1, 2, 3)
