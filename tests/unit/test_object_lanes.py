"""tb_iotrace.plugin.object_lanes on a synthetic PyTorch trace whose two workers GET objects
(tests/unit/fixtures/torch_fetch_trace.py): one lane per requesting thread beside its I/O lane,
each request named by method and object, the bytes as running sums, failed answers' statuses,
and /event's fields of one request."""
from __future__ import annotations

from pathlib import Path

import numpy as np

import torch_fetch_trace
from tb_iotrace.model.tab.load import load_any
from tb_iotrace.plugin.object_lanes import GROUP, failed_status, object_event, object_lanes, object_sums

STEPS, GETS = 6, 4


def _capture(tmp_path: Path, statuses: tuple[int, ...] = ()):
    path = tmp_path / "w0.1790857026000.pt.trace.json.gz"
    torch_fetch_trace.make(path, steps=STEPS, object_ms=2, object_gets=GETS, statuses=statuses)
    return load_any(str(path), "w0")


def test_one_lane_per_requesting_thread_with_its_requests(tmp_path):
    cap = _capture(tmp_path)
    lanes = object_lanes(cap)
    assert [ln.key for ln in lanes] == ["obj.p201.t201", "obj.p202.t202"]
    assert all(ln.group == GROUP for ln in lanes) and object_lanes(cap) is lanes      # kept on the capture
    io_names = {ln.tid: ln.name for ln in cap.lanes if ln.group == "io"}
    for ln in lanes:
        assert ln.name == io_names[ln.tid]                    # named as its thread's I/O lane
        assert len(ln) == STEPS // 2 * GETS                   # the workers take turns, GETS per step
        names = {ln.cache["names"][i] for i in ln.name_id.tolist()}
        assert all(n.startswith("GET s3://objs/shards/s") for n in names) and len(names) == STEPS // 2
        assert np.all(ln.end > ln.start)
        sums = object_sums(cap, ln)
        assert sums[0] == 0 and sums[-1] == len(ln) * 16384 and np.all(np.diff(sums) == 16384)
        assert not failed_status(cap, ln, np.arange(len(ln))).any()


def test_failed_answers_keep_their_status_and_an_event_says_what_was_asked(tmp_path):
    cap = _capture(tmp_path, statuses=(503, 404))
    [first, second] = object_lanes(cap)
    st = failed_status(cap, first, np.arange(len(first)))
    assert sorted(st.tolist())[-2:] == [404, 503] and int((st != 0).sum()) == 2
    sums = object_sums(cap, first)
    assert sums[-1] == (len(first) - 2) * 16384                # a failed GET moved no bytes
    ok = int(np.flatnonzero(st == 0)[0])
    ev = object_event(cap, first, ok)
    assert ev["call"] == "GET" and ev["object"].startswith("s3://objs/shards/s") and ev["bytes"] == 16384
    assert ev["range"].endswith(str(int(ev["range"].split("-")[0]) + 16383)) and ev["status"] == 206
    assert ev["first_byte_ns"] > 0 and ev["client"] == "aiohttp" and ev["pid"] == 201 == ev["tid"]
    assert not failed_status(cap, second, np.arange(len(second))).any()
