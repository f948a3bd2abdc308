"""DataLoader workers record the span of each fetch: on a real CPU torch job with
fork, spawn and forkserver workers, every worker's ``tb_iotrace::fetch`` events lie in its recorded window,
on the thread that did its reads; their count is the batches the training loop got in the
window, within the prefetch at the edges; and every batch's file reads lie inside its span.

The count, exactly: at any moment at most ``P = prefetch_factor * num_workers`` index batches
are out (sent to a worker, not yet got by the loop). A span is kept when its fetch began and
ended while its worker recorded, and a worker records from before the loop's window begins
(the start waits for it) to after it ends (the stop is sent once the loop's window closed); the
loop gets no batch while its window starts or stops. So of the K batches the loop got in its
window, at most P were out when the workers began (fetched before or across that start: not
kept); every other one was fetched inside. And a kept fetch the loop did not get in its window
was out when the window ended: at most P. Hence ``K - P <= spans <= K + P``.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tb_iotrace.store.kineto import CATEGORY, io_record, read_trace
from tb_iotrace.store.kineto_xspace import to_xspace
from tb_iotrace.store.xplane import find_plane

pytest.importorskip("torch")
pytestmark = pytest.mark.torch
SCRIPTS = Path(__file__).parent / "scripts"


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_fetch_spans(method: str, tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, str(SCRIPTS / "torch_fetch_spans.py"), method, str(tmp_path)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    result = json.loads((tmp_path / "result.json").read_text())
    (path,) = result["written"]
    trace = read_trace(path)
    base = int(trace["baseTimeNanoseconds"])
    rec = io_record(trace)
    assert rec is not None and rec["notes"] == []
    procs = {p["pid"]: p for p in rec["processes"]}
    workers = {pid: p for pid, p in procs.items() if p["role"] == "worker"}
    assert len(workers) == result["workers"]
    assert sorted(p["worker_id"] for p in workers.values()) == list(range(result["workers"]))
    main = procs[result["main_pid"]]

    def ns(us: float) -> int:
        return base + round(us * 1000)

    events = trace["traceEvents"]
    spans = [e for e in events if e.get("name") == "tb_iotrace::fetch"]
    files = result["files"]
    opens = [e for e in events if e.get("cat") == CATEGORY and e["name"].startswith("open")
             and e["args"].get("path") in files]
    total = 0
    for pid, w in workers.items():
        mine = sorted((e for e in spans if e["pid"] == pid), key=lambda e: e["ts"])
        assert mine, f"worker {pid} recorded no fetch"
        assert w["num_fetches"] == len(mine)
        total += len(mine)
        tids = {e["tid"] for e in mine}
        io_tids = {e["tid"] for e in opens if e["pid"] == pid}
        assert len(tids) == 1 and tids == io_tids, (tids, io_tids)   # the thread that read the batch
        for e in mine:
            assert e["ph"] == "X" and e["cat"] == "tb_iotrace"
            assert e["args"] == {"worker_id": w["worker_id"], "samples": result["batch"]}
            # inside the worker's recording, which began after the window's start
            assert rec["window_start_ns"] <= w["start_ns"] and w["start_ns"] - 1000 <= ns(e["ts"])
            assert ns(e["ts"] + e["dur"]) <= w["end_ns"] + 1000
        # each batch's reads inside its span: every sample opens its file once
        mine_opens = [e for e in opens if e["pid"] == pid]
        inside = 0
        for e in mine:
            got = [o for o in mine_opens if e["ts"] <= o["ts"] and o["ts"] + o["dur"] <= e["ts"] + e["dur"]]
            assert len(got) == e["args"]["samples"], (e, got)
            inside += len(got)
        # the rest: the fetches in flight as the worker began or stopped recording, one each
        assert len(mine_opens) - inside <= 2 * result["batch"]
        for o in mine_opens:   # no read straddles a span's edge
            for e in mine:
                assert not (o["ts"] < e["ts"] < o["ts"] + o["dur"])
                assert not (o["ts"] < e["ts"] + e["dur"] < o["ts"] + o["dur"])

    got = [t for t in result["received_ns"] if rec["window_start_ns"] <= t <= main["end_ns"]]
    outstanding = result["prefetch"] * result["workers"]
    assert len(got) - outstanding <= total <= len(got) + outstanding, (total, len(got))

    # to_xspace keeps them, on each worker's host line
    space = to_xspace(trace)
    host = find_plane(space, "/host:CPU")
    names = {k: v.name for k, v in host.event_metadata.items()}
    per_line = {ln.display_id: sum(names[e.metadata_id] == "tb_iotrace::fetch" for e in ln.events)
                for ln in host.lines}
    for pid in workers:
        tid = next(e["tid"] for e in spans if e["pid"] == pid)
        assert per_line[tid] == sum(e["pid"] == pid for e in spans)
