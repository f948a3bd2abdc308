"""tb_iotrace.recording.api: enable() applies TBIO_INCLUDE/TBIO_EXCLUDE/TBIO_TRACE_CAP/TBIO_MAX_FILES
once (and refuses bad values, leaving the shim off), registers the frameworks unless told not to;
enable_shim() only patches, with the extra excludes; capture() nests, each block recording only its
own window, and ends its session when the block raises. The framework registrations are replaced
by recorders."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tb_iotrace.recording import api, session, shim_settings
from tb_iotrace.recording.ffi import native

ENV = ("TBIO_INCLUDE", "TBIO_EXCLUDE", "TBIO_TRACE_CAP", "TBIO_MAX_FILES", "TBIO_TENSORFLOW", "TBIO_JAX")


@pytest.fixture()
def calls(shim: Any, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    got: list[str] = []
    for mod, name in ((api.library_checkpoints, "install"), (api.local_traffic, "install"),
                      (api.tensorflow, "attach"), (api.jax, "attach"), (api.local_traffic, "mark_group_sockets")):
        monkeypatch.setattr(mod, name, lambda m=mod.__name__.rsplit(".", 1)[-1], n=name: got.append(f"{m}.{n}"))
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    _, lib = native()
    most = int(lib.tbio_get_max_files())
    yield got
    lib.tbio_set_max_files(most)


def _read(p: Path) -> None:
    fd = os.open(p, os.O_RDONLY)
    os.pread(fd, 10, 0)
    os.close(fd)


def test_enable_applies_the_environment_once(calls: list[str], monkeypatch: pytest.MonkeyPatch,
                                             tmp_path: Path) -> None:
    _, lib = native()
    out, keep = tmp_path / "out", tmp_path / "out" / "keep"
    keep.mkdir(parents=True)
    monkeypatch.setenv("TBIO_EXCLUDE", os.pathsep.join([f"{out}/", "", "/usr/"]))
    monkeypatch.setenv("TBIO_INCLUDE", f"{keep}/")
    monkeypatch.setenv("TBIO_TRACE_CAP", "12")
    monkeypatch.setenv("TBIO_MAX_FILES", "77")
    api.enable()
    assert api.is_enabled() and shim_settings.excludes() == [f"{out}/", "/usr/"]
    assert lib.tbio_get_trace_cap() == 12 and lib.tbio_get_max_files() == 77
    assert calls == ["library_checkpoints.install", "local_traffic.install", "tensorflow.attach", "jax.attach"]
    monkeypatch.setenv("TBIO_TRACE_CAP", "5")
    api.enable()                                            # enabled already: nothing read again
    assert lib.tbio_get_trace_cap() == 12 and len(calls) == 4
    for p in (out / "x.bin", keep / "y.bin"):
        p.write_bytes(b"z" * 20)
    with api.capture() as cap:
        _read(out / "x.bin")
        _read(keep / "y.bin")
    assert cap.file(out / "x.bin") is None and cap.file(keep / "y.bin") is not None


def test_enable_without_settings_keeps_the_defaults_and_skips_frameworks_when_told(
        calls: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    before = shim_settings.excludes()
    monkeypatch.setenv("TBIO_EXCLUDE", "")
    monkeypatch.setenv("TBIO_TENSORFLOW", "0")
    monkeypatch.setenv("TBIO_JAX", "0")
    api.enable()
    assert shim_settings.excludes() == before and calls == ["library_checkpoints.install", "local_traffic.install"]


@pytest.mark.parametrize(("name", "value"), [("TBIO_TRACE_CAP", "abc"), ("TBIO_TRACE_CAP", "-1"),
                                             ("TBIO_MAX_FILES", "0"), ("TBIO_MAX_FILES", "1.5"),
                                             ("TBIO_MAX_FILES", " "), ("TBIO_MAX_FILES", str(2**64))])
def test_a_bad_setting_is_refused_and_leaves_the_shim_off(calls: list[str], monkeypatch: pytest.MonkeyPatch,
                                                          name: str, value: str) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ValueError):
        api.enable()
    assert not api.is_enabled() and calls == []


@pytest.mark.parametrize(("name", "value"), [("TBIO_TRACE_CAP", "abc"), ("TBIO_MAX_FILES", "0")])
def test_a_bad_settings_error_names_it(calls: list[str], monkeypatch: pytest.MonkeyPatch, name: str,
                                       value: str) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match=name):
        api.enable()


def test_enable_shim_only_patches_with_the_extra_excludes(calls: list[str]) -> None:
    before = shim_settings.excludes()
    assert api.enable_shim(["/scratch/own/", ""]) is True
    assert api.is_enabled() and shim_settings.excludes() == [*before, "/scratch/own/"]
    assert calls == ["local_traffic.mark_group_sockets"]
    assert api.enable_shim(["/more/"]) is False                # enabled already: nothing changed
    assert shim_settings.excludes() == [*before, "/scratch/own/"] and len(calls) == 1


def test_nested_captures_each_record_their_own_window(calls: list[str], tmp_path: Path) -> None:
    a, b = tmp_path / "a.bin", tmp_path / "b.bin"
    for p in (a, b):
        p.write_bytes(b"n" * 20)
    assert not api.is_enabled()
    with api.capture() as outer:
        assert api.is_enabled()                                 # capture() enables
        _read(a)
        with api.capture() as inner:
            _read(b)
        _read(a)
    assert outer.file(a).counters["POSIX_READS"] == 2 and outer.file(b).counters["POSIX_READS"] == 1
    assert inner.file(a) is None and inner.file(b).counters["POSIX_READS"] == 1
    assert outer.start_ns <= inner.start_ns <= inner.end_ns <= outer.end_ns


def test_a_capture_whose_block_raises_is_ended_and_filled(calls: list[str], tmp_path: Path) -> None:
    p = tmp_path / "r.bin"
    p.write_bytes(b"r" * 20)
    live = set(session._live)
    with pytest.raises(KeyError):
        with api.capture() as cap:
            _read(p)
            raise KeyError("boom")
    assert cap.closed and cap.file(p).counters["POSIX_OPENS"] == 1 and session._live == live
