"""The machine a capture was made on (tb_iotrace.store.machine): its usable cores and mount table,
recorded by every kind of capture (a TF/JAX capture's I/O record, a PyTorch trace, a whole-run
record) and read back by one reader, ``host_facts``; the analysis names file systems by the
recorded mount table, by the analysing machine's only for captures that recorded none."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

import tb_iotrace
from tb_iotrace.analysis import analyze
from tb_iotrace.store.kineto import add_io, read_trace, write_trace
from tb_iotrace.store.kineto_xspace import to_xspace
from tb_iotrace.store.machine import FORMAT, host_facts, machine_facts, usable_cpus
from tb_iotrace.store.runrecord import read_record, write_record
from tb_iotrace.store.xplane import TASK_ENV_PLANE, IoTrace, XSpace, add_io_to_space

BASE = 1_790_857_026_000_000_000


def proc_mounts() -> set[tuple[str, str, str]]:
    """/proc/self/mounts as (mount point, fs type, source), octal escapes undone."""
    def unescape(s: str) -> str:
        return s.encode("latin-1").decode("unicode_escape") if "\\" in s else s

    out = set()
    with open("/proc/self/mounts", encoding="utf-8", errors="surrogateescape") as fh:
        for line in fh:
            source, point, fstype = line.split()[:3]
            out.add((unescape(point), fstype, unescape(source)))
    return out


def facts_set(facts: dict) -> set[tuple[str, str, str]]:
    return {(m["mount_point"], m["fs_type"], m["source"]) for m in facts["mounts"]}


def space_of(trace: IoTrace) -> XSpace:
    space = XSpace()
    env = space.planes.add()
    env.id, env.name = 0, TASK_ENV_PLANE
    add_io_to_space(space, trace, start_ns=BASE)
    return space


def test_this_machine() -> None:
    m = machine_facts()
    assert m["format"] == FORMAT
    assert m["cpus"] == usable_cpus(m["cpu_quota"]) and 1 <= m["cpus"] <= len(os.sched_getaffinity(0))
    assert m["cpus_online"] == os.cpu_count()
    assert {tuple(x) for x in m["mounts"]} == proc_mounts()


def test_a_capture_made_here_records_this_machine(tmp_path: Path) -> None:
    data = tmp_path / "x.bin"
    data.write_bytes(b"a" * 100)
    with tb_iotrace.capture() as cap:
        data.read_bytes()
    facts = host_facts(space_of(cap.to_iotrace()))          # the TF/JAX capture's I/O record
    assert facts is not None and facts["cpus"] == machine_facts()["cpus"]
    assert facts_set(facts) == proc_mounts()
    rec = read_record(write_record(tmp_path / "run", cap, partial=False))   # a whole-run record
    assert host_facts(rec) == facts and host_facts(rec.doc) == facts


def test_a_pytorch_trace_records_its_machine_and_to_xspace_keeps_it(tmp_path: Path) -> None:
    trace = {"schemaVersion": 1, "baseTimeNanoseconds": BASE, "traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#1", "pid": 10, "tid": 10, "ts": 0.0, "dur": 10.0}]}
    add_io(trace, [], extra={"machine": machine_facts()})
    write_trace(tmp_path / "t.pt.trace.json", trace)
    back = read_trace(tmp_path / "t.pt.trace.json")
    facts = host_facts(back)
    assert facts is not None and facts_set(facts) == proc_mounts()
    assert host_facts(to_xspace(back)) == facts


def read_trace_on(path: str) -> IoTrace:
    t0 = BASE + 1_000_000
    return IoTrace(op=["open", "read"], path=[path, path], offset=[-1, 0], requested=[0, 4096],
                   returned=[3, 4096], fd=[3, 3], errno=[0, 0], start_ns=[t0, t0 + 10_000],
                   end_ns=[t0 + 5_000, t0 + 50_000], tid=[100, 100], threads={100: (1, "python")})


NFS = {"format": FORMAT, "cpus": 64, "cpus_online": 64, "cpu_quota": None,
       "mounts": [["/", "overlay", "overlay"], ["/datasets", "nfs", "filer:/export/datasets"]]}


def fs_of(a, path: str) -> tuple[str, str]:
    f = next(f for f in a.files if f["path"] == path)
    return f["mount_point"], f["fs_type"]


def test_analysis_names_the_recorded_file_system_not_this_machines() -> None:
    path = "/datasets/imagenet/train-00001.tar"
    here = {m[1] for m in machine_facts()["mounts"] if m[0] == "/datasets"}
    assert "nfs" not in here    # this machine says otherwise
    trace = read_trace_on(path)
    trace.machine = dict(NFS)
    a = analyze(space_of(trace))                 # a TF/JAX capture
    assert a is not None and fs_of(a, path) == ("/datasets", "nfs")
    assert not [n for n in a.notes if "this machine's" in n]


def test_analysis_of_a_pytorch_trace_uses_its_recorded_mounts() -> None:
    path = "/datasets/imagenet/train-00001.tar"
    worker = {"pid": 11, "role": "worker", "start_ns": BASE, "end_ns": BASE + 10_000_000,
              "threads": [[11, 7, "python"]],
              "events": {"op": ["open64", "read"], "path": [path, path], "offset": [-1, 0], "requested": [-1, 4096],
                         "returned": [3, 4096], "fd": [3, 3], "errno": [0, 0],
                         "start_ns": [BASE + 1_000_000, BASE + 2_000_000], "end_ns": [BASE + 1_001_000, BASE + 2_050_000],
                         "tid": [11, 11]}, "counters": [], "dropped": 0}
    trace = {"schemaVersion": 1, "baseTimeNanoseconds": BASE, "traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#1", "pid": 10, "tid": 10, "ts": 0.0, "dur": 9000.0}]}
    add_io(trace, [worker], extra={"machine": NFS})
    a = analyze(to_xspace(trace))
    assert a is not None and fs_of(a, path) == ("/datasets", "nfs")


def test_old_capture_without_machine_uses_this_machine_and_says_so() -> None:
    trace = read_trace_on("/datasets/x")
    space = space_of(trace)
    assert host_facts(space) is None and host_facts(trace) is None
    a = analyze(space)
    assert a is not None and [n for n in a.notes if "this machine's /proc/self/mountinfo" in n]


def test_capture_with_only_mountinfo_text_gives_its_mounts() -> None:
    trace = read_trace_on("/datasets/x")
    trace.mounts = "41 27 0:51 / /datasets rw - nfs4 filer:/export rw\n"
    facts = host_facts(space_of(trace))
    assert facts == {"cpus": None, "mounts": [{"mount_point": "/datasets", "fs_type": "nfs4", "source": "filer:/export"}]}


def test_malformed_machine_records_are_ignored() -> None:
    assert host_facts({"machine": {"cpus": "eight", "mounts": [["/", "ext4"]]}}) is None
    assert host_facts({"machine": {"cpus": 8, "mounts": "x"}}) == {"cpus": 8, "mounts": []}
    assert host_facts(np.zeros(3)) is None
