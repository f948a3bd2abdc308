"""tb_iotrace.store.xplane.read_xspace: loading a capture (the GPU capture of tests/data checked
against TensorFlow's own module), stats, the profile clock, and every way a file can be bad
(helpers: test_xplane; the TF CPU capture: conftest)."""
from __future__ import annotations

import time

import numpy as np
import pytest

from tb_iotrace.store import xplane as X

from test_xplane import tf_xplane  # noqa: F401  (fixture)


@pytest.mark.tf
def test_gpu_capture_facts(gpu_capture, tf_xplane):
    t = time.perf_counter()
    space = X.load_xspace(gpu_capture)
    load_s = time.perf_counter() - t
    assert list(space.hostnames) == ["34.83.195.179:6003"]
    assert X.profile_start_ns(space) is None  # no Task Environment plane
    host = X.find_planes(space, "/host:CPU")
    gpus = X.find_planes(space, "/device:GPU:")
    assert len(host) == 1 and len(gpus) == 8
    assert [p.name for p in gpus] == [f"/device:GPU:{i}" for i in range(8)]

    t = time.perf_counter()
    views = [X.columns(p) for p in space.planes]
    counts = {v.name: sum(len(ln) for ln in v.lines) for v in views}
    columns_s = time.perf_counter() - t
    assert load_s + columns_s < 2.0

    hv = views[0]
    assert hv.num_lines == 22
    assert counts["/host:CPU"] == 15354
    assert {k: v for k, v in counts.items() if k.startswith("/device:GPU:") and v} == {
        "/device:GPU:1": 19, "/device:GPU:4": 3875, "/device:GPU:6": 3880}
    assert sum(counts.values()) == 23128
    names = [ln.name for ln in hv.lines]
    assert "python3" in names and sum(n.startswith("tf_Compute/") for n in names) == 4
    gpu4 = views[5]
    assert [ln.name for ln in gpu4.lines] == [
        "Stream #63(MemcpyH2D)", "Stream #135(MemcpyH2D)", "Stream #134(Compute)",
        "Stream #136(MemcpyD2H)", "TensorFlow Ops", "TensorFlow Name Scope", "Steps"]

    # Second opinion: TensorFlow's generated module, event by event.
    ref = tf_xplane.XSpace.FromString(gpu_capture.read_bytes())
    for view, plane in zip(views, ref.planes):
        assert view.name == plane.name
        for lc, line in zip(view.lines, plane.lines):
            assert (lc.id, lc.name, lc.timestamp_ns) == (line.id, line.name, line.timestamp_ns)
            np.testing.assert_array_equal(lc.metadata_id, [e.metadata_id for e in line.events])
            np.testing.assert_array_equal(lc.start_ps, [line.timestamp_ns * 1000 + e.offset_ps for e in line.events])
            np.testing.assert_array_equal(lc.duration_ps, [e.duration_ps for e in line.events])
            np.testing.assert_array_equal(view.event_names(lc),
                                          [plane.event_metadata[e.metadata_id].name for e in line.events])


def test_stats_decoding(gpu_capture):
    space = X.load_xspace(gpu_capture)
    hv = X.columns(space.planes[0])
    line = hv.line_by_name("python3")
    assert hv.event_names(line)[0] == "MemoryAllocation"
    stats = hv.event_stats(line, 0)
    assert stats["allocator_name"] == "gpu_host_bfc"  # a ref_value (interned string)
    assert stats["bytes_allocated"] == 579328
    assert isinstance(stats["tf_op"], str)
    g4 = X.columns(space.planes[5])
    ev_stats = g4.event_stats(g4.line(0), 0)
    assert ev_stats["memcpy_details"] == "size:112 dest:4 async:0"  # a str_value
    assert g4.plane_stats()  # device capabilities
    # ref/str/int/uint/double/bytes, on a hand-made plane
    plane = X.XPlane(name="p")
    for k, name in enumerate(["s", "i", "u", "d", "b", "r", "interned"], start=1):
        plane.stat_metadata[k].id = k
        plane.stat_metadata[k].name = name
    ev = X.XEvent(metadata_id=1)
    ev.stats.add(metadata_id=1, str_value="x")
    ev.stats.add(metadata_id=2, int64_value=-3)
    ev.stats.add(metadata_id=3, uint64_value=(1 << 64) - 1)
    ev.stats.add(metadata_id=4, double_value=0.5)
    ev.stats.add(metadata_id=5, bytes_value=b"\x00\xff")
    ev.stats.add(metadata_id=6, ref_value=7)
    assert X.stats_dict(ev.stats, plane) == {"s": "x", "i": -3, "u": (1 << 64) - 1, "d": 0.5,
                                             "b": b"\x00\xff", "r": "interned"}


@pytest.mark.tf
def test_clock_helpers(cpu_capture):
    path, trace = cpu_capture
    space = X.load_xspace(path)
    start, stop = X.profile_start_ns(space), X.profile_stop_ns(space)
    assert start is not None and stop is not None and start <= stop
    assert start <= int(trace.start_ns[0]) <= int(trace.end_ns[-1]) <= stop
    assert X.absolute_ns(1_500, start) == start + 1
    np.testing.assert_array_equal(X.absolute_ns(np.array([0, 2_000]), start), [start, start + 2])
    assert X.relative_ps(start + 5, start) == 5_000
    # Host events lie inside [start, stop] once made absolute.
    hv = X.columns(X.find_plane(space, X.HOST_PLANE))
    starts = np.concatenate([ln.start_ps for ln in hv.lines])
    assert start <= X.absolute_ns(starts, start).min() and X.absolute_ns(starts, start).max() <= stop


@pytest.mark.parametrize("case", ["missing", "empty", "truncated", "corrupt", "directory", "not_xspace"])
def test_bad_files_raise_xplane_error(gpu_capture, tmp_path, case):
    raw = gpu_capture.read_bytes()
    path = tmp_path / "h.xplane.pb"
    if case == "empty":
        path.write_bytes(b"")
    elif case == "truncated":
        path.write_bytes(raw[: len(raw) // 2])
    elif case == "corrupt":
        path.write_bytes(b"this is not a protobuf " * 10)
    elif case == "directory":
        path.mkdir()
    elif case == "not_xspace":
        path.write_bytes(b"\x28\x01")  # a valid message with only an unknown field
    with pytest.raises(X.XPlaneError) as info:
        X.load_xspace(path)
    err = info.value
    assert err.path == str(path) and str(path) in str(err)
    expected = {"missing": "no such file", "empty": "empty", "truncated": "truncated or corrupt",
                "corrupt": "truncated or corrupt", "directory": "directory",
                "not_xspace": "not an XSpace"}[case]
    assert expected in err.reason


def test_truncation_anywhere_is_reported(gpu_capture):
    raw = gpu_capture.read_bytes()
    rng = np.random.default_rng(7)
    for cut in [1, 2, 3, 100, len(raw) - 1] + rng.integers(1, len(raw) - 1, 60).tolist():
        with pytest.raises(X.XPlaneError):
            X.parse_xspace(raw[:cut], "cut")
