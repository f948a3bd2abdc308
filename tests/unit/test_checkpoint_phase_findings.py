"""tb_iotrace.analysis.checkpoints.phase_findings: checkpoint-blocking, checkpoint-small-writes and
checkpoint-fsync at the edges of their thresholds, with the training time they are shares of
(phases found by analysis.checkpoints.detection on constructed traces)."""
from __future__ import annotations

from typing import Any

import pytest

from tb_iotrace.analysis.checkpoints import phase_findings as pf
from tb_iotrace.analysis.context import Context
from tb_iotrace.analysis.mounts import MountTable, parse_mountinfo
from tb_iotrace.analysis.thresholds import Thresholds

from test_checkpoint_detection import MOUNTS, T0, MiB, make_trace, save, training

NFS = MOUNTS + "28 1 0:50 / /data rw,relatime - nfs4 server:/export rw\n"


def ctx(trace: Any, mounts: str = MOUNTS) -> Context:
    return Context(trace, None, None, MountTable(parse_mountinfo(mounts)), Thresholds())


def run(rule: str, trace: Any, mounts: str = MOUNTS) -> dict[str, Any] | None:
    return pf.RULES[rule](ctx(trace, mounts))


@pytest.mark.parametrize("step_ms,want", [(400, None), (100, "warning"), (10, "critical")])
def test_blocking_by_its_share_of_training(step_ms: int, want: str | None) -> None:
    trace, saved = training(20, 5, step_ns=step_ms * 1_000_000)
    f = run("checkpoint-blocking", trace)
    if want is None:
        assert f is None
        return
    assert f is not None and f["severity"] == want
    ev = f["evidence"]
    assert ev["saves"] == 4 and ev["bytes"] == 4 * 8 * MiB and ev["blocking_s"] == pytest.approx(saved / 1e9)
    assert ev["blocking_share"] == pytest.approx(ev["blocking_s"] / ev["training_time_s"])
    assert f["impact"]["step_share"] == pytest.approx(ev["blocking_share"]) and f["impact"]["basis"] == "data I/O span"
    assert (ev["blocking_share"] >= 0.25) == (want == "critical") and ev["blocking_share"] >= pf.BLOCKING_SHARE


@pytest.mark.parametrize("write_us,want", [(1000, "info"), (400, "warning")])
def test_fsync_share_and_severity(write_us: int, want: str) -> None:
    # per save 8 writes and one 30 ms fsync: 30/38 of the I/O (info), 30/33.2 (warning, from 80%)
    trace, _ = training(20, 5, write_ns=write_us * 1000)
    f = run("checkpoint-fsync", trace)
    assert f is not None and f["severity"] == want
    share = 30 / (30 + 8 * write_us / 1000)
    assert f["evidence"]["fsync_share"] == pytest.approx(share) and f["evidence"]["fsync_on_training_thread_s"] > 0


def test_no_fsync_finding_without_syncs() -> None:
    trace, _ = training(20, 5, fsync=False)
    assert run("checkpoint-fsync", trace) is None


def small_saves(chunk: int, writes: int, saves: int = 2, data: str = "/ck") -> Any:
    """A loop of 20 ms steps with ``saves`` saves of ``writes`` writes of ``chunk`` bytes."""
    rows, t = [("open", "/data/log.txt", -1, 3, T0, 5_000)], T0
    for k in range(5 * saves):
        rows.append(("write", "/data/log.txt", -1, 80, t, 10_000))
        t += 20_000_000
        if k % 5 == 4:
            got, t = save(f"{data}/s{k}.tmp", t, writes * chunk, chunk, rename=f"{data}/s{k}", fsync=False,
                          write_ns=20_000)
            rows += got
    return make_trace(rows)


def test_small_writes_below_a_quarter_block() -> None:
    f = run("checkpoint-small-writes", small_saves(512, 2048))                   # 1 MiB saves in 512 B writes
    assert f is not None and f["evidence"]["median_bytes"] == 512 and f["evidence"]["block_bytes"] == 4096
    assert f["evidence"]["writes"] == 4096 and f["evidence"]["small_writes"] == 4096
    assert f["impact"]["step_share"] > 0
    assert run("checkpoint-small-writes", small_saves(1024, 1024)) is None         # a quarter block: not small


def test_a_network_file_system_wants_larger_writes_over_enough_of_them() -> None:
    f = run("checkpoint-small-writes", small_saves(32 << 10, 64, saves=1, data="/data/ck"), NFS)
    assert f is not None and f["evidence"]["block_bytes"] == MiB
    assert run("checkpoint-small-writes", small_saves(32 << 10, 63, saves=1, data="/data/ck"), NFS) is None
    assert run("checkpoint-small-writes", small_saves(32 << 10, 64, saves=1, data="/data/ck")) is None   # ext4 there
    assert [pf._block_bytes(fs) for fs in ("nfs4", "lustre", "fuse.s3fs", "ext4", "xfs")] == [MiB, MiB, MiB, 4096, 4096]


def test_training_time_from_the_first_load_when_it_comes_before_every_save() -> None:
    rows = [("open", "/ckpt/model.pt", -1, 3, T0, 10_000)]
    rows += [("read", "/ckpt/model.pt", i * MiB, MiB, T0 + 20_000 + i * 1_100_000, 1_000_000) for i in range(4)]
    got, end = save("/ckpt/model.pt", T0 + 2 * 10**9, 4 * MiB, 256, fsync=False, write_ns=10_000)
    time_ns, steps, basis = pf.training_time_ns(ctx(make_trace(rows + got)))
    assert (steps, basis) == (None, "data I/O from the first load")
    assert time_ns == pytest.approx(end - (T0 + 20_000), abs=20_000)          # from the first read to the last call
    rest, _ = training(10, 5)
    assert pf.training_time_ns(ctx(rest))[2] == "data I/O span"
    assert pf.training_time_ns(ctx(make_trace([])))[2] == "none"
