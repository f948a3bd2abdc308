"""Every JAX profile window carries the I/O of that window, checked on real
captures made by CPU jax in subprocesses: the I/O plane and the tb_iotrace.io record are
the ones TensorFlow's captures carry, so report, exports, tab and findings read them."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tb_iotrace.analysis.attribution import attribute, op_kind
from tb_iotrace.store.xplane import columns, find_plane, load_xspace, profile_start_ns, read_io_data

pytestmark = pytest.mark.jax
SCRIPTS = Path(__file__).parent / "scripts"
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", JAX_PLATFORMS="cpu")


def run_window(mode: str, work: Path) -> tuple[dict, str]:
    proc = subprocess.run([sys.executable, str(SCRIPTS / "jax_window.py"), mode, str(work)],
                          capture_output=True, text=True, timeout=240, env=ENV)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads((work / "result.json").read_text()), proc.stderr


def reads_of(trace, path: str) -> np.ndarray:
    sel = (trace.path == path) & np.array([op_kind(o) == "read" for o in trace.op]) & (trace.errno == 0)
    return np.flatnonzero(sel)


def counters_of(trace, path: str, module: str = "POSIX") -> dict:
    recs = [f for f in trace.counters if f["path"] == path and f["module"] == module]
    assert len(recs) == 1, [f["path"] for f in trace.counters]
    return recs[0]["counters"]


def inside(space, att, rows: np.ndarray, name: str) -> bool:
    """Every row lies within an event ``name`` of the host line it was matched to."""
    pc = columns(find_plane(space, "/host:CPU"))
    for r in rows.tolist():
        ln = pc.lines[int(att.host_line[r])]
        sel = pc.event_names(ln) == name
        if not ((ln.start_ps[sel] <= att.start_ps[r]) & (att.end_ps[r] <= ln.end_ps[sel])).any():
            return False
    return len(rows) > 0


def check_window(res: dict, xplane: str) -> None:
    space = load_xspace(xplane)
    trace = read_io_data(space)
    assert trace is not None, "no I/O plane in the JAX capture"
    # the I/O lines sit in JAX's /host:CPU plane, as in TensorFlow's captures
    host = find_plane(space, "/host:CPU")
    assert host is not None and any(ln.name.startswith("I/O ") for ln in host.lines)
    att = attribute(space, trace)
    # one StepTraceAnnotation per file: four steps, numbered as the script numbered them
    assert [(s.name, s.step_num) for s in att.steps] == [("train", i) for i in range(4)]
    for i, (path, size) in enumerate(zip(res["files"], res["sizes"])):
        rows = reads_of(trace, path)
        # the events name the file and their bytes are the file's
        assert int(trace.returned[rows].sum()) == size, path
        assert counters_of(trace, path)["POSIX_BYTES_READ"] == size
        # each read ran on the main thread's host line, under the TraceAnnotation (innermost:
        # the Python tracer's frame of the read call), in its step
        assert all(str(e).startswith("$") and str(e).endswith(" read") for e in att.enclosing[rows])
        assert inside(space, att, rows, "load_region")
        assert set(att.step[rows].tolist()) == {i}
        assert att.steps[i].io_bytes >= size
    # the side thread's reads matched to that thread's host line (JAX's line id of the thread)
    rows = reads_of(trace, res["side"])
    assert int(trace.returned[rows].sum()) == res["side_size"]
    assert set(trace.tid[rows].tolist()) == {res["side_tid"]}
    assert inside(space, att, rows, "side_region")
    main = reads_of(trace, res["files"][0])
    assert len(set(att.host_line[rows].tolist()) | set(att.host_line[main].tolist())) == 2
    # one absolute clock: the reads fall inside the window the script timed
    lo, hi = res["region_ns"]
    every = np.concatenate([reads_of(trace, p) for p in res["files"]])
    assert (trace.start_ns[every] >= lo).all() and (trace.end_ns[every] <= hi).all()
    start = profile_start_ns(space)
    assert start is not None and (trace.start_ns >= start).all()


def test_start_stop_trace_carries_the_files_read(tmp_path: Path) -> None:
    res, _ = run_window("startstop", tmp_path)
    assert len(res["xplanes"]) == 1
    check_window(res, res["xplanes"][0])
    # registered because the loaded jaxlib's check (read from its library) takes the 80-byte table
    hook = res["hook"]
    assert os.path.basename(hook["library"]) in ("libjax_common.so", "xla_extension.so")
    assert (hook["check"], hook["table"], hook["registered"]) == ("a table of exactly 80 bytes", 80, True)


def test_trace_context_manager_with_enable_after_import(tmp_path: Path) -> None:
    res, _ = run_window("context", tmp_path)
    assert len(res["xplanes"]) == 1
    check_window(res, res["xplanes"][0])


def test_each_window_has_only_its_own_reads(tmp_path: Path) -> None:
    res, _ = run_window("twice", tmp_path)
    assert len(res["xplanes"]) == 2
    for path, size, other, xp in zip(res["files"][:2], res["sizes"][:2], res["files"][1::-1], res["xplanes"]):
        trace = read_io_data(load_xspace(xp))
        assert trace is not None
        assert int(trace.returned[reads_of(trace, path)].sum()) == size
        assert len(reads_of(trace, other)) == 0


def test_without_enable_the_capture_has_no_io(tmp_path: Path) -> None:
    res, _ = run_window("disabled", tmp_path)
    assert len(res["xplanes"]) == 1
    space = load_xspace(res["xplanes"][0])
    assert read_io_data(space) is None
    assert find_plane(space, "/host:CPU") is not None


def test_unknown_jaxlib_warns_once_and_leaves_captures_alone(tmp_path: Path) -> None:
    res, err = run_window("unknown", tmp_path)
    assert len(res["xplanes"]) == 2        # both windows saved, the job went on
    for xp in res["xplanes"]:
        assert read_io_data(load_xspace(xp)) is None
    assert err.count("tb_iotrace cannot hook jaxlib") == 1, err[-3000:]
    assert (res["hook"]["table"], res["hook"]["registered"]) == (None, False)
    assert "a table check tb_iotrace cannot read (played by the test)" in err


def test_failing_serialization_keeps_the_capture(tmp_path: Path) -> None:
    res, err = run_window("failing", tmp_path)
    assert len(res["xplanes"]) == 1
    space = load_xspace(res["xplanes"][0])
    assert read_io_data(space) is None and find_plane(space, "/host:CPU") is not None
    assert err.count("could not write the I/O plane for JAX") == 1, err[-3000:]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_remote_capture_of_a_profiler_server(tmp_path: Path) -> None:
    """`python -m jax.collect_profile` (the client TensorBoard's capture button uses too)
    against a process that called jax.profiler.start_server: no Python runs at capture."""
    port = free_port()
    worker = subprocess.Popen([sys.executable, str(SCRIPTS / "jax_server_worker.py"), str(port), str(tmp_path)],
                              env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 120
        while not (tmp_path / "ready").exists():
            assert time.time() < deadline, "worker did not start"
            assert worker.poll() is None, worker.stderr.read()[-2000:] if worker.stderr else ""
            time.sleep(0.2)
        logdir = tmp_path / "logs"
        proc = subprocess.run([sys.executable, "-m", "jax.collect_profile", str(port), "1500",
                               "--log_dir", str(logdir), "--no_perfetto_link"],
                              env=ENV, capture_output=True, text=True, timeout=180)
        assert proc.returncode == 0, proc.stderr[-3000:]
    finally:
        (tmp_path / "stop").touch()
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            worker.kill()
    files = sorted(logdir.glob("plugins/profile/*/*.xplane.pb"))
    assert len(files) == 1, files
    space = load_xspace(files[0])
    trace = read_io_data(space)
    assert trace is not None
    data = str(tmp_path / "worker.bin")
    rows = reads_of(trace, data)
    moved = int(trace.returned[rows].sum())
    size = 64 * 1024
    # whole passes over the file (each read call is in or out of the window), several of them
    assert moved > 0 and moved % 16384 == 0, moved
    assert counters_of(trace, data)["POSIX_BYTES_READ"] == moved
    start = profile_start_ns(space)
    assert start is not None and (trace.start_ns >= start).all()
    assert moved >= 2 * size


def test_grain_pipeline_reads_under_its_read_stage(tmp_path: Path) -> None:
    """grain's ArrayRecord reads run on its prefetch threads: each lands on that thread's JAX
    host line, inside grain's own read-stage event (TraceMe with _ipl_stage_cat=read)."""
    proc = subprocess.run([sys.executable, str(SCRIPTS / "jax_grain.py"), str(tmp_path)],
                          capture_output=True, text=True, timeout=240, env=ENV)
    assert proc.returncode == 0, proc.stderr[-4000:]
    res = json.loads((tmp_path / "result.json").read_text())
    assert res["total"] == 64 * 4000 and len(res["xplanes"]) == 1
    space = load_xspace(res["xplanes"][0])
    trace = read_io_data(space)
    assert trace is not None
    att = attribute(space, trace)
    rows = reads_of(trace, res["path"])
    assert len(rows) >= 64                      # one read of the file per record at least
    assert int(trace.returned[rows].sum()) == counters_of(trace, res["path"])["POSIX_BYTES_READ"]
    # on grain's threads' host lines, not on the line of the step loop (the main thread)
    pc = columns(find_plane(space, "/host:CPU"))
    step_lines = {k for k, ln in enumerate(pc.lines) if (pc.event_names(ln) == "train").any()}
    assert len(step_lines) == 1
    assert (att.host_line[rows] >= 0).all() and not set(att.host_line[rows].tolist()) & step_lines
    ln = pc.lines[int(att.host_line[rows[0]])]
    i = int(np.flatnonzero(pc.event_names(ln) == "ArrayRecordDataSource.__getitem__")[0])
    assert pc.event_stats(ln, i).get("_ipl_stage_cat") == "read"
    assert len(att.steps) == 64
