"""tb_iotrace.base.processes: a pid is alive while it names a running process."""
from __future__ import annotations

import os
import subprocess
import sys

from tb_iotrace.base.processes import pid_alive


def test_a_running_process_is_alive_and_an_ended_one_is_not() -> None:
    assert pid_alive(os.getpid())
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert not pid_alive(child.pid)


def test_another_users_process_is_alive_and_no_pid_is_none() -> None:
    assert pid_alive(1)          # init: another user's, or ours as root: alive either way
    assert not pid_alive(0)
    assert not pid_alive(-1)


def test_an_exited_process_not_yet_reaped_is_not_alive() -> None:
    """A zombie (exited, its parent has not waited for it) runs no more: seen in CI, attach waited
    90 s for a job that had ended while attached, its parent (the test) not having reaped it."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)     # exited, left unreaped
        assert not pid_alive(child.pid)
    finally:
        child.wait()
