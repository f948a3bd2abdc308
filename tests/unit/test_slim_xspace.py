"""tb_iotrace.analysis.slim_xspace: the column-wise read of a real capture gives the same I/O
trace and record facts as the protobuf reader (JAX capture), keeps the host plane's non-I/O
lines exactly and of the device planes only the Steps and host-to-device copy lines (real GPU
capture), and a capture that is unreadable, or changed between its decode and the re-read of
its host events (truncated, or rewritten in place), is an XPlaneError, never a wrong answer or
another exception."""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tb_iotrace.model.columnar as columnar
from tb_iotrace.analysis.slim_xspace import read_slim_xspace
from tb_iotrace.store.xplane import HOST_PLANE, LINE_PREFIX, XPlaneError, find_plane, load_xspace, read_io_data

COLS = ("op", "path", "offset", "requested", "returned", "fd", "errno", "start_ns", "end_ns", "tid")


def test_a_jax_capture_reads_as_the_protobuf_reader_reads_it(jax_captures: tuple[Path, Path]) -> None:
    path = jax_captures[0]
    full = load_xspace(str(path))
    want = read_io_data(full)
    slim, got = read_slim_xspace(path)
    assert got is not None and want is not None and len(got) == len(want) > 0
    for c in COLS:
        assert np.array_equal(getattr(got, c), getattr(want, c)), c
    assert (got.threads, got.dropped, got.counters, got.mounts, got.machine, got.checkpoint_calls) == \
        (want.threads, want.dropped, want.counters, want.mounts, want.machine, want.checkpoint_calls)
    host, full_host = find_plane(slim, HOST_PLANE), find_plane(full, HOST_PLANE)
    kept = [ln for ln in full_host.lines if not ln.name.startswith(LINE_PREFIX)]
    assert [ln.name for ln in host.lines] == [ln.name for ln in kept]
    assert all(a == b for a, b in zip(host.lines, kept))
    assert [p.name for p in slim.planes] == [p.name for p in full.planes]
    assert list(slim.hostnames) == list(full.hostnames)


def test_a_plain_jax_capture_has_no_trace(jax_captures: tuple[Path, Path]) -> None:
    assert read_slim_xspace(jax_captures[1])[1] is None


def test_device_planes_keep_only_steps_and_host_to_device_copies(gpu_capture: Path) -> None:
    full = load_xspace(str(gpu_capture))
    slim, trace = read_slim_xspace(gpu_capture)
    assert trace is None and list(slim.hostnames) == ["34.83.195.179:6003"]
    for fp, sp in zip(full.planes, slim.planes):
        assert fp.name == sp.name and len(fp.stats) == len(sp.stats)
        if fp.name.startswith("/device:"):
            want = [ln for ln in fp.lines if ln.name == "Steps" or "MemcpyH2D" in ln.name]
            assert [ln.name for ln in sp.lines] == [ln.name for ln in want]
            assert all(a == b for a, b in zip(sp.lines, want))
    gpu4 = find_plane(slim, "/device:GPU:4")
    assert "Steps" in [ln.name for ln in gpu4.lines] and len(gpu4.lines) < len(find_plane(full, "/device:GPU:4").lines)
    assert find_plane(slim, HOST_PLANE).lines == find_plane(full, HOST_PLANE).lines


def _changed_after_decode(monkeypatch: pytest.MonkeyPatch, change: Any) -> None:
    real = columnar.decode_xspace

    def decode(path: Any, **kw: Any) -> Any:
        sd = real(path, **kw)
        change(os.fspath(path))
        return sd

    monkeypatch.setattr(columnar, "decode_xspace", decode)


@pytest.mark.parametrize("size", [0, 1000])
def test_a_capture_truncated_meanwhile_is_an_xplane_error(tmp_path: Path, jax_captures: tuple[Path, Path],
                                                        monkeypatch: pytest.MonkeyPatch, size: int) -> None:
    p = tmp_path / "h.xplane.pb"
    shutil.copy(jax_captures[0], p)
    _changed_after_decode(monkeypatch, lambda path: os.truncate(path, size))
    with pytest.raises(XPlaneError, match="the file changed while it was read"):
        read_slim_xspace(p)


def test_a_capture_rewritten_in_place_meanwhile_is_an_xplane_error(tmp_path: Path, jax_captures: tuple[Path, Path],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    p = tmp_path / "h.xplane.pb"
    shutil.copy(jax_captures[0], p)
    _changed_after_decode(monkeypatch, lambda path: Path(path).write_bytes(b"\x00" * os.path.getsize(path)))
    with pytest.raises(XPlaneError, match="the file may have changed"):
        read_slim_xspace(p)


def test_unreadable_files_are_xplane_errors(tmp_path: Path) -> None:
    with pytest.raises(XPlaneError, match="no such file"):
        read_slim_xspace(tmp_path / "missing.xplane.pb")
    (tmp_path / "empty.xplane.pb").write_bytes(b"")
    with pytest.raises(XPlaneError, match="empty"):
        read_slim_xspace(tmp_path / "empty.xplane.pb")
    (tmp_path / "junk.xplane.pb").write_bytes(b"\xff" * 64)
    with pytest.raises(XPlaneError):
        read_slim_xspace(tmp_path / "junk.xplane.pb")
