"""tb_iotrace.torch, the PyTorch facade: what it exports, that importing it imports neither
torch nor the shim, that ``trace_handler`` passes its arguments to the handler, enables
tb_iotrace and hooks the profiler in that order, and when either fails still returns a handler
that says why (no exception into the training); and that its waits must be usable seconds.
tb_iotrace is never enabled here: ``enable`` and ``install`` are stand-ins."""
from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import tb_iotrace.torch as facade
from tb_iotrace.recording import pytorch as torch_capture
from tb_iotrace.recording.pytorch.parent.handler import TraceHandler


@pytest.fixture()
def calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    got: list[str] = []
    monkeypatch.setattr(facade.api, "enable", lambda: got.append("enable"))
    monkeypatch.setattr(facade.torch_capture, "install", lambda: got.append("install"))
    return got


def test_exports() -> None:
    assert facade.__all__ == ["TraceHandler", "trace_handler"]
    assert facade.TraceHandler is TraceHandler is torch_capture.TraceHandler
    assert facade.trace_handler.__kwdefaults__ == {"start_wait_s": torch_capture.START_WAIT_S,
                                                   "wait_s": torch_capture.WAIT_S}


def test_import_loads_neither_torch_nor_the_shim() -> None:
    code = ("import sys, tb_iotrace.torch; "
            "print([m for m in ('torch', 'tensorflow', 'tb_iotrace._native') if m in sys.modules])")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "[]", r.stderr


def test_arguments_reach_the_handler(calls: list[str], tmp_path: Path) -> None:
    h = facade.trace_handler(str(tmp_path), "rank0", True, start_wait_s=1.5, wait_s=2.5)
    assert isinstance(h, TraceHandler)
    assert (h.dir_name, h.worker_name, h.use_gzip, h.start_wait_s, h.wait_s) == (str(tmp_path), "rank0", True, 1.5, 2.5)
    assert h.url is None and h.unavailable is None and h.written == []
    assert calls == ["enable", "install"]
    assert facade.trace_handler(f"file://{tmp_path}").dir_name == str(tmp_path)
    with pytest.raises(TypeError):
        facade.trace_handler(str(tmp_path), None, False, 1.0)  # the waits are keyword-only


@pytest.mark.parametrize("failing", ["enable", "install"])
def test_a_failure_to_enable_is_said_not_raised(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
                                                tmp_path: Path, failing: str) -> None:
    done: list[str] = []

    def step(name: str) -> Any:
        def run() -> None:
            if name == failing:
                raise OSError(f"{name} broke")
            done.append(name)
        return run

    monkeypatch.setattr(facade.api, "enable", step("enable"))
    monkeypatch.setattr(facade.torch_capture, "install", step("install"))
    with caplog.at_level("WARNING", logger="tb_iotrace"):
        h = facade.trace_handler(str(tmp_path))
    assert h.unavailable == f"I/O capture unavailable: {failing} broke"
    assert done == ([] if failing == "enable" else ["enable"])
    assert "the trace is written without I/O" in caplog.text and f"{failing} broke" in caplog.text


@pytest.mark.parametrize("key", ["wait_s", "start_wait_s"])
@pytest.mark.parametrize("value", [math.nan, math.inf, -1.0])
def test_waits_must_be_finite_non_negative_seconds(calls: list[str], tmp_path: Path, key: str, value: float) -> None:
    """A wait of nan or inf seconds is accepted now and breaks the window's end later
    (``int(timeout * 1000)`` in protocol.await_answers); a negative one waits for no worker.
    It should be refused here, naming the argument (as tb_iotrace.base.seconds does)."""
    with pytest.raises(ValueError, match=key):
        facade.trace_handler(str(tmp_path), **{key: value})
