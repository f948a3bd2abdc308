"""``tb-iotrace attach``'s refusals that need no second process: each one line saying why and
what to do (ptrace forbidden, no gdb, another Python version, not Python, no such process), and
the control folder that makes a second attach to a process say it is attached already."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tb_iotrace.cli import attach as attach_cli
from tb_iotrace.cli import attach_inject as inj


def target(version: tuple[int, int] | None = None) -> inj.Target:
    return inj.Target(pid=os.getppid(), exe="/usr/bin/python3", version=version or sys.version_info[:2], uid=os.geteuid())


def refusal(fn, *args) -> str:
    with pytest.raises(inj.AttachRefused) as err:
        fn(*args)
    text = str(err.value)
    assert "\n" not in text and text
    return text


def test_ptrace_scope_3_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inj, "ptrace_scope", lambda: 3)
    assert "ptrace_scope=3" in refusal(inj.check_way_in, target())


def test_ptrace_scope_1_needs_root_or_a_child(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inj, "ptrace_scope", lambda: 1)
    monkeypatch.setattr(inj, "_has_cap", lambda cap: False)
    assert "ptrace_scope=1" in refusal(inj.check_way_in, target())


def test_no_gdb_before_3_14(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inj, "ptrace_scope", lambda: None)
    monkeypatch.setattr(inj.shutil, "which", lambda name: None)
    monkeypatch.delattr(sys, "remote_exec", raising=False)
    text = refusal(inj.check_way_in, target())
    assert "gdb" in text and "tb-iotrace run" in text


def test_another_python_version(monkeypatch: pytest.MonkeyPatch) -> None:
    text = refusal(inj.check_way_in, target((3, sys.version_info[1] + 1)))
    assert "run tb-iotrace attach from that Python's environment" in text


def test_gdb_is_the_way_in_here(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inj, "ptrace_scope", lambda: 0)
    monkeypatch.setattr(inj.shutil, "which", lambda name: "/usr/bin/gdb")
    monkeypatch.delattr(sys, "remote_exec", raising=False)
    assert inj.check_way_in(target()) == "gdb"


def test_not_python_and_no_process() -> None:
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        assert "is not a Python process" in refusal(inj.probe, sleeper.pid)
    finally:
        sleeper.kill()
        sleeper.wait()
    assert refusal(inj.probe, 4_000_000) == "no process 4000000"
    assert "itself" in refusal(inj.probe, os.getpid())


def test_second_attach_is_refused_while_the_first_holds_the_process(tmp_path: Path) -> None:
    pid = 4_000_001          # no such process: the claim is only a folder
    ctrl = attach_cli.claim(pid)
    try:
        assert "already attached" in refusal(attach_cli.claim, pid)
        Path(ctrl, "cli.pid").write_text("4000002")       # its attach is gone: stale, taken over
        assert attach_cli.claim(pid) == ctrl
    finally:
        import shutil

        shutil.rmtree(ctrl, ignore_errors=True)


def test_the_injected_code_needs_no_quoting() -> None:
    code = inj.entry_code("/tmp/tb_iotrace-attach-1", "request.json", "/some/where")
    assert '"' not in code and "\\" not in code
    compile(code, "<attach>", "exec")
