"""The tab's object lanes: /capture lists one lane per thread that made requests, /timeline
gives each request as a span named by its method and object with its bytes, /event its
details. On a synthetic PyTorch trace (tests/unit/fixtures/torch_fetch_trace.py): each worker
GETs four 16 KiB ranges of its step's object, 1 ms into the step, 0.5 ms each."""
from __future__ import annotations

from itertools import accumulate
from pathlib import Path

import torch_fetch_trace


def _view(tmp_path: Path, **kw: object):
    from tb_iotrace.plugin.cache import LogdirIndex

    run = tmp_path / "logs" / "job"
    run.mkdir(parents=True)
    torch_fetch_trace.make(run / "w0.1790857026000.pt.trace.json.gz", **kw)
    index = LogdirIndex(str(tmp_path / "logs"))
    [info] = index.runs()
    return index.view(info.run, sorted(info.hosts.items()))


def test_object_lanes_on_the_timeline(tmp_path: Path) -> None:
    from tb_iotrace.plugin.endpoints.timeline import timeline_impl

    t = timeline_impl(_view(tmp_path, object_ms=2, statuses=(503,)), None, None, 8192)
    obj = {i: ln for i, ln in enumerate(t["lanes"]) if ln["group"] == "object"}
    assert sorted(ln["key"] for ln in obj.values()) == ["obj.p201.t201", "obj.p202.t202"]
    assert all(ln["events"] == 20 and ln["rows"] == 1 for ln in obj.values())
    heads = list(accumulate([0] + t["segments"]["length"][:-1]))
    it = t["items"]
    got = []
    for s, li in enumerate(t["segments"]["lane"]):
        if li not in obj:
            continue
        for j in range(heads[s], heads[s] + t["segments"]["length"][s]):
            assert it["count"][j] == 1     # 0.5 ms spans at ~10 us a pixel: none merged
            got.append((obj[li]["key"], t["names"][it["name"][j]], it["bytes"][j], it["err"][j],
                        it["dur"][j] * t["q"]))
    assert len(got) == 40
    first = [g for g in got if g[0] == "obj.p201.t201"][:5]
    assert [g[1] for g in first] == ["GET s3://objs/shards/s000.bin"] * 4 + ["GET s3://objs/shards/s002.bin"]
    # the first GET was answered 503 (no bytes), the others 206 with 16 KiB
    assert [(g[2], g[3]) for g in first] == [(0, 503)] + [(16384, 0)] * 4
    assert all(abs(g[4] - 500_000) <= t["q"] for g in got)


def test_object_request_details(tmp_path: Path) -> None:
    from tb_iotrace.plugin.endpoints.event import event_impl

    ev = event_impl(_view(tmp_path, object_ms=2), "obj.p202.t202", 1)
    assert ev["group"] == "object" and ev["name"] == "GET s3://objs/shards/s001.bin"
    assert ev["bytes"] == 16384 and ev["range"] == "16384-32767" and ev["status"] == 206
    assert ev["dur"] == 500_000 and ev["first_byte_ns"] == 450_000 and ev["client"] == "aiohttp"
    assert ev["step"] == {"index": 1, "name": "1"}


def test_no_object_lanes_without_requests(tmp_path: Path) -> None:
    from tb_iotrace.plugin.endpoints.timeline import timeline_impl

    t = timeline_impl(_view(tmp_path), None, None, 1000)
    assert t["lanes"] and not [ln for ln in t["lanes"] if ln["group"] == "object"]


def test_extent_covers_requests_past_every_other_event(tmp_path: Path) -> None:
    """Requests that end after every lane's last event (a job whose storage is all objects)
    are inside the view's extent, so the timeline's home window shows them."""
    from tb_iotrace.plugin.capture_objects import CaptureObjects, capture_objects

    view = _view(tmp_path, object_ms=2)
    [part] = view.parts
    cap = part.capture
    objs = capture_objects(cap)
    late = int(cap.extent[1]) + 5_000_000
    cap.cache["objects"] = CaptureObjects(objs.start + late, objs.end + late, objs.bytes, objs.rows)
    lo, hi = view.extent()
    assert hi - part.offset >= int(objs.end.max()) + late
