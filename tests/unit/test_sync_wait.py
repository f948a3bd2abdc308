"""A URL logdir's sync as TensorBoard's requests wait for it (``LogdirIndex.sync_soon``): a
request after a sync that has just failed answers from the mirror at once, without waiting
again on the storage, so the plugin list and the tab's ``/runs`` together wait once."""
from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest


def test_a_request_right_after_a_failed_sync_does_not_wait_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tb_iotrace.plugin import cache as cache_mod
    from tb_iotrace.store import remote

    monkeypatch.setenv("TB_IOTRACE_CACHE", str(tmp_path / "cache"))
    first_may_fail, end = threading.Event(), threading.Event()
    calls: list[str] = []

    def hung_fetch(url: str, wanted, lazy=None):   # a storage that never answers: each call times out
        calls.append(url)
        (first_may_fail if len(calls) == 1 else end).wait(120)
        raise remote.RemoteError(f"{url}: the storage did not answer within 3 s")

    monkeypatch.setattr(remote, "fetch", hung_fetch)
    index = cache_mod.LogdirIndex("s3://b/logs")
    wait_s = 2.0
    try:
        t0 = time.monotonic()
        index.sync_soon(wait_s)                      # the plugin list: waits on the hung storage
        assert time.monotonic() - t0 >= wait_s * 0.9
        first_may_fail.set()                         # its call times out just after the wait
        index._sync_thread.join(60)
        assert index.remote_error and "did not answer" in index.remote_error
        t0 = time.monotonic()
        index.sync_soon(wait_s)                      # the tab's /runs right after: no second wait
        took = time.monotonic() - t0
        # the old code waited wait_s (2 s) here by construction, on the new hung sync
        assert took < wait_s / 2, took
        assert len(calls) == 2                       # a new sync is under way all the same
        assert "did not answer" in (index.remote_error or "")
    finally:
        first_may_fail.set()
        end.set()
        if index._sync_thread is not None:
            index._sync_thread.join(60)
