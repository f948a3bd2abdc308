"""``tb-iotrace run --profile-every`` in a PyTorch job (tb_iotrace.recording.pytorch.parent.auto_window).

A window's folder is named by its start in UTC (to the second), the pid and its number; who took it
(``window_origin``) names this process. Each window gets a TraceHandler of its own, numbered in
turn, into ``<logdir>/pytorch``, saying what its steps are and who took it with which period; the
paths the windows write (handlers' spools and control folders, the ``pytorch`` folder) are the
recording's own. A window is open when asked for (not once the job runs its own profiler) or
running; at exit only the main thread stops it, and a failure to write it is said, not raised.
Arming waits for torch's import, never arms in a spawned worker, and a failure is said and
disarms. With real CPU PyTorch in a process of its own: armed when torch's import finishes, a
window asked for and stopped by close() on the main thread, or still open when the job exits, is
written into its folder with one ``ProfilerStep`` per optimizer step, and the step hooks are gone
after."""
from __future__ import annotations

import calendar
import json
import multiprocessing.process
import os
import subprocess
import sys
import tempfile
import threading
import time
import types
from pathlib import Path
from typing import Any

import pytest

from tb_iotrace.recording.pytorch.parent import auto_window
from tb_iotrace.recording.pytorch.parent.auto_window import TorchWindows, own_paths, session_name, window_origin
from tb_iotrace.recording.pytorch.parent.handler import TraceHandler
from tb_iotrace.recording.pytorch.parent.step_windows import LOADER, OPTIMIZER, steps_note

ROOT = Path(__file__).resolve().parents[2]
AT = calendar.timegm((2026, 11, 24, 12, 22, 55, 0, 0, 0)) * 10**9    # 2026-11-24 12:22:55 UTC


def test_session_name_is_the_utc_second_the_pid_and_the_number() -> None:
    old = os.environ.get("TZ")
    os.environ["TZ"] = "Asia/Tokyo"          # UTC+9: a local-time name would read 21:22:55
    time.tzset()
    try:
        assert session_name(AT, 7, 1) == "2026_11_24_12_22_55_7_1"
        assert session_name(AT + 500_000_000, 7, 1) == "2026_11_24_12_22_55_7_1"   # to the second, not rounded
        assert session_name(AT + 1_000_000_000, 31337, 12) == "2026_11_24_12_22_56_31337_12"
        assert session_name(AT, 9, 1, prefix="attach_") == "attach_2026_11_24_12_22_55_9_1"
    finally:
        if old is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = old
        time.tzset()


def test_window_origin_names_this_process() -> None:
    assert window_origin("tb-iotrace attach", AT, for_s=2.0) == {
        "by": "tb-iotrace attach", "at_ns": AT, "pid": os.getpid(), "for_s": 2.0}
    got = window_origin("x", 1.5e9)                           # a float start: an int of ns in the record
    assert got == {"by": "x", "at_ns": 1_500_000_000, "pid": os.getpid()} and type(got["at_ns"]) is int


def test_each_window_gets_a_handler_of_its_own(tmp_path: Path) -> None:
    tw = TorchWindows(str(tmp_path), 60.0, 2.5)
    assert tw.steps.make_handler == tw._handler and tw.n == 0
    before = time.time_ns()
    h1 = tw._handler(LOADER)
    h2 = tw._handler(OPTIMIZER)
    after = time.time_ns()
    assert tw.handlers == [h1, h2] and tw.n == 2
    for n, (h, source) in enumerate([(h1, LOADER), (h2, OPTIMIZER)], start=1):
        assert isinstance(h, TraceHandler)
        origin = h.extra["window_origin"]
        assert origin == {"by": "tb-iotrace run --profile-every", "at_ns": origin["at_ns"], "pid": os.getpid(),
                          "every_s": 60.0, "for_s": 2.5}
        assert before <= origin["at_ns"] <= after
        # its folder is named by the same start as its origin, and numbered in turn
        assert h.dir_name == str(tmp_path / "pytorch" / session_name(origin["at_ns"], os.getpid(), n))
        assert h.extra["steps_from"] == source and h.extra["steps_note"] == steps_note(source)
    assert h1.dir_name != h2.dir_name


def test_what_the_windows_write_is_their_own(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    monkeypatch.chdir(tmp_path)
    spool_prefix, folder = own_paths("logs/")                 # relative: made absolute
    assert folder == str(tmp_path / "logs" / "pytorch") + os.sep
    tw = TorchWindows("logs", 60.0, 1.0)
    h = tw._handler(OPTIMIZER)
    assert (os.path.abspath(h.dir_name) + os.sep).startswith(folder)    # the recorder sees it absolute
    assert h.spool().startswith(spool_prefix)                  # the handler's spool
    ctl = tempfile.mkdtemp(prefix="tb_iotrace-torch-ctl-")     # as channels.install_worker_entry makes it
    assert ctl.startswith(spool_prefix)
    assert not str(tmp_path / "logs" / "pytorch2").startswith(folder)   # a sibling is the job's
    assert own_paths("s3://bucket/run") == [spool_prefix]      # nothing local under a URL


class Steps:
    """What TorchWindows.close reads of its StepWindows: the open window; uninstall."""

    def __init__(self, fails: bool = False) -> None:
        self.prof: Any = None
        self.wanted_s: float | None = None
        self.uninstalled: list[str] = []
        self.fails = fails

    def uninstall(self) -> None:
        self.uninstalled.append(threading.current_thread().name)
        if self.fails:
            raise RuntimeError("disk full")


def test_a_window_is_open_when_asked_for_or_running(tmp_path: Path) -> None:
    tw = TorchWindows(str(tmp_path), 60.0, 2.0)
    assert not tw.window_open()
    tw.ask()                                   # the real StepWindows: asked for, of the run's length
    assert tw.steps.wanted_s == 2.0 and tw.window_open()
    tw = TorchWindows(str(tmp_path), 60.0, 2.0)
    tw.steps.foreign = True                    # the job runs its own profiler: never asked
    tw.ask()
    assert tw.steps.wanted_s is None and not tw.window_open()
    tw.steps.prof = object()                   # one running
    assert tw.window_open()


def test_at_exit_only_the_main_thread_stops_an_open_window(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tw = TorchWindows(str(tmp_path), 60.0, 2.0)
    steps = Steps()
    tw.steps = steps  # type: ignore[assignment]
    tw.close()
    assert steps.uninstalled == []             # none open: nothing to stop
    steps.prof = object()
    t = threading.Thread(target=tw.close, name="not-main")
    t.start()
    t.join(60)
    assert steps.uninstalled == []             # another thread: the profile is the training thread's
    tw.close()
    assert steps.uninstalled == [threading.main_thread().name]
    failing = TorchWindows(str(tmp_path), 60.0, 2.0)
    failing.steps = Steps(fails=True)  # type: ignore[assignment]
    failing.steps.prof = object()
    failing.close()                            # said, not raised
    assert capsys.readouterr().err == "tb-iotrace: the last PyTorch window was not written: disk full\n"


class Periodic:
    """What arm_after_import reads and sets of the run's PeriodicWindows."""

    def __init__(self, log_dir: str) -> None:
        self.log_dir = log_dir
        self.every_s = 30.0
        self.for_s = 1.5
        self.torch: Any = None
        self.torch_arming = False


@pytest.fixture()
def torch_imported(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """torch counts as imported (arming runs now); TorchWindows played: what was made and started."""
    monkeypatch.setitem(sys.modules, "torch", sys.modules.get("torch", types.ModuleType("torch")))
    made: list[tuple[Any, ...]] = []

    class Made:
        def __init__(self, logdir: str, every_s: float, for_s: float) -> None:
            made.append((logdir, every_s, for_s))

        def start(self) -> "Made":
            made.append(("started",))
            return self
    monkeypatch.setattr(auto_window, "TorchWindows", Made)
    return made


def test_arming_gives_the_run_pytorchs_windows(torch_imported: list[tuple[Any, ...]], tmp_path: Path) -> None:
    w = Periodic(str(tmp_path))
    auto_window.arm_after_import(w)
    assert torch_imported == [(str(tmp_path), 30.0, 1.5), ("started",)]
    assert w.torch is not None and type(w.torch).__name__ == "Made" and w.torch_arming is False


def test_a_spawned_worker_is_never_armed(torch_imported: list[tuple[Any, ...]], monkeypatch: pytest.MonkeyPatch,
                                         tmp_path: Path) -> None:
    monkeypatch.setattr(multiprocessing.process, "parent_process", lambda: object())
    w = Periodic(str(tmp_path))
    auto_window.arm_after_import(w)
    assert torch_imported == [] and w.torch is None and w.torch_arming is False


def test_arming_that_fails_is_said_and_disarms(torch_imported: list[tuple[Any, ...]], monkeypatch: pytest.MonkeyPatch,
                                              tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def fails(*a: Any) -> Any:
        raise RuntimeError("torch 9: the profiler window hook is off")
    monkeypatch.setattr(auto_window, "TorchWindows", fails)
    w = Periodic(str(tmp_path))
    auto_window.arm_after_import(w)
    assert w.torch is None and w.torch_arming is False
    assert capsys.readouterr().err == (f"tb-iotrace: no PyTorch profile windows in pid {os.getpid()}: "
                                       "torch 9: the profiler window hook is off\n")


ARMED = r"""
import atexit, json, os, sys
from tb_iotrace.recording.pytorch.parent import auto_window

work, steps, how = sys.argv[1], int(sys.argv[2]), sys.argv[3]
out = {}

def stepped_hooks():
    from torch.optim import optimizer
    from torch.profiler.profiler import _KinetoProfile
    from torch.utils.data.dataloader import _BaseDataLoaderIter
    return [hasattr(_BaseDataLoaderIter.__next__, "__wrapped__"), hasattr(_KinetoProfile.prepare_trace, "__wrapped__"),
            len(optimizer._global_optimizer_post_hooks)]

def last():                          # registered first: runs after TorchWindows.close (atexit is LIFO)
    out["at_exit"] = stepped_hooks() + [w.torch.steps.windows]
    with open(os.path.join(work, "result.json"), "w") as fh:
        json.dump(out, fh)
atexit.register(last)

class Periodic:
    log_dir, every_s, for_s, torch, torch_arming = os.path.join(work, "logs"), 3600.0, 600.0, None, False

w = Periodic()
auto_window.arm_after_import(w)
out["before_import"] = [w.torch_arming, w.torch is None, "torch" in sys.modules]
import torch
from tb_iotrace.recording import pytorch as torch_recording
out["armed"] = [w.torch_arming, type(w.torch).__name__, torch_recording.installed()] + stepped_hooks()
w.torch.ask()                        # 600 s: still open when the loop ends
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for _ in range(steps):
    model(torch.ones(2, 4)).sum().backward()
    opt.step()
out["open_at_end"] = w.torch.window_open()
if how == "close":                   # the training thread stops it now; else it is left to the exit
    w.torch.close()
    out["closed"] = stepped_hooks() + [w.torch.steps.windows, w.torch.window_open()]
"""


def run_job(tmp_path: Path, steps: int, how: str) -> tuple[dict[str, Any], str]:
    r = subprocess.run([sys.executable, "-c", ARMED, str(tmp_path), str(steps), how], capture_output=True,
                       text=True, timeout=240, cwd=tmp_path, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr[-4000:]
    out = json.loads((tmp_path / "result.json").read_text())
    assert out["before_import"] == [True, True, False]         # arming waits for torch's import
    # armed when the import finished: the recording installed, the step hooks in (one optimizer hook)
    assert out["armed"] == [False, "TorchWindows", True, True, True, 1]
    assert out["open_at_end"] is True
    return out, r.stderr


def the_window(tmp_path: Path, steps: int) -> None:
    """The one window written: its folder named by its start, who took it, and one step per
    optimizer step (it began at the first, each later one is a step, the last ends at the stop)."""
    from tb_iotrace.store.kineto import io_record, read_trace

    folders = list((tmp_path / "logs" / "pytorch").iterdir()) if (tmp_path / "logs" / "pytorch").is_dir() else []
    traces = [t for f in folders for t in f.iterdir()]
    assert len(folders) == 1 and len(traces) == 1, traces
    trace = read_trace(traces[0])
    rec = io_record(trace)
    assert rec is not None
    origin = rec["window_origin"]
    assert {k: origin[k] for k in ("by", "every_s", "for_s")} == {
        "by": "tb-iotrace run --profile-every", "every_s": 3600.0, "for_s": 600.0}
    assert folders[0].name == session_name(origin["at_ns"], origin["pid"], 1)
    assert rec["steps_from"] == OPTIMIZER                     # no DataLoader: the optimizer's steps
    names = sorted(e["name"] for e in trace["traceEvents"]
                   if str(e.get("name", "")).startswith("ProfilerStep#") and e.get("ph") == "X")
    assert names == sorted(f"ProfilerStep#{i}" for i in range(steps))


@pytest.mark.torch
def test_armed_at_torchs_import_a_window_stopped_by_close_is_written(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    out, _ = run_job(tmp_path, 6, "close")
    assert out["closed"] == [False, False, 0, 1, False]        # written; the step hooks are gone
    the_window(tmp_path, 6)


@pytest.mark.torch
def test_a_window_open_at_exit_is_written_at_exit(tmp_path: Path) -> None:
    """TorchWindows.start registers close() at exit: a window still open when the job ends is
    stopped there, on the main thread, and written."""
    pytest.importorskip("torch")
    out, stderr = run_job(tmp_path, 5, "exit")
    assert "not written" not in stderr, stderr[-4000:]
    assert out["at_exit"] == [False, False, 0, 1]              # written at exit; the step hooks are gone
    the_window(tmp_path, 5)
