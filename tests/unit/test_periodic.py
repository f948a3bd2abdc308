"""tb_iotrace.recording.periodic: ``run --profile-every``'s settings from the environment and
the windows' choice of framework.

Proves: no TB_IOTRACE_PROFILE_EVERY (or a blank one) asks for nothing; TB_IOTRACE_PROFILE_FOR
defaults to 2 s when unset or blank; values that are not finite seconds in (0, 30 days] are a
ValueError naming the variable; from_env starts windows into TB_IOTRACE_PROFILE_LOGDIR (else the
default) and refuses a window as long as its period; ``choose`` goes by the loops' calls since
the last choice; ``close`` stops the thread.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from tb_iotrace.recording import loop_activity, periodic


@pytest.fixture()
def env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in (periodic.ENV_EVERY, periodic.ENV_FOR, periodic.ENV_LOGDIR):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_nothing_asked(env: pytest.MonkeyPatch) -> None:
    assert periodic.from_env_settings() is None and periodic.from_env("/nowhere") is None
    env.setenv(periodic.ENV_EVERY, "   ")
    env.setenv(periodic.ENV_FOR, "junk")          # (read only when a period is asked for)
    assert periodic.from_env_settings() is None


@pytest.mark.parametrize("every, length, want", [
    ("10", None, (10.0, periodic.DEFAULT_FOR_S)),
    (" 7.5 ", " ", (7.5, periodic.DEFAULT_FOR_S)),
    ("60", "3", (60.0, 3.0)),
    ("1e1", "0.25", (10.0, 0.25)),
])
def test_settings(env: pytest.MonkeyPatch, every: str, length: str | None, want: tuple[float, float]) -> None:
    env.setenv(periodic.ENV_EVERY, every)
    if length is not None:
        env.setenv(periodic.ENV_FOR, length)
    assert periodic.from_env_settings() == want


@pytest.mark.parametrize("every, length, names", [
    ("ten", None, periodic.ENV_EVERY),
    ("0", None, periodic.ENV_EVERY),
    ("-5", None, periodic.ENV_EVERY),
    ("nan", None, periodic.ENV_EVERY),
    ("inf", None, periodic.ENV_EVERY),
    ("3000000", None, periodic.ENV_EVERY),         # past 30 days
    ("10", "0", periodic.ENV_FOR),
    ("10", "two", periodic.ENV_FOR),
    ("10", "-1", periodic.ENV_FOR),
])
def test_bad_values_name_the_variable(env: pytest.MonkeyPatch, every: str, length: str | None, names: str) -> None:
    env.setenv(periodic.ENV_EVERY, every)
    if length is not None:
        env.setenv(periodic.ENV_FOR, length)
    with pytest.raises(ValueError, match=names):
        periodic.from_env_settings()
    with pytest.raises(ValueError, match=names):
        periodic.from_env("/nowhere")


def test_a_window_as_long_as_its_period_is_refused(env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    env.setenv(periodic.ENV_EVERY, "2")
    env.setenv(periodic.ENV_FOR, "5")
    with pytest.raises(ValueError, match="never end before the next"):
        periodic.from_env(str(tmp_path))


@pytest.mark.parametrize("logdir_env", [True, False])
def test_from_env_starts_windows_into_the_logdir(env: pytest.MonkeyPatch, tmp_path: Path, logdir_env: bool) -> None:
    env.setenv(periodic.ENV_EVERY, "3600")
    env.setenv(periodic.ENV_FOR, "1.5")
    if logdir_env:
        env.setenv(periodic.ENV_LOGDIR, str(tmp_path / "asked"))
    p = periodic.from_env(str(tmp_path / "default"))
    assert p is not None
    try:
        assert (p.every_s, p.for_s) == (3600.0, 1.5)
        assert p.log_dir == str(tmp_path / ("asked" if logdir_env else "default"))
        assert p.writer.log_dir == p.log_dir and p._thread.is_alive()
    finally:
        p.close()
    assert not p._thread.is_alive()


def test_choose_goes_by_the_loops_calls(env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    env.setitem(loop_activity.COUNTS, loop_activity.TF, 0)
    env.setitem(loop_activity.COUNTS, loop_activity.TORCH, 0)
    p = periodic.PeriodicWindows(str(tmp_path), 3600.0, 1.0)     # (not started)
    p.ready = {"tensorflow"}
    assert p.choose() == "tensorflow" and p.last == "tensorflow"   # no torch armed: TF's pick
    p.torch = object()                                             # torch's windows armed
    loop_activity.COUNTS[loop_activity.TORCH] += 5
    loop_activity.COUNTS[loop_activity.TF] += 2
    assert p.choose() == "pytorch" and p.last == "pytorch"
    loop_activity.COUNTS[loop_activity.TF] += 3                    # only the calls since the last choice count
    assert p.choose() == "tensorflow"
    assert p.choose() == "tensorflow"                              # no calls: the last choice stands
    p.ready = set()
    assert p.choose() == "pytorch"                                 # no TF/JAX imported: PyTorch


def test_close_in_another_process_leaves_the_thread(env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    p = periodic.PeriodicWindows(str(tmp_path), 3600.0, 1.0).start()
    p._pid = -1                                                    # as seen from a forked child
    p.close()
    assert p._thread.is_alive() and not p._stop.is_set()
    p._pid = os.getpid()
    p.close()
    assert not p._thread.is_alive()
