"""gdb that does not finish (seen in CI: the second attach to a PyTorch job, gdb attaching while
the first attach's thread was ending, waited past its 60 s): the process it stopped is resumed,
gdb is tried once more after the process's threads stand still, and the injected code runs once
in a process even when two tries queued it."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tb_iotrace.cli import attach_inject as inj


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


@pytest.fixture
def sleeper():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    yield proc
    proc.kill()
    proc.wait()


def _fake_gdb(tmp_path: Path, hangs: int) -> Path:
    """A gdb that, its first ``hangs`` times, stops the process (as gdb's attach does) and
    hangs; then answers as gdb does after a call that returned 0."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    calls = tmp_path / "calls"
    gdb = bindir / "gdb"
    gdb.write_text(f"""#!/bin/sh
echo x >> {calls}
n=$(wc -l < {calls})
while [ "$1" != "-p" ]; do shift; done
if [ "$n" -le {hangs} ]; then echo "Attaching to process $2"; kill -STOP "$2"; exec sleep 600; fi
echo '$1 = 0'
""")
    gdb.chmod(0o755)
    return bindir


def test_a_hung_gdb_leaves_the_process_running_and_is_tried_again(tmp_path: Path, sleeper,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", f"{_fake_gdb(tmp_path, 1)}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(inj, "GDB_TIMEOUT_S", 2)
    t = inj.Target(pid=sleeper.pid, exe=sys.executable, version=sys.version_info[:2], uid=os.geteuid())
    inj.inject(t, "gdb", "pass", str(tmp_path / "inject.py"))
    assert (tmp_path / "calls").read_text().count("x") == 2
    assert _state(sleeper.pid) != "T", "the process gdb stopped was left stopped"


def test_gdb_hanging_every_time_is_one_line_and_the_process_runs_on(tmp_path: Path, sleeper,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", f"{_fake_gdb(tmp_path, 9)}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(inj, "GDB_TIMEOUT_S", 1)
    t = inj.Target(pid=sleeper.pid, exe=sys.executable, version=sys.version_info[:2], uid=os.geteuid())
    with pytest.raises(inj.AttachRefused) as err:
        inj.inject(t, "gdb", "pass", str(tmp_path / "inject.py"))
    assert "did not finish" in str(err.value) and "resumed" in str(err.value) and "\n" not in str(err.value)
    # where it stood: the process stopped by the hung gdb, gdb's last words
    assert "its threads T 1" in str(err.value) and f"'Attaching to process {sleeper.pid}'" in str(err.value)
    assert _state(sleeper.pid) != "T"


def test_settle_waits_for_our_ending_thread(sleeper) -> None:
    """A thread named as ours (a previous attach's) holds settle until it is gone; a process
    whose threads stand still settles at once."""
    t0 = time.monotonic()
    assert inj.settle(sleeper.pid, 3.0)
    assert time.monotonic() - t0 < 2.5
    code = ("import ctypes, threading, time\n"
            "def ours():\n"
            "    ctypes.CDLL(None).prctl(15, b'tb_iotrace-attach', 0, 0, 0)   # PR_SET_NAME\n"
            "    time.sleep(1.5)\n"
            "threading.Thread(target=ours).start(); time.sleep(0.2)\n"
            "print('up', flush=True); time.sleep(30)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "up"
        names = inj._threads(proc.pid).values()
        if not any(n.startswith("tb_iotrace") for n in names):
            pytest.fail(f"the thread's name did not reach /proc: {sorted(names)}")
        t0 = time.monotonic()
        assert inj.settle(proc.pid, 10.0)
        assert time.monotonic() - t0 >= 0.5         # it waited for the thread to end
        assert not any(n.startswith("tb_iotrace") for n in inj._threads(proc.pid).values())
    finally:
        proc.kill()
        proc.wait()


def test_the_injected_code_runs_once_per_process(tmp_path: Path) -> None:
    """Run twice (two tries of gdb both queued it): the second run writes nothing."""
    ctrl = tmp_path / "ctrl"
    ctrl.mkdir()
    code = inj.entry_code(str(ctrl), "missing.json", str(tmp_path / "nowhere"))
    runner = f"exec(open({str(tmp_path / 'code.py')!r}).read())\n"
    (tmp_path / "code.py").write_text(code)
    out = subprocess.run([sys.executable, "-c", runner + "import os, glob\n"
                          f"st = glob.glob({str(ctrl)!r} + '/status.*.json'); print(open(st[0]).read()); os.remove(st[0])\n"
                          + runner + f"print(glob.glob({str(ctrl)!r} + '/status.*.json'))\n"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    first, second = out.stdout.strip().splitlines()
    assert json.loads(first)["state"] == "error"          # the request is missing: said once
    assert second == "[]"
