"""tb_iotrace.analysis.checkpoints.spans: the noted library calls as spans on the capture clock,
and an orbax save's background writes added to its phase."""
from __future__ import annotations

from typing import Any

import numpy as np

from tb_iotrace.analysis.checkpoints.spans import call_line, call_spans, epoch_offset_ps, extend_async, noted_calls
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
