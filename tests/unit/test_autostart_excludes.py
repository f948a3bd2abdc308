"""``tb-iotrace run`` leaves the shim's default exclusions in place (read from the shim, not
typed a second time in Python) and adds its own record folder."""
from __future__ import annotations

import os
from typing import Iterator

import pytest

from tb_iotrace.recording import autostart as _autostart
from tb_iotrace.recording import shim_settings

# the shim's defaults: Darshan's exclusions (docs/internals.md, "Darshan counter rules"), and /lib64/
DARSHAN = ["/etc/", "/dev/", "/usr/", "/bin/", "/boot/", "/lib/", "/lib64/", "/opt/", "/sbin/", "/sys/",
           "/proc/", "/var/"]


@pytest.fixture(autouse=True)
def _exclude_env_put_back() -> Iterator[None]:
    """TBIO_EXCLUDE as it was: autostart sets it in os.environ itself, and monkeypatch.delenv of an
    unset variable records nothing to undo, so the record folder set here outlived these tests and
    the next enable() in the process (a later test's capture()) applied it as the shim's excludes."""
    saved = os.environ.get("TBIO_EXCLUDE")
    yield
    if saved is None:
        os.environ.pop("TBIO_EXCLUDE", None)
    else:
        os.environ["TBIO_EXCLUDE"] = saved


def test_defaults_come_from_the_shim():
    assert shim_settings.excludes() == DARSHAN


def test_run_keeps_the_defaults_and_adds_its_record_folder(monkeypatch, tmp_path):
    monkeypatch.delenv("TBIO_EXCLUDE", raising=False)
    _autostart._exclude_record_dir(str(tmp_path))
    assert os.environ["TBIO_EXCLUDE"].split(os.pathsep) == DARSHAN + [str(tmp_path / "plugins" / "iotrace")]
    # a user's TBIO_EXCLUDE replaces the defaults; the record folder is still added, once
    monkeypatch.setenv("TBIO_EXCLUDE", os.pathsep.join(["/scratch/", str(tmp_path / "plugins" / "iotrace")]))
    _autostart._exclude_record_dir(str(tmp_path))
    assert os.environ["TBIO_EXCLUDE"].split(os.pathsep) == ["/scratch/", str(tmp_path / "plugins" / "iotrace")]


def test_run_with_windows_excludes_their_staging_and_where_they_are_published(monkeypatch, tmp_path):
    """Under --profile-every the windows tb_iotrace publishes to the log dir's plugins/profile
    were the job's writes (and a checkpoint save, 18.2 MiB, in the issue's DLIO run)."""
    from tb_iotrace.recording.window_writer import staging_root

    monkeypatch.delenv("TBIO_EXCLUDE", raising=False)
    monkeypatch.delenv("TB_IOTRACE_PROFILE_LOGDIR", raising=False)
    monkeypatch.setenv("TB_IOTRACE_CACHE", str(tmp_path / "cache" / "remote"))
    _autostart._exclude_windows(str(tmp_path / "run"))
    assert os.environ["TBIO_EXCLUDE"].split(os.pathsep) == DARSHAN + [
        str(staging_root()), str(tmp_path / "run" / "plugins" / "profile")]
    monkeypatch.delenv("TBIO_EXCLUDE")
    monkeypatch.setenv("TB_IOTRACE_PROFILE_LOGDIR", str(tmp_path / "elsewhere"))
    _autostart._exclude_windows(str(tmp_path / "run"))
    assert os.environ["TBIO_EXCLUDE"].split(os.pathsep)[-1] == str(tmp_path / "elsewhere" / "plugins" / "profile")


def test_run_excludes_the_attach_channel(monkeypatch, tmp_path):
    """The listener polls <tmp>/tb_iotrace-attach-<pid>/channel every 0.25 s: those stats were
    recorded as the job's calls (and made every idle flush write a trace part)."""
    from tb_iotrace.recording.attach_listen import channel_path

    monkeypatch.delenv("TBIO_EXCLUDE", raising=False)
    _autostart._exclude_attach_channel()
    got = os.environ["TBIO_EXCLUDE"].split(os.pathsep)
    assert got[:len(DARSHAN)] == DARSHAN and len(got) == len(DARSHAN) + 1
    assert channel_path(1234).startswith(got[-1]) and channel_path(99).startswith(got[-1])
    assert not (str(tmp_path) + "/").startswith(got[-1])
    monkeypatch.delenv("TBIO_EXCLUDE")
