"""Every threshold the findings use, in one table (documented in docs/findings.md).

Change one with ``Thresholds(small_read_bytes=32 << 10)`` and pass it to ``analyze``.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

KiB = 1024
MiB = 1024 * KiB


@dataclass(frozen=True)
class Thresholds:
    # --- input-bound: share of step time spent waiting for input (tb_iotrace.model.stepwait), over all
    # steps; xprof's classification: highly input-bound from 20%, moderately from 5% (the verdict's
    # "partly input")
    input_wait_share: float = 0.20
    input_wait_moderate_share: float = 0.05
    input_wait_critical_share: float = 0.60
    # --- every finding: severity follows its impact (the share of step time it costs)
    impact_info_share: float = 0.05          # under it: info, whatever the pattern
    impact_critical_share: float = 0.60      # from it: critical
    min_steps: int = 3
    # --- worker-restarts (PyTorch): epoch starts of non-persistent DataLoader workers, share of step time
    worker_restart_share: float = 0.05
    # --- small-reads: a read moving fewer bytes than this is small
    small_read_bytes: int = 64 * KiB
    small_read_call_share: float = 0.50      # of non-empty read calls
    small_read_time_share: float = 0.50      # of read time
    small_read_min_calls: int = 64
    # --- eof-zero-reads
    eof_zero_per_file: float = 0.50          # zero-length reads per file read
    eof_zero_call_share: float = 0.25        # of read calls
    eof_zero_min_calls: int = 8
    # --- many-small-files
    small_file_bytes: int = 256 * KiB        # median bytes accessed per file
    many_files_min: int = 32
    many_files_meta_share: float = 0.30      # open/stat/seek/close time of those files' I/O time
    # --- metadata-heavy
    metadata_time_share: float = 0.50        # of all I/O time on data files
    metadata_min_calls: int = 100
    # --- random-access (Darshan counters; the first read after each open is never sequential)
    random_read_share: float = 0.25
    random_min_reads: int = 16
    # --- redundant-reads
    redundant_ratio: float = 1.5             # bytes read / bytes of the file touched
    redundant_min_bytes: int = 256 * KiB     # bytes re-read, summed over files
    # --- serial-reads
    serial_wait_share: float = 0.20          # steps must wait at least this much ...
    serial_io_share_of_wait: float = 0.20    # ... and file I/O must cover this much of the wait
    serial_overlap_share: float = 0.10       # two+ reads in flight, at most, of the read time in waits
    serial_min_reads: int = 8
    # --- staging-candidates (tf-Darshan: files under 2 MB moved to a fast tier, +19% bandwidth)
    staging_file_bytes: int = 2 * MiB
    staging_open_share: float = 0.50         # small files' share of opens, at least
    staging_byte_share: float = 0.20         # small files' share of bytes, at most
    staging_min_files: int = 16
    # --- blocking-writes
    blocking_write_share: float = 0.05       # write+sync time on the training thread / step time
    # --- small-writes
    small_write_bytes: int = 4 * KiB
    small_write_min_calls: int = 100
    small_write_call_share: float = 0.50
    # --- slow-filesystem
    slow_fs_bandwidth_ratio: float = 4.0     # best / worst read bandwidth (reads >= small_read_bytes)
    slow_fs_max_bandwidth: float = 500 * MiB  # ... and the worst below this (bytes/s)
    slow_fs_min_reads: int = 8
    slow_fs_latency_ratio: float = 10.0      # worst / best median metadata latency
    slow_fs_min_latency_s: float = 0.5e-3    # ... and the worst at least this
    slow_fs_min_meta: int = 16

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


DEFAULT = Thresholds()
