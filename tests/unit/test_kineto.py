"""tb_iotrace.store.kineto: I/O events on a Kineto trace's clock, and clear errors for files that
are not Kineto traces."""
from __future__ import annotations

import gzip
import json
from collections import defaultdict
from pathlib import Path

import pytest

from tb_iotrace.store.kineto import CATEGORY, KEY, KinetoTraceError, add_io, io_record, read_trace, write_trace

BASE = 1_790_857_026_000_000_000


def proc(pid: int, role: str) -> dict:
    return {"pid": pid, "role": role, "start_ns": BASE + 5_000_000, "end_ns": BASE + 9_000_000,
            "threads": [[pid, 1, "python"]],
            "events": {"op": ["open64", "read"], "path": ["/d/a", "/d/a"], "offset": [-1, 0],
                       "requested": [-1, 4096], "returned": [-1, 100], "fd": [3, 3], "errno": [0, 0],
                       "start_ns": [BASE + 6_000_000, BASE + 7_000_500], "end_ns": [BASE + 6_001_000, BASE + 7_003_000],
                       "tid": [pid, pid]},
            "counters": [{"path": "/d/a", "module": "POSIX", "counters": {"POSIX_BYTES_READ": 100}}], "dropped": 0}


def kineto() -> dict:
    return {"schemaVersion": 1, "baseTimeNanoseconds": BASE,
            "traceEvents": [{"ph": "M", "name": "process_name", "pid": 10, "tid": 0, "ts": 4000.0,
                             "args": {"name": "python"}},
                            {"ph": "X", "name": "ProfilerStep#1", "pid": 10, "tid": 10, "ts": 5000.0, "dur": 4000.0}]}


def test_add_io_places_calls_on_kineto_clock() -> None:
    t = add_io(kineto(), [proc(10, "main"), proc(11, "worker")])
    io = [e for e in t["traceEvents"] if e.get("cat") == CATEGORY]
    assert len(io) == 4
    read = next(e for e in io if e["pid"] == 11 and e["name"] == "read")
    assert read["ts"] == 7000.5 and read["dur"] == 2.5 and read["tid"] == 11
    assert read["args"] == {"fd": 3, "path": "/d/a", "offset": 0, "bytes_requested": 4096, "bytes": 100}
    assert "offset" not in next(e for e in io if e["name"] == "open64")["args"]
    # Kineto named pid 10 already; the worker gets a process track name, both an I/O thread name
    pnames = [e for e in t["traceEvents"] if e.get("name") == "process_name"]
    assert [e["pid"] for e in pnames] == [10, 11]
    rec = io_record(t)
    assert rec is not None and [p["pid"] for p in rec["processes"]] == [10, 11]
    assert rec["processes"][1]["num_events"] == 2 and "events" not in rec["processes"][1]
    assert rec["processes"][1]["counters"][0]["counters"]["POSIX_BYTES_READ"] == 100


def test_unequal_columns_refused() -> None:
    p = proc(11, "worker")
    p["events"]["tid"] = [11]
    with pytest.raises(ValueError, match="unequal"):
        add_io(kineto(), [p])


@pytest.mark.parametrize("name", ["t.pt.trace.json", "t.pt.trace.json.gz"])
def test_write_read_round_trip(tmp_path: Path, name: str) -> None:
    t = add_io(kineto(), [proc(11, "worker")])
    write_trace(tmp_path / name, t)
    raw = (tmp_path / name).read_bytes()
    assert (raw[:2] == b"\x1f\x8b") == name.endswith(".gz")
    assert read_trace(tmp_path / name) == json.loads(json.dumps(t))


@pytest.mark.parametrize("content, why", [
    (b"", "JSONDecodeError"),
    (b"{\"traceEvents\": [", "JSONDecodeError"),
    (b"\x1f\x8b\x08\x00garbage", "not a readable Kineto trace"),
    (b"[1, 2]", "no top-level 'traceEvents' list"),
    (b"{\"displayTimeUnit\": \"ms\"}", "no top-level 'traceEvents' list"),
    (b"\xff\xfe\x00", "not a readable Kineto trace"),
])
def test_foreign_or_corrupt_file_clear_error(tmp_path: Path, content: bytes, why: str) -> None:
    p = tmp_path / "x.pt.trace.json"
    p.write_bytes(content)
    with pytest.raises(KinetoTraceError, match=why) as err:
        read_trace(p)
    assert str(p) in str(err.value)


def test_missing_file_clear_error(tmp_path: Path) -> None:
    with pytest.raises(KinetoTraceError, match="FileNotFoundError"):
        read_trace(tmp_path / "none.json")


def test_gzip_truncated(tmp_path: Path) -> None:
    p = tmp_path / "t.json.gz"
    p.write_bytes(gzip.compress(json.dumps(kineto()).encode())[:-20])
    with pytest.raises(KinetoTraceError, match="not a readable Kineto trace"):
        read_trace(p)


def test_io_record_absent_or_foreign() -> None:
    assert io_record(kineto()) is None
    with pytest.raises(KinetoTraceError, match="unknown format"):
        io_record({"traceEvents": [], KEY: {"format": "other/9", "processes": []}})
    with pytest.raises(KinetoTraceError, match="unknown format"):
        io_record({"traceEvents": [], KEY: [1]})


def test_metadata_events_as_kineto_writes_them() -> None:
    """Our track names carry a ``ts`` as Kineto's do (HTA reads a trace with one that lacks it
    with float timestamps), and a thread Kineto named keeps its one name (a second would leave
    the viewer to pick one for the track of its ops): only threads Kineto did not name get one."""
    t = kineto()
    t["traceEvents"].append({"ph": "M", "name": "thread_name", "pid": 10, "tid": 10, "ts": 4000.0,
                             "args": {"name": "thread 10 (python)"}})
    main = proc(10, "main")
    main["threads"].append([12, 2, "pt_autograd_0"])
    add_io(t, [main, proc(11, "worker")])
    meta = [e for e in t["traceEvents"] if e.get("ph") == "M"]
    assert all(isinstance(e.get("ts"), (int, float)) for e in meta)
    names = defaultdict(list)
    for e in meta:
        if e["name"] == "thread_name":
            names[(e["pid"], e["tid"])].append(e["args"]["name"])
    assert names == {(10, 10): ["thread 10 (python)"], (10, 12): ["I/O: pt_autograd_0 (12)"],
                     (11, 11): ["I/O: python (11)"]}
    # at the process's recording start on Kineto's clock (it precedes every call of the process)
    worker_meta = [e for e in meta if e["pid"] == 11]
    assert {e["ts"] for e in worker_meta} == {5000.0}


def worker_with_fetches(pid: int = 11) -> dict:
    p = proc(pid, "worker")
    p["worker_id"] = 1
    p["fetches"] = {"start_ns": [BASE + 6_500_000, BASE + 7_000_000], "end_ns": [BASE + 6_900_000, BASE + 7_004_000],
                    "tid": [pid, pid], "samples": [4, 3]}
    return p


def test_fetch_spans_become_fetch_events_on_kineto_clock() -> None:
    t = add_io(kineto(), [proc(10, "main"), worker_with_fetches(11)])
    fetches = [e for e in t["traceEvents"] if e.get("name") == "tb_iotrace::fetch"]
    assert fetches == [
        {"ph": "X", "cat": "tb_iotrace", "name": "tb_iotrace::fetch", "pid": 11, "tid": 11, "ts": 6500.0,
         "dur": 400.0, "args": {"worker_id": 1, "samples": 4}},
        {"ph": "X", "cat": "tb_iotrace", "name": "tb_iotrace::fetch", "pid": 11, "tid": 11, "ts": 7000.0,
         "dur": 4.0, "args": {"worker_id": 1, "samples": 3}}]
    # the read at 7000.5 us lies inside the second span, on the same track
    read = next(e for e in t["traceEvents"] if e.get("cat") == CATEGORY and e["pid"] == 11 and e["name"] == "read")
    assert fetches[1]["ts"] <= read["ts"] and read["ts"] + read["dur"] <= fetches[1]["ts"] + fetches[1]["dur"]
    rec = io_record(t)
    assert rec is not None
    w = rec["processes"][1]
    assert w["num_fetches"] == 2 and w["worker_id"] == 1 and "fetches" not in w
    assert "num_fetches" not in rec["processes"][0]


def test_fetch_thread_without_io_gets_a_track_name() -> None:
    p = worker_with_fetches(11)
    p["fetches"]["tid"] = [12, 12]
    t = add_io(kineto(), [p])
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in t["traceEvents"] if e.get("name") == "thread_name"}
    assert names[(11, 12)] == "DataLoader worker (12)"


def test_unequal_fetch_columns_refused() -> None:
    p = worker_with_fetches(11)
    p["fetches"]["samples"] = [4]
    with pytest.raises(ValueError, match="fetch columns of unequal length"):
        add_io(kineto(), [p])
