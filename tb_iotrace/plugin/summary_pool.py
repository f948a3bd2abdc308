"""The host rows of many captures nobody has summarized yet, made in parallel: the captures
split over a few child processes (``python -m tb_iotrace.plugin.summary_worker``), each
decoding its share, keeping each capture's summary (:mod:`tb_iotrace.store.summaries`) and
answering one JSON line per capture as it goes. The first "All hosts" of a large logdir then
uses every core instead of one (docs/tab.md).

``TBIO_SUMMARY_JOBS``: how many children (default: the cores this process may use; ``1``: none,
every capture decoded in TensorBoard's own process, as before). A child that fails or runs past
its time leaves its remaining captures unanswered: the caller decodes those itself.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
from typing import Any

import tb_iotrace

ENV = "TBIO_SUMMARY_JOBS"
MIN_CAPTURES = 8            # fewer: a child's start (~1 s of imports) costs more than it saves
# less in all: decoding them here is quicker than a child's start, and asks nothing of a loaded
# machine (64 small captures of the tab's browser test waited on children for over 30 s there)
MIN_BYTES = 64 << 20
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(tb_iotrace.__file__)))

__all__ = ["ENV", "MIN_BYTES", "MIN_CAPTURES", "jobs", "rows_in_children"]


def jobs() -> int:
    """Children to use (:data:`ENV`, else the cores this process may use)."""
    raw = os.environ.get(ENV, "").strip()
    if raw.isdigit() and int(raw) > 0:
        return int(raw)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([_ROOT] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    return env


def _child(items: list[tuple[str, str]], timeout_s: float, out: dict[str, Any]) -> None:
    """One child for ``items`` ((host, path)); its answers into ``out`` (path -> row dict, or
    the reason as a str)."""
    args = [x for host, path in items for x in (host, path)]
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen([sys.executable, "-m", "tb_iotrace.plugin.summary_worker", *args],
                                stdout=subprocess.PIPE, stderr=err, text=True, env=_env(), start_new_session=True)
        timer = threading.Timer(timeout_s, proc.kill)
        timer.start()
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                try:
                    got = json.loads(line)
                except ValueError:
                    break
                out[str(got.get("path"))] = got["row"] if isinstance(got.get("row"), dict) else str(got.get("error"))
            proc.wait()
        finally:
            timer.cancel()
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def rows_in_children(items: list[tuple[str, str]], n: int | None = None, timeout_s: float = 600.0) -> dict[str, Any]:
    """The rows of ``items`` ((host, path) of local captures) from up to ``n`` children
    (default :func:`jobs`): path -> its row (``host`` included), or the reason it could not be
    read (a str); a path missing from the answer was not answered (the caller decodes it)."""
    n = jobs() if n is None else max(1, n)
    n = min(n, len(items))
    out: dict[str, Any] = {}
    if n < 1:
        return out
    shares = [items[k::n] for k in range(n)]      # striped: neighbours (similar sizes) spread over the children
    threads = [threading.Thread(target=_child, args=(share, timeout_s, out), daemon=True) for share in shares]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out
