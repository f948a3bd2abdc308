"""Installing the recording into torch (tb_iotrace.recording.pytorch.parent.hooks).

``wrap``: a profile whose ``on_trace_ready`` is not a TraceHandler runs torch's method alone; for
one that is, the window starts before torch's ``start_trace`` and stops after its ``stop_trace``
(even when torch's stop raises), and a capture that fails is noted on the handler, never raised
into the job. ``window_class``: the profiler class only when its module, class and both methods
exist. ``install``: the window methods wrapped once (never twice), the fork handlers and the other
hooks put in once; a torch without the window's names raises and installs nothing; a DataLoader
hook that fails turns only itself off, with a warning naming torch's version. With real CPU
PyTorch, in a process of its own (install cannot be undone): a plain profile is left alone, a
TraceHandler profile's window holds exactly the I/O done inside it, a fork gets its channel; and
a start that torch refuses leaves no window recording."""
from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import types
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tb_iotrace.recording import checkpoint_hooks, library_checkpoints
from tb_iotrace.recording.pytorch import state
from tb_iotrace.recording.pytorch.parent import channels, hooks
from tb_iotrace.recording.pytorch.parent import loaders as torch_loaders
from tb_iotrace.recording.pytorch.parent.handler import TraceHandler
from tb_iotrace.recording.pytorch.worker import startup

ROOT = Path(__file__).resolve().parents[2]
MODULE = "tbio_test_fake_profiler"


class Profile:
    """What the wrappers read of a torch profile: its ``on_trace_ready``."""

    def __init__(self, on_trace_ready: Any = None) -> None:
        self.on_trace_ready = on_trace_ready


@pytest.fixture()
def actions(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """start_window/stop_window played: the handler each was called with, in order."""
    got: list[Any] = []
    monkeypatch.setattr(hooks, "start_window", lambda h: got.append(("start_window", h)))
    monkeypatch.setattr(hooks, "stop_window", lambda h: got.append(("stop_window", h)))
    return got


def torch_method(calls: list[Any], name: str, result: Any = None, raises: Exception | None = None) -> Any:
    def real(self: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append((name, args, kwargs))
        if raises is not None:
            raise raises
        return result
    return real


def test_a_profile_without_a_trace_handler_runs_torchs_method_alone(actions: list[Any], tmp_path: Path) -> None:
    for action in (hooks.start_window, hooks.stop_window):
        calls: list[Any] = []
        real = torch_method(calls, "real", result="torch's")
        wrapper = hooks.wrap(real, action)
        assert wrapper.__wrapped__ is real and wrapper.__tbio_wrapper__ is True
        for prof in (Profile(None), Profile(lambda p: None), object()):     # object(): no on_trace_ready at all
            assert wrapper(prof, 1, k=2) == "torch's"
        assert calls == [("real", (1,), {"k": 2})] * 3
    assert actions == []


def test_the_window_starts_before_torch_starts_and_stops_after_torch_stops(actions: list[Any],
                                                                          tmp_path: Path) -> None:
    handler = TraceHandler(str(tmp_path))
    calls: list[Any] = actions
    start = hooks.wrap(torch_method(calls, "torch start", result=1), hooks.start_window)
    stop = hooks.wrap(torch_method(calls, "torch stop", result=2), hooks.stop_window)
    prof = Profile(handler)
    assert start(prof) == 1 and stop(prof) == 2
    assert calls == [("start_window", handler), ("torch start", (), {}), ("torch stop", (), {}),
                     ("stop_window", handler)]
    assert handler.notes == []


def test_a_capture_that_fails_is_noted_never_raised(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def start_fails(h: Any) -> None:
        raise OSError("no session")

    def stop_fails(h: Any) -> None:
        raise OSError("session gone")
    monkeypatch.setattr(hooks, "start_window", start_fails)
    monkeypatch.setattr(hooks, "stop_window", stop_fails)
    calls: list[Any] = []
    handler = TraceHandler(str(tmp_path))
    prof = Profile(handler)
    assert hooks.wrap(torch_method(calls, "torch start", result="s"), hooks.start_window)(prof) == "s"
    assert hooks.wrap(torch_method(calls, "torch stop", result="e"), hooks.stop_window)(prof) == "e"
    assert [c[0] for c in calls] == ["torch start", "torch stop"]       # torch's own ran all the same
    assert handler.notes == ["I/O capture not started: no session", "I/O capture not stopped cleanly: session gone"]


def test_a_stop_torch_refuses_still_stops_the_window_and_raises(actions: list[Any], tmp_path: Path) -> None:
    handler = TraceHandler(str(tmp_path))
    stop = hooks.wrap(torch_method(actions, "torch stop", raises=RuntimeError("kineto")), hooks.stop_window)
    with pytest.raises(RuntimeError, match="kineto"):
        stop(Profile(handler))
    assert actions == [("torch stop", (), {}), ("stop_window", handler)]


def fake_profiler(monkeypatch: pytest.MonkeyPatch, methods: tuple[str, str] = ("start_trace", "stop_trace"),
                  cls_name: str = "Kineto") -> type:
    """A module ``MODULE`` with a class of torch's window methods, named by ``state.WINDOW_HOOK``."""
    calls: list[Any] = []

    class Kineto:
        log = calls
        start_trace = torch_method(calls, "torch start")
        stop_trace = torch_method(calls, "torch stop")

        def __init__(self, on_trace_ready: Any = None) -> None:
            self.on_trace_ready = on_trace_ready

    mod = types.ModuleType(MODULE)
    setattr(mod, cls_name, Kineto)
    monkeypatch.setitem(sys.modules, MODULE, mod)
    monkeypatch.setattr(state, "WINDOW_HOOK", (MODULE, "Kineto", methods))
    return Kineto


def test_window_class_needs_the_module_the_class_and_both_methods(monkeypatch: pytest.MonkeyPatch) -> None:
    cls = fake_profiler(monkeypatch)
    assert hooks.window_class() is cls
    monkeypatch.setattr(state, "WINDOW_HOOK", ("tbio_no_such_module_here", "Kineto", ("start_trace", "stop_trace")))
    assert hooks.window_class() is None
    monkeypatch.setattr(state, "WINDOW_HOOK", (MODULE, "Gone", ("start_trace", "stop_trace")))
    assert hooks.window_class() is None
    monkeypatch.setattr(state, "WINDOW_HOOK", (MODULE, "Kineto", ("start_trace", "_stop_gone")))
    assert hooks.window_class() is None
    monkeypatch.setattr(cls, "stop_trace", 3)                # there, but not a method
    monkeypatch.setattr(state, "WINDOW_HOOK", (MODULE, "Kineto", ("start_trace", "stop_trace")))
    assert hooks.window_class() is None


@pytest.mark.torch
def test_window_class_of_this_torch_is_kineto_profile() -> None:
    pytest.importorskip("torch")
    from torch.profiler.profiler import _KinetoProfile

    assert hooks.window_class() is _KinetoProfile


class Installs(Counter[str]):
    """How many times each hook was put in; ``forks``: the fork handlers registered."""

    def __init__(self) -> None:
        super().__init__()
        self.forks: list[dict[str, Any]] = []


@pytest.fixture()
def installs(monkeypatch: pytest.MonkeyPatch, actions: list[Any]) -> Installs:
    """Not installed yet; every hook install() puts in played, counted (the fork handlers'
    registration kept under ``fork``); torch is version 9.8.7 here."""
    n = Installs()
    forks = n.forks
    monkeypatch.setattr(state, "installed", False)
    monkeypatch.setattr(state, "off", [])
    monkeypatch.setattr(torch_loaders, "_off", [])

    def count(name: str) -> Any:
        return lambda: n.update([name])
    monkeypatch.setattr(os, "register_at_fork", lambda **kw: (n.update(["fork"]), forks.append(kw)))
    monkeypatch.setattr(checkpoint_hooks, "install", count("checkpoints"))
    monkeypatch.setattr(library_checkpoints, "install", count("library checkpoints"))
    monkeypatch.setattr(torch_loaders, "install", count("loaders"))
    monkeypatch.setattr(hooks, "install_worker_entry", count("worker entry"))
    monkeypatch.setattr(hooks, "note_fetch_spans", count("fetch spans"))
    fake = types.ModuleType("torch")
    fake.__version__ = "9.8.7"  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch", fake)
    return n


def test_install_wraps_the_window_once_and_puts_each_hook_in_once(
        monkeypatch: pytest.MonkeyPatch, installs: Installs, actions: list[Any], tmp_path: Path) -> None:
    cls = fake_profiler(monkeypatch)
    real_start, real_stop = cls.start_trace, cls.stop_trace
    hooks.install()
    assert hooks.installed() and state.off == []
    assert dict(installs) == {"fork": 1, "checkpoints": 1, "library checkpoints": 1, "loaders": 1,
                              "worker entry": 1, "fetch spans": 1}
    assert installs.forks == [{"before": channels.before_fork,
                               "after_in_parent": channels.after_fork_in_parent,
                               "after_in_child": startup.after_fork_in_child}]
    start, stop = cls.start_trace, cls.stop_trace
    assert start.__wrapped__ is real_start and stop.__wrapped__ is real_stop
    handler = TraceHandler(str(tmp_path))
    prof = cls(handler)
    prof.start_trace()
    prof.stop_trace()
    assert actions == [("start_window", handler), ("stop_window", handler)]   # start to start, stop to stop
    assert [c[0] for c in cls.log] == ["torch start", "torch stop"]

    hooks.install()                          # again: nothing more
    assert cls.start_trace is start and cls.stop_trace is stop
    assert sum(installs.values()) == 6


def test_methods_wrapped_already_are_not_wrapped_again(
        monkeypatch: pytest.MonkeyPatch, installs: Installs, actions: list[Any], tmp_path: Path) -> None:
    """A class whose methods carry the wrappers (installed, then the flag lost): each window is
    started and stopped once, not once per wrapper."""
    cls = fake_profiler(monkeypatch)
    cls.start_trace = hooks.wrap(cls.start_trace, hooks.start_window)
    cls.stop_trace = hooks.wrap(cls.stop_trace, hooks.stop_window)
    start, stop = cls.start_trace, cls.stop_trace
    hooks.install()
    assert cls.start_trace is start and cls.stop_trace is stop and hooks.installed()
    handler = TraceHandler(str(tmp_path))
    prof = cls(handler)
    prof.start_trace()
    prof.stop_trace()
    assert [a[0] for a in actions] == ["start_window", "stop_window"]


def test_a_torch_without_the_window_names_raises_and_installs_nothing(
        monkeypatch: pytest.MonkeyPatch, installs: Installs) -> None:
    cls = fake_profiler(monkeypatch, methods=("start_trace", "_stop_gone"))
    start = cls.start_trace
    with pytest.raises(RuntimeError) as err:
        hooks.install()
    assert str(err.value) == (f"torch 9.8.7: the profiler window hook is off ({MODULE}.Kineto.start_trace / "
                              f"{MODULE}.Kineto._stop_gone is missing in this torch), so no I/O is recorded")
    assert not hooks.installed() and sum(installs.values()) == 0 and cls.start_trace is start
    monkeypatch.setattr(state, "WINDOW_HOOK", (MODULE, "Kineto", ("start_trace", "stop_trace")))
    hooks.install()                          # a later install, with the names there, goes through
    assert hooks.installed() and installs["fork"] == 1 and cls.start_trace.__wrapped__ is start


def test_a_dataloader_hook_that_fails_turns_only_itself_off(
        monkeypatch: pytest.MonkeyPatch, installs: Installs, caplog: pytest.LogCaptureFixture) -> None:
    cls = fake_profiler(monkeypatch)

    def fails(what: str) -> Any:
        def install() -> None:
            installs.update([what])
            raise OSError(f"no {what}")
        return install
    monkeypatch.setattr(torch_loaders, "install", fails("loaders"))
    monkeypatch.setattr(hooks, "install_worker_entry", fails("worker entry"))
    with caplog.at_level(logging.WARNING, logger="tb_iotrace"):
        hooks.install()
    assert hooks.installed() and getattr(cls.start_trace, "__tbio_wrapper__", False)
    assert installs["fetch spans"] == 1 and installs["fork"] == 1
    off = ["the DataLoader settings hook is off (no loaders)",
           "the spawn/forkserver worker hook is off (no worker entry): DataLoader workers started with spawn "
           "or forkserver carry no I/O"]
    assert state.off == off
    assert [r.getMessage() for r in caplog.records] == [f"tb_iotrace: torch 9.8.7: {why}" for why in off]


# both jobs: the shim on, ``read(name, size)`` writes then reads a file of theirs in 1000-byte reads
PRELUDE = r"""
import json, os, sys
import tb_iotrace
tb_iotrace.enable()

def read(name, size):
    path = os.path.join(sys.argv[1], name)
    with open(path, "wb") as fh:
        fh.write(b"x" * size)
    with open(path, "rb", buffering=0) as fh:
        while fh.read(1000):
            pass
"""

INSTALLED = PRELUDE + r"""
import torch
from torch.profiler import ProfilerActivity, profile
from torch.profiler.profiler import _KinetoProfile
from tb_iotrace.recording.pytorch import state
from tb_iotrace.recording.pytorch.parent import hooks
from tb_iotrace.recording.pytorch.parent.handler import TraceHandler

work = sys.argv[1]
out = {}
real = (_KinetoProfile.start_trace, _KinetoProfile.stop_trace)
hooks.install()
hooks.install()
out["wrapped_once"] = [getattr(m, "__wrapped__", None) is r for m, r in
                       zip((_KinetoProfile.start_trace, _KinetoProfile.stop_trace), real)]


ready = []
with profile(activities=[ProfilerActivity.CPU], on_trace_ready=lambda p: ready.append(1)):
    out["plain_inside"] = state.window
    torch.ones(3).sum()
out["plain"] = [len(ready), state.window_counter]

read("before.bin", 3000)
handler = TraceHandler(os.path.join(work, "log"))
with profile(activities=[ProfilerActivity.CPU], on_trace_ready=handler):
    out["inside"] = [state.window, handler.spool(), state.session is not None]
    read("inside.bin", 7000)
    torch.ones(3).sum()
out["after"] = [state.window, state.session is None, handler.written]

n = len(state.channels)
pid = os.fork()
if pid == 0:
    os._exit(0)
os.waitpid(pid, 0)
out["fork_channels"] = len(state.channels) - n
print(json.dumps(out))
"""


def run(script: str, work: Path) -> dict[str, Any]:
    r = subprocess.run([sys.executable, "-c", script, str(work)], capture_output=True, text=True, timeout=240,
                       cwd=work, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr[-4000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def bytes_read(trace_path: str, work: Path) -> dict[str, int]:
    from tb_iotrace.store.kineto import io_record, read_trace

    rec = io_record(read_trace(trace_path))
    assert rec is not None
    got: dict[str, int] = {}
    for proc in rec["processes"]:
        for c in proc["counters"]:
            if c["path"].startswith(str(work)) and c["path"].endswith(".bin"):
                got[Path(c["path"]).name] = got.get(Path(c["path"]).name, 0) + c["counters"]["POSIX_BYTES_READ"]
    return got


@pytest.mark.torch
def test_install_in_torch_leaves_plain_profiles_alone_and_records_a_handlers_window(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    out = run(INSTALLED, tmp_path)
    assert out["wrapped_once"] == [True, True]              # twice installed, wrapped once
    assert out["plain_inside"] is None and out["plain"] == [1, 0]   # its own handler ran; no window taken
    window, spool, recording = out["inside"]
    assert window == [1, spool] and recording
    assert out["after"][:2] == [None, True] and len(out["after"][2]) == 1
    # the window holds the file read inside it, every byte, and not the one read before it
    assert bytes_read(out["after"][2][0], tmp_path) == {"inside.bin": 7000}
    assert out["fork_channels"] == 1                        # one fork, one channel to its child


REFUSED = PRELUDE + r"""
import torch
from torch.profiler import ProfilerActivity, profile
from tb_iotrace.recording.pytorch import state
from tb_iotrace.recording.pytorch.parent import hooks
from tb_iotrace.recording.pytorch.parent.handler import TraceHandler

work = sys.argv[1]
out = {}
hooks.install()


refused = profile(activities=[ProfilerActivity.CPU], on_trace_ready=TraceHandler(os.path.join(work, "refused")))
try:
    refused.start_trace()          # torch refuses: the profile was never prepared
    out["refused"] = None
except Exception as exc:
    out["refused"] = type(exc).__name__
out["left"] = [state.window, state.session is not None]
read("between.bin", 5000)          # no profile window is open here
handler = TraceHandler(os.path.join(work, "log"))
with profile(activities=[ProfilerActivity.CPU], on_trace_ready=handler):
    read("inside.bin", 7000)
    torch.ones(3).sum()
out["written"] = handler.written
print(json.dumps(out))
"""


@pytest.mark.torch
def test_a_start_torch_refuses_leaves_no_window_recording(tmp_path: Path) -> None:
    """torch refuses ``start_trace`` (here: a profile never prepared) after the wrapper began the
    window: the error reaches the caller, and no window may go on recording: the next profile's
    window holds what it read, not what was read between the two."""
    pytest.importorskip("torch")
    out = run(REFUSED, tmp_path)
    assert out["refused"] == "AssertionError"
    assert len(out["written"]) == 1
    # [state.window, a native session recording] right after the refusal; the next window's reads
    got = (out["left"], bytes_read(out["written"][0], tmp_path))
    assert got == ([None, False], {"inside.bin": 7000}), f"after torch refused to start: {got}"
