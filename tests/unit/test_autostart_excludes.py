"""``tb-iotrace run`` leaves the shim's default exclusions in place (read from the shim, not
typed a second time in Python) and adds its own record folder."""
from __future__ import annotations

import os

from tb_iotrace.recording import autostart as _autostart
from tb_iotrace.recording import session

# the shim's defaults: Darshan's exclusions (docs/internals.md, "Darshan counter rules"), and /lib64/
DARSHAN = ["/etc/", "/dev/", "/usr/", "/bin/", "/boot/", "/lib/", "/lib64/", "/opt/", "/sbin/", "/sys/",
           "/proc/", "/var/"]


def test_defaults_come_from_the_shim():
    assert session.excludes() == DARSHAN


def test_run_keeps_the_defaults_and_adds_its_record_folder(monkeypatch, tmp_path):
    monkeypatch.delenv("TBIO_EXCLUDE", raising=False)
    _autostart._exclude_record_dir(str(tmp_path))
    assert os.environ["TBIO_EXCLUDE"].split(os.pathsep) == DARSHAN + [str(tmp_path / "plugins" / "iotrace")]
    # a user's TBIO_EXCLUDE replaces the defaults; the record folder is still added, once
    monkeypatch.setenv("TBIO_EXCLUDE", os.pathsep.join(["/scratch/", str(tmp_path / "plugins" / "iotrace")]))
    _autostart._exclude_record_dir(str(tmp_path))
    assert os.environ["TBIO_EXCLUDE"].split(os.pathsep) == ["/scratch/", str(tmp_path / "plugins" / "iotrace")]
