"""tb_iotrace.model.tab.step_markers (the tab's steps of a capture): the host lanes' step markers
of the kind seen most often, non-overlapping, named by position when the file holds no step
number; only host lanes count; without markers, the device plane's steps as given."""
from __future__ import annotations

import numpy as np

from tb_iotrace.model.tab.step_markers import STEP_NAME_RE, capture_steps
from tb_iotrace.model.tab.columns import make_lane

NAMES = ["train", "ProfilerStep#4", "ProfilerStep#5", "aten::linear", "Profiled batch"]


def lane(key: str, group: str, events: list[tuple[int, int, int]]):
    s, e, n = (np.array([x[i] for x in events], np.int64) for i in range(3))
    return make_lane(key, group, key, "/host:CPU", s, e, n.astype(np.int32))


def test_the_most_seen_kind_not_overlapping():
    host = lane("h1", "host", [(0, 100, 1), (100, 200, 2), (150, 260, 1), (300, 400, 2), (0, 400, 0),
                               (10, 20, 3)])
    device = lane("d1", "device", [(0, 50, 4), (60, 90, 4), (100, 120, 4), (130, 140, 4)])   # not a host lane
    steps, source = capture_steps("x.xplane.pb", NAMES, [host, device], {}, {}, [], "")
    assert [(s["start"], s["end"]) for s in steps] == [(0, 100), (100, 200), (300, 400)]   # (150, 260) overlaps
    assert [s["name"] for s in steps] == ["0", "1", "2"]           # no step number in the file: position
    assert source == "host step markers ('ProfilerStep#' events)"


def test_without_host_markers_the_device_steps():
    dev = [{"start": 5, "end": 9, "name": "17"}]
    host = lane("h1", "host", [(0, 100, 3)])
    assert capture_steps("x", NAMES, [host], {}, {}, dev, "device Steps line") == (dev, "device Steps line")
    assert capture_steps("x", NAMES, [host], {}, {}, [], "") == ([], "")


def test_marker_names():
    for name in ("train", "test_step", "TrainStep", "Profiled batch", "ProfilerStep#12", "predict"):
        assert STEP_NAME_RE.search(name), name
    for name in ("training_loop", "ProfilerStep#", "aten::linear", "my train"):
        assert not STEP_NAME_RE.search(name), name
