"""tb_iotrace.store.kineto_columns: which events the Collector keeps (complete, string name,
finite ts within bounds), where it puts them (host thread, GPU stream, I/O columns), how it
reads ids, durations and arguments (kinds, nulls, text cut, int64 overflow) and the span."""
from __future__ import annotations

from typing import Any

from tb_iotrace.store.kineto import CATEGORY
from tb_iotrace.store.kineto_columns import (ARG_FLOAT, ARG_INT, ARG_TEXT, MAX_STAT_TEXT, MAX_US, Collector,
                                             int_id, num)
from tb_iotrace.store.kineto_json import Event


def x(name: Any = "op", ts: Any = 1.0, dur: Any = 2.0, pid: Any = 1, tid: Any = 2, **more: Any) -> dict[str, Any]:
    return {"ph": "X", "name": name, "ts": ts, "dur": dur, "pid": pid, "tid": tid, **more}


def test_num_and_int_id() -> None:
    assert [num(v) for v in (3, 2.5, True, "1", float("nan"), float("inf"), None)] == [3.0, 2.5, None, None, None,
                                                                                        None, None]
    assert [int_id(v) for v in (7, "stream 7", " -3 ", "7a", True, 1.0, None)] == [7, 7, -3, None, None, None, None]


def test_only_sound_complete_events_are_kept() -> None:
    c = Collector(base_ns=1000)
    c.add_events([x(), x(ph="B"), {**x(), "ph": "i"}, x(name=5), x(ts="3"), x(ts=float("nan")), x(ts=MAX_US),
                  x(ts=-MAX_US), x(ts=None), "junk", 5, None, x(ts=3)])
    assert c.seen == 13 and c.complete == 2
    line = c.host[(1, 2)]
    assert list(line.start) == [1000 + 1000, 1000 + 3000] and list(line.dur) == [2000, 2000]


def test_bad_durations_count_as_zero() -> None:
    c = Collector(0)
    c.add_events([x(dur=d) for d in (None, -5.0, float("nan"), float("inf"), MAX_US, "9", True, 0.0015)])
    assert list(c.host[(1, 2)].dur) == [0, 0, 0, 0, 0, 0, 0, 2]


def test_thread_names_first_wins_and_bad_ones_skipped() -> None:
    c = Collector(0)
    c.add_events([{"ph": "M", "name": "thread_name", "pid": 1, "tid": "2", "args": {"name": "main"}},
                  {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "later"}},
                  {"ph": "M", "name": "thread_name", "pid": 1, "tid": 3, "args": {"name": 4}},
                  {"ph": "M", "name": "thread_name", "pid": "x", "tid": 4, "args": {"name": "n"}},
                  {"ph": "M", "name": "process_name", "pid": 1, "tid": 5, "args": {"name": "p"}}])
    assert c.thread_names == {(1, 2): "main"} and c.complete == 0 and not c.host


def test_device_io_and_pseudo_processes() -> None:
    c = Collector(0)
    c.add_events([
        x(cat="kernel", pid=0, tid="stream 7", args={"device": 1, "stream": "stream 9"}),
        x(cat="gpu_memcpy", pid=2, tid="stream 4"),
        x(cat="kernel", args={"device": "gpu"}),
        x(cat=CATEGORY, name="read", args={"path": "/d/a", "offset": 8, "bytes": 100, "fd": True}),
        x(cat=CATEGORY, name="read", pid="Spans"),
        x(pid="Traces", tid="PyTorch Profiler"),
    ])
    assert {d: sorted(v) for d, v in c.device.items()} == {1: [9], 2: [4]}
    assert not c.host
    assert len(c.io) == 1 and c.io.op == ["read"] and c.io.path == ["/d/a"]
    assert c.io.ints["offset"][0] == 8 and c.io.ints["bytes"][0] == 100 and c.io.ints["fd"][0] == -1
    assert c.io.ints["errno"][0] == 0 and c.io.ints["bytes_requested"][0] == -1 and c.io.overflow is None


def test_a_null_device_or_stream_is_the_events_pid_or_tid() -> None:
    c = Collector(0)
    c.add_events([x(cat="kernel", pid=3, tid="stream 5", args={"device": None, "stream": None}),
                  x(cat="kernel", pid=3, tid=6, args={"device": None})])
    assert {d: sorted(v) for d, v in c.device.items()} == {3: [5, 6]}


def test_io_overflow_is_noted_once_and_defaulted() -> None:
    c = Collector(0)
    c.add_events([x(cat=CATEGORY, args={"offset": 2**63}), x(cat=CATEGORY, args={"fd": -(2**63) - 1, "path": 3})])
    assert c.io.overflow == f"offset {2**63} does not fit in 64 bits"
    assert list(c.io.ints["offset"]) == [-1, -1] and list(c.io.ints["fd"]) == [-1, -1] and c.io.path == ["", ""]


def test_arguments_come_back_by_kind() -> None:
    c = Collector(0)
    long = "y" * (MAX_STAT_TEXT + 50)
    c.add_events([x(args={"a": 1, "b": True}), x(args={"a": 1.5, "n": None, "s": "t", "l": [1, "z"], "big": 2**64,
                                                          "long": long, "t": False}),
                  x(args={"a": 2, "b": False}), x(args=["not", "a", "dict"])])
    line = c.host[(1, 2)]
    got = [c.args_of(at, sh) for at, sh in zip(line.arg_at, line.shape)]
    assert got[0] == [("a", ARG_INT, 1), ("b", ARG_INT, 1)]
    assert got[1] == [("a", ARG_FLOAT, 1.5), ("s", ARG_TEXT, "t"), ("l", ARG_TEXT, '[1,"z"]'),
                      ("big", ARG_TEXT, str(2**64)), ("long", ARG_TEXT, "y" * MAX_STAT_TEXT), ("t", ARG_INT, 0)]
    assert got[2] == [("a", ARG_INT, 2), ("b", ARG_INT, 0)] and got[3] == []
    assert line.shape[0] == line.shape[2]                    # one shape for the same keys and kinds


def test_names_interned_and_span_from_kept_events() -> None:
    c = Collector(10)
    c.add_events([x(name="a", ts=5.0, dur=1.0), x(name="b", ts=1.0, dur=0.5, tid=3), x(name="a", ts=2.0, dur=10.0),
                  x(name="z", ts=0.0, pid="Spans")])
    assert c.names == ["a", "b"] and list(c.host[(1, 2)].name) == [0, 0]
    assert (c.lo, c.hi) == (10 + 1000, 10 + 12000)


def test_structs_are_read_as_dicts_are() -> None:
    a, b = Collector(0), Collector(0)
    evs = [x(args={"k": 1.5, "s": "v"}), x(cat="kernel", args={"device": 0, "stream": 7})]
    a.add_events(evs)
    b.add_events([Event(**{k: v for k, v in e.items()}) for e in evs])
    assert a.complete == b.complete == 2
    la, lb = a.host[(1, 2)], b.host[(1, 2)]
    assert a.args_of(la.arg_at[0], la.shape[0]) == b.args_of(lb.arg_at[0], lb.shape[0])
    assert list(a.device[0][7].start) == list(b.device[0][7].start)
