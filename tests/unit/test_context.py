"""tb_iotrace.analysis.context: one capture's calls classified without a host timeline. Proves
the per-file counters rebuilt from a trace alone (opens, reads, EOF reads, sequential reads,
highest byte, writes without fsync's, read-ahead windows), failed calls, code files and network
endpoints left out of the data rows, the counters' path (POSIX + STDIO summed, code and endpoint
records skipped, the record's file type kept), file_type's answers, rows_of_files, and the
stage and file-system tables (grouping, totals, bandwidths, order)."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from tb_iotrace.analysis.context import Context, FileStats, file_type, fs_table, stage_name, stages_table, steps_table
from tb_iotrace.analysis.mounts import Mount, MountTable, parse_mountinfo
from tb_iotrace.analysis.thresholds import DEFAULT
from tb_iotrace.store.xplane import IoTrace

from built_inputs import io_trace

MOUNTS = MountTable(parse_mountinfo("27 1 254:0 / / rw - ext4 /dev/vda rw\n"
                                    "40 27 0:50 / /data rw - nfs4 srv:/x rw\n"))
T0 = 10**18


def trace(rows: list[tuple], counters: list[dict] | None = None) -> IoTrace:
    return io_trace(rows, counters=counters or [])


def ctx_of(tr: IoTrace) -> Context:
    return Context(tr, None, None, MOUNTS, DEFAULT)


ROWS = [("open", "/data/a", -1, 3, T0, 1_000),
        ("pread", "/data/a", 0, 32768, T0 + 10_000, 2_000),
        ("pread", "/data/a", 4096, 32768, T0 + 20_000, 2_000),      # inside the previous read: read-ahead
        ("pread", "/data/a", 36864, 0, T0 + 30_000, 1_000),         # EOF probe, past the last byte: sequential
        ("write", "/data/a", 0, 10, T0 + 40_000, 1_000),
        ("fsync", "/data/a", -1, 0, T0 + 50_000, 5_000),
        ("pread", "/data/a", 0, -1, T0 + 60_000, 1_000, 5),         # failed (EIO): not counted
        ("stat", "/usr/lib/python3.11/os.py", -1, 0, T0 + 70_000, 1_000),
        ("recv", "tcp://10.0.0.1:443", -1, 64, T0 + 80_000, 3_000),
        ("read", "/srv/b", 0, 1000, T0 + 90_000, 4_000)]


def test_file_counters_rebuilt_from_the_trace() -> None:
    c = ctx_of(trace(ROWS))
    assert sorted(c.files) == ["/data/a", "/srv/b"]
    a = c.files["/data/a"]
    assert (a.opens, a.reads, a.bytes_read, a.seq_reads) == (1, 3, 65536, 1)
    assert (a.max_byte_read, a.size_seen) == (36863, 36864)
    assert (a.writes, a.bytes_written, a.meta_calls) == (1, 10, 1)          # fsync: write time, not a write
    assert a.write_time == pytest.approx(6e-6) and a.read_time == pytest.approx(5e-6)
    assert (a.ahead_reads, a.ahead_bytes) == (1, 32768 - 4096)
    assert a.fs.fs_type == "nfs4" and c.files["/srv/b"].fs.mount_point == "/"
    assert a.io_time == pytest.approx(a.read_time + a.write_time + a.meta_time)
    assert (len(c.read_rows), len(c.write_rows), len(c.meta_rows)) == (4, 2, 1)
    assert c.socket_rows.tolist() == [8] and not c.data[7] and not c.data[8]
    assert c.is_sync.tolist() == [False] * 5 + [True] + [False] * 4


def test_eof_reads_are_counted_per_file_without_counters() -> None:
    """A capture without per-file counters: its files' zero-length reads come from the trace too
    (the report's files table shows them), as they do beside counters."""
    c = ctx_of(trace(ROWS))
    assert c.files["/data/a"].zero_reads == 1
    assert c.files["/data/a"].to_dict()["zero_reads"] == 1


def test_rows_of_files_ignores_unknown_paths() -> None:
    c = ctx_of(trace(ROWS))
    assert c.rows_of_files(c.read_rows, ["/srv/b", "/nowhere"]).tolist() == [9]
    assert c.rows_of_files(c.read_rows, []).tolist() == []


def test_an_open_restarts_the_sequential_rule() -> None:
    rows = [("open", "/data/s", -1, 3, T0, 1), ("read", "/data/s", 0, 100, T0 + 10, 1),
            ("read", "/data/s", 200, 100, T0 + 20, 1),           # forward past the last byte: sequential
            ("open", "/data/s", -1, 3, T0 + 30, 1), ("read", "/data/s", 0, 100, T0 + 40, 1)]
    f = ctx_of(trace(rows)).files["/data/s"]
    assert (f.opens, f.reads, f.seq_reads, f.max_byte_read) == (2, 3, 1, 299)


def test_counters_are_summed_per_path_and_code_and_endpoint_records_skipped() -> None:
    counters = [
        {"path": "/data/a", "module": "POSIX", "file_type": "fifo",
         "counters": {"POSIX_OPENS": 2, "POSIX_READS": 5, "POSIX_BYTES_READ": 500, "POSIX_SEQ_READS": 4,
                      "POSIX_MAX_BYTE_READ": 499, "POSIX_STATS": 1},
         "fcounters": {"POSIX_F_READ_TIME": 0.5, "POSIX_F_META_TIME": 0.25}},
        {"path": "/data/a", "module": "STDIO",
         "counters": {"STDIO_OPENS": 1, "STDIO_FDOPENS": 1, "STDIO_READS": 2, "STDIO_BYTES_READ": 20,
                      "STDIO_SEQ_READS": 99, "STDIO_WRITES": 1, "STDIO_BYTES_WRITTEN": 7},
         "fcounters": {"STDIO_F_WRITE_TIME": 0.125}},
        {"path": "/usr/lib/python3.11/json/__init__.py", "module": "POSIX", "counters": {"POSIX_READS": 1},
         "fcounters": {}},
        {"path": "tcp://10.0.0.1:443", "module": "POSIX", "counters": {"POSIX_READS": 1}, "fcounters": {}}]
    rows = [("stat", "/data/a", -1, 0, T0, 10), ("read", "/data/a", 500, 0, T0 + 100, 10)]
    c = ctx_of(trace(rows, counters))
    assert list(c.files) == ["/data/a"]
    f = c.files["/data/a"]
    assert (f.opens, f.reads, f.bytes_read, f.seq_reads, f.stats) == (4, 7, 520, 4, 1)   # STDIO seq reads not POSIX's
    assert (f.writes, f.bytes_written, f.max_byte_read) == (1, 7, 499)
    assert (f.read_time, f.write_time, f.meta_time) == (0.5, 0.125, 0.25)
    assert (f.meta_calls, f.zero_reads) == (1, 1)          # from the trace, beside the counters
    assert f.file_type == "fifo" and not f.regular and f.to_dict()["file_type"] == "fifo"


def test_file_stats_defaults() -> None:
    f = FileStats("/x", Mount("/", "ext4", "/dev/vda"))
    assert f.regular and f.size_seen == 0 and f.io_time == 0.0
    d = f.to_dict()
    assert (d["mount_point"], d["fs_type"], d["size_seen"], d["file_type"]) == ("/", "ext4", 0, None)


def test_file_type(tmp_path: Path) -> None:
    assert file_type("/no/such", {"file_type": "socket"}) == "socket"
    assert file_type(str(tmp_path), {"file_type": ""}) == "directory"
    fifo = tmp_path / "p"
    os.mkfifo(fifo)
    assert file_type(str(fifo)) == "fifo"
    (tmp_path / "r").write_text("x")
    assert file_type(str(tmp_path / "r"), {"file_type": 7}) == "regular"
    assert file_type(str(tmp_path / "missing")) is None
    assert file_type("/tmp/with\x00nul") is None


def test_stage_name() -> None:
    assert stage_name("Iterator::Root[0]::Map[12]::Batch") == "Iterator::Root::Map::Batch"
    assert stage_name("Iterator::Map[x]") == "Iterator::Map[x]"


def test_tables_without_a_host_timeline() -> None:
    c = ctx_of(trace(ROWS))
    assert steps_table(c) == []
    st = stages_table(c)
    assert len(st) == 1 and st[0]["stage"] == "(no host event)" and st[0]["kind"] == "op"
    assert (st[0]["calls"], st[0]["reads"], st[0]["writes"], st[0]["meta_calls"]) == (7, 4, 2, 1)
    assert (st[0]["bytes_read"], st[0]["bytes_written"]) == (65536 + 1000, 10)
    assert st[0]["files"] == ["/data/a", "/srv/b"] and st[0]["num_files"] == 2
    fs = fs_table(c)
    assert [g["mount_point"] for g in fs] == ["/data", "/"]          # most bytes first
    d, r = fs
    assert (d["fs_type"], d["reads"], d["bytes_read"], d["writes"], d["bytes_written"], d["meta_calls"]) == \
        ("nfs4", 3, 65536, 1, 10, 1)
    assert d["large_reads"] == 0 and d["large_read_bandwidth"] is None     # 32 KiB reads are small
    assert d["read_bandwidth"] == pytest.approx(65536 / 5e-6)
    assert d["write_bandwidth"] == pytest.approx(10 / 6e-6)
    assert d["meta_latency_median_s"] == pytest.approx(1e-6)
    assert (r["num_files"], r["write_bandwidth"], r["meta_latency_median_s"]) == (1, None, None)


def test_an_empty_trace_has_empty_tables() -> None:
    c = ctx_of(IoTrace.empty())
    assert c.files == {} and stages_table(c) == [] and fs_table(c) == [] and steps_table(c) == []
    s, e = c.socket_iv()
    assert len(s) == len(e) == 0


def test_socket_calls_are_intervals_in_ps() -> None:
    c = ctx_of(trace(ROWS))
    s, e = c.socket_iv()
    assert (e - s).tolist() == [3_000 * 1000]
    assert np.all(s >= 0)
