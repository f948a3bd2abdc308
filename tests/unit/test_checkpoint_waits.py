"""tb_iotrace.analysis.checkpoints.waits: orbax's wait_until_finished as part of the save it
waits for, while the training goes on, counted once where the save already blocked."""
from __future__ import annotations

from typing import Any

from tb_iotrace.analysis.checkpoints.waits import ORBAX, add_waits
from tb_iotrace.analysis.context import Context
from tb_iotrace.analysis.mounts import MountTable, parse_mountinfo
from tb_iotrace.analysis.thresholds import Thresholds

from test_checkpoint_detection import MOUNTS, T0, make_trace

MS = 1_000_000


def ctx(calls: list[dict[str, Any]]) -> Context:
    trace = make_trace([("write", "/data/log", -1, 10, T0, 1000)])            # the capture clock starts at T0
    return Context(trace, None, None, MountTable(parse_mountinfo(MOUNTS)), Thresholds(), checkpoint_calls=calls)


def wait(start_ms: int, end_ms: int, tid: int = 100) -> dict[str, Any]:
    return {"kind": "wait", "path": "/ck", "root": "/ck", "call": "wait_until_finished",
            "start_ns": T0 + start_ms * MS, "end_ns": T0 + end_ms * MS, "tid": tid}


def save(start_ms: int, source: str = ORBAX + ".CheckpointManager.save", **kw: Any) -> dict[str, Any]:
    return {"kind": "save", "source": source, "start_ns": T0 + start_ms * MS, "blocking_ns": 0, **kw}


def test_a_wait_joins_the_last_save_started_before_it() -> None:
    first, second = save(0), save(100)
    add_waits(ctx([wait(50, 60), wait(110, 130)]), [first, second, save(200)])
    assert first["blocking_ns"] == 10 * MS and second["blocking_ns"] == 20 * MS
    assert first["_block"] == [(50 * MS * 1000, 60 * MS * 1000)]               # capture-clock ps


def test_time_already_blocked_counts_once() -> None:
    s = save(0, blocking_ns=30 * MS, _block=[(0, 30 * MS * 1000)])           # the call itself: 0-30 ms
    add_waits(ctx([wait(20, 50)]), [s, save(100)])
    assert s["blocking_ns"] == 30 * MS + 20 * MS                              # 30-50 only


def test_waits_that_stop_no_training_or_belong_to_no_orbax_save() -> None:
    torch_save = save(0, source="torch.save")
    last = save(100)
    add_waits(ctx([wait(10, 20),               # before any orbax save
                   wait(150, 180),             # after the last orbax save started: the loop is over
                   wait(120, 120)]),           # empty
              [torch_save, last])
    assert torch_save["blocking_ns"] == 0 and last["blocking_ns"] == 0 and "_block" not in last


def test_nothing_to_do_without_waits() -> None:
    s = save(0)
    assert add_waits(ctx([{"kind": "save", "start_ns": T0, "end_ns": T0 + 1}]), [s]) == [s]
    assert s["blocking_ns"] == 0
