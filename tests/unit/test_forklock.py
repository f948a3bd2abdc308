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
