"""The run's saves across ranks and checkpoint-straggler (tb_iotrace.analysis.checkpoints.ranks)
on hand-made host documents; the record's rank (tb_iotrace.store.runrecord.job_rank)."""
from __future__ import annotations

from typing import Any

import pytest

from tb_iotrace.analysis.checkpoints.ranks import save_table, straggler_finding
from tb_iotrace.cli.report_text.job_text import render_rank_saves
from tb_iotrace.store.runrecord import job_rank

MiB = 1 << 20
S = 1_000_000_000


def _save(start_s: float, finish_s: float, nbytes: int = 8 * MiB, busy_s: float = 0.04, blocking: bool = True,
          mount: str = "/") -> dict[str, Any]:
    start, finish = int(start_s * S), int(finish_s * S)
    return {"kind": "save", "start_ns": start, "end_ns": finish, "finish_ns": finish, "bytes": nbytes, "files": 1,
            "io_time_s": busy_s / 2, "fsync_time_s": busy_s / 2, "blocking_ns": finish - start if blocking else 0,
            "background_ns": 0, "fs_type": "ext4", "mount_point": mount, "path": f"{mount}ckpt/x.distcp",
            "source": "shape"}


def _host(name: str, rank: int | None, saves: list[dict[str, Any]], train_s: float = 10.0) -> dict[str, Any]:
    return {"host": name, "process": {"rank": rank}, "checkpoints": saves, "findings": [],
            "training": {"time_ns": int(train_s * S), "steps": None, "basis": "data I/O span"}}


def test_slow_rank_named_with_its_bandwidth_and_cost() -> None:
    hosts = [_host("a.1", 0, [_save(1.0, 1.05), _save(5.0, 5.05)]),
             _host("a.2", 1, [_save(1.0, 1.6, busy_s=0.6), _save(5.0, 5.6, busy_s=0.6)]),
             _host("a.3", None, [])]
    saves = save_table(hosts)
    assert [[r["rank"] for r in s["ranks"]] for s in saves] == [[0, 1], [0, 1]]
    assert [s["straggler"] for s in saves] == ["a.2", "a.2"]
    assert saves[0]["lag_ns"] == int(0.55 * S)
    host, f = straggler_finding(saves, hosts)
    assert host == "a.2" and f["id"] == "checkpoint-straggler"
    assert f["evidence"]["cost_s"] == pytest.approx(1.1) and f["impact"]["step_share"] == pytest.approx(0.11)
    assert "MiB/s" in f["statement"] and "rank 1" in f["statement"] and f["impact"]["ms_per_step"] is None
    assert "straggler: a.2" in render_rank_saves(saves)


def test_rank_waiting_in_the_saves_collective_is_not_the_measure() -> None:
    """Rank 1 reaches the save late (a busy machine) and writes slowly: rank 0 waits 1.1 s in the
    save's planning collective, then writes its 8 MiB in 0.05 s. Rank 1 is still the straggler:
    it finishes 0.45 s after rank 0, nine times rank 0's writing, though less than rank 0's
    whole save (its wait for rank 1 included)."""
    hosts = [_host("a.1", 0, [_save(1.0, 2.15, busy_s=0.05)]), _host("a.2", 1, [_save(2.1, 2.6, busy_s=0.5)])]
    (save,) = save_table(hosts)
    assert save["straggler"] == "a.2" and save["lag_ns"] == int(0.45 * S)
    host, f = straggler_finding([save], hosts)
    assert host == "a.2" and f["evidence"]["rank"] == 1


def test_more_bytes_and_other_file_system_are_said() -> None:
    hosts = [_host("a.1", 0, [_save(1.0, 1.05)]),
             _host("a.2", 1, [_save(1.0, 1.05)]),
             _host("a.3", 2, [_save(1.0, 1.8, nbytes=40 * MiB, busy_s=0.2, mount="/mnt/nfs/")])]
    saves = save_table(hosts)
    _, f = straggler_finding(saves, hosts)
    assert f["evidence"]["rank"] == 2
    assert "5.0x the others'" in f["statement"] and "/mnt/nfs/" in f["statement"]


def test_even_ranks_and_background_saves_make_no_finding() -> None:
    even = [_host("a.1", 0, [_save(1.0, 1.05)]), _host("a.2", 1, [_save(1.0, 1.09)])]
    assert save_table(even)[0]["straggler"] is None and straggler_finding(save_table(even), even) is None
    # an async save late in the background: a straggler in the table, no cost to training, no finding
    bg = [_host("a.1", 0, [_save(1.0, 1.05, blocking=False)]), _host("a.2", 1, [_save(1.0, 2.0, blocking=False)])]
    assert save_table(bg)[0]["straggler"] == "a.2" and straggler_finding(save_table(bg), bg) is None


def test_no_checkpoints_no_table() -> None:
    hosts = [_host("a.1", 0, []), _host("a.2", 1, [])]
    assert save_table(hosts) == [] and straggler_finding([], hosts) is None and render_rank_saves([]) == ""


def test_saves_far_apart_are_separate_and_one_host_once_per_save() -> None:
    hosts = [_host("a.1", 0, [_save(1.0, 1.1), _save(1.05, 1.2)]), _host("a.2", 1, [_save(3.0, 3.1)])]
    saves = save_table(hosts)
    assert [[r["host"] for r in s["ranks"]] for s in saves] == [["a.1"], ["a.1"], ["a.2"]]
    assert render_rank_saves(saves) == ""          # no save of two ranks: no per-rank table


def test_job_rank_from_launcher_environment() -> None:
    assert job_rank({"RANK": "3"}) == 3
    assert job_rank({"OMPI_COMM_WORLD_RANK": "1"}) == 1 and job_rank({"SLURM_PROCID": "7"}) == 7
    assert job_rank({}) is None and job_rank({"RANK": "x"}) is None
