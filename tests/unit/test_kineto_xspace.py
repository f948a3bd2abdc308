"""tb_iotrace.store.kineto_xspace: a Kineto trace as an XSpace shaped like a TF/JAX capture.

Ground truth: tests/data/torch_loader.pt.trace.json.gz, a real CPU torch 2.13 run (made by
tests/data/make_torch_trace.py) whose DataLoader(num_workers=2) read 8 known files, with their
sizes and the pids in tests/data/torch_loader.json; and a hand-written trace in the shape CUDA
builds write (tests/data/kineto_gpu_synthetic.pt.trace.json: no GPU here to record one)."""
from __future__ import annotations

import gzip
import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from tb_iotrace.analysis.attribution import attribute, op_kind
from tb_iotrace.store.kineto import CATEGORY, KinetoTraceError, read_trace
from tb_iotrace.store.kineto_xspace import KINETO_KEY, read_xspace, to_xspace
from tb_iotrace.store.xplane import find_plane, profile_start_ns, profile_stop_ns, read_io_data, read_io_info
from tb_iotrace.store.xplane.origin import capture_origin, missing_io_reason

DATA = Path(__file__).resolve().parents[1] / "data"
TRACE = DATA / "torch_loader.pt.trace.json.gz"
GPU = DATA / "kineto_gpu_synthetic.pt.trace.json"


@pytest.fixture(scope="module")
def manifest() -> dict:
    return json.loads((DATA / "torch_loader.json").read_text())


@pytest.fixture(scope="module")
def space():
    return read_xspace(TRACE)


def _pid_of_tid(info: dict) -> dict[int, int]:
    return {t: p["pid"] for p in info[KINETO_KEY]["processes"] for t in p["tids"]}


def test_worker_bytes_per_pid_equal_the_files(space, manifest) -> None:
    files, workers = manifest["files"], manifest["worker_pids"]
    trace = read_io_data(space)
    info = read_io_info(space)
    assert trace is not None and info is not None
    roles = {p["pid"]: p["role"] for p in info[KINETO_KEY]["processes"]}
    assert roles[manifest["main_pid"]] == "main"
    assert sorted(pid for pid, r in roles.items() if r == "worker") == workers
    pid_of = _pid_of_tid(info)
    got: dict[str, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    for op, path, ret, tid in zip(trace.op, trace.path, trace.returned, trace.tid.tolist()):
        if path in files and op_kind(op) == "read":
            got[path][pid_of[tid]] += int(ret)
    assert set(got) == set(files)
    for path, by_pid in got.items():
        # each file read whole, by exactly one worker
        assert len(by_pid) == 1 and next(iter(by_pid)) in workers, (path, dict(by_pid))
        assert sum(by_pid.values()) == files[path]
    assert {pid for by in got.values() for pid in by} == set(workers)
    # the merged per-file counters say the same
    posix = {c["path"]: c["counters"] for c in trace.counters if c["module"] == "POSIX"}
    for path, size in files.items():
        assert posix[path]["POSIX_BYTES_READ"] == size and posix[path]["POSIX_OPENS"] == 1
    # a worker's I/O thread is named after its process
    for tid, th in trace.threads.items():
        if roles.get(pid_of.get(tid)) == "worker":
            assert th.comm.startswith(f"worker {pid_of[tid]}: ") and th.pthread_id == 0


def test_io_on_kineto_clock_inside_the_steps(space) -> None:
    raw = read_trace(TRACE)
    base = raw["baseTimeNanoseconds"]
    trace = read_io_data(space)
    # absolute times: baseTimeNanoseconds + ts (us), as the trace handler wrote them
    raw_io = sorted(base + round(e["ts"] * 1000) for e in raw["traceEvents"] if e.get("cat") == CATEGORY)
    assert sorted(trace.start_ns.tolist()) == raw_io
    steps = [e for e in raw["traceEvents"] if str(e.get("name", "")).startswith("ProfilerStep#")]
    lo = min(base + round(e["ts"] * 1000) for e in steps)
    hi = max(base + round((e["ts"] + e["dur"]) * 1000) for e in steps)
    assert len(trace) and lo <= int(trace.start_ns.min()) and int(trace.end_ns.max()) <= hi
    start = profile_start_ns(space)
    assert start is not None and start <= lo and profile_stop_ns(space) >= hi

    # the attribution takes ProfilerStep#N as the steps, every data read inside one
    att = attribute(space, trace)
    assert att is not None and att.has_step_markers
    assert [s.step_num for s in att.steps] == list(range(len(steps)))
    assert [s.name for s in att.steps] == [f"ProfilerStep#{i}" for i in range(len(steps))]
    assert (att.step >= 0).all()
    reads = np.array([op_kind(o) == "read" for o in trace.op])
    assert sum(s.io_bytes for s in att.steps) == int(np.maximum(trace.returned[reads], 0).sum())


def test_host_plane_shape(space) -> None:
    host = find_plane(space, "/host:CPU")
    ops = [ln for ln in host.lines if not ln.name.startswith("I/O ")]
    assert len(ops) == 1 and ops[0].name == "thread {0} (python)".format(ops[0].display_id)
    names = {host.event_metadata[e.metadata_id].name for e in ops[0].events}
    assert {"aten::linear", "Optimizer.step#SGD.step"} <= names
    assert capture_origin(space.planes).framework == "PyTorch"
    # the I/O lines are one per thread, named like a TF capture's
    io_lines = [ln.name for ln in host.lines if ln.name.startswith("I/O ")]
    assert len(io_lines) == len(set(io_lines)) >= 2
    assert all(n.startswith("I/O worker ") for n in io_lines)


def test_gpu_lanes_from_kernel_memcpy_memset() -> None:
    sp = read_xspace(GPU)
    gpus = {p.name: p for p in sp.planes if p.name.startswith("/device:GPU:")}
    assert set(gpus) == {"/device:GPU:0", "/device:GPU:1"}
    g0 = gpus["/device:GPU:0"]
    assert [ln.name for ln in g0.lines] == ["Stream #7"]
    names = [g0.event_metadata[e.metadata_id].name for e in g0.lines[0].events]
    assert names == ["void gemv2T_kernel<float>(...)", "Memcpy HtoD (Pageable -> Device)", "Memset (Device)"]
    # times: ns since the profile start (the earliest event, ProfilerStep#3 at ts 1000 us)
    start = profile_start_ns(sp)
    raw = read_trace(GPU)
    assert start == raw["baseTimeNanoseconds"] + 1_000_000
    ln = g0.lines[0]
    assert ln.timestamp_ns == 30_000 and ln.events[0].duration_ps == 12_500_000
    assert ln.events[1].offset_ps == 80_000_000
    # CPU side: cuda_runtime calls on the thread's host line; the I/O thread named by its pthread
    host = find_plane(sp, "/host:CPU")
    cpu = [ln for ln in host.lines if not ln.name.startswith("I/O ")]
    assert [ln.name for ln in cpu] == ["thread 4242 (python)"]
    assert {host.event_metadata[e.metadata_id].name for e in cpu[0].events} == {
        "ProfilerStep#3", "aten::linear", "cudaLaunchKernel", "cudaMemcpyAsync"}
    tr = read_io_data(sp)
    assert tr.returned.tolist() == [4096] and tr.offset.tolist() == [4096]
    assert tr.start_ns.tolist() == [raw["baseTimeNanoseconds"] + 1_300_000]


def test_trace_without_io_record_converts_without_io() -> None:
    raw = read_trace(GPU)
    del raw["tb_iotrace"]
    sp = to_xspace(raw)
    assert read_io_data(sp) is None
    assert "tb_iotrace.torch.trace_handler" in missing_io_reason(sp.planes)
    assert find_plane(sp, "/device:GPU:0") is not None


@pytest.mark.parametrize("doc, why", [
    ({"foo": 1}, "no top-level 'traceEvents'"),
    ({"traceEvents": [{"ph": "i", "name": "x"}]}, "no complete"),
    ({"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 1, "pid": 1, "tid": 1}],
      "tb_iotrace": {"format": "tb_iotrace.kineto/99", "processes": []}}, "unknown format"),
    ({"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 1, "pid": 1, "tid": 1}],
      "baseTimeNanoseconds": "soon"}, "baseTimeNanoseconds"),
    ({"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 1, "pid": 1, "tid": 1}],
      "tb_iotrace": {"format": "tb_iotrace.kineto/1", "processes": [{"role": "main"}]}}, "without a pid"),
])
def test_foreign_traces_are_clear_errors(doc: dict, why: str, tmp_path: Path) -> None:
    p = tmp_path / "x.pt.trace.json.gz"
    p.write_bytes(gzip.compress(json.dumps(doc).encode()))
    with pytest.raises(KinetoTraceError, match=why) as err:
        read_xspace(p)
    assert str(p) in str(err.value)


def test_absurd_values_are_dropped_or_clear_errors(tmp_path: Path) -> None:
    ok = {"ph": "X", "name": "a", "ts": 10.0, "dur": 1.0, "pid": 1, "tid": 1}
    doc = {"traceEvents": [ok, dict(ok, ts=float("inf")), dict(ok, ts=float("nan")), dict(ok, ts=1e300),
                           dict(ok, name="b", dur=float("inf")), dict(ok, name="c", dur=1e300)]}
    sp = to_xspace(json.loads(json.dumps(doc)))
    host = find_plane(sp, "/host:CPU")
    assert sorted((host.event_metadata[e.metadata_id].name, e.duration_ps) for e in host.lines[0].events) == [
        ("a", 1_000_000), ("b", 0), ("c", 0)]
    # an arg past int64 is kept as text; a process id of any size is only a key
    sp = to_xspace({"traceEvents": [dict(ok, args={"x": 1 << 70}, pid=1 << 70)]})
    host = find_plane(sp, "/host:CPU")
    (st,) = host.lines[0].events[0].stats
    assert st.str_value == str(1 << 70)
    with pytest.raises(KinetoTraceError, match="baseTimeNanoseconds"):
        to_xspace({"traceEvents": [ok], "baseTimeNanoseconds": 1 << 64}, "t")


def test_corrupt_gzip_is_a_clear_error(tmp_path: Path) -> None:
    p = tmp_path / "w.1.pt.trace.json.gz"
    p.write_bytes(TRACE.read_bytes()[:500])
    with pytest.raises(KinetoTraceError, match="not a readable Kineto trace"):
        read_xspace(p)


def test_fetch_spans_are_events_of_the_workers_host_lines() -> None:
    """A forked worker's thread has the pthread_self of the parent's thread that forked it: the
    main thread keeps TensorFlow's line id (its I/O stays attributed to it), the worker's fetch
    spans get their own line, the tid, with worker_id and samples as stats."""
    from tb_iotrace.store.kineto import add_io

    base = 1_790_857_026_000_000_000
    pthread = 0x7F00DEAD0000

    def rec(pid: int, role: str, t0_us: float) -> dict:
        s = base + int(t0_us * 1000)
        return {"pid": pid, "role": role, "start_ns": base + 4_000_000, "end_ns": base + 10_000_000,
                "threads": [[pid, pthread, "python"]],
                "events": {"op": ["read"], "path": ["/d/a"], "offset": [0], "requested": [10], "returned": [10],
                           "fd": [3], "errno": [0], "start_ns": [s], "end_ns": [s + 1000], "tid": [pid]},
                "counters": [], "dropped": 0}

    worker = rec(11, "worker", 6100.0) | {"worker_id": 0, "fetches": {
        "start_ns": [base + 6_000_000], "end_ns": [base + 6_500_000], "tid": [11], "samples": [2]}}
    trace = {"schemaVersion": 1, "baseTimeNanoseconds": base,
             "traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#1", "pid": 10, "tid": 10,
                              "ts": 5000.0, "dur": 4000.0}]}
    space = to_xspace(add_io(trace, [rec(10, "main", 5500.0), worker]))
    host = find_plane(space, "/host:CPU")
    names = {k: v.name for k, v in host.event_metadata.items()}
    stat_names = {k: v.name for k, v in host.stat_metadata.items()}
    fetch_lines = [ln for ln in host.lines if any(names[e.metadata_id] == "tb_iotrace::fetch" for e in ln.events)]
    assert len(fetch_lines) == 1
    ln = fetch_lines[0]
    assert ln.display_id == 11 and ln.name.endswith("[pid 11]")
    ev = ln.events[0]
    assert ev.duration_ps == 500_000 * 1000
    stats = {stat_names[s.metadata_id]: s.int64_value for s in ev.stats}
    assert stats == {"worker_id": 0, "samples": 2}
    info = read_io_info(space)
    by_tid = {li["tid"]: li for li in info["lines"]}
    from tb_iotrace.store.xplane import thread_line_id
    assert by_tid[10]["host_line_id"] == thread_line_id(pthread)   # the main thread keeps its link
    assert by_tid[11]["host_line_id"] is None
