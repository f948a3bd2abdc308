"""tb_iotrace.store.xplane.merge: an I/O trace merged into a saved capture in place (atomically, its
mode kept, xprof's caches removed, a second merge replacing the first), and what xprof's trace
viewers then draw (helpers and captures: test_xplane)."""
from __future__ import annotations

import numpy as np
import pytest

from tb_iotrace.store import xplane as X
from tb_iotrace.store.xplane import encode, schema

from test_xplane import (GPU_HOST, T0, assert_same_rows, capture_copy, host_pid,
                         make_trace, selected_event_args, viewer)


@pytest.mark.slow
def test_merge_into_gpu_capture_and_viewers(gpu_capture, tmp_path):
    path = capture_copy(tmp_path, gpu_capture)
    procs, threads, spans = viewer(path, "trace_viewer@")  # builds xprof's caches
    caches = X.cache_paths(path)
    assert [c.name for c in caches] == [f"{GPU_HOST}.SSTABLE", f"{GPU_HOST}.metadata.SSTABLE",
                                        f"{GPU_HOST}.trie.SSTABLE"]
    assert all(c.exists() for c in caches)
    n_before = len(spans)

    trace = make_trace(400, T0 + 130_000_000, nthreads=2)  # inside the capture's span
    with pytest.raises(ValueError, match="start_ns"):
        X.merge_into_capture(path, trace)  # no Task Environment plane
    result = X.merge_into_capture(path, trace, start_ns=T0)
    assert result.num_events == 400 and not result.replaced_previous
    assert sorted(result.caches_removed) == sorted(str(c) for c in caches)
    assert not any(c.exists() for c in caches)
    assert not list(path.parent.glob(".*.tmp"))
    assert oct(path.stat().st_mode & 0o777) == oct(0o644)
    assert_same_rows(trace, X.read_io_data(X.load_xspace(path)))

    ref = make_trace(400, T0 + 130_000_000, nthreads=2)
    for tool in ("trace_viewer@", "trace_viewer"):
        procs, threads, spans = viewer(path, tool)
        hpid = host_pid(procs)
        io = [e for e in spans if threads.get((e["pid"], e["tid"]), "").startswith("I/O ")]
        assert len(io) == 400, tool
        assert {e["pid"] for e in io} == {hpid}
        assert {threads[(hpid, e["tid"])] for e in io} == {"I/O worker-4000 (tid 4000)",
                                                          "I/O worker-4001 (tid 4001)"}
        assert {e["name"] for e in io} == set(ref.op.tolist())
        # beside the host threads and the GPU streams of the same capture
        assert any(threads.get((hpid, e["tid"])) == "python3" for e in spans)
        gpu_streams = {threads[(e["pid"], e["tid"])] for e in spans
                       if procs[e["pid"]].split(" ")[-1].startswith("/device:GPU:")}
        assert "Stream #134(Compute)" in gpu_streams
        if tool == "trace_viewer@":
            assert len(spans) == n_before + 400
        # on the same clock: ts in us since the profile start
        first = min(io, key=lambda e: e["ts"])
        assert first["ts"] == pytest.approx((ref.start_ns.min() - T0) / 1000, abs=1e-3)
        # the event's details: its stats, and path and fd from its kind's metadata stats
        i = int(np.argmin(ref.start_ns))
        if tool == "trace_viewer":  # the older viewer returns them as args
            args = first["args"]
            assert args["long_name"] == encode._safe_text(
                schema.kind_name(ref.op[i], ref.path[i], int(ref.fd[i])))[0]
        else:  # the streaming viewer on selecting the event
            args = selected_event_args(path, first)
        assert set(args) <= {"long_name", "path", "fd", "offset", "bytes_requested", "bytes_returned", "errno"}
        assert int(args["bytes_returned"]) == ref.returned[i]
        assert args.get("path", "") == encode._safe_text(ref.path[i])[0]
        assert int(args.get("fd", -1)) == ref.fd[i]
        assert int(args.get("bytes_requested", ref.returned[i])) == ref.requested[i]

    # merging again replaces, it does not add
    trace2 = make_trace(50, T0 + 140_000_000, nthreads=1, seed=3)
    result = X.merge_into_capture(path, trace2, start_ns=T0)
    assert result.replaced_previous
    space = X.load_xspace(path)
    assert_same_rows(trace2, X.read_io_data(space))
    host = X.find_plane(space, X.HOST_PLANE)
    assert sum(ln.name.startswith("I/O ") for ln in host.lines) == 1
    assert len(host.lines) == 23


@pytest.mark.tf
def test_merge_into_cpu_capture_and_viewers(tmp_path, cpu_capture):
    src, trace = cpu_capture
    path = capture_copy(tmp_path, src, "vm")
    space = X.load_xspace(path)
    tid = int(trace.tid[0])
    pthread_id = trace.threads[tid].pthread_id
    host = X.find_plane(space, X.HOST_PLANE)
    # TF 2.21 names the host line of a thread by std::hash<std::thread::id>(pthread_self()).
    match = [ln for ln in host.lines if ln.id == X.thread_line_id(pthread_id)]
    assert len(match) == 1, [(ln.id, ln.name) for ln in host.lines]
    host_name = match[0].display_name or match[0].name

    result = X.merge_into_capture(path, trace)  # clock from the Task Environment plane
    assert result.profile_start_ns == X.profile_start_ns(space)
    assert result.lines[0]["host_line_id"] == match[0].id
    io_name = f"I/O {host_name} (tid {tid})"
    assert result.lines[0]["name"] == io_name
    assert_same_rows(trace, X.read_io_data(X.load_xspace(path)))

    for tool in ("trace_viewer@", "trace_viewer"):
        procs, threads, spans = viewer(path, tool)
        hpid = host_pid(procs)
        io = sorted((e for e in spans if threads.get((e["pid"], e["tid"])) == io_name), key=lambda e: e["ts"])
        assert [e["name"] for e in io] == ["open", "pwrite64", "pread64", "pread64"], tool
        assert {e["pid"] for e in io} == {hpid}
        # the I/O happened between the two profiled calls of f on the same thread
        f_calls = sorted((e for e in spans if e["pid"] == hpid and e["name"] == "f"
                          and threads[(hpid, e["tid"])] == host_name), key=lambda e: e["ts"])
        assert len(f_calls) == 2, tool
        assert f_calls[0]["ts"] + f_calls[0]["dur"] <= io[0]["ts"] + 1
        assert io[-1]["ts"] + io[-1]["dur"] <= f_calls[1]["ts"] + 1
