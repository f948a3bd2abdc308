"""``/capture`` (tb_iotrace.plugin.endpoints.capture): what a view holds (hosts, extent, lanes,
steps) and how much I/O its captures recorded, with the messages that say what is missing."""
from __future__ import annotations

import pytest

from tab_view import RUN, synthetic_view
from tb_iotrace.plugin.endpoints.capture import capture_impl, run_series


@pytest.fixture(scope="module")
def view(tmp_path_factory):
    return synthetic_view(tmp_path_factory.mktemp("summary"), ("worker0", "worker1"))


def test_a_view_of_two_captures(view) -> None:
    got = capture_impl(view)
    assert got["run"] == RUN and got["source"] == "profile" and got["processes"] == []
    assert got["hosts"] == ["worker0", "worker1"]
    assert got["extent"] == list(view.extent())
    io = got["io"]
    assert io["has_io"] is True
    assert io["events"] == sum(len(p.capture.io) for p in view.parts) == 4000
    assert io["files"] == sum(p.capture.file_records for p in view.parts) > 0
    assert io["dropped"] == 0 and got["messages"] == []
    assert got["steps"] and got["steps_source"].endswith("on worker0")
    assert run_series(view) == []          # captures have no whole-run series, records do


def test_io_lanes_follow_the_asked_grouping(view) -> None:
    by_thread = [ln for ln in capture_impl(view, "thread")["lanes"] if ln["group"] == "io"]
    by_file = [ln for ln in capture_impl(view, "file")["lanes"] if ln["group"] == "io"]
    assert by_thread and by_file
    assert "[worker0] /ckpt/model.ckpt-1.data" in {ln["name"] for ln in by_file}
    assert not any("/ckpt/" in ln["name"] for ln in by_thread)
    # every call is on one lane either way
    assert sum(ln["events"] for ln in by_thread) == sum(ln["events"] for ln in by_file) == 4000
