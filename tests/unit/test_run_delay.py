"""tb_iotrace.base.run_delay: the time this process's threads waited for a core, from the
kernel's schedstat, grows while a thread is runnable but not running."""
from __future__ import annotations

import hashlib
import os
import threading
import time

import pytest

from tb_iotrace.base.run_delay import run_delay_since, run_delays

BLOCK = bytes(1 << 20)


def test_threads_are_listed_with_their_delay() -> None:
    got = run_delays()
    if got is None:
        pytest.fail("this kernel gives no /proc/self/task/<tid>/schedstat (CONFIG_SCHED_INFO)")
    assert threading.get_native_id() in got and all(v >= 0 for v in got.values())


def test_a_live_spinner_waits_for_a_busy_core() -> None:
    """Two threads hashing (hashlib lets go of the GIL: both stay runnable) pinned to one core for
    0.5 s: each is off the core about half the time, waiting for it (a loaded machine only adds
    to that); this thread sleeps meanwhile (not runnable: no delay)."""
    cpu = sorted(os.sched_getaffinity(0))[0]
    stop = threading.Event()
    started = threading.Barrier(3)

    def spin() -> None:
        os.sched_setaffinity(0, {cpu})
        started.wait()
        while not stop.is_set():
            hashlib.sha256(BLOCK).digest()

    ts = [threading.Thread(target=spin, daemon=True) for _ in range(2)]
    for t in ts:
        t.start()
    started.wait()
    before = run_delays()
    time.sleep(0.5)
    waited = run_delay_since(before)
    stop.set()
    for t in ts:
        t.join()
    assert waited is not None
    assert waited >= 0.2e9, waited


def test_nothing_known_before_is_nothing_since() -> None:
    assert run_delay_since(None) is None
