"""tb_iotrace.model.capture_source: a profile capture as a Source. Proves that a reader given by
use_reader is used once for both the space and the trace, that a corrupt capture is a SourceError,
that a capture without tb_iotrace's record has no analysis input but a reason, the profile window
of a real JAX capture, and that a URL's window origin is not looked for on disk."""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tb_iotrace.model.capture_source import CaptureSource
from tb_iotrace.model.sources import SourceError

DATA = Path(__file__).resolve().parents[1] / "data"


def copy(tmp: Path, name: str) -> CaptureSource:
    shutil.copyfile(DATA / name, tmp / "vm.xplane.pb")
    return CaptureSource(run="r", host="vm", path=str(tmp / "vm.xplane.pb"))


def test_use_reader_reads_once_for_both(tmp_path: Path) -> None:
    calls: list[str] = []
    space, trace = object(), object()

    def read(path: str) -> tuple[Any, Any]:
        calls.append(path)
        return space, trace
    src = CaptureSource(run="r", host="h", path=str(tmp_path / "absent.xplane.pb"))
    src.use_reader(read)
    assert src.io_trace() is trace and src.space() is space and src.analysis_input() == (space, trace)
    assert calls == [str(tmp_path / "absent.xplane.pb")]


def test_a_corrupt_capture_is_a_source_error(tmp_path: Path) -> None:
    (tmp_path / "vm.xplane.pb").write_bytes(b"\x0a\xff\xff\xff\xff\x0f garbage")
    src = CaptureSource(run="r", host="vm", path=str(tmp_path / "vm.xplane.pb"))
    with pytest.raises(SourceError):
        src.space()
    with pytest.raises(SourceError):
        src.io_trace()


def test_a_capture_without_io(tmp_path: Path) -> None:
    src = copy(tmp_path, "jax_plain.xplane.pb")
    assert src.io_trace() is None and src.analysis_input() is None
    reason = src.no_io_reason()
    assert isinstance(reason, str) and reason
    assert src.nevents() == 0 and src.files() == [] and src.dropped() == 0


def test_a_capture_with_io_and_its_window(tmp_path: Path) -> None:
    src = copy(tmp_path, "jax_io.xplane.pb")
    assert src.no_io_reason() is None and src.has_timeline
    b = src.profile_bounds()
    assert b["start_ns"] is not None and b["start_ns"] > 1_600_000_000 * 10**9
    assert b["stop_ns"] is None or b["stop_ns"] >= b["start_ns"]
    assert src.window_origin() is None                             # no origin file beside it
    assert CaptureSource(run="r", host="h", path="s3://b/r/h.xplane.pb").window_origin() is None
