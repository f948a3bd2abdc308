"""tb_iotrace.recording.forklock: a child forked while another thread holds the lock gets it
back unlocked (a plain threading.Lock would stay held in the child forever)."""
from __future__ import annotations

import os
import threading

from tb_iotrace.recording.forklock import ForkSafeLock


def test_a_child_forked_while_the_lock_is_held_can_take_it():
    lock = ForkSafeLock()
    held, release = threading.Event(), threading.Event()

    def holder() -> None:
        with lock:
            held.set()
            release.wait(30)

    t = threading.Thread(target=holder)
    t.start()
    assert held.wait(30) and lock.locked()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:        # the child: the holder thread is gone; the lock must be free
        try:
            ok = not lock.locked() and lock._lock.acquire(timeout=5)
            os.write(w, b"1" if ok else b"0")
        finally:
            os._exit(0)
    os.close(w)
    got = os.read(r, 1)
    os.close(r)
    os.waitpid(pid, 0)
    release.set()
    t.join(30)
    assert got == b"1"
    assert not lock.locked()        # the parent's lock is its own, released by its holder
    with lock:
        assert lock.locked()


HELD_AT_FORK = r"""
import os, sys, threading, time
import tb_iotrace
from tb_iotrace.recording import (api, checkpoint_hooks, landing, library_checkpoints, local_traffic, object_hooks,
                                  session, url_profiles)

MODULES = (api, checkpoint_hooks, landing, library_checkpoints, local_traffic, object_hooks, session, url_profiles)
tb_iotrace.enable()
tb_iotrace.disable()          # another thread may have disabled the shim: the child's enable() does it all
held, release = threading.Event(), threading.Event()

def holder():
    import contextlib
    with contextlib.ExitStack() as stack:
        for m in MODULES:
            stack.enter_context(m._lock)
        held.set()
        release.wait(60)

threading.Thread(target=holder, daemon=True).start()
assert held.wait(30)
pid = os.fork()
if pid == 0:
    still = [m.__name__ for m in MODULES if m._lock.locked()]
    if still:
        os.write(2, ("held in the child: " + ", ".join(still) + "\n").encode())
        os._exit(3)
    tb_iotrace.enable()      # patches again and installs the library hooks (their locks)
    os._exit(0)
deadline = time.monotonic() + 30
while True:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        break
    if time.monotonic() > deadline:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        print("hung")
        sys.exit(4)
    time.sleep(0.01)
release.set()
sys.exit(os.waitstatus_to_exitcode(status))
"""


def test_a_child_forked_while_the_recording_locks_are_held_takes_them():
    """Every module lock a forked child's recording may take (enable(): the checkpoint-library
    and local-traffic hooks, sessions, object hooks, landing, URL profiles) is free in the child,
    whoever held it at the fork: a DataLoader or multiprocessing child's enable() never hangs
    (a fork stress run hung a child in enable() on the library hooks' plain lock)."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    r = subprocess.run([sys.executable, "-c", HELD_AT_FORK], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(root), "TBIO_TENSORFLOW": "0", "TBIO_JAX": "0"})
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr[-2000:])
