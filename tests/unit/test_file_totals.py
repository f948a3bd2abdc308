"""tb_iotrace.analysis.file_totals on hand-made per-file records: module totals, the files the
report lists (code loading apart unless asked for), the busiest by bytes moved, the POSIX
read-size histogram and pattern, and a host's row of the per-host table."""
from __future__ import annotations

import math

import pytest

from tb_iotrace.analysis.file_totals import SIZE_BINS, code_summary, files_view, host_row, totals


def posix(path: str, read: int, reads: int, *, code: bool = False, seq: int = 0, small: int = 0,
          time_s: float = 0.5) -> dict:
    c = {"POSIX_BYTES_READ": read, "POSIX_READS": reads, "POSIX_SEQ_READS": seq, "POSIX_CONSEC_READS": seq // 2,
         "POSIX_OPENS": 1, "POSIX_SIZE_READ_0_100": small, "POSIX_SIZE_READ_100K_1M": reads - small}
    return {"path": path, "module": "POSIX", "code": code, "counters": c,
            "fcounters": {"POSIX_F_READ_TIME": time_s, "POSIX_F_META_TIME": 0.01}}


def stdio(path: str, written: int) -> dict:
    return {"path": path, "module": "STDIO", "counters": {"STDIO_BYTES_WRITTEN": written, "STDIO_WRITES": 3},
            "fcounters": {"STDIO_F_WRITE_TIME": 0.25}}


FILES = [posix("/data/a", 4 << 20, 8, seq=6, small=2), posix("/data/b", 16 << 20, 32, seq=32),
         posix("/usr/lib/x.so", 1 << 20, 4, code=True), stdio("/out/log.txt", 2 << 20)]


def test_totals_sum_each_module():
    t = totals(FILES)
    assert list(t) == ["POSIX", "STDIO"]
    p = t["POSIX"]
    assert (p.files, p.bytes_read, p.reads, p.opens) == (3, 21 << 20, 44, 3)
    assert p.read_time == pytest.approx(1.5) and p.meta_time == pytest.approx(0.03)
    assert p.read_bw == pytest.approx(21 / 1.5)
    assert t["STDIO"].bytes_written == 2 << 20 and t["STDIO"].write_bw == pytest.approx(2 / 0.25)


def test_the_view_leaves_code_loading_out_unless_asked():
    v = files_view(FILES, top=2)
    assert v.code == code_summary(FILES) and v.code["files"] == 1 and v.code["bytes_read"] == 1 << 20
    assert v.shown == 3
    assert [t.module for t in v.totals] == ["POSIX", "STDIO"] and v.totals[0].bytes_read == 20 << 20
    assert [f["path"] for f in v.busiest] == ["/data/b", "/data/a"]      # most bytes moved first, top 2
    assert set(v.read_sizes) == set(SIZE_BINS)
    assert v.read_sizes["0_100"] == 2 and v.read_sizes["100K_1M"] == 38
    assert (v.pattern["READS"], v.pattern["SEQ_READS"], v.pattern["CONSEC_READS"]) == (40, 38, 19)
    every = files_view(FILES, all_files=True, top=10)
    assert every.shown == 4 and every.totals[0].bytes_read == 21 << 20 and every.pattern["READS"] == 44
    assert [f["path"] for f in every.busiest] == ["/data/b", "/data/a", "/out/log.txt", "/usr/lib/x.so"]


def test_a_host_of_code_loading_alone_shows_no_tables():
    v = files_view([posix("/usr/lib/x.so", 10, 1, code=True)])
    assert v.shown == 0 and v.code["files"] == 1 and v.totals == [] and v.busiest == []
    assert not any(v.read_sizes.values()) and v.pattern["READS"] == 0


def test_host_row_from_counters_trace_or_nothing():
    names = {"POSIX_BYTES_READ": [100.0, math.nan], "STDIO_BYTES_READ": [math.nan, 7.0],
             "POSIX_BYTES_WRITTEN": [1.0, math.nan], "STDIO_BYTES_WRITTEN": [math.nan, 2.0],
             "POSIX_F_READ_TIME": [0.5, math.nan], "STDIO_F_READ_TIME": [math.nan, 0.25]}
    row = host_row("h", ["POSIX", "STDIO"], names.__getitem__, io_calls=9, input_wait_ns=3e6, span_ns=4e6,
                   wait_basis="steps")
    assert row["source"] == "counters" and (row["bytes_read"], row["bytes_written"]) == (107, 3)
    assert row["read_time_s"] == pytest.approx(0.75) and row["files"] == 2 and row["input_wait_pct"] == 75.0
    traced = host_row("h", [], names.__getitem__, trace=(50, 5, 0.1), io_calls=4, input_wait_ns=9e6, span_ns=4e6)
    assert traced["source"] == "trace" and traced["bytes_read"] == 50 and traced["input_wait_pct"] == 100.0
    none = host_row("h", [], names.__getitem__)
    assert none["source"] == "none" and none["bytes_read"] == 0 and none["input_wait_pct"] == 0.0
