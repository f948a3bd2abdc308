"""tb_iotrace.cli.attach_inject, its pure parts only (no gdb is run, nothing is attached to):
reading a process from /proc (uid, state, exe, maps, version, capabilities, ptrace scope, the
run channel, descendants), the refusals each one line, the way in chosen, the parsing of gdb's
output and the C literal given to it, the channel file, and the injected entry code."""
from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import time
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

from tb_iotrace.cli import attach_inject as inj

PID = 4_100_123


class Proxy:
    """A module stand-in: ``over``'s names, else the real module's."""

    def __init__(self, real: Any, **over: Any) -> None:
        self._real, self._over = real, over

    def __getattr__(self, name: str) -> Any:
        return self._over[name] if name in self._over else getattr(self._real, name)


def fake_proc(monkeypatch: pytest.MonkeyPatch, *, status: str | None, exe: str | BaseException = "/usr/bin/python3.11",
              maps: str = "", euid: int = 1000) -> None:
    files = {f"/proc/{PID}/maps": maps}
    if status is not None:
        files[f"/proc/{PID}/status"] = status

    def read(path: str) -> str:
        if path not in files:
            raise FileNotFoundError(path)
        return files[path]

    def readlink(path: str) -> str:
        assert path == f"/proc/{PID}/exe"
        if isinstance(exe, BaseException):
            raise exe
        return exe

    monkeypatch.setattr(inj, "_read", read)
    monkeypatch.setattr(inj, "os", Proxy(os, readlink=readlink, geteuid=lambda: euid,
                                         path=Proxy(os.path, isdir=lambda p: p == f"/proc/{PID}")))


def status(name: str = "train", uid: str = "1000\t1000\t1000\t1000", state: str = "S (sleeping)") -> str:
    return f"Name:\t{name}\nUmask:\t0022\nState:\t{state}\nPid:\t{PID}\nUid:\t{uid}\nGid:\t0\t0\t0\t0\n"


def refusal(fn: Any, *args: Any) -> str:
    with pytest.raises(inj.AttachRefused) as err:
        fn(*args)
    return str(err.value)


def execd(p: subprocess.Popen[bytes]) -> subprocess.Popen[bytes]:
    """``p`` once it runs its own program: until its exec, /proc shows the parent's environment."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{p.pid}/cmdline", "rb") as fh:
                if fh.read().startswith(b"sleep"):
                    return p
        except OSError:
            pass
        time.sleep(0.005)
    raise AssertionError(f"process {p.pid} did not exec sleep within 10 s")


@pytest.fixture()
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    p = execd(subprocess.Popen(["sleep", "30"], env={"TB_IOTRACE_RUN_DIR": "/tmp/run", "PATH": os.environ["PATH"]}))
    try:
        yield p
    finally:
        p.kill()
        p.wait()


def test_probe_reads_the_effective_uid_and_the_version(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_proc(monkeypatch, status=status(uid="0\t1000\t0\t0"), exe="/opt/py/bin/python3.12")
    assert inj.probe(PID) == inj.Target(pid=PID, exe="/opt/py/bin/python3.12", version=(3, 12), uid=1000)


def test_probe_an_embedded_interpreter_is_python_by_its_maps(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_proc(monkeypatch, status=status(), exe="/usr/bin/myapp",
              maps="7f00-7f10 r-xp 0 08:01 1 /usr/lib/libpython3.10.so.1.0\n")
    t = inj.probe(PID)
    assert t.exe == "/usr/bin/myapp" and t.version == (3, 10)


@pytest.mark.parametrize("st,want", [
    (None, f"no process {PID}"),
    (status(uid="garbage"), f"no process {PID}"),
    (status(state="Z (zombie)"), f"process {PID} (train) has exited"),
    (status(state="X (dead)"), f"process {PID} (train) has exited"),
])
def test_probe_gone_or_exited(monkeypatch: pytest.MonkeyPatch, st: str | None, want: str) -> None:
    fake_proc(monkeypatch, status=st)
    assert refusal(inj.probe, PID) == want


def test_probe_another_users_process(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_proc(monkeypatch, status=status(uid="0\t0\t0\t0"), euid=1000)
    monkeypatch.setattr(inj, "_has_cap", lambda cap: False)
    text = refusal(inj.probe, PID)
    assert text.startswith(f"no permission: process {PID} belongs to uid 0, this is uid 1000 without CAP_SYS_PTRACE")
    monkeypatch.setattr(inj, "_has_cap", lambda cap: cap == inj.CAP_SYS_PTRACE)
    assert inj.probe(PID).uid == 0


def test_probe_cannot_inspect(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_proc(monkeypatch, status=status(), exe=PermissionError(13, "Permission denied"))
    assert refusal(inj.probe, PID).startswith(f"no permission to inspect process {PID} (train): run tb-iotrace")
    fake_proc(monkeypatch, status=status(), exe=OSError(2, "No such file or directory"))
    assert refusal(inj.probe, PID) == f"process {PID} cannot be inspected: No such file or directory"


def test_probe_not_python(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_proc(monkeypatch, status=status(name="bash"), exe="/usr/bin/bash", maps="/usr/lib/libc.so.6\n")
    assert refusal(inj.probe, PID) == f"process {PID} (bash, /usr/bin/bash) is not a Python process"
    fake_proc(monkeypatch, status=status(name="x"), exe="/usr/bin/notpython3.11")
    assert "is not a Python process" in refusal(inj.probe, PID)      # "python" must begin the name


def test_probe_refusal_is_one_line_whatever_the_names(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every refusal is one line (the module's rule), also for an executable whose path has a
    line break or a terminal escape in it (any user can name a binary so)."""
    fake_proc(monkeypatch, status=status(name="\x1b[2Jx"), exe="/tmp/evil\nname\x1b[31m", maps="")
    text = refusal(inj.probe, PID)
    assert "is not a Python process" in text
    assert "\n" not in text and "\x1b" not in text


def test_version_of(monkeypatch: pytest.MonkeyPatch) -> None:
    assert inj._version_of(PID, "/usr/bin/python3.11", "") == (3, 11)
    assert inj._version_of(PID, "/usr/bin/python2.7", "") == (2, 7)
    assert inj._version_of(PID, "/x/python3", "/usr/lib/libpython3.13t.so\n") == (3, 13)
    answers: list[Any] = [subprocess.CompletedProcess([], 0, "3 9\n", ""), subprocess.CompletedProcess([], 0, "", ""),
                          OSError("gone"), subprocess.TimeoutExpired("x", 20)]
    seen: list[list[str]] = []

    def run(argv: list[str], **kw: Any) -> Any:
        seen.append(argv)
        got = answers.pop(0)
        if isinstance(got, BaseException):
            raise got
        return got

    monkeypatch.setattr(inj.subprocess, "run", run)
    assert inj._version_of(PID, "/venv/bin/python3", "") == (3, 9)     # asked the binary itself
    assert seen[0][0] == f"/proc/{PID}/exe"
    assert [inj._version_of(PID, "/venv/bin/python3", "") for _ in range(3)] == [None, None, None]


@pytest.mark.parametrize("capeff,want", [("0000000000080000", True), ("000001ffffffffff", True),
                                         ("0000000000040000", False), ("zz", False), (None, False)])
def test_has_cap(monkeypatch: pytest.MonkeyPatch, capeff: str | None, want: bool) -> None:
    text = "Name:\tpy\n" + (f"CapEff:\t{capeff}\n" if capeff is not None else "")
    monkeypatch.setattr(inj, "_read", lambda path: text)
    assert inj._has_cap(inj.CAP_SYS_PTRACE) is want


@pytest.mark.parametrize("text,want", [("0\n", 0), ("3\n", 3), ("x", None), (OSError("no yama"), None)])
def test_ptrace_scope(monkeypatch: pytest.MonkeyPatch, text: Any, want: int | None) -> None:
    def read(path: str) -> str:
        assert path == "/proc/sys/kernel/yama/ptrace_scope"
        if isinstance(text, BaseException):
            raise text
        return text

    monkeypatch.setattr(inj, "_read", read)
    assert inj.ptrace_scope() == want


def test_has_channel_reads_the_processs_environment(sleeper: subprocess.Popen[bytes]) -> None:
    assert inj.has_channel(sleeper.pid) is True
    assert inj.has_channel(os.getpid()) is ("TB_IOTRACE_RUN_DIR" in os.environ
                                            and os.environ.get("TB_IOTRACE_ATTACH_CHANNEL", "1") != "0")
    assert inj.has_channel(4_000_000) is False
    off = execd(subprocess.Popen(["sleep", "30"], env={"TB_IOTRACE_RUN_DIR": "/r", "TB_IOTRACE_ATTACH_CHANNEL": "0"}))
    empty = execd(subprocess.Popen(["sleep", "30"], env={"TB_IOTRACE_RUN_DIR": ""}))
    try:
        assert inj.has_channel(off.pid) is False and inj.has_channel(empty.pid) is False
    finally:
        for p in (off, empty):
            p.kill()
            p.wait()


def test_is_descendant(sleeper: subprocess.Popen[bytes]) -> None:
    assert inj._is_descendant(sleeper.pid) is True
    assert inj._is_descendant(os.getppid()) is False
    assert inj._is_descendant(4_000_000) is False


def test_children_are_the_python_processes_below(tmp_path: Path) -> None:
    code = ("import subprocess, sys, time\n"
            "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'])\n"
            "q = subprocess.Popen(['sleep', '30'])\n"
            "print(p.pid, q.pid, flush=True)\n"
            "time.sleep(30)\n")
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        py, sh = map(int, parent.stdout.readline().split())
        assert inj.children(parent.pid) == [py]
        mine = inj.children(os.getpid())
        assert parent.pid in mine and py in mine and sh not in mine
        assert inj.children(4_000_000) == []
    finally:
        parent.kill()
        parent.wait()
        for pid in (py, sh):
            try:
                os.kill(pid, 9)
            except OSError:
                pass


def _target(version: tuple[int, int] | None = None) -> inj.Target:
    return inj.Target(pid=PID, exe="/usr/bin/python3", version=version, uid=0)


def test_way_in(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inj, "has_channel", lambda pid: pid == PID)
    assert inj.check_way_in(_target(None)) == "channel"            # the channel needs no version
    monkeypatch.setattr(inj, "has_channel", lambda pid: False)
    assert refusal(inj.check_way_in, _target(None)) == \
        f"process {PID}: its Python version could not be read (/usr/bin/python3)"
    here = sys.version_info[:2]
    monkeypatch.delattr(sys, "remote_exec", raising=False)
    monkeypatch.setattr(inj.shutil, "which", lambda name: "/usr/bin/gdb")
    monkeypatch.setattr(inj, "ptrace_scope", lambda: 2)
    monkeypatch.setattr(inj, "_has_cap", lambda cap: False)
    assert "kernel.yama.ptrace_scope=2" in refusal(inj.check_way_in, _target(here))
    monkeypatch.setattr(inj, "_has_cap", lambda cap: True)
    assert inj.check_way_in(_target(here)) == "gdb"
    monkeypatch.setattr(inj, "ptrace_scope", lambda: 1)
    monkeypatch.setattr(inj, "_has_cap", lambda cap: False)
    monkeypatch.setattr(inj, "_is_descendant", lambda pid: True)
    assert inj.check_way_in(_target(here)) == "gdb"                # a child of ours: allowed
    older = (here[0], here[1] - 1)
    text = refusal(inj.check_way_in, _target(older))
    assert text.startswith(f"process {PID} runs Python {older[0]}.{older[1]}, this tb-iotrace runs {here[0]}.{here[1]}")


@pytest.fixture()
def gdb_said(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """``_run_gdb`` answering from the list (no gdb is run); the argv it got is appended."""
    answers: list[Any] = []
    monkeypatch.setattr(inj, "settle", lambda pid, limit_s=inj.SETTLE_S: True)

    def run(argv: list[str], pid: int) -> tuple[str | None, str]:
        answers.append(argv)
        return answers.pop(0)

    monkeypatch.setattr(inj, "_run_gdb", run)
    return answers


def test_gdb_call_literal_and_arguments(gdb_said: list[Any], tmp_path: Path) -> None:
    gdb_said.append(("Attaching...\n$1 = 0\n[Inferior 1 detached]\n", ""))
    inj.inject(_target((3, 11)), "gdb", "print('a\\\\b')\nx = 1\n", str(tmp_path / "s.py"))
    argv = gdb_said[-1]
    assert argv[:4] == ["gdb", "--readnever", "-p", str(PID)] and argv[-2:] == ["-ex", "detach"]
    call = next(a for a in argv if a.startswith("call "))
    assert call == ('call (int)Py_AddPendingCall((int(*)(void*))PyRun_SimpleString, '
                    '(void*)"print(\'a\\\\\\\\b\')\\nx = 1\\n")')
    assert "set debuginfod enabled off" in argv and "sharedlibrary libpython" in argv


def test_a_double_quote_is_refused_before_gdb(gdb_said: list[Any], tmp_path: Path) -> None:
    text = refusal(inj.inject, _target((3, 11)), "gdb", 'open("/x")', str(tmp_path / "s.py"))
    assert "double quote" in text and gdb_said == []


@pytest.mark.parametrize("out,want", [
    ("ptrace: Operation not permitted.\n", "ptrace of process 4100123 not permitted"),
    ("$1 = -1\n", "process 4100123 refused the call (Py_AddPendingCall returned -1"),
    ('No symbol "Py_AddPendingCall" in current context.\n\n  \n', 'gdb could not call into process 4100123: '
     'No symbol "Py_AddPendingCall" in current context.'),
    ("", "gdb could not call into process 4100123: no output"),
    ("value $1 = 0 inline\n", "gdb could not call into process 4100123: value $1 = 0 inline"),
])
def test_gdb_output_is_read(gdb_said: list[Any], tmp_path: Path, out: str, want: str) -> None:
    gdb_said.append((out, ""))
    text = refusal(inj.inject, _target((3, 11)), "gdb", "pass", str(tmp_path / "s.py"))
    assert text.startswith(want) and "\n" not in text


def test_gdb_that_never_finishes_is_tried_gdb_tries_times(gdb_said: list[Any], tmp_path: Path) -> None:
    for k in range(inj.GDB_TRIES):
        gdb_said.append((None, f"its threads t 2, gdb's last line 'try {k}'"))
    text = refusal(inj.inject, _target((3, 11)), "gdb", "pass", str(tmp_path / "s.py"))
    assert text == (f"gdb did not finish within {inj.GDB_TIMEOUT_S} s attaching to process {PID} ({inj.GDB_TRIES} "
                    f"tries; the process was resumed; last try: its threads t 2, gdb's last line 'try 2')")
    assert len(gdb_said) == inj.GDB_TRIES and all(isinstance(a, list) for a in gdb_said)
    gdb_said.clear()
    gdb_said.extend([(None, "x"), ("$1 = 0\n", "")])
    inj.inject(_target((3, 11)), "gdb", "pass", str(tmp_path / "s.py"))   # the second try answers
    assert len(gdb_said) == 2


def test_remote_exec(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    calls: list[tuple[int, str]] = []
    monkeypatch.setattr(sys, "remote_exec", lambda pid, script: calls.append((pid, script)), raising=False)
    inj.inject(_target((3, 14)), "remote_exec", "pass", str(tmp_path / "s.py"))
    assert calls == [(PID, str(tmp_path / "s.py"))]

    def denied(pid: int, script: str) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(sys, "remote_exec", denied)
    assert refusal(inj.inject, _target((3, 14)), "remote_exec", "pass", "/s.py") == \
        f"sys.remote_exec into process {PID} failed: [Errno 1] Operation not permitted"


def test_channel_file_is_written_whole(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from tb_iotrace.recording import attach_listen

    where = tmp_path / "chan" / "sub" / f"{PID}"
    monkeypatch.setattr(attach_listen, "channel_path", lambda pid: str(where))
    inj.inject(_target(None), "channel", "unused", str(tmp_path / "ctrl" / "inject.py"), "request.json")
    assert where.read_text() == f"{tmp_path / 'ctrl'}\nrequest.json\n"
    assert oct(where.parent.stat().st_mode & 0o777) == oct(0o700)
    assert sorted(p.name for p in where.parent.iterdir()) == [str(PID)]     # no .tmp left


def test_states_and_threads_of_a_process(sleeper: subprocess.Popen[bytes]) -> None:
    assert inj._states(4_000_000) == "gone" and inj._threads(4_000_000) == {}
    assert re.fullmatch(r"[A-Za-z] 1", inj._states(sleeper.pid))
    assert inj._threads(sleeper.pid) == {str(sleeper.pid): "sleep"}


def test_entry_code_with_hostile_paths_refuses_another_tb_iotrace(tmp_path: Path) -> None:
    ctrl = tmp_path / "ctl 'q\" \x1b[2J"
    ctrl.mkdir()
    root = str(tmp_path / "other\nroot")
    req = "req'.json"
    code = inj.entry_code(str(ctrl), req, root)
    assert '"' not in code and "\\" not in code
    body = base64.b64decode(re.search(r"b64decode\('([^']+)'\)", code).group(1)).decode()   # type: ignore[union-attr]
    assert f"ctrl, request, root = {str(ctrl)!r}, {req!r}, {root!r}\n" in body
    exec(compile(code, "<attach>", "exec"), {})          # tb_iotrace is loaded here from elsewhere
    st = json.loads((ctrl / f"status.{os.getpid()}.json").read_text())
    assert st["state"] == "error" and "it has another tb_iotrace loaded" in st["why"]
    assert (ctrl / f"entered.{os.getpid()}").exists()
    (ctrl / f"status.{os.getpid()}.json").unlink()
    exec(compile(code, "<attach>", "exec"), {})          # once per process: the second does nothing
    assert not (ctrl / f"status.{os.getpid()}.json").exists()
    assert root not in sys.path
