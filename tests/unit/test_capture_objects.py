"""tb_iotrace.plugin.capture_objects on a synthetic PyTorch trace whose workers GET objects
(tests/unit/fixtures/torch_fetch_trace.py): every request on the capture's clock, sorted by
start, with its bytes; the extent widened to them; none for malformed stored columns."""
from __future__ import annotations

import numpy as np

import torch_fetch_trace
from tb_iotrace.model.tab.load import load_any
from tb_iotrace.plugin.capture_objects import capture_objects, extent_with_objects


def test_requests_on_the_capture_clock(tmp_path):
    path = tmp_path / "w0.1790857026000.pt.trace.json.gz"
    torch_fetch_trace.make(path, steps=4, object_ms=2, object_gets=3, statuses=(500,))
    cap = load_any(str(path), "w0")
    objs = capture_objects(cap)
    assert len(objs) == 12 and capture_objects(cap) is objs                  # kept on the capture
    assert np.all(np.diff(objs.start) >= 0) and np.all(objs.end >= objs.start) and objs.start[0] >= 0
    t0 = int(cap.profile_start_ns)
    assert [int(r["start_ns"]) - t0 for r in objs.rows] == objs.start.tolist()
    assert objs.bytes.tolist().count(0) == 1 and int(objs.bytes.sum()) == 11 * 16384   # the failed GET: none
    lo, hi = extent_with_objects(cap)
    assert lo <= int(objs.start.min()) and hi >= int(objs.end.max())


def test_malformed_columns_are_no_requests(tmp_path):
    path = tmp_path / "w0.1790857026000.pt.trace.json.gz"
    torch_fetch_trace.make(path, steps=2, object_ms=2)
    cap = load_any(str(path), "w0")
    cap.io_info = {**(cap.io_info or {}), "objects": {"start_ns": [1, 2], "end_ns": [3]}}
    cap.cache.pop("objects", None)
    assert len(capture_objects(cap)) == 0
