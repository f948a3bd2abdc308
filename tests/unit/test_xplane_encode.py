"""tb_iotrace.store.xplane.encode: the I/O writer (lines per thread, event kinds and their stats,
the cap, empty traces, byte paths, its speed) (helpers: test_xplane)."""
from __future__ import annotations

import time

import numpy as np

from tb_iotrace.store import xplane as X
from tb_iotrace.store.xplane import encode, schema

from test_xplane import T0, assert_same_rows, make_trace


def test_io_lines_layout(gpu_capture):
    trace = make_trace(500, T0 + 1_000, nthreads=3)
    space = X.XSpace.FromString(gpu_capture.read_bytes())
    host_before = X.find_plane(space, X.HOST_PLANE)
    old_ids = {ln.id for ln in host_before.lines}
    old_max_md = max(host_before.event_metadata)
    X.add_io_to_space(space, trace, start_ns=T0)
    host = X.columns(X.find_plane(space, X.HOST_PLANE))
    io_lines = [ln for ln in host.lines if ln.name.startswith("I/O ")]
    assert [ln.name for ln in io_lines] == [f"I/O worker-{t} (tid {t})" for t in (4000, 4001, 4002)]
    assert [ln.display_id for ln in io_lines] == [1, 2, 3]
    assert all(ln.id not in old_ids for ln in io_lines)
    assert sum(len(ln) for ln in io_lines) == 500
    ln = io_lines[0]
    rows = trace.take(trace.tid == 4000)
    order = np.argsort(rows.start_ns, kind="stable")
    # the viewer shows the call (display_name); the metadata name is the event kind
    # (call, path, fd), which the record maps back
    assert host.event_display_names(ln).tolist() == [
        o.encode("utf-8", "backslashreplace").decode() for o in rows.op[order].tolist()]
    kinds = schema.event_kinds(X.read_io_info(space))
    assert [kinds[k][:3] for k in host.event_names(ln).tolist()] == list(zip(
        rows.op[order].tolist(), rows.path[order].tolist(), rows.fd[order].tolist()))
    assert len({k[:3] for k in kinds.values()}) == len(kinds)
    np.testing.assert_array_equal(ln.start_ps, (rows.start_ns[order] - T0) * 1000)
    np.testing.assert_array_equal(ln.duration_ps, (rows.end_ns - rows.start_ns)[order] * 1000)
    # stats of the first events: only what applies; path and fd are the kind's (metadata)
    for j in range(20):
        i = int(order[j])
        stats = host.event_stats(ln, j, with_metadata=False)
        kind = kinds[host.event_names(ln)[j]]
        expected = {}   # byte counts only where they differ from the kind's (tb_iotrace.io/2)
        if rows.requested[i] != kind[3]:
            expected["bytes_requested"] = int(rows.requested[i])
        if rows.returned[i] != kind[4]:
            expected["bytes_returned"] = int(rows.returned[i])
        if rows.offset[i] != -1:
            expected["offset"] = int(rows.offset[i])
        if rows.errno[i]:
            expected["errno"] = int(rows.errno[i])
        assert stats == expected
        if rows.path[i]:
            expected["path"] = rows.path[i].encode("utf-8", "backslashreplace").decode()
        if rows.fd[i] != -1:
            expected["fd"] = int(rows.fd[i])
        expected["bytes_requested"] = int(rows.requested[i])
        expected["bytes_returned"] = int(rows.returned[i])
        assert host.event_stats(ln, j) == expected   # with the kind's stats: what viewers list
        name = host.event_names(ln)[j]
        assert name.startswith(rows.op[i].encode("utf-8", "backslashreplace").decode())
        if rows.path[i]:
            assert rows.path[i].encode("utf-8", "backslashreplace").decode() in name
        assert name.endswith(f" (fd {rows.fd[i]})") == (rows.fd[i] != -1)
    # metadata ids we added are above the existing ones
    assert min(map(int, X.read_io_info(space)["added_event_metadata"])) > old_max_md


def test_cap_keeps_first_events():
    trace = make_trace(1000, T0, dropped=3)
    space = X.XSpace()
    space.hostnames.append("h")
    info = X.add_io_to_space(space, trace, start_ns=T0, max_events=100)
    assert info["num_events"] == 100 and info["capped"] == 900 and info["dropped"] == 903
    back = X.read_io_data(space)
    first = np.sort(np.argsort(trace.start_ns, kind="stable")[:100])
    assert_same_rows(trace.take(first), back)
    assert back.dropped == 903
    # a space without a host plane got one
    assert [p.name for p in space.planes] == [X.HOST_PLANE]


def test_empty_trace_and_bytes_paths():
    space = X.XSpace()
    space.hostnames.append("h")
    X.add_io_to_space(space, X.IoTrace.empty(dropped=2, counters=[{"path": "/a", "module": "POSIX",
                                                                    "counters": {}, "fcounters": {}}]),
                      start_ns=T0)
    back = X.read_io_data(space)
    assert len(back) == 0 and back.dropped == 2 and back.counters[0]["path"] == "/a"
    raw_paths = [b"/data/\xff\xfe.bin", b"/ok"]
    trace = X.IoTrace(op=["read", "read"], path=np.array(raw_paths, dtype=object), offset=[0, 0],
                      requested=[1, 1], returned=[1, 1], fd=[3, 3], errno=[0, 0],
                      start_ns=[T0 + 1, T0 + 2], end_ns=[T0 + 3, T0 + 4], tid=[1, 1])
    X.add_io_to_space(space, trace, start_ns=T0)
    back = X.read_io_data(space)
    assert [p.encode("utf-8", "surrogateescape") for p in back.path] == raw_paths


def test_encoding_200k_events_is_fast():
    """The writer's hot path (no per-event protobuf objects; the native encoder where built,
    see test_event_rows.py): 200k events here to keep the suite quick; about 0.2 s for 1M
    on the dev machine with the native module, 1.5-3 s with numpy alone."""
    trace = make_trace(200_000, T0, nthreads=4)
    t = time.perf_counter()
    enc = encode.encode_trace(trace, None, T0, schema.DEFAULT_MAX_EVENTS)
    elapsed = time.perf_counter() - t
    assert enc.num_events == 200_000
    assert elapsed < 3.0, f"encoding 200k events took {elapsed:.2f}s"
    line = X.XPlane.FromString(enc.lines_blob)  # protobuf parses what the encoder wrote
    assert sum(len(ln.events) for ln in line.lines) == 200_000
