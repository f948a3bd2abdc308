"""tb_iotrace.analysis.checkpoints.facts: when a phase's bulk data was on disk (a coordinator's
small metadata file written later does not count), and its file system."""
from __future__ import annotations

import numpy as np

from tb_iotrace.analysis.checkpoints.facts import BULK_SHARE, add_facts, training
from tb_iotrace.analysis.context import Context
from tb_iotrace.analysis.mounts import MountTable, parse_mountinfo
from tb_iotrace.analysis.thresholds import Thresholds

from test_checkpoint_detection import T0, MiB, make_trace

MOUNTS = ("27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n"
          "28 27 0:50 / /ckpt rw,relatime - nfs4 server:/export rw\n")


def ctx(rows: list[tuple]) -> Context:
    return Context(make_trace(rows), None, None, MountTable(parse_mountinfo(MOUNTS)), Thresholds())


ROWS = [("pwrite64", "/ckpt/s/data", 0, 16 * MiB, T0, 100),           # the bulk: ends at T0+100
        ("fsync", "/ckpt/s/data", -1, 0, T0 + 100, 50),                # its sync: T0+150
        ("pwrite64", "/ckpt/s/part2", 0, MiB, T0 + 160, 20),           # 1/16 of the largest: bulk too (T0+180)
        ("pwrite64", "/ckpt/s/.metadata", 0, 4096, T0 + 300, 10)]      # under 1/16: not bulk


def test_finish_is_the_end_of_the_bulk_files_last_call() -> None:
    c = ctx(ROWS)
    (ph,) = add_facts(c, [{"path": "/ckpt/s", "end_ns": T0 + 400, "_rows": np.arange(4)}])
    assert ph["finish_ns"] == T0 + 180
    assert (ph["fs_type"], ph["mount_point"]) == ("nfs4", "/ckpt")
    assert 16 * MiB * BULK_SHARE == MiB


def test_finish_never_after_the_phase_and_without_rows_or_bytes_its_end() -> None:
    c = ctx(ROWS)
    early, bare, syncs = add_facts(c, [{"path": "/ckpt/s", "end_ns": T0 + 120, "_rows": np.arange(4)},
                                       {"path": "/data/x", "end_ns": T0 + 500},
                                       {"path": "", "end_ns": T0 + 600, "_rows": np.array([1])}])
    assert early["finish_ns"] == T0 + 120
    assert bare["finish_ns"] == T0 + 500 and bare["fs_type"] == "ext4" and bare["mount_point"] == "/"
    assert syncs["finish_ns"] == T0 + 600 and (syncs["fs_type"], syncs["mount_point"]) == ("", "")


def test_training_without_a_timeline() -> None:
    got = training(ctx(ROWS))
    assert set(got) == {"time_ns", "steps", "basis"} and isinstance(got["time_ns"], int)
