"""tb_iotrace.recording.window: ProfileWindow as a framework's profiler drives it.

Proves: collect with a NULL buffer answers the XSpace's size and a buffer of that size gets the
same bytes once (then nothing is left); a too-small buffer gets -1 and the window stays to
collect; stop without start and collect without a window answer 0; forget_uncollected drops
only the last stopped window; a failure in start, stop or collect is -1 and one warning, never
an exception into the framework; a second start does not leak the first native session.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from tb_iotrace.recording import session, window
from tb_iotrace.recording.ffi import native
from tb_iotrace.store.xplane import parse_xspace, read_io_data


def _window_with_io(tmp_path: Path) -> tuple[window.ProfileWindow, Path]:
    import tb_iotrace

    tb_iotrace.enable()                                 # (what the framework's registration did)
    w = window.ProfileWindow("tensorflow")
    p = tmp_path / "data.bin"
    assert w.start() == 0
    p.write_bytes(b"x" * 4096)
    p.read_bytes()
    assert w.stop() == 0
    return w, p


def test_collect_gives_the_size_then_the_bytes_once(shim: Any, tmp_path: Path) -> None:
    ffi, _ = native()
    w, p = _window_with_io(tmp_path)
    assert w.windows == 1 and w.session is None
    size = w.collect(ffi, ffi.NULL, 0)
    assert size > 0
    assert w.collect(ffi, ffi.NULL, 0) == size          # the same payload, made once
    small = ffi.new("char[]", size - 1)
    assert w.collect(ffi, small, size - 1) == -1        # does not fit: kept for a retry
    buf = ffi.new("char[]", size)
    assert w.collect(ffi, buf, size) == size
    space = parse_xspace(bytes(ffi.buffer(buf, size)))
    assert [pl.name for pl in space.planes] == [window.PLANE_NAME]
    trace = read_io_data(space)
    assert trace is not None and str(p) in set(trace.path)
    assert w.collect(ffi, ffi.NULL, 0) == 0             # collected: nothing left to give
    assert w.pending is None and w.payload is None


def test_stop_without_start_and_collect_without_window(shim: Any) -> None:
    ffi, _ = native()
    w = window.ProfileWindow("jax")
    assert w.stop() == 0 and w.windows == 0 and w.pending is None
    assert w.collect(ffi, ffi.NULL, 0) == 0
    assert w.collect(ffi, ffi.new("char[]", 8), 8) == 0


def test_forget_uncollected_drops_only_that_stopped_window(shim: Any, tmp_path: Path) -> None:
    ffi, _ = native()
    w, _ = _window_with_io(tmp_path)
    w.forget_uncollected(w.windows + 1)                 # another window's number: kept
    assert w.pending is not None
    w.forget_uncollected(w.windows)
    assert w.pending is None and w.collect(ffi, ffi.NULL, 0) == 0
    # a window being recorded (started again) is never dropped by an older number
    assert w.start() == 0
    w.forget_uncollected(w.windows)
    assert w.session is not None
    assert w.stop() == 0 and w.collect(ffi, ffi.NULL, 0) > 0


def test_start_drops_the_last_windows_uncollected_payload(shim: Any, tmp_path: Path) -> None:
    ffi, _ = native()
    w, p = _window_with_io(tmp_path)
    assert w.collect(ffi, ffi.NULL, 0) > 0 and w.payload is not None
    assert w.start() == 0                               # a new window: the old one is gone
    assert w.pending is None and w.payload is None
    assert w.stop() == 0
    size = w.collect(ffi, ffi.NULL, 0)
    buf = ffi.new("char[]", size)
    assert w.collect(ffi, buf, size) == size
    trace = read_io_data(parse_xspace(bytes(ffi.buffer(buf, size))))
    assert trace is None or str(p) not in set(trace.path)   # the first window's I/O is not in it


def test_failures_are_minus_one_and_warned_once(shim: Any, monkeypatch: pytest.MonkeyPatch,
                                                caplog: pytest.LogCaptureFixture, tmp_path: Path) -> None:
    ffi, _ = native()

    def boom(*a: Any, **k: Any) -> Any:
        raise RuntimeError("no session")

    w = window.ProfileWindow("tensorflow")
    monkeypatch.setattr(window, "begin_session", boom)
    with caplog.at_level(logging.WARNING, logger="tb_iotrace"):
        assert w.start() == -1 and w.start() == -1
    said = [r.getMessage() for r in caplog.records if "could not start" in r.getMessage()]
    assert len(said) == 1 and "tensorflow" in said[0] and "no session" in said[0]
    monkeypatch.undo()
    w2, _ = _window_with_io(tmp_path)
    monkeypatch.setattr(window, "serialize", boom)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="tb_iotrace"):
        assert w2.collect(ffi, ffi.NULL, 0) == -1 and w2.collect(ffi, ffi.NULL, 0) == -1
    assert sum("could not write the I/O plane" in r.getMessage() for r in caplog.records) == 1
    w3 = window.ProfileWindow("jax")
    assert w3.start() == 0
    monkeypatch.setattr(window, "end_session", boom)
    with caplog.at_level(logging.WARNING, logger="tb_iotrace"):
        assert w3.stop() == -1
    assert any("could not stop" in r.getMessage() for r in caplog.records)
    monkeypatch.undo()
    session.end_session(w3.session, session.Recording())   # (the session this test left open)


def test_a_second_start_does_not_leak_the_first_session(shim: Any) -> None:
    """A framework that starts again without a stop (a profiler session that failed to start
    elsewhere and is started anew) must not leave the first native session recording: the shim
    holds only a few at once, and a leaked one is never ended."""
    w = window.ProfileWindow("tensorflow")
    before = len(session._live)
    assert w.start() == 0
    assert w.start() == 0
    try:
        assert w.stop() == 0
        assert len(session._live) == before, "the first start's session is still live after stop"
    finally:
        for s in list(session._live)[before:]:
            session.end_session(s, session.Recording())
