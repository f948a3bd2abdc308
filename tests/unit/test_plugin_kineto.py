"""The I/O tab on PyTorch (Kineto) traces: the logdir scan finds them where the trace handlers
put them, one capture per trace file, aten op / GPU / I/O lanes, ProfilerStep#N as steps, the
files table with the workers' exact bytes; a corrupt or foreign trace is a clear 422 for that
capture and the other runs still load.

Ground truth: tests/data/torch_loader.pt.trace.json.gz (a real CPU torch 2.13 run whose
DataLoader(num_workers=2) read 8 known files, tests/data/torch_loader.json) and the synthetic
GPU trace tests/data/kineto_gpu_synthetic.pt.trace.json."""
from __future__ import annotations

import gzip
import json
import os
import shutil
from pathlib import Path

import pytest

from tb_iotrace.store import logdir as logdir_mod
from plugin_client import items_of, make_client

DATA = Path(__file__).resolve().parents[1] / "data"
TRACE = DATA / "torch_loader.pt.trace.json.gz"
GPU = DATA / "kineto_gpu_synthetic.pt.trace.json"
NAME0 = "worker0.1795474975155532512.pt.trace.json.gz"
NAME1 = "trainer.example.com_77.1795474999000000000.pt.trace.json.gz"


@pytest.fixture(scope="module")
def manifest() -> dict:
    return json.loads((DATA / "torch_loader.json").read_text())


@pytest.fixture(scope="module")
def logdir(tmp_path_factory, jax_captures) -> Path:
    """``train``: two workers' traces (the real one twice, under two worker names);
    ``gpu``: the synthetic GPU trace; ``bad``: a truncated gzip; ``foreign``: JSON that is
    not a Kineto trace; ``jaxrun/plugins/profile/s1``: a JAX capture beside them."""
    ld = tmp_path_factory.mktemp("kineto") / "logs"
    (ld / "train").mkdir(parents=True)
    shutil.copyfile(TRACE, ld / "train" / NAME0)
    shutil.copyfile(TRACE, ld / "train" / NAME1)
    (ld / "gpu").mkdir()
    shutil.copyfile(GPU, ld / "gpu" / "gpuhost_4242.1795474999000000001.pt.trace.json")
    (ld / "bad").mkdir()
    (ld / "bad" / "w.1.pt.trace.json.gz").write_bytes(TRACE.read_bytes()[:300])
    (ld / "foreign").mkdir()
    (ld / "foreign" / "w.1.pt.trace.json").write_text(json.dumps({"displayTimeUnit": "ms", "events": []}))
    prof = ld / "jaxrun" / "plugins" / "profile" / "s1"
    prof.mkdir(parents=True)
    shutil.copyfile(jax_captures[0], prof / "vm.xplane.pb")
    return ld


@pytest.fixture(scope="module")
def client(logdir):
    return make_client(logdir)


# --------------------------------------------------------------------------- discovery


@pytest.mark.parametrize("name, worker", [
    ("vm_10600.1795474803703664515.pt.trace.json", "vm_10600"),
    ("host.example.com_12.3.1700000000000.pt.trace.json.gz", "host.example.com_12"),   # <worker>.<step>.<ts>
    ("worker0.pt.trace.json", "worker0"),
])
def test_worker_name_from_the_file_name(name: str, worker: str) -> None:
    assert logdir_mod.is_kineto_name(name) and logdir_mod.kineto_worker(name) == worker


def test_runs_list_trace_folders_one_host_per_trace(client, logdir):
    plugin, get = client
    assert plugin.is_active() is True
    code, body = get("/runs")
    assert code == 200
    runs = {r["run"]: r for r in body["runs"]}
    assert set(runs) == {"train", "gpu", "bad", "foreign", "jaxrun/s1"}
    assert runs["train"]["kind"] == "kineto" and runs["jaxrun/s1"]["kind"] == "profile"
    assert runs["train"]["hosts"] == ["trainer.example.com_77", "worker0"]
    assert runs["gpu"]["hosts"] == ["gpuhost_4242"]


def test_traces_in_the_logdir_itself_and_one_worker_twice(tmp_path):
    ld = tmp_path / "mylogs"
    ld.mkdir()
    shutil.copyfile(TRACE, ld / "w0.1.pt.trace.json.gz")
    shutil.copyfile(TRACE, ld / "w0.2.pt.trace.json.gz")
    (ld / "notes.json").write_text("{}")
    runs, _ = logdir_mod.scan(str(ld), kineto=True)
    assert [(r.run, r.kind, sorted(r.hosts)) for r in runs] == [("mylogs", "kineto", ["w0.1", "w0.2"])]
    assert logdir_mod.scan(str(ld))[0] == []           # only asked for by the plugin
    found, _ = logdir_mod.scan(str(ld), kineto=True, stop_at_first=True)
    assert len(found) == 1


def test_a_trace_linked_from_outside_is_not_listed(tmp_path):
    ld = tmp_path / "ld"
    (ld / "run").mkdir(parents=True)
    os.symlink(TRACE, ld / "run" / "w.1.pt.trace.json.gz")
    assert logdir_mod.scan(str(ld), kineto=True)[0] == []


# --------------------------------------------------------------------------- routes


def test_capture_has_op_io_lanes_and_profiler_steps(client, manifest):
    _, get = client
    code, cap = get("/capture", run="train", host="worker0")
    assert code == 200, cap
    groups = {ln["group"] for ln in cap["lanes"]}
    assert groups == {"host", "io"}
    host = [ln for ln in cap["lanes"] if ln["group"] == "host"]
    assert [ln["name"] for ln in host] == [f"thread {manifest['main_pid']} (python)"]
    io = [ln for ln in cap["lanes"] if ln["group"] == "io"]
    assert sorted(ln["tid"] for ln in io) == manifest["worker_pids"]
    for ln in io:
        assert ln["name"] == f"worker {ln['tid']}: pt_data_worker (tid {ln['tid']})"
    assert [s["name"] for s in cap["steps"]] == ["0", "1", "2", "3", "4"]
    assert "ProfilerStep#" in cap["steps_source"]
    assert cap["io"]["has_io"] and cap["io"]["events"] == 64 and cap["messages"] == []
    # every I/O call is drawn, inside the profiled steps
    code, tl = get("/timeline", run="train", host="worker0", width=1000)
    assert code == 200
    lo, hi = cap["steps"][0]["start"], cap["steps"][-1]["end"]
    io_index = {i for i, ln in enumerate(tl["lanes"]) if ln["group"] == "io"}
    got = [(s, n) for lane, s, n in items_of(tl) if lane in io_index]
    assert sum(n for _, n in got) == 64
    assert all(lo <= s <= hi for s, _ in got)


def test_files_table_has_the_workers_exact_bytes(client, manifest):
    _, get = client
    code, files = get("/files", run="train", host="worker0")
    assert code == 200, files
    got = {p: files["columns"]["bytes_read"][i] for i, p in enumerate(files["path"]) if files["module"][i] == "POSIX"}
    assert got == manifest["files"]
    traced = {p: files["columns"]["traced_bytes"][i] for i, p in enumerate(files["path"])}
    assert traced == manifest["files"]


def test_event_details_of_an_op_and_a_step(client):
    _, get = client
    code, cap = get("/capture", run="train", host="worker0")
    lane = next(ln for ln in cap["lanes"] if ln["group"] == "host")
    details = [get("/event", run="train", host="worker0", lane=lane["key"], index=i)[1] for i in range(lane["events"])]
    step = next(d for d in details if d["name"] == "ProfilerStep#2")
    assert step["stats"]["step_num"] == 2
    op = next(d for d in details if d["name"] == "aten::linear")
    assert isinstance(op["stats"].get("External id"), int)


def test_per_step_io_all_inside_steps(client, manifest):
    _, get = client
    code, st = get("/steps", run="train", host="worker0")
    assert code == 200 and st["has_steps"]
    assert sum(s["bytes_read"] for s in st["steps"]) == sum(manifest["files"].values())
    # the main process waited in the DataLoader's __next__ (Kineto's enumerate(DataLoader)#...)
    code, cap = get("/capture", run="train", host="worker0")
    lane = next(ln for ln in cap["lanes"] if ln["group"] == "host")
    waits = [get("/event", run="train", host="worker0", lane=lane["key"], index=i)[1] for i in range(lane["events"])]
    waits = [d for d in waits if d["name"].startswith("enumerate(DataLoader)#")]
    assert waits
    for s in st["steps"]:
        inside = sum(min(d["start"] + d["dur"], s["end"]) - max(d["start"], s["start"]) for d in waits
                     if d["start"] < s["end"] and d["start"] + d["dur"] > s["start"])
        assert s["input_wait_ns"] == inside, (s, inside)
    assert any(s["input_wait_ns"] > 0 for s in st["steps"])


def test_gpu_lanes(client):
    _, get = client
    code, cap = get("/capture", run="gpu", host="gpuhost_4242")
    assert code == 200, cap
    dev = [ln["name"] for ln in cap["lanes"] if ln["group"] == "device"]
    assert dev == ["GPU:0 Stream #7", "GPU:1 Stream #13"]
    assert [ln["events"] for ln in cap["lanes"] if ln["group"] == "device"] == [3, 1]
    assert [s["name"] for s in cap["steps"]] == ["3"]
    io = [ln for ln in cap["lanes"] if ln["group"] == "io"]
    assert len(io) == 1 and io[0]["events"] == 1


@pytest.mark.parametrize("run, host, why", [
    ("bad", "w", "not a readable Kineto trace"),
    ("foreign", "w", "not a Kineto trace (no top-level 'traceEvents' list)"),
])
def test_corrupt_or_foreign_trace_is_422_and_others_load(client, run, host, why):
    _, get = client
    code, body = get("/capture", run=run, host=host)
    assert code == 422 and why in body["error"], body
    assert body["file"].endswith((".pt.trace.json", ".pt.trace.json.gz"))
    assert get("/capture", run="train", host="worker0")[0] == 200
    assert get("/capture", run="jaxrun/s1", host="vm")[0] == 200


def test_plain_pytorch_trace_says_why_it_has_no_io(tmp_path):
    doc = json.loads(gzip.decompress(TRACE.read_bytes()))
    del doc["tb_iotrace"]
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e.get("cat") != "tb_iotrace.io"]
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "w.1.pt.trace.json").write_text(json.dumps(doc))
    _, get = make_client(tmp_path)
    code, cap = get("/capture", run="run", host="w")
    assert code == 200 and not cap["io"]["has_io"]
    assert any("tb_iotrace.torch.trace_handler" in m for m in cap["messages"])
    assert [s["name"] for s in cap["steps"]] == ["0", "1", "2", "3", "4"]


def test_a_rewritten_trace_is_converted_again(tmp_path):
    (tmp_path / "run").mkdir()
    dst = tmp_path / "run" / "w.1.pt.trace.json"
    dst.write_bytes(GPU.read_bytes())
    _, get = make_client(tmp_path)
    assert get("/capture", run="run", host="w")[1]["io"]["events"] == 1
    doc = json.loads(GPU.read_text())
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e.get("cat") != "tb_iotrace.io"]
    dst.write_text(json.dumps(doc))
    os.utime(dst, ns=(1, 1))
    assert get("/capture", run="run", host="w")[1]["io"]["events"] == 0


@pytest.mark.slow
def test_findings_of_a_pytorch_run(client):
    _, get = client
    code, fi = get("/findings", run="train", host="worker0")
    assert code == 200, fi
    assert set(fi) >= {"findings", "message"}
    assert not any("no TensorFlow host timeline" in n for n in fi.get("notes", []))


def test_all_hosts_of_a_pytorch_run_on_one_clock(client, manifest):
    """The run's two traces (the same window under two worker names) on one clock: both
    hosts' lanes, the same times, and the files table counts each host's bytes."""
    _, get = client
    code, cap = get("/capture", run="train", host="__all__")
    assert code == 200, cap
    assert cap["hosts"] == ["trainer.example.com_77", "worker0"]
    io = [ln for ln in cap["lanes"] if ln["group"] == "io"]
    assert len(io) == 4 and cap["io"]["events"] == 128
    code, files = get("/files", run="train", host="__all__")
    assert code == 200
    for host in cap["hosts"]:
        got = {p: files["columns"]["bytes_read"][i] for i, p in enumerate(files["path"])
               if files["host"][i] == host and files["module"][i] == "POSIX"}
        assert got == manifest["files"]
    code, hosts = get("/hosts", run="train", host="__all__")
    assert code == 200
    assert [r["bytes_read"] for r in hosts["hosts"]] == [sum(manifest["files"].values())] * 2
