"""tb_iotrace.store.timeseries: the stored form is validated, and a periodic flush folds its
windows' series onto one grid of the run with exact totals (the native widening itself is
native/tests/test_timeseries.c)."""
from __future__ import annotations

import pytest

from tb_iotrace.cli.report_text.file_tables import render_timeseries
from tb_iotrace.store.timeseries import TimeSeries, TimeSeriesError, accumulate, sparkline


def series(start: int, width: float, reads: list[int]) -> TimeSeries:
    n = len(reads)
    return TimeSeries(start, width, tuple(reads), tuple(r // 2 for r in reads), tuple(1 for _ in reads),
                      tuple(0.001 for _ in reads))


def test_windows_fold_onto_one_grid_with_exact_totals_and_widen():
    ms = 1_000_000
    # three 1-second windows of 1 ms bins, each with one burst, folded from run start 0
    wins = [series(k * 1000 * ms, ms, [0] * (500 + k) + [100 * (k + 1)] + [0] * (499 - k)) for k in range(3)]
    acc = None
    for w in wins:
        acc = accumulate(acc, w, 0)
    assert len(acc) <= 256
    assert acc.bin_ns == 16 * ms            # 1 ms doubled until 3 s fits in 256 bins
    assert sum(acc.bytes_read) == 600 and sum(acc.bytes_written) == 300 and sum(acc.calls) == 3000
    assert sum(acc.io_time_s) == pytest.approx(3.0)
    # each burst in the bin of its time: 0.500 s, 1.501 s, 2.502 s
    hit = [i for i, v in enumerate(acc.bytes_read) if v]
    assert hit == [500 // 16, 1501 // 16, 2502 // 16]
    assert [acc.bytes_read[i] for i in hit] == [100, 200, 300]
    # a later, much longer window: the grid widens again, nothing is lost
    acc = accumulate(acc, series(3000 * ms, 100 * ms, [7] * 256), 0)
    assert len(acc) <= 256 and acc.bin_ns == 128 * ms
    assert sum(acc.bytes_read) == 600 + 7 * 256 and sum(acc.calls) == 3000 + 256


def test_the_stored_form_is_checked():
    good = series(5, 2.0, [1, 2, 3]).to_dict()
    assert TimeSeries.from_dict(good).to_dict() == good
    for bad, why in (([], "not an object"), ({**good, "bin_ns": 0}, "positive"),
                     ({**good, "calls": [1]}, "differ in length"), ({**good, "bytes_read": ["x", 1, 2]}, "not a number"),
                     ({k: v for k, v in good.items() if k != "start_ns"}, "KeyError")):
        with pytest.raises(TimeSeriesError, match=why):
            TimeSeries.from_dict(bad)


def test_text_sparklines():
    assert sparkline([0, 1, 2, 8]) == " ▁▂█"
    assert len(sparkline(list(range(256)), 64)) == 64
    txt = render_timeseries(series(0, 1e9, [0, 1 << 20, 0, 4 << 20]).to_dict())
    assert "4.0 s in 4 bins of 1.00 s" in txt
    assert "read  | ▂ █| peak 4.0 MiB/s at +3.0 s, total 5.0 MiB" in txt


def split(s: TimeSeries, stdio_every: int) -> TimeSeries:
    """``s`` with every ``stdio_every``-th bin's bytes counted as STDIO's, the rest POSIX's."""
    zero = tuple(0 for _ in s.bytes_read)
    st = [i % stdio_every == 0 for i in range(len(s))]
    pick = lambda arr, on: tuple(v if f == on else 0 for v, f in zip(arr, st))  # noqa: E731
    return TimeSeries(s.start_ns, s.bin_ns, s.bytes_read, s.bytes_written, s.calls, s.io_time_s,
                      {"POSIX": (pick(s.bytes_read, False), pick(s.bytes_written, False)),
                       "STDIO": (pick(s.bytes_read, True), pick(s.bytes_written, True)) if any(st) else (zero, zero)})


def test_module_split_is_stored_checked_and_folded_exactly():
    ms = 1_000_000
    a = split(series(0, ms, [10, 20, 30, 40]), 2)
    d = a.to_dict()
    assert d["modules"]["STDIO"]["bytes_read"] == [10, 0, 30, 0]
    assert TimeSeries.from_dict(d) == a
    # a split that does not add up, an unknown module, a short array: refused
    bad = {**d, "modules": {**d["modules"], "STDIO": {"bytes_read": [10, 0, 31, 0], "bytes_written": [5, 0, 15, 0]}}}
    with pytest.raises(TimeSeriesError, match="do not sum"):
        TimeSeries.from_dict(bad)
    with pytest.raises(TimeSeriesError, match="unknown module"):
        TimeSeries.from_dict({**d, "modules": {"MPIIO": d["modules"]["POSIX"]}})
    with pytest.raises(TimeSeriesError, match="differ in length"):
        TimeSeries.from_dict({**d, "modules": {"POSIX": {"bytes_read": [1], "bytes_written": [1]}}})
    # a series without the split (recorded before it existed) still reads
    old = {k: v for k, v in d.items() if k != "modules"}
    assert TimeSeries.from_dict(old).modules is None
    # folding keeps the split, bin for bin, with exact totals per module
    b = split(series(3 * ms, ms, [1000] * 300), 3)
    acc = accumulate(accumulate(None, a, 0), b, 0)
    assert acc.bin_ns == 2 * ms
    r, w = acc.modules["STDIO"]
    assert sum(r) == 10 + 30 + 1000 * 100 and sum(w) == sum(r) // 2
    assert sum(acc.modules["POSIX"][0]) == 20 + 40 + 1000 * 200
    assert [p + s for p, s in zip(acc.modules["POSIX"][0], r)] == list(acc.bytes_read)
    assert TimeSeries.from_dict(acc.to_dict()) == acc
    # folding a series without the split into one with it: the split is unknown from then on
    assert accumulate(acc, series(400 * ms, ms, [5]), 0).modules is None
