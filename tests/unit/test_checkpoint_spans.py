"""tb_iotrace.analysis.checkpoints.spans: the noted library calls as spans on the capture clock,
and an orbax save's background writes added to its phase."""
from __future__ import annotations

from typing import Any

import numpy as np

from tb_iotrace.analysis.checkpoints.detection import checkpoint_phases
from tb_iotrace.analysis.checkpoints.spans import (ASYNC_TMP, call_line, call_spans, epoch_offset_ps, extend_async,
                                                  noted_calls)
from tb_iotrace.analysis.context import Context
from tb_iotrace.analysis.mounts import MountTable, parse_mountinfo
from tb_iotrace.analysis.thresholds import Thresholds
from tb_iotrace.store.xplane import thread_line_id

from test_checkpoint_detection import MOUNTS, T0, MiB, make_trace

MS = 1_000_000


def ctx(rows: list[tuple], calls: list[Any] | None = None) -> Context:
    return Context(make_trace(rows), None, None, MountTable(parse_mountinfo(MOUNTS)), Thresholds(),
                   checkpoint_calls=calls)


def call(kind: str, start_ms: int, end_ms: int, **kw: Any) -> dict[str, Any]:
    return {"kind": kind, "path": "/ck/a.safetensors", "root": "/ck", "call": "safetensors.torch.save_file",
            "start_ns": T0 + start_ms * MS, "end_ns": T0 + end_ms * MS, "tid": 100, **kw}


LOG = [("write", "/data/log", -1, 10, T0 + 5 * MS, 1000)]       # the capture clock starts at T0 + 5 ms


def test_noted_calls_are_the_records_else_the_traces() -> None:
    c = ctx(LOG, [call("save", 10, 20), "not a call"])
    assert [x["kind"] for x in noted_calls(c)] == ["save"]
    c = ctx(LOG)
    c.trace.checkpoint_calls = [call("load", 1, 2)]
    assert [x["kind"] for x in noted_calls(c)] == ["load"]
    c.trace.checkpoint_calls = "garbage"
    assert noted_calls(c) == []


def test_call_spans_on_the_capture_clock() -> None:
    c = ctx(LOG, [call("save", 10, 20), call("load", 30, 25, tid=999), call("wait", 40, 50), {"kind": "save"}])
    assert epoch_offset_ps(c) == (T0 + 5 * MS) * 1000
    save, load = call_spans(c)
    assert save == (5 * MS * 1000, 15 * MS * 1000, "save", "/ck", thread_line_id(1), "safetensors.torch.save_file",
                    "/ck/a.safetensors")
    assert load[:3] == (25 * MS * 1000, 25 * MS * 1000, "load")             # an end before its start: empty
    assert load[4] == -1                                                    # a thread the trace does not know
    assert call_spans(ctx(LOG)) == []


def test_call_line_of_known_threads_only() -> None:
    c = ctx(LOG)
    assert call_line(c, 101) == thread_line_id(2) and call_line(c, 5) == -1 and call_line(c, "100") == -1


def test_an_orbax_save_takes_its_background_writes_up_to_the_next_call_on_its_directory() -> None:
    d, tmp = "/ck/step1", "/ck/step1.orbax-checkpoint-tmp-17"
    rows = [("write", "/data/log", -1, 10, T0, 1000),
            ("pwrite64", f"{tmp}/arr.0", 0, 4 * MiB, T0 + 2 * MS, MS, 101),        # in the call
            ("pwrite64", f"{tmp}/arr.1", 0, 4 * MiB, T0 + 20 * MS, 2 * MS, 101),    # after it: background
            ("fsync", f"{tmp}/arr.1", -1, 0, T0 + 23 * MS, MS, 101),
            ("rename", tmp, -1, 0, T0 + 25 * MS, MS, 101),
            ("pwrite64", "/ck/other/x", 0, 4 * MiB, T0 + 21 * MS, MS, 101),         # another directory
            ("pwrite64", "/ck/step10/x", 0, 4 * MiB, T0 + 22 * MS, MS, 101),        # one whose name starts alike
            ("pwrite64", f"{d}/late", 0, MiB, T0 + 60 * MS, MS, 101)]               # after the restore began
    c = ctx(rows)
    ph = {"kind": "save", "source": "orbax.checkpoint.CheckpointManager.save", "path": d, "start_ns": T0 + MS,
          "end_ns": T0 + 5 * MS}
    restore = {"kind": "load", "source": "orbax.checkpoint.CheckpointManager.restore", "path": d + "/",
               "start_ns": T0 + 50 * MS, "end_ns": T0 + 70 * MS}
    inside = {"kind": "save", "source": "shape", "paths": [f"{tmp}/arr.1"], "start_ns": T0 + 20 * MS}
    elsewhere = {"kind": "save", "source": "shape", "paths": ["/ck/other/x"], "start_ns": T0 + 21 * MS}
    out = extend_async(c, [ph, restore, inside, elsewhere])
    assert out == [ph, restore, elsewhere]                                  # the shape phase inside it: dropped
    assert ph["files"] == 2 and ph["bytes"] == 8 * MiB and ph["calls"] == 2
    assert ph["paths"] == [f"{tmp}/arr.0", f"{tmp}/arr.1"]
    assert ph["end_ns"] == T0 + 26 * MS and ph["background_ns"] == 21 * MS
    assert abs(ph["fsync_time_s"] - 0.001) < 1e-9 and abs(ph["rename_time_s"] - 0.001) < 1e-9
    assert np.asarray(ph["_rows"]).tolist() == [1, 2, 3, 4]                 # not rows 5, 6 or 7


def test_a_save_that_is_not_orbax_is_left_as_it_is() -> None:
    ph = {"kind": "save", "source": "torch.save", "path": "/ck/x", "start_ns": T0, "end_ns": T0 + 1}
    assert extend_async(ctx(LOG), [ph]) == [ph] and "files" not in ph


def test_orbax_saves_keep_their_call_order_and_their_own_files() -> None:
    """An orbax save's root is the checkpoints folder (its temporary twin is written beside
    the directory named): the folder itself, stat'ed by another save's writer just before a
    call, and the files of a save still writing in the background are not that call's. CI's
    real run once put the second save's start 47 ms before its call, before the restore's."""
    ck = "/ck"

    def orbax(kind: str, step: int, a: int, b: int) -> dict[str, Any]:
        d = f"{ck}/step{step}"
        return {"kind": kind, "path": d, "root": ck if kind == "save" else d, "start_ns": T0 + a * MS,
                "end_ns": T0 + b * MS, "tid": 100, "call": f"orbax.checkpoint.StandardCheckpointer.{kind}"}

    tmp0, tmp3, tmp6 = (f"{ck}/step{k}{ASYNC_TMP}" for k in (0, 3, 6))
    rows = [("write", "/data/log", -1, 10, T0, 1000),
            ("pwrite64", f"{tmp0}/d/a", 0, 4 * MiB, T0 + 6 * MS, 2 * MS, 101),     # step0's background writer
            ("stat64", ck, -1, 0, T0 + 9 * MS, 10_000, 101),
            ("rename", tmp0, -1, 0, T0 + 10 * MS, 50_000, 101),
            ("pread64", f"{ck}/step0/d/a", 0, 4 * MiB, T0 + 41 * MS, 2 * MS),       # the restore
            ("stat64", ck, -1, 0, T0 + 53 * MS, 10_000, 101),                      # in step3's call
            ("pwrite64", f"{tmp3}/d/b", 0, 4 * MiB, T0 + 54 * MS, 2 * MS, 101),
            ("pwrite64", f"{tmp3}/d/c", 0, 4 * MiB, T0 + 72 * MS, 2 * MS, 101),    # step3, in step6's call
            ("pwrite64", f"{tmp6}/d/b", 0, 4 * MiB, T0 + 73 * MS, 2 * MS, 101)]
    c = ctx(rows, [orbax("save", 0, 1, 5), orbax("load", 0, 40, 50), orbax("save", 3, 52, 60),
                   orbax("save", 6, 70, 80)])
    phases = extend_async(c, checkpoint_phases(c))
    assert [(p["kind"], p["path"]) for p in phases] == [("save", f"{ck}/step0"), ("load", f"{ck}/step0"),
                                                        ("save", f"{ck}/step3"), ("save", f"{ck}/step6")]
    starts = [p["start_ns"] - T0 for p in phases]
    assert starts == [MS, 40 * MS, 52 * MS, 70 * MS], starts
    save0, _, save3, save6 = phases
    assert save0["bytes"] == save6["bytes"] == 4 * MiB and save3["bytes"] == 8 * MiB
    assert save3["paths"] == [f"{tmp3}/d/b", f"{tmp3}/d/c"] and save6["paths"] == [f"{tmp6}/d/b"]
